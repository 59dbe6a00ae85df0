"""The three-finger pick's judged run as a bench: the Barrett-like hand on the simulated Panda
picks the soft sphere at ``--runs`` positions, over ROS, in one graph.

The graph is the one ``ros2 launch physai_ros hand_pick.launch.py autostart:=false`` starts
(``hand_pick_graph``: sim bridge paced at real time, TF publisher, trajectory node, grasp
planner, hand pick, each in a process of its own with the product's parameters,
``physai_ros.launching.bringup.start``). For each position of a deterministic walk over the
±``--half`` square around the object's place, the bench puts the soft object there (the sim
bridge's ``soft_x``/``soft_y`` parameters, then ``/sim/reset``) and sends one ``/pick`` goal
for the TF frame ``grasp_object``; the hand plans once, at start, and moves the planned grasp
onto the object where it lies.

A run passes when the typed result is HELD (the object's centre of mass rose ≥ 4 cm since the
close with all three fingers on it, its largest edge strain under the limit); the result
gives the per-finger numbers. The table gives the held rate with its
Wilson 95 % interval and each run's rise, final and peak finger forces against the planned
targets, strain and close time::

    physai bench hand-pick --runs 10
    physai bench hand-pick --runs 3 --keep /tmp/hand_bench --json /tmp/hand.json
    physai bench hand-pick --table /tmp/hand.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from physai_ros import interfaces
from physai_ros.errors import InvalidInput
from physai_ros.experiments.trials.force_runs import positions, progress, wilson
from physai_ros.experiments.trials.pick_goals import Client
from physai_ros.launching.graph import HAND_OBJECT_FRAME, hand_pick_defaults, hand_pick_graph

HALF = 0.02  # [m] positions in ±2 cm around the object's place
GOAL_TIMEOUT = 420.0  # [s wall] graph start + the plan + one pick, on a loaded machine


@dataclass
class Run:
    """One run's numbers (forces per finger F1..F3 [N], rise [cm], strain [m/m], close [s])."""

    x: float
    y: float
    outcome: str
    reason: str = ""
    rise_cm: float = math.nan
    targets: list[float] = field(default_factory=list)
    final: list[float] = field(default_factory=list)
    peak: list[float] = field(default_factory=list)
    within: bool = False  # every finger's final force within its target's tolerance
    strain: float = math.nan
    close_s: float = math.nan
    wall_s: float = math.nan


def _span(values: list[float], fmt: str = "{:.3f}") -> str:
    values = [v for v in values if v is not None and math.isfinite(v)]
    if not values:
        return "–"
    return f"{fmt.format(min(values))}–{fmt.format(max(values))}"


