"""Launch files and bringup start the same graphs; every launched node exists and declares the
parameters it is given; the RViz layout points at real names.

launch_ros is not installable here, so each launch file is loaded as a module (its launch_ros
imports live inside ``generate_launch_description``) and its ``node_specs`` — the graph it
would start — is checked; ``physai_ros.launching.launch_support.describe`` turns those specs into
Nodes.
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from support.lerobot_runs import record
from support.paths import REPO_ROOT

from physai_ros import interfaces
from physai_ros.core.frames.robot_tf import load_robot_tf
from physai_ros.core.pick.machine import load_pick_tree
from physai_ros.errors import InvalidInput
from physai_ros.launching.graph import (
    ARMS,
    FRANKA_CHAIN_GAP,
    FRANKA_CONTROLLER_ACTION,
    FRANKA_FIRST_POINT,
    FRANKA_PICK_ACTION,
    franka_stand_in,
    pick_graph,
    trajectory_graph,
    two_arm_graph,
)
from physai_ros.sim.scene import build_scene

LAUNCH_FILES = sorted(p.name for p in (REPO_ROOT / "launch").glob("*.launch.py"))
BUILTIN_PARAMS = {"use_sim_time"}


def load(name: str):
    path = REPO_ROOT / "launch" / name
    spec = importlib.util.spec_from_file_location(name.removesuffix(".py").replace(".", "_"), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # the top level must not need launch / launch_ros
    return module


def defaults(module) -> dict[str, str]:
    return {arg: default for arg, (default, _text) in module.ARGUMENTS.items()}


def declared_parameters(spec, tmp_path: Path) -> set[str]:
    """The parameters the node of ``spec`` declares when started with the spec's parameters
    file (as ``ros2 launch`` and ``physai bringup`` start it), by constructing it in this
    process; rclpy keeps an undeclared override silently, so this is the check that counts."""
    import inspect

    import rclpy
    from rclpy.node import Node

    from physai_ros.launching.bringup import _params_file

    module = importlib.import_module(spec.module)
    classes = [
        c
        for c in vars(module).values()
        if inspect.isclass(c) and issubclass(c, Node) and c.__module__ == module.__name__
    ]
    assert len(classes) == 1, classes
    params = _params_file(spec, tmp_path)
    args = ["--ros-args", "-r", f"__node:={spec.name}", "--params-file", str(params)]
    if spec.namespace:
        args[3:3] = ["-r", f"__ns:=/{spec.namespace}"]
    rclpy.init(args=args)
    try:
        node = classes[0]()
        try:
            return {name for name in spec.parameters if node.has_parameter(name)}
        finally:
            getattr(node, "stop", lambda: None)()
            node.destroy_node()
    finally:
        rclpy.try_shutdown()


@pytest.mark.parametrize("name", LAUNCH_FILES)
def test_launch_file_structure(name):
    tree = ast.parse((REPO_ROOT / "launch" / name).read_text())
    assert ast.get_docstring(tree), "each launch file says what it starts and how"
    imported = {
        n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
    } | {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert imported <= {"launch", "launch_ros", "physai_ros"}, imported
    module = load(name)
    assert callable(module.generate_launch_description) and callable(module.node_specs)


@pytest.fixture(scope="module")
def one_episode(tmp_path_factory) -> Path:
    """A one-episode dataset for the policy launch, whose runner needs a policy to start."""
    root = tmp_path_factory.mktemp("policy") / "picks"
    record(root, "--episodes", "1", "--cameras", "")
    return root


@pytest.fixture(scope="module")
def emulated_leader(tmp_path_factory) -> Iterator[dict[str, str]]:
    """A leader SO-101 on a pty (the bus emulator, torque off) and its calibration file, for
    the teleop launch, whose node reads the leader when it starts."""
    from physai_ros.robots.so101.emulator.bus import FeetechBusEmulator, write_calibration

    emulator = FeetechBusEmulator()
    calibration = tmp_path_factory.mktemp("leader") / "leader.json"
    write_calibration(calibration, emulator.calibration)
    port = emulator.start()
    yield {"leader_port": port, "leader_calibration_file": str(calibration)}
    emulator.stop()


# launch arguments a launch file cannot start without (the rest are its defaults)
REQUIRED = {
    "policy.launch.py": lambda request: {
        "policy": "replay", "dataset": str(request.getfixturevalue("one_episode"))
    },
    "teleop.launch.py": lambda request: request.getfixturevalue("emulated_leader"),
}  # fmt: skip


@pytest.mark.parametrize("name", LAUNCH_FILES)
def test_launched_nodes_exist_and_declare_their_parameters(name, tmp_path, ros_domain, request):
    module = load(name)
    required = REQUIRED.get(name, lambda _request: {})(request)
    variants = [defaults(module) | required]
    if "sim" in module.ARGUMENTS:
        variants.append({**defaults(module), **required, "sim": "false"})
    for values in variants:
        specs = module.node_specs(values)
        assert specs
        for spec in specs:
            found = importlib.util.find_spec(spec.module)
            assert found is not None, f"{name}: no module {spec.module}"
            tree = ast.parse(Path(found.origin).read_text())
            assert any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body)
            declared = declared_parameters(spec, tmp_path)
            unknown = set(spec.parameters) - declared - BUILTIN_PARAMS
            assert not unknown, f"{name}: {spec.name} does not declare {sorted(unknown)}"


def test_pick_launch_defaults_are_the_bringup_defaults():
    launched = load("pick.launch.py").node_specs(defaults(load("pick.launch.py")))
    assert launched == pick_graph(), "ros2 launch and physai bringup must start the same graph"


def test_pick_launch_arguments_are_validated():
    module = load("pick.launch.py")
    with pytest.raises(ValueError):
        module.node_specs({**defaults(module), "cube_x": "far away"})
    with pytest.raises(Exception, match="a real Panda runs under franka_ros2: name its robot"):
        module.node_specs({**defaults(module), "robot": "panda", "sim": "false"})


@pytest.mark.parametrize("franka", ["panda", "fr3"])
def test_the_real_franka_pick_graph_is_what_runs_beside_franka_ros2(franka):
    """sim:=false robot:=panda franka:=...: nothing franka_ros2 starts itself (no robot node):
    the trajectory node on the profile's arm controller and limits, the TF publisher and the
    pick, on wall time; the pick's arm goals go through the trajectory node, its close is a
    franka_gripper Grasp judged by the hand's width (no jaw wrenches on a Franka Hand), and its
    chained goals leave the trajectory node the time to forward each on time. The stand-in
    robot for tests and benches is the Franka-shaped sim bridge under the same profile."""
    module = load("pick.launch.py")
    values = {**defaults(module), "robot": "panda", "sim": "false", "franka": franka}
    specs = {s.name: s.parameters for s in module.node_specs(values)}
    assert sorted(specs) == ["pick", "tf_publisher", "trajectory"]
    trajectory, pick = specs["trajectory"], specs["pick"]
    assert trajectory["controller_action"] == f"/{franka}_arm_controller/follow_joint_trajectory"
    assert trajectory["robot"] == pick["limits_robot"] == franka  # one set of limits
    assert trajectory["joint_prefix"] == pick["joint_prefix"] == f"{franka}_"
    assert pick["arm_action"] == FRANKA_PICK_ACTION == "/trajectory/follow_joint_trajectory"
    assert pick["arm_controller"] == f"{franka}_arm_controller"  # its controller_state
    assert (pick["jaw_contact"], pick["place_load"], pick["close_mode"]) == (False, False, "force")
    assert pick["ros.chain_gap"] == FRANKA_CHAIN_GAP > 0.0
    assert not any(p["use_sim_time"] for p in specs.values())
    stand_in = franka_stand_in(franka).parameters
    assert stand_in == {"robot": "panda", "franka_profile": franka, "stand_in": True}
    with pytest.raises(InvalidInput, match="needs its profile"):
        franka_stand_in("none")


def test_the_panda_pick_serves_franka_gripper_at_the_names_the_pick_calls():
    """robot:=panda: the sim bridge serves franka_gripper's actions where config/pick.yaml's
    panda section sends the Grasp and the GripperCommand; the cube at the Panda's place; no cap
    given, so each node keeps its robot's own (the model's, pick.yaml's 70 N)."""
    module = load("pick.launch.py")
    specs = {
        s.name: s.parameters for s in module.node_specs({**defaults(module), "robot": "panda"})
    }
    namespace = specs["sim_bridge"]["franka_gripper"]
    section = load_pick_tree(robot="panda")["panda"]
    assert section["grasp_action"] == f"{namespace}/grasp"
    assert section["gripper_action"] == f"{namespace}/gripper_action"
    assert (specs["sim_bridge"]["cube_x"], specs["sim_bridge"]["cube_y"]) == (0.5, 0.0)
    assert "jaw_torque_cap" not in specs["pick"] and "jaw_torque_cap" not in specs["sim_bridge"]
    assert specs["pick"]["robot"] == specs["tf_publisher"]["robot"] == "panda"


