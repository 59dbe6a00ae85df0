"""The pure parts of the force-close bench, ``physai bench force-close`` (``physai bench
hand-pick`` shares the positions, the intervals and the progress bar): the positions over a
square, Wilson intervals, one run's numbers and its pass rule, the table."""

from __future__ import annotations

import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from physai_ros.core import stats

MODES = ("force", "cap")
HALF_SQUARE = 0.01  # [m] positions in ±1 cm around the soft cube's place, as lesson 16's
# sweeps; those the pick's IK cannot reach (the square's far corner, 24 cm out) are skipped
STRAIN_LIMIT = 0.25  # [m/m] largest edge strain at the bench's SOFT_COUNT 3 (docs/force_close.md)
BAND = 0.15  # accepted final squeeze: planned target · (1 ∓ BAND)


def positions(
    n: int,
    centre: tuple[float, float],
    reachable: Callable[[float, float], bool],
    half: float = HALF_SQUARE,
) -> list[tuple[float, float]]:
    """The first ``n`` soft-cube centres (x, y) [m, base frame] that ``reachable`` accepts, of a
    deterministic low-discrepancy walk (golden-ratio steps in x, √2 − 1 steps in y) over the
    ±``half`` square around ``centre``: any first k runs spread over the square."""
    if n < 1:
        raise ValueError(f"need at least one position, got {n}")
    golden, root2 = (math.sqrt(5.0) - 1.0) / 2.0, math.sqrt(2.0) - 1.0
    found: list[tuple[float, float]] = []
    for i in range(50 * n):
        x = round(centre[0] + half * (2.0 * ((0.5 + i * golden) % 1.0) - 1.0), 4)
        y = round(centre[1] + half * (2.0 * ((0.5 + i * root2) % 1.0) - 1.0), 4)
        if reachable(x, y):
            found.append((x, y))
            if len(found) == n:
                return found
    raise ValueError(f"only {len(found)} of {50 * n} positions around {centre} are reachable")


def wilson(k: int, n: int) -> tuple[float, float]:
    """Wilson 95 % interval of a success rate k / n (``physai_ros.core.stats.wilson``); nan, nan
    for n = 0 (no runs: a table row, not an error)."""
    if n == 0:
        return math.nan, math.nan
    low, high = stats.wilson(k, n)
    return low, high


@dataclass
class Run:
    """One pick's numbers: mode, position [m], outcome, the target [N per jaw] (force runs),
    the final squeeze per jaw [N] (mean of the jaws), the largest jaw force from the close on
    [N], the largest and the final edge strain [m/m], how far the soft cube's centre of mass
    rose [cm] (its own pose: the pick judges by the robot only), the close time [s sim] and
    the reason."""

    mode: str
    x: float
    y: float
    outcome: str
    target: float = math.nan
    squeeze: float = math.nan
    peak: float = math.nan
    strain_max: float = math.nan
    strain_end: float = math.nan
    lift_cm: float = math.nan
    close_s: float = math.nan
    reason: str = ""

    @property
    def held(self) -> bool:
        return self.outcome == "held"

    @property
    def error(self) -> float:
        """Final squeeze relative to the target [-] (nan without a target)."""
        return self.squeeze / self.target - 1.0 if self.target > 0 else math.nan

    @property
    def within(self) -> bool:
        return abs(self.error) <= BAND

    def passed(self, strain_limit: float) -> bool:
        return self.held and self.within and self.strain_max < strain_limit


def _rate(k: int, n: int) -> str:
    low, high = wilson(k, n)
    return f"{k}/{n} [{low:.2f}, {high:.2f}]"


def _span(values: list[float], fmt: str = "{:.2f}") -> str:
    vals = [v for v in values if math.isfinite(v)]
    if not vals:
        return "–"
    return (
        f"{fmt.format(statistics.median(vals))} ({fmt.format(min(vals))}–{fmt.format(max(vals))})"
    )


def table(runs: list[Run], strain_limit: float) -> str:
    """The summary per mode (rates with Wilson 95 % intervals over all runs; median (min–max)
    of the numbers of the runs that closed on the cube, held or not: an abort before the close
    squeezed nothing), then every run, as markdown."""
    lines = [
        f"| close | runs | pass (held, ±{BAND:.0%}, strain < {strain_limit}) | held | "
        f"within ±{BAND:.0%} | target N/jaw | closed: final squeeze N/jaw | error % | peak N/jaw | "
        "strain max | strain end | cube COM rose cm (all runs) | close s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for mode in MODES:
        rs = [r for r in runs if r.mode == mode]
        if not rs:
            continue
        n = len(rs)
        forced = mode == "force"
        closed = [r for r in rs if r.outcome not in ("aborted", "no outcome")]
        lines.append(
            f"| {mode} | {n} | "
            + (_rate(sum(r.passed(strain_limit) for r in rs), n) if forced else "–")
            + f" | {_rate(sum(r.held for r in rs), n)} | "
            + (_rate(sum(r.within for r in rs), n) if forced else "–")
            + f" | {_span([r.target for r in rs], '{:.3f}')} | {_span([r.squeeze for r in closed])}"
            + f" | {_span([100.0 * r.error for r in closed], '{:+.1f}')}"
            + f" | {_span([r.peak for r in closed])}"
            + f" | {_span([r.strain_max for r in closed], '{:.3f}')}"
            + f" | {_span([r.strain_end for r in closed], '{:.3f}')}"
            + f" | {_span([r.lift_cm for r in rs])}"
            + f" | {_span([r.close_s for r in closed])} |"
        )
    lines += [
        "",
        "| # | close | x, y [m] | outcome | final N/jaw | error % | peak N | strain max / end "
        "| COM rose cm | reason |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(runs):
        err = f"{100.0 * r.error:+.1f}" if math.isfinite(r.error) else "–"
        lines.append(
            f"| {i} | {r.mode} | {r.x:.4f}, {r.y:.4f} | {r.outcome} | {r.squeeze:.2f} | {err} | "
            f"{r.peak:.2f} | {r.strain_max:.3f} / {r.strain_end:.3f} | {r.lift_cm:.2f} | "
            f"{r.reason[:80]} |"
        )
    return "\n".join(lines)


def load_runs(path: Path) -> list[Run]:
    """The runs a ``--json`` file holds."""
    names = set(Run.__dataclass_fields__)
    return [
        Run(**{k: v for k, v in row.items() if k in names}) for row in json.loads(path.read_text())
    ]


def progress(done: int, total: int, started: float, last: Run | None) -> None:
    width = 30
    fill = int(width * done / total)
    elapsed = time.monotonic() - started
    eta = elapsed / done * (total - done) if done else math.nan
    note = "" if last is None else f" last: {last.mode} {last.outcome} {last.squeeze:.2f} N"
    print(
        f"\r[{'#' * fill}{'.' * (width - fill)}] {done}/{total} {elapsed:.0f} s, eta {eta:.0f} s"
        f"{note}   ",
        end="" if done < total else "\n",
        file=sys.stderr,
        flush=True,
    )
