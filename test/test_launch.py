"""Launch files and bringup start the same graph; the RViz layout points at real names.

launch_ros is not installable here, so the launch files are checked without executing them:
their structure (ast), and the code they call (physai_ros.launch_support), which is shared
with ``physai bringup`` and run for real here.
"""

from __future__ import annotations

import ast
import importlib.metadata
import inspect

import pytest
import yaml
from conftest import REPO_ROOT

from physai_ros import interfaces
from physai_ros.core.robot_tf import load_robot_tf
from physai_ros.graph import pick_graph
from physai_ros.launch_support import (
    DISPLAY_ARGUMENTS,
    PICK_ARGUMENTS,
    display_specs,
    pick_specs,
)

LAUNCH_FILES = sorted((REPO_ROOT / "launch").glob("*.launch.py"))


def entry_points() -> dict[str, str]:
    return {
        ep.name: ep.value
        for ep in importlib.metadata.entry_points(group="console_scripts")
        if ep.value.startswith("physai_ros.")
    }


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_structure(path):
    tree = ast.parse(path.read_text())
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert "generate_launch_description" in functions
    imported = {
        n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
    }
    assert imported <= {"launch", "launch_ros", "physai_ros"}, imported
    assert ast.get_docstring(tree), "each launch file says what it starts and how"


def test_pick_launch_defaults_are_the_bringup_defaults():
    defaults = {name: default for name, (default, _) in PICK_ARGUMENTS.items()}
    launched = pick_specs(defaults)
    assert launched == pick_graph(), "ros2 launch and physai bringup must start the same graph"
    signature = inspect.signature(pick_graph).parameters
    assert float(defaults["cap"]) == signature["jaw_torque_cap"].default
    assert float(defaults["mu"]) == signature["cube_mu"].default


@pytest.mark.parametrize(
    ("arguments", "specs"),
    [(PICK_ARGUMENTS, pick_specs), (DISPLAY_ARGUMENTS, display_specs)],
    ids=["pick", "display"],
)
def test_every_launched_node_has_an_executable(arguments, specs):
    defaults = {name: default for name, (default, _) in arguments.items()}
    scripts = entry_points()
    for spec in specs(defaults):
        assert scripts.get(spec.executable) == f"{spec.module}:main", spec.executable
        for key in spec.parameters:
            assert isinstance(key, str) and key


def test_pick_launch_arguments_are_validated():
    args = {name: default for name, (default, _) in PICK_ARGUMENTS.items()}
    with pytest.raises(ValueError):
        pick_specs({**args, "cube_x": "far away"})
    with pytest.raises(Exception, match="SO-101"):
        pick_specs({**args, "robot": "panda"})


def test_rviz_layout_names_exist():
    config = yaml.safe_load((REPO_ROOT / "config" / "physai.rviz").read_text())
    displays = {d["Class"]: d for d in config["Visualization Manager"]["Displays"]}
    assert config["Visualization Manager"]["Global Options"]["Fixed Frame"] == "world"
    model = displays["rviz_default_plugins/RobotModel"]
    assert model["Description Topic"]["Value"] == interfaces.ROBOT_DESCRIPTION
    assert model["Description Topic"]["Durability Policy"] == "Transient Local"
    markers = displays["rviz_default_plugins/MarkerArray"]
    assert markers["Topic"]["Value"] == interfaces.CONTACT_MARKERS
    camera = displays["rviz_default_plugins/Axes"]["Reference Frame"]
    assert camera in load_robot_tf("so101").frame_names
