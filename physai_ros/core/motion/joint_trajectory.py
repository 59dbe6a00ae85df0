"""Timed multi-joint trajectories as ros2_control's joint_trajectory_controller executes them.

A goal (``FollowJointTrajectory`` or the ``JointTrajectory`` topic) is a list of waypoints with
``time_from_start``. Before anything moves it is validated here -- unknown, missing or duplicate
joints, NaN/Inf, non-increasing times, positions outside the joint ranges -- so bad input
changes nothing. Then it is turned into piecewise polynomials that start from the robot's
current state at t = 0, with the controller's rule for the degree of each segment:

* positions only            -> linear (velocity jumps at the waypoints),
* positions and velocities  -> cubic Hermite (velocity continuous),
* plus accelerations        -> quintic (acceleration continuous).

Pure numpy (no MuJoCo, no rclpy): the sim bridge and the SO-101 servo driver share it. Goal
monitoring (path/goal tolerances, goal_time_tolerance) lives here too, with the controller's
convention for tolerance values: > 0 sets, 0 keeps the default, < 0 disables the check.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from physai_ros.core.frames.joint_names import joint_indices
from physai_ros.errors import InvalidInput, LimitViolation

__all__ = [
    "GoalState",
    "JointRanges",
    "StartState",
    "TimedTrajectory",
    "Tolerances",
    "TrajectoryPoint",
    "check_goal",
    "merge_tolerances",
    "plan_trajectory",
]

DEGREES = {1: "linear", 3: "cubic", 5: "quintic"}


class TrajectoryPoint(NamedTuple):
    """One waypoint as a message carries it: time [s] after the start, and per-joint values in
    the goal's joint order; empty velocities/accelerations mean "not given"."""

    time_from_start: float
    positions: Sequence[float]
    velocities: Sequence[float] = ()
    accelerations: Sequence[float] = ()


class StartState(NamedTuple):
    """The state a trajectory starts from at t = 0, in the robot's joint order.

    positions [rad], velocities [rad/s], accelerations [rad/s²].
    """

    positions: np.ndarray
    velocities: np.ndarray
    accelerations: np.ndarray


@dataclass(frozen=True)
class JointRanges:
    """The joints a controller owns, in its order, with their position ranges [rad or m]."""

    names: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.names)
        if len(set(self.names)) != n or n == 0:
            raise InvalidInput(f"joint names must be unique and non-empty, got {self.names!r}")
        if self.lower.shape != (n,) or self.upper.shape != (n,) or np.any(self.lower > self.upper):
            raise InvalidInput(f"ranges of {self.names} must be {n} pairs with lower <= upper")

    def order(self, joint_names: Sequence[str]) -> np.ndarray:
        """``perm`` such that ``values_in_robot_order = values[perm]`` for values given in
        ``joint_names`` order. A goal must name every joint exactly once."""
        # Each given name's robot index, all joints named: its inverse permutation is perm.
        return np.argsort(joint_indices(joint_names, self.names, require_all=True))


def point_array(
    values: Sequence[float], field: str, index: int, joint_names: Sequence[str], optional: bool
) -> np.ndarray | None:
    """A point's field as a float array; checks its length and that every value is finite."""
    n = len(joint_names)
    if len(values) == 0 and optional:
        return None
    array = np.asarray(values, dtype=float)
    if array.shape != (n,):
        raise InvalidInput(
            f"point {index}: {field} has {len(values)} values, expected {n} (one per joint "
            f"{list(joint_names)}){' or none' if optional else ''}"
        )
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise InvalidInput(
            f"point {index}: {field} of joint {joint_names[bad[0]]!r} is {float(array[bad[0]])} "
            "(NaN/Inf are not allowed)"
        )
    return array


