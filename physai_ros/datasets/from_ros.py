"""SO-101 dataset episodes from ROS messages: the live recorder's and the bag converter's.

A frame's ``observation.state`` is ``joint_states``; its ``action`` is what the controllers
command: the arm controller's ``reference`` (``JointTrajectoryControllerState``) and the
gripper controller's (the same message on ``gripper_controller/controller_state``), the
targets the servos are sent, in LeRobot's names and units (``features``). In teleoperation the
action is the leader's pose instead (a ``JointState`` topic, ``Sources.action``), as LeRobot
records it. Images are any
``sensor_msgs/Image`` topics (rgb8 or bgr8), one camera each. Every stream is resampled on its
header stamps by ``timeline.resample``.

Messages are read by field name only, so the rclpy messages of the live graph and the rosbags
messages of a bag go through the same code.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from physai_ros.core.motion.limits import load_limits
from physai_ros.datasets.episodes import write_episode
from physai_ros.datasets.features import (
    ARM_MOTORS,
    GRIPPER,
    ROBOT_TYPE,
    dataset_features,
    to_lerobot,
)
from physai_ros.datasets.scripted import Frame
from physai_ros.datasets.timeline import NS, Dropped, Samples, resample, time_ns
from physai_ros.errors import InvalidInput

JOINT_STATES = "joint_states"
ARM_REFERENCE = "arm_reference"
GRIPPER_REFERENCE = "gripper_reference"
ACTION = "action"  # a JointState whose positions are the action (the leader's, teleoperated)
SYNC_FILE = "physai_sync.json"  # beside LeRobot's meta/ and data/: what each frame was made of
ENCODINGS = ("rgb8", "bgr8")


def camera_name(topic: str) -> str:
    """A dataset camera name from an image topic: ``/front_cam/image_raw`` → ``front_cam``."""
    parts = [p for p in topic.split("/") if p and p not in ("image_raw", "image", "image_rect")]
    if not parts:
        raise InvalidInput(f"image topic {topic!r}: no name to call its camera by")
    return "_".join(parts)


@dataclass(frozen=True)
class Sources:
    """The topics a dataset is made of, by stream name (cameras by their dataset name)."""

    joint_states: str = "/joint_states"
    arm_state: str = "/arm_controller/controller_state"
    gripper_state: str = "/gripper_controller/controller_state"
    images: tuple[str, ...] = ()
    action: str = ""  # a JointState topic as the action ("" = the controllers' references)

    @property
    def cameras(self) -> tuple[str, ...]:
        names = tuple(camera_name(t) for t in self.images)
        if len(set(names)) != len(names):
            raise InvalidInput(f"image topics {list(self.images)} give cameras {list(names)} twice")
        return names

    def streams(self) -> dict[str, str]:
        """Stream name → topic."""
        actions = (
            {ACTION: self.action}
            if self.action
            else {ARM_REFERENCE: self.arm_state, GRIPPER_REFERENCE: self.gripper_state}
        )
        return {
            JOINT_STATES: self.joint_states,
            **actions,
            **dict(zip(self.cameras, self.images, strict=True)),
        }


def image_array(msg) -> np.ndarray:
    """A ``sensor_msgs/Image`` as an RGB array (height, width, 3)."""
    if msg.encoding not in ENCODINGS:
        raise Dropped(f"image encoding {msg.encoding!r}: the dataset takes {ENCODINGS}")
    rows = np.frombuffer(bytes(msg.data), dtype=np.uint8).reshape(msg.height, msg.step)
    pixels = rows[:, : msg.width * 3].reshape(msg.height, msg.width, 3)
    return pixels[..., ::-1].copy() if msg.encoding == "bgr8" else pixels


def _decode(stream: str, msg):
    if stream in (JOINT_STATES, ACTION):
        return dict(zip(msg.name, msg.position, strict=False))
    if stream in (ARM_REFERENCE, GRIPPER_REFERENCE):
        return dict(zip(msg.joint_names, msg.reference.positions, strict=False))
    return msg  # an image: decoded only for the frames that take it


class Timeline:
    """Every stream's samples as they come, on their header stamps."""

    def __init__(self, sources: Sources) -> None:
        self.sources = sources
        self.topics = sources.streams()
        self.streams = {name: Samples(name) for name in self.topics}
        self.first: dict[str, int] = {}  # each stream's first stamp heard [ns]

    def add(self, stream: str, msg) -> None:
        stamp = time_ns(msg.header.stamp)
        self.streams[stream].add(stamp, _decode(stream, msg))
        self.first[stream] = min(self.first.get(stream, stamp), stamp)

    def heard_all_by(self, stamp: int) -> bool:
        """Whether every stream had been heard at ``stamp``: an episode that began earlier
        (before the recorder, or before the bag) is not one to make frames of."""
        return len(self.first) == len(self.streams) and max(self.first.values()) <= stamp

    def forget_before(self, stamp: int) -> None:
        for samples in self.streams.values():
            samples.forget_before(stamp)

    def snapshot(self) -> Timeline:
        """A copy of the samples so far, for a thread to resample while more come in."""
        copy = Timeline(self.sources)
        copy.first = dict(self.first)
        for name, samples in self.streams.items():
            copy.streams[name] = Samples(name, list(samples.stamps), list(samples.values))
        return copy

    def passed(self, stamp: int) -> bool:
        """Whether every stream has a sample at or after ``stamp`` (later ones cannot change
        the frames up to it)."""
        return all(s.newest is not None and s.newest >= stamp for s in self.streams.values())


