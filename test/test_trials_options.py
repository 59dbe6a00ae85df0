"""``physai trials``: the emulator's settings a run asks for are checked before its first trial,
and the bus loop's numbers (rate, largest goal step) come from the servos' side of the witness.
No DDS: the parsing and the arithmetic, on the emulator's declared parameters and on witness
records written as the emulator node writes them."""

from __future__ import annotations

import re

import pytest

from physai_ros.cli import main
from physai_ros.errors import InvalidInput
from physai_ros.experiments.real_trials import UNKIND, bus_loop, emulator_params, summary


def test_unkind_is_the_judged_configuration_and_a_param_can_change_it():
    assert emulator_params(True, []) == {
        "usb_latency_ms": 2.0,
        "load_model": "duty",
        "dead_zone": 5,
    }
    assert UNKIND["usb_latency_ms"] == 2.0
    got = emulator_params(True, ["usb_latency_ms=4", "load_sign=-1", "clamp_torque_limit=false"])
    assert got["usb_latency_ms"] == 4.0 and isinstance(got["usb_latency_ms"], float)
    assert got["load_sign"] == -1 and got["clamp_torque_limit"] is False
    assert emulator_params(False, ["lose_reads=Torque_Enable 1 2"]) == {
        "lose_reads": "Torque_Enable 1 2"
    }


@pytest.mark.parametrize(
    ("item", "says"),
    [
        ("usb_latncy_ms=2", "no parameter 'usb_latncy_ms'"),
        ("usb_latency_ms=fast", "usb_latency_ms: 'fast' is not of type double"),
        ("usb_latency_ms=500", "outside [0.0, 100.0]"),
        ("dead_zone=2.5", "dead_zone: 2.5 is not of type int"),
        ("usb_latency_ms", "is not NAME=VALUE"),
        ("cube_pos=[0.2, 0.0]", "set by each trial itself"),
    ],
)
def test_an_unknown_name_or_a_bad_value_is_refused_naming_it(item, says):
    with pytest.raises(InvalidInput, match=re.escape(says)):
        emulator_params(False, [item])


def test_the_command_stops_before_any_trial_on_a_bad_param(tmp_path, capsys):
    out = tmp_path / "trials"
    code = main(["trials", "--emulated", "--emulator-param", "nope=1", "--output", str(out)])
    assert code == 2
    assert "no parameter 'nope'" in capsys.readouterr().err
    assert not (out / "trials.csv").exists()
    assert main(["trials", "--unkind", "--output", str(out)]) == 2  # no emulator to set


def records(rates: list[float], steps: list[float]) -> list[dict]:
    """Witness records at 50 Hz whose state reads grow at ``rates`` [Hz], one rate a second."""
    out, reads, t = [], 0.0, 100.0
    for rate in rates:
        for _ in range(50):
            out.append(
                {
                    "stamp": t,
                    "state_reads": round(reads),
                    "max_goal_step": steps,
                    "joints": ["a", "b", "c", "d", "e", "f"],
                }
            )
            t, reads = t + 0.02, reads + rate * 0.02
    return out


def test_the_bus_loop_rate_is_the_servos_state_reads_per_second():
    loop = bus_loop(records([100.0, 100.0, 40.0, 100.0], [0.01, 0.2, 0.03, 0, 0, 0.05]))
    assert loop["loop_hz"] == pytest.approx(85.0, abs=2.0)  # 3.98 s of 100, 100, 40, 100
    assert loop["loop_hz_min"] == pytest.approx(40.0, abs=2.0)  # the starved second
    assert loop["max_step_rad"] == 0.2 and loop["max_step_joint"] == "b"
    assert loop["max_arm_step_rad"] == 0.2
    gripper = bus_loop(records([100.0, 100.0], [0.01, 0.02, 0.03, 0, 0, 0.15]))
    assert gripper["max_step_joint"] == "f" and gripper["max_arm_step_rad"] == 0.03
    assert bus_loop([]) == {}  # no witness (the real arm): nothing claimed


def test_the_summary_table_shows_the_loop_rate_and_the_largest_step():
    rows = [
        {"cube_x": 0.22, "cube_y": 0.0, "outcome": "held", "agrees": True, "loop_hz": 110.0,
         "loop_hz_min": 90.0, "max_step_rad": 0.05, "max_arm_step_rad": 0.05},
        {"cube_x": "0.22", "cube_y": "0.0", "outcome": "held", "agrees": "True",
         "loop_hz": "130.0", "loop_hz_min": "None", "max_step_rad": "0.08",
         "max_arm_step_rad": "0.02"},
    ]  # fmt: skip
    lines = summary(rows, [(0.22, 0.0)])
    assert "bus loop [Hz]" in lines[0] and "largest goal step [rad/cycle]" in lines[0]
    assert lines[2] == "| (0.22, 0.0) | 2/2 | [0.34, 1.00] | 2/2 | 120 (90) | 0.080 (0.050) |"
    assert lines[-1] == "held_rate = 1.000"
