"""What a frame of an SO-101 dataset holds, in LeRobot's names and units.

LeRobot's SO-101 follower (``use_degrees=True``) reports each arm motor as ``<motor>.pos`` in
degrees and the gripper as ``gripper.pos`` in percent of its calibrated range (0 at its
minimum, 100 at its maximum). A dataset written here uses the same names and units, so a policy
trained on it reads and writes what LeRobot's robot classes do; the simulation's "calibration"
is the model's joint range, the only range it has.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

ARM_MOTORS = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll")
GRIPPER = "gripper"
MOTOR_NAMES = (*ARM_MOTORS, GRIPPER)
STATE_NAMES = tuple(f"{motor}.pos" for motor in MOTOR_NAMES)
ROBOT_TYPE = "so101_follower"  # LeRobot's robot type for the SO-101 arm it drives
IMAGE_PREFIX = "observation.images."
SUCCESS = "next.success"
TASK = "Pick up the cube and lift it."  # every pick episode's task string


def to_lerobot(arm: Sequence[float], jaw: float, jaw_range: Sequence[float]) -> np.ndarray:
    """Arm joints [rad] and the jaw [rad] as one LeRobot vector: degrees, and the jaw in
    percent of ``jaw_range`` [rad] (float32, LeRobot's dtype)."""
    lo, hi = jaw_range
    values = np.empty(len(MOTOR_NAMES), dtype=np.float32)
    values[:-1] = np.degrees(np.asarray(arm, dtype=float))
    values[-1] = 100.0 * (jaw - lo) / (hi - lo)
    return values


def from_lerobot(values: Sequence[float], jaw_range: Sequence[float]) -> tuple[np.ndarray, float]:
    """The inverse of :func:`to_lerobot`: arm joints [rad] and the jaw [rad]."""
    lo, hi = jaw_range
    values = np.asarray(values, dtype=float)
    return np.radians(values[:-1]), float(lo + values[-1] / 100.0 * (hi - lo))


def dataset_features(
    cameras: Sequence[str], height: int, width: int, use_videos: bool = True
) -> dict[str, dict]:
    """LeRobot's feature specification of the dataset: state, action, the success flag and one
    image per camera (stored as video unless ``use_videos`` is False)."""
    vector = {"dtype": "float32", "shape": (len(STATE_NAMES),), "names": list(STATE_NAMES)}
    features = {
        "observation.state": dict(vector),
        "action": dict(vector),
        # LeRobot's simulation datasets' flag: on an episode's last frame, whether it succeeded
        SUCCESS: {"dtype": "bool", "shape": (1,), "names": None},
    }
    for camera in cameras:
        features[IMAGE_PREFIX + camera] = {
            "dtype": "video" if use_videos else "image",
            "shape": (height, width, 3),
            "names": ["height", "width", "channels"],
        }
    return features
