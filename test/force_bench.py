"""Issue 14's judged run as a bench: planned-force vs cap-based closes of the soft cube, over ROS.

Each run starts a fresh pick graph, the nodes ``ros2 launch physai_ros pick.launch.py sim:=true``
starts (``pick_graph(sim=True)``, each in a process of its own with the product's parameters,
``physai_ros.launching.bringup.start``; the sim bridge paced at real time), with the sim bridge's
soft cube
(``soft_object: cube``, config/scene.yaml ``soft``: 30 g, 3 cm, E 5·10⁴ Pa) at one of
``--runs`` positions and the rigid cube moved out of the way. The pick is pointed at the soft
cube by ``cube_position`` (it publishes no TF frame). Two modes:

- ``force``: ``close_mode: force`` with its target from the ``grasp_planner`` node (started as
  its own process too): ``plan: {source: planner, object: soft}``, ``force.contact`` 1.5 N (the
  default 3 N lies above a soft object's band);
- ``cap``: the default cap-based close (lesson 16), nothing else changed.

``--robot panda``: the simulated Panda's pick graph (``pick_graph(robot="panda")``), whose force
close is one franka_gripper ``Grasp`` (config/pick.yaml ``panda``) with the target at the Franka
Hand's floor, 30 N per finger (any plan for a 30 g object lies below it: the planner is not
asked), and whose cap close squeezes with its 70 N cap; ``--young`` sets the soft cube's Young's
modulus (a 30 N squeeze crushes the default 5·10⁴ Pa cube, narrower than the Grasp's epsilon).

A client node here watches ``pick/outcome``, ``pick/state``, ``soft_object_strain`` and the jaw
wrenches. A force run passes when the pick held the cube, its final squeeze per jaw lies within
``--band`` of the planned target, and the largest edge strain seen from the close on stayed
under ``--strain-limit`` (stated at the bridge's ``soft_count``). The table gives the pass,
held and within-band rates with Wilson 95 % intervals, and each run's numbers::

    python test/force_bench.py --runs 10               # both modes, 30-40 s a run at load 5-8
    python test/force_bench.py --runs 3 --modes force --keep /tmp/force_bench
    python test/force_bench.py --robot panda --young 5e5 --runs 10
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from physai_ros.core import stats
from physai_ros.launching.graph import NodeSpec, pick_graph
from physai_ros.sim.scene import cube_world_pos, load_scene_config

MODES = ("force", "cap")
HALF_SQUARE = 0.01  # [m] positions in ±1 cm around the soft cube's place, as lesson 16's
# sweeps; those the pick's IK cannot reach (the square's far corner, 24 cm out) are skipped
SOFT_COUNT = 3  # the soft cube's resolution (vertices per edge): the strain limit's
STRAIN_LIMIT = 0.25  # [m/m] largest edge strain at SOFT_COUNT (docs/force_close.md: why)
BAND = 0.15  # accepted final squeeze: planned target · (1 ∓ BAND) (issue 14)
CONTACT = 1.5  # [N per jaw] force.contact of the force runs (below a 2.4 N target's band)
RIGID_AWAY = {  # [m] the rigid cube, base frame, out of the way: 18 / 25 cm from the soft one
    "so101": (0.22, -0.10),
    "panda": (0.5, -0.15),
}
TIMEOUT = 240.0  # [s wall] graph start + plan + pick on a loaded machine


def positions(
    n: int,
    centre: tuple[float, float],
    reachable: Callable[[float, float], bool],
    half: float = HALF_SQUARE,
) -> list[tuple[float, float]]:
    """The first ``n`` soft-cube centres (x, y) [m, base frame] that ``reachable`` accepts, of a
    deterministic low-discrepancy walk (golden-ratio steps in x, √2 − 1 steps in y) over the
    ±``half`` square around ``centre``: any first k runs spread over the square."""
    if n < 1:
        raise ValueError(f"need at least one position, got {n}")
    golden, root2 = (math.sqrt(5.0) - 1.0) / 2.0, math.sqrt(2.0) - 1.0
    found: list[tuple[float, float]] = []
    for i in range(50 * n):
        x = round(centre[0] + half * (2.0 * ((0.5 + i * golden) % 1.0) - 1.0), 4)
        y = round(centre[1] + half * (2.0 * ((0.5 + i * root2) % 1.0) - 1.0), 4)
        if reachable(x, y):
            found.append((x, y))
            if len(found) == n:
                return found
    raise ValueError(f"only {len(found)} of {50 * n} positions around {centre} are reachable")


def pick_reach(robot: str = "so101") -> Callable[[float, float], bool]:
    """Whether the pick's own IK (its model, placement, offsets and tolerances) reaches the
    pre, down and lift poses above a cube at (x, y) [m, base frame] from home, as the pick
    plans them: a position it cannot reach would end every run "cube out of reach?"."""
    from physai_ros.core.pick.machine import arm_ik, load_pick_config
    from physai_ros.models import load_robot_spec, place_robot

    scene = load_scene_config()
    placement = scene["robots"][robot]
    size = float(scene["soft"]["size"])
    cfg = load_pick_config(robot=robot)
    spec = load_robot_spec(robot)
    place_robot(spec, placement["base_pos"], placement["base_yaw_deg"])
    ik = arm_ik(spec.compile(), cfg)

    def reachable(x: float, y: float) -> bool:
        world = cube_world_pos((x, y), size, placement["base_pos"], placement["base_yaw_deg"])
        q = np.asarray(cfg.robot["home"], dtype=float)
        for name in ("pre", "down", "lift"):
            result = ik(world + np.array([0.0, 0.0, cfg.offsets[name]]), q)
            if not result.converged:
                return False
            q = np.asarray(result.q, dtype=float)
        return True

    return reachable


def wilson(k: int, n: int) -> tuple[float, float]:
    """Wilson 95 % interval of a success rate k / n (``physai_ros.core.stats.wilson``); nan, nan
    for n = 0 (no runs: a table row, not an error)."""
    if n == 0:
        return math.nan, math.nan
    low, high = stats.wilson(k, n)
    return low, high


@dataclass
class Run:
    """One pick's numbers: mode, position [m], outcome, the target [N per jaw] (force runs),
    the final squeeze per jaw [N] (mean of the jaws), the largest jaw force from the close on
    [N], the largest and the final edge strain [m/m], how far the soft cube's centre of mass
    rose [cm] (its own pose: the pick judges by the robot only), the close time [s sim] and
    the reason."""

    mode: str
    x: float
    y: float
    outcome: str
    target: float = math.nan
    squeeze: float = math.nan
    peak: float = math.nan
    strain_max: float = math.nan
    strain_end: float = math.nan
    lift_cm: float = math.nan
    close_s: float = math.nan
    reason: str = ""

    @property
    def held(self) -> bool:
        return self.outcome == "held"

    @property
    def error(self) -> float:
        """Final squeeze relative to the target [-] (nan without a target)."""
        return self.squeeze / self.target - 1.0 if self.target > 0 else math.nan

    @property
    def within(self) -> bool:
        return abs(self.error) <= BAND

    def passed(self, strain_limit: float) -> bool:
        return self.held and self.within and self.strain_max < strain_limit


def _rate(k: int, n: int) -> str:
    low, high = wilson(k, n)
    return f"{k}/{n} [{low:.2f}, {high:.2f}]"


def _span(values: list[float], fmt: str = "{:.2f}") -> str:
    vals = [v for v in values if math.isfinite(v)]
    if not vals:
        return "–"
    return (
        f"{fmt.format(statistics.median(vals))} ({fmt.format(min(vals))}–{fmt.format(max(vals))})"
    )


def table(runs: list[Run], strain_limit: float) -> str:
    """The summary per mode (rates with Wilson 95 % intervals over all runs; median (min–max)
    of the numbers of the runs that closed on the cube, held or not: an abort before the close
    squeezed nothing), then every run, as markdown."""
    lines = [
        f"| close | runs | pass (held, ±{BAND:.0%}, strain < {strain_limit}) | held | "
        f"within ±{BAND:.0%} | target N/jaw | closed: final squeeze N/jaw | error % | peak N/jaw | "
        "strain max | strain end | cube COM rose cm (all runs) | close s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for mode in MODES:
        rs = [r for r in runs if r.mode == mode]
        if not rs:
            continue
        n = len(rs)
        forced = mode == "force"
        closed = [r for r in rs if r.outcome not in ("aborted", "no outcome")]
        lines.append(
            f"| {mode} | {n} | "
            + (_rate(sum(r.passed(strain_limit) for r in rs), n) if forced else "–")
            + f" | {_rate(sum(r.held for r in rs), n)} | "
            + (_rate(sum(r.within for r in rs), n) if forced else "–")
            + f" | {_span([r.target for r in rs], '{:.3f}')} | {_span([r.squeeze for r in closed])}"
            + f" | {_span([100.0 * r.error for r in closed], '{:+.1f}')}"
            + f" | {_span([r.peak for r in closed])}"
            + f" | {_span([r.strain_max for r in closed], '{:.3f}')}"
            + f" | {_span([r.strain_end for r in closed], '{:.3f}')}"
            + f" | {_span([r.lift_cm for r in rs])}"
            + f" | {_span([r.close_s for r in closed])} |"
        )
    lines += [
        "",
        "| # | close | x, y [m] | outcome | final N/jaw | error % | peak N | strain max / end "
        "| COM rose cm | reason |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(runs):
        err = f"{100.0 * r.error:+.1f}" if math.isfinite(r.error) else "–"
        lines.append(
            f"| {i} | {r.mode} | {r.x:.4f}, {r.y:.4f} | {r.outcome} | {r.squeeze:.2f} | {err} | "
            f"{r.peak:.2f} | {r.strain_max:.3f} / {r.strain_end:.3f} | {r.lift_cm:.2f} | "
            f"{r.reason[:80]} |"
        )
    return "\n".join(lines)


def graph(
    mode: str,
    x: float,
    y: float,
    gain: float | None = None,
    robot: str = "so101",
    young: float | None = None,
) -> list[NodeSpec]:
    """The user's pick graph of ``robot`` with the soft cube at (x, y) [m, base frame] (Young's
    modulus ``young`` [Pa], None = config/scene.yaml's), the pick pointed at it; the SO-101's
    force mode adds the planner and its parameters (``gain``: force.gain, None = the
    product's), the Panda's is its Grasp at the hand's floor (the module docstring)."""
    scene = load_scene_config()
    placement = scene["robots"][robot]
    size = float(scene["soft"]["size"])
    world = cube_world_pos((x, y), size, placement["base_pos"], placement["base_yaw_deg"])
    away = RIGID_AWAY[robot]
    specs = pick_graph(robot=robot, sim=True, cube_x=away[0], cube_y=away[1])
    planned = mode == "force" and robot == "so101"
    for spec in specs:
        if spec.name == "sim_bridge":
            spec.parameters.update(soft_object="cube", soft_x=x, soft_y=y, soft_count=SOFT_COUNT)
            if young is not None:
                spec.parameters["soft_young"] = float(young)
        if spec.name == "pick":
            spec.parameters.update(cube_frame="none", cube_position=[float(v) for v in world])
            if mode == "force" and not planned:
                spec.parameters["close_mode"] = "force"
            if planned:
                spec.parameters.update(
                    close_mode="force",
                    force={"contact": CONTACT} | ({} if gain is None else {"gain": gain}),
                    plan={"source": "planner", "object": "soft"},
                )
    if planned:
        specs.append(NodeSpec("grasp_planner", "grasp_planner"))
    return specs


class Watcher:
    """A client node spun on a thread: the outcome, the state, the strain and the jaw forces
    from the close on."""

    def __init__(self, context, jaws: list[str]) -> None:
        import rclpy
        from geometry_msgs.msg import PoseStamped, WrenchStamped
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import DurabilityPolicy, QoSProfile
        from std_msgs.msg import Float64, String

        from physai_ros import interfaces
        from physai_ros.qos import stream_qos

        self.node = rclpy.create_node("force_bench", context=context)
        self.outcome: dict | None = None
        self.closing = False
        self.strain_max, self.strain, self.strain_end = 0.0, math.nan, math.nan
        self.z_rest, self.z, self.z_end = math.nan, math.nan, math.nan  # soft cube COM [m]
        self.jaw = dict.fromkeys(jaws, 0.0)
        self.peak = 0.0
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        sub = self.node.create_subscription
        sub(String, interfaces.PICK_OUTCOME, self.on_outcome, latched)
        sub(String, interfaces.PICK_STATE, self.on_state, latched)
        sub(Float64, interfaces.SOFT_OBJECT_STRAIN, self.on_strain, stream_qos(10))
        sub(PoseStamped, interfaces.SOFT_OBJECT_POSE, self.on_pose, stream_qos(10))
        for jaw in self.jaw:
            sub(
                WrenchStamped,
                f"{interfaces.JAW_CONTACT_PREFIX}/{jaw}",
                lambda m, j=jaw: self.on_wrench(j, m),
                stream_qos(10),
            )
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.running = True
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self) -> None:
        while self.running:
            self.executor.spin_once(timeout_sec=0.05)

    def on_outcome(self, msg) -> None:
        if self.outcome is None:
            self.outcome = json.loads(msg.data)
            self.strain_end, self.z_end = self.strain, self.z

    def on_state(self, msg) -> None:
        self.closing = self.closing or msg.data == "close"

    def on_pose(self, msg) -> None:
        self.z = float(msg.pose.position.z)
        if not self.closing:  # at rest until the close: the last pose before it
            self.z_rest = self.z

    def on_strain(self, msg) -> None:
        self.strain = float(msg.data)
        if self.closing and self.outcome is None:
            self.strain_max = max(self.strain_max, self.strain)

    def on_wrench(self, jaw: str, msg) -> None:
        f = msg.wrench.force
        self.jaw[jaw] = math.sqrt(f.x * f.x + f.y * f.y + f.z * f.z)
        if self.closing and self.outcome is None:
            self.peak = max(self.peak, self.jaw[jaw])

    def close(self) -> None:
        self.running = False
        self.thread.join()
        self.node.destroy_node()


