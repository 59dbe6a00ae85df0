"""The real-arm graph's SO-101 driver at power-up, each condition on a bench of its own (the
emulator in place of the serial port, the driver as ``pick.launch.py sim:=false`` starts it):
an arm resting outside its limits, a calibration that differs from the servos, and what
Ctrl-C does to torque. The numbers held to are test_so101_driver.py's."""

from __future__ import annotations

import os
import re
import signal
import time

import numpy as np
import pytest
from so101_bench import Bench, largest_motion

pytestmark = pytest.mark.dds
pytest.importorskip("lerobot.motors")

STILL = 0.05  # [rad] "moves nothing": no joint of the witness moves more than this


def test_arm_resting_outside_its_limits_is_not_armed(tmp_path, ros_domain):
    """Joint stops 0.3 rad beyond the calibrated ranges and the arm resting beyond them
    (shoulder_lift near -1.86 rad, its limit -1.745): activation is refused naming each joint
    outside and its value; torque stays off; nothing moves."""
    from physai_ros.core.limits import load_limits

    bench = Bench(
        tmp_path,
        ros_domain,
        emulator={"initial_pose": [0.0, -1.70, 1.85, 0.8, 0.0, 0.0], "mechanical_margin": 0.3},
    )
    try:
        assert bench.wait(lambda: "activation refused" in bench.log(), 60.0), bench.log()
        assert "outside the limits" in bench.log()
        limits, q = load_limits("so101"), np.array(bench.truth()["positions"])
        outside = (q < limits.position_min - 0.02) | (q > limits.position_max + 0.02)
        assert outside.any()
        for j in np.flatnonzero(outside):  # named with its value (to 0.01 rad)
            named = re.search(rf"{limits.joint_names[j]} = (-?[0-9.]+) rad", bench.log())
            assert named and abs(float(named.group(1)) - q[j]) < 0.01, limits.joint_names[j]
        assert bench.state() == "inactive"
        time.sleep(0.5)
        records = bench.truth_since(0.0)
        assert not any(any(r["torque_enabled"]) for r in records)
        assert largest_motion(records) < STILL and records[-1]["eprom_writes"] == 0
        assert bench.joints is not None  # joint states flow while inactive
    finally:
        bench.close()


def test_calibration_mismatch_refuses_and_writes_only_when_asked(tmp_path, ros_domain):
    emulator = {"homing_error": ["elbow_flex:60"]}
    bench = Bench(tmp_path / "a", ros_domain, emulator=emulator)
    try:
        assert bench.wait(lambda: "activation refused" in bench.log(), 60.0), bench.log()
        assert "elbow_flex Homing_Offset" in bench.log()
        time.sleep(0.5)
        assert bench.truth()["eprom_writes"] == 0
        assert not any(bench.truth()["torque_enabled"])
    finally:
        bench.close()
    bench = Bench(tmp_path / "b", ros_domain, emulator=emulator, driver={"write_calibration": True})
    try:
        bench.wait_active()
        assert bench.truth()["eprom_writes"] > 0  # asked for: written
        assert "calibration written" in bench.log()
    finally:
        bench.close()


def test_ctrl_c_holds_by_default_and_releases_when_asked(tmp_path, ros_domain):
    for policy, torque in (("hold", True), ("release", False)):
        bench = Bench(tmp_path / policy, ros_domain, driver={"on_exit": policy})
        try:
            bench.wait_active()
            os.killpg(bench.procs[1].pid, signal.SIGINT)  # the driver, as Ctrl-C
            bench.procs[1].wait(15)
            time.sleep(0.3)
            assert all(bench.truth()["torque_enabled"]) == torque
            assert f"on_exit={policy}" in bench.log()
        finally:
            bench.close()
