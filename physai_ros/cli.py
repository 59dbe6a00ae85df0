"""``physai``: the user-facing command.

    physai lesson 07|13|16|soft [...]   a lesson's tables as Markdown (CSV/PNG under --output)
    physai bench <area> [...]      benchmark ratios measured in one run (last line: metric = value),
                                   or a judged trial bench (tables with Wilson intervals)
    physai bringup <graph> [...]   start a node graph where launch_ros is absent
    physai trials [...]            record pick trials (real or emulated arm) with Wilson intervals
    physai plan [...]              plan a grasp of a soft object (seed 003)
    physai record [...]            scripted, physics-verified picks as a LeRobot dataset
    physai replay DATASET          a recorded dataset's actions replayed in the simulation
    physai convert BAG... --output DIR   bags of picks (MCAP) as a LeRobot dataset

Lessons, benchmarks and trial benches are modules in ``physai_ros.experiments`` (the trial
benches in ``physai_ros.experiments.trials``) exposing ``add_arguments(parser)`` and
``run(args) -> int``; they are mounted here by name so the CLI grows with the package without
editing this file's logic.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Sequence

from physai_ros.errors import PhysaiError

LESSONS = {
    "07": ("physai_ros.experiments.lesson07", "rigid transforms and frame trees (SO-101)"),
    "13": ("physai_ros.experiments.lesson13", "trajectory generation within libfranka limits"),
    "16": ("physai_ros.experiments.lesson16", "grasping and the scripted pick (SO-101)"),
    "soft": ("physai_ros.experiments.lesson_soft", "cap vs planned-force close on soft cubes"),
}
BENCHMARKS = {
    "tf": ("physai_ros.experiments.bench_tf", "TF node cost vs mj_kinematics"),
    "trajectory": ("physai_ros.experiments.bench_trajectory", "fastest quintic vs ruckig"),
    "sim": ("physai_ros.experiments.bench_sim", "sim bridge real-time factor vs raw mj_step"),
    "pick": ("physai_ros.experiments.bench_pick", "240-grasp sweep vs raw mj_step"),
    "bus": ("physai_ros.experiments.bench_bus", "servo bus loop rate vs byte-time limit"),
    "plan": ("physai_ros.experiments.bench_plan", "contact selection vs brute force, closing cost"),
    "cameras": ("physai_ros.experiments.bench_cameras", "simulated camera images vs the physics"),
    "record": (
        "physai_ros.experiments.bench_record",
        "recorded episodes per core, and their parts",
    ),
    "stream": (
        "physai_ros.experiments.bench_stream",
        "joint acceleration, jerk and lag per streaming mode, sim and emulated servos",
    ),
}
TRIALS = {
    "crash": (
        "physai_ros.experiments.trials.crash",
        "SIGKILL each node of the sim pick graph at each state; how it rejoins",
    ),
    "force-close": (
        "physai_ros.experiments.trials.force_close",
        "planned-force vs cap closes of the soft cube over ROS (SO-101 or Panda)",
    ),
    "hand-pick": (
        "physai_ros.experiments.trials.hand_pick",
        "three-finger hand picks of the soft sphere over ROS",
    ),
    "so101-force": (
        "physai_ros.experiments.trials.so101_force",
        "force picks of the soft cube by the SO-101 on the bus emulator",
    ),
    "pick-goals": (
        "physai_ros.experiments.trials.pick_goals",
        "many pick-and-place goals to the /pick action in one simulated graph",
    ),
    "policy-replay": (
        "physai_ros.experiments.trials.policy_replay",
        "recorded picks replayed through the policy runner over ROS, judged by the cube",
    ),
    "teleop": (
        "physai_ros.experiments.trials.teleop",
        "a leader and a follower on two bus emulators: latency and tracking per stream mode",
    ),
    "net": (
        "physai_ros.experiments.trials.net",
        "the pick split across two network namespaces: loss sweep, listeners (root)",
    ),
}


def _available(table: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """Only the entries whose module is present in this version of the package."""
    return {k: v for k, v in table.items() if importlib.util.find_spec(v[0]) is not None}


def _mount(subparsers: argparse._SubParsersAction, name: str, module: str, help_: str) -> None:
    mod = importlib.import_module(module)
    parser = subparsers.add_parser(
        name,
        help=help_,
        description=(mod.__doc__ or help_).strip().split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    mod.add_arguments(parser)
    parser.set_defaults(_run=mod.run)


def build_parser() -> argparse.ArgumentParser:
    """The whole command tree (imports each available lesson/benchmark/trial module)."""
    from physai_ros.launching import bringup

    parser = argparse.ArgumentParser(
        prog="physai",
        description="physai_ros: lessons, benchmarks and node graphs for the SO-101 and Panda.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    lesson = commands.add_parser(
        "lesson", help="reproduce a lesson's tables", description="Reproduce a lesson's tables."
    )
    lessons = lesson.add_subparsers(dest="lesson", metavar="LESSON", required=True)
    for name, (module, help_) in _available(LESSONS).items():
        _mount(lessons, name, module, help_)

    bench = commands.add_parser(
        "bench",
        help="run a speed benchmark (ratios) or a judged trial bench (Wilson intervals)",
        description=(
            f"Speed benchmarks ({', '.join(BENCHMARKS)}) print ratios measured in one run against "
            "a baseline; their last line is 'metric = value'. Judged trial benches "
            f"({', '.join(TRIALS)}) run the product's node graphs trial after trial and print "
            "tables, with Wilson 95 % intervals where a rate is judged."
        ),
    )
    areas = bench.add_subparsers(dest="area", metavar="AREA", required=True)
    for name, (module, help_) in _available(BENCHMARKS | TRIALS).items():
        _mount(areas, name, module, help_)

    up = commands.add_parser(
        "bringup",
        help="start a node graph without launch_ros",
        description=bringup.__doc__.strip().split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    bringup.add_arguments(up)
    up.set_defaults(_run=bringup.run)

    _mount(
        commands,
        "plan",
        "physai_ros.experiments.grasp_plan",
        "plan a grasp of a soft object: contacts, pre-grasp, force targets (seed 003)",
    )
    _mount(
        commands,
        "record",
        "physai_ros.datasets.record",
        "record scripted, physics-verified picks as a LeRobot dataset",
    )
    _mount(
        commands,
        "replay",
        "physai_ros.datasets.replay",
        "replay a recorded dataset's actions in the simulation and compare outcomes",
    )
    _mount(
        commands,
        "convert",
        "physai_ros.datasets.convert",
        "convert rosbag2 bags (MCAP) of picks into a LeRobot dataset",
    )
    _mount(
        commands,
        "trials",
        "physai_ros.experiments.real_trials",
        "record pick trials and their Wilson interval (the lesson's real-arm procedure)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``physai`` console script."""
    args = build_parser().parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except PhysaiError as exc:
        print(f"physai: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
