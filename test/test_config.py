"""Where a number must appear in two config files, the two agree."""

from __future__ import annotations

import yaml
from conftest import REPO_ROOT

CONFIG = REPO_ROOT / "config"


def load(name: str) -> dict:
    return yaml.safe_load((CONFIG / name).read_text())


def test_sim_jaw_ramp_is_the_pick_close_ramp():
    """The ROS pick closes through GripperCommand, the in-process pick ramps the jaw itself;
    both must ramp alike for their outcomes to agree."""
    ramp = load("sim_bridge.yaml")["robots"]["so101"]["gripper"]["ramp_time"]
    assert ramp == load("pick.yaml")["durations"]["close_ramp"]


def test_sim_stall_detection_is_the_pick_stillness_test():
    grip = load("sim_bridge.yaml")["robots"]["so101"]["gripper"]
    pick = load("pick.yaml")
    assert grip["stall_velocity"] == pick["still_speed"]
    assert grip["stall_timeout"] == pick["still_time"]


def test_pick_torque_cap_is_the_servo_stall_torque():
    limits = load("limits_so101.yaml")
    stall = limits["torque"][limits["joints"].index("gripper")]
    assert load("pick.yaml")["ros"]["jaw_torque_cap"] == stall
