"""Benchmark: the fastest libfranka-safe quintic vs Ruckig's time-optimal move.

Both plan the same Panda moves under the same limits (``config/limits_panda.yaml``). Printed:
the duration ratio for lesson 13's move and for random moves, and the compute time per 7-joint
trajectory of each planner, all measured in this run. Last line: ``<metric> = <value>``.
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import numpy as np

from physai_ros.core.motion.limits import duration_bounds, load_limits, shortest_duration
from physai_ros.core.motion.ruckig_shape import ruckig_move
from physai_ros.core.motion.time_scaling import JointMove

LESSON_DQ = np.array([0.6, 0.4, -0.4, 0.5, 0.5, -0.4, 0.6])  # [rad] lesson 13's move
HOME = np.array([0.0, 0.0, 0.0, -1.57079, 0.0, 1.57079, -0.7853])  # Panda `home` [rad]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """CLI options of ``physai bench trajectory``."""
    parser.add_argument("--moves", type=int, default=200, help="random moves to plan")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the moves")
    parser.add_argument("--limit-set", default=None, help="named set in limits_panda.yaml")
    parser.add_argument("--output", default="physai_output/bench_trajectory", help="CSV folder")


def _per_call(fn, moves: list[JointMove]) -> float:
    """Mean wall time [s] of ``fn(move)`` over ``moves`` (best of 3 passes)."""
    best = np.inf
    for _ in range(3):
        start = time.perf_counter()
        for move in moves:
            fn(move)
        best = min(best, (time.perf_counter() - start) / len(moves))
    return best


def run(args: argparse.Namespace) -> int:
    """Plan the moves both ways, print the comparison, save a CSV of per-move durations."""
    limits = load_limits("panda", getattr(args, "limit_set", None))
    rng = np.random.default_rng(args.seed)
    span = limits.position_max - limits.position_min
    ends = limits.position_min + rng.random((args.moves, 2, 7)) * span
    moves = [JointMove(limits.joint_names, a, b) for a, b in ends]
    lesson = JointMove(limits.joint_names, HOME, HOME + LESSON_DQ)

    t_quintic = np.array([shortest_duration(m, "quintic", limits) for m in moves])
    t_ruckig = np.array([ruckig_move(m, limits).duration for m in moves])
    ratio = t_quintic / t_ruckig
    lesson_ratio = (
        shortest_duration(lesson, "quintic", limits) / ruckig_move(lesson, limits).duration
    )

    closed = _per_call(lambda m: duration_bounds(m, "quintic", limits).max(), moves)
    verified = _per_call(lambda m: shortest_duration(m, "quintic", limits), moves)
    optimal = _per_call(lambda m: ruckig_move(m, limits), moves)

    print(f"Panda, limit set {limits.set_name!r}, {args.moves} random moves (seed {args.seed})")
    print()
    print(
        "| planner | lesson move T [s] | median T ratio to ruckig | min | max "
        "| compute per trajectory [µs] |"
    )
    print("|---|---|---|---|---|---|")
    q_lesson = shortest_duration(lesson, "quintic", limits)
    r_lesson = ruckig_move(lesson, limits).duration
    print(
        f"| quintic, closed form | {q_lesson:.3f} | {np.median(ratio):.3f} | {ratio.min():.3f} | "
        f"{ratio.max():.3f} | {closed * 1e6:.1f} |"
    )
    print(f"| quintic, closed form + sampled check | {q_lesson:.3f} | | | | {verified * 1e6:.1f} |")
    print(f"| ruckig (time-optimal) | {r_lesson:.3f} | 1.000 | | | {optimal * 1e6:.1f} |")
    print()
    print(f"compute time ruckig / quintic closed form = {optimal / closed:.2f}")
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "durations.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["move", "quintic_s", "ruckig_s", "ratio"])
        w.writerows(
            [i, a, b, a / b] for i, (a, b) in enumerate(zip(t_quintic, t_ruckig, strict=True))
        )
    print(f"quintic_over_ruckig_duration = {lesson_ratio:.3f}")
    return 0
