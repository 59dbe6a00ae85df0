"""Benchmark: what a recorded demonstration costs, and where the time goes.

The same ``--episodes`` scripted picks (``physai record``'s, seed ``--seed``) are run four ways in
one process, so the shares do not depend on the machine: the physics alone; the physics and
the cameras' images; the physics and a LeRobot dataset without images (the tabular writing:
parquet, metadata, statistics); and the whole pipeline as ``physai record`` runs it (images
streamed to the video encoder). LeRobot's encoder thread also keeps running statistics of every
image (its quantiles); that part is timed by running the same statistics over the same images,
and encoding is the whole minus the other parts. Costs are
CPU seconds of the process and its threads (``time.process_time``), so "per core" is honest
when the encoder's threads run beside the physics. Last line:
``verified_episodes_per_hour_per_core``; the pipeline's cost over physics plus rendering is
printed above it (target 1.25).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--episodes", type=int, default=10, help="picks per measurement")
    parser.add_argument("--seed", type=int, default=0, help="seed of the picks' scenes")
    parser.add_argument("--cameras", default="front_cam,wrist_cam", help="comma list")
    parser.add_argument("--width", type=int, default=320, help="image width [px]")
    parser.add_argument("--height", type=int, default=240, help="image height [px]")
    parser.add_argument("--render", choices=("fast", "full"), default="fast")
    parser.add_argument("--vcodec", choices=("h264", "libsvtav1"), default="h264")
    parser.add_argument("--fps", type=int, default=30, help="frames per second [Hz]")
    parser.add_argument(
        "--ray-workers",
        type=int,
        default=0,
        help="also record the episodes on a local Ray cluster of this many workers (cluster "
        "start included) and print its speed-up over one process; 0: not",
    )


def run(args: argparse.Namespace) -> int:
    from physai_ros.core.pick.machine import load_pick_config
    from physai_ros.datasets import lerobot_io
    from physai_ros.datasets.episodes import write_episode
    from physai_ros.datasets.features import ROBOT_TYPE, dataset_features
    from physai_ros.datasets.randomise import Randomisation, draw
    from physai_ros.datasets.scripted import record_episode
    from physai_ros.errors import InvalidInput
    from physai_ros.sim.render import Cameras, camera_names

    names = camera_names(args.cameras)
    if args.episodes < 1 or not names:
        raise InvalidInput("give --episodes ≥ 1 and at least one camera")
    lerobot_io.lerobot_version()
    cfg = load_pick_config()
    setups = [draw(Randomisation(), args.seed, i) for i in range(args.episodes)]

    def cameras(model):
        return Cameras(model, names, args.height, args.width, quality=args.render)

    def timed(func) -> tuple[float, float, list]:
        """(CPU s, wall s, results) of func over every setup."""
        cpu, wall = time.process_time(), time.perf_counter()
        results = [func(setup) for setup in setups]
        return time.process_time() - cpu, time.perf_counter() - wall, results

    with tempfile.TemporaryDirectory() as tmp:
        # LeRobot (torch) before the first image: the datasets exist before OpenGL starts
        tabular = lerobot_io.create_dataset(
            Path(tmp) / "tabular", "bench/tabular", args.fps,
            dataset_features([], args.height, args.width), ROBOT_TYPE, args.vcodec,
        )  # fmt: skip
        whole = lerobot_io.create_dataset(
            Path(tmp) / "whole", "bench/whole", args.fps,
            dataset_features(names, args.height, args.width), ROBOT_TYPE, args.vcodec,
        )  # fmt: skip

        def write(dataset, episode):
            write_episode(dataset, episode.frames, episode.success)
            return episode

        record_episode(setups[0], cfg, args.fps, cameras)  # OpenGL chosen, shaders compiled
        physics = timed(lambda s: record_episode(s, cfg, args.fps)[0])
        rendered = timed(lambda s: record_episode(s, cfg, args.fps, cameras)[0])
        written = timed(lambda s: write(tabular, record_episode(s, cfg, args.fps)[0]))
        pipeline = timed(lambda s: write(whole, record_episode(s, cfg, args.fps, cameras)[0]))
        cpu, wall = time.process_time(), time.perf_counter()
        tabular.finalize()
        whole.finalize()
        finalize = (time.process_time() - cpu, time.perf_counter() - wall)
        ray_wall = on_ray(args, Path(tmp)) if args.ray_workers > 0 else None
    n = args.episodes
    held = sum(e.success for e in pipeline[2])
    parts = {
        "physics (lockstep pick)": physics[0],
        "rendering": rendered[0] - physics[0],
        "writing (parquet, metadata, statistics)": written[0] - physics[0] + finalize[0] / 2,
    }
    total = pipeline[0] + finalize[0] / 2
    statistics = image_statistics_cpu(pipeline[2])
    if statistics is not None:
        parts["image statistics (LeRobot's encoder thread)"] = statistics
    parts["video encoding"] = total - sum(parts.values())
    frames = sum(len(e.frames) for e in pipeline[2])
    print(
        f"SO-101 pick, {n} episodes ({frames} frames, {held} held), {len(names)} cameras "
        f"{args.width}x{args.height} ({args.render}), {args.fps} fps, {args.vcodec}, LeRobot "
        f"{lerobot_io.lerobot_version()}, load average {os.getloadavg()[0]:.1f}, "
        f"{os.cpu_count()} cores\n"
    )
    print("| part | CPU s per episode | share |\n|---|---|---|")
    for name, seconds in parts.items():
        print(f"| {name} | {seconds / n:.2f} | {seconds / total:.0%} |")
    print(f"| whole pipeline | {total / n:.2f} | 100% |")
    base = physics[0] + parts["rendering"]
    print(f"\nwall seconds per episode, whole pipeline: {pipeline[1] / n:.2f}")
    print(f"episodes per hour of wall time, one process: {3600 * held / pipeline[1]:.0f}")
    print(f"pipeline over physics + rendering (CPU): {total / base:.2f}")
    busy = pipeline[0] / pipeline[1]  # cores one process keeps busy (the encoder's threads)
    print(
        f"cores one process keeps busy: {busy:.2f}, so {os.cpu_count()} cores can run at most "
        f"{os.cpu_count() / busy:.2f}x one process's episodes"
    )
    if ray_wall is not None:
        serial = (pipeline[1] + finalize[1] / 2) / held  # [s] wall per held episode
        print(
            f"Ray, {args.ray_workers} workers (local cluster, its start included): "
            f"{ray_wall / n:.2f} wall s per episode; speed-up over one process "
            f"{serial / (ray_wall / n):.2f}x"
        )
    print(f"verified_episodes_per_hour_per_core = {3600 * held / total:.0f}")
    return 0


def image_statistics_cpu(episodes: list) -> float | None:
    """CPU seconds of the running image statistics LeRobot's streaming encoder keeps beside
    each encoded frame (its own functions, called as its encoder thread calls them), over every
    image of ``episodes``; None where the installed LeRobot has no such functions."""
    try:
        from lerobot.datasets.compute_stats import (
            RunningQuantileStats,
            auto_downsample_height_width,
        )
    except ImportError:
        return None
    cpu = time.process_time()
    for episode in episodes:
        trackers: dict = {}
        for frame in episode.frames:
            for name, image in frame.images.items():
                small = auto_downsample_height_width(image.transpose(2, 0, 1))
                pixels = small.transpose(1, 2, 0).reshape(-1, small.shape[0])
                trackers.setdefault(name, RunningQuantileStats()).update(pixels)
    return time.process_time() - cpu


def on_ray(args: argparse.Namespace, tmp: Path) -> float:
    """Wall seconds of ``physai record --ray`` for the same episodes and options, on a local
    cluster of ``--ray-workers``."""
    from physai_ros.datasets import record
    from physai_ros.datasets.cluster import record_on_ray

    parser = argparse.ArgumentParser()
    record.add_arguments(parser)
    options = parser.parse_args([
        "--output", str(tmp / "ray"), "--episodes", str(args.episodes), "--seed", str(args.seed),
        "--cameras", args.cameras, "--width", str(args.width), "--height", str(args.height),
        "--render", args.render, "--vcodec", args.vcodec, "--fps", str(args.fps),
    ])  # fmt: skip
    settings = record.settings_of(options)
    wall = time.perf_counter()
    record_on_ray(
        None, args.ray_workers, settings, tmp / "ray", options.repo_id, args.episodes,
        2 * args.episodes + 10, tmp / "shards", lambda count: None,
    )  # fmt: skip
    return time.perf_counter() - wall
