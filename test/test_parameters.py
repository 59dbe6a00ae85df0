"""Each node's parameter schema (config/schema/<node>.yaml) against the files that repeat it:
the users' defaults (config/<node>.yaml), the files some defaults come from (config/scene.yaml,
config/sim_robots.yaml, the Franka profiles), the parameter tables in docs/, and the generated
docs/parameters.md. Pure and fast: no ROS graph (the nodes' own tests start them)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from support.paths import REPO_ROOT

from physai_ros.config import load_scene_config, load_sim_config, node_tree
from physai_ros.datasets.features import TASK
from physai_ros.errors import InvalidInput
from physai_ros.parameters import MAP, NODES, UNIT, load_schema, markdown, parse_schema
from physai_ros.robots.franka.names import FRANKA_PROFILES, PROFILE_PARAMETERS


def flatten(tree: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out |= flatten(value, f"{prefix}{key}.")
        else:
            out[prefix + key] = value
    return out


def _placement(robot: str) -> dict:
    place = load_scene_config()["robots"][robot]
    return {"base_pos": place["base_pos"], "base_yaw_deg": place["base_yaw_deg"]}


def _sim_bridge_sources() -> dict:
    """The sim bridge's defaults that are not in config/sim_bridge.yaml (they depend on the
    robot or the profile chosen), for its default robot so101 and profile none."""
    scene = load_scene_config()
    place, soft, cube = scene["robots"]["so101"], scene["soft"], scene["cube"]
    robot = load_sim_config()["robots"]["so101"]
    arm = flatten(robot["arm_controller"], "arm_controller.")
    grip = flatten(robot["gripper_controller"], "gripper_controller.")
    out = _placement("so101") | {
        "cube_x": place["cube_pos"][0],
        "cube_y": place["cube_pos"][1],
        "cube_size": cube["size"],
        "cube_mass": cube["mass"],
        "cube_mu": cube["mu"],
        "soft_x": place["soft_pos"][0],
        "soft_y": place["soft_pos"][1],
        **{f"soft_{k}": soft[k] for k in ("young", "poisson", "damping", "mass", "mu", "size")},
    }
    profile = FRANKA_PROFILES["none"]
    out |= {name: getattr(profile, field) for name, field in PROFILE_PARAMETERS.items()}
    # the controllers' defaults: config/sim_robots.yaml where it gives them, else the
    # controller's own (max_effort 0 there means the model's jaw cap)
    for name in load_schema("sim_bridge"):
        if name.startswith(("arm_controller.", "gripper_controller.")) and name not in (
            "arm_controller.action_monitor_rate",
            "arm_controller.state_publish_rate",
            "arm_controller.check_limits",
        ):
            value = (arm | grip).get(name.replace(f"{MAP}joints.", ""), ...)
            out[name] = value if name != "gripper_controller.max_effort" else ...
    return out


def _driver_sources() -> dict:
    """Each joint's tolerances default to the every-joint ones."""
    arm = node_tree("so101_driver.yaml")["arm_controller"]["constraints"]
    pre = f"arm_controller.constraints.{MAP}joints."
    return {pre + "trajectory": arm["trajectory"], pre + "goal": arm["goal"]}


# Parameters whose default is not in config/<node>.yaml, with where it comes from (the value
# for the node's default robot; ... = the code's own, e.g. the model's jaw cap).
ELSEWHERE = {
    "sim_bridge": _sim_bridge_sources,
    "tf_publisher": lambda: _placement("so101"),
    "pick": lambda: _placement("so101") | {"robot": "so101", "model_path": ""},
    "hand_pick": lambda: _placement("panda_barrett") | {"robot": "panda_barrett", "model_path": ""},
    "trajectory": lambda: {"joints": node_tree("trajectory.yaml")["robots"]["panda"]["joints"]},
    "so101_driver": _driver_sources,
    "so101_emulator": lambda: _placement_soft("so101"),
    "grasp_planner": dict,
    "dataset_recorder": lambda: {"task": TASK},
    "policy_runner": lambda: {"task": TASK},
    "teleop": dict,
}
# Entries of config/<node>.yaml that are not parameters: a robot's defaults of other entries
NOT_PARAMETERS = {"pick": ("so101.overrides", "panda.overrides")}


