"""The trajectory launch files parse, load without launch_ros, and start only nodes that exist
with parameters those nodes declare (launch_ros itself is not installed here)."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from physai_ros import interfaces
from physai_ros.graph import FRANKA_CONTROLLER_ACTION, trajectory_graph

LAUNCH_FILES = ["trajectory_sim.launch.py", "trajectory_franka.launch.py"]
BUILTIN_PARAMS = {"use_sim_time"}


def load(name: str):
    path = REPO_ROOT / "launch" / name
    ast.parse(path.read_text(), filename=str(path))
    spec = importlib.util.spec_from_file_location(name.removesuffix(".py").replace(".", "_"), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # top level must not need launch / launch_ros
    return module


def declared_parameters(executable: str) -> set[str]:
    """String literals passed as the first argument of a parameter declaration in the node's
    module (or the shared ``_common`` declarations), or keys of its ``PARAMS`` table."""
    names: set[str] = set()
    for file in (f"{executable}.py", "_common.py"):
        tree = ast.parse((REPO_ROOT / "physai_ros" / "nodes" / file).read_text())
        for table in tree.body:  # a module-level PARAMS = {name: spec} declared in a loop
            if (
                isinstance(table, ast.Assign)
                and getattr(table.targets[0], "id", "") == "PARAMS"
                and isinstance(table.value, ast.Dict)
            ):
                names |= {k.value for k in table.value.keys if isinstance(k, ast.Constant)}
        for call in ast.walk(tree):
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr in ("declare_parameter", "_param")
                and call.args
                and isinstance(call.args[0], ast.Constant)
            ):
                names.add(call.args[0].value)
    return names


@pytest.mark.parametrize("name", LAUNCH_FILES)
def test_launch_file_references_existing_nodes_and_parameters(name):
    module = load(name)
    assert callable(module.generate_launch_description)
    defaults = {arg: default for arg, (default, _desc) in module.ARGUMENTS.items()}
    specs = module.node_specs(defaults)
    assert specs and "trajectory" in [s.executable for s in specs]
    for spec in specs:
        found = importlib.util.find_spec(spec.module)
        assert found is not None, f"{name}: no module {spec.module}"
        tree = ast.parse(Path(found.origin).read_text())
        assert any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body)
        unknown = set(spec.parameters) - declared_parameters(spec.executable) - BUILTIN_PARAMS
        assert not unknown, f"{name}: {spec.name} does not declare {sorted(unknown)}"
    # the launch_ros Nodes are built from these specs and nothing else
    calls = [
        c
        for c in ast.walk(ast.parse((REPO_ROOT / "launch" / name).read_text()))
        if isinstance(c, ast.Call) and getattr(c.func, "id", "") == "Node"
    ]
    assert len(calls) == 1
    keywords = {k.arg: ast.unparse(k.value) for k in calls[0].keywords}
    assert keywords["package"] == "'physai_ros'"
    assert keywords["executable"] == "spec.executable" and keywords["name"] == "spec.name"


def test_graphs_point_at_the_right_controller_and_clock():
    sim = {s.name: s.parameters for s in trajectory_graph("panda", sim=True)}
    assert set(sim) == {"sim_bridge", "tf_publisher", "trajectory"}
    assert sim["trajectory"]["controller_action"] == interfaces.FOLLOW_JOINT_TRAJECTORY
    assert sim["trajectory"]["use_sim_time"] is True
    real = {s.name: s.parameters for s in trajectory_graph("panda", sim=False, shape="septic")}
    assert set(real) == {"trajectory"}
    params = real["trajectory"]
    assert params["controller_action"] == FRANKA_CONTROLLER_ACTION
    assert params["joint_prefix"] == "panda_" and params["use_sim_time"] is False
    assert params["shape"] == "septic"
    franka = load("trajectory_franka.launch.py")
    fr3 = franka.node_specs(
        {
            "controller_action": "/fr3_arm_controller/follow_joint_trajectory",
            "joint_prefix": "fr3_",
            "limits_set": "libfranka",
            "shape": "quintic",
            "duration": "2.5",
        }
    )[0].parameters
    assert fr3["joint_prefix"] == "fr3_" and fr3["duration"] == 2.5
