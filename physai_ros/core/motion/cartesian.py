"""Cartesian straight-line moves: IK at every waypoint of a time-scaled line (lesson 13).

A quintic in joint space is smooth, but the hand wanders off the straight line between its end
points (5.38 cm on the lesson's 50 cm Panda move); solving IK at every waypoint of a line keeps
the hand on it, at the price of a longer joint path. The timing is the same time scaling either
way, so the two are directly comparable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import mujoco
import numpy as np

from physai_ros.core.motion.kinematics import solve_ik
from physai_ros.core.motion.time_scaling import TimeScaling, get_shape
from physai_ros.errors import InvalidInput


class CartesianPath(NamedTuple):
    """Joint waypoints [rad], shape (n, joints), at path parameters ``s`` in [0, 1] along the
    line, and the worst IK position error over the waypoints [m]."""

    s: np.ndarray
    q: np.ndarray
    max_ik_error: float


def straight_line(
    model: mujoco.MjModel,
    site: str,
    joints: Sequence[str],
    start: Sequence[float],
    end: Sequence[float],
    q_init: Sequence[float],
    quat: Sequence[float] | None = None,
    *,
    n_points: int = 101,
    shape: str | TimeScaling = "quintic",
    tol: float = 1e-8,
    rot_tol: float = 1e-8,
) -> CartesianPath:
    """Joint waypoints that put ``site`` on the segment start→end [m, world], timed by ``shape``
    (waypoint k sits at s(k/(n−1)) of the way), each IK seeded with the previous solution.

    quat: orientation to hold (scalar-first, world), or ``None`` for position only.
    Raises ``InvalidInput`` if a waypoint's IK does not converge (the line leaves the reach).
    """
    if n_points < 2:
        raise InvalidInput(f"a line needs n_points >= 2, got {n_points}")
    a, b = np.asarray(start, dtype=float), np.asarray(end, dtype=float)
    if a.shape != (3,) or b.shape != (3,) or not np.all(np.isfinite([*a, *b])):
        raise InvalidInput(f"start and end must be finite 3-vectors [m], got {start}, {end}")
    data = mujoco.MjData(model)
    s = get_shape(shape)(np.linspace(0.0, 1.0, n_points))
    q, worst, path = np.asarray(q_init, dtype=float), 0.0, []
    for k, sk in enumerate(s):
        target = a + sk * (b - a)
        result = solve_ik(model, data, site, target, joints, q, quat, tol=tol, rot_tol=rot_tol)
        if not result.converged:
            raise InvalidInput(
                f"IK did not converge at waypoint {k} {np.round(target, 4).tolist()} m "
                f"(error {result.error * 1e3:.2f} mm): the line leaves the robot's reach"
            )
        q = np.asarray(result.q, dtype=float)
        path.append(q)
        worst = max(worst, float(result.error))
    return CartesianPath(s, np.array(path), worst)
