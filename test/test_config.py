"""Where a number must appear in two config files, the two agree."""

from __future__ import annotations

import os

import pytest
import yaml
from support.paths import REPO_ROOT

CONFIG = REPO_ROOT / "config"


def load(name: str) -> dict:
    return yaml.safe_load((CONFIG / name).read_text())


def test_sim_jaw_ramp_is_the_pick_close_ramp():
    """The ROS pick closes through GripperCommand, the in-process pick ramps the jaw itself;
    both must ramp alike for their outcomes to agree."""
    ramp = load("sim_robots.yaml")["robots"]["so101"]["gripper_ramp_time"]
    assert ramp == load("pick.yaml")["/**"]["ros__parameters"]["durations"]["close_ramp"]


def test_sim_stall_detection_is_the_pick_stillness_test():
    grip = load("sim_robots.yaml")["robots"]["so101"]["gripper_controller"]
    pick = load("pick.yaml")["/**"]["ros__parameters"]
    assert grip["stall_velocity_threshold"] == pick["still_speed"]
    assert grip["stall_timeout"] == pick["still_time"]


def test_real_and_simulated_so101_judge_a_stall_alike():
    """The driver's gripper controller and the simulated one stop a close the same way."""
    sim = load("sim_robots.yaml")["robots"]["so101"]["gripper_controller"]
    real = load("so101_driver.yaml")["/**"]["ros__parameters"]["gripper_controller"]
    for key in ("allow_stalling", "stall_velocity_threshold", "stall_timeout"):
        assert sim[key] == real[key], key


def test_pick_torque_cap_is_the_servo_stall_torque():
    limits = load("limits_so101.yaml")
    stall = limits["torque"][limits["joints"].index("gripper")]
    assert load("pick.yaml")["/**"]["ros__parameters"]["jaw_torque_cap"] == stall


def test_pick_jaw_lever_is_the_driver_moment_arm():
    """The force close's capacity check (cap / lever) and the real driver's force estimate
    (torque / moment arm) use the same lever, the driver's calibration."""
    lever = load("pick.yaml")["/**"]["ros__parameters"]["so101"]["jaw_lever"]
    jaw = load("so101_driver.yaml")["/**"]["ros__parameters"]["jaw"]
    assert lever == jaw["moment_arm"]


def test_emulator_powers_up_in_the_rest_pose_the_physics_rests_in():
    """The node's default initial pose (its params file) is the pose the bare emulator uses."""
    from physai_ros.robots.so101.emulator.physics import REST_POSE

    emulator = load("so101_emulator.yaml")["/**"]["ros__parameters"]
    assert emulator["initial_pose"] == list(REST_POSE)


def test_panda_gripper_speed_is_the_franka_hand_s():
    """GripperCommand goals (per finger) and franka_gripper commands (of the width) move the
    simulated Panda's fingers at the same top speed."""
    panda = load("sim_robots.yaml")["robots"]["panda"]
    assert 2.0 * panda["gripper_controller"]["max_speed"] == panda["franka_hand"]["max_speed"]


@pytest.mark.ros  # rclpy reads the DDS profile
def test_dds_profile_repairs_within_the_pick_command_lead(monkeypatch):
    """config/fastdds.xml is the default writer profile of every node, its heartbeat (the
    repair delay of a lost reliable sample) well inside the pick's command lead; a profile the
    user chose wins."""
    import xml.etree.ElementTree as ET

    from physai_ros.qos import DDS_PROFILE, use_dds_profile

    ns = {"d": "http://www.eprosima.com"}
    writer = ET.parse(CONFIG / DDS_PROFILE).getroot().find(".//d:data_writer", ns)
    assert writer is not None and writer.get("is_default_profile") == "true"
    period = writer.find("d:times/d:heartbeat_period", ns)
    heartbeat = int(period.find("d:sec", ns).text) + int(period.find("d:nanosec", ns).text) * 1e-9
    lead = load("pick.yaml")["/**"]["ros__parameters"]["ros"]["command_lead"]
    assert heartbeat <= lead / 4, (heartbeat, lead)  # 3 repairs in a row still arrive in time

    for var in ("FASTDDS_DEFAULT_PROFILES_FILE", "FASTRTPS_DEFAULT_PROFILES_FILE"):
        monkeypatch.delenv(var, raising=False)
    use_dds_profile()
    assert os.environ["FASTDDS_DEFAULT_PROFILES_FILE"].endswith(f"config/{DDS_PROFILE}")
    monkeypatch.setenv("FASTDDS_DEFAULT_PROFILES_FILE", "/mine.xml")
    use_dds_profile()
    assert os.environ["FASTDDS_DEFAULT_PROFILES_FILE"] == "/mine.xml"
    monkeypatch.delenv("FASTDDS_DEFAULT_PROFILES_FILE")
    monkeypatch.setenv("FASTRTPS_DEFAULT_PROFILES_FILE", "/old.xml")
    use_dds_profile()
    assert "FASTDDS_DEFAULT_PROFILES_FILE" not in os.environ