@pytest.mark.parametrize(
    ("franka", "gripper"), [("panda", "panda_gripper"), ("fr3", "franka_gripper")]
)
def test_the_franka_shaped_pick_agrees_on_franka_ros2_s_names(franka, gripper):
    """pick.launch.py robot:=panda franka:=...: the bridge takes the profile (its own gripper
    namespace), the TF publisher and the pick read the prefixed joints, the pick sends to the
    renamed controller and gripper, times its moves within the profile's limits and closes with
    a Grasp; FR3 only (franka_ros2 v3.x) gives the pick franka_hardware's error recovery."""
    module = load("pick.launch.py")
    values = {**defaults(module), "robot": "panda", "franka": franka}
    specs = {s.name: s.parameters for s in module.node_specs(values)}
    bridge, pick = specs["sim_bridge"], specs["pick"]
    assert bridge["franka_profile"] == franka and "franka_gripper" not in bridge
    assert specs["tf_publisher"]["joint_prefix"] == pick["joint_prefix"] == f"{franka}_"
    assert pick["arm_controller"] == f"{franka}_arm_controller"
    assert pick["limits_robot"] == franka and pick["close_mode"] == "force"
    assert pick["panda.grasp_action"] == f"{gripper}/grasp"
    assert pick["panda.gripper_action"] == f"{gripper}/gripper_action"
    recovery = pick.get("recovery.error_recovery")
    assert recovery == ("/action_server/error_recovery" if franka == "fr3" else None)
    with pytest.raises(InvalidInput, match="needs robot 'panda'"):
        pick_graph("so101", franka=franka)


