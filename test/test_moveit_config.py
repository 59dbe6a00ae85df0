"""MoveIt configuration (config/moveit/<robot>/): parsed with the standard library and yaml,
checked against the URDF (yourdfpy), the limits files, the package's controllers, and the
mimic joint against MuJoCo's coupling. MoveIt itself is not installable here; these are the
checks its loaders would make. The collision matrix: test_collision_matrix.py."""

from __future__ import annotations

import functools
from pathlib import Path
from xml.etree import ElementTree as ET

import mujoco
import numpy as np
import pytest
import yaml
import yourdfpy
from support.paths import REPO_ROOT
from test_urdf import load_urdf

from physai_ros import interfaces
from physai_ros.config import load_sim_config
from physai_ros.core.motion.limits import load_gripper_limits, load_limits
from physai_ros.errors import ModelError
from physai_ros.export import moveit_config as mc
from physai_ros.export.urdf import urdf_from_model
from physai_ros.models import load_robot_model

ROBOTS = ["so101", "panda"]


@functools.cache
def generated(robot: str) -> dict[str, str]:
    """A fresh generation, once per robot for the whole module (it samples 50,000 states)."""
    return mc.generate_moveit_config(robot)


def committed_urdf(robot: str, tmp_path: Path) -> yourdfpy.URDF:
    """urdf/<robot>.urdf as yourdfpy reads it (an implementation independent of ours)."""
    return load_urdf((REPO_ROOT / "urdf" / f"{robot}.urdf").read_text(encoding="utf-8"), tmp_path)


def committed(robot: str) -> dict[str, str]:
    folder = REPO_ROOT / "config" / "moveit" / robot
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.iterdir())}


def srdf(robot: str) -> ET.Element:
    return ET.fromstring(committed(robot)[f"{robot}.srdf"])


def yaml_file(robot: str, name: str) -> dict:
    return yaml.safe_load(committed(robot)[name])


def disabled(robot: str) -> dict[tuple[str, str], str]:
    return {
        (e.get("link1"), e.get("link2")): e.get("reason")
        for e in srdf(robot).findall("disable_collisions")
    }


def controllers(robot: str) -> dict[str, dict]:
    manager = yaml_file(robot, "moveit_controllers.yaml")["moveit_simple_controller_manager"]
    return {name: manager[name] for name in manager["controller_names"]}


@pytest.mark.parametrize("robot", ROBOTS)
def test_committed_files_are_fresh(robot: str) -> None:
    assert committed(robot) == generated(robot), (
        f"config/moveit/{robot} is stale; regenerate it with python -m "
        f"physai_ros.export.moveit_config --robot {robot} --output config/moveit/{robot}"
    )


@pytest.mark.parametrize("robot", ROBOTS)
def test_every_name_exists_in_the_urdf(robot: str, tmp_path: Path) -> None:
    text = (REPO_ROOT / "urdf" / f"{robot}.urdf").read_text(encoding="utf-8")
    urdf = load_urdf(text, tmp_path)
    links, joints = set(urdf.link_map), set(urdf.joint_map)
    root = srdf(robot)
    assert root.get("name") == urdf.robot.name
    named_links = {e.get(k) for e in root.iter("chain") for k in ("base_link", "tip_link")}
    named_links |= {e.get("parent_link") for e in root.iter("end_effector")}
    named_links |= {link for pair in disabled(robot) for link in pair}
    assert named_links <= links, named_links - links
    named_joints = {e.get("name") for e in root.iter("joint")}  # group and group_state joints
    named_joints |= {j for c in controllers(robot).values() for j in c["joints"]}
    named_joints |= set(yaml_file(robot, "joint_limits.yaml")["joint_limits"])
    control = ET.fromstring(text).find("ros2_control")
    assert control.find("hardware/plugin").text
    for joint in control.findall("joint"):
        limit = urdf.joint_map[joint.get("name")].limit
        command = {p.get("name"): float(p.text) for p in joint.find("command_interface")}
        assert command == {"min": limit.lower, "max": limit.upper}
        states = [s.get("name") for s in joint.findall("state_interface")]
        assert states == ["position", "velocity", "effort"]
        named_joints.add(joint.get("name"))
    assert named_joints <= joints, named_joints - joints
    # ros2_control commands every movable joint except a mimic, which follows its master
    mimic = {j.name for j in urdf.robot.joints if j.mimic is not None}
    commanded = {j.get("name") for j in control.findall("joint")}
    assert commanded == set(urdf.actuated_joint_names) and not commanded & mimic
    assert {e.get("group") for e in root.iter("group_state")} <= {mc.ARM, mc.GRIPPER}


