"""Fingertip contact: Hunt–Crossley normal force and a stick–slip tangential force.

Normal (seed §5, Hunt & Crossley 1975): ``F_n = k δⁿ + λ δⁿ δ̇`` with δ the penetration of a
surface point into the hemispherical tip of radius R and δ̇ its rate; n = 3/2 (Hertzian),
λ = 3k(1 − e)/(2 v⁻) from a restitution e at an impact speed v⁻; F_n ≥ 0 (no adhesion). The
closing is solved quasi-statically (every step brought to rest), where δ̇ = 0 and the damper
carries nothing: it shapes how a dynamic close gets there, not where it ends.

Tangential (the structure of Dopico et al. 2011: a spring anchored where sticking began, a
Coulomb slider when it gives), applied per surface point:

- a point that starts touching sticks, anchored at its current place on the tip (u = 0);
- sticking: ``F_t = −k_t u − c_t u̇``, u the tangential displacement from the anchor;
- stick → slip when ``|F_t| > μ F_n``: then ``|F_t| = μ F_n`` against the slip (in a quasi-static
  step the slip velocity points along the step's tangential displacement, i.e. along −F_t) and
  the anchor is dragged so that the spring sits on the cone's edge, ``k_t |u| = μ F_n``;
- slip → stick when a step needs no anchor drag any more (the slip velocity is zero);
- contact broken (δ ≤ 0): the state is reset, the next touch starts sticking afresh.

``k_t = κ · dF_n/dδ`` with κ = 2(1 − ν)/(2 − ν), Mindlin's ratio of tangential to normal
contact stiffness for an elastic body; ``c_t = 2√(k_t m)`` (critical damping of the mass m the
point carries) — like λ, inactive at rest.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from physai_ros.errors import InvalidInput


class ContactLaw(NamedTuple):
    """k: normal stiffness [N/m^n]; exponent: n; damping: λ/k [s/m]; mu: Coulomb coefficient;
    kt_ratio: κ (tangential/normal contact stiffness)."""

    k: float
    exponent: float
    damping: float
    mu: float
    kt_ratio: float


def contact_law(
    k: float,
    mu: float,
    poisson: float,
    restitution: float = 0.5,
    impact_speed: float = 0.1,
    exponent: float = 1.5,
) -> ContactLaw:
    """Validated law; damping from Hunt–Crossley's λ = 3k(1 − e)/(2v⁻) (e, v⁻ [m/s])."""
    if not (math.isfinite(k) and k > 0 and math.isfinite(mu) and mu > 0):
        raise InvalidInput(f"contact stiffness and mu must be finite and > 0, got {k!r}, {mu!r}")
    if not 0.0 <= restitution <= 1.0 or not impact_speed > 0.0:
        raise InvalidInput("restitution must be in [0, 1] and impact_speed > 0 [m/s]")
    kappa = 2 * (1 - poisson) / (2 - poisson)
    return ContactLaw(k, exponent, 1.5 * (1 - restitution) / impact_speed, mu, kappa)


def normal_force(law: ContactLaw, depth: np.ndarray, rate: np.ndarray | float = 0.0) -> np.ndarray:
    """Hunt–Crossley ``k δⁿ + λ δⁿ δ̇`` [N], zero where δ ≤ 0 and never pulling."""
    d = np.maximum(np.asarray(depth, dtype=float), 0.0)
    power = d**law.exponent
    return np.maximum(law.k * power * (1.0 + law.damping * np.asarray(rate, dtype=float)), 0.0)


def tangent_stiffness(law: ContactLaw, depth: np.ndarray) -> np.ndarray:
    """Stick spring ``k_t = κ n k δⁿ⁻¹`` [N/m] (zero out of contact)."""
    d = np.maximum(np.asarray(depth, dtype=float), 0.0)
    return law.kt_ratio * law.exponent * law.k * d ** (law.exponent - 1.0)


class Sticking(NamedTuple):
    """Per surface point, for one fingertip: touching, sliding in the last update, and the
    anchor relative to the tip centre [m]."""

    active: np.ndarray
    sliding: np.ndarray
    anchor: np.ndarray

    @staticmethod
    def empty(n: int) -> Sticking:
        return Sticking(np.zeros(n, bool), np.zeros(n, bool), np.zeros((n, 3)))


def touch(state: Sticking, rel: np.ndarray, depth: np.ndarray) -> Sticking:
    """New contacts stick where they touch; broken contacts are reset."""
    touching = depth > 0.0
    fresh = touching & ~state.active
    anchor = np.where(fresh[:, None], rel, state.anchor)
    anchor[~touching] = 0.0
    return Sticking(touching, state.sliding & touching, anchor)


def tangential(
    law: ContactLaw,
    rel: np.ndarray,
    unit: np.ndarray,
    depth: np.ndarray,
    state: Sticking,
    rate: np.ndarray | None = None,
    mass: np.ndarray | None = None,
) -> tuple[np.ndarray, Sticking, float]:
    """Stick–slip tangential forces [N] on the points, the updated state, and the largest
    anchor drag [m] (0 when everything sticks: the slip has stopped).

    rel: points relative to the tip centre [m]; unit: contact normals (tip → point); rate,
    mass: tangential velocity [m/s] and carried mass [kg] for the stick damper (None: at rest).
    """
    t = np.flatnonzero(state.active)
    force = np.zeros_like(rel)
    anchor, sliding = state.anchor.copy(), np.zeros(len(rel), bool)
    if t.size == 0:
        return force, Sticking(state.active, sliding, anchor), 0.0
    u_n = unit[t]
    slip = rel[t] - anchor[t]
    slip -= np.einsum("ij,ij->i", slip, u_n)[:, None] * u_n
    kt = tangent_stiffness(law, depth[t])
    trial = -kt[:, None] * slip
    if rate is not None and mass is not None:
        trial -= 2.0 * np.sqrt(kt * mass[t])[:, None] * rate[t]
    limit = law.mu * normal_force(law, depth[t])
    size = np.linalg.norm(trial, axis=1)
    slides = size > limit
    ft = trial.copy()
    drag = 0.0
    if slides.any():
        s = np.flatnonzero(slides)
        ft[s] = trial[s] * (limit[s] / size[s])[:, None]
        new = rel[t[s]] + ft[s] / kt[s, None]
        drag = float(np.max(np.linalg.norm(new - anchor[t[s]], axis=1)))
        anchor[t[s]] = new
    sliding[t] = slides
    force[t] = ft
    return force, Sticking(state.active, sliding, anchor), drag
