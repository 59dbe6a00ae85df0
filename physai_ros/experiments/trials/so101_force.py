"""Force-controlled picks of the soft cube by the SO-101 on the bus emulator, judged: ≥ 8/10
held, squeeze within 25 % of the target.

The target is a parameter (``--target``, 2 N per jaw), or with ``--planned`` the planner's: the
pick asks a ``grasp_planner`` node (started beside the graph, discovering as it does) for the
soft cube, and its 0.19 N per jaw, below what the jaw can set against its own gear friction, is
raised to the jaw's least controllable squeeze, 2.414 N (docs/force_close.md).

Each run is a fresh emulator with the sim bridge's soft cube (``soft_object: cube``, 30 g, 3 cm,
E 5·10⁴ Pa; config/scene.yaml) and the real-arm graph exactly as ``pick.launch.py sim:=false``
starts it (``physai_ros.launching.graph.pick_graph``, one process per node), the pick given the soft
cube's position (``cube_position``, as an operator would after placing it) and a force close:

    close_mode: force, plan.source: parameter, force: {target: <--target>, contact: <--contact>}
    cube_frame: soft_cube      # a frame nothing publishes: the pick uses cube_position

The measured force is the driver's servo-load estimate (``jaw_contact/<jaw>``, N = (τ − τ_f)/r,
docs/real_so101.md "Jaw force calibration"). The emulator's ``~/witness`` is the truth: each
jaw's true normal force on the soft cube, its strain, its lift and whether both jaws touch it.
The rigid cube is put out of the way, at ``RIGID_CUBE``.

A run is **held** when the pick says held and the truth agrees (soft cube lifted ≥ 4 cm, in both
jaws). The table gives, per run, the pick's final estimated squeeze per jaw, the emulator's true
squeeze (mean of the jaws' net contact forces) at the same moment, the target, whether each is
within ``--band`` of it, the strain at the end and the largest seen, and how often the
emulator's physics fell more than 100 ms behind real time (its own warning: a busy machine,
which a real arm's servos never are); then k/n with Wilson 95 % intervals.

    physai bench so101-force --runs 10            # ≈ 40 s a run on 2 shared cores
    physai bench so101-force --runs 3 --target 3 --positions 0.22,0.08
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from physai_ros import interfaces
from physai_ros.core.stats import wilson
from physai_ros.errors import InvalidInput
from physai_ros.launching.bringup import start_emulated, stop
from physai_ros.launching.graph import NodeSpec, emulator_spec, pick_graph

POSITIONS = ("0.22,0.08", "0.20,0.06", "0.19,0.09", "0.21,0.10", "0.23,0.06")
"""Soft cube centres (x, y) [m] in the base frame, cycled over the runs: the default spot beside
the rigid cube and up to 3 cm around it, within the SO-101's top-down reach (at (0.24, 0.10),
0.26 m out, the pick's IK finds no lift pose and it aborts before moving)."""
RIGID_CUBE = (0.15, -0.12)  # [m] base frame: the rigid cube, clear of every soft position
SIZE = 0.03  # [m] the soft cube's edge (config/scene.yaml soft.size)
MIN_LIFT = 0.04  # [m] lifted: the bottom at least this far above the table (config/pick.yaml)
WITNESS = "/so101_emulator/witness"


@dataclass
class Run:
    """One pick's report and the emulator's truth at the moment the outcome came."""

    pos: tuple[float, float]
    outcome: dict | None
    truth: dict | None
    peak_strain: float
    behind: int  # times the emulator's physics fell > 100 ms behind real time (its log)

    @property
    def soft(self) -> dict | None:
        return None if self.truth is None else self.truth.get("soft")

    @property
    def true_held(self) -> bool:
        soft = self.soft
        return soft is not None and soft["pos"][2] - SIZE / 2 >= MIN_LIFT and soft["in_jaws"]

    @property
    def held(self) -> bool:
        return self.outcome is not None and self.outcome["outcome"] == "held" and self.true_held

    @property
    def estimate(self) -> float | None:
        squeeze = math.nan if self.outcome is None else self.outcome["squeeze_per_jaw"]
        return None if math.isnan(squeeze) else squeeze

    def target(self, given: float) -> float:
        """[N] per jaw: the one the pick squeezed to (a planned one), else ``given``."""
        planned = math.nan if self.outcome is None else self.outcome["force_target"]
        return given if math.isnan(planned) else planned

    @property
    def true_force(self) -> float | None:
        soft = self.soft
        return None if soft is None else 0.5 * sum(soft["jaw_force"])


