"""Teleoperation on two emulated SO-101s: how closely and how soon does the follower follow?

Starts two bus emulators, a follower and a leader (``leader:=true``: torque off, moved by a
scripted human hand: minimum-jerk reaches between random poses, a tremor), then the graph
``ros2 launch physai_ros teleop.launch.py sim:=false`` starts (``teleop_graph``: the SO-101
driver on the follower's port, the TF publisher, the teleop node reading the leader through
LeRobot's leader class), each a process of its own, for ``--seconds`` per stream mode. Both
emulators trace their physics (the true joint angles at every 2 ms step) and the goals their
servos receive, on this machine's monotonic clock, so what is measured is the arms, not the
nodes' own reports:

* **latency**: for each new goal a follower servo receives while the leader's joint moves
  faster than ``MIN_SPEED``, how long after the leader's joint was at that angle (p50, p95, max);
* **tracking**: the RMS of the follower's true arm angles minus the leader's at the same
  instant, over the time it follows (``FOLLOWING_AFTER`` after the start, the blend-in done);
  and the same after shifting the leader by the median latency (the error beyond the delay).

    physai bench teleop --seconds 20
    physai bench teleop --modes staircase --seconds 30 --keep /tmp/teleop
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

from physai_ros.errors import InvalidInput

MODES = ("staircase", "linear", "limited")
MIN_SPEED = 0.5  # [rad/s] a goal is matched to the leader only while its joint moves this fast
WINDOW = 0.5  # [s] how far back a goal is looked for in the leader's motion
FOLLOWING_AFTER = 5.0  # [s] after the leader's first reach: the blend-in is long done
ARM = range(5)  # the arm's joints (the jaw's calibrations differ between the two arms)


class Trace(NamedTuple):
    """An emulator's trace (``so101_emulator``'s ``trace_file``)."""

    times: np.ndarray  # [s, monotonic] every physics step
    positions: np.ndarray  # [rad] true angles, (n, 6)
    goal_times: np.ndarray  # [s, monotonic] each goal received
    goal_ids: np.ndarray  # servo id of each
    goal_angles: np.ndarray  # [rad]
    eprom_writes: int
    torque_enabled: np.ndarray


def load_trace(path: Path) -> Trace:
    with np.load(path) as data:
        return Trace(**{name: data[name] for name in Trace._fields})


def goal_latencies(leader: Trace, follower: Trace, start: float, end: float) -> np.ndarray:
    """[s] per new goal of an arm servo of the follower received from ``start`` to ``end``
    [s, monotonic] while the leader's joint moved faster than ``MIN_SPEED``: how long after the
    leader's joint was at the goal's angle (its last crossing of that angle within ``WINDOW``
    before the goal came)."""
    speed = np.gradient(leader.positions, leader.times, axis=0)
    out = []
    previous: dict[int, float] = {}
    for received, servo, angle in zip(
        follower.goal_times, follower.goal_ids, follower.goal_angles, strict=True
    ):
        joint = int(servo) - 1
        new = previous.get(joint) != angle
        previous[joint] = angle
        if joint not in ARM or not new or not start <= received <= end:
            continue
        lo = int(np.searchsorted(leader.times, received - WINDOW))
        hi = int(np.searchsorted(leader.times, received, side="right"))
        if hi - lo < 2:
            continue
        diff = leader.positions[lo:hi, joint] - angle
        crossings = np.nonzero(diff[:-1] * diff[1:] <= 0.0)[0]
        if crossings.size == 0:
            continue
        k = int(crossings[-1])
        if abs(speed[lo + k, joint]) < MIN_SPEED:
            continue
        share = diff[k] / (diff[k] - diff[k + 1]) if diff[k] != diff[k + 1] else 0.0
        at = leader.times[lo + k] + share * (leader.times[lo + k + 1] - leader.times[lo + k])
        out.append(received - at)
    return np.asarray(out)


def tracking_rms(
    leader: Trace, follower: Trace, start: float, end: float, shift: float = 0.0
) -> float:
    """[rad] RMS over the arm joints of the follower's true angles minus the leader's ``shift``
    seconds earlier, from ``start`` to ``end`` [s, monotonic]."""
    mine = (follower.times >= start) & (follower.times <= end)
    if not np.any(mine):
        raise InvalidInput("the traces do not overlap after the follower began following")
    t = follower.times[mine]
    errors = [
        follower.positions[mine, j] - np.interp(t - shift, leader.times, leader.positions[:, j])
        for j in ARM
    ]
    return float(np.sqrt(np.mean(np.square(errors))))


class Result(NamedTuple):
    mode: str
    goals: int
    p50_ms: float
    p95_ms: float
    max_ms: float
    rms_mrad: float
    rms_shifted_mrad: float
    leader_eprom_writes: int


def judge(mode: str, leader: Trace, follower: Trace, following: float, until: float) -> Result:
    """The latencies and tracking of one run whose follower followed from ``following`` until
    ``until`` [s, monotonic], when the graph was stopped (the emulators, stopped after it, go
    on); the tracking is judged from ``FOLLOWING_AFTER`` after the start."""
    start = following + FOLLOWING_AFTER
    latency = goal_latencies(leader, follower, start, until)
    if latency.size < 20:
        raise InvalidInput(f"only {latency.size} goals matched the leader's motion: no measure")
    median = float(np.median(latency))
    return Result(
        mode,
        int(latency.size),
        1e3 * median,
        1e3 * float(np.percentile(latency, 95)),
        1e3 * float(latency.max()),
        1e3 * tracking_rms(leader, follower, start, until),
        1e3 * tracking_rms(leader, follower, start, until, shift=median),
        int(leader.eprom_writes),
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--modes", nargs="+", choices=MODES, default=list(MODES), help="stream modes run"
    )
    parser.add_argument(
        "--seconds", type=float, default=20.0, help="[s] of following per mode, after the start"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the leader's reaches")
    parser.add_argument(
        "--fps", type=float, default=None, help="[Hz] the teleop node's rate (default: its own)"
    )
    parser.add_argument("--domain", type=int, default=85, help="ROS_DOMAIN_ID of the graph")
    parser.add_argument("--keep", type=Path, default=None, help="keep logs and traces here")


LEADER_HOLD = 3.0  # [s] the leader rests before its first reach
FOLLOWING = "following the leader"  # the teleop node's log line when it begins
START_TIMEOUT = 90.0  # [s wall] for the graph to come up (LeRobot's import is most of it)


def wait_for_following(log: Path, procs: list, timeout: float = START_TIMEOUT) -> float:
    """When [s, monotonic] the teleop node's log (``log``) says it follows the leader."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if log.is_file() and FOLLOWING in log.read_text(errors="replace"):
            return time.monotonic()
        if any(proc.poll() is not None for proc in procs):
            break
        time.sleep(0.1)
    tail = log.read_text(errors="replace")[-2000:] if log.is_file() else "(no log)"
    raise InvalidInput(f"the teleop node did not begin following:\n{tail}")