def test_real_pick_gets_the_cube_position_and_wall_time():
    specs = {s.name: s.parameters for s in pick_graph(sim=False, cube_x=0.21, cube_y=0.01)}
    assert set(specs) == {"so101_driver", "tf_publisher", "pick"}
    assert specs["pick"]["use_sim_time"] is False
    assert specs["pick"]["cube_position"] == pytest.approx([0.21, 0.01, 0.015])


@pytest.mark.parametrize("sim", ["true", "false"])
def test_teleop_tells_the_follower_the_leaders_rate(sim):
    """The follower's ``linear`` and ``limited`` modes reach each target one expected period
    after it arrives: the teleop launch sets that period from its ``fps`` (60 Hz by default,
    lerobot-teleoperate's), on the sim bridge and on the real driver alike."""
    module = load("teleop.launch.py")
    for fps in (None, "45.0"):
        given = {"fps": fps} if fps else {}
        specs = {
            s.name: s.parameters
            for s in module.node_specs({**defaults(module), "sim": sim, **given})
        }
        robot = specs["sim_bridge" if sim == "true" else "so101_driver"]
        assert robot["arm_controller.stream.rate"] == specs["teleop"]["fps"] == float(fps or 60)


def test_trajectory_graphs_point_at_the_right_controller_and_clock():
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
    assert params["first_point"] == FRANKA_FIRST_POINT == 0.1  # franka_ros2 joins from its state
    assert "first_point" not in sim["trajectory"]  # the plain sim's controller joins exactly
    franka = load("trajectory_franka.launch.py")
    assert franka.node_specs(defaults(franka))[0].parameters == {
        **params,
        "shape": "quintic",
        "duration": 0.0,
    }, "the launch file's defaults are the Panda's"
    fr3 = franka.node_specs({**defaults(franka), "franka": "fr3", "duration": "2.5"})[0]
    assert fr3.parameters == {
        "robot": "fr3",  # config/limits_fr3.yaml
        "use_sim_time": False,
        "controller_action": "/fr3_arm_controller/follow_joint_trajectory",
        "joint_prefix": "fr3_",
        "first_point": FRANKA_FIRST_POINT,
        "shape": "quintic",
        "duration": 2.5,
    }


