"""The SO-101 driver's parameters to its bus settings (pure: no ROS, no bus)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from physai_ros.parameters import load_schema
from physai_ros.robots.so101.config import arm_limits, bus_settings


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