def force_pick(
    port: str, cal: str, pos: tuple[float, float], target: float, contact: float, planned: bool
):
    """The real-arm graph's pick node (``pick_graph(sim=False)``'s own spec) pointed at the soft
    cube at ``pos`` (x, y, base frame [m]; ``cube_position``, as an operator gives it after
    placing the cube; ``cube_frame`` one nothing publishes, so a motion-captured rigid cube is
    not taken for it) with a force close to ``target`` [N] per jaw (``planned``: the planner's
    for the soft cube), closing onto it with ``contact`` [N] per jaw."""
    spec = pick_graph(sim=False, port=port, calibration_file=cal, cube_x=pos[0], cube_y=pos[1])[-1]
    spec.parameters.update(cube_frame="soft_cube", close_mode="force")
    if planned:
        spec.parameters.update(
            plan={"source": "planner", "object": "soft"}, force={"contact": float(contact)}
        )
    else:
        spec.parameters.update(
            plan={"source": "parameter"},
            force={"target": float(target), "contact": float(contact)},
        )
    return spec


def pick_specs(tmp: Path, pos: tuple[float, float], args) -> tuple[list[NodeSpec], NodeSpec]:
    """The real-arm graph with the force pick of the soft cube, and its emulator."""
    port, cal = str(tmp / "port"), str(tmp / "cal.json")
    specs = pick_graph(sim=False, port=port, calibration_file=cal)
    specs[-1] = force_pick(port, cal, pos, args.target, args.contact, args.planned)
    if args.planned:
        specs.append(NodeSpec("grasp_planner", "grasp_planner", env=dict(specs[0].env)))
    emulator = emulator_spec(
        port,
        cal,
        cube_x=RIGID_CUBE[0],
        cube_y=RIGID_CUBE[1],
        soft_object="cube",
        soft_x=float(pos[0]),
        soft_y=float(pos[1]),
    )
    return specs, emulator


class Observer:
    """The pick's latched outcome and the emulator's witness, as a user's tools see them."""

    def __init__(self) -> None:
        import rclpy
        from physai_ros_interfaces.msg import PickOutcome
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from std_msgs.msg import String

        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node("so101_force_bench", context=self.context)
        self.outcome: dict | None = None
        self.truth: dict | None = None
        self.peak_strain = 0.0
        self.trace: list[str] = []  # every witness record, for --keep
        latched = QoSProfile(
            depth=1,
            durability=DurabilityPolicy.TRANSIENT_LOCAL,
            reliability=ReliabilityPolicy.RELIABLE,
        )
        self.node.create_subscription(PickOutcome, interfaces.PICK_OUTCOME, self._outcome, latched)
        self.node.create_subscription(String, WITNESS, self._witness, 10)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)

    def _outcome(self, msg) -> None:
        from physai_ros.nodes._pick_outcome import outcome_fields

        self.outcome = outcome_fields(msg)

    def _witness(self, msg) -> None:
        self.trace.append(msg.data)
        if self.done:
            return
        self.truth = json.loads(msg.data)
        soft = self.truth.get("soft")
        if soft is not None:
            self.peak_strain = max(self.peak_strain, soft["strain"])

    @property
    def done(self) -> bool:
        """The truth is the first record stamped at or after the outcome (this client may
        read the outcome before older witness records)."""
        return (
            self.outcome is not None
            and self.truth is not None
            and self.truth["stamp"] >= self.outcome["stamp"]
        )

    def wait(self, timeout: float) -> None:
        end = time.monotonic() + timeout
        while not self.done and time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.05)

    def close(self) -> None:
        import rclpy

        self.executor.remove_node(self.node)
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


def run_one(pos: tuple[float, float], args, tmp: Path) -> Run:
    specs, emulator = pick_specs(tmp, pos, args)
    os.environ.update(specs[0].env)  # discover the graph as it discovers itself
    observer = Observer()
    procs = []
    try:
        procs = start_emulated(specs, [emulator], tmp)
        observer.wait(args.timeout)
    finally:
        stop(procs)
        observer.close()
    (tmp / "witness.jsonl").write_text("\n".join(observer.trace) + "\n")
    log = (tmp / f"{emulator.name}.log").read_text(errors="replace")
    behind = sum(int(n) for n in re.findall(r"physics > 100 ms behind (\d+) times", log))
    return Run(pos, observer.outcome, observer.truth, observer.peak_strain, behind)


