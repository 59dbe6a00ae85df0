"""What a recorded episode becomes, shared by the serial recorder and the Ray tasks: its frames
through LeRobot's ``add_frame``, its entry in ``physai_record.json``, and the randomisation and
cameras rebuilt from a recording's settings (a plain dict, so a Ray task can carry it)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from physai_ros.datasets.features import IMAGE_PREFIX, SUCCESS, TASK
from physai_ros.datasets.randomise import Randomisation
from physai_ros.datasets.scripted import Episode, Frame
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


def write_episode(dataset, frames: Sequence[Frame], success: bool, task: str = TASK) -> None:
    """Every frame through LeRobot's ``add_frame`` (``success`` flagged on the last one, as
    LeRobot's simulation datasets do), then ``save_episode``: the one way an episode is written,
    by the scripted recorder, the ROS recorder and the bag converter alike."""
    last = len(frames) - 1
    for i, frame in enumerate(frames):
        values = {
            "observation.state": frame.state,
            "action": frame.action,
            SUCCESS: np.array([i == last and success]),
            "task": task,
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