@dataclass
class RosEpisode:
    """An episode's span [ns], the pick's verdict, and (once resampled) its frames."""

    start: int
    end: int
    success: bool
    outcome: str
    reason: str = ""
    frames: list[Frame] = field(default_factory=list)
    sources: dict[str, list[int]] = field(default_factory=dict)  # stream → stamp per frame

    def entry(self) -> dict:
        return {
            "outcome": self.outcome,
            "success": self.success,
            "reason": self.reason,
            "start_ns": self.start,
            "end_ns": self.end,
            "frames": len(self.frames),
        }


def jaw_range() -> tuple[float, float]:
    """The jaw's range [rad] that 0 and 100 % stand for: the SO-101's calibrated range, the
    same range the model and the driver use (``config/limits_so101.yaml``)."""
    limits = load_limits("so101")
    k = limits.joint_names.index(GRIPPER)
    return float(limits.position_min[k]), float(limits.position_max[k])


def _pick(values: dict, stamps: dict, stream: str, names: Sequence[str]) -> list[float]:
    """``names``' positions in the frame's sample of ``stream``."""
    sample = values[stream]
    missing = [n for n in names if n not in sample]
    if missing:
        raise Dropped(f"{stream} at {stamps[stream] / NS:.3f} s has no {missing}")
    return [float(sample[n]) for n in names]


def make_frames(
    timeline: Timeline, episode: RosEpisode, fps: int, max_gap: int, jaw: tuple[float, float]
) -> None:
    """Resample ``timeline`` over ``episode``'s span into its frames (``Dropped`` says why
    not)."""
    streams = timeline.streams
    at = resample(streams, episode.start, episode.end, fps, max_gap)
    frames = []
    arm = list(ARM_MOTORS)
    for k in range(len(at.times)):
        values = {name: streams[name].values[at.index[name][k]] for name in streams}
        stamps = {name: int(at.stamps[name][k]) for name in streams}
        state = _pick(values, stamps, JOINT_STATES, [*arm, GRIPPER])
        if ACTION in streams:
            *arm_ref, jaw_action = _pick(values, stamps, ACTION, [*arm, GRIPPER])
            jaw_ref = [jaw_action]
        else:
            arm_ref = _pick(values, stamps, ARM_REFERENCE, arm)
            jaw_ref = _pick(values, stamps, GRIPPER_REFERENCE, [GRIPPER])
        images = {c: image_array(values[c]) for c in timeline.sources.cameras}
        frames.append(
            Frame(
                state=to_lerobot(state[:-1], state[-1], jaw),
                action=to_lerobot(arm_ref, jaw_ref[0], jaw),
                images=images,
            )
        )
    shapes = {image.shape for frame in frames for image in frame.images.values()}
    if len(shapes) > 1:
        raise Dropped(f"the cameras' images differ in size: {sorted(shapes)}")
    episode.frames = frames
    episode.sources = {name: at.stamps[name].tolist() for name in streams}