def one_run(
    context,
    mode: str,
    x: float,
    y: float,
    log_dir: Path,
    gain: float | None = None,
    robot: str = "so101",
    young: float | None = None,
) -> Run:
    """Start the graph, watch until the outcome (or TIMEOUT), stop it; the run's numbers."""
    from physai_ros.core.pick.machine import load_pick_tree

    watcher = Watcher(context, load_pick_tree(robot=robot)[robot]["jaws"])
    try:
        dead = run_graph(graph(mode, x, y, gain, robot, young), log_dir, watcher, TIMEOUT)
    finally:
        watcher.close()
    out = watcher.outcome
    if out is None:
        return Run(mode, x, y, "no outcome", reason=f"none within {TIMEOUT} s; exited: {dead}")
    force = out.get("force") or {}
    jaws = out.get("jaw_forces_N") or []
    squeeze = force.get("squeeze_per_jaw_N")
    if squeeze is None and len(jaws) == 2:
        squeeze = 0.5 * (jaws[0] + jaws[1])
    return Run(
        mode,
        x,
        y,
        str(out.get("outcome")),
        target=float(force.get("target_N", math.nan)) if mode == "force" else math.nan,
        squeeze=math.nan if squeeze is None else float(squeeze),
        peak=watcher.peak,
        strain_max=watcher.strain_max,
        strain_end=watcher.strain_end,
        lift_cm=100.0 * (watcher.z_end - watcher.z_rest),
        close_s=float(out.get("close_s") or math.nan),
        reason=str(out.get("abort_reason") or out.get("reason") or ""),
    )


