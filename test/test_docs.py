"""The README and docs/ stay short, linked and user-facing, and their runnable examples run.

Conventions (docs/README.md): a fenced shell block whose first line is ``# runnable`` is run here,
line by line, with ``TMP`` set to a fresh folder; ``# needs: …`` blocks (a real arm, a ROS 2
install, …) are only shown.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from support.paths import REPO_ROOT

README = REPO_ROOT / "README.md"
DOCS = sorted((REPO_ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS]
README_MAX_LINES = 199  # "under 200"

SHELL_LANGUAGES = {"bash", "sh", "shell", "console"}
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
# "issue 14", "issues 14 and 15", "issue 15's": the project's own tracker, meaningless to a user.
# An external one named with its owner and a '#' ("libfranka issue #111") is fine.
INTERNAL_ISSUE = re.compile(r"\bissues?\s+\d+", re.IGNORECASE)


def page_id(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT))


def fenced_blocks(text: str) -> list[tuple[str, list[str]]]:
    """(language, lines) of every fenced code block, fences indented in lists included."""
    blocks: list[tuple[str, list[str]]] = []
    fence: str | None = None
    language = ""
    body: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if fence is None:
            match = re.match(r"(`{3,}|~{3,})\s*([\w+-]*)", stripped)
            if match:
                fence, language, body = match.group(1), match.group(2).lower(), []
        elif stripped.startswith(fence) and not stripped[len(fence) :].strip():
            blocks.append((language, body))
            fence = None
        else:
            body.append(line)
    return blocks


def prose(text: str) -> str:
    """The text without its fenced code blocks (links and references are read in prose only)."""
    kept: list[str] = []
    fence: str | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if fence is None:
            match = re.match(r"(`{3,}|~{3,})", stripped)
            if match:
                fence = match.group(1)
                continue
            kept.append(line)
        elif stripped.startswith(fence) and not stripped[len(fence) :].strip():
            fence = None
    return "\n".join(kept)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {
        slug(match.group(1))
        for match in re.finditer(r"^#{1,6}\s+(.*?)\s*#*\s*$", prose(path.read_text()), re.M)
    }


def test_readme_is_under_200_lines():
    lines = len(README.read_text().splitlines())
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines; keep it under 200 and move detail into docs/"
    )


def test_docs_have_an_index_that_links_every_page():
    index = REPO_ROOT / "docs" / "README.md"
    assert index.is_file(), "docs/README.md, the index of the feature pages, is missing"
    linked = {match.group(1).split("#")[0] for match in LINK.finditer(index.read_text())}
    missing = [p.name for p in DOCS if p.name != "README.md" and p.name not in linked]
    assert not missing, f"docs/README.md does not link {missing}"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_relative_links_point_to_existing_files_and_headings(page: Path):
    broken = []
    for match in LINK.finditer(prose(page.read_text())):
        target = match.group(1)
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (page.parent / file_part).resolve() if file_part else page
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading with anchor #{anchor}")
    assert not broken, f"{page_id(page)}: broken links {broken}"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_no_internal_issue_numbers(page: Path):
    found = [
        f"line {page.read_text()[: m.start()].count(chr(10)) + 1}: {m.group(0)!r}"
        for m in INTERNAL_ISSUE.finditer(page.read_text())
    ]
    assert not found, (
        f"{page_id(page)} refers to internal issues {found}: say what the feature does instead"
    )


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_shell_block_says_what_it_needs(page: Path):
    unmarked = [
        lines[0].strip() if lines else "(empty)"
        for language, lines in fenced_blocks(page.read_text())
        if language in SHELL_LANGUAGES
        and not (lines and re.match(r"# (runnable$|needs: \S)", lines[0].strip()))
    ]
    assert not unmarked, (
        f"{page_id(page)}: shell blocks without '# runnable' or '# needs: …' on their first "
        f"line (docs/README.md): {unmarked}"
    )


def runnable_blocks() -> list[tuple[str, list[str]]]:
    found = []
    for page in PAGES:
        for language, lines in fenced_blocks(page.read_text()):
            if language in SHELL_LANGUAGES and lines and lines[0].strip() == "# runnable":
                found.append((page_id(page), lines[1:]))
    return found


def test_the_readme_has_runnable_examples():
    assert any(page == "README.md" for page, _ in runnable_blocks())


@pytest.mark.parametrize(
    "lines", [lines for _, lines in runnable_blocks()], ids=[p for p, _ in runnable_blocks()]
)
def test_runnable_blocks_run(lines: list[str], tmp_path: Path):
    if shutil.which("physai") is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("physai is not on PATH (source scripts/env.sh)")
        pytest.skip("physai is not on PATH (source scripts/env.sh)")
    env = {**os.environ, "TMP": str(tmp_path), "MPLBACKEND": "Agg"}
    for line in lines:
        command = line.split("  #")[0].strip()
        if not command or command.startswith("#"):
            continue
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"{command!r} failed:\n{done.stdout}\n{done.stderr}"