def _segment_coeffs(
    q0: np.ndarray,
    v0: np.ndarray,
    a0: np.ndarray,
    q1: np.ndarray,
    v1: np.ndarray,
    a1: np.ndarray,
    T: float,
    degree: int,
) -> np.ndarray:
    """Coefficients c[0..5] (shape (6, n)) of q(τ) = Σ c_k τ^k on τ ∈ [0, T] meeting the
    boundary values the degree uses (linear: q; cubic: q, q̇; quintic: q, q̇, q̈)."""
    c = np.zeros((6, q0.size))
    dq = q1 - q0
    c[0] = q0
    if degree == 1:
        c[1] = dq / T
    elif degree == 3:
        c[1] = v0
        c[2] = (3.0 * dq - (2.0 * v0 + v1) * T) / T**2
        c[3] = (-2.0 * dq + (v0 + v1) * T) / T**3
    else:
        c[1] = v0
        c[2] = a0 / 2.0
        c[3] = (20.0 * dq - (8.0 * v1 + 12.0 * v0) * T - (3.0 * a0 - a1) * T**2) / (2.0 * T**3)
        c[4] = (-30.0 * dq + (14.0 * v1 + 16.0 * v0) * T + (3.0 * a0 - 2.0 * a1) * T**2) / (
            2.0 * T**4
        )
        c[5] = (12.0 * dq - 6.0 * (v1 + v0) * T - (a0 - a1) * T**2) / (2.0 * T**5)
    return c


class TimedTrajectory:
    """A validated trajectory in the robot's joint order: piecewise polynomials in time [s]
    since its start; before 0 it is the start state, after the last waypoint it holds it.

    ``sample`` writes into a caller's (3, n) array (position, velocity, acceleration) and reuses
    a scratch buffer, so the physics loop allocates nothing per step. Not reentrant: one reader
    (the physics loop) per instance.
    """

    def __init__(
        self, joint_names: tuple[str, ...], knots: np.ndarray, coeffs: np.ndarray, degree: int
    ) -> None:
        self.joint_names = joint_names
        self.knots = knots  # (K + 1,) segment boundaries [s], knots[0] = 0
        self.coeffs = coeffs  # (K, 6, n)
        self.degree = degree
        self.kind = DEGREES[degree]
        self._knot_list = [float(t) for t in knots]
        self._powers = np.zeros((3, 6))
        n = len(joint_names)
        self.final = np.zeros((3, n))
        self._evaluate(coeffs.shape[0] - 1, float(knots[-1] - knots[-2]), self.final)
        self.final[1:] = 0.0  # after the end the controller holds the last point at rest

    @property
    def duration(self) -> float:
        """Time [s] of the last waypoint."""
        return self._knot_list[-1]

    @property
    def positions_end(self) -> np.ndarray:
        """The last waypoint's positions [rad]."""
        return self.final[0]

    def _evaluate(self, k: int, tau: float, out: np.ndarray) -> None:
        p = self._powers
        t2 = tau * tau
        t3 = t2 * tau
        p[0] = (1.0, tau, t2, t3, t2 * t2, t3 * t2)
        p[1] = (0.0, 1.0, 2.0 * tau, 3.0 * t2, 4.0 * t3, 5.0 * t2 * t2)
        p[2] = (0.0, 0.0, 2.0, 6.0 * tau, 12.0 * t2, 20.0 * t3)
        np.dot(p, self.coeffs[k], out=out)

    def __call__(self, t: np.ndarray, order: int = 0) -> np.ndarray:
        """The ``order``-th time derivative (0..3) at times ``t`` [s], shape (len(t), n): the
        ``Reference`` protocol of ``physai_ros.core.motion.limits`` (so goals are checked with the
        same sampled test as every other reference). Before 0 the start state continues at
        its velocity; after the end the last point is held at rest."""
        t = np.asarray(t, dtype=float)
        knots = self.knots
        k = np.clip(np.searchsorted(knots, t, side="right") - 1, 0, len(knots) - 2)
        tau = np.clip(t - knots[k], 0.0, None)
        c = self.coeffs[k]  # (m, 6, n)
        powers = np.arange(6)
        factor = np.ones(6)
        for i in range(order):
            factor = factor * np.maximum(powers - i, 0)
        exps = np.maximum(powers - order, 0)
        basis = factor * tau[:, None] ** exps  # (m, 6)
        out = np.einsum("mk,mkn->mn", basis, c)
        before, after = t < 0.0, t >= knots[-1]
        # the start state's velocity (a linear trajectory ignores it: it starts at rest)
        v0 = self.coeffs[0, 1] if self.degree > 1 else np.zeros(self.coeffs.shape[2])
        if order == 0:
            out[before] = self.coeffs[0, 0] + np.outer(t[before], v0)
            out[after] = self.final[0]
        elif order == 1:
            out[before] = v0
            out[after] = 0.0
        else:
            out[before | after] = 0.0
        return out

    def sample(self, t: float, out: np.ndarray) -> None:
        """Desired (position, velocity, acceleration) at ``t`` [s] since the start into ``out``."""
        if t >= self._knot_list[-1]:
            out[...] = self.final
            return
        t = max(t, 0.0)
        k = bisect.bisect_right(self._knot_list, t) - 1
        self._evaluate(k, t - self._knot_list[k], out)


