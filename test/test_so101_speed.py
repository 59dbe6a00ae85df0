"""The command to the servos is speed-bounded, measured where it lands: on the servos.

The driver's loop (``ServoLoop``) runs against the bus emulator in this process, with LeRobot's
real FeetechMotorsBus between them; the emulator logs every Goal_Position as each servo
received it, with its receive time. A starved bus (every n-th read's reply stalled) makes
cycles overrun: the reference is sampled at the cycle's start and sent after its reads, so
without a bound the time a stall cost lands in the next, short, interval between goals.
"""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest
from support.optional import require
from support.servo_loop import run_loop, servo_loop_bench

from physai_ros.core.controllers.jtc import TrajectoryMsg
from physai_ros.core.motion.joint_trajectory import TrajectoryPoint
from physai_ros.core.motion.limits import load_limits
from physai_ros.robots.so101.bus import ARM
from physai_ros.robots.so101.emulator.servo import STEP_RAD

pytestmark = pytest.mark.realtime  # the emulator answers on a pty in wall-clock time

require("lerobot.motors")

# Tolerance of the servo-side check: both goals are rounded to whole steps (2 steps), and a
# receive time is stamped by the emulator's I/O thread, which a loaded machine wakes late: a
# loaded CI run saw one goal stamped 23.5 ms after the previous (a 50 ms send interval's full
# bounded step, 0.235 rad), so 30 ms at v_max (0.14 rad). The unbounded sends this catches
# jumped 0.29 rad in 3.5 ms (0.15-0.27 rad over v_max·dt).
JITTER = 0.03  # [s]
QUANTUM = 2 * STEP_RAD  # [rad]


def worst_steps(goals, servo_id: int, v_max: float, since: float):
    """Per interval between two goals servo ``servo_id`` received after ``since``: (excess of
    the step over v_max·dt [rad], step [rad], dt [s]), the worst first. Goals read off the pty
    at once (the emulator's I/O thread woke late: no receive time tells them apart) count as
    the last of them."""
    received: dict[float, float] = {}
    for g in goals:
        if g.servo_id == servo_id and g.received >= since:
            received[g.received] = g.angle
    mine = sorted(received.items())
    out = []
    for (ta, a), (tb, b) in itertools.pairwise(mine):
        out.append((abs(b - a) - v_max * (tb - ta), abs(b - a), tb - ta))
    return sorted(out, reverse=True)


@pytest.fixture
def bench(tmp_path):
    emu, bus, loop, logs = servo_loop_bench(tmp_path)
    try:
        yield emu, loop, logs
    finally:
        bus.close()
        emu.stop()


def test_a_starved_bus_never_steps_a_servo_faster_than_the_velocity_limit(bench):
    """wrist_roll follows a trajectory at 4.5 rad/s (the limit set's 4.71 less 5 %) while
    every 4th read's reply comes 25 ms late: each goal wrist_roll receives is within
    v_max·dt (+ tolerance: JITTER, QUANTUM) of the one before, dt between their receipts."""
    emu, loop, logs = bench
    v_max = float(load_limits("so101").velocity[4])
    now = time.monotonic()
    loop.configure(now)
    loop.activate(time.monotonic())
    # the servos' own profile is told the set's speed too (not 0: full speed)
    assert [s.get("Goal_Velocity") for s in emu.servos] == [3070] * 6
    run_loop(loop, 0.2)
    emu.faults.stall_every, emu.faults.stall_ms = 4, 25.0
    v, ramp, cruise = 4.5, 0.2, 0.4  # [rad/s], [s], [s]
    times = np.arange(ramp, ramp + cruise + 1e-9, 0.05)
    points = [
        TrajectoryPoint(float(t), [0.0, 0.0, 0.0, 0.0, v * (t - ramp / 2)], [0.0] * 4 + [v])
        for t in times
    ]
    end = [0.0] * 4 + [v * cruise + v * ramp]
    points.append(TrajectoryPoint(float(times[-1] + ramp), end, [0.0] * 5))
    start = time.monotonic()
    with loop.lock:
        loop.arm.follow(loop.arm.prepare(TrajectoryMsg(list(ARM), points), start))
    run_loop(loop, ramp + cruise + ramp + 0.3)
    emu.faults.stall_every = 0
    assert emu.stats.stalled_reads >= 10, emu.stats
    moved = [g for g in emu.stats.goals if g.servo_id == 5 and g.received >= start]
    assert len(moved) >= 15 and max(g.angle for g in moved) > 2.0, (len(moved), logs)
    worst = worst_steps(emu.stats.goals, 5, v_max, start)
    allowed = v_max * JITTER + QUANTUM
    over = [w for w in worst if w[0] > allowed]
    print(f"worst of {len(worst)} steps (excess over v_max·dt [rad], step, dt): {worst[:3]}")
    assert not over, (
        f"{len(over)} of {len(worst)} goal steps above v_max·dt + {allowed:.4f} rad; worst "
        f"{[(round(e, 4), round(s, 4), round(d, 4)) for e, s, d in over[:5]]} "
        "(excess, step [rad], dt [s])"
    )
    assert loop.bounded_sends > 0  # the bound acted, and said so
    assert any("goal step bounded by the velocity limit" in text for _, text in logs), logs
