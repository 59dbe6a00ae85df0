"""Record scripted, physics-verified SO-101 picks as a LeRobot dataset.

Each episode is a fresh scene drawn from --seed (cube position, and whatever else is asked to
vary), a scripted sensed pick run lockstep with MuJoCo (faster than real time), and frames at
--fps: the joints, the servo targets commanded at that instant, and the cameras' images. The
cube decides success (lifted, in both jaws); failed picks are left out unless --keep-failures.
Ctrl-C saves what is recorded; --resume carries on with the same episodes it would have made.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from dataclasses import asdict
from pathlib import Path

from physai_ros.errors import InvalidInput

STATE_FILE = "physai_record.json"  # beside LeRobot's meta/ and data/: what made each episode


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", type=Path, required=True, help="dataset folder (LeRobot root)")
    parser.add_argument("--repo-id", default="local/so101_pick", help="the dataset's LeRobot id")
    parser.add_argument("--episodes", type=int, default=50, help="episodes to write")
    parser.add_argument("--seed", type=int, default=0, help="seed of the episodes' scenes")
    parser.add_argument("--fps", type=int, default=30, help="frames per second [Hz]")
    parser.add_argument(
        "--cameras", default="front_cam,wrist_cam", help="cameras to record (comma list; '' none)"
    )
    parser.add_argument("--width", type=int, default=320, help="image width [px]")
    parser.add_argument("--height", type=int, default=240, help="image height [px]")
    parser.add_argument(
        "--render",
        choices=("fast", "full"),
        default="fast",
        help="image quality: fast (1024 px shadows, no reflection or multisampling) or full "
        "(the scene as modelled; about 4x the rendering time in software)",
    )
    parser.add_argument(
        "--vcodec",
        choices=("h264", "libsvtav1"),
        default="h264",
        help="video codec: h264 costs a fifth of LeRobot's default AV1 at this size",
    )
    parser.add_argument(
        "--images", action="store_true", help="store PNG images instead of videos (larger)"
    )
    parser.add_argument(
        "--keep-failures", action="store_true", help="write failed picks too (next.success False)"
    )
    parser.add_argument(
        "--max-attempts",
        type=int,
        default=None,
        help="stop after this many picks even if fewer succeeded (default: 2 × episodes + 10)",
    )
    parser.add_argument("--resume", action="store_true", help="append to the dataset at --output")
    parser.add_argument(
        "--ray",
        nargs="?",
        const="local",
        default=None,
        metavar="ADDRESS",
        help="record as Ray tasks, one shard per task merged at the end: on the cluster at "
        "ADDRESS (host:port of 'ray start --head'), or a local one without ADDRESS",
    )
    parser.add_argument(
        "--workers", type=int, default=None, help="CPUs of the local Ray cluster (default: all)"
    )
    parser.add_argument(
        "--shards",
        type=Path,
        default=None,
        help="where Ray tasks write their shards: a folder every node sees (default: beside "
        "--output, removed after the merge)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    group = parser.add_argument_group(
        "randomisation", "LO,HI draws uniformly, a single value fixes it"
    )
    group.add_argument("--x", default="0.20,0.24", help="cube x in the base frame [m]")
    group.add_argument("--y", default="-0.03,0.03", help="cube y in the base frame [m]")
    group.add_argument("--yaw", default="0", help="cube yaw [deg]")
    group.add_argument("--size", default="0.03", help="cube edge [m]")
    group.add_argument("--mass", default="0.03", help="cube mass [kg]")
    group.add_argument("--mu", default="1.0", help="cube sliding friction")
    group.add_argument("--colours", action="store_true", help="a random cube colour per episode")
    group.add_argument("--light", default="0.7", help="scene light's diffuse intensity")
    group.add_argument(
        "--camera-jitter", type=float, default=0.0, help="fixed cameras moved up to ± this [m]"
    )


def settings_of(args: argparse.Namespace) -> dict:
    """What decides the episodes (a resumed recording must use the same)."""
    from physai_ros.datasets.randomise import Randomisation, parse_range
    from physai_ros.sim.render import camera_names

    randomisation = Randomisation(
        x=parse_range(args.x),
        y=parse_range(args.y),
        yaw=parse_range(args.yaw),
        size=parse_range(args.size),
        mass=parse_range(args.mass),
        mu=parse_range(args.mu),
        colours=args.colours,
        light=parse_range(args.light),
        camera_jitter=args.camera_jitter,
    )
    if args.fps < 1 or args.episodes < 1:
        raise InvalidInput("--fps and --episodes must be at least 1")
    return {
        "seed": args.seed,
        "fps": args.fps,
        "cameras": camera_names(args.cameras),
        "height": args.height,
        "width": args.width,
        "render": args.render,
        "videos": not args.images,
        "vcodec": args.vcodec,
        "keep_failures": args.keep_failures,
        "randomisation": {k: list(v) if isinstance(v, tuple) else v
                          for k, v in asdict(randomisation).items()},
    }  # fmt: skip


def load_state(root: Path) -> dict:
    path = root / STATE_FILE
    if not path.is_file():
        raise InvalidInput(f"{root} was not recorded by 'physai record' (no {STATE_FILE})")
    return json.loads(path.read_text())


def save_state(root: Path, state: dict) -> None:
    tmp = root / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(state, indent=1) + "\n")
    tmp.replace(root / STATE_FILE)


def check_cameras(settings: dict) -> None:
    """Refuse unknown cameras, bad sizes and a machine that cannot render before anything is
    written (a dataset is made only for a recording that can run)."""
    from physai_ros.datasets.episodes import randomisation_of
    from physai_ros.datasets.randomise import draw
    from physai_ros.datasets.scripted import scene_for
    from physai_ros.sim.render import choose_backend

    if not settings["cameras"]:
        return
    if settings["height"] < 1 or settings["width"] < 1:
        raise InvalidInput(f"--width and --height must be positive, got {settings['width']}x"
                           f"{settings['height']}")  # fmt: skip
    model, _ = scene_for(draw(randomisation_of(settings), settings["seed"], 0), settings["fps"])
    known = [model.camera(i).name for i in range(model.ncam)]
    unknown = [name for name in settings["cameras"] if name not in known]
    if unknown:
        raise InvalidInput(
            f"no camera {', '.join(map(repr, unknown))} in the scene; it has {known}"
        )
    choose_backend()


def run(args: argparse.Namespace) -> int:
    from physai_ros.datasets import lerobot_io

    settings = settings_of(args)
    root: Path = args.output
    lerobot_io.lerobot_version()
    check_cameras(settings)
    max_attempts = args.max_attempts or 2 * args.episodes + 10
    if args.ray is not None:
        if args.resume:
            raise InvalidInput("--resume records in this process: leave out --ray")
        if root.exists():
            raise InvalidInput(f"{root} exists: choose a new --output")
        state = record_with_ray(args, settings, root, max_attempts)
        save_state(root, state)
        return report(root, state, args.episodes, interrupted=False)
    return record_here(args, settings, root, max_attempts)


def record_with_ray(args: argparse.Namespace, settings: dict, root: Path, max_attempts: int):
    """The episodes as Ray tasks (``cluster``), with a progress bar of the episodes held."""
    from tqdm import tqdm

    from physai_ros.datasets.cluster import record_on_ray

    shards = args.shards or root.parent / f".{root.name}.shards"
    address = None if args.ray == "local" else args.ray
    bar = tqdm(total=args.episodes, desc="episodes", disable=args.no_progress, file=sys.stderr)

    def progress(count: int) -> None:
        bar.update(min(count, args.episodes) - bar.n)

    try:
        return record_on_ray(
            address, args.workers, settings, root, args.repo_id, args.episodes, max_attempts,
            shards, progress,
        )  # fmt: skip
    finally:
        bar.close()


def record_here(args: argparse.Namespace, settings: dict, root: Path, max_attempts: int) -> int:
    """The episodes one after another in this process; Ctrl-C saves, --resume carries on."""
    from tqdm import tqdm

    from physai_ros.core.pick.machine import load_pick_config
    from physai_ros.datasets import lerobot_io
    from physai_ros.datasets.episodes import (
        camera_factory,
        episode_entry,
        randomisation_of,
        write_episode,
    )
    from physai_ros.datasets.features import ROBOT_TYPE, dataset_features
    from physai_ros.datasets.randomise import draw
    from physai_ros.datasets.scripted import record_episode

    if args.resume:
        state = load_state(root)
        changed = sorted(k for k in settings if state["settings"].get(k) != settings[k])
        if changed:
            raise InvalidInput(
                f"--resume with different settings ({', '.join(changed)}) would not make the "
                "same episodes; give the original ones or record to a new --output"
            )
        dataset = lerobot_io.reopen_dataset(root, args.repo_id, args.vcodec)
        if dataset.meta.total_episodes != len(state["episodes"]):
            raise InvalidInput(
                f"{root} holds {dataset.meta.total_episodes} episodes but its record lists "
                f"{len(state['episodes'])}: it was not closed cleanly, record to a new --output"
            )
    else:
        if root.exists():
            raise InvalidInput(f"{root} exists: --resume to add to it, or choose a new --output")
        features = dataset_features(
            settings["cameras"], args.height, args.width, settings["videos"]
        )
        dataset = lerobot_io.create_dataset(
            root, args.repo_id, args.fps, features, ROBOT_TYPE, args.vcodec
        )
        state = {"settings": settings, "attempts": 0, "episodes": [], "failures": []}
        save_state(root, state)

    cfg = load_pick_config()
    randomisation = randomisation_of(settings)
    cameras = camera_factory(settings)
    done = len(state["episodes"])
    bar = tqdm(total=args.episodes, initial=done, desc="episodes", disable=args.no_progress,
               file=sys.stderr)  # fmt: skip
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    interrupted, pending = False, None
    try:
        while done < args.episodes and state["attempts"] < max_attempts:
            setup = draw(randomisation, settings["seed"], state["attempts"])
            episode, _ = record_episode(setup, cfg, settings["fps"], cameras)
            entry = {"draw": setup.index, **episode_entry(episode)}
            if episode.success or settings["keep_failures"]:
                pending = {"episode_index": done, **entry}
                write_episode(dataset, episode.frames, episode.success)
                state["episodes"].append(pending)
                pending = None
                done += 1
                bar.update()
            else:
                state["failures"].append(entry)
            state["attempts"] += 1
            save_state(root, state)
            bar.set_postfix(attempts=state["attempts"], failed=len(state["failures"]))
    except KeyboardInterrupt:
        interrupted = True
        if pending is not None and dataset.meta.total_episodes > len(state["episodes"]):
            state["episodes"].append(pending)  # saved by LeRobot just before the interrupt
            state["attempts"] += 1
        elif lerobot_io.has_pending_frames(dataset):
            dataset.clear_episode_buffer()
        save_state(root, state)
    finally:
        signal.signal(signal.SIGTERM, previous)
        bar.close()
        dataset.finalize()
    return report(root, state, args.episodes, interrupted)


def report(root: Path, state: dict, wanted: int, interrupted: bool) -> int:
    """Say what was recorded; the exit status (130 interrupted, 1 short of episodes)."""
    done = len(state["episodes"])
    held = sum(e["outcome"] == "held" for e in state["episodes"])
    print(
        f"{root}: {done} episodes ({held} held) from {state['attempts']} picks, "
        f"{len(state['failures'])} failed picks left out"
    )
    if interrupted:
        print("interrupted: the recorded episodes are saved; --resume carries on", file=sys.stderr)
        return 130
    if done < wanted:
        print(
            f"only {done} of {wanted} episodes after {state['attempts']} picks "
            "(--max-attempts): the randomisation makes most picks fail",
            file=sys.stderr,
        )
        return 1
    return 0
