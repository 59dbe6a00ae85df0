"""What the SO-101 driver puts on /diagnostics for a servo's error flags (pure: no ROS, no bus)."""

from __future__ import annotations

import numpy as np

from physai_ros.robots.so101.bus import Health, JointReading
from physai_ros.robots.so101.jaw_estimate import JawEstimate
from physai_ros.robots.so101.loop import CLEAR_PROTECTION, Snapshot, reports, servo_error


def snapshot(status: list[int], mode: str = "inactive", fault: str = "") -> Snapshot:
    six = np.zeros(6)
    health = Health(six + 30.0, six + 12.0, six, np.array(status))
    reading = JointReading(six, six, six)
    return Snapshot(0.0, reading, JawEstimate(False, 0.0, 0.0), health, mode, fault, 2.94)


def test_a_latched_protection_is_named_with_its_status_byte_and_what_to_do():
    """The overloaded servo's own line says which protection, the raw status byte and the way
    out -- also while the driver line carries a fault of its own; the other servos keep the
    driver's fault; a VOLTAGE flag alone (no protection latched) is a warning."""
    status = [0, 0, 0x20, 0, 0x01, 0]
    lines = reports(snapshot(status, fault="silent servos: x"), rearm_needed=True, stopped=False)
    driver, servos = lines[0], lines[1:]
    assert driver.level == "error" and driver.message.startswith("silent servos: x")
    elbow = servos[2]
    assert elbow.name == "so101/servo 3 (elbow_flex)" and elbow.level == "error"
    assert (
        elbow.message == f"servo 3 (elbow_flex) reports OVERLOAD (status 0x20): {CLEAR_PROTECTION}"
    )
    assert elbow.values["error_flags"] == 0x20
    assert [s.message for s in servos if s is not elbow] == ["silent servos: x"] * 5
    quiet = reports(snapshot(status), rearm_needed=False, stopped=False)[1:]
    assert quiet[4].level == "warn" and quiet[4].message == servo_error(4, 0x01)
    assert servo_error(4, 0x01) == "servo 5 (wrist_roll) reports VOLTAGE (status 0x01)"
    assert [s.level for s in quiet] == ["ok", "ok", "error", "ok", "warn", "ok"]


def test_a_failed_encoder_is_an_error_naming_the_sensor_and_voltage_stays_a_warning():
    """The magnetic-encoder bit (0x02) is a fault of its own: the servo's line is an error
    naming ENCODER and saying the sensor failed (re-arming would command it blind), not the
    torque-cycle way out of a protection; VOLTAGE alone stays a warning."""
    from physai_ros.robots.so101.loop import ENCODER_FAILED

    lines = reports(snapshot([0, 0x02, 0, 0, 0x01, 0]), rearm_needed=False, stopped=False)[1:]
    assert [s.level for s in lines] == ["ok", "error", "ok", "ok", "warn", "ok"]
    assert lines[1].message == (
        f"servo 2 (shoulder_lift) reports ENCODER (status 0x02): {ENCODER_FAILED}"
    )


def test_the_driver_line_counts_the_goals_the_speed_bound_held_back():
    snap = snapshot([0] * 6, mode="active")._replace(bounded_goals=7)
    assert reports(snap, rearm_needed=False, stopped=False)[0].values == {"bounded_goals": 7}


def test_a_supply_outside_its_band_is_a_warning_on_every_line_with_the_reading():
    """A sagging supply (the driver's ``supply_problem``) warns on the driver line and each
    servo's line; a servo's own fault and a driver fault keep their error."""
    from physai_ros.robots.so101.bus import VOLTAGE_BAND, BusSettings, So101Bus

    bus = So101Bus.__new__(So101Bus)  # the band check only: no port, no LeRobot
    bus.s = BusSettings("", None, np.zeros(6), np.ones(6))
    low, high = 12.0 * (1.0 - VOLTAGE_BAND), 12.0 * (1.0 + VOLTAGE_BAND)  # 9.6, 14.4 V
    note = bus.supply_problem(np.array([low - 0.6] * 6))
    assert f"shoulder_pan {low - 0.6:.1f} V" in note and "rated_voltage 12 V" in note
    assert f"outside {low:.1f} to {high:.1f} V" in note
    assert bus.supply_problem(np.array([low + 0.05, high - 0.05, 12.0, 12.0, 12.0, 12.0])) == ""
    assert bus.supply_problem(np.array([12.0] * 5 + [high + 0.1]))  # above the band too
    seven = BusSettings("", None, np.zeros(6), np.ones(6), rated_voltage=7.4, stall_torque=1.91)
    bus.s = seven
    assert bus.supply_problem(np.array([12.0] * 6))  # a 12 V supply on 7.4 V servos
    bus.supply = np.full(6, 7.4)
    assert np.allclose(bus.stall(), 1.91)
    snap = snapshot([0, 0, 0x20, 0, 0, 0], mode="active")._replace(supply=note)
    lines = reports(snap, rearm_needed=False, stopped=False)
    assert lines[0].level == "warn" and lines[0].message == note
    assert [s.level for s in lines[1:]] == ["warn", "warn", "error", "warn", "warn", "warn"]


def test_the_supply_band_the_users_read_is_the_one_the_driver_checks():
    """The band is one constant (``VOLTAGE_BAND``); the parameter table, the shipped config's
    comment and docs/real_so101.md state it in words and must say what the code does."""
    from support.paths import REPO_ROOT

    from physai_ros.parameters import load_schema
    from physai_ros.robots.so101.bus import VOLTAGE_BAND

    percent = f"{round(VOLTAGE_BAND * 100)} %"
    assert percent in load_schema("so101_driver")["rated_voltage"].description
    assert f"within {percent} of it" in (REPO_ROOT / "config/so101_driver.yaml").read_text()
    doc = " ".join((REPO_ROOT / "docs/real_so101.md").read_text().split())  # reflow-proof
    low, high = 12.0 * (1.0 - VOLTAGE_BAND), 12.0 * (1.0 + VOLTAGE_BAND)
    assert f"within {percent} of `rated_voltage` ({low:.1f} to {high:.1f} V" in doc
    assert f"leaves the {percent} band" in doc