class DatasetSink:
    """A LeRobot dataset at ``root`` filled episode by episode, and its ``physai_sync.json``
    (settings, every episode's span, verdict and each frame's source stamps, and the episodes
    left out with the reason). The dataset is created with the first episode written, when
    the images' size is known; until then the record is kept in memory (and logged)."""

    def __init__(
        self,
        root: Path,
        repo_id: str,
        fps: int,
        cameras: Sequence[str],
        task: str,
        vcodec: str,
        keep_failures: bool,
        settings: dict,
    ) -> None:
        if root.exists():
            raise InvalidInput(f"{root} exists already: choose a new folder for the dataset")
        if not root.parent.is_dir():
            raise InvalidInput(f"{root.parent} is not a folder")
        self.root, self.repo_id, self.fps, self.cameras = root, repo_id, fps, list(cameras)
        self.task, self.vcodec, self.keep_failures = task, vcodec, keep_failures
        self.dataset = None
        self.record = {"settings": settings, "episodes": [], "left_out": []}

    def add(self, episode: RosEpisode) -> str:
        """Write ``episode`` (or leave it out, recording why); returns what happened, for the
        log."""
        if episode.frames and (episode.success or self.keep_failures):
            self._write(episode)
            index = len(self.record["episodes"]) - 1
            return f"episode {index}: {episode.outcome}, {len(episode.frames)} frames"
        if episode.frames:
            episode.reason = episode.reason or f"{episode.outcome} (not kept: keep_failures off)"
        self.record["left_out"].append(episode.entry())
        self._save_record()
        return f"left out: {episode.outcome}: {episode.reason}"

    def _write(self, episode: RosEpisode) -> None:
        if self.dataset is None:
            from physai_ros.datasets.lerobot_io import create_dataset

            height, width = (
                next(iter(episode.frames[0].images.values())).shape[:2]
                if self.cameras else (0, 0)
            )  # fmt: skip
            features = dataset_features(self.cameras, height, width)
            self.dataset = create_dataset(
                self.root, self.repo_id, self.fps, features, ROBOT_TYPE, self.vcodec
            )
        write_episode(self.dataset, episode.frames, episode.success, self.task)
        self.record["episodes"].append({**episode.entry(), "sources": episode.sources})
        self._save_record()

    def _save_record(self) -> None:
        if self.dataset is None:
            return
        path = self.root / SYNC_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.record))
        os.replace(tmp, path)

    def close(self) -> int:
        """Finish the dataset (LeRobot's ``finalize``); returns how many episodes it has."""
        if self.dataset is not None:
            self.dataset.finalize()
        return len(self.record["episodes"])


# PickOutcome's constants, read off the message itself (rclpy's or a bag's)
PICK_OUTCOMES = (
    "HELD", "PLACED", "DROPPED", "MISSED", "ABORTED", "CANCELED", "REJECTED", "UNJUDGED"
)  # fmt: skip


def pick_episode(outcome) -> RosEpisode | None:
    """The episode a pick's outcome (``physai_ros_interfaces/msg/PickOutcome``, from the graph
    or a bag) stands for: from the goal's acceptance (``stamp - duration``) to its end. None for
    a goal refused before anything moved, or one without a duration. Success is the pick's own
    verdict: ``HELD`` or ``PLACED``, judged by the cube where the graph measures it."""
    code = outcome.outcome
    names = {getattr(outcome, n): n.lower() for n in PICK_OUTCOMES if hasattr(outcome, n)}
    if code == getattr(outcome, "REJECTED", None) or not np.isfinite(outcome.duration):
        return None
    end = time_ns(outcome.stamp)
    return RosEpisode(
        start=end - round(outcome.duration * NS),
        end=end,
        success=names.get(code) in ("held", "placed"),
        outcome=names.get(code, f"outcome {code}"),
        reason=outcome.reason,
    )
