"""Pinhole cameras in both conventions a robot stack meets (lesson 07).

MuJoCo's camera frame looks along its −z axis with +y up (image rows grow *down*, so
``v = cy − f·y/(−z)``); the ROS/OpenCV optical frame looks along +z with +y down
(``u = fx·X/Z + cx``, ``v = fy·Y/Z + cy``). The two differ by 180° about x:
``(x, y, z)_mujoco → (x, −y, −z)_optical``. Getting this wrong flips the image, silently.

The image centre is ``(W/2, H/2)`` as in the lesson. Units: metres, pixels, degrees for fovy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from physai_ros.core.frames.spatial import transform
from physai_ros.errors import InvalidInput

FloatArray = NDArray[np.float64]

#: ``T_camera_optical``: optical-frame coordinates → MuJoCo camera-frame coordinates. It is a
#: 180° rotation about x and therefore its own inverse (``T_optical_camera`` is the same).
T_CAMERA_OPTICAL: FloatArray = transform(np.diag([1.0, -1.0, -1.0]), np.zeros(3))
T_CAMERA_OPTICAL.flags.writeable = False

#: The same rotation as a scalar-first quaternion (for a static TF edge camera → optical).
QUAT_CAMERA_OPTICAL = (0.0, 1.0, 0.0, 0.0)


@dataclass(frozen=True)
class PinholeIntrinsics:
    """Focal lengths and principal point [px] of an image ``width`` x ``height`` [px]."""

    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float

    def __post_init__(self) -> None:
        if self.width <= 0 or self.height <= 0:
            raise InvalidInput(f"image size must be positive, got {self.width}x{self.height}")
        values = (self.fx, self.fy, self.cx, self.cy)
        if not all(math.isfinite(v) for v in values) or self.fx <= 0 or self.fy <= 0:
            raise InvalidInput(f"intrinsics must be finite with fx, fy > 0, got {values}")

    @classmethod
    def from_fovy(cls, fovy_deg: float, width: int, height: int) -> PinholeIntrinsics:
        """Square pixels from the vertical field of view: ``f = (H/2) / tan(fovy/2)``.

        This is how MuJoCo renders a camera given ``fovy`` (its default for ``<camera>``).
        """
        if not math.isfinite(fovy_deg) or not 0.0 < fovy_deg < 180.0:
            raise InvalidInput(f"fovy_deg must be in (0, 180), got {fovy_deg}")
        f = (height / 2.0) / math.tan(math.radians(fovy_deg) / 2.0)
        return cls(width, height, f, f, width / 2.0, height / 2.0)

    @property
    def K(self) -> FloatArray:
        """OpenCV camera matrix ``[[fx, 0, cx], [0, fy, cy], [0, 0, 1]]``."""
        return np.array([[self.fx, 0.0, self.cx], [0.0, self.fy, self.cy], [0.0, 0.0, 1.0]])


def _points(p: ArrayLike, name: str) -> FloatArray:
    points = np.asarray(p, dtype=float)
    if points.shape[-1:] != (3,) or points.ndim > 2:
        raise InvalidInput(f"{name} must have shape (3,) or (N, 3), got {points.shape}")
    if not np.all(np.isfinite(points)):
        raise InvalidInput(f"{name} must be finite (no NaN/inf)")
    return points


def mujoco_to_optical(p_camera: ArrayLike) -> FloatArray:
    """MuJoCo camera-frame points → optical-frame points: ``(x, y, z) → (x, −y, −z)``."""
    return _points(p_camera, "p_camera") * np.array([1.0, -1.0, -1.0])


def optical_to_mujoco(p_optical: ArrayLike) -> FloatArray:
    """Optical-frame points → MuJoCo camera-frame points (the same flip)."""
    return _points(p_optical, "p_optical") * np.array([1.0, -1.0, -1.0])


def project_optical(intrinsics: PinholeIntrinsics, p_optical: ArrayLike) -> FloatArray:
    """Pixels ``(u, v)`` of optical-frame points (+z forward, +y down), shape (2,) or (N, 2).

    Points at or behind the image plane (``Z ≤ 0``) have no pixel; they raise InvalidInput
    rather than returning a mirrored pixel.
    """
    points = _points(p_optical, "p_optical")
    depth = points[..., 2]
    if np.any(depth <= 0.0):
        raise InvalidInput(f"points must be in front of the camera (Z > 0), got Z = {depth}")
    u = intrinsics.fx * points[..., 0] / depth + intrinsics.cx
    v = intrinsics.fy * points[..., 1] / depth + intrinsics.cy
    return np.stack([u, v], axis=-1)


def project_mujoco(intrinsics: PinholeIntrinsics, p_camera: ArrayLike) -> FloatArray:
    """Pixels ``(u, v)`` of MuJoCo camera-frame points (−z forward, +y up).

    ``u = cx + fx·x/(−z)``, ``v = cy − fy·y/(−z)``: the same pixels as
    ``project_optical(mujoco_to_optical(p))``, written out so each convention is testable.
    """
    points = _points(p_camera, "p_camera")
    depth = -points[..., 2]
    if np.any(depth <= 0.0):
        raise InvalidInput(
            f"points must be in front of the MuJoCo camera (z < 0), got z = {points[..., 2]}"
        )
    u = intrinsics.cx + intrinsics.fx * points[..., 0] / depth
    v = intrinsics.cy - intrinsics.fy * points[..., 1] / depth
    return np.stack([u, v], axis=-1)
