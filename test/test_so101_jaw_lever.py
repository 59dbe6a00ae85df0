"""The SO-101 jaw's load -> force calibration (config/so101_driver.yaml ``jaw``) is what the
model gives at the pick's grasp: the lever is the moving jaw's contact moment arm about the
gripper axis, the friction the stall leaves lies within the gear's frictionloss, and the
squeeze relief inverts the estimate."""

from __future__ import annotations

import math

import pytest

from physai_ros.core.pick.grip import G
from physai_ros.errors import InvalidInput
from physai_ros.robots.so101.emulator.physics import So101Physics
from physai_ros.robots.so101.jaw_estimate import JawModel, jaw_normal, least_squeeze_torque
from physai_ros.robots.so101.jaw_lever import calibrate, driver_jaw_config

JAW = driver_jaw_config()
MODEL = JawModel(jaw_moment_arm_m=JAW["moment_arm"], friction_torque_nm=JAW["friction_torque"])


def test_configured_lever_and_friction_are_the_models_at_the_pick_grasp():
    physics = So101Physics()
    frictionloss = float(physics.model.dof_frictionloss[physics.dadr[5]])  # gripper gear
    assert math.isclose(2.0 * MODEL.friction_torque_nm, frictionloss, rel_tol=1e-9)
    for s in calibrate([0.3, 0.66], MODEL):
        assert abs(s.lever - MODEL.jaw_moment_arm_m) < 1.5e-3, s  # [m], 2 %
        assert 0.0 <= s.friction <= frictionloss, s  # stalled: friction opposed the closing
        assert math.isclose(s.fixed_n, s.moving_n, rel_tol=0.02), s  # one squeeze, both jaws
        truth = 0.5 * (s.fixed_n + s.moving_n)
        # the estimate's bound: friction's half-range over the lever, plus the lever's 2 %
        bound = 0.5 * frictionloss / MODEL.jaw_moment_arm_m + 0.02 * truth
        assert abs(s.estimate - truth) < bound, (s, bound)


def test_least_squeeze_torque_gives_back_its_squeeze_through_the_estimate():
    mass, mu, accel, margin = 0.03, 0.5, 3.0, 2.0
    torque = least_squeeze_torque(
        mass, mu, accel, margin, MODEL.jaw_moment_arm_m, MODEL.friction_torque_nm
    )
    squeeze = 2.0 * jaw_normal(torque, MODEL)  # N1 + N2
    assert math.isclose(mu * squeeze, margin * mass * (G + accel), rel_tol=1e-12)


def test_bad_calibration_input_is_refused():
    with pytest.raises(InvalidInput, match="friction_torque_nm"):
        JawModel(friction_torque_nm=-0.01)
    with pytest.raises(InvalidInput, match="caps"):
        calibrate([0.0], MODEL)