@pytest.mark.parametrize("robot", ROBOTS)
def test_arm_is_a_chain_of_revolute_joints_and_the_controllers_drive_the_groups(
    robot: str, tmp_path: Path
) -> None:
    urdf = committed_urdf(robot, tmp_path)
    chain = srdf(robot).find(f"group[@name='{mc.ARM}']/chain")
    by_child = {j.child: j for j in urdf.robot.joints}
    walked, link = [], chain.get("tip_link")
    while link != chain.get("base_link"):  # a KeyError here: the tip does not reach the base
        walked.append(by_child[link])
        link = walked[-1].parent
    arm = [j.name for j in reversed(walked) if j.type != "fixed"]
    assert {j.type for j in walked} <= {"revolute", "fixed"} and arm
    gripper = [e.get("name") for e in srdf(robot).findall(f"group[@name='{mc.GRIPPER}']/joint")]
    active_gripper = [n for n in gripper if urdf.joint_map[n].mimic is None]
    by_name = controllers(robot)
    assert by_name[interfaces.ARM_CONTROLLER]["joints"] == arm
    assert by_name[interfaces.GRIPPER_CONTROLLER]["joints"] == active_gripper
    for name, action in (
        (interfaces.ARM_CONTROLLER, interfaces.FOLLOW_JOINT_TRAJECTORY),
        (interfaces.GRIPPER_CONTROLLER, interfaces.GRIPPER_COMMAND),
    ):
        assert f"{name}/{by_name[name]['action_ns']}" == action and by_name[name]["default"]
    sim = load_sim_config()["robots"][robot]  # what the sim bridge's controllers accept
    assert arm == sim["arm_joints"] and active_gripper == sim["gripper_joints"][:1]
    assert set(gripper) | set(arm) == set(urdf.actuated_joint_names) | {
        j.name for j in urdf.robot.joints if j.mimic is not None
    }
    states = {e.get("name"): e for e in srdf(robot).iter("group_state")}
    home = {j.get("name"): float(j.get("value")) for j in states["home"]}
    model = load_robot_model(robot)
    reset = (
        [model.key("home").qpos[model.joint(n).qposadr[0]] for n in arm]
        if "home_keyframe" in sim
        else sim["home"]
    )
    assert list(home) == arm and list(home.values()) == pytest.approx(reset)
    for name in ("open", "close"):
        assert [j.get("name") for j in states[name]] == active_gripper


@pytest.mark.parametrize("robot", ROBOTS)
def test_joint_limits_are_the_limits_files(robot: str) -> None:
    table = yaml_file(robot, "joint_limits.yaml")["joint_limits"]
    limits, gripper = load_limits(robot), load_gripper_limits(robot)
    assert set(table) == set(limits.joint_names) | set(gripper)
    for i, name in enumerate(limits.joint_names):
        entry = table[name]
        assert entry["has_position_limits"] is False  # the URDF's ranges apply
        assert entry["max_velocity"] == limits.velocity[i]
        assert entry["max_acceleration"] == limits.acceleration[i]
        assert entry["has_jerk_limits"] == bool(np.isfinite(limits.jerk[i]))
        assert entry.get("max_jerk", np.inf) == limits.jerk[i]
    for name, (velocity, acceleration) in gripper.items():
        assert (table[name]["max_velocity"], table[name]["max_acceleration"]) == (
            velocity,
            acceleration,
        )
    # MoveIt's time parameterization refuses a joint without velocity and acceleration limits
    for joints in (c["joints"] for c in controllers(robot).values()):
        for name in joints:
            assert table[name]["has_velocity_limits"] and table[name]["has_acceleration_limits"]
    kinematics = yaml_file(robot, "kinematics.yaml")
    assert kinematics[mc.ARM]["kinematics_solver"] == "kdl_kinematics_plugin/KDLKinematicsPlugin"


