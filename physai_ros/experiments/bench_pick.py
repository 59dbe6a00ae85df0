"""Benchmark: the lesson-16 sweep's wall time against raw ``mj_step`` for the same steps.

``physai bench pick [--model-path DIR] [--positions N] [--sweeps A,B,C]``

The overhead ratio says how much the Python around the physics (the pure PickMachine, contact
sensing, IK at plan time) costs on one core; target ≤ 1.3×. The baseline steps each row's own
model from the same start and replays the controls the pick sent, step for step, so the physics
(contacts, solver iterations) is the same and only the Python around it is measured. Each pick
and its replay run back to back and are timed in CPU time, so other work on the machine does
not skew the ratio. The speed-up with 2 jobs (wall time) is measured in the same run.
"""

from __future__ import annotations

import argparse
import time

import mujoco
import numpy as np

from physai_ros.core.pick.machine import load_pick_config
from physai_ros.errors import InvalidInput
from physai_ros.experiments.lesson16.sweep import (
    POSITIONS,
    SWEEPS,
    cube_positions,
    model_for,
    run_pick,
    run_trials,
    sweep_rows,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model-path", default=None, help="reference SO-101 folder or scene file")
    parser.add_argument("--positions", type=int, default=POSITIONS, help="cube positions per row")
    parser.add_argument(
        "--sweeps",
        default=",".join(SWEEPS),
        help="lesson-16 sweeps whose rows are picked, comma-separated (fewer: a quicker check)",
    )
    parser.add_argument("--output", default="physai_output/bench_pick", help="unused; for symmetry")


def _replay(model: mujoco.MjModel, pos, cfg, log: list[np.ndarray]) -> tuple[float, float]:
    """Raw ``mj_step`` over a pick's recorded controls from the pick's own start state.

    Returns (CPU seconds, wall seconds) of the stepping alone.
    """
    data = mujoco.MjData(model)
    data.qpos[model.joint("cube").qposadr[0] + np.arange(3)] = pos
    for name, q in zip(cfg.robot["arm_joints"], cfg.robot["home"], strict=True):
        data.qpos[model.joint(name).qposadr[0]] = q
    mujoco.mj_forward(model, data)
    ctrl, step = data.ctrl, mujoco.mj_step
    cpu, wall = time.process_time(), time.perf_counter()
    for row in log:
        ctrl[:] = row
        step(model, data)
    return time.process_time() - cpu, time.perf_counter() - wall


def run(args: argparse.Namespace) -> int:
    names = [n.strip() for n in args.sweeps.split(",") if n.strip()]
    if args.positions < 1 or not names or set(names) - set(SWEEPS):
        raise InvalidInput(
            f"--positions must be ≥ 1 and --sweeps a list of {sorted(SWEEPS)}, "
            f"got {args.positions}, {args.sweeps!r}"
        )
    cfg = load_pick_config()
    positions = cube_positions(args.positions)
    rows = [row for name in names for _, row in sweep_rows(name)]
    jobs = [(args.model_path, row, pos, cfg) for row in rows for pos in positions]
    for row in rows:  # compile outside the timed region, in this process (jobs=1 path)
        model_for(args.model_path, row)

    # Each pick is timed and then replayed right away, so a load change on the machine hits
    # both sides alike; the ratio uses CPU time of this process (other processes' time slices
    # do not count), the speed-up uses wall time.
    pick_cpu = pick_wall = raw_cpu = raw_wall = 0.0
    steps = 0
    for _, row, pos, _ in jobs:
        model = model_for(args.model_path, row)
        cpu, wall = time.process_time(), time.perf_counter()
        result = run_pick(model, pos, cfg)
        pick_cpu += time.process_time() - cpu
        pick_wall += time.perf_counter() - wall
        steps += result.steps
        log: list[np.ndarray] = []
        run_pick(model, pos, cfg, ctrl_log=log)
        cpu, wall = _replay(model, pos, cfg, log)
        raw_cpu += cpu
        raw_wall += wall

    start = time.perf_counter()
    run_trials(jobs, workers=2, progress=False)
    two_jobs = time.perf_counter() - start

    ratio = pick_cpu / raw_cpu
    print(f"grasps: {len(jobs)}, physics steps: {steps}")
    rate = steps / pick_cpu
    print(f"sweep, 1 job: {pick_cpu:.2f} s CPU, {pick_wall:.2f} s wall ({rate:.0f} steps/s)")
    print(f"raw mj_step, same steps: {raw_cpu:.2f} s CPU, {raw_wall:.2f} s wall")
    print(f"sweep, 2 jobs: {two_jobs:.2f} s wall, speed-up {pick_wall / two_jobs:.2f}× vs 1 job")
    print(f"target overhead ≤ 1.3×: {'met' if ratio <= 1.3 else 'NOT met'}")
    print(f"pick_overhead_ratio = {ratio:.3f} (CPU; wall {pick_wall / raw_wall:.3f})")
    return 0


if __name__ == "__main__":
    _parser = argparse.ArgumentParser(description=__doc__)
    add_arguments(_parser)
    raise SystemExit(run(_parser.parse_args()))
