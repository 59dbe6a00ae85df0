"""Benchmark: the SO-101 driver's bus cycle against the serial line's byte-time limit.

``physai bench bus [--cycles N] [--usb-latency-ms MS] [--reads 1|3]``

One driver cycle through LeRobot's ``FeetechMotorsBus`` (``So101Bus``) on the emulated bus:
``So101Bus.read_state`` (one SYNC READ of six servos' position, velocity and load, addresses
56-61; ``--reads 3``: one per register, as the driver read before) and one
SYNC WRITE of six goals. At 1 Mbaud (8N1, 10 µs a byte) those packets alone take
``byte_time_ms``; everything above is the SDK's Python, the pty, the emulator and the emulated
USB adapter's round trip per transaction (``--usb-latency-ms``; a CH340 or an FTDI at its
default latency timer: 1-4 ms). Command-to-servo latency: from calling ``send_positions``
until the emulated servo received the new Goal_Position (both stamped with the system's
monotonic clock). The emulator answers with Return_Delay_Time 0 (LeRobot's setting) and adds
the byte times as the wire would. It runs in a process of its own, as a real servo is not in
the driver's process: in one process, the client's polling of the port holds Python's lock
and the emulator's replies wait for it.
"""

from __future__ import annotations

import argparse
import multiprocessing
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
    2-byte goals (8 + 3 N bytes)."""
    read = (8 + N) + N * (6 + size)
    write = 8 + N * (1 + 2)
    return fp.packet_time(reads * read + write, baudrate)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cycles", type=int, default=300, help="bus cycles to time")
    parser.add_argument(
        "--usb-latency-ms",
        type=float,
        default=0.0,
        help="the emulated USB serial adapter's round trip per transaction [ms] (CH340/FTDI: 1-4)",
    )
    parser.add_argument(
        "--reads",
        type=int,
        choices=(1, 3),
        default=1,
        help="sync reads per state read: 1 = the driver's (addresses 56-61 at once), 3 = one "
        "per register (the driver before, for comparison)",
    )


def _serve(conn, usb_latency_ms: float, calibration: str) -> None:
    """The emulator's process: start, tell the port, then answer "goals" (servo 1's received
    goals: (monotonic time, steps)) until "stop"."""
    emulator = FeetechBusEmulator(usb_latency_ms=usb_latency_ms, record_goals=True)
    write_calibration(Path(calibration), emulator.calibration)
    m = emulator.physics.model
    lo = [float(m.jnt_range[m.joint(j).id][0]) for j in JOINTS]
    hi = [float(m.jnt_range[m.joint(j).id][1]) for j in JOINTS]
    conn.send((emulator.start(), lo, hi, joint_offsets(m)))
    try:
        while (request := conn.recv()) != "stop":
            if request == "goals":
                conn.send([(g.received, g.steps) for g in emulator.stats.goals if g.servo_id == 1])
    finally:
        emulator.stop()


def _measure(bus: So101Bus, cycles: int) -> tuple[list[float], list[tuple[float, float]]]:
    """Seconds of ``cycles`` read-and-write cycles, then the send times [s, monotonic] and
    first-joint goals [rad] of 50 alternating goals."""
    goal = bus.read_state().position
    cycle = []
    for _ in range(cycles):
        t0 = time.perf_counter()
        bus.read_state()
        bus.send_positions(goal)
        cycle.append(time.perf_counter() - t0)
    sends = []
    for k in range(50):
        q = goal.copy()
        q[0] = 0.05 * (1 if k % 2 else -1)
        sends.append((time.monotonic(), float(q[0])))
        bus.send_positions(q)
        time.sleep(0.005)
    return cycle, sends


def _latencies(sends: list[tuple[float, float]], goals: list[tuple[float, int]]) -> list[float]:
    """For each send, the time until servo 1 received the first goal stamped after it."""
    out = []
    for t_send, _ in sends:
        after = [t for t, _ in goals if t >= t_send]
        if not after:
            raise PhysaiError("the emulated servo did not receive a goal sent")
        out.append(min(after) - t_send)
    return out


def run(args: argparse.Namespace) -> int:
    if args.cycles < 1:
        raise InvalidInput(f"--cycles must be ≥ 1, got {args.cycles}")
    if not 0.0 <= args.usb_latency_ms <= 100.0:
        raise InvalidInput(f"--usb-latency-ms must be 0 to 100, got {args.usb_latency_ms}")
    context = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as tmp:
        cal = Path(tmp) / "cal.json"
        conn, child_conn = context.Pipe()
        child = context.Process(
            target=_serve, args=(child_conn, args.usb_latency_ms, str(cal)), daemon=True
        )
        child.start()
        try:
            if not conn.poll(60.0):
                raise PhysaiError("the bus emulator did not start within 60 s")
            port, lo, hi, offsets = conn.recv()
            settings = BusSettings(
                port, cal, np.array(lo), np.array(hi), joint_offsets=tuple(offsets)
            )
            with So101Bus(settings) as bus:
                bus.state_reads = reads = args.reads
                cycle, sends = _measure(bus, args.cycles)
            conn.send("goals")
            latency = _latencies(sends, conn.recv())
        finally:
            with_stop = child.is_alive()
            if with_stop:
                conn.send("stop")
            child.join(timeout=10.0)
            if child.is_alive():
                child.terminate()
                child.join()
    cycle_ms = 1e3 * np.median(cycle)
    size = 6 if reads == 1 else 2
    wire_ms = 1e3 * byte_time_per_cycle(reads=reads, size=size)
    what = f"{reads} sync read{'s' if reads > 1 else ''} + 1 sync write, 6 servos"
    print("| quantity | value |\n|---|---|")
    print(f"| bus cycle ({what}), median | {cycle_ms:.2f} ms |")
    print(f"| bus cycle, 95th percentile | {1e3 * np.percentile(cycle, 95):.2f} ms |")
    print(f"| byte-time limit of the same packets at 1 Mbaud | {wire_ms:.2f} ms |")
    print(f"| command-to-servo latency, median | {1e3 * np.median(latency):.3f} ms |")
    print(f"| max loop rate on the wire alone | {1e3 / wire_ms:.0f} Hz |")
    print(f"| USB adapter round trip per transaction (emulated) | {args.usb_latency_ms:g} ms |")
    print(f"bus_loop_rate_hz = {1e3 / cycle_ms:.1f}")
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    add_arguments(p)
    raise SystemExit(run(p.parse_args()))
