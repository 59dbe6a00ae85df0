"""The SO-101 driver's parameters to its bus settings (pure: no ROS, no bus)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from physai_ros.core.motion.limits import load_limits
from physai_ros.parameters import load_schema
from physai_ros.robots.so101.config import arm_limits, bus_settings, loop_settings
from physai_ros.robots.so101.emulator.servo import STEP_RAD


@pytest.fixture
def params() -> dict:
    return load_schema("so101_driver").defaults()


def test_the_shipped_limits_give_the_acceleration_register_253(params):
    assert bus_settings(params, arm_limits(params)).acceleration == 253


def test_a_limit_set_without_acceleration_arms_with_lerobots_254_never_0(params):
    """Acceleration 0 on an STS3215 is no profile at all (the set-point jumps to the goal: a
    full-speed step); a limit set that leaves acceleration unlimited gets LeRobot's 254, the
    servo's fastest ramp."""
    limits = arm_limits(params)
    free = dataclasses.replace(limits, acceleration=np.full(len(limits.joint_names), np.inf))
    assert bus_settings(params, free).acceleration == 254


@pytest.mark.parametrize(
    ("name", "velocity", "steps", "acceleration"),
    [("sts3215", 4.71, 3070, 253), ("first_use", 2.36, 1538, 126)],
)
def test_the_limit_set_tells_the_servos_and_the_loop_its_speed(
    params, name, velocity, steps, acceleration
):
    """The set ``limits_set`` names becomes each servo's Goal_Velocity [step/s] and
    Acceleration (their own profile is no faster) and the loop's bound on every goal sent;
    first_use is about half the servo's maxima."""
    params = params | {"limits_set": name}
    limits = load_limits("so101", name)
    bus = bus_settings(params, limits)
    assert bus.velocity == (steps,) * 6
    assert bus.acceleration == acceleration
    assert bus_settings(params, arm_limits(params)).velocity == (steps,) * 6
    assert loop_settings(params).max_velocity == (velocity,) * 6
    assert steps * STEP_RAD <= velocity < (steps + 1) * STEP_RAD


def test_an_unlimited_set_leaves_goal_velocity_0_the_servos_full_speed(params):
    limits = load_limits("so101")
    free = dataclasses.replace(limits, velocity=np.full(6, np.inf))
    assert bus_settings(params, free).velocity == (0,) * 6
    assert loop_settings(params, free).max_velocity == (np.inf,) * 6


def test_the_driver_default_is_the_servos_own_set_and_first_use_is_slower(params):
    assert params["limits_set"] == "sts3215"
    full, first = load_limits("so101", "sts3215"), load_limits("so101", "first_use")
    assert np.all(first.velocity <= 0.51 * full.velocity)
    assert np.all(first.acceleration <= 0.51 * full.acceleration)
