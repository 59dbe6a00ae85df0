"""Benchmark: grasp planning — contact selection vs brute force, the closing simulation's cost.

``physai bench plan [--points N] [--subset N]``

Contact selection (Algorithm 1) on a sphere of ``--points`` surface points is timed against
brute force over every triangle of a ``--subset``-point sphere (brute force on 5,000 points
would take C(5000, 3) ≈ 2·10¹⁰ evaluations); both are run on the subset too, and must return
the same triangle. The speed-up printed is brute force's time per evaluated triangle times
C(n, 3), over the pruned search's time, on the same machine in the same run. Then one closing
simulation (a soft cube squeezed by two tips) is timed, and the same cube squeezed 2 mm by two
spheres is simulated by our lattice and by MuJoCo's flexcomp (times and the force difference).
Last line: ``selection_speedup``.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from physai_ros.core.grasp_planning.closing import Finger, close, node_contact_stiffness
from physai_ros.core.grasp_planning.contact_law import contact_law
from physai_ros.core.grasp_planning.contacts import select_triangle, select_triangle_brute
from physai_ros.core.grasp_planning.lattice import build_network, material
from physai_ros.core.grasp_planning.mujoco_flex import Setup, flex_squeeze, lattice_squeeze
from physai_ros.core.grasp_planning.objects import box, ellipsoid


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--points", type=int, default=5000, help="surface points, pruned search")
    parser.add_argument("--subset", type=int, default=150, help="surface points, brute force")
    parser.add_argument("--mu", type=float, default=0.5, help="friction coefficient")
    parser.add_argument("--output", default="physai_output/bench_plan", help="unused")


def _sphere(points: int) -> object:
    """A 6 cm sphere with about ``points`` Fibonacci surface samples."""
    radius = 0.03
    return ellipsoid((radius,) * 3, math.sqrt(4 * math.pi * radius**2 / points))


def run(args: argparse.Namespace) -> int:
    small, large = _sphere(args.subset), _sphere(args.points)
    start = time.process_time()
    brute = select_triangle_brute(small, args.mu)
    brute_time = time.process_time() - start
    fast_small = select_triangle(small, args.mu)
    same = fast_small.indices == brute.indices and fast_small.q2 == brute.q2
    start = time.perf_counter()
    cpu = time.process_time()
    fast = select_triangle(large, args.mu)
    fast_wall, fast_cpu = time.perf_counter() - start, time.process_time() - cpu
    per_triangle = brute_time / brute.evaluated
    all_large = math.comb(len(large.points), 3)
    speedup = per_triangle * all_large / fast_cpu
    print(
        f"brute force: {len(small.points)} points, {brute.evaluated} triangles, "
        f"{brute_time:.2f} s CPU ({per_triangle * 1e6:.2f} µs per triangle)"
    )
    print(
        f"pruned search on the same {len(small.points)} points: same triangle {same} "
        f"({fast_small.evaluated} triangles evaluated)"
    )
    print(
        f"pruned search: {len(large.points)} points, {fast.evaluated} triangles evaluated of "
        f"{all_large:.3g}, {fast_cpu:.3f} s CPU, {fast_wall:.3f} s wall; Q1 {fast.q1:.4f} rad, "
        f"Q2 {fast.q2 * 1e3:.4f} mm; under 1 s: {'yes' if fast_wall < 1.0 else 'NO'}"
    )

    mat = material(5e4, 0.3)
    net = build_network(box((0.04, 0.04, 0.04), 0.004), mat, 0.05, 0.04 / 5)
    law = contact_law(node_contact_stiffness(net), 0.6, 0.3)
    radius = 0.01
    fingers = [
        Finger(np.array([s * (0.02 + radius + 0.004), 0.0, 0.0]), np.array([-s, 0.0, 0.0]), radius)
        for s in (-1.0, 1.0)
    ]
    start = time.process_time()
    result = close(net, fingers, law)
    closing_cpu = time.process_time() - start
    rigid = 0.05 * 9.81 / 0.6
    print(
        f"closing: {len(net.x0)} nodes, {result.steps} finger steps, {closing_cpu:.2f} s CPU; "
        f"squeeze {result.squeeze.sum():.3f} N vs rigid least {rigid:.3f} N"
    )
    flex_setup = Setup()
    flex = flex_squeeze(flex_setup, (0.002,), settle=0.2)
    ours = lattice_squeeze(flex_setup, (0.002,))
    print(
        f"squeeze 2 mm, 40 mm cube, 4 cells: ours {ours.force[0]:.3f} N, face "
        f"{ours.indentation[0] * 1e3:.2f} mm, {ours.seconds:.2f} s wall; MuJoCo flex "
        f"{flex.force[0]:.3f} N, face {flex.indentation[0] * 1e3:.2f} mm, "
        f"{flex.seconds:.2f} s wall; force difference "
        f"{(flex.force[0] / ours.force[0] - 1) * 100:+.1f} %"
    )
    print(f"selection_speedup = {speedup:.3g}")
    return 0 if same else 1
