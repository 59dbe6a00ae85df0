"""Benchmark: what the simulated cameras cost against the physics they show.

One sim second of the SO-101 pick scene measured three ways in the same run, so the ratios do
not depend on the machine: the physics alone (``mj_step`` at the scene's 2 ms, the baseline),
one camera's images at ``--rate`` per sim second, and every ``--cameras`` camera's (rendered
from one scene update, ``physai_ros.sim.render``). Their sum over the physics is how much slower
than the physics alone the sim bridge runs with those cameras on; above 1 / real_time_factor it
cannot keep real time. The OpenGL is the one ``physai_ros.sim.render`` chooses (EGL, else
OSMesa): name it with ``MUJOCO_GL`` to compare. Last line: ``cameras_vs_physics``.
"""

from __future__ import annotations

import argparse
import os
import time

import mujoco

REPEATS = 5  # best-of: the least disturbed by other processes


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--cameras``, ``--rate``, ``--width``, ``--height``, ``--quality``."""
    parser.add_argument(
        "--cameras", default="front_cam,wrist_cam", help="comma-separated scene cameras"
    )
    parser.add_argument("--rate", type=float, default=10.0, help="images per sim second [Hz]")
    parser.add_argument("--width", type=int, default=320, help="image width [px]")
    parser.add_argument("--height", type=int, default=240, help="image height [px]")
    parser.add_argument(
        "--quality", choices=("full", "fast"), default="full", help="render quality (Cameras)"
    )


def _best(func, repeats: int = REPEATS) -> float:
    """Best-of-``repeats`` wall seconds of ``func()``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)


def run(args: argparse.Namespace) -> int:
    """Print the costs per sim second [ms] and their ratios to the physics."""
    from physai_ros.errors import InvalidInput
    from physai_ros.sim.render import Cameras, camera_names
    from physai_ros.sim.scene import build_scene

    names = camera_names(args.cameras)
    if not names or args.rate <= 0 or args.width < 16 or args.height < 16:
        raise InvalidInput("give --cameras, --rate > 0 and a size of at least 16 x 16 px")
    model = build_scene("so101")
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    steps = round(1.0 / model.opt.timestep)
    frames = max(1, round(args.rate))

    def physics() -> None:
        for _ in range(steps):
            mujoco.mj_step(model, data)

    one = Cameras(model, names[:1], args.height, args.width, quality=args.quality)
    every = Cameras(model, names, args.height, args.width, quality=args.quality)
    try:
        one.render(data)  # the first image compiles shaders and uploads the textures
        every.render(data)
        rows = [
            ("physics: mj_step, one sim second", _best(physics)),
            (
                f"{names[0]}: {frames} images",
                _best(lambda: [one.render(data) for _ in range(frames)]),
            ),
            (
                f"{len(names)} cameras: {frames} images each",
                _best(lambda: [every.render(data) for _ in range(frames)]),
            ),
        ]
        backend = every.backend
    finally:
        one.close()
        every.close()
    base = rows[0][1]
    load = os.getloadavg()[0]
    print(
        f"SO-101 scene, {args.width}x{args.height} px ({args.quality}), {frames} images per sim "
        f"second, OpenGL "
        f"{backend}, load average {load:.1f}, {os.cpu_count()} cores\n"
    )
    print("| per sim second | wall ms | ratio to the physics |\n|---|---|---|")
    for name, seconds in rows:
        print(f"| {name} | {seconds * 1e3:.1f} | {seconds / base:.2f} |")
    per_image = rows[2][1] / (frames * len(names))
    total = (base + rows[2][1]) / base
    print(f"\n{per_image * 1e3:.1f} ms per image with {len(names)} cameras")
    print(f"fastest real_time_factor with them: {1.0 / (base + rows[2][1]):.2f}")
    print(f"cameras_vs_physics = {total:.2f}")
    return 0