def _placement_soft(robot: str) -> dict:
    scene = load_scene_config()
    x, y = scene["robots"][robot]["soft_pos"]
    material = ("young", "poisson", "damping", "mass", "mu", "size")
    return {"soft_x": x, "soft_y": y} | {f"soft_{k}": scene["soft"][k] for k in material}


def test_every_node_has_a_schema():
    nodes = {p.stem for p in (REPO_ROOT / "physai_ros" / "nodes").glob("*.py") if p.stem[0] != "_"}
    assert set(NODES) == nodes
    schemas = {p.stem for p in (REPO_ROOT / "config" / "schema").glob("*.yaml")}
    assert schemas == nodes


@pytest.mark.parametrize("node", NODES)
def test_config_file_defaults_are_the_schema_defaults(node):
    """config/<node>.yaml (the users' --params-file) holds every parameter of the schema with
    the same default, and nothing else; a parameter whose default depends on the robot, the
    scene or a profile is not in it (a value there would pin it) and its default is checked
    against its source instead."""
    schema = load_schema(node).fixed
    path = REPO_ROOT / "config" / f"{node}.yaml"
    values = flatten(yaml.safe_load(path.read_text())["/**"]["ros__parameters"])
    skip = NOT_PARAMETERS.get(node, ())
    values = {k: v for k, v in values.items() if not k.startswith(tuple(s + "." for s in skip))}
    elsewhere = ELSEWHERE[node]()
    missing = sorted(set(schema) - set(values) - set(elsewhere))
    assert not missing, f"{node}: in the schema, not in {path.name}: {missing}"
    extra = sorted(set(values) - set(schema))
    assert not extra, f"{node}: in {path.name}, not in the schema: {extra}"
    both = sorted(set(values) & set(elsewhere))
    assert not both, f"{node}: {both} get their default elsewhere; {path.name} would pin them"
    for name, value in values.items():
        spec = schema[name]
        assert spec.coerce(value) == spec.default, f"{node}: {name} {value!r} != {spec.default!r}"
    for name, value in elsewhere.items():
        assert name in load_schema(node), f"{node}: no parameter {name}"
        if value is not ...:
            spec = load_schema(node)[name]
            assert spec.coerce(value) == spec.default, f"{node}: {name} {value!r} (source)"


@pytest.mark.parametrize("node", NODES)
def test_numeric_parameters_say_their_unit(node):
    """Every number's description has its unit in brackets: [m], [N m], [Hz sim time]; [-]
    for a ratio or a count."""
    lacking = [
        n for n, s in load_schema(node).items() if s.numeric and not UNIT.search(s.description)
    ]
    assert not lacking, f"{node}: no [unit] in the descriptions of {lacking}"


def test_controllers_are_described_alike_in_the_sim_and_on_the_real_arm():
    """The controllers' live parameters mean the same on both backends."""
    sim, real = load_schema("sim_bridge"), load_schema("so101_driver")
    shared = [n for n in real if n.startswith(("arm_controller.", "gripper_controller."))]
    shared = [n for n in shared if n in sim and not real[n].read_only]
    assert len(shared) >= 15
    for name in shared:
        a, b = sim[name], real[name]
        assert (a.type, a.bounds, a.description) == (b.type, b.bounds, b.description), name


def test_the_loader_refuses_what_generate_parameter_library_would():
    good = {"type": "double", "default_value": 1.0, "description": "x [m]"}
    schema = parse_schema({"n": {"g": {"a": dict(good, validation={"bounds<>": [0, 2]})}}})
    assert schema["g.a"].bounds == (0.0, 2.0) and schema["g.a"].default == 1.0
    bad = [
        dict(good, type="float"),
        dict(good, default_value="one"),
        dict(good, validation={"bounds<>": [2.0, 3.0]}),
        dict(good, validation={"one_of<>": [[1.0]]}),
        dict(good, unit="m"),
        {"type": "int", "default_value": 1.5, "description": "n [-]"},
        {"type": "int", "default_value": True, "description": "n [-]"},
    ]
    for entry in bad:
        with pytest.raises(InvalidInput):
            parse_schema({"n": {"a": entry}})