def equality_residual(model: mujoco.MjModel, q: np.ndarray) -> float:
    """Largest |violation| of the model's equality constraints at ``q``."""
    data = mujoco.MjData(model)
    data.qpos[:] = q
    mujoco.mj_forward(model, data)
    return float(np.abs(data.efc_pos[data.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY]).max())


def test_panda_mimic_reproduces_the_mujoco_coupling(tmp_path: Path) -> None:
    """finger_joint2 = multiplier * finger_joint1 + offset satisfies panda.xml's joint equality
    at random configurations; a wrong multiplier would not. The SO-101 has one jaw joint, no
    coupling and no mimic."""
    model = load_robot_model("panda")
    urdf = committed_urdf("panda", tmp_path)
    mimic = urdf.joint_map["finger_joint2"].mimic
    assert mimic.joint == "finger_joint1"
    master, follower = (
        model.joint("finger_joint1").qposadr[0],
        model.joint("finger_joint2").qposadr[0],
    )
    rng = np.random.default_rng(5)
    for _ in range(50):
        q = rng.uniform(model.jnt_range[:, 0], model.jnt_range[:, 1])
        q[follower] = mimic.multiplier * q[master] + mimic.offset
        assert equality_residual(model, q) < 1e-12
        q[follower] = 1.1 * mimic.multiplier * q[master] + mimic.offset
        assert equality_residual(model, q) > 1e-4 or q[master] < 1e-3
    assert load_robot_model("so101").neq == 0
    assert "<mimic" not in (REPO_ROOT / "urdf" / "so101.urdf").read_text(encoding="utf-8")


COUPLED_MJCF = """
<mujoco>
  <worldbody>
    <body name="base">
      <geom type="box" size="0.05 0.05 0.05"/>
      <body name="a"><joint name="a" type="slide" axis="1 0 0" range="-0.1 0.1"/>
        <geom type="sphere" size="0.01" pos="0 0 0.2"/></body>
      <body name="b"><joint name="b" type="slide" axis="0 1 0" range="-0.3 0.3"/>
        <geom type="sphere" size="0.01" pos="0 0 0.4"/></body>
    </body>
  </worldbody>
  <equality><joint joint1="JOINT1" joint2="JOINT2" polycoef="POLY"/></equality>
</mujoco>
"""


@pytest.mark.parametrize(
    ("joint1", "joint2", "multiplier", "offset"),
    [("b", "a", 2.0, 0.01), ("a", "b", 0.5, -0.005)],  # q1 = 0.01 + 2 q2 either way round
)
def test_mimic_follows_the_earlier_joint_whichever_way_the_equality_reads(
    joint1: str, joint2: str, multiplier: float, offset: float, tmp_path: Path
) -> None:
    xml = COUPLED_MJCF.replace("JOINT1", joint1).replace("JOINT2", joint2)
    model = mujoco.MjModel.from_xml_string(xml.replace("POLY", "0.01 2 0 0 0"))
    mimic = load_urdf(urdf_from_model(model, "coupled"), tmp_path).joint_map["b"].mimic
    assert mimic.joint == "a"
    assert (mimic.multiplier, mimic.offset) == pytest.approx((multiplier, offset), abs=1e-15)
    q = np.array([0.03, multiplier * 0.03 + offset])
    assert equality_residual(model, q) < 1e-15
    nonlinear = mujoco.MjModel.from_xml_string(xml.replace("POLY", "0 1 0.5 0 0"))
    with pytest.raises(ModelError, match="only q1 = a0 \\+ a1·q2"):
        urdf_from_model(nonlinear, "coupled")


def test_cli_writes_every_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(mc, "generate_moveit_config", generated)
    assert mc.main(["--robot", "panda", "--output", str(tmp_path / "panda")]) == 0
    written = {p.name: p.read_text(encoding="utf-8") for p in (tmp_path / "panda").iterdir()}
    assert written == generated("panda")
    assert set(written) == {name.format(robot="panda") for name in mc.FILES}
    with pytest.raises(SystemExit) as exit_info:
        mc.main(["--help"])
    assert exit_info.value.code == 0 and "--output" in capsys.readouterr().out