@pytest.mark.parametrize(("franka", "prefix"), [("panda", "panda_"), ("fr3", "fr3_")])
def test_franka_shaped_sim_graph_agrees_on_the_names(franka, prefix):
    """trajectory_sim.launch.py franka:=...: the bridge takes the profile, the TF publisher
    reads the prefixed joint states, the trajectory node sends to the renamed controller."""
    module = load("trajectory_sim.launch.py")
    specs = {
        s.name: s.parameters for s in module.node_specs({**defaults(module), "franka": franka})
    }
    assert specs["sim_bridge"] == {"robot": "panda", "franka_profile": franka}
    assert specs["tf_publisher"]["joint_prefix"] == prefix
    trajectory = specs["trajectory"]
    assert trajectory["controller_action"] == f"{franka}_arm_controller/follow_joint_trajectory"
    assert trajectory["joint_prefix"] == prefix
    assert trajectory["robot"] == franka  # its limits file
    assert trajectory["first_point"] == FRANKA_FIRST_POINT  # as in front of franka_ros2
    plain = {s.name: s.parameters for s in module.node_specs(defaults(module))}
    plain_graph = trajectory_graph("panda", sim=True, shape="quintic", duration=0.0)
    assert plain == {s.name: s.parameters for s in plain_graph}  # franka:=none: as before
    with pytest.raises(InvalidInput, match="needs robot 'panda'"):
        trajectory_graph("so101", franka="panda")
    with pytest.raises(InvalidInput, match=r"choose one of \['none', 'panda', 'fr3'\]"):
        trajectory_graph("panda", franka="ur5")


def test_the_sim_bridge_publishes_the_cameras_the_launch_names():
    """``cameras:=front_cam,wrist_cam`` reaches the sim bridge's ``cameras.names``; none by
    default (their cost); a real arm's images are its camera driver's, refused here."""
    bridge = pick_graph(cameras="front_cam,wrist_cam")[0]
    assert bridge.parameters["cameras.names"] == "front_cam,wrist_cam"
    assert "cameras.names" not in pick_graph()[0].parameters
    with pytest.raises(InvalidInput, match="camera driver"):
        pick_graph(sim=False, cameras="front_cam")


def test_rviz_layout_names_exist():
    config = yaml.safe_load((REPO_ROOT / "config" / "physai.rviz").read_text())
    displays = {d["Class"]: d for d in config["Visualization Manager"]["Displays"]}
    assert config["Visualization Manager"]["Global Options"]["Fixed Frame"] == "world"
    model = displays["rviz_default_plugins/RobotModel"]
    # RViz runs in the root namespace: the robot's relative names resolve under "/"
    assert model["Description Topic"]["Value"] == "/" + interfaces.ROBOT_DESCRIPTION
    assert model["Description Topic"]["Durability Policy"] == "Transient Local"
    markers = {
        d["Topic"]["Value"]: d
        for d in config["Visualization Manager"]["Displays"]
        if d["Class"] == "rviz_default_plugins/MarkerArray"
    }
    assert set(markers) == {"/" + interfaces.CONTACT_MARKERS, "/" + interfaces.GRASP_MARKERS}
    planned = markers["/" + interfaces.GRASP_MARKERS]["Topic"]
    assert planned["Durability Policy"] == "Transient Local"  # the planner latches its markers
    camera = displays["rviz_default_plugins/Axes"]["Reference Frame"]
    assert camera in load_robot_tf("so101").frame_names
    images = [
        d["Topic"]["Value"]
        for d in config["Visualization Manager"]["Displays"]
        if d["Class"] == "rviz_default_plugins/Image"
    ]  # the sim bridge's cameras (config/scene.yaml's fixed one, the model's on the wrist)
    assert images == ["/front_cam/image_raw", "/wrist_cam/image_raw"], images
    model = build_scene("so101")
    assert all(model.camera(topic.split("/")[1]).id >= 0 for topic in images)


def test_hand_pick_launch_is_the_hand_pick_graph_with_one_object():
    """hand_pick.launch.py starts hand_pick_graph: the sim bridge builds the object the hand
    pick asks the planner about (one place: config/hand_pick.yaml), the TF publisher puts it
    where the planner hangs its contact frames, and the arm moves through the trajectory node
    inside the Panda's limits."""
    from physai_ros.launching.graph import HAND_OBJECT_FRAME, hand_pick_graph

    module = load("hand_pick.launch.py")
    specs = {s.name: s.parameters for s in module.node_specs(defaults(module))}
    assert specs == {s.name: s.parameters for s in hand_pick_graph()}
    values = {**defaults(module), "object_x": "0.51", "young": "20000"}
    specs = {s.name: s.parameters for s in module.node_specs(values)}
    bridge, pick, tf = specs["sim_bridge"], specs["hand_pick"], specs["tf_publisher"]
    assert bridge["robot"] == pick["robot"] == tf["robot"] == "panda_barrett"
    assert bridge["soft_x"] == pick["object.x"] == 0.51
    assert bridge["soft_young"] == pick["object.young"] == 20000.0
    for key in ("shape", "size", "mass", "mu", "poisson", "count"):
        assert bridge["soft_object" if key == "shape" else f"soft_{key}"] == pick[f"object.{key}"]
    assert specs["trajectory"]["robot"] == "panda"  # the arm's limits file
    frames = dict(zip(tf["object_topics"], tf["object_frames"], strict=True))
    assert frames[interfaces.SOFT_OBJECT_POSE] == HAND_OBJECT_FRAME
    assert specs["grasp_planner"]["object_frame"] == HAND_OBJECT_FRAME
    with pytest.raises(InvalidInput, match="panda_barrett"):
        hand_pick_graph("panda")