def plan_trajectory(
    ranges: JointRanges,
    joint_names: Sequence[str],
    points: Sequence[TrajectoryPoint],
    start: StartState,
    start_tolerance: float,
    measured: np.ndarray | None = None,
    max_step: np.ndarray | None = None,
) -> TimedTrajectory:
    """Validate a goal and interpolate it from ``start`` (robot order) at t = 0.

    Args:
        ranges: the controller's joints and position ranges.
        joint_names: the goal's joint order (any permutation of ``ranges.names``).
        points: waypoints with strictly increasing ``time_from_start`` [s] (the first >= 0).
            A first point at t = 0 replaces the start state; it must then lie within
            ``start_tolerance`` [rad] of the start (a larger jump would be a step command).
        start: current state at t = 0, robot order.
        start_tolerance: [rad or m] see above.
        measured: the measured position (robot order) when ``start`` is not it (a controller
            that starts from its last reference): a first point at t = 0 must lie within
            ``start_tolerance`` of it too -- it is where the joint really is.
        max_step: [rad or m] per joint, what the velocity limit allows in one control period:
            a first point at t = 0 is commanded at once, a step from the measured position (or
            ``start``) that must stay under it like any other step.

    Raises:
        InvalidInput: empty/unknown/missing/duplicate joints, no points, wrong field lengths,
            velocities/accelerations given for some points only (or accelerations without
            velocities), NaN/Inf, times not increasing.
        LimitViolation: a waypoint outside its joint's range; a jump at t = 0 (from the start,
            from the measured position, or faster than ``max_step`` allows).
    """
    perm = ranges.order(joint_names)
    names = list(joint_names)
    if not points:
        raise InvalidInput("trajectory has no points")
    pos, vel, acc, times = [], [], [], []
    for i, point in enumerate(points):
        t = float(point.time_from_start)
        if not math.isfinite(t) or t < 0.0:
            raise InvalidInput(f"point {i}: time_from_start {t!r} s must be finite and >= 0")
        if times and t <= times[-1]:
            raise InvalidInput(
                f"time_from_start must increase: point {i} at {t:g} s is not after point "
                f"{i - 1} at {times[-1]:g} s"
            )
        times.append(t)
        pos.append(point_array(point.positions, "positions", i, names, optional=False)[perm])
        v = point_array(point.velocities, "velocities", i, names, optional=True)
        a = point_array(point.accelerations, "accelerations", i, names, optional=True)
        if a is not None and v is None:
            raise InvalidInput(f"point {i}: accelerations given without velocities")
        vel.append(None if v is None else v[perm])
        acc.append(None if a is None else a[perm])
    for field, values in (("velocities", vel), ("accelerations", acc)):
        given = [v is not None for v in values]
        if any(given) and not all(given):
            raise InvalidInput(
                f"{field} given for points {[i for i, g in enumerate(given) if g]} only: give "
                "them for every point or for none"
            )
    degree = 5 if acc[0] is not None else 3 if vel[0] is not None else 1
    q = np.array(pos)
    for i, row in enumerate(q):
        low, high = row < ranges.lower, row > ranges.upper
        if np.any(low | high):
            j = int(np.flatnonzero(low | high)[0])
            which = "lower" if low[j] else "upper"
            bound = ranges.lower[j] if low[j] else ranges.upper[j]
            raise LimitViolation(
                f"point {i}: {ranges.names[j]} = {row[j]:.4f} is beyond its {which} limit "
                f"{bound:.4f} (range [{ranges.lower[j]:.4f}, {ranges.upper[j]:.4f}])"
            )
    n = len(ranges.names)
    zeros = np.zeros(n)
    v_all = np.array([zeros if v is None else v for v in vel])
    a_all = np.array([zeros if a is None else a for a in acc])
    q0 = np.asarray(start.positions, dtype=float)
    v0 = np.asarray(start.velocities, dtype=float) if degree > 1 else zeros
    a0 = np.asarray(start.accelerations, dtype=float) if degree > 3 else zeros
    if times[0] == 0.0:
        jump = np.abs(q[0] - q0)
        if np.any(jump > start_tolerance):
            j = int(np.argmax(jump))
            raise LimitViolation(
                f"point 0 at t = 0 puts {ranges.names[j]} {jump[j]:.4f} away from its current "
                f"position {q0[j]:.4f} (start tolerance {start_tolerance:g}): give it a time > 0"
            )
        here = q0 if measured is None else np.asarray(measured, dtype=float)
        jump = np.abs(q[0] - here)
        if measured is not None and np.any(jump > start_tolerance):
            j = int(np.argmax(jump))
            raise LimitViolation(
                f"point 0 at t = 0 puts {ranges.names[j]} {jump[j]:.4f} away from its measured "
                f"position {here[j]:.4f} (start tolerance {start_tolerance:g}): give it a time > 0"
            )
        if max_step is not None and np.any(jump > max_step):
            j = int(np.argmax(jump - max_step))
            raise LimitViolation(
                f"point 0 at t = 0 is a step of {jump[j]:.4f} for {ranges.names[j]} from its "
                f"position {here[j]:.4f}, more than its velocity limit allows in one control "
                f"period ({max_step[j]:.4f}): give it a time > 0"
            )
        q0, v0, a0 = q[0], v_all[0], a_all[0]
        q, v_all, a_all, times = q[1:], v_all[1:], a_all[1:], times[1:]
        if not times:  # a single point at t = 0: hold it
            q, v_all, a_all, times = q0[None], zeros[None], zeros[None], [1e-9]
    knots = np.array([0.0, *times])
    coeffs = np.empty((len(times), 6, n))
    prev = (q0, v0, a0)
    for k in range(len(times)):
        coeffs[k] = _segment_coeffs(
            *prev, q[k], v_all[k], a_all[k], knots[k + 1] - knots[k], degree
        )
        prev = (q[k], v_all[k], a_all[k])
    return TimedTrajectory(tuple(ranges.names), knots, coeffs, degree)


