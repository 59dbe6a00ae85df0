"""A planned three-finger grasp made executable (``core/pick/hand_grasp.py``), checked against
MuJoCo
itself: the fingers' levers against finite differences of the contact point, the pick's poses
against forward kinematics, and the plan's answer refused when it is not the Barrett hand's."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from physai_ros.core.pick.hand_grasp import (
    INNER_JOINTS,
    OUTER_BODIES,
    OUTER_JOINTS,
    PLANNED_HAND,
    HandKinematics,
    PlannedGrasp,
    planned_grasp,
)
from physai_ros.errors import InvalidInput
from physai_ros.models import load_robot_spec
from physai_ros.models.barrett_hand import PANDA_PREFIX
from physai_ros.models.joints import PANDA_ARM_JOINTS

TIP_R = 0.012  # the fingertip hemisphere (models/barrett.xml)
ARM = np.array([0.0, 0.3, 0.0, -2.2, 0.0, 2.5, 0.785])  # the hand facing down over the table


@pytest.fixture(scope="module")
def kin() -> HandKinematics:
    return HandKinematics(load_robot_spec("panda_barrett").compile())


def around_tips(kin: HandKinematics, spread=0.5, inner=(1.3, 1.3, 1.2)) -> PlannedGrasp:
    """A plan whose object centre is the tips' centroid and whose contacts are where each tip
    faces it: what the planner gives, made from the model itself."""
    m, d = kin.model, kin.data
    kin._place(ARM, spread, np.array(inner))
    tips = np.array(
        [d.site_xpos[m.site(f"{PANDA_PREFIX}bh_{f}_tip").id] for f in ("f1", "f2", "f3")]
    )
    centre = tips.mean(axis=0)
    out = (tips - centre) / np.linalg.norm(tips - centre, axis=1)[:, None]
    contacts = tips - TIP_R * out - centre
    return PlannedGrasp(ARM, spread, np.array(inner), np.array([0.3, 0.3, 0.3]), contacts, out,
                        centre)  # fmt: skip


def test_levers_equal_the_contact_points_motion_along_the_normal(kin):
    """τ = lever · f: the lever is how far the contact point (fixed on the outer link) moves
    along the inward normal per radian of the motor, the outer joint following by the
    coupling; central differences of MuJoCo's own kinematics agree to 1e-6 m."""
    grasp = around_tips(kin)
    levers = kin.levers(grasp)
    m, d = kin.model, kin.data
    h = 1e-5
    for k in range(3):
        kin._place(grasp.arm, grasp.spread, grasp.inner)
        body = m.body(OUTER_BODIES[k]).id
        point = grasp.object_pos + grasp.contacts[k]
        local = d.xmat[body].reshape(3, 3).T @ (point - d.xpos[body])  # fixed on the link
        moved = []
        for sign in (1.0, -1.0):
            inner = grasp.inner.copy()
            inner[k] += sign * h
            kin._place(grasp.arm, grasp.spread, inner)
            moved.append(d.xpos[body] + d.xmat[body].reshape(3, 3) @ local)
        along = (moved[0] - moved[1]) / (2 * h) @ -grasp.normals[k]
        assert levers[k] == pytest.approx(along, abs=1e-6)
        assert 0.02 < levers[k] < 0.2  # a finger's reach: tenths of its 12 cm length


def test_the_coupling_is_the_models(kin):
    m = kin.model
    for k in range(3):
        eq = m.equality(f"{PANDA_PREFIX}bh_f{k + 1}_coupling").id
        assert m.eq_obj1id[eq] == m.joint(OUTER_JOINTS[k]).id
        assert m.eq_obj2id[eq] == m.joint(INNER_JOINTS[k]).id
    assert kin.coupling == pytest.approx(0.84 / 2.44, rel=1e-6)


def test_a_finger_that_cannot_press_its_contact_is_refused(kin):
    grasp = around_tips(kin)
    sideways = grasp.normals.copy()
    sideways[1] = np.cross(grasp.normals[1], [0.0, 0.0, 1.0])  # across the finger's plane
    sideways[1] /= np.linalg.norm(sideways[1])
    with pytest.raises(InvalidInput, match="finger F2 cannot press its contact"):
        kin.levers(grasp._replace(normals=sideways))


def test_poses_follow_the_object_with_the_planned_palm_pose(kin):
    """Grasp: the palm where the plan had it relative to the object, moved with the object;
    approach: backed off along the palm normal; lift: raised; all in the planned orientation."""
    grasp = around_tips(kin)
    palm0, quat0 = kin.palm_pose(grasp.arm)
    normal = kin.data.site_xmat[kin._site].reshape(3, 3)[:, 2]
    shift = np.array([0.015, -0.01, -0.003])
    poses = kin.poses(grasp, grasp.object_pos + shift, approach=0.06, lift=0.07)
    expect = {
        "grasp": palm0 + shift,
        "approach": palm0 + shift - 0.06 * normal,
        "lift": palm0 + shift + [0.0, 0.0, 0.07],
    }
    for name, where in expect.items():
        palm, quat = kin.palm_pose(getattr(poses, name))
        assert np.linalg.norm(palm - where) < 1e-4, name
        assert abs(abs(float(quat @ quat0)) - 1.0) < 1e-6, name
    assert poses.error < 1e-4


def test_an_object_out_of_reach_is_refused(kin):
    grasp = around_tips(kin)
    with pytest.raises(InvalidInput, match="out of reach"):
        kin.poses(grasp, grasp.object_pos + np.array([1.5, 0.0, 0.0]), approach=0.06, lift=0.07)


def test_a_plan_that_is_not_the_barrett_hands_is_refused():
    names = [*PANDA_ARM_JOINTS, *PLANNED_HAND]
    ok = ([0.0] * 11, [0.3] * 3, np.zeros((3, 3)), np.eye(3), [0.5, 0.0, 0.03])
    assert planned_grasp(names, *ok).inner.shape == (3,)
    with pytest.raises(InvalidInput, match="not the Barrett-on-Panda's"):
        planned_grasp(names[:7], *ok)  # a jaw plan: the arm only
    with pytest.raises(InvalidInput, match="3 targets"):
        planned_grasp(names, ok[0], [0.3, 0.3], *ok[2:])
    with pytest.raises(InvalidInput, match="non-finite"):
        planned_grasp(names, [float("nan")] * 11, *ok[1:])
    with pytest.raises(InvalidInput, match="<= 0"):
        planned_grasp(names, ok[0], [0.3, 0.0, 0.3], *ok[2:])


def test_the_finger_limits_are_the_models(kin):
    """The force close's cap and closing target come from the hand model, not a config copy:
    the finger actuators' force range and the inner joints' upper limit (models/barrett.xml)."""
    m = kin.model
    for f in ("f1", "f2", "f3"):
        assert m.actuator(f"{PANDA_PREFIX}bh_{f}").forcerange[1] == kin.finger_limits["cap"]
    assert kin.finger_limits == {"cap": 5.0, "closed": 2.44}


def test_the_model_is_the_simulations():
    """The pick's kinematics load the sim bridge's robot: same joints and sites."""
    model = load_robot_spec("panda_barrett").compile()
    for joint in (*PANDA_ARM_JOINTS, *INNER_JOINTS, *OUTER_JOINTS):
        assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, joint) >= 0, joint
