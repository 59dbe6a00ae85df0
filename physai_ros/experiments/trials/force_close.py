"""The force close's judged run as a bench: planned-force vs cap-based closes of the soft cube,
over ROS.

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

    physai bench force-close --runs 10         # both modes, 30-40 s a run at load 5-8
    physai bench force-close --runs 3 --modes force --keep /tmp/force_bench
    physai bench force-close --robot panda --young 5e5 --runs 10
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from physai_ros.errors import InvalidInput
from physai_ros.experiments.trials.force_runs import (
    MODES,
    STRAIN_LIMIT,
    Run,
    load_runs,
    positions,
    progress,
    table,
)
from physai_ros.launching.graph import NodeSpec, pick_graph
from physai_ros.launching.process_graph import run_graph
from physai_ros.sim.scene import cube_world_pos, load_scene_config

SOFT_COUNT = 3  # the soft cube's resolution (vertices per edge): STRAIN_LIMIT's (force_runs)
CONTACT = 1.5  # [N per jaw] force.contact of the force runs (below a 2.4 N target's band)
RIGID_AWAY = {  # [m] the rigid cube, base frame, out of the way: 18 / 25 cm from the soft one
    "so101": (0.22, -0.10),
    "panda": (0.5, -0.15),
}
TIMEOUT = 240.0  # [s wall] graph start + plan + pick on a loaded machine


def add_arguments(parser: argparse.ArgumentParser) -> None:
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
        help="force.gain of the force runs (pick.yaml's if not given)",
    )


def check(args: argparse.Namespace) -> None:
    """Refuse arguments out of their range (InvalidInput, naming the option)."""
    if args.runs < 1:
        raise InvalidInput(f"--runs must be at least 1, got {args.runs}")
    if args.young is not None and not 1.0 <= args.young <= 1e9:
        raise InvalidInput(f"--young must be in [1, 1e9] Pa, got {args.young}")
    if args.gain is not None and not 0.0 < args.gain <= 1.0:
        raise InvalidInput(f"--gain must be in (0, 1], got {args.gain}")
    if not 0.0 < args.strain_limit < 1.0:
        raise InvalidInput(f"--strain-limit must be in (0, 1), got {args.strain_limit}")


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
        from physai_ros_interfaces.msg import PickOutcome
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
        sub(PickOutcome, interfaces.PICK_OUTCOME, self.on_outcome, latched)
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
        from physai_ros.nodes._pick_outcome import outcome_fields

        if self.outcome is None:
            self.outcome = outcome_fields(msg)
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
    jaws = out["jaw_forces"]
    squeeze = out["squeeze_per_jaw"]
    if math.isnan(squeeze) and len(jaws) == 2:
        squeeze = 0.5 * (jaws[0] + jaws[1])
    return Run(
        mode,
        x,
        y,
        out["outcome"],
        target=out["force_target"] if mode == "force" else math.nan,
        squeeze=squeeze,
        peak=watcher.peak,
        strain_max=watcher.strain_max,
        strain_end=watcher.strain_end,
        lift_cm=100.0 * (watcher.z_end - watcher.z_rest),
        close_s=out["close_time"],
        reason=out["reason"],
    )


def run(args: argparse.Namespace) -> int:
    check(args)
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
