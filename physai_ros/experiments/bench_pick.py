"""Benchmark: the lesson-16 sweep's wall time against raw ``mj_step`` for the same steps.

``physai bench pick [--model-path DIR] [--positions N]``

The overhead ratio says how much the Python around the physics (the pure PickMachine, contact
sensing, IK at plan time) costs on one core; target ≤ 1.3×. The baseline steps each row's own
model from the same start and replays the controls the pick sent, step for step, so the physics
(contacts, solver iterations) is the same and only the Python around it is measured.
The speed-up with 2 jobs is measured in the same run.
"""

from __future__ import annotations

import argparse
import time

import mujoco
import numpy as np

from physai_ros.core.pick import load_pick_config
from physai_ros.experiments.lesson16 import (
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
    parser.add_argument("--output", default="physai_output/bench_pick", help="unused; for symmetry")


def run(args: argparse.Namespace) -> int:
    cfg = load_pick_config()
    positions = cube_positions(args.positions)
    rows = [row for name in SWEEPS for _, row in sweep_rows(name)]
    jobs = [(args.model_path, row, pos, cfg) for row in rows for pos in positions]
    for row in rows:  # compile outside the timed region, in this process (jobs=1 path)
        model_for(args.model_path, row)

    start = time.perf_counter()
    results = run_trials(jobs, workers=1, progress=False)
    one_core = time.perf_counter() - start
    steps = sum(r.steps for r in results)

    baseline = 0.0  # raw mj_step replaying each pick's own controls, same start
    for row in rows:
        model = model_for(args.model_path, row)
        for pos in positions:
            log: list = []
            run_pick(model, pos, cfg, ctrl_log=log)
            data = mujoco.MjData(model)
            data.qpos[model.joint("cube").qposadr[0] + np.arange(3)] = pos
            t0 = time.perf_counter()
            for ctrl in log:
                data.ctrl[:] = ctrl
                mujoco.mj_step(model, data)
            baseline += time.perf_counter() - t0

    start = time.perf_counter()
    run_trials(jobs, workers=2, progress=False)
    two_jobs = time.perf_counter() - start

    ratio = one_core / baseline
    print(f"grasps: {len(jobs)}, physics steps: {steps}")
    print(f"sweep, 1 job: {one_core:.2f} s ({steps / one_core:.0f} steps/s)")
    print(f"raw mj_step, same steps: {baseline:.2f} s ({steps / baseline:.0f} steps/s)")
    print(f"sweep, 2 jobs: {two_jobs:.2f} s, speed-up {one_core / two_jobs:.2f}×")
    print(f"target overhead ≤ 1.3×: {'met' if ratio <= 1.3 else 'NOT met'}")
    print(f"pick_overhead_ratio = {ratio:.3f}")
    return 0


if __name__ == "__main__":
    _parser = argparse.ArgumentParser(description=__doc__)
    add_arguments(_parser)
    raise SystemExit(run(_parser.parse_args()))
