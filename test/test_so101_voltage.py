"""The SO-101 driver and the servos' supply voltage, on the emulated bench.

A DC motor's stall torque is proportional to its supply: Present_Load and Torque_Limit are
fractions of the stall torque *at the present supply*. The emulator scales it
(``supply_voltage``, and the servo variant ``rated_voltage`` / ``stall_torque``); the driver
must too (``stall_torque`` × Present_Voltage / ``rated_voltage``), check Present_Voltage at
configure and watch it.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from action_msgs.msg import GoalStatus
from diagnostic_msgs.msg import DiagnosticStatus
from support.emulated_so101 import Bench
from support.optional import require

from physai_ros.robots.so101.bus import VOLTAGE_BAND

pytestmark = pytest.mark.dds
require("lerobot.motors")

TOLERANCE = 0.05  # effort vs the true actuator torque, relative (the ratio error is 0.2)
LOADED = (1, 2)  # shoulder_lift, elbow_flex: gravity holds them loaded at the home pose
SEVEN_VOLT = {"rated_voltage": 7.4, "stall_torque": 1.91, "supply_voltage": 7.4}
SAGGING = 10.0  # [V] on 12 V servos: inside the band (VOLTAGE_BAND), the scale 10/12
SAG = round(12.0 * (1.0 - VOLTAGE_BAND) - 0.6, 1)  # [V] 9.0: below the band


def effort_vs_truth(bench: Bench, seconds: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Mean |effort| on joint_states and mean |true torque| (the witness), loaded joints."""
    t0, efforts = time.time(), []
    while time.time() < t0 + seconds:
        with bench.lock:
            efforts.append(np.array(bench.joints.effort)[list(LOADED)])
        time.sleep(0.05)
    truth = np.array([np.array(r["torques"])[list(LOADED)] for r in bench.truth_since(t0)])
    return np.abs(np.mean(efforts, axis=0)), np.abs(truth.mean(axis=0))


def test_a_sagging_supply_keeps_effort_in_newton_metres_and_a_deep_sag_warns(tmp_path, ros_domain):
    """10 V on a 12 V servo: the load register is a fraction of 10/12 of the rated stall
    torque; the driver's effort must still be the true torque. Then 9 V (beyond the band):
    a WARN on /diagnostics with the reading."""
    assert abs(SAGGING / 12.0 - 1.0) < VOLTAGE_BAND < abs(SAG / 12.0 - 1.0)
    bench = Bench(tmp_path, ros_domain, emulator={"supply_voltage": SAGGING})
    try:
        assert bench.get_state.wait_for_service(timeout_sec=90.0), bench.log()
        bench.wait_active()
        result = bench.arm_result(bench.send_arm(np.zeros(5), 2.5))
        assert result.status == GoalStatus.STATUS_SUCCEEDED, result.result.error_string
        time.sleep(0.5)
        effort, truth = effort_vs_truth(bench)
        print("10 V: effort", effort.round(4).tolist(), "truth", truth.round(4).tolist())
        assert np.all(truth > 0.2), truth  # loaded enough to judge
        ratio = effort / truth
        assert np.all(np.abs(ratio - 1.0) < TOLERANCE), ratio
        bench.set_emulator("supply_voltage", SAG)

        def sag_warned() -> bool:
            warnings = bench.diagnostics(DiagnosticStatus.WARN)
            return any(f"{SAG:.1f} V" in s.message for s in warnings)

        assert bench.wait(sag_warned, 10.0), bench.diag
        time.sleep(0.5)
        effort, truth = effort_vs_truth(bench)
        print("9 V: effort", effort.round(4).tolist(), "truth", truth.round(4).tolist())
        assert np.all(np.abs(effort / truth - 1.0) < TOLERANCE), effort / truth
    finally:
        bench.close()


def test_a_7v4_servo_is_refused_at_12v_settings(tmp_path, ros_domain):
    """A 7.4 V STS3215 on a driver set for the 12 V one: every N·m would be 1.6 times off;
    configure is refused, naming the reading and the parameter to set."""
    bench = Bench(tmp_path, ros_domain, emulator=SEVEN_VOLT, driver={"reconnect_period": 0.3})
    try:
        assert bench.get_state.wait_for_service(timeout_sec=90.0), bench.log()
        refused = bench.wait(lambda: "configure failed" in bench.log(), 30.0)
        state = bench.state()
        assert refused and state == "unconfigured", (state, bench.log()[-2000:])
        log = bench.log()
        assert "7.4 V" in log and "rated_voltage" in log, log[-2000:]
    finally:
        bench.close()


def test_a_7v4_servo_configured_as_one_is_accepted(tmp_path, ros_domain):
    driver = {"rated_voltage": 7.4, "stall_torque": 1.91}
    bench = Bench(tmp_path, ros_domain, emulator=SEVEN_VOLT, driver=driver)
    try:
        assert bench.get_state.wait_for_service(timeout_sec=90.0), bench.log()
        bench.wait_active()
        result = bench.arm_result(bench.send_arm(np.zeros(5), 2.5))
        assert result.status == GoalStatus.STATUS_SUCCEEDED, result.result.error_string
        time.sleep(0.5)
        effort, truth = effort_vs_truth(bench)
        print("7.4 V servo: effort", effort.round(4).tolist(), "truth", truth.round(4).tolist())
        assert np.all(np.abs(effort / truth - 1.0) < TOLERANCE), effort / truth
    finally:
        bench.close()
