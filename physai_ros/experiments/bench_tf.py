"""Benchmark: the frame-tree walk for every SO-101 frame vs ``mujoco.mj_kinematics``.

A TF publisher calls ``FrameTree.parent_transforms(qpos)`` once per joint-state message; this
measures its per-call cost against MuJoCo's own forward kinematics on the same model, in the
same run, so the ratio does not depend on the machine. Last line: ``tf_walk_vs_mj_kinematics``.
"""

from __future__ import annotations

import argparse
import timeit
from collections.abc import Callable
from pathlib import Path

import mujoco
import numpy as np

from physai_ros.core.frame_tree import FrameTree

REPEATS = 7  # best-of: the minimum is the least disturbed by other processes


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--model-path`` (SO-101 folder or MJCF), ``--calls`` per timing, ``--output``."""
    parser.add_argument("--model-path", default=None, help="SO-101 model (default: embedded)")
    parser.add_argument("--calls", type=int, default=2000, help="calls per timing repeat")
    parser.add_argument("--output", default="physai_output/bench_tf", help="directory for CSV")


def _per_call(func: Callable[[], object], calls: int) -> float:
    """Best-of-``REPEATS`` seconds per call."""
    return min(timeit.repeat(func, number=calls, repeat=REPEATS)) / calls


def run(args: argparse.Namespace) -> int:
    """Print per-call costs [µs] and the ratio walk / mj_kinematics."""
    from physai_ros.experiments.lesson07 import load_spec

    model = load_spec(args.model_path).compile()
    data = mujoco.MjData(model)
    tree = FrameTree(model)
    rng = np.random.default_rng(0)
    data.qpos[:] = rng.uniform(-1.0, 1.0, model.nq)
    qpos = data.qpos.copy()
    calls = max(1, int(args.calls))
    rows = [
        ("mujoco.mj_kinematics", _per_call(lambda: mujoco.mj_kinematics(model, data), calls)),
        ("FrameTree.parent_transforms", _per_call(lambda: tree.parent_transforms(qpos), calls)),
        ("FrameTree.world_transforms", _per_call(lambda: tree.world_transforms(qpos), calls)),
    ]
    baseline = rows[0][1]
    print(f"SO-101: {model.nbody} bodies, {len(tree.frames)} frames, nq = {model.nq}\n")
    print("| call | per call (µs) | ratio to mj_kinematics |\n|---|---|---|")
    for name, seconds in rows:
        print(f"| {name} | {seconds * 1e6:.2f} | {seconds / baseline:.1f} |")
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "bench_tf.csv").open("w") as f:
        f.write("call,per_call_us,ratio\n")
        f.writelines(f"{n},{s * 1e6:.3f},{s / baseline:.3f}\n" for n, s in rows)
    print(f"tf_walk_vs_mj_kinematics = {rows[1][1] / baseline:.2f}")
    return 0
