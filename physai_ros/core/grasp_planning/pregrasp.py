"""Pre-grasp (the seed's Algorithm 2, arm part): put the tool-centre frame on the grasp.

Why like this: the tool-centre line (the approach axis) must pass through the grasp centre
and the jaws must close along the contact axis; that fixes the tool's orientation up to a turn
about the contact axis. Approach directions around that axis are tried from above first; for
each, damped-least-squares IK (``physai_ros.core.motion.kinematics.solve_ik``) is asked for the full
pose. The Panda (7 joints) reaches nearly every such pose; the SO-101 (5 joints) reaches only
the orientations whose approach lies in the vertical plane through its base axis, so most
directions fail and one that it can reach is found. A grasp no direction reaches is
rejected with the reason, and the planner goes on to the next-best grasp.
"""

from __future__ import annotations

import math
from functools import cache
from typing import NamedTuple

import mujoco
import numpy as np

from physai_ros.core.grasp_planning.contacts import Jaw
from physai_ros.core.motion.kinematics import solve_ik
from physai_ros.errors import PhysaiError
from physai_ros.models import load_robot_spec
from physai_ros.models.joints import PANDA_ARM_JOINTS, SO101_ARM_JOINTS

POS_TOL = 1e-3  # [m] pre-grasp position accepted
ROT_TOL = math.radians(2.0)  # [rad] pre-grasp orientation accepted (the seed's 2° per joint)
APPROACHES = 16  # approach directions tried around the contact axis


class Unreachable(PhysaiError):
    """No arm configuration puts the tool on the grasp; the message says what was tried."""


class ArmSpec(NamedTuple):
    """robot: embedded model name; tcp_body, tcp_pos: where the tool-centre site sits [m];
    close_axis, approach_axis: the jaws' closing direction and the approach direction in the
    site frame; joints: the arm joints IK moves; base_to_object: object centre in the world
    [m] (on the table in front of the robot); jaw: the opening limits and face tilt."""

    robot: str
    tcp_body: str
    tcp_pos: tuple[float, float, float]
    close_axis: np.ndarray
    approach_axis: np.ndarray
    joints: tuple[str, ...]
    object_pos: np.ndarray
    jaw: Jaw


class PreGrasp(NamedTuple):
    """q: arm joint values [rad]; position [m] and quat (w, x, y, z) of the tool in the world;
    approach: unit approach direction (world); error [m]; tried: directions tried."""

    q: np.ndarray
    position: np.ndarray
    quat: np.ndarray
    approach: np.ndarray
    error: float
    tried: int


@cache
def _so101_jaw_table() -> tuple[np.ndarray, np.ndarray]:
    """SO-101 jaw opening [m] between the tip pads vs gripper angle [rad], from the model.

    The moving jaw's face turns with the gripper joint, so its tilt from parallel is the joint
    angle itself (0 = faces parallel, 16 mm apart at the tips).
    """
    model = load_robot_spec("so101").compile()
    data = mujoco.MjData(model)
    fixed, moving = model.geom("fixed_jaw_sph_tip1").id, model.geom("moving_jaw_sph_tip1").id
    gripper = model.body("gripper").id
    angles = np.linspace(0.0, float(model.joint("gripper").range[1]), 60)
    widths = []
    for q in angles:
        data.qpos[model.joint("gripper").qposadr[0]] = q
        mujoco.mj_kinematics(model, data)
        axis = data.xmat[gripper].reshape(3, 3)[:, 0]
        widths.append(float((data.geom_xpos[moving] - data.geom_xpos[fixed]) @ axis))
    return np.array(widths), angles


def so101_tilt(width: np.ndarray) -> np.ndarray:
    """Tilt [rad] of the SO-101's hinged jaw face at opening ``width`` [m]."""
    widths, angles = _so101_jaw_table()
    return np.interp(width, widths, angles)


