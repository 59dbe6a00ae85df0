"""Replay a recorded dataset's actions in the simulation and compare the outcomes.

Each episode's scene is rebuilt from its record (seed and draw in ``physai_record.json``), its
actions are read back through LeRobot and held one frame each, and the cube is judged as the
recording judged it. Outcomes that agree are the proof that every action belongs to its frame:
an action paired with a later observation would replay a different pick.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dataset", type=Path, help="a folder written by 'physai record'")
    parser.add_argument("--repo-id", default="local/so101_pick", help="the dataset's LeRobot id")
    parser.add_argument(
        "--episodes", type=int, default=None, help="replay the first N episodes (default: all)"
    )


def run(args: argparse.Namespace) -> int:
    from physai_ros.core.pick.machine import load_pick_config
    from physai_ros.datasets import lerobot_io
    from physai_ros.datasets.episodes import randomisation_of
    from physai_ros.datasets.randomise import draw
    from physai_ros.datasets.record import load_state
    from physai_ros.datasets.scripted import replay_episode
    from physai_ros.errors import InvalidInput

    state = load_state(args.dataset)
    settings = state["settings"]
    dataset = lerobot_io.load_dataset(args.dataset, args.repo_id)
    table = dataset.hf_dataset.with_format("numpy")
    episode_of, actions = np.asarray(table["episode_index"]), np.asarray(table["action"])
    entries = state["episodes"][: args.episodes]
    if not entries:
        raise InvalidInput(f"{args.dataset} holds no episodes to replay")
    randomisation, cfg = randomisation_of(settings), load_pick_config()
    print("| episode | recorded | replayed | cube lift recorded / replayed [cm] |")
    print("|---|---|---|---|")
    agree = held = replayed_held = 0
    for entry in entries:
        setup = draw(randomisation, settings["seed"], entry["draw"])
        mine = actions[episode_of == entry["episode_index"]]
        replay = replay_episode(setup, mine, cfg, settings["fps"])
        agree += replay.outcome == entry["outcome"]
        held += entry["outcome"] == "held"
        replayed_held += entry["outcome"] == "held" and replay.success
        print(
            f"| {entry['episode_index']} | {entry['outcome']} | {replay.outcome} | "
            f"{100 * entry['lift_m']:.1f} / {100 * replay.lift:.1f} |"
        )
    print(f"\n{agree}/{len(entries)} outcomes agree")
    print(f"replayed_held = {replayed_held}/{held} (of the episodes that held)")
    return 0