def run_graph(specs: list[NodeSpec], log_dir: Path, watcher, timeout: float) -> list[str]:
    """Start ``specs`` (``bringup.start``, logs in ``log_dir``), wait until ``watcher.outcome``
    is set, a node exits or ``timeout`` [s wall] passes, stop them; the nodes that died."""
    from physai_ros.launching.bringup import start, stop

    log_dir.mkdir(parents=True, exist_ok=True)
    procs = start(specs, log_dir)
    try:
        end = time.monotonic() + timeout
        while watcher.outcome is None and time.monotonic() < end:
            if any(p.poll() is not None for p in procs):
                break
            time.sleep(0.2)
    finally:
        stop(procs)
    return [p.args[2] for p in procs if p.returncode not in (None, 0, -2)]


def load_runs(path: Path) -> list[Run]:
    """The runs a ``--json`` file holds."""
    names = set(Run.__dataclass_fields__)
    return [
        Run(**{k: v for k, v in row.items() if k in names}) for row in json.loads(path.read_text())
    ]


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="positions per mode")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--robot", choices=("so101", "panda"), default="so101")
    parser.add_argument(
        "--young", type=float, default=None, help="soft cube Young's modulus [Pa] (scene.yaml's)"
    )
    parser.add_argument("--strain-limit", type=float, default=STRAIN_LIMIT, help="[m/m]")
    parser.add_argument("--domain", type=int, default=79, help="ROS_DOMAIN_ID of the graphs")
    parser.add_argument("--keep", type=Path, default=None, help="keep the node logs here")
    parser.add_argument("--json", type=Path, default=None, help="write every run's numbers here")
    parser.add_argument(
        "--table", type=Path, default=None, help="print the table of a --json file; run nothing"
    )
    parser.add_argument(
        "--gain",
        type=float,
        default=None,
        help="force.gain of the force runs (default: pick.yaml's)",
    )
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error(f"--runs must be at least 1, got {args.runs}")
    if args.young is not None and not 1.0 <= args.young <= 1e9:
        parser.error(f"--young must be in [1, 1e9] Pa, got {args.young}")
    if args.gain is not None and not 0.0 < args.gain <= 1.0:
        parser.error(f"--gain must be in (0, 1], got {args.gain}")
    if not 0.0 < args.strain_limit < 1.0:
        parser.error(f"--strain-limit must be in (0, 1), got {args.strain_limit}")
    return args


