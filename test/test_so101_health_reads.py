"""The driver's health check believes no single reading it acts on.

The driver's loop (``ServoLoop``) runs against the bus emulator in this process, LeRobot's real
FeetechMotorsBus between them. Present_Voltage scales every N·m the driver reports or writes
(stall torque × supply / rated voltage) and decides the supply warning; like the status flags,
a reading that changed must be confirmed by a second, agreeing read before it is acted on: a
desynchronised bus hands a register another's byte, well formed, once.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from support.optional import require

from physai_ros.core.controllers.gac import GacParams, GripperActionController
from physai_ros.core.controllers.jtc import JointTrajectoryController, JtcParams
from physai_ros.robots.so101.bus import ARM, STALL_TORQUE, VOLTAGE_BAND, BusSettings, So101Bus
from physai_ros.robots.so101.emulator.bus import (
    JOINTS,
    FeetechBusEmulator,
    joint_offsets,
    write_calibration,
)
from physai_ros.robots.so101.loop import LoopSettings, ServoLoop

pytestmark = pytest.mark.realtime  # the emulator answers on a pty in wall-clock time

require("lerobot.motors")

PERIOD = 0.01  # [s] the driver's loop_rate of 100 Hz
RATED = 12.0  # [V] the emulator's and the driver's default servo variant


@pytest.fixture
def bench(tmp_path):
    emu = FeetechBusEmulator(initial=(0.0,) * 6, power_on_torque=True)
    emu.start()
    cal = tmp_path / "cal.json"
    write_calibration(cal, emu.calibration)
    m = emu.physics.model
    lo = np.array([m.jnt_range[m.joint(j).id][0] for j in JOINTS])
    hi = np.array([m.jnt_range[m.joint(j).id][1] for j in JOINTS])
    bus = So101Bus(BusSettings(emu.port, cal, lo, hi, joint_offsets=tuple(joint_offsets(m))))
    zeros = np.zeros(5)
    jtc = JointTrajectoryController(JtcParams(tuple(ARM), lo[:5], hi[:5], zeros, zeros))
    gac = GripperActionController(GacParams(JOINTS[5], lo[5], hi[5], max_effort=STALL_TORQUE))
    logs: list[tuple[str, str]] = []
    loop = ServoLoop(bus, jtc, gac, LoopSettings(), lambda level, text: logs.append((level, text)))
    try:
        loop.configure(time.monotonic())
        loop.activate(time.monotonic())
        yield emu, loop, bus, logs
    finally:
        bus.close()
        emu.stop()


def run(loop: ServoLoop, bus: So101Bus, seconds: float) -> tuple[np.ndarray, list[str]]:
    """Cycles every PERIOD for ``seconds``; returns each cycle's stall torques [N·m] (the N·m
    scale in force) and the supply notes the loop held."""
    stalls, notes = [], []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        loop.cycle(time.monotonic())
        stalls.append(bus.stall().copy())
        notes.append(loop.supply_note)
        time.sleep(PERIOD)
    return np.array(stalls), notes


def test_one_garbled_voltage_read_changes_no_scale_and_warns_of_nothing(bench):
    """The gripper's Present_Voltage reads 6.0 V once (half its supply, outside the band): the
    N·m scale stays, no supply warning is raised or logged. Then a real sag to 9 V (every
    read says so): the scale follows and the warning names the reading."""
    emu, loop, bus, logs = bench
    run(loop, bus, 0.3)
    before = bus.stall().copy()
    np.testing.assert_allclose(before, STALL_TORQUE, rtol=0.01)
    emu.faults.garble = "Present_Temperature Present_Voltage 6 60"
    stalls, notes = run(loop, bus, 0.6)  # health every 10th cycle: several checks
    assert emu.faults.garble == "", "the garbled read never happened"
    assert np.abs(stalls - before).max() < 1e-9, stalls[np.abs(stalls - before).max(axis=1) > 0]
    assert not any(notes), notes
    assert not any("supply" in text for _, text in logs), logs
    sag = round(RATED * (1.0 - VOLTAGE_BAND) - 0.6, 1)  # 9.0 V: outside the band
    emu.set_supply(sag)
    stalls, notes = run(loop, bus, 0.6)
    np.testing.assert_allclose(stalls[-1], STALL_TORQUE * sag / RATED, rtol=0.01)
    assert f"gripper {sag:.1f} V" in notes[-1], notes[-1]
    assert any(f"{sag:.1f} V" in text for level, text in logs if level == "warn"), logs
