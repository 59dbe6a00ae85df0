"""Record pick trials and their success interval: the lesson's real-arm trial procedure.

``physai trials --cubes 0.22,0.0 0.20,0.02 --per-cube 20``

Real arm: start the pick graph (``pick.launch.py sim:=false``) once per trial, with the cube
placed at the position being tested; this command listens to ``/pick/outcome`` (latched JSON
from the pick node) and appends each outcome to a CSV, trial by trial, so an interrupted
session resumes where it stopped. It never judges success itself: the pick node's physical test
(cube bottom ≥ 4 cm above the table and in both jaws) does. Re-placing the cube between
trials is the operator's job.

``--emulated`` runs every trial itself against the emulated bus (``emulated_pick_graph``:
bus emulator + real driver + TF + pick), which is how the 10-run number of issue 7 is made.

The summary is k/n per cube position and overall, with the Wilson 95 % interval; the last line
is ``held_rate = <k/n>``.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
import time
from pathlib import Path

from physai_ros.core.grasp import wilson


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cubes",
        nargs="+",
        default=["0.22,0.0"],
        metavar="X,Y",
        help="fixed cube positions in the base frame [m]",
    )
    parser.add_argument("--per-cube", type=int, default=20, help="trials per cube position")
    parser.add_argument("--csv", type=Path, default=Path("physai_output/real_trials.csv"))
    parser.add_argument("--emulated", action="store_true", help="run each trial on the emulator")
    parser.add_argument("--no-relax", action="store_true", help="keep the full gripper torque")
    parser.add_argument("--timeout", type=float, default=90.0, help="[s] per trial")


def wait_outcome(timeout: float) -> dict | None:
    """The next /pick/outcome (latched), or None after ``timeout`` [s wall]."""
    import rclpy
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from std_msgs.msg import String

    from physai_ros import interfaces

    got: list[str] = []
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = rclpy.create_node("real_trials", context=context)
        qos = QoSProfile(
            depth=1,
            durability=DurabilityPolicy.TRANSIENT_LOCAL,
            reliability=ReliabilityPolicy.RELIABLE,
        )
        node.create_subscription(String, interfaces.PICK_OUTCOME, lambda m: got.append(m.data), qos)
        from rclpy.executors import SingleThreadedExecutor

        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        deadline = time.monotonic() + timeout
        while not got and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)
    return json.loads(got[0]) if got else None


def emulated_trial(cube: tuple[float, float], relax: bool, timeout: float) -> dict | None:
    from physai_ros.bringup import start, stop
    from physai_ros.graph import emulated_pick_graph

    with tempfile.TemporaryDirectory(prefix="physai-emulated-pick-") as tmp:
        d = Path(tmp)
        specs = emulated_pick_graph(
            port_link=str(d / "port"),
            calibration_file=str(d / "cal.json"),
            cube_x=cube[0],
            cube_y=cube[1],
            relax=relax,
        )
        procs = start(specs, d)
        try:
            return wait_outcome(timeout)
        finally:
            stop(procs)


def run(args: argparse.Namespace) -> int:
    cubes = [tuple(float(v) for v in c.split(",")) for c in args.cubes]
    args.csv.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    if args.csv.is_file():
        with args.csv.open() as f:
            rows = list(csv.DictReader(f))
    fields = ["cube_x", "cube_y", "trial", "outcome", "lift_cm", "close_s", "squeeze_N"]
    new_file = not args.csv.is_file()
    with args.csv.open("a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        if new_file:
            writer.writeheader()
        for cube in cubes:
            done = sum(1 for r in rows if (float(r["cube_x"]), float(r["cube_y"])) == cube)
            for trial in range(done, args.per_cube):
                if args.emulated:
                    report = emulated_trial(cube, not args.no_relax, args.timeout)
                else:
                    print(
                        f"cube {cube}, trial {trial + 1}/{args.per_cube}: start the pick",
                        file=sys.stderr,
                        flush=True,
                    )
                    report = wait_outcome(args.timeout)
                report = report or {"outcome": "no outcome (timeout)"}
                row = {
                    "cube_x": cube[0],
                    "cube_y": cube[1],
                    "trial": trial + 1,
                    "outcome": report["outcome"],
                    "lift_cm": report.get("lift_cm"),
                    "close_s": report.get("close_s"),
                    "squeeze_N": report.get("squeeze_N"),
                }
                writer.writerow(row)
                f.flush()
                rows.append({k: str(v) for k, v in row.items()})
                print(f"cube {cube} trial {trial + 1}: {row['outcome']}", flush=True)
    print("| cube (x, y) [m] | held | Wilson 95 % |\n|---|---|---|")
    total_k = total_n = 0
    for cube in cubes:
        mine = [r for r in rows if (float(r["cube_x"]), float(r["cube_y"])) == cube]
        k, n = sum(r["outcome"] == "held" for r in mine), len(mine)
        total_k, total_n = total_k + k, total_n + n
        if n:
            low, high = wilson(k, n)
            print(f"| {cube} | {k}/{n} | [{low:.2f}, {high:.2f}] |")
    if total_n:
        low, high = wilson(total_k, total_n)
        print(f"| all | {total_k}/{total_n} | [{low:.2f}, {high:.2f}] |")
    print(f"held_rate = {total_k / max(total_n, 1):.3f}")
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_arguments(p)
    raise SystemExit(run(p.parse_args()))
