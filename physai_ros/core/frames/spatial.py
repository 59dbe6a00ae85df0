"""Rigid transforms as 4x4 homogeneous matrices, named "A from B" (lesson 07).

``T_AB`` maps coordinates expressed in frame B to frame A: ``p_A = T_AB @ [p_B, 1]``. Chains
compose by matrix product with the inner letters cancelling, ``T_AC = T_AB @ T_BC``; the
inverse is taken in closed form ``[Rᵀ, −Rᵀt]`` because it is exact for a rotation and cheaper
than a general matrix inverse. Quaternions follow MuJoCo: scalar first ``(w, x, y, z)``.

Positions are in metres, angles in radians.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.spatial.transform import Rotation

from physai_ros.errors import InvalidInput

FloatArray = NDArray[np.float64]

#: Quaternions shorter than this cannot be normalised meaningfully (all-zero is MuJoCo's
#: "unset" marker, not a rotation).
QUAT_MIN_NORM = 1e-12


def as_finite(value: ArrayLike, shape: tuple[int, ...], name: str) -> FloatArray:
    """``value`` as a float array of ``shape``; NaN/inf or a wrong shape raise InvalidInput.

    Every public function funnels its inputs through here so a bad number is reported with
    its name at the boundary instead of spreading NaN through a frame tree.
    """
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{name} must be numeric with shape {shape}, got {value!r}") from exc
    if array.shape != shape:
        raise InvalidInput(f"{name} must have shape {shape}, got {array.shape}")
    if not np.all(np.isfinite(array)):
        raise InvalidInput(f"{name} must be finite (no NaN/inf), got {array.tolist()}")
    return array


def transform(R: ArrayLike, t: ArrayLike) -> FloatArray:
    """4x4 ``[R t; 0 1]`` from a rotation (3x3, or MuJoCo's 9 row-major numbers) and ``t`` [m]."""
    rotation = as_finite(np.asarray(R, dtype=float).reshape(-1), (9,), "R").reshape(3, 3)
    T = np.eye(4)
    T[:3, :3] = rotation
    T[:3, 3] = as_finite(t, (3,), "t")
    return T


def transform_inv(T: ArrayLike) -> FloatArray:
    """Closed-form inverse of a rigid transform: ``T_BA = [Rᵀ, −Rᵀ t; 0 1]``."""
    M = as_finite(T, (4, 4), "T")
    R, t = M[:3, :3], M[:3, 3]
    out = np.eye(4)
    out[:3, :3] = R.T
    out[:3, 3] = -R.T @ t
    return out


def compose(*transforms: ArrayLike) -> FloatArray:
    """``T_AB @ T_BC @ …``: the chain in "A from B" order (inner letters cancel)."""
    out = np.eye(4)
    for index, T in enumerate(transforms):
        out = out @ as_finite(T, (4, 4), f"transforms[{index}]")
    return out


def transform_point(T: ArrayLike, p: ArrayLike) -> FloatArray:
    """Apply ``T_AB`` to points ``p_B`` of shape (3,) or (N, 3): ``R p + t`` [m]."""
    M = as_finite(T, (4, 4), "T")
    points = np.asarray(p, dtype=float)
    if points.shape[-1:] != (3,) or points.ndim > 2:
        raise InvalidInput(f"p must have shape (3,) or (N, 3), got {points.shape}")
    if not np.all(np.isfinite(points)):
        raise InvalidInput("p must be finite (no NaN/inf)")
    return points @ M[:3, :3].T + M[:3, 3]


def point_in_frame(T_WF: ArrayLike, p_W: ArrayLike) -> FloatArray:
    """Coordinates in frame F of world points ``p_W``: ``T_WF⁻¹ p_W`` = ``Rᵀ (p − t)``."""
    return transform_point(transform_inv(T_WF), p_W)


def normalize_quat(quat: ArrayLike, name: str = "quat") -> FloatArray:
    """Unit quaternion (w, x, y, z); MuJoCo normalises qpos quaternions the same way."""
    q = as_finite(quat, (4,), name)
    norm = float(np.linalg.norm(q))
    if norm < QUAT_MIN_NORM:
        raise InvalidInput(f"{name} has norm {norm:.3g}; a rotation quaternion cannot be zero")
    return q / norm


def quat_to_mat(quat: ArrayLike) -> FloatArray:
    """3x3 rotation of a scalar-first quaternion (normalised first, like MuJoCo)."""
    w, x, y, z = normalize_quat(quat)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def mat_to_quat(R: ArrayLike) -> FloatArray:
    """Scalar-first unit quaternion of a rotation matrix, with ``w ≥ 0`` (one of ±q)."""
    rotation = as_finite(np.asarray(R, dtype=float).reshape(-1), (9,), "R").reshape(3, 3)
    x, y, z, w = Rotation.from_matrix(rotation).as_quat()
    q = np.array([w, x, y, z])
    return -q if w < 0 else q


def quat_z_along(direction: ArrayLike) -> FloatArray:
    """Scalar-first quaternion (w ≥ 0) of the smallest rotation taking +z onto ``direction``:
    a frame whose z axis points along it (a contact frame, z along its force)."""
    d = as_finite(direction, (3,), "direction")
    size = float(np.linalg.norm(d))
    if size == 0.0:
        raise InvalidInput("direction must be non-zero")
    rotation, _ = Rotation.align_vectors([d / size], [[0.0, 0.0, 1.0]])
    x, y, z, w = rotation.as_quat()
    q = np.array([w, x, y, z])
    return -q if w < 0 else q


def mats_to_quats(R: ArrayLike) -> FloatArray:
    """``mat_to_quat`` for a stack of rotation matrices (n, 3, 3) → (n, 4), in one SciPy call:
    a TF message carries a dozen rotations, and one call per rotation costs 10× more."""
    stack = np.asarray(R, dtype=float)
    if stack.ndim != 3 or stack.shape[1:] != (3, 3) or not np.all(np.isfinite(stack)):
        raise InvalidInput(f"R must be a finite (n, 3, 3) stack, got shape {stack.shape}")
    xyzw = Rotation.from_matrix(stack).as_quat()
    q = xyzw[:, [3, 0, 1, 2]]
    return np.where(q[:, :1] < 0, -q, q)


def axis_angle_to_mat(axis: ArrayLike, angle: float) -> FloatArray:
    """Rotation by ``angle`` [rad] about ``axis`` (any non-zero length; normalised here)."""
    a = as_finite(axis, (3,), "axis")
    norm = float(np.linalg.norm(a))
    if norm < QUAT_MIN_NORM:
        raise InvalidInput("axis must be non-zero to define a rotation")
    angle = float(as_finite(angle, (), "angle"))
    return Rotation.from_rotvec(a / norm * angle).as_matrix()


def pose_to_transform(pos: ArrayLike, quat: ArrayLike) -> FloatArray:
    """MuJoCo's ``(pos, quat)`` pair (quat scalar-first) as a 4x4 ``T_parent_child``."""
    return transform(quat_to_mat(quat), pos)


def transform_to_pose(T: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """``(pos [m], quat (w, x, y, z))`` of a transform, e.g. for a TF message."""
    M = as_finite(T, (4, 4), "T")
    return M[:3, 3].copy(), mat_to_quat(M[:3, :3])


def yaw_transform(yaw: float, t: Sequence[float] = (0.0, 0.0, 0.0)) -> FloatArray:
    """Rotation by ``yaw`` [rad] about +z followed by translation ``t`` [m] (a base placement)."""
    return transform(axis_angle_to_mat((0.0, 0.0, 1.0), yaw), t)
