"""The ROS side of the generated URDF: how the MuJoCo model drives its joints.

The URDF generator (``physai_ros.export.urdf``) needs three facts the kinematic tree alone does
not give: the largest force an actuator can put on each joint (``<limit effort>``), which joints
merely follow another one (``<mimic>``), and which joints a controller commands
(``<ros2_control>``). All three are read here from the compiled model (actuator transmissions,
force ranges, joint equality constraints), so they cannot drift from the simulation.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple
from xml.etree import ElementTree as ET

import mujoco
import numpy as np

from physai_ros.core.motion.limits import load_gripper_limits, load_limits
from physai_ros.errors import ModelError

HOME_KEY = "home"
"""Keyframe used as the robot's resting pose when the model has one (the Panda's)."""

HARDWARE_PLUGIN = "mock_components/GenericSystem"
"""Placeholder ros2_control hardware: physai_ros drives the robots with its own nodes."""


def number_text(value: float) -> str:
    """Shortest text that reads back as the same float (FK through the URDF stays exact)."""
    value = float(value)
    return "0" if value == 0.0 else repr(value)


class Mimic(NamedTuple):
    """URDF ``<mimic>``: this joint = ``multiplier`` · ``joint`` + ``offset``."""

    joint: str
    multiplier: float
    offset: float


def _transmissions(model: mujoco.MjModel, joint: int) -> Iterator[tuple[int, float]]:
    """(actuator, |generalized force per unit actuator force|) for every actuator on ``joint``,
    directly or through a fixed tendon (the Panda's fingers are driven through one)."""
    for act in range(model.nu):
        gear = abs(model.actuator_gear[act, 0])
        target = model.actuator_trnid[act, 0]
        trntype = int(model.actuator_trntype[act])
        if trntype == mujoco.mjtTrn.mjTRN_JOINT and target == joint:
            yield act, gear
        elif trntype == mujoco.mjtTrn.mjTRN_TENDON:
            start, count = model.tendon_adr[target], model.tendon_num[target]
            for wrap in range(start, start + count):
                if (
                    int(model.wrap_type[wrap]) == mujoco.mjtWrap.mjWRAP_JOINT
                    and model.wrap_objid[wrap] == joint
                ):
                    yield act, gear * abs(model.wrap_prm[wrap])


def joint_effort(model: mujoco.MjModel, joint: int) -> float:
    """Largest generalized force the actuators can apply to ``joint`` [N m or N]: the force
    range of a force-limited actuator times its transmission (0 if none is force-limited)."""
    return max(
        (
            np.abs(model.actuator_forcerange[act]).max() * scale
            for act, scale in _transmissions(model, joint)
            if model.actuator_forcelimited[act]
        ),
        default=0.0,
    )


def joint_mimics(model: mujoco.MjModel) -> dict[str, Mimic]:
    """Mimic joint name -> the joint it follows, from the model's joint equality constraints.

    MuJoCo's ``<equality><joint joint1 joint2 polycoef>`` holds ``q1 = a0 + a1·q2`` (reference
    positions are zero, which the URDF export requires anyway). The joint earlier in the tree is
    the one commanded (the Panda's ``finger_joint1``, as in franka_description), so the other
    mimics it; the relation is inverted when needed. Couplings a URDF cannot state (nonlinear,
    to a constant, chained, or any other active equality type) are rejected.
    """
    mimics: dict[str, Mimic] = {}
    for eq in range(model.neq):
        if not model.eq_active0[eq]:
            continue
        if int(model.eq_type[eq]) != mujoco.mjtEq.mjEQ_JOINT:
            raise ModelError(f"equality {eq} ({model.eq_type[eq]}): no URDF form (only joint)")
        j1, j2 = int(model.eq_obj1id[eq]), int(model.eq_obj2id[eq])
        a0, a1, *higher = (float(c) for c in model.eq_data[eq, :5])
        if j2 < 0 or a1 == 0.0 or any(higher):
            raise ModelError(
                f"equality on joint {model.joint(j1).name!r}: only q1 = a0 + a1·q2 with a joint "
                "q2 and a1 != 0 has a URDF <mimic> form"
            )
        if j1 < j2:  # j1 commanded: q2 = (q1 - a0) / a1
            master, follower, multiplier, offset = j1, j2, 1.0 / a1, -a0 / a1
        else:
            master, follower, multiplier, offset = j2, j1, a1, a0
        name, master_name = model.joint(follower).name, model.joint(master).name
        if name in mimics or master_name in mimics:
            raise ModelError(f"joint {name!r}: a URDF joint mimics one joint that mimics none")
        mimics[name] = Mimic(master_name, multiplier, offset)
    return mimics


def actuated_joints(model: mujoco.MjModel) -> list[int]:
    """Joints a controller commands: moved by an actuator and not the mimic of another joint."""
    mimics = joint_mimics(model)
    return [
        j
        for j in range(model.njnt)
        if model.joint(j).name not in mimics and next(_transmissions(model, j), None)
    ]


def home_qpos(model: mujoco.MjModel) -> np.ndarray:
    """The robot's resting pose: keyframe ``home`` if the model has one, else ``qpos0``
    (the SO-101's zero pose, where the sim bridge resets it)."""
    key = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, HOME_KEY)
    return (model.key_qpos[key] if key >= 0 else model.qpos0).copy()