@dataclass(frozen=True)
class Tolerances:
    """Execution tolerances per joint (robot order); ``inf`` = not checked.

    path_position: |desired − actual| [rad] allowed while the trajectory runs;
    path_velocity: |desired − actual| velocity [rad/s] allowed while it runs;
    goal_position: |final − actual| [rad] for success at the end;
    goal_velocity: |actual velocity| [rad/s] for success at the end;
    goal_time: [s] how long after the last waypoint the goal may take to be reached
    (inf = wait for ever, joint_trajectory_controller's ``goal_time: 0``).
    """

    path_position: np.ndarray
    goal_position: np.ndarray
    goal_velocity: np.ndarray
    goal_time: float
    path_velocity: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.path_velocity is None:
            object.__setattr__(self, "path_velocity", np.full_like(self.path_position, np.inf))


class JointTolerance(NamedTuple):
    """One entry of a goal's tolerance list (control_msgs/JointTolerance)."""

    name: str
    position: float
    velocity: float
    acceleration: float = 0.0


FLT_EPSILON = 1.1920929e-07  # C's FLT_EPSILON: ros2_controllers compares -1 with it


def _resolve(default: float, value: float) -> float:
    """joint_trajectory_controller's rule (tolerances.hpp ``resolve_tolerance_source``):
    > 0 sets the value, 0 keeps the default, −1 erases it (not checked), any other value is
    illegal (``ValueError``). Here "not checked" is ``inf``."""
    if not math.isfinite(value):
        raise ValueError(f"{value!r} is not finite")
    if value > 0.0:
        return value
    if abs(value + 1.0) < FLT_EPSILON:
        return math.inf
    if value == 0.0:
        return default
    raise ValueError(f"{value!r} is negative and not -1")