def progress(done: int, total: int, started: float, last: Run | None) -> None:
    width = 30
    fill = int(width * done / total)
    elapsed = time.monotonic() - started
    eta = elapsed / done * (total - done) if done else math.nan
    note = "" if last is None else f" last: {last.mode} {last.outcome} {last.squeeze:.2f} N"
    print(
        f"\r[{'#' * fill}{'.' * (width - fill)}] {done}/{total} {elapsed:.0f} s, eta {eta:.0f} s"
        f"{note}   ",
        end="" if done < total else "\n",
        file=sys.stderr,
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.table is not None:
        print(table(load_runs(args.table), args.strain_limit))
        return 0
    import rclpy

    os.environ["ROS_DOMAIN_ID"] = str(args.domain)
    soft_pos = load_scene_config()["robots"][args.robot]["soft_pos"]
    centre = (float(soft_pos[0]), float(soft_pos[1]))
    where = positions(args.runs, centre, pick_reach(args.robot))
    jobs = [(mode, x, y) for x, y in where for mode in args.modes]  # modes interleaved
    load = os.getloadavg()
    young = args.young or load_scene_config()["soft"]["young"]
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {load[0]:.1f}, "
          f"{os.cpu_count()} cores; {args.robot}, soft_count {SOFT_COUNT}, young {young:g} Pa",
          file=sys.stderr)  # fmt: skip
    context = rclpy.Context()
    rclpy.init(context=context)
    runs: list[Run] = []
    started = time.monotonic()
    progress(0, len(jobs), started, None)
    with tempfile.TemporaryDirectory(prefix="force-bench-") as tmp:
        base = args.keep or Path(tmp)
        try:
            for i, (mode, x, y) in enumerate(jobs):
                log_dir = base / f"{i:02d}-{mode}"
                runs.append(
                    one_run(context, mode, x, y, log_dir, args.gain, args.robot, args.young)
                )
                progress(i + 1, len(jobs), started, runs[-1])
                if args.json is not None:
                    rows = [dict(vars(r), error=r.error) for r in runs]
                    args.json.write_text(json.dumps(rows, indent=1))
        finally:
            rclpy.shutdown(context=context)
    load_end = os.getloadavg()
    print(table(runs, args.strain_limit))
    print(f"\nload {load[0]:.1f} at start, {load_end[0]:.1f} at end; "
          f"{time.monotonic() - started:.0f} s for {len(runs)} runs")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
