"""The SO-101 driver's bus loop on the bus emulator, in the test process: ``ServoLoop`` with
LeRobot's real FeetechMotorsBus between it and an in-process ``FeetechBusEmulator`` recording
every Goal_Position each servo receives (for the tests that judge commands where they land).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from physai_ros.core.controllers.gac import GacParams, GripperActionController
from physai_ros.core.controllers.jtc import JointTrajectoryController, JtcParams
from physai_ros.core.motion.limits import load_limits
from physai_ros.robots.so101.bus import ARM, STALL_TORQUE, BusSettings, So101Bus
from physai_ros.robots.so101.config import goal_velocity
from physai_ros.robots.so101.emulator.bus import (
    JOINTS,
    FeetechBusEmulator,
    joint_offsets,
    write_calibration,
)
from physai_ros.robots.so101.loop import LoopSettings, ServoLoop

PERIOD = 0.01  # [s] the driver's loop_rate of 100 Hz


def servo_loop_bench(tmp_path: Path, **jtc: Any):
    """A started emulator (servos holding 0 with torque on) and a ``ServoLoop`` on it whose
    arm controller takes ``jtc`` (``JtcParams`` fields; by default tolerances 0: unchecked);
    the servos' own speed is the default limit set's. Returns (emulator, bus, loop, log
    lines); the caller closes the bus and stops the emulator."""
    emu = FeetechBusEmulator(initial=(0.0,) * 6, power_on_torque=True, record_goals=True)
    emu.start()
    cal = tmp_path / "cal.json"
    write_calibration(cal, emu.calibration)
    m = emu.physics.model
    lo = np.array([m.jnt_range[m.joint(j).id][0] for j in JOINTS])
    hi = np.array([m.jnt_range[m.joint(j).id][1] for j in JOINTS])
    speeds = tuple(int(v) for v in goal_velocity(load_limits("so101")))
    offsets = tuple(joint_offsets(m))
    bus = So101Bus(BusSettings(emu.port, cal, lo, hi, joint_offsets=offsets, velocity=speeds))
    zeros = np.zeros(5)
    base = {"joints": tuple(ARM), "lower": lo[:5], "upper": hi[:5]}
    params = JtcParams(**base | {"trajectory": zeros, "goal": zeros} | jtc)
    gac = GripperActionController(GacParams(JOINTS[5], lo[5], hi[5], max_effort=STALL_TORQUE))
    logs: list[tuple[str, str]] = []
    loop = ServoLoop(
        bus,
        JointTrajectoryController(params),
        gac,
        LoopSettings(),
        lambda level, text: logs.append((level, text)),
    )
    return emu, bus, loop, logs


def run_loop(loop: ServoLoop, seconds: float) -> None:
    """The node's bus thread (``_bus_cycles``): a cycle every PERIOD, late ones start at once."""
    next_t = time.monotonic()
    end = next_t + seconds
    while time.monotonic() < end:
        loop.cycle(time.monotonic())
        next_t += PERIOD
        delay = next_t - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        else:
            next_t = time.monotonic()
