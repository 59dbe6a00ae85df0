"""What a recorded episode becomes, shared by the serial recorder and the Ray tasks: its frames
through LeRobot's ``add_frame``, its entry in ``physai_record.json``, and the randomisation and
cameras rebuilt from a recording's settings (a plain dict, so a Ray task can carry it)."""

from __future__ import annotations

import numpy as np

from physai_ros.datasets.features import IMAGE_PREFIX, SUCCESS
from physai_ros.datasets.randomise import Randomisation
from physai_ros.datasets.scripted import TASK, Episode
from physai_ros.sim.render import Cameras


def randomisation_of(settings: dict) -> Randomisation:
    """The recording's randomisation, from its settings."""
    fields = {k: tuple(v) if isinstance(v, list) else v
              for k, v in settings["randomisation"].items()}  # fmt: skip
    return Randomisation(**fields)


def camera_factory(settings: dict):
    """``model -> Cameras`` for the recording's cameras, or None when it records none."""
    if not settings["cameras"]:
        return None

    def cameras(model):
        return Cameras(
            model, settings["cameras"], settings["height"], settings["width"],
            quality=settings["render"],
        )  # fmt: skip

    return cameras


def write_episode(dataset, episode: Episode) -> None:
    """Every frame of ``episode`` through LeRobot's ``add_frame``, then ``save_episode``."""
    last = len(episode.frames) - 1
    for i, frame in enumerate(episode.frames):
        values = {
            "observation.state": frame.state,
            "action": frame.action,
            SUCCESS: np.array([i == last and episode.success]),
            "task": TASK,
        }
        for camera, image in frame.images.items():
            values[IMAGE_PREFIX + camera] = image
        dataset.add_frame(values)
    dataset.save_episode()


def episode_entry(episode: Episode) -> dict:
    """What the record keeps of an episode (``physai_record.json``)."""
    return {
        "outcome": episode.outcome,
        "reason": episode.reason,
        "lift_m": round(episode.lift, 5),
        "frames": len(episode.frames),
    }
