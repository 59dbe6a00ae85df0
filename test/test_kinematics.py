"""DLS inverse kinematics: reaches what is reachable, respects ranges, never touches the caller.

Tolerances: the solver's own tol (1e-5 m, 1e-4 rad) checked again by independent forward
kinematics; joint ranges are exact (clipping), so they are checked with no slack.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from physai_ros.core.motion.kinematics import IKResult, solve_ik
from physai_ros.errors import InvalidInput
from physai_ros.models.joints import PANDA_ARM_JOINTS, SO101_ARM_JOINTS

POS_TOL = 1e-5  # [m], the solver default
ROT_TOL = 1e-4  # [rad], the solver default

# A two-link planar arm written inline: the edge cases do not need a real robot.
PLANAR = """
<mujoco><worldbody>
  <body><joint name="a" type="hinge" axis="0 0 1" range="-1 1"/>
    <geom type="capsule" fromto="0 0 0 0.1 0 0" size="0.01"/>
    <body pos="0.1 0 0"><joint name="b" type="hinge" axis="0 0 1" range="-2 2"/>
      <geom type="capsule" fromto="0 0 0 0.1 0 0" size="0.01"/>
      <site name="tip" pos="0.1 0 0"/>
    </body>
  </body>
</worldbody></mujoco>
"""


@pytest.fixture(scope="module")
def so101(shared_models):
    model = mujoco.MjModel.from_xml_path(str(shared_models / "robotstudio_so101" / "so101.xml"))
    return model, mujoco.MjData(model)


@pytest.fixture(scope="module")
def panda(shared_models):
    model = mujoco.MjModel.from_xml_path(str(shared_models / "franka_emika_panda" / "panda.xml"))
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    return model, data


def _site_pose(model, data, site, joints, q):
    """Independent forward kinematics of the answer on a fresh MjData."""
    check = mujoco.MjData(model)
    check.qpos[:] = data.qpos
    for name, value in zip(joints, q, strict=True):
        check.qpos[model.joint(name).qposadr[0]] = value
    mujoco.mj_kinematics(model, check)
    sid = model.site(site).id
    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, check.site_xmat[sid])
    return check.site_xpos[sid].copy(), quat


def _quat_angle(qa, qb) -> float:
    return 2.0 * np.arccos(min(1.0, abs(float(np.dot(qa, qb)))))


def test_so101_position_target_is_reached_and_caller_state_untouched(so101):
    model, data = so101
    before = data.qpos.copy()
    target = np.array([0.22, 0.01, 0.011])
    result = solve_ik(model, data, "gripperframe", target, SO101_ARM_JOINTS, np.zeros(5))
    assert isinstance(result, IKResult) and result.converged
    pos, _ = _site_pose(model, data, "gripperframe", SO101_ARM_JOINTS, result.q)
    assert np.linalg.norm(pos - target) < POS_TOL
    np.testing.assert_array_equal(data.qpos, before)


def test_so101_top_down_pose_with_orientation(so101):
    model, data = so101
    # site x (approach) pointing down, site z (jaw closing) along world y
    rot = np.column_stack([[0, 0, -1.0], [-1.0, 0, 0], [0, 1.0, 0]])
    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, rot.ravel())
    target = np.array([0.21, -0.01, 0.07])
    result = solve_ik(model, data, "gripperframe", target, SO101_ARM_JOINTS, np.zeros(5), quat)
    assert result.converged
    pos, got = _site_pose(model, data, "gripperframe", SO101_ARM_JOINTS, result.q)
    assert np.linalg.norm(pos - target) < POS_TOL
    assert _quat_angle(got, quat) < 2 * ROT_TOL


def test_panda_seven_joints_any_site(panda):
    model, data = panda
    home = np.array([data.qpos[model.joint(n).qposadr[0]] for n in PANDA_ARM_JOINTS])
    mujoco.mj_kinematics(model, data)
    site = model.site(0).name
    start = data.site_xpos[0].copy()
    target = start + np.array([0.05, -0.08, -0.10])
    result = solve_ik(model, data, site, target, PANDA_ARM_JOINTS, home)
    assert result.converged and result.error < POS_TOL
    pos, _ = _site_pose(model, data, site, PANDA_ARM_JOINTS, result.q)
    assert np.linalg.norm(pos - target) < POS_TOL


def test_unreachable_target_is_reported_not_raised_and_ranges_hold():
    model = mujoco.MjModel.from_xml_string(PLANAR)
    data = mujoco.MjData(model)
    result = solve_ik(model, data, "tip", [0.5, 0.0, 0.0], ["a", "b"], [0.3, 0.3], max_iters=50)
    assert not result.converged
    assert result.iterations == 50
    assert result.error == pytest.approx(0.3, abs=1e-3)  # best pose: fully stretched, 0.2 m long
    # a target only reachable with a > 1 rad: the answer stays inside the range
    result = solve_ik(model, data, "tip", [-0.05, 0.15, 0.0], ["a", "b"], [0.0, 0.5])
    assert -1.0 <= result.q[0] <= 1.0 and -2.0 <= result.q[1] <= 2.0


def test_bad_inputs_name_the_item_and_valid_choices():
    model = mujoco.MjModel.from_xml_string(PLANAR)
    data = mujoco.MjData(model)
    with pytest.raises(InvalidInput, match="valid sites: \\['tip'\\]"):
        solve_ik(model, data, "nope", [0.1, 0, 0], ["a", "b"], [0, 0])
    with pytest.raises(InvalidInput, match="valid joints"):
        solve_ik(model, data, "tip", [0.1, 0, 0], ["a", "c"], [0, 0])
    with pytest.raises(InvalidInput, match="target_pos"):
        solve_ik(model, data, "tip", [np.nan, 0, 0], ["a", "b"], [0, 0])
    with pytest.raises(InvalidInput, match="q_init"):
        solve_ik(model, data, "tip", [0.1, 0, 0], ["a", "b"], [0])
