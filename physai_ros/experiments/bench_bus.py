"""Benchmark: the SO-101 driver's bus cycle against the serial line's byte-time limit.

``physai bench bus [--cycles N]``

One driver cycle through LeRobot's ``FeetechMotorsBus`` (``So101Bus``) on the emulated bus:
three SYNC READs of six servos (position, velocity, load) and one SYNC WRITE of six goals.
At 1 Mbaud (8N1, 10 µs a byte) those packets alone take ``byte_time_ms``; everything above
is the SDK's Python, the pty and the emulator. Command-to-servo latency: from calling
``send_positions`` until the emulated servo holds the new Goal_Position. The emulator answers
with Return_Delay_Time 0 (LeRobot's setting) and adds the byte times as the wire would.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from physai_ros.errors import InvalidInput, PhysaiError
from physai_ros.robots.so101 import protocol as fp
from physai_ros.robots.so101.bus import BusSettings, So101Bus
from physai_ros.robots.so101.emulator.bus import (
    JOINTS,
    FeetechBusEmulator,
    joint_offsets,
    write_calibration,
)

N = len(JOINTS)


def byte_time_per_cycle(baudrate: int = 1_000_000, reads: int = 3, size: int = 2) -> float:
    """Seconds the packets of one cycle occupy the wire: ``reads`` SYNC READs of ``size``
    bytes from N servos (request 8 + N bytes, N replies of 6 + size) and one SYNC WRITE of
    ``size``-byte goals (8 + N (1 + size) bytes)."""
    read = (8 + N) + N * (6 + size)
    write = 8 + N * (1 + size)
    return fp.packet_time(reads * read + write, baudrate)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cycles", type=int, default=300, help="bus cycles to time")


def _measure(bus: So101Bus, servo, cycles: int) -> tuple[list[float], list[float]]:
    """Seconds of ``cycles`` read-and-write cycles, then of 50 command-to-servo latencies
    (``servo``: the emulated first servo, whose Goal_Position is watched)."""
    goal = bus.read_state().position
    cycle = []
    for _ in range(cycles):
        t0 = time.perf_counter()
        bus.read_state()
        bus.send_positions(goal)
        cycle.append(time.perf_counter() - t0)
    latency = []
    for k in range(50):
        q = goal.copy()
        q[0] = 0.05 * (1 if k % 2 else -1)
        before = servo.get("Goal_Position")
        t0 = time.perf_counter()
        bus.send_positions(q)
        while servo.get("Goal_Position") == before:
            if time.perf_counter() - t0 > 1.0:
                raise PhysaiError("the emulated servo did not take a new goal within 1 s")
            time.sleep(0)
        latency.append(time.perf_counter() - t0)
    return cycle, latency


def run(args: argparse.Namespace) -> int:
    if args.cycles < 1:
        raise InvalidInput(f"--cycles must be ≥ 1, got {args.cycles}")
    emulator = FeetechBusEmulator()
    port = emulator.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            cal = Path(tmp) / "cal.json"
            write_calibration(cal, emulator.calibration)
            m = emulator.physics.model
            lo = np.array([m.jnt_range[m.joint(j).id][0] for j in JOINTS])
            hi = np.array([m.jnt_range[m.joint(j).id][1] for j in JOINTS])
            settings = BusSettings(port, cal, lo, hi, joint_offsets=tuple(joint_offsets(m)))
            with So101Bus(settings) as bus:
                cycle, latency = _measure(bus, emulator.servos[0], args.cycles)
    finally:
        emulator.stop()
    cycle_ms = 1e3 * np.median(cycle)
    wire_ms = 1e3 * byte_time_per_cycle()
    print("| quantity | value |\n|---|---|")
    print(f"| bus cycle (3 sync reads + 1 sync write, 6 servos), median | {cycle_ms:.2f} ms |")
    print(f"| bus cycle, 95th percentile | {1e3 * np.percentile(cycle, 95):.2f} ms |")
    print(f"| byte-time limit of the same packets at 1 Mbaud | {wire_ms:.2f} ms |")
    print(f"| command-to-servo latency, median | {1e3 * np.median(latency):.3f} ms |")
    print(f"| max loop rate on the wire alone | {1e3 / wire_ms:.0f} Hz |")
    print(f"bus_loop_rate_hz = {1e3 / cycle_ms:.1f}")
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    add_arguments(p)
    raise SystemExit(run(p.parse_args()))
