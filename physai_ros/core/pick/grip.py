"""Grasp physics of an antipodal two-jaw grip: friction cone, squeeze, outcome.

Why these few formulas matter: the jaws press horizontally, so only friction holds the object
up. Each contact carries at most ``μ N_i`` tangentially, hence the grip holds while
``μ (N1 + N2) ≥ m (g + a)`` (Lynch & Park, Modern Robotics, ch. 12). Everything else in a
scripted pick exists to put the jaws where this inequality is true.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

from physai_ros.errors import InvalidInput

G = 9.81  # [m/s²] the lesson's gravity
Outcome = Literal["held", "dropped", "not closed"]
OUTCOMES: tuple[Outcome, ...] = ("held", "dropped", "not closed")


def _positive(name: str, value: float) -> float:
    value = float(value)
    if not math.isfinite(value) or value <= 0.0:
        raise InvalidInput(f"{name} must be a positive finite number, got {value!r}")
    return value


def _normal_sum(normal_forces: Sequence[float] | np.ndarray) -> float:
    forces = np.asarray(normal_forces, dtype=float)
    if forces.size == 0 or not np.all(np.isfinite(forces)) or np.any(forces < 0.0):
        raise InvalidInput(f"normal_forces must be finite and ≥ 0 [N], got {normal_forces!r}")
    return float(forces.sum())


def cone_ratio(
    mu: float,
    normal_forces: Sequence[float] | np.ndarray,
    mass: float,
    g: float = G,
    accel: float = 0.0,
) -> float:
    """Friction-cone margin ``μ (N1 + N2) / (m (g + a))`` of an antipodal grasp.

    mu: jaw–object friction coefficient; normal_forces: jaw normal forces [N]; mass [kg];
    g: gravity [m/s²]; accel: upward acceleration while lifting [m/s²]. Below 1 the object
    slides out: friction is the only force that points up.
    """
    if not math.isfinite(mu) or mu < 0.0:
        raise InvalidInput(f"mu must be finite and ≥ 0, got {mu!r}")
    load = _positive("mass", mass) * _positive("g + accel", g + accel)
    return mu * _normal_sum(normal_forces) / load


def max_mass(mu: float, normal_forces: Sequence[float] | np.ndarray, g: float = G) -> float:
    """Heaviest object [kg] a squeeze of ``normal_forces`` [N] holds at rest by friction alone."""
    if not math.isfinite(mu) or mu < 0.0:
        raise InvalidInput(f"mu must be finite and ≥ 0, got {mu!r}")
    return mu * _normal_sum(normal_forces) / _positive("g", g)


def cone_use(f_contact: Sequence[float] | np.ndarray, mu: float) -> float:
    """How much of its friction cone one contact uses: ``|f_t| / (μ f_n)``.

    f_contact: contact-frame force (normal, tangent1, tangent2) [N], the order
    ``mj_contactForce`` returns. 1 means sliding (the force is on the cone's surface).
    A contact that does not push (f_n ≤ 0) has no cone to use; that is an input error.
    """
    f = np.asarray(f_contact, dtype=float)
    if f.shape[0] < 3 or not np.all(np.isfinite(f[:3])) or f[0] <= 0.0:
        raise InvalidInput(f"f_contact must start (normal > 0, t1, t2) [N], got {f_contact!r}")
    return float(np.hypot(f[1], f[2]) / (_positive("mu", mu) * f[0]))


def squeeze_from_cap(tau_max: float, r_jaw: float) -> float:
    """Total squeeze ``N1 + N2 = 2 τ / r`` [N] of a stalled parallel jaw.

    tau_max: servo torque cap [N·m]; r_jaw: moment arm of the moving jaw's contacts about its
    hinge [m]. The moving jaw presses ``τ/r``; the fixed jaw pushes back as hard, so the force
    is doubled, not split.
    """
    return 2.0 * _positive("tau_max", tau_max) / _positive("r_jaw", r_jaw)


def pick_outcome(lift: float, touches_both: bool, closed: bool, min_lift: float = 0.04) -> Outcome:
    """Physical success test of a pick, no weld involved.

    lift: cube bottom height above the table at the end [m]; touches_both: both jaws still in
    contact; closed: the close state ended on the sensed grip (not on its timeout);
    min_lift [m]. Held if lifted and still in both jaws; else dropped (the grip had formed) or
    not closed.
    """
    if lift >= min_lift and touches_both:
        return "held"
    return "dropped" if closed else "not closed"