def run_mode(mode: str, seconds: float, seed: int, base: Path, fps: float | None = None) -> Result:
    """One run of the emulated teleoperation graph in ``mode``; its judged traces."""
    from physai_ros.launching.bringup import start_emulated, stop
    from physai_ros.launching.graph import emulator_spec, teleop_graph

    base.mkdir(parents=True, exist_ok=True)
    port, cal = base / "follower_port", base / "follower.json"
    leader_port, leader_cal = base / "leader_port", base / "leader.json"
    specs = teleop_graph(
        leader_port=str(leader_port),
        leader_calibration_file=str(leader_cal),
        sim=False,
        mode=mode,
        port=str(port),
        calibration_file=str(cal),
        **({} if fps is None else {"fps": fps}),
    )
    follower_trace, leader_trace = base / "follower.npz", base / "leader.npz"
    emulators = [
        emulator_spec(str(port), str(cal), trace_file=str(follower_trace), witness_rate=1.0),
        emulator_spec(
            str(leader_port),
            str(leader_cal),
            name="so101_leader",
            leader=True,
            leader_seed=seed,
            leader_hold=LEADER_HOLD,
            trace_file=str(leader_trace),
            witness_rate=1.0,
        ),
    ]
    procs = start_emulated(specs, emulators, base)
    try:
        following = wait_for_following(base / "teleop.log", procs)
        time.sleep(FOLLOWING_AFTER + seconds)
        until = time.monotonic()
    finally:
        stop(procs)
    for trace in (leader_trace, follower_trace):
        if not trace.is_file():
            raise InvalidInput(f"no trace at {trace}: see the emulators' logs in {base}")
    return judge(mode, load_trace(leader_trace), load_trace(follower_trace), following, until)


def run(args: argparse.Namespace) -> int:
    if args.seconds < 5.0:
        raise InvalidInput(f"--seconds must be at least 5, got {args.seconds:g}")
    os.environ["ROS_DOMAIN_ID"] = str(args.domain)
    load = os.getloadavg()
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {load[0]:.1f}, "
          f"{os.cpu_count()} cores; {args.seconds:g} s of teleoperation per mode",
          file=sys.stderr)  # fmt: skip
    rows = []
    with tempfile.TemporaryDirectory(prefix="teleop-") as tmp:
        base = args.keep or Path(tmp)
        for mode in args.modes:
            rows.append(run_mode(mode, args.seconds, args.seed, base / mode, args.fps))
            print(f"{mode}: done", file=sys.stderr)
    print("| mode | goals matched | latency p50 [ms] | p95 [ms] | max [ms] | "
          "RMS error [mrad] | RMS beyond the delay [mrad] | leader EPROM writes |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        latency = f"{r.p50_ms:.0f} | {r.p95_ms:.0f} | {r.max_ms:.0f}"
        tracking = f"{r.rms_mrad:.1f} | {r.rms_shifted_mrad:.1f}"
        print(f"| {r.mode} | {r.goals} | {latency} | {tracking} | {r.leader_eprom_writes} |")
    return 0
