"""The leader SO-101 read through LeRobot's own leader class (``LeaderArm``), against the bus
emulator in leader mode (torque off, moved by a scripted hand), without ROS: whichever LeRobot
is installed (0.4 in make test's ROS environment, 0.6 in make test-py312), the read pose is the
hand's and nothing is written to the servos' EPROM."""

from __future__ import annotations

import time

import numpy as np
import pytest
from support.optional import require

from physai_ros.core.motion.limits import load_limits
from physai_ros.datasets.features import from_lerobot
from physai_ros.datasets.from_ros import jaw_range
from physai_ros.errors import InvalidInput
from physai_ros.robots.so101.emulator.bus import JOINTS, FeetechBusEmulator, write_calibration
from physai_ros.robots.so101.emulator.hand import HandMotion
from physai_ros.robots.so101.leader import LeaderArm

START = (0.1, -0.3, 0.4, 0.2, -0.1, 0.3)  # [rad] the leader's rest pose (JOINTS order)
HOLD = 2.0  # [s] the hand rests at START this long, then reaches
STEP = 2 * np.pi / 4096  # [rad] one encoder step


@pytest.fixture
def leader(tmp_path):
    """An emulated leader moved by a hand, and its LeRobot calibration file."""
    require("lerobot.teleoperators")
    limits = load_limits("so101")
    order = [limits.joint_names.index(joint) for joint in JOINTS]
    hand = HandMotion(
        np.random.default_rng(3),
        START,
        seconds=60.0,
        amplitude=0.3,
        lower=limits.position_min[order] + 0.05,
        upper=limits.position_max[order] - 0.05,
        hold=HOLD,
    )
    emulator = FeetechBusEmulator(initial=START, power_on_torque=False, hand=hand)
    emulator.start()
    calibration = tmp_path / "my_leader.json"
    write_calibration(calibration, emulator.calibration)
    try:
        yield emulator, calibration
    finally:
        emulator.stop()


@pytest.mark.realtime
def test_the_leader_reads_the_hands_pose_and_writes_nothing(leader):
    emulator, calibration = leader
    arm = LeaderArm(emulator.port, calibration)
    arm.open()
    jaw_lo_hi = jaw_range()
    try:
        at_rest = from_lerobot(arm.read(), jaw_lo_hi)
        # At rest the read is the pose to the encoder's resolution (plus the hand's tremor).
        assert np.allclose(at_rest[0], START[:5], atol=3 * STEP + 2e-3), at_rest
        assert abs(at_rest[1] - START[5]) < 3 * STEP + 2e-3, at_rest
        time.sleep(max(0.0, HOLD - emulator.witness().time) + 0.5)
        errors = []
        for _ in range(30):  # a second of reads at 30 Hz while the hand reaches
            before = emulator.witness().positions
            pose, jaw = from_lerobot(arm.read(), jaw_lo_hi)
            after = emulator.witness().positions
            truth = np.clip(
                np.append(pose, jaw), np.minimum(before, after), np.maximum(before, after)
            )
            errors.append(np.abs(np.append(pose, jaw) - truth).max())
            time.sleep(1 / 30)
        # What was read lies between the truth before and after the read (±2 steps and tremor).
        assert max(errors) < 3 * STEP + 2e-3, errors
        moved = np.abs(emulator.witness().positions - np.asarray(START)).max()
        assert moved > 0.05, "the hand never moved the leader: the test saw nothing"
    finally:
        arm.close()
    witness = emulator.witness()
    assert witness.eprom_writes == 0, "reading a leader must write nothing to its EPROM"
    assert not any(witness.torque_enabled), "the leader's torque stays off"


def test_a_missing_leader_calibration_names_lerobots_command(tmp_path):
    with pytest.raises(InvalidInput, match="lerobot-calibrate"):
        LeaderArm("/dev/null", tmp_path / "nobody.json").open()


@pytest.mark.realtime
def test_a_lost_reply_while_reading_the_calibration_is_read_again(leader):
    """A reply with a bad checksum among the calibration reads at open (every 30th: LeRobot's
    connect takes 24 replies, the calibration's read 18, so the 30th falls in the first read
    and the second gets through): the open reads again and succeeds, writing nothing."""
    emulator, calibration = leader
    emulator.faults.corrupt_every = 30
    arm = LeaderArm(emulator.port, calibration)
    arm.open()
    arm.close()
    assert emulator.stats.corrupted_replies >= 1, "no reply was lost: the test saw nothing"
    assert emulator.witness().eprom_writes == 0
