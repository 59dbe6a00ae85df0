"""The three-finger pick's judged run as a bench: the Barrett-like hand on the simulated Panda
picks the soft sphere at ``--runs`` positions, over ROS.

Each run starts the graph ``ros2 launch physai_ros hand_pick.launch.py`` starts
(``hand_pick_graph``: sim bridge paced at real time, TF publisher, trajectory node, hand pick,
each in a process of its own with the product's parameters, ``physai_ros.launching.bringup.start``)
with
the soft sphere (config/hand_pick.yaml ``object``) at one position of a deterministic walk over
the ±``--half`` square around its place. The ``grasp_planner`` node of that graph is started
once, with the graph's parameters, and serves every run (the request is the same object each
time; the hand pick moves the planned grasp onto the object where it lies): the first run pays
the plan, the others are answered from the planner's cache.

A client node here watches ``hand_pick/outcome``. A run passes when the outcome is ``held``
(the object's centre of mass rose ≥ 4 cm since the close with all three fingers on it, its
largest edge strain under the limit); the table gives the held rate with its Wilson 95 %
interval and each run's rise, final and peak finger forces against the planned targets, strain
and close time::

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

from physai_ros.errors import InvalidInput
from physai_ros.experiments.trials.force_runs import positions, progress, wilson
from physai_ros.experiments.trials.spinning import Spinning
from physai_ros.launching.graph import hand_pick_defaults, hand_pick_graph
from physai_ros.launching.process_graph import run_graph

HALF = 0.02  # [m] positions in ±2 cm around the object's place
TIMEOUT = 420.0  # [s wall] graph start + (first) plan + pick on a loaded machine


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
    within: list[bool] = field(default_factory=list)
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


class Watcher:
    """A client node spun on a thread (``spinning.Spinning``): the hand pick's outcome."""

    def __init__(self, context) -> None:
        import rclpy
        from rclpy.qos import DurabilityPolicy, QoSProfile
        from std_msgs.msg import String

        from physai_ros import interfaces

        node = rclpy.create_node("hand_bench", context=context)
        self.outcome: dict | None = None
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        node.create_subscription(String, interfaces.HAND_PICK_OUTCOME, self.on_outcome, latched)
        self.spinning = Spinning(context, node)

    def on_outcome(self, msg) -> None:
        self.outcome = self.outcome or json.loads(msg.data)

    def close(self) -> None:
        self.spinning.close()


def one_run(context, x: float, y: float, log_dir: Path) -> Run:
    """Start the graph (all but the shared planner), watch until the outcome, stop it."""
    from physai_ros.launching.bringup import select

    watcher = Watcher(context)
    specs = select(hand_pick_graph(object_x=x, object_y=y), [], ["grasp_planner"])
    began = time.monotonic()
    try:
        dead = run_graph(specs, log_dir, watcher, TIMEOUT)
    finally:
        watcher.close()
    out = watcher.outcome
    if out is None:
        return Run(x, y, "no outcome", reason=f"none within {TIMEOUT} s; exited: {dead}")
    force = out["force"]
    return Run(
        x,
        y,
        str(out["outcome"]),
        reason=str(out.get("reason") or ""),
        rise_cm=math.nan if out["rise_cm"] is None else float(out["rise_cm"]),
        targets=force["targets_N"] or [],
        final=force["final_N"],
        peak=force["peak_while_closing_N"],
        within=force["within_tolerance"] or [],
        strain=float(out["strain_peak"]),
        close_s=math.nan if out["close_s"] is None else float(out["close_s"]),
        wall_s=time.monotonic() - began,
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", type=int, default=10, help="positions")
    parser.add_argument("--half", type=float, default=HALF, help="half side of the square [m]")
    parser.add_argument("--domain", type=int, default=81, help="ROS_DOMAIN_ID of the graphs")
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
    context = rclpy.Context()
    rclpy.init(context=context)
    runs: list[Run] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="hand-bench-") as tmp:
        base = args.keep or Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        planner = [s for s in hand_pick_graph() if s.name == "grasp_planner"]
        shared = start(planner, base)
        try:
            progress(0, len(where), started, None)
            for i, (x, y) in enumerate(where):
                runs.append(one_run(context, x, y, base / f"{i:02d}"))
                progress(i + 1, len(where), started, None)
                if args.json is not None:
                    args.json.write_text(json.dumps([asdict(r) for r in runs], indent=1))
        finally:
            stop(shared)
            rclpy.shutdown(context=context)
    print(table(runs))
    print(f"\nload {load[0]:.1f} at start, {os.getloadavg()[0]:.1f} at end; "
          f"{time.monotonic() - started:.0f} s for {len(runs)} runs")  # fmt: skip
    return 0