def machine() -> str:
    """UTC time and the load averages: the table's conditions (a busy machine makes the
    emulator fall behind real time)."""
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    return f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, load {load}"


def within(value: float | None, target: float, band: float) -> bool:
    return value is not None and abs(value - target) <= band * target


def fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def table(runs: list[Run], target: float, band: float) -> list[str]:
    """The per-run rows, then k/n with Wilson 95 % intervals."""
    lines = [
        "| run | soft cube (x, y) [m] | pick | truth: lift [cm], both jaws | estimated squeeze [N] "
        "| true squeeze [N] | target [N] | est. within | true within | strain end / peak "
        "| emulator > 100 ms behind |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(runs, 1):
        soft = r.soft
        lift = (
            "-" if soft is None else f"{100 * (soft['pos'][2] - SIZE / 2):.2f}, {soft['in_jaws']}"
        )
        what = "no outcome" if r.outcome is None else r.outcome["outcome"]
        if r.outcome is not None and r.outcome["outcome"] == "aborted":
            what += f" ({r.outcome['reason'][:60]})"
        strain = "-" if soft is None else f"{soft['strain']:.3f} / {r.peak_strain:.3f}"
        aim = r.target(target)
        lines.append(
            f"| {i} | ({r.pos[0]:.2f}, {r.pos[1]:.2f}) | {what} | {lift} | {fmt(r.estimate)} "
            f"| {fmt(r.true_force)} | {aim:g} | {within(r.estimate, aim, band)} "
            f"| {within(r.true_force, aim, band)} | {strain} | {r.behind} |"
        )
    n = len(runs)
    counts = {
        "held (pick and truth)": sum(r.held for r in runs),
        f"held, estimate within {band:.0%}": sum(
            r.held and within(r.estimate, r.target(target), band) for r in runs
        ),
        f"held, true squeeze within {band:.0%}": sum(
            r.held and within(r.true_force, r.target(target), band) for r in runs
        ),
    }
    lines += ["", "| count | k/n | Wilson 95 % |", "|---|---|---|"]
    for name, k in counts.items():
        ci = wilson(k, n) if n else None
        lines.append(f"| {name} | {k}/{n} | [{ci.low:.2f}, {ci.high:.2f}] |")
    return lines


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", type=int, default=10, help="picks, each a fresh graph")
    parser.add_argument("--target", type=float, default=2.0, help="[N] force.target per jaw")
    parser.add_argument("--contact", type=float, default=1.5, help="[N] force.contact per jaw")
    parser.add_argument(
        "--planned",
        action="store_true",
        help="the target from the grasp_planner node (plan.source: planner), not --target",
    )
    parser.add_argument("--band", type=float, default=0.25, help="accepted |error| / target")
    parser.add_argument(
        "--positions",
        nargs="+",
        default=list(POSITIONS),
        metavar="X,Y",
        help="soft cube centres in the base frame [m], cycled over the runs",
    )
    parser.add_argument("--timeout", type=float, default=150.0, help="[s wall] per run")
    parser.add_argument("--keep", type=Path, default=None, help="keep each run's logs here")


def run(args: argparse.Namespace) -> int:
    if args.runs < 1:
        raise InvalidInput("--runs must be >= 1")
    positions = [tuple(float(v) for v in p.split(",")) for p in args.positions]
    from tqdm import tqdm

    started = machine()
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="physai-force-") as scratch:
        root = args.keep or Path(scratch)
        for i in tqdm(range(args.runs), desc="force picks", unit="pick"):
            tmp = root / f"run{i + 1:02d}"
            tmp.mkdir(parents=True, exist_ok=True)
            run = run_one(positions[i % len(positions)], args, tmp)
            runs.append(run)
            tqdm.write(
                f"run {i + 1}: {run.outcome and run.outcome['outcome']}, estimate "
                f"{fmt(run.estimate)} N, true {fmt(run.true_force)} N"
            )
    print(f"started {started}; ended {machine()}")
    print("\n".join(table(runs, args.target, args.band)))
    return 0
