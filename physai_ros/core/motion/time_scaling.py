"""Time scalings and joint references: *when* the arm is where along a path (lesson 13).

A point-to-point move is ``q(t) = q0 + s(t/T)·Δq``: the path is fixed by the two end points, the
time scaling ``s(u)`` (``s(0) = 0``, ``s(1) = 1``, ``u = t/T``) decides the speed, acceleration
and jerk. The polynomial scalings are not typed in: each one is *derived* from its boundary
conditions by one linear solve (:func:`poly_from_boundary`), so "cubic = rest at both ends" and
"quintic = rest and zero acceleration at both ends" are the definitions, and the textbook
coefficients fall out. By the chain rule the r-th time derivative is ``Δq·s⁽ʳ⁾(u)/Tʳ``: halving
T multiplies accelerations by 4 and jerks by 8.

Every scaling is a SciPy ``PPoly`` in normalised time, so piecewise shapes (the trapezoid) and
polynomials share one evaluation path, and their peaks and jumps are found exactly from the
pieces (:meth:`TimeScaling.peak`, :meth:`TimeScaling.jump`) — the numbers the duration limits
in :mod:`physai_ros.core.motion.limits` are computed from. Multi-waypoint references use SciPy
splines
(:func:`spline_reference`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from math import factorial

import numpy as np
from numpy.polynomial import polynomial as npoly
from scipy.interpolate import BPoly, BSpline, CubicSpline, PPoly, make_interp_spline

from physai_ros.core.frames.joint_names import check_joint_names
from physai_ros.errors import InvalidInput

MAX_ORDER = 3
"""Highest derivative the references provide: jerk (what libfranka's rate limits end at)."""

Condition = tuple[float, int, float]
"""``(u, derivative order r, value)``: "the r-th derivative of s at u equals value"."""


def poly_from_boundary(conditions: Sequence[Condition], degree: int) -> np.ndarray:
    """Power-basis coefficients ``c`` (``s = Σ c_k u^k``) meeting every boundary condition.

    Why one solve: ``d^r/du^r u^k = k!/(k-r)! u^(k-r)`` makes each condition one linear equation
    in the coefficients, so ``degree + 1`` conditions fix the polynomial. Raises ``InvalidInput``
    if the count does not match or the conditions are contradictory (singular system).
    """
    if len(conditions) != degree + 1:
        raise InvalidInput(
            f"a degree-{degree} polynomial needs {degree + 1} conditions, got {len(conditions)}"
        )
    rows = [
        [
            factorial(k) / factorial(k - r) * u ** (k - r) if k >= r else 0.0
            for k in range(degree + 1)
        ]
        for u, r, _ in conditions
    ]
    try:
        return np.linalg.solve(np.array(rows), np.array([v for _, _, v in conditions], dtype=float))
    except np.linalg.LinAlgError as err:
        raise InvalidInput(
            f"boundary conditions {list(conditions)} do not fix a polynomial"
        ) from err


def _rest_conditions(order: int) -> list[Condition]:
    """``s(0) = 0``, ``s(1) = 1`` and derivatives 1..order zero at both ends."""
    base: list[Condition] = [(0.0, 0, 0.0), (1.0, 0, 1.0)]
    return base + [(u, r, 0.0) for r in range(1, order + 1) for u in (0.0, 1.0)]


@dataclass(frozen=True)
class TimeScaling:
    """A time scaling ``s(u)`` on ``u ∈ [0, 1]`` as a piecewise polynomial.

    name: shape name ("quintic", …). pieces: SciPy ``PPoly`` on breakpoints ``0 … 1``.
    Outside ``[0, 1]`` the move is at rest: ``s = 0`` before, ``s = 1`` after.
    """

    name: str
    pieces: PPoly = field(repr=False)
    peaks: tuple[float, ...] = field(init=False, repr=False)
    jumps: tuple[float, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # Computed once: the limit checks ask for them for every move.
        orders = range(MAX_ORDER + 1)
        object.__setattr__(self, "peaks", tuple(self._peak(r) for r in orders))
        object.__setattr__(self, "jumps", tuple(self._jump(r) for r in orders))

    def peak(self, order: int) -> float:
        """Exact ``max |s^(order)|`` over ``[0, 1]`` (order ≤ 3), one-sided at breakpoints."""
        return self.peaks[order]

    def jump(self, order: int) -> float:
        """Largest jump of ``s^(order)`` (order ≤ 3) at a breakpoint or against rest at an end.

        A jump in derivative m shows up, at a control period ``dt``, as ``jump/dt`` in
        derivative m + 1: the "∞" of the lesson's table made finite by sampling.
        """
        return self.jumps[order]

    def __call__(self, u: np.ndarray | float, order: int = 0) -> np.ndarray:
        """``d^order s / du^order`` at ``u`` (clipped to [0, 1]; one-sided at the ends)."""
        return self.pieces(np.clip(u, 0.0, 1.0), order)

    def _piece_polys(self) -> list[tuple[float, np.ndarray]]:
        """(width, power-basis coefficients in local ``w = u - start``) for each piece."""
        c, x = self.pieces.c, self.pieces.x
        return [(float(x[i + 1] - x[i]), c[::-1, i]) for i in range(c.shape[1])]

    def _peak(self, order: int) -> float:
        """Extremes of a polynomial lie at piece ends or at real roots of the next derivative."""
        best = 0.0
        for width, coef in self._piece_polys():
            d = npoly.polyder(coef, order) if order else coef
            roots = npoly.polyroots(npoly.polyder(d)) if len(d) > 1 else np.array([])
            inner = [r.real for r in np.atleast_1d(roots) if abs(r.imag) < 1e-12]
            points = np.array([0.0, width] + [r for r in inner if 0.0 < r < width])
            best = max(best, float(np.max(np.abs(npoly.polyval(points, d)))))
        return best

    def _jump(self, order: int) -> float:
        """Jumps between adjacent pieces' end values, and against rest (s = 0 / 1, s⁽ʳ⁾ = 0)."""
        values = []
        for width, coef in self._piece_polys():
            d = npoly.polyder(coef, order) if order else coef
            values.append((float(npoly.polyval(0.0, d)), float(npoly.polyval(width, d))))
        rest_start, rest_end = (0.0, 1.0) if order == 0 else (0.0, 0.0)
        jumps = [abs(values[0][0] - rest_start), abs(rest_end - values[-1][1])]
        jumps += [abs(values[i + 1][0] - values[i][1]) for i in range(len(values) - 1)]
        scale = max(1.0, max(abs(v) for pair in values for v in pair))
        return max(jumps) if max(jumps) > 1e-9 * scale else 0.0  # round-off is not a jump


def polynomial_scaling(name: str, rest_order: int) -> TimeScaling:
    """The polynomial at rest to derivative ``rest_order`` at both ends (degree 2·order + 1)."""
    coef = poly_from_boundary(_rest_conditions(rest_order), 2 * rest_order + 1)
    return TimeScaling(name, PPoly(coef[::-1, None], [0.0, 1.0]))


def trapezoid_scaling(ta: float = 1 / 3) -> TimeScaling:
    """Trapezoidal velocity: accelerate for ``ta``, cruise, decelerate (fractions of T).

    The acceleration ``a = 1/(ta(1-ta))`` is the one that makes ``s(1) = 1``.
    """
    if not 0.0 < ta <= 0.5:
        raise InvalidInput(f"trapezoid ta must be in (0, 0.5] (fraction of the move), got {ta!r}")
    a = 1.0 / (ta * (1.0 - ta))
    mid = 0.5 * a * ta**2
    # PPoly rows: highest power first, in the local variable of each piece.
    c = np.array([[0.5 * a, 0.0, -0.5 * a], [0.0, a * ta, a * ta], [0.0, mid, 1.0 - mid]])
    if ta == 0.5:  # no cruise: triangle velocity profile
        return TimeScaling("trapezoid", PPoly(c[:, [0, 2]], [0.0, 0.5, 1.0]))
    return TimeScaling("trapezoid", PPoly(c, [0.0, ta, 1.0 - ta, 1.0]))


SHAPES: dict[str, TimeScaling] = {
    "step": TimeScaling("step", PPoly(np.array([[1.0]]), [0.0, 1.0])),
    "linear": TimeScaling("linear", PPoly(np.array([[1.0], [0.0]]), [0.0, 1.0])),
    "trapezoid": trapezoid_scaling(),
    "cubic": polynomial_scaling("cubic", 1),
    "quintic": polynomial_scaling("quintic", 2),
    "septic": polynomial_scaling("septic", 3),
}
"""The lesson's shapes by name (trapezoid with ta = 1/3)."""

_QUINTIC = np.round(SHAPES["quintic"].pieces.c[::-1, 0], 9)  # c0 … c5, lowest power first
"""The derived quintic's power-basis coefficients. Rounded to 1e-9: the solve leaves ~1e-14 of
round-off on what are integers (0, 0, 0, 10, −15, 6)."""
if np.any(_QUINTIC[:3]):  # rest at u = 0 to the 2nd derivative: s = u³ (c3 + c4 u + c5 u²)
    raise AssertionError(f"the quintic is not u³·(…): {_QUINTIC}")
_C3, _C4, _C5 = (float(c) for c in _QUINTIC[3:])


def minjerk(u: float) -> float:
    """The quintic time scaling (minimum jerk, ``u³(10 − 15u + 6u²)``) at one ``u``, clipped to
    [0, 1]: zero velocity and acceleration at both ends, so a move starts and stops without a
    kick.

    The scalar fast path of ``SHAPES["quintic"]`` for per-step loops (the pick machine's ramps,
    the sim's jaw servo ramp; a lesson sweep calls it ~10⁶ times): its cached coefficients in
    plain floats, about 20× faster than evaluating the ``PPoly``. Evaluated as ``u³ (c3 + c4 u +
    c5 u²)``, so ``s(0) = 0`` and ``s(1) = 1`` hold exactly, and bit for bit as the closed form
    the lessons' sweeps were measured with (Horner's order moves the last bit, and a sweep's
    marginal picks with it).
    """
    u = min(1.0, max(0.0, float(u)))
    return u**3 * (_C3 + _C4 * u + _C5 * u * u)


def get_shape(shape: str | TimeScaling) -> TimeScaling:
    """Resolve a shape name; ``InvalidInput`` lists the valid names."""
    if isinstance(shape, TimeScaling):
        return shape
    if shape not in SHAPES:
        raise InvalidInput(f"unknown time scaling {shape!r}; valid: {sorted(SHAPES)}")
    return SHAPES[shape]


def joint_reference(
    shape: str | TimeScaling, t: float, duration: float, q0: np.ndarray, dq: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Reference angle [rad], speed [rad/s] and acceleration [rad/s²] at time t [s].

    Controller convention (the lesson's loop): the move is at rest unless ``0 < t < T``, so the
    first tick at ``t = 0`` commands exactly the state the robot was resting in.
    """
    s = get_shape(shape)
    u = min(max(t / duration, 0.0), 1.0) if duration > 0 else 1.0
    moving = 0.0 < t < duration
    s0 = float(s(u))
    s1 = float(s(u, 1)) / duration if moving else 0.0
    s2 = float(s(u, 2)) / duration**2 if moving else 0.0
    return q0 + s0 * dq, s1 * dq, s2 * dq


def _finite_vector(
    name: str, values: Sequence[float] | np.ndarray, joints: Sequence[str]
) -> np.ndarray:
    """Validate a per-joint vector; the message names the first bad joint."""
    arr = np.asarray(values, dtype=float)
    if arr.shape != (len(joints),):
        raise InvalidInput(f"{name} must have one value per joint {list(joints)}, got {values!r}")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise InvalidInput(f"{name} of joint {joints[bad[0]]!r} is {arr[bad[0]]} (not finite)")
    return arr


@dataclass(frozen=True)
class JointMove:
    """A point-to-point move of named joints from ``start`` to ``goal`` [rad]."""

    joint_names: tuple[str, ...]
    start: np.ndarray
    goal: np.ndarray

    def __post_init__(self) -> None:
        names = check_joint_names(self.joint_names)
        object.__setattr__(self, "joint_names", names)
        object.__setattr__(self, "start", _finite_vector("start", self.start, names))
        object.__setattr__(self, "goal", _finite_vector("goal", self.goal, names))

    @property
    def delta(self) -> np.ndarray:
        """``Δq = goal − start`` [rad]."""
        return self.goal - self.start

    def shaped(self, shape: str | TimeScaling, duration: float) -> ShapedMove:
        """This move timed by ``shape`` over ``duration`` [s]."""
        if not np.isfinite(duration) or duration < 0.0:
            raise InvalidInput(f"duration must be finite and ≥ 0 [s], got {duration!r}")
        return ShapedMove(self, get_shape(shape), float(duration))


@dataclass(frozen=True)
class ShapedMove:
    """``q(t) = q0 + s(t/T)·Δq``: a reference usable by the limit checks.

    Continuous-time convention: on ``[0, T]`` the move's own values (one-sided at the ends),
    at rest outside. A check sampling this at any control-grid phase sees at most these values.
    """

    move: JointMove
    shape: TimeScaling
    duration: float

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self.move.joint_names

    @property
    def rest_before(self) -> np.ndarray:
        return self.move.start

    @property
    def rest_after(self) -> np.ndarray:
        return self.move.goal

    def __call__(self, t: np.ndarray | float, order: int = 0) -> np.ndarray:
        """The ``order``-th time derivative at times ``t`` [s] → shape ``(len(t), n_joints)``."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        if self.duration == 0.0:  # an instant move: the step's value, no derivatives
            u = np.where(t >= 0.0, 1.0, 0.0)
            ds = self.shape(u) if order == 0 else np.zeros_like(u)
        else:
            ds = self.shape(t / self.duration, order) / self.duration**order
            ds = np.where((t < 0.0) | (t > self.duration), 0.0 if order else (t > 0) * 1.0, ds)
        offset = self.move.start if order == 0 else 0.0
        return offset + ds[:, None] * self.move.delta[None, :]


@dataclass(frozen=True)
class SplineReference:
    """A multi-waypoint reference from a SciPy spline; same interface as :class:`ShapedMove`."""

    joint_names: tuple[str, ...]
    spline: PPoly | BPoly | BSpline = field(repr=False)
    times: np.ndarray

    @property
    def duration(self) -> float:
        return float(self.times[-1])

    @property
    def rest_before(self) -> np.ndarray:
        return np.asarray(self.spline(0.0))

    @property
    def rest_after(self) -> np.ndarray:
        return np.asarray(self.spline(self.duration))

    def __call__(self, t: np.ndarray | float, order: int = 0) -> np.ndarray:
        t = np.atleast_1d(np.asarray(t, dtype=float))
        values = self.spline(np.clip(t, 0.0, self.duration), order)
        if order:
            values = np.where(((t < 0.0) | (t > self.duration))[:, None], 0.0, values)
        return values


def spline_reference(
    joint_names: Sequence[str],
    times: Sequence[float] | np.ndarray,
    positions: Sequence[Sequence[float]] | np.ndarray,
    kind: str = "quintic",
) -> SplineReference:
    """A smooth reference through every waypoint, at rest at the first and last.

    kind: "cubic" = ``CubicSpline(bc_type="clamped")`` (zero speed at the ends), "quintic" =
    ``make_interp_spline(k=5)`` with zero speed and acceleration at the ends. Two waypoints give
    exactly the cubic / quintic time scaling. times [s] must start at 0 and strictly increase.
    """
    names = check_joint_names(joint_names)
    t, q = _checked_waypoints(names, times, positions)
    if kind == "cubic":
        spline: PPoly | BSpline = CubicSpline(t, q, bc_type="clamped")
    elif kind == "quintic":
        rest = [(1, np.zeros(len(names))), (2, np.zeros(len(names)))]
        spline = make_interp_spline(t, q, k=5, bc_type=(rest, rest))
    else:
        raise InvalidInput(f"unknown spline kind {kind!r}; valid: ['cubic', 'quintic']")
    return SplineReference(names, spline, t)


def sampled_reference(
    joint_names: Sequence[str],
    times: Sequence[float] | np.ndarray,
    positions: Sequence[Sequence[float]] | np.ndarray,
    velocities: Sequence[Sequence[float]] | np.ndarray,
    accelerations: Sequence[Sequence[float]] | np.ndarray,
    moving_start: bool = False,
) -> SplineReference:
    """The reference joint_trajectory_controller follows through samples that each carry a
    position, velocity and acceleration: in every interval the quintic matching both ends'
    three values (``BPoly.from_derivatives``). times [s] start at 0 and strictly increase; the
    first and last samples must be at rest (zero velocity and acceleration), as the reference is
    at rest outside [0, duration]. ``moving_start``: the first sample may move (a goal joining
    a running motion, which the caller accounts for before t = 0)."""
    names = check_joint_names(joint_names)
    t, q = _checked_waypoints(names, times, positions)
    qd, qdd = (np.asarray(v, dtype=float) for v in (velocities, accelerations))
    for what, values in (("velocities", qd), ("accelerations", qdd)):
        if values.shape != q.shape or not np.all(np.isfinite(values)):
            raise InvalidInput(f"{what} must be finite, shaped as the positions {q.shape}")
        ends = [-1] if moving_start else [0, -1]
        if np.any(values[ends] != 0.0):
            raise InvalidInput(f"the first and last samples' {what} must be 0: they are at rest")
    spline = BPoly.from_derivatives(t, np.stack([q, qd, qdd], axis=1))
    return SplineReference(names, spline, t)


def _checked_waypoints(
    names: tuple[str, ...],
    times: Sequence[float] | np.ndarray,
    positions: Sequence[Sequence[float]] | np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Waypoint times (n,) and positions (n, joints), or ``InvalidInput`` naming the fault."""
    t = np.asarray(times, dtype=float)
    q = np.asarray(positions, dtype=float)
    if t.ndim != 1 or t.size < 2 or q.shape != (t.size, len(names)):
        raise InvalidInput(
            f"need ≥ 2 waypoints with times (n,) and positions (n, {len(names)}); "
            f"got times {t.shape}, positions {q.shape}"
        )
    if not np.all(np.isfinite(t)):
        raise InvalidInput(f"waypoint times must be finite [s], got {t.tolist()}")
    bad = np.argwhere(~np.isfinite(q))
    if bad.size:
        i, j = bad[0]
        raise InvalidInput(f"waypoint {i} of joint {names[j]!r} is {q[i, j]} (not finite)")
    if t[0] != 0.0 or np.any(np.diff(t) <= 0.0):
        raise InvalidInput(
            f"waypoint times must start at 0 and strictly increase [s], got {t.tolist()}"
        )
    return t, q