def system_name(robot: str) -> str:
    """ros2_control system name of ``robot``: ``so101`` -> ``So101System``."""
    return "".join(part.capitalize() for part in re.split(r"[^0-9A-Za-z]+", robot)) + "System"


def ros2_control_element(model: mujoco.MjModel, robot: str) -> ET.Element | None:
    """The ``<ros2_control>`` block of ``robot``: one ``<joint>`` per actuated joint with a
    position command interface (min/max = the joint range) and position/velocity/effort state
    interfaces, the resting pose as their initial value (mock hardware starts there, inside
    the Panda's joint 4 range); ``None`` if nothing is actuated.
    """
    joints = actuated_joints(model)
    if not joints:
        return None
    home = home_qpos(model)
    system = ET.Element("ros2_control", name=system_name(robot), type="system")
    system.append(
        ET.Comment(
            " Not used by physai_ros: its own nodes (or franka_ros2) drive the robot. This block "
            "declares the joints' interfaces for MoveIt and ros2_control tools; the hardware "
            "plugin is a placeholder. "
        )
    )
    ET.SubElement(ET.SubElement(system, "hardware"), "plugin").text = HARDWARE_PLUGIN
    for j in joints:
        element = ET.SubElement(system, "joint", name=model.joint(j).name)
        command = ET.SubElement(element, "command_interface", name="position")
        if model.jnt_limited[j]:
            ET.SubElement(command, "param", name="min").text = number_text(model.jnt_range[j, 0])
            ET.SubElement(command, "param", name="max").text = number_text(model.jnt_range[j, 1])
        state = ET.SubElement(element, "state_interface", name="position")
        initial = home[model.jnt_qposadr[j]]
        ET.SubElement(state, "param", name="initial_value").text = number_text(initial)
        for interface in ("velocity", "effort"):
            ET.SubElement(element, "state_interface", name=interface)
    return system


def joint_velocity_limits(robot: str) -> dict[str, float]:
    """Speed limit per joint [rad/s or m/s] for ``<limit velocity>``: ``config/limits_<robot>.yaml``
    (the default set, and the gripper block for the Panda's fingers), the same numbers the
    trajectory checks and MoveIt's joint_limits.yaml use."""
    limits = load_limits(robot)
    gripper = {name: v for name, (v, _) in load_gripper_limits(robot).items()}
    return {**dict(zip(limits.joint_names, limits.velocity.tolist(), strict=True)), **gripper}
