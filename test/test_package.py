"""The package is a well-formed ROS 2 package: package.xml, colcon install layout, CLI."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import REPO_ROOT

ROS_PACKAGES_FROM_IMPORTS = {
    "rclpy",
    "launch",
    "launch_ros",
    "ament_index_python",
    "rcl_interfaces",
    "physai_ros_interfaces",
}


def ros_imports() -> set[str]:
    """Top-level ROS packages imported anywhere in the product code (not tests)."""
    found: set[str] = set()
    for path in (REPO_ROOT / "physai_ros").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top.endswith(("_msgs", "_srvs")) or top in ROS_PACKAGES_FROM_IMPORTS:
                    found.add(top)
    for path in (REPO_ROOT / "launch").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module.split(".")[0])
    return found - {"physai_ros"}


def test_package_xml_parses_with_catkin_pkg_and_lists_every_ros_dependency():
    from catkin_pkg.package import parse_package

    pkg = parse_package(str(REPO_ROOT / "package.xml"))
    assert pkg.package_format == 3
    assert pkg.name == "physai_ros"
    assert pkg.get_build_type() == "ament_python"
    exec_deps = {d.name for d in pkg.exec_depends}
    missing = ros_imports() - exec_deps - {"ament_index_python"}
    assert not missing, f"imported but not declared in package.xml: {sorted(missing)}"
    for key in (
        "rclpy",
        "tf2_msgs",
        "control_msgs",
        "launch_ros",
        "python3-numpy",
        "python3-scipy",
        "python3-yaml",
        "python3-mujoco-pip",
    ):
        assert key in exec_deps
    setup_version = ast.literal_eval(
        next(
            line.split("=", 1)[1].strip().rstrip(",")
            for line in (REPO_ROOT / "setup.py").read_text().splitlines()
            if line.strip().startswith("version=")
        )
    )
    assert pkg.version == setup_version


def test_every_node_module_has_an_entry_point():
    import importlib.metadata

    scripts = {
        ep.name: ep.value
        for ep in importlib.metadata.entry_points(group="console_scripts")
        if ep.value.startswith("physai_ros.")
    }
    nodes = {
        p.stem
        for p in (REPO_ROOT / "physai_ros" / "nodes").glob("*.py")
        if p.stem != "__init__" and not p.stem.startswith("_")
    }
    for node in nodes:
        assert scripts.get(node) == f"physai_ros.nodes.{node}:main", f"no entry point for {node}"
    assert scripts["physai"] == "physai_ros.cli:main"


@pytest.mark.ros  # colcon and ament
def test_colcon_build_installs_share_files_and_executables(tmp_path):
    env = dict(os.environ)
    result = subprocess.run(
        [
            "colcon",
            "--log-base",
            str(tmp_path / "log"),
            "build",
            "--base-paths",
            str(REPO_ROOT),
            "--packages-select",
            "physai_ros",
            "--build-base",
            str(tmp_path / "build"),
            "--install-base",
            str(tmp_path / "install"),
            "--event-handlers",
            "console_direct-",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    install = tmp_path / "install" / "physai_ros"
    share = install / "share" / "physai_ros"
    assert (share / "package.xml").is_file()
    assert (
        install / "share" / "ament_index" / "resource_index" / "packages" / "physai_ros"
    ).is_file()
    for folder in ("launch", "config", "urdf"):
        expected = {p.name for p in (REPO_ROOT / folder).iterdir() if p.is_file()}
        installed = (
            {p.name for p in (share / folder).iterdir()} if (share / folder).is_dir() else set()
        )
        assert expected <= installed, f"{folder}: missing {expected - installed}"
    schemas = [p.relative_to(REPO_ROOT) for p in (REPO_ROOT / "config" / "schema").glob("*.yaml")]
    assert schemas and all((share / p).is_file() for p in schemas), "config/schema not installed"
    moveit = [p.relative_to(REPO_ROOT) for p in (REPO_ROOT / "config" / "moveit").rglob("*.*")]
    assert moveit and all((share / p).is_file() for p in moveit), "config/moveit not installed"
    executables = {p.name for p in (install / "lib" / "physai_ros").iterdir()}
    nodes = {p.stem for p in (REPO_ROOT / "physai_ros" / "nodes").glob("[!_]*.py")}
    assert {"physai", *nodes} <= executables
    # The installed CLI runs from the install tree alone (its share files found there).
    site = next((install / "lib").glob("python3*/site-packages"))
    run = subprocess.run(
        [sys.executable, "-c", "import physai_ros.paths as p; print(p.share_dir())"],
        env={**env, "PYTHONPATH": str(site), "AMENT_PREFIX_PATH": str(install)},
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert Path(run.stdout.strip()).resolve() in {share.resolve(), REPO_ROOT.resolve()}
    # `ros2 run physai_ros physai --help` runs this file: the console script, from the install.
    physai = install / "lib" / "physai_ros" / "physai"
    assert physai.is_file() and os.access(physai, os.X_OK)
    run = subprocess.run(
        [str(physai), "--help"],
        env={**env, "PYTHONPATH": str(site), "AMENT_PREFIX_PATH": str(install)},
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("usage: physai") and "bringup" in run.stdout


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["physai", *args], capture_output=True, text=True, timeout=120)


def test_physai_help_on_every_subcommand(capsys):
    """The console script once (the entry point users type), then every leaf's --help through
    the same main(): each process would import the same modules again, 3-4 s apiece."""
    top = cli("--help")
    assert top.returncode == 0 and "lesson" in top.stdout and "bringup" in top.stdout
    from physai_ros.cli import build_parser, main

    def help_of(*args: str) -> str:
        with pytest.raises(SystemExit) as done:
            main([*args, "--help"])
        assert done.value.code == 0, capsys.readouterr().err
        return capsys.readouterr().out

    parser = build_parser()
    groups = {"lesson": "lesson", "bench": "area"}
    for command, dest in groups.items():
        assert f"usage: physai {command}" in help_of(command)
        choices = next(
            a
            for a in parser._subparsers._group_actions[0]
            .choices[command]
            ._subparsers._group_actions
            if a.dest == dest
        ).choices
        for name in choices:
            assert f"usage: physai {command} {name}" in help_of(command, name)
    assert "usage: physai bringup" in help_of("bringup")


@pytest.mark.parametrize("bad", [["lesson", "99"], ["bench", "nothing"], ["bringup", "nothing"]])
def test_physai_rejects_unknown_choices(bad, capsys):
    from physai_ros.cli import main

    with pytest.raises(SystemExit) as done:
        main(bad)
    assert done.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
