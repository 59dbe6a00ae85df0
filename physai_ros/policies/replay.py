"""A recorded episode's actions as a policy: one per frame, in order, then none.

Replaying them through the streaming path at the dataset's frame rate is how a dataset's
actions are checked on the arm (they ask nothing of the observation). The scene is the user's
to set: the simulated cube where the episode's cube was, or the real one placed by hand.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from physai_ros.datasets.lerobot_io import load_dataset
from physai_ros.errors import InvalidInput


class ReplayPolicy:
    """Episode ``episode`` of the LeRobot dataset at ``root``."""

    image_features: tuple[str, ...] = ()
    needs_state = False

    def __init__(self, root: Path, repo_id: str, episode: int) -> None:
        root = Path(root).expanduser().resolve()
        if not (root / "meta" / "info.json").is_file():
            raise InvalidInput(f"{root} is not a LeRobot dataset (no meta/info.json)")
        dataset = load_dataset(root, repo_id)
        table = dataset.hf_dataset.with_format("numpy")
        episodes = np.asarray(table["episode_index"])
        if episode not in set(episodes.tolist()):
            raise InvalidInput(
                f"{root} has no episode {episode} (it has {len(set(episodes.tolist()))}, "
                f"numbered from {int(episodes.min()) if episodes.size else 0})"
            )
        self.actions = np.asarray(table["action"], dtype=float)[episodes == episode]
        self.fps = float(dataset.fps)
        self.next = 0
        self.description = (
            f"replay of episode {episode} of {root} ({len(self.actions)} actions at "
            f"{self.fps:g} fps)"
        )

    def reset(self) -> None:
        self.next = 0

    def step(self, observation: dict[str, np.ndarray]) -> np.ndarray | None:
        if self.next >= len(self.actions):
            return None
        action = self.actions[self.next]
        self.next += 1
        return action

    @property
    def queue_depth(self) -> int:
        return len(self.actions) - self.next