def arm_spec(robot: str) -> ArmSpec:
    """The two-jaw arms of the package: "panda" (parallel fingers) or "so101" (hinged jaw)."""
    if robot == "panda":
        # fingertip pad centre: 58.4 mm (finger base) + 44.5 mm (pad) along the hand's z
        return ArmSpec(
            "panda",
            "hand",
            (0.0, 0.0, 0.1029),
            np.array([0.0, 1.0, 0.0]),
            np.array([0.0, 0.0, 1.0]),
            PANDA_ARM_JOINTS,
            np.array([0.5, 0.0, 0.0]),
            Jaw("panda", 0.0, 0.08, np.zeros_like),
        )
    if robot == "so101":
        widths, _ = _so101_jaw_table()
        return ArmSpec(
            "so101",
            "gripper",
            (0.012, -0.000218, -0.098127),
            np.array([1.0, 0.0, 0.0]),
            np.array([0.0, 0.0, -1.0]),
            SO101_ARM_JOINTS,
            np.array([0.22, 0.0, 0.0]),
            Jaw("so101", float(widths[0]), float(widths[-1]), so101_tilt),
        )
    raise PhysaiError(f"no two-jaw arm {robot!r}; valid choices: ['panda', 'so101']")


def _frame(close_w: np.ndarray, approach_w: np.ndarray, spec: ArmSpec) -> np.ndarray:
    """World rotation of the tool site whose close/approach axes are the given world ones."""
    third_site = np.cross(spec.approach_axis, spec.close_axis)
    site = np.column_stack([spec.close_axis, spec.approach_axis, third_site])
    world = np.column_stack([close_w, approach_w, np.cross(approach_w, close_w)])
    return world @ site.T


def solve_pregrasp(spec: ArmSpec, centre: np.ndarray, axis: np.ndarray) -> PreGrasp:
    """Arm joints that put the tool centre on ``centre`` [m, object frame] closing along
    ``axis`` (unit, object frame); the object sits at ``spec.object_pos`` with its centre of
    mass ``object_z`` above the table. Raises :class:`Unreachable` with what was tried."""
    mj_spec = load_robot_spec(spec.robot)
    body = mj_spec.body(spec.tcp_body)
    body.add_site(name="physai_tcp", pos=list(spec.tcp_pos))
    model = mj_spec.compile()
    data = mujoco.MjData(model)
    if model.nkey:
        mujoco.mj_resetDataKeyframe(model, data, 0)
    target = spec.object_pos + centre
    axis = axis / np.linalg.norm(axis)
    helper = np.array([0.0, 0.0, 1.0]) if abs(axis[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
    e1 = np.cross(axis, helper)
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(axis, e1)
    angles = 2 * math.pi * np.arange(APPROACHES) / APPROACHES
    approaches = [math.cos(a) * e1 + math.sin(a) * e2 for a in angles]
    approaches.sort(key=lambda d: d[2])  # from above first (approach pointing down)
    q0 = np.array([data.qpos[model.joint(j).qposadr[0]] for j in spec.joints])
    best_error = math.inf
    for tried, approach in enumerate(approaches, start=1):
        rot = _frame(axis, approach, spec)
        quat = np.empty(4)
        mujoco.mju_mat2Quat(quat, rot.ravel())
        res = solve_ik(
            model,
            data,
            "physai_tcp",
            target,
            spec.joints,
            q0,
            quat,
            tol=POS_TOL / 10,
            rot_tol=ROT_TOL / 10,
            max_iters=200,
        )
        best_error = min(best_error, res.error)
        check = mujoco.MjData(model)
        check.qpos[:] = data.qpos
        for name, value in zip(spec.joints, res.q, strict=True):
            check.qpos[model.joint(name).qposadr[0]] = value
        mujoco.mj_kinematics(model, check)
        site = model.site("physai_tcp").id
        err_pos = float(np.linalg.norm(check.site_xpos[site] - target))
        err_rot = _angle_between(check.site_xmat[site].reshape(3, 3), rot)
        if err_pos <= POS_TOL and err_rot <= ROT_TOL:
            return PreGrasp(res.q, target, quat, approach, err_pos, tried)
    raise Unreachable(
        f"{spec.robot}: no arm configuration reaches the grasp at {np.round(target, 3).tolist()} m "
        f"closing along {np.round(axis, 3).tolist()} ({APPROACHES} approach directions tried, "
        f"best position error {best_error * 1e3:.1f} mm)"
    )


def _angle_between(a: np.ndarray, b: np.ndarray) -> float:
    """Rotation angle [rad] between two rotation matrices."""
    cos = (np.trace(a.T @ b) - 1.0) / 2.0
    return float(math.acos(min(1.0, max(-1.0, cos))))