def table(runs: list[Run]) -> str:
    """The summary row (held with its Wilson interval, the spans) and one row per run."""
    held = sum(r.outcome == "held" for r in runs)
    low, high = wilson(held, len(runs))
    kept = [r for r in runs if r.outcome == "held"]
    errors = [100.0 * (f - t) / t for r in kept for f, t in zip(r.final, r.targets, strict=True)]
    over = [100.0 * (p - t) / t for r in kept for p, t in zip(r.peak, r.targets, strict=True)]
    lines = [
        "| runs | held | final vs target % | peak vs target % | rise cm | strain | close s |",
        "|---|---|---|---|---|---|---|",
        f"| {len(runs)} | **{held}/{len(runs)}** [{low:.2f}, {high:.2f}] | "
        f"{_span(errors, '{:+.1f}')} | {_span(over, '{:+.1f}')} | "
        f"{_span([r.rise_cm for r in runs], '{:.2f}')} | {_span([r.strain for r in runs])} | "
        f"{_span([r.close_s for r in runs], '{:.2f}')} |",
        "",
        "| x m | y m | outcome | rise cm | targets N | final N | peak N | strain | close s | "
        "reason |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        fmt = lambda v: "[" + ", ".join(f"{x:.3f}" for x in v) + "]"  # noqa: E731
        lines.append(
            f"| {r.x:.4f} | {r.y:.4f} | {r.outcome} | {r.rise_cm:.2f} | {fmt(r.targets)} | "
            f"{fmt(r.final)} | {fmt(r.peak)} | {r.strain:.3f} | {r.close_s:.2f} | "
            f"{r.reason[:80]} |"
        )
    return "\n".join(lines)


def wait_ready(client: Client) -> None:
    """Wait until the hand pick has its plan and waits for goals (its latched state ``ready``)."""
    from rclpy.qos import DurabilityPolicy, QoSProfile
    from std_msgs.msg import String

    states: list[str] = []
    latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    client.node.create_subscription(
        String, interfaces.HAND_PICK_STATE, lambda m: states.append(m.data), latched
    )
    end = time.monotonic() + GOAL_TIMEOUT
    while "ready" not in states:
        if time.monotonic() > end:
            raise TimeoutError(f"the hand pick was not ready within {GOAL_TIMEOUT} s: {states}")
        client.spin_for(0.2)


def one_run(client: Client, x: float, y: float) -> Run:
    """Put the object at (x, y), send one goal for it and read its typed result."""
    from physai_ros_interfaces.action import Pick

    from physai_ros.nodes._pick_outcome import outcome_name

    client.put_cube(x, y, what="soft")
    began = time.monotonic()
    try:
        _, result = client.send(Pick.Goal(object_frame=HAND_OBJECT_FRAME), GOAL_TIMEOUT)
    except TimeoutError as exc:
        return Run(x, y, "no result", reason=str(exc))
    return Run(
        x,
        y,
        outcome_name(result.outcome),
        reason=str(result.reason),
        rise_cm=100.0 * result.lift,
        targets=list(result.jaw_targets),
        final=list(result.jaw_forces),
        peak=list(result.jaw_peaks),
        within=result.force_within_tolerance,
        strain=result.strain_peak,
        close_s=result.close_time,
        wall_s=time.monotonic() - began,
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", type=int, default=10, help="positions")
    parser.add_argument("--half", type=float, default=HALF, help="half side of the square [m]")
    parser.add_argument("--domain", type=int, default=81, help="ROS_DOMAIN_ID of the graph")
    parser.add_argument("--keep", type=Path, default=None, help="keep the node logs here")
    parser.add_argument("--json", type=Path, default=None, help="write every run's numbers here")
    parser.add_argument(
        "--table", type=Path, default=None, help="print the table of a --json file; run nothing"
    )


def run(args: argparse.Namespace) -> int:
    if args.runs < 1:
        raise InvalidInput(f"--runs must be at least 1, got {args.runs}")
    if not 0.0 <= args.half <= 0.05:
        raise InvalidInput(f"--half must be in [0, 0.05] m, got {args.half}")
    if args.table is not None:
        print(table([Run(**row) for row in json.loads(args.table.read_text())]))
        return 0
    import rclpy

    from physai_ros.launching.bringup import start, stop

    os.environ["ROS_DOMAIN_ID"] = str(args.domain)
    obj = hand_pick_defaults()
    where = positions(args.runs, (float(obj["x"]), float(obj["y"])), lambda x, y: True, args.half)
    load = os.getloadavg()
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {load[0]:.1f}, "
          f"{os.cpu_count()} cores; {obj['shape']} {obj['size']} m, {obj['mass']} kg, "
          f"E {obj['young']:g} Pa", file=sys.stderr)  # fmt: skip
    specs = hand_pick_graph(autostart=False)
    os.environ.update(specs[0].env)  # this client discovers as the graph does
    context = rclpy.Context()
    rclpy.init(context=context)
    runs: list[Run] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="hand-bench-") as tmp:
        base = args.keep or Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        client = Client(context, interfaces.HAND_PICK_OUTCOME, "hand_bench")
        procs = start(specs, base)
        try:
            wait_ready(client)
            progress(0, len(where), started, None)
            for i, (x, y) in enumerate(where):
                runs.append(one_run(client, x, y))
                progress(i + 1, len(where), started, None)
                if args.json is not None:
                    args.json.write_text(json.dumps([asdict(r) for r in runs], indent=1))
        finally:
            client.close()
            stop(procs)
            rclpy.shutdown(context=context)
    print(table(runs))
    print(f"\nload {load[0]:.1f} at start, {os.getloadavg()[0]:.1f} at end; "
          f"{time.monotonic() - started:.0f} s for {len(runs)} runs")  # fmt: skip
    return 0
