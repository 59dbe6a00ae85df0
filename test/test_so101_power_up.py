"""The real-arm graph's SO-101 driver at power-up, each condition on a bench of its own (the
emulator in place of the serial port, the driver as ``pick.launch.py sim:=false`` starts it):
an arm resting outside its limits, a calibration that differs from the servos, what
Ctrl-C does to torque, and a driver killed mid-move and started again. The numbers held to
are test_so101_driver.py's."""

from __future__ import annotations

import os
import re
import signal
import time

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticStatus
from support.emulated_so101 import ARM, Bench, largest_fall, largest_motion
from support.optional import require

from physai_ros.core.motion.limits import load_limits
from physai_ros.launching.bringup import start as start_graph

pytestmark = pytest.mark.dds
require("lerobot.motors")

STILL = 0.05  # [rad] "moves nothing": no joint of the witness moves more than this
FALL = 0.01  # [m] "no fall": the gripper site drops less than this


def test_arm_resting_outside_its_limits_is_not_armed(tmp_path, ros_domain):
    """Joint stops 0.3 rad beyond the calibrated ranges and the arm resting beyond them
    (shoulder_lift near -1.86 rad, its limit -1.745): activation is refused naming each joint
    outside and its value; torque stays off; nothing moves."""
    from physai_ros.core.motion.limits import load_limits

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


def test_driver_killed_mid_goal_the_arm_holds_and_a_restarted_driver_takes_over_in_place(
    tmp_path, ros_domain
):
    """SIGKILL of the driver halfway through a 2 s move (no exit handler runs): the servos keep
    torque and hold their last goal register — the arm stops within a few setpoints and does
    not fall. The driver started again (as a launch's respawn or a user would) arms where the
    arm lies: no joint jumps on take-over."""
    bench = Bench(tmp_path, ros_domain)
    try:
        bench.wait_active()
        start = bench.arm_position()
        # the folded arm rests on its stops, at times a hair beyond a joint's range: the goal
        # keeps the others where they are, inside the range (a goal beyond it is refused). The
        # driver's range is the calibration's, up to a tick (1.5 mrad) inside limits_so101.yaml's:
        # the goal keeps 10 mrad inside
        limits = load_limits("so101")
        names = list(limits.joint_names)
        index = [names.index(j) for j in ARM]
        lo, hi = limits.position_min[index] + 0.01, limits.position_max[index] - 0.01
        goal = np.clip(start, lo, hi) + np.array([0.4, 0.0, 0.0, 0.0, 0.0])
        handle = bench.send_arm(goal, 2.0)
        assert handle.accepted, bench.log()
        time.sleep(1.0)
        os.killpg(bench.procs[1].pid, signal.SIGKILL)
        bench.procs[1].wait(10)
        killed = time.time()
        time.sleep(1.0)
        truth = bench.truth()
        assert all(truth["torque_enabled"]), truth
        assert largest_fall(bench.truth_since(killed)) < FALL
        # stopped where the last setpoint was: it is ahead of the arm by at most a few cycles
        assert largest_motion(bench.truth_since(killed)) < STILL
        moved = np.abs(np.array(truth["positions"][:5]) - start).max()
        assert 0.05 < moved < 0.35, f"killed mid-move: moved {moved:.3f} rad of 0.4"

        restarted = time.time()
        bench.procs[1] = start_graph([bench.specs[0]], bench.tmp)[0]
        # its log, not a lifecycle call: the killed driver's services linger in discovery
        # until their lease ends, and a request to them is never answered
        assert bench.wait(lambda: "armed at" in bench.log(), 60.0), bench.log()
        time.sleep(1.0)
        assert largest_motion(bench.truth_since(restarted)) < STILL
        assert largest_fall(bench.truth_since(restarted)) < FALL
        assert bench.truth()["eprom_writes"] == 0
    finally:
        bench.close()


# Loaded by the driver's process only (its PYTHONPATH) as it starts: once the loop's module is
# imported (not at start-up: the site module is not ready for scipy), ServoLoop.take_ends meets
# an exception nobody expected in the bus thread (outside the loop's own cycle) as soon as the
# file PHYSAI_TEST_BOOM names exists.
BOOM = """
import importlib.abc, importlib.util, os, sys, threading

TRIGGER, MODULE = os.environ.get("PHYSAI_TEST_BOOM", ""), "physai_ros.robots.so101.loop"


class Boom(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != MODULE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        exec_module = spec.loader.exec_module

        def patched(module):
            exec_module(module)
            take_ends = module.ServoLoop.take_ends

            def boom(loop):
                if threading.current_thread().name == "so101-bus" and os.path.exists(TRIGGER):
                    raise ZeroDivisionError("injected by the test")
                return take_ends(loop)

            module.ServoLoop.take_ends = boom

        spec.loader.exec_module = patched
        return spec


if TRIGGER:
    sys.meta_path.insert(0, Boom())
"""


def test_an_unexpected_exception_kills_no_bus_thread_silently(tmp_path, ros_domain):
    """An exception nobody expected in the bus thread, mid-move: the goal is aborted naming
    it, /diagnostics says ERROR with its name (not the last good snapshot), the arm holds
    where it is (torque on, no fall, nothing moves after) and activation is refused: the
    driver must be restarted."""
    hook, trigger = tmp_path / "hook", tmp_path / "boom"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(BOOM)
    env = {
        "PYTHONPATH": os.pathsep.join([str(hook), os.environ.get("PYTHONPATH", "")]),
        "PHYSAI_TEST_BOOM": str(trigger),
    }
    bench = Bench(tmp_path / "bench", ros_domain, driver_env=env)
    try:
        bench.wait_active()
        limits = load_limits("so101")
        index = [list(limits.joint_names).index(j) for j in ARM]
        lo, hi = limits.position_min[index] + 0.01, limits.position_max[index] - 0.01
        goal = np.clip(bench.arm_position(), lo, hi) + np.array([0.0, 0.5, -1.0, 0.0, 0.0])
        handle = bench.send_arm(goal, 2.5)
        assert handle.accepted, bench.log()
        time.sleep(1.5)
        trigger.touch()
        result = bench.arm_result(handle, 10.0)
        assert "ZeroDivisionError" in result.result.error_string, result.result.error_string

        def named() -> bool:
            errors = bench.diagnostics(DiagnosticStatus.ERROR)
            return any("ZeroDivisionError" in s.message for s in errors)

        assert bench.wait(named, 5.0), bench.diag
        time.sleep(0.5)
        held = time.time()
        time.sleep(1.0)
        records = bench.truth_since(held)
        assert all(all(r["torque_enabled"]) for r in records), records[-1]
        assert largest_fall(records) < FALL and largest_motion(records) < STILL
        assert bench.wait(lambda: bench.state() == "inactive", 5.0)
        assert not bench.transition("activate")
        assert "restart the driver" in bench.log(), bench.log()[-3000:]
    finally:
        bench.close()