@pytest.mark.ros  # ROS 2's launch
def test_a_missing_params_file_is_refused_before_any_node_starts(tmp_path):
    from physai_ros.errors import InvalidInput
    from physai_ros.launching.launch_support import node_actions

    specs = load("pick.launch.py").node_specs(defaults(load("pick.launch.py")))
    with pytest.raises(InvalidInput, match="no such file"):
        node_actions(specs, str(tmp_path / "nope.yaml"))
    actions = node_actions(specs, "")
    assert len(actions) == len(specs)


def test_two_arms_are_two_pick_graphs_apart_in_namespaces_frames_place_and_clock():
    """Each arm runs exactly the single-arm sim pick graph, plus only what keeps the two apart:
    namespace, frame prefix, base placement, its own clock."""
    module = load("two_arms.launch.py")
    values = {**defaults(module), "right_cube_x": "0.2", "right_cube_y": "0.03"}
    specs = module.node_specs(values)
    single = {s.name: s for s in pick_graph()}
    assert sorted(s.full_name for s in specs) == sorted(
        f"/{arm}/{name}" for arm in ARMS for name in single
    )
    for spec in specs:
        arm = spec.namespace
        assert spec.remaps == {"/clock": f"/{arm}/clock"}
        base = spec.parameters.pop("base_pos")
        assert base == [0.0, ARMS[arm], 0.0]
        prefix = spec.parameters.pop("frame_prefix", None)
        assert prefix == (None if spec.name == "sim_bridge" else f"{arm}/")
        expected = dict(single[spec.name].parameters)
        if spec.name == "sim_bridge" and arm == "right":
            expected |= {"cube_x": 0.2, "cube_y": 0.03}
        assert spec.parameters == expected, spec.name
    assert ARMS["left"] - ARMS["right"] >= 0.4  # two reaches (~0.3 m each at the cube) apart
    with pytest.raises(InvalidInput, match="arms"):
        two_arm_graph({"left": (0.22, 0.0)})


@pytest.mark.ros  # launch_ros
def test_namespaced_specs_become_one_group_per_namespace_with_its_remaps():
    from launch.actions import GroupAction
    from launch_ros.actions import Node, PushRosNamespace, SetRemap

    from physai_ros.launching.launch_support import node_actions

    actions = node_actions(two_arm_graph())
    assert len(actions) == 2 and all(isinstance(a, GroupAction) for a in actions)
    for action, arm in zip(actions, ARMS, strict=True):
        inner = action.get_sub_entities()
        pushes = [a for a in inner if isinstance(a, PushRosNamespace)]
        remaps = [a for a in inner if isinstance(a, SetRemap)]
        nodes = [a for a in inner if isinstance(a, Node)]
        assert len(pushes) == 1 and len(remaps) == 1 and len(nodes) == 3
        assert inner.index(pushes[0]) < min(inner.index(n) for n in nodes)
        assert [t.text for t in pushes[0].namespace] == [arm]


def test_a_graph_split_across_computers_keeps_each_nodes_spec():
    """`bringup --only/--skip` starts one computer's share of a graph: the shares add up to the
    whole graph and each node keeps the spec the whole graph gives it."""
    from physai_ros.launching.bringup import select

    whole = pick_graph(sim=True)
    here = select(whole, ["sim_bridge"], [])
    there = select(whole, [], ["sim_bridge"])
    assert [s.name for s in here] == ["sim_bridge"]
    assert [s.name for s in there] == ["tf_publisher", "pick"]
    assert here + there == whole
    with pytest.raises(InvalidInput, match="no node"):
        select(whole, ["trajectory"], [])
    with pytest.raises(InvalidInput, match="no node"):
        select(whole, [], ["tf_publishr"])
    with pytest.raises(InvalidInput, match="leaves no node"):
        select(whole, [], ["sim_bridge", "tf_publisher", "pick"])
