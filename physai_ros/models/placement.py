"""Where a robot stands in the world: its base pose as a frame its root bodies hang on.

One function for the scene (physics) and the TF publisher (frames), so both place the base
identically.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import mujoco
import numpy as np

from physai_ros.errors import InvalidInput


def finite_vector(name: str, value: Sequence[float], sizes: tuple[int, ...]) -> np.ndarray:
    """``value`` as a 1-D float array of one of ``sizes`` finite numbers, else a clear error."""
    array = np.asarray(value, dtype=float)
    if array.ndim != 1 or array.size not in sizes or not np.all(np.isfinite(array)):
        raise InvalidInput(
            f"{name} must be {' or '.join(map(str, sizes))} finite numbers, got {value!r}"
        )
    return array


def yaw_quat(yaw_deg: float) -> np.ndarray:
    """Unit quaternion (w, x, y, z) of a rotation by ``yaw_deg`` [deg] about the world z axis."""
    half = math.radians(yaw_deg) / 2.0
    return np.array([math.cos(half), 0.0, 0.0, math.sin(half)])


def place_robot(spec: mujoco.MjSpec, base_pos: Sequence[float], base_yaw_deg: float) -> None:
    """Put the robot's root bodies on a frame at the base pose (composes with their own pose).

    Shared by the scene and the TF publisher so that sim and TF place the base identically.
    """
    pos = finite_vector("base_pos", base_pos, (3,))
    frame = spec.worldbody.add_frame(pos=pos, quat=yaw_quat(float(base_yaw_deg)))
    for body in list(spec.worldbody.bodies):
        body.set_frame(frame)
