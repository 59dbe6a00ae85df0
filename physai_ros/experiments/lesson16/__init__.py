"""Lesson 16: grasping and the scripted pick, run lockstep with MuJoCo (no weld, real contacts).

``physai lesson 16 [--sweep nominal|A|B|C|all] [--model-path DIR] [--jobs N]``

The pure :class:`~physai_ros.core.pick.machine.PickMachine` is driven in-process: command → mj_step
→
sense (jaw contact forces, jaw speed, cube pose) → update, deterministic for a given model.
Sweeps: A friction μ, B jaw torque cap, C cube mass; each row is 10 cube positions uniform in a
2×2 cm square around (22, 0) cm (seed 0), scored with the physical outcome test. Tables and
figures: :mod:`physai_ros.experiments.lesson16.report`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from physai_ros.core.pick.machine import load_pick_config
from physai_ros.errors import InvalidInput
from physai_ros.experiments.lesson16.report import nominal_table, plot, save_table, table
from physai_ros.experiments.lesson16.sweep import (
    POSITIONS,
    cube_positions,
    nominal,
    run_sweep,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sweep", choices=["nominal", "A", "B", "C", "all"], default="all")
    parser.add_argument(
        "--model-path",
        default=None,
        help="reference SO-101 folder or scene file (default: embedded model)",
    )
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--positions", type=int, default=POSITIONS, help="cube positions per row")
    parser.add_argument("--output", default="physai_output/lesson16", help="output directory")
    parser.add_argument(
        "--config", default=None, help="pick config YAML (default config/pick.yaml)"
    )


def run(args: argparse.Namespace) -> int:
    if args.jobs < 1 or args.positions < 1:
        raise InvalidInput(f"--jobs and --positions must be ≥ 1, got {args.jobs}, {args.positions}")
    cfg = load_pick_config(args.config)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    res = nominal(args.model_path, cfg)
    report = [save_table(out, "nominal", *nominal_table(res))]
    print(report[-1])
    names = {"all": ["A", "B", "C"], "nominal": []}.get(args.sweep, [args.sweep])
    positions = cube_positions(args.positions)
    stats = {}
    for name in names:
        stats[name] = run_sweep(name, args.model_path, cfg, positions, args.jobs)
        report.append(save_table(out, name, *table(name, stats[name])))
        print(report[-1])
    (out / "lesson16.md").write_text("\n".join(report))
    if stats:
        plot(out, stats)
    return 0
