"""Fingertip–node contact: Hunt–Crossley normal force and a stick–slip tangential force.

Normal (seed §5, Hunt & Crossley 1975): ``F_n = k δⁿ + λ δⁿ δ̇`` with δ the node's penetration
into the hemispherical tip of radius R and δ̇ its rate; n = 3/2 (Hertzian), λ = 3k(1 − e)/(2 v⁻)
from a restitution e at an impact speed v⁻; F_n ≥ 0 (no adhesion when the damper would pull).

Tangential (the structure of Dopico et al. 2011; a spring–damper anchored where sticking began,
a Coulomb slider when it gives):

- a node that starts touching sticks, anchored at its current point on the tip (u = 0);
- sticking: ``F_t = −k_t u − c_t v_t``, u the tangential displacement from the anchor, v_t the
  tangential velocity of the node relative to the tip;
- stick → slip when ``|F_t| > μ F_n``; while slipping ``F_t = −μ F_n v_t/|v_t|`` and the anchor is
  dragged so that the spring stays on the cone's edge (``k_t |u| = μ F_n``);
- slip → stick when ``|v_t| < v_stick`` and the spring force is inside the cone;
- contact broken (δ ≤ 0): the state is reset, the next touch starts sticking afresh.

``k_t = κ · dF_n/dδ`` with κ = 2(1 − ν)/(2 − ν), Mindlin's ratio of tangential to normal
contact stiffness for an elastic body; ``c_t = 2√(k_t m)`` (critical damping of the node).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from physai_ros.errors import InvalidInput


class ContactLaw(NamedTuple):
    """k: normal stiffness [N/m^n]; exponent: n; damping: λ/k [s/m] (so λ = k·damping);
    mu: Coulomb coefficient; kt_ratio: κ; v_stick: slip → stick speed [m/s]."""

    k: float
    exponent: float
    damping: float
    mu: float
    kt_ratio: float
    v_stick: float


def contact_law(
    k: float,
    mu: float,
    poisson: float,
    restitution: float = 0.5,
    impact_speed: float = 0.1,
    exponent: float = 1.5,
    v_stick: float = 1e-4,
) -> ContactLaw:
    """Validated law; damping from Hunt–Crossley's λ = 3k(1 − e)/(2v⁻) (e, v⁻ [m/s])."""
    if not (math.isfinite(k) and k > 0 and math.isfinite(mu) and mu > 0):
        raise InvalidInput(f"contact stiffness and mu must be finite and > 0, got {k!r}, {mu!r}")
    if not 0.0 <= restitution <= 1.0 or impact_speed <= 0.0:
        raise InvalidInput("restitution must be in [0, 1] and impact_speed > 0 [m/s]")
    kappa = 2 * (1 - poisson) / (2 - poisson)
    return ContactLaw(k, exponent, 1.5 * (1 - restitution) / impact_speed, mu, kappa, v_stick)


class TipState(NamedTuple):
    """Per node, for one fingertip: touching, sliding, anchor relative to the tip centre [m]."""

    active: np.ndarray
    sliding: np.ndarray
    anchor: np.ndarray

    @staticmethod
    def empty(n: int) -> TipState:
        return TipState(np.zeros(n, bool), np.zeros(n, bool), np.zeros((n, 3)))


class TipForces(NamedTuple):
    """force: (N, 3) on the nodes [N]; normal: (N,) F_n [N]; tangential: (N, 3) F_t [N];
    unit: (N, 3) contact normals (tip → node); state: the updated stick–slip state."""

    force: np.ndarray
    normal: np.ndarray
    tangential: np.ndarray
    unit: np.ndarray
    state: TipState


def tip_forces(
    law: ContactLaw,
    x: np.ndarray,
    v: np.ndarray,
    node_mass: np.ndarray,
    centre: np.ndarray,
    tip_velocity: np.ndarray,
    radius: float,
    state: TipState,
) -> TipForces:
    """Contact forces of a spherical tip (centre [m], velocity [m/s], radius [m]) on nodes."""
    n = len(x)
    # only points near the tip (or still holding contact state) are worked on
    near = np.flatnonzero(
        (np.einsum("ij,ij->i", x - centre, x - centre) < radius * radius) | state.active
    )
    rel = x[near] - centre
    dist = np.linalg.norm(rel, axis=1)
    depth = radius - dist
    touching = depth > 0.0
    unit = np.zeros((n, 3))
    normal = np.zeros(n)
    tangential = np.zeros((n, 3))
    active = np.zeros(n, bool)
    sliding = np.zeros(n, bool)
    anchor = np.zeros((n, 3))
    t = near[touching]
    if t.size:
        rel_t = rel[touching]
        u_n = rel_t / dist[touching, None]
        unit[t] = u_n
        active[t] = True
        fresh = ~state.active[t]
        anchor_t = np.where(fresh[:, None], rel_t, state.anchor[t])
        dv = v[t] - tip_velocity
        rate = -np.einsum("ij,ij->i", dv, u_n)  # δ̇ > 0 while pressing in
        d_t = depth[touching]
        fn = np.maximum(law.k * d_t**law.exponent * (1.0 + law.damping * rate), 0.0)
        normal[t] = fn
        vt = dv - np.einsum("ij,ij->i", dv, u_n)[:, None] * u_n
        slip = rel_t - anchor_t
        slip -= np.einsum("ij,ij->i", slip, u_n)[:, None] * u_n
        kt = law.kt_ratio * law.exponent * law.k * d_t ** (law.exponent - 1.0)
        ct = 2.0 * np.sqrt(kt * node_mass[t])
        trial = -kt[:, None] * slip - ct[:, None] * vt
        limit = law.mu * fn
        speed = np.linalg.norm(vt, axis=1)
        was_sliding = state.sliding[t] & ~fresh
        slides = (np.linalg.norm(trial, axis=1) > limit) | (was_sliding & (speed >= law.v_stick))
        ft = trial
        if slides.any():
            s = np.flatnonzero(slides)
            direction = np.where(
                (speed[s] >= law.v_stick)[:, None],
                -vt[s] / np.maximum(speed[s], 1e-300)[:, None],
                trial[s] / np.maximum(np.linalg.norm(trial[s], axis=1), 1e-300)[:, None],
            )
            ft[s] = limit[s, None] * direction
            # drag the anchor: the spring alone would give the sliding force
            anchor_t[s] = rel_t[s] + ft[s] / np.maximum(kt[s], 1e-300)[:, None]
        tangential[t] = ft
        sliding[t] = slides
        anchor[t] = anchor_t
    force = normal[:, None] * unit + tangential
    return TipForces(force, normal, tangential, unit, TipState(active, sliding, anchor))
