"""Writing and reading datasets through LeRobot's own API, whichever version is installed.

LeRobot 0.4 and 0.6 both write dataset format v3.0 through ``LeRobotDataset.create`` /
``add_frame`` / ``save_episode`` / ``finalize``; they differ in how a dataset is reopened to
append to it (0.6: ``LeRobotDataset.resume``; 0.4: the constructor, as its ``lerobot-record
--resume`` does), and in how the video codec is chosen (0.6: an ``RGBEncoderConfig``; 0.4: a
``vcodec`` name). Both stream frames straight to the video encoder, in threads beside the
recording, instead of writing a PNG per frame and encoding at the episode's end.

LeRobot's encoder queue holds 30 frames by default and drops a frame it has no room for,
with a warning: the episode's video is then shorter than its table, and reading its last
frames fails. Every dataset here is opened with an unbounded queue (``ENCODER_QUEUE``): a
frame waits in memory for a busy encoder instead of being lost.

LeRobot is imported only here and only when a dataset is opened: it pulls in torch, which the
rest of the package does not need.
"""

from __future__ import annotations

import importlib.metadata
import inspect
from pathlib import Path

from physai_ros.errors import InvalidInput


def lerobot_version() -> str:
    """The installed LeRobot's version (an error saying how to get it if it is missing)."""
    try:
        return importlib.metadata.version("lerobot")
    except importlib.metadata.PackageNotFoundError:
        raise InvalidInput(
            "LeRobot is not installed: 'make setup' (the full profile) installs it, or "
            "'pip install lerobot'"
        ) from None


def _dataset_class():
    lerobot_version()
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    return LeRobotDataset


VIDEO_CODECS = ("h264", "libsvtav1")  # what both versions encode with in software
ENCODER_QUEUE = 0  # frames buffered per camera for the encoder: 0 is unbounded, none dropped


def _encoding(method, vcodec: str) -> dict:
    """The keywords of ``method`` (the installed LeRobot's) that stream frames to the encoder
    through an unbounded queue and select ``vcodec``: the same for every dataset opened."""
    if vcodec not in VIDEO_CODECS:
        raise InvalidInput(f"video codec {vcodec!r}: choose one of {VIDEO_CODECS}")
    streaming = {"streaming_encoding": True, "encoder_queue_maxsize": ENCODER_QUEUE}
    if "rgb_encoder" in inspect.signature(method).parameters:  # LeRobot ≥ 0.6
        from lerobot.configs import RGBEncoderConfig

        return {**streaming, "rgb_encoder": RGBEncoderConfig(vcodec=vcodec)}
    return {**streaming, "vcodec": vcodec}


def create_dataset(
    root: Path, repo_id: str, fps: int, features: dict, robot_type: str, vcodec: str
):
    """A new, empty dataset at ``root`` (which must not exist yet)."""
    cls = _dataset_class()
    return cls.create(
        repo_id,
        fps,
        features,
        root=root,
        robot_type=robot_type,
        use_videos=any(f["dtype"] == "video" for f in features.values()),
        metadata_buffer_size=1,  # each episode's metadata on disk as soon as it is saved
        **_encoding(cls.create, vcodec),
    )


def reopen_dataset(root: Path, repo_id: str, vcodec: str):
    """The dataset at ``root``, opened to append episodes to it."""
    cls = _dataset_class()
    if hasattr(cls, "resume"):  # LeRobot ≥ 0.6
        dataset = cls.resume(
            repo_id,
            root=root,
            **_encoding(cls.resume, vcodec),
        )
    else:  # LeRobot 0.4: its own --resume path
        dataset = cls(
            repo_id,
            root=root,
            **_encoding(cls, vcodec),
        )
    dataset.meta.metadata_buffer_size = 1
    return dataset


def has_pending_frames(dataset) -> bool:
    """Whether ``dataset`` holds frames of an episode not saved yet (an interrupted one)."""
    if hasattr(dataset, "has_pending_frames"):  # LeRobot ≥ 0.6: the buffer is its writer's
        return dataset.has_pending_frames()
    buffer = dataset.episode_buffer
    return buffer is not None and bool(buffer.get("size"))


def load_dataset(root: Path, repo_id: str):
    """The dataset at ``root`` for reading, as a LeRobot user loads it."""
    return _dataset_class()(repo_id, root=root)


def merge_datasets(parts: list[Path], root: Path, repo_id: str) -> None:
    """One dataset at ``root`` from ``parts`` in their order, by LeRobot's own aggregation
    (episodes renumbered, videos and parquet files concatenated, statistics combined)."""
    _dataset_class()
    from lerobot.datasets.aggregate import aggregate_datasets

    aggregate_datasets(
        repo_ids=[f"physai/shard_{i}" for i in range(len(parts))],
        aggr_repo_id=repo_id,
        roots=list(parts),
        aggr_root=root,
    )
