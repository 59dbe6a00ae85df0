"""Standard grasp quality: force closure and the Ferrari–Canny ε of the linearised cones.

Why besides Q1/Q2: those are the seed's geometric criteria (near-equilateral, centred); they say
nothing about how large a disturbance the grasp resists. ε (Ferrari & Canny 1992, "L1" form)
is the radius of the largest wrench-space ball around the origin inside the convex hull of the
contacts' primitive wrenches, each contact pressing with unit normal force: the grasp is force
closure exactly when ε > 0. Friction cones are linearised with ``n_edges`` edges; torques are
divided by a length (the object size) so that forces and torques are comparable.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.spatial import ConvexHull, QhullError

from physai_ros.errors import InvalidInput

_CLOSURE_TOL = 1e-9  # ε below this is "on the boundary": not force closure


class Quality(NamedTuple):
    """force_closure: the origin is strictly inside the wrench hull; epsilon: Ferrari–Canny ε
    [N per unit normal force, torques divided by ``torque_scale``]; n_wrenches: hull points."""

    force_closure: bool
    epsilon: float
    n_wrenches: int


def tangent_basis(normal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors spanning the plane normal to the unit vector ``normal``."""
    helper = np.array([1.0, 0.0, 0.0]) if abs(normal[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    t1 = np.cross(normal, helper)
    t1 /= np.linalg.norm(t1)
    return t1, np.cross(normal, t1)


def primitive_wrenches(
    points: np.ndarray,
    push_dirs: np.ndarray,
    com: np.ndarray,
    mu: float,
    n_edges: int = 8,
    torsion: float = 0.0,
    torque_scale: float = 1.0,
) -> np.ndarray:
    """(K, 6) wrenches on the object of unit-normal-force contacts at the cone edges.

    points: (C, 3) contact points [m]; push_dirs: (C, 3) unit directions in which each contact
    pushes the object (the inward surface normal); mu: Coulomb coefficient; torsion: soft-finger
    torsional friction length γ [m] (|τ_n| ≤ γ f_n, MuJoCo's torsional coefficient; 0 = hard
    point contact); torque_scale: length [m] dividing torques.
    """
    if mu < 0.0 or n_edges < 3 or torsion < 0.0 or torque_scale <= 0.0:
        raise InvalidInput("need mu ≥ 0, n_edges ≥ 3, torsion ≥ 0, torque_scale > 0")
    angles = 2.0 * np.pi * np.arange(n_edges) / n_edges
    rows = []
    for p, n in zip(points, push_dirs, strict=True):
        t1, t2 = tangent_basis(n)
        forces = n + mu * (np.cos(angles)[:, None] * t1 + np.sin(angles)[:, None] * t2)
        arm = p - com
        rows.append(np.hstack([forces, np.cross(arm, forces) / torque_scale]))
        if torsion > 0.0:
            for sign in (-1.0, 1.0):
                torque = np.cross(arm, n) + sign * torsion * n
                rows.append(np.hstack([n, torque / torque_scale])[None, :])
    return np.vstack(rows)


def grasp_quality(
    points: np.ndarray,
    push_dirs: np.ndarray,
    com: np.ndarray,
    mu: float,
    *,
    n_edges: int = 8,
    torsion: float = 0.0,
    torque_scale: float = 1.0,
) -> Quality:
    """Force closure and Ferrari–Canny ε of contacts (see :func:`primitive_wrenches`).

    A hull that is not full-dimensional (two hard point contacts cannot resist a twist about
    their common axis) has the origin on its boundary: ε = 0, not force closure.
    """
    wrenches = primitive_wrenches(points, push_dirs, com, mu, n_edges, torsion, torque_scale)
    if np.linalg.matrix_rank(wrenches, tol=1e-9) < 6:
        return Quality(False, 0.0, len(wrenches))
    try:
        hull = ConvexHull(wrenches)
    except QhullError:  # numerically flat: the origin cannot be strictly inside
        return Quality(False, 0.0, len(wrenches))
    # qhull facets: normal · x + offset ≤ 0 inside, unit normals: −offset is the distance
    distance = float(np.min(-hull.equations[:, -1]))
    closure = distance > _CLOSURE_TOL
    return Quality(closure, distance if closure else 0.0, len(wrenches))