def test_map_entries_expand_per_joint():
    schema = load_schema("so101_driver")
    assert f"arm_controller.constraints.{MAP}joints.goal" in schema
    mapped = schema.mapped("joints", ["a", "b"])
    assert mapped["arm_controller.constraints.b.goal"].default == 0.03
    assert not any(MAP in n for n in mapped)


def _doc_tables() -> list[tuple[Path, list[str], str]]:
    """(page, names, default) of every row of a docs table headed ``parameter | default``
    or ``name | default``."""
    rows = []
    for page in sorted((REPO_ROOT / "docs").glob("*.md")):
        lines = page.read_text().splitlines()
        for i, line in enumerate(lines[:-1]):
            head = [c.strip() for c in line.strip().strip("|").split("|")]
            if not (
                len(head) >= 2
                and head[0] in ("parameter", "name")
                and head[1].startswith("default")
                and lines[i + 1].startswith("|---")
            ):
                continue
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                cells = [c.strip() for c in row.strip().strip("|").split("|")]
                rows.append((page, re.findall(r"`([^`]+)`", cells[0]), cells[1]))
    return rows


SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
# the node each docs page's parameter tables are about
DOC_NODES = {
    "force_close.md": "pick",
    "sim_bridge.md": "sim_bridge",
    "sim_bridge_listeners.md": "sim_bridge",
}


def _doc_values(cell: str) -> list:
    cell = re.sub(r"\(.*?\)", "", cell)  # "0.22, 0.08 (Panda 0.5, 0.1)": the default robot's
    cell = re.sub(r"\[.*?\]", "", cell)  # "30 [Hz WALL]"
    out = []
    for token in cell.split(","):
        token = token.strip().strip("`").split(" ")[0]
        if m := re.fullmatch(r"([\d.]+)·10([⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+)", token):
            token = f"{m[1]}e{m[2].translate(SUPERSCRIPT)}"
        try:
            out.append(float(token))
        except ValueError:
            out.append(token)
    return out


def test_docs_parameter_tables_show_the_schema_defaults():
    rows = _doc_tables()
    assert rows and {page.name for page, _, _ in rows} == set(DOC_NODES)
    for page, names, cell in rows:
        schema = load_schema(DOC_NODES[page.name])
        values = _doc_values(cell)
        assert len(values) == len(names), f"{page.name}: {names} {cell!r}"
        for name, shown in zip(names, values, strict=True):
            name = name if name in schema else f"arm_controller.{name}"
            assert name in schema, f"{page.name}: {name} is no parameter"
            default = schema[name].default
            assert shown == default, f"{page.name}: {name} shows {shown!r}, default {default!r}"


def test_docs_parameters_md_is_current():
    """docs/parameters.md is ``python -m physai_ros.parameters --markdown``'s output."""
    page = REPO_ROOT / "docs" / "parameters.md"
    assert page.read_text() == markdown(), "run: python -m physai_ros.parameters --markdown"


@pytest.mark.ros  # rclpy
def test_the_real_arm_changes_at_run_time_only_what_it_applies_through_a_validated_callback():
    """so101_driver: the port, calibration, limits, tolerances, timeouts, on_exit and the
    grasp relief are read-only (a ``ros2 param set`` would have reported success and changed
    nothing, or changed a safety setting of a moving arm); writable are only the controllers'
    parameters that ControllerServers applies on the next goal, checked by JtcParams/GacParams
    -- but not start_tolerance: raised on a real arm it would let a goal's first point step the
    arm at full speed."""
    from physai_ros.nodes._controllers import GAC_LIVE, JTC_LIVE

    live = {f"arm_controller.{n}" for n in JTC_LIVE} - {"arm_controller.start_tolerance"}
    live |= {f"arm_controller.constraints.{MAP}joints.{k}" for k in ("trajectory", "goal")}
    live |= {f"gripper_controller.{n}" for n in GAC_LIVE}
    writable = {n for n, s in load_schema("so101_driver").items() if not s.read_only}
    assert writable == live