def merge_tolerances(
    defaults: Tolerances,
    ranges: JointRanges,
    path: Sequence[JointTolerance],
    goal: Sequence[JointTolerance],
    goal_time: float,
) -> tuple[Tolerances, str]:
    """A goal's tolerances over the defaults, as ros2_controllers 5.17 merges them
    (``get_segment_tolerances``): > 0 sets, 0 keeps the default, −1 disables; a goal_time of 0
    keeps the default. An illegal value or an unknown joint anywhere makes the whole goal use
    the defaults (the goal is still accepted). Returns ``(tolerances, warning)``; the warning
    says why the goal's own values were dropped ("" when they were used). Acceleration
    tolerances are accepted and not checked: no backend measures acceleration."""
    path_pos = defaults.path_position.copy()
    path_vel = defaults.path_velocity.copy()
    goal_pos = defaults.goal_position.copy()
    goal_vel = defaults.goal_velocity.copy()
    try:
        gt = _resolve(defaults.goal_time, goal_time)
    except ValueError:
        return (
            defaults,
            f"Specified illegal goal_time_tolerance: {goal_time:f}. Using default tolerances",
        )
    for entries, kind in ((path, "path_tolerance"), (goal, "goal_tolerance")):
        for entry in entries:
            if entry.name not in ranges.names:
                return defaults, (
                    f"joint '{entry.name}' specified in goal.{kind} does not exist. "
                    "Using default tolerances."
                )
            j = ranges.names.index(entry.name)
            fields = ("position", "velocity", "acceleration")
            pos_arr, vel_arr = (
                (path_pos, path_vel) if kind == "path_tolerance" else (goal_pos, goal_vel)
            )
            for field, array in zip(fields, (pos_arr, vel_arr, None), strict=True):
                try:
                    value = _resolve(math.inf if array is None else array[j], getattr(entry, field))
                except ValueError:
                    return defaults, (
                        f"joint '{entry.name}' specified in goal.{kind} has a invalid {field} "
                        "tolerance. Using default tolerances."
                    )
                if array is not None:
                    array[j] = value
    return Tolerances(path_pos, goal_pos, goal_vel, gt, path_vel), ""


class GoalState(NamedTuple):
    """Outcome of one check: ``running``, ``succeeded``, ``path_tolerance_violated`` or
    ``goal_tolerance_violated``; ``message`` names the joint and the numbers; ``late``: time
    past the last waypoint [s]."""

    outcome: str
    message: str
    late: float = 0.0


def check_goal(
    t: float,
    trajectory: TimedTrajectory,
    desired: np.ndarray,
    actual: np.ndarray,
    velocity: np.ndarray,
    tolerances: Tolerances,
    desired_velocity: np.ndarray | None = None,
    path: bool = False,
) -> GoalState:
    """Judge a running goal at ``t`` [s] since its start, as joint_trajectory_controller does
    every cycle: path tolerances before the last point (and on a trajectory's first sample,
    ``path``), goal tolerances from it on.

    desired, desired_velocity: reference at ``t``; actual, velocity: measured (robot order).
    """
    names = trajectory.joint_names
    if t < trajectory.duration or path:
        error = np.abs(desired - actual)
        bad = np.flatnonzero(error > tolerances.path_position)
        if bad.size:
            j = int(bad[0])
            return GoalState(
                "path_tolerance_violated",
                f"{names[j]} is {error[j]:.4f} rad from the reference at t = {t:.3f} s "
                f"(path tolerance {tolerances.path_position[j]:g})",
            )
        if desired_velocity is not None:
            verror = np.abs(desired_velocity - velocity)
            bad = np.flatnonzero(verror > tolerances.path_velocity)
            if bad.size:
                j = int(bad[0])
                return GoalState(
                    "path_tolerance_violated",
                    f"{names[j]} velocity is {verror[j]:.4f} rad/s from the reference at "
                    f"t = {t:.3f} s (path velocity tolerance {tolerances.path_velocity[j]:g})",
                )
        if t < trajectory.duration:
            return GoalState("running", "")
    error = np.abs(trajectory.positions_end - actual)
    speed = np.abs(velocity)
    pos_bad = np.flatnonzero(error > tolerances.goal_position)
    vel_bad = np.flatnonzero(speed > tolerances.goal_velocity)
    if not pos_bad.size and not vel_bad.size:
        worst = int(np.argmax(error))
        return GoalState(
            "succeeded", f"reached the goal; largest error {error[worst]:.4f} ({names[worst]})"
        )
    late = t - trajectory.duration
    if late <= tolerances.goal_time:
        return GoalState("running", "")
    if pos_bad.size:
        j = int(pos_bad[0])
        limit = tolerances.goal_position[j]
        detail = f"{names[j]} is {error[j]:.4f} rad from its goal (tolerance {limit:g})"
    else:
        j = int(vel_bad[0])
        detail = (
            f"{names[j]} still moves at {speed[j]:.4f} rad/s "
            f"(tolerance {tolerances.goal_velocity[j]:g})"
        )
    return GoalState("goal_tolerance_violated", detail, late)


def stopping_trajectory(
    joint_names: Sequence[str],
    position: np.ndarray,
    velocity: np.ndarray,
    deceleration: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
) -> TimedTrajectory:
    """From ``position`` [rad] moving at ``velocity`` [rad/s] to rest, each joint's velocity
    falling at a constant rate no higher than its ``deceleration`` [rad/s²] (finite, > 0).

    All joints come to rest together, at the time the slowest to stop needs: the reference
    keeps the direction it was moving in (the path's tangent), so a stop lands close to the
    path instead of bending off it. Where that would carry a joint beyond ``[lower, upper]``
    (a joint that was braking harder than the others toward a range end), each joint brakes
    at its own full ``deceleration`` instead: no reference that respected the limits can stop
    in less, so none leaves the range. Velocity never grows and no joint reverses."""
    q0 = np.asarray(position, dtype=float)
    v0 = np.asarray(velocity, dtype=float)
    a_max = np.asarray(deceleration, dtype=float)
    if np.any(~np.isfinite(a_max) | (a_max <= 0.0)):
        raise InvalidInput(f"stopping needs finite decelerations > 0 [rad/s²], got {a_max}")
    own = np.abs(v0) / a_max  # [s] each joint's shortest stop
    together = float(own.max())
    if together <= 0.0:
        raise InvalidInput("stopping needs a moving reference (every velocity is 0)")
    rate = np.abs(v0) / together
    if np.any((q0 + 0.5 * v0 * together < lower) | (q0 + 0.5 * v0 * together > upper)):
        rate = np.where(v0 != 0.0, a_max, 0.0)
    times = np.divide(np.abs(v0), rate, out=np.zeros_like(v0), where=rate > 0.0)
    knots = np.unique(np.concatenate([[0.0], times[times > 0.0]]))
    accel = -np.sign(v0) * rate  # [rad/s²] while braking
    coeffs = np.zeros((len(knots) - 1, 6, len(q0)))
    for k, t in enumerate(knots[:-1]):
        braking = t < times
        dt = np.minimum(t, times)
        coeffs[k, 0] = q0 + v0 * dt + 0.5 * accel * dt**2
        coeffs[k, 1] = np.where(braking, v0 + accel * t, 0.0)
        coeffs[k, 2] = np.where(braking, 0.5 * accel, 0.0)
    return TimedTrajectory(tuple(joint_names), knots, coeffs, 3)
