"""From a trajectory goal to a timed, sampled, limit-checked trajectory for a controller.

A user's goal (``JointTrajectory`` topic or ``FollowJointTrajectory`` action) names joints and
gives waypoints. This module decides *when* the arm passes each waypoint (lesson 13): every
segment — current state → waypoint 1 → … → last waypoint — is a rest-to-rest move timed by one
shape (``step`` … ``septic`` from :mod:`physai_ros.core.motion.time_scaling`, or ``ruckig``
time-optimal).

* Untimed goal (every ``time_from_start`` zero): each segment gets the shortest duration its
  joints' velocity/acceleration/jerk limits allow; a requested total ``duration`` stretches all
  segments by the same factor (never shrinks them: a too-short duration is rejected).
* Timed goal: the times are checked (finite, strictly increasing) and each segment must be
  feasible in its given time, else the message names the joint and the binding limit.
* Timed goal whose every point carries velocities and accelerations too (a motion already
  sampled densely, such as the pick's): not re-timed but taken as the controller will follow it,
  the quintic through each pair of samples from the current state at rest, ending at rest; the
  whole of it must be inside the limits.

The reference is then checked as the robot receives it (:func:`check_trajectory` at the limits'
control period) and sampled every ``sample_period`` into positions, velocities and
accelerations; the samples are checked again (:func:`check_samples`) — nothing outside the limits
leaves this module. What a plan is (reference, samples, the last gate) lives in
:mod:`physai_ros.core.motion.planned`; measuring ``q_reference − q_measured`` afterwards in
:mod:`physai_ros.core.motion.tracking`.

Pure numpy/scipy: no rclpy. Joint names are the ones in the messages (``prefix`` + the limits
file's names, e.g. ``panda_joint1`` for franka_ros2).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from physai_ros.config import node_tree
from physai_ros.core.frames.joint_names import check_joint_names, joint_indices
from physai_ros.core.motion.joint_trajectory import point_array
from physai_ros.core.motion.limits import (
    RATE_NAMES,
    RTOL,
    JointLimits,
    Peaks,
    Reference,
    check_trajectory,
    plan_move,
    sampled_peaks,
    shortest_duration,
)
from physai_ros.core.motion.planned import (
    PiecewiseReference,
    PlannedTrajectory,
    Stretched,
    check_samples,
)
from physai_ros.core.motion.time_scaling import SHAPES, JointMove, sampled_reference
from physai_ros.errors import InvalidInput, LimitViolation
from physai_ros.paths import config_path

SHAPE_NAMES = (*SHAPES, "ruckig")
"""Every shape a goal can be timed by (``ruckig`` = time-optimal, jerk-limited)."""
FOLLOW_RETIMES = 4
"""How often a fastest plan is slowed down until the controller's interpolation of its samples
is inside the limits (:meth:`TrajectoryPlanner._as_followed`)."""
FOLLOW_MARGIN = 0.01
"""[-] each slow-down is this much more than the peaks say, compounding: the overshoot moves
with where the samples fall on the profile, so a slow-down by exactly the peak's share can
leave a new one as large."""


@cache
def load_trajectory_config() -> dict[str, Any]:
    """The trajectory node's defaults: the ``/**: ros__parameters`` tree of
    ``config/trajectory.yaml`` (a ROS parameters file)."""
    return node_tree("trajectory.yaml")


def limits_path(robot: str, limits_file: str = "") -> Path:
    """``limits_file`` if given, else the package's ``config/limits_<robot>.yaml``."""
    return Path(limits_file) if limits_file else config_path(f"limits_{robot}.yaml")


SAME_POSITION = 1e-9
"""[rad] an untimed waypoint this close to the one before is that one (no segment): timed as a
move of its own, a step of 1e-33 rad took a few microseconds, which the controller's samples 10
ms apart could only follow after the plan was stretched to days (found by the property test)."""


class GoalPoint(NamedTuple):
    """One waypoint as a message carries it: ``time_from_start`` [s] and per-joint values in the
    goal's joint order. Velocities/accelerations are optional and only validated: the timing is
    this module's job, so they are recomputed."""

    time_from_start: float
    positions: Sequence[float]
    velocities: Sequence[float] = ()
    accelerations: Sequence[float] = ()


@dataclass(frozen=True)
class GoalPolicy:
    """How goals are timed and sampled.

    shape: one of :data:`SHAPE_NAMES`. duration: total time [s] of an untimed goal, 0 = the
    fastest within the limits. sample_period: spacing [s] of the points sent to the controller.
    start_tolerance: [rad] how far a first waypoint at t = 0 may be from the current state (it
    is then taken as the start; farther would be a jump). first_point: [s] the samples before it
    are left out (0 = none), so the controller joins the arm to the motion over that time: it
    starts a goal from the state it measures then, and an arm that settled 0.3 mrad since it
    was planned from, joined to a first sample one 10 ms period in, made 12-15 rad/s² against
    libfranka's 10 (:meth:`TrajectoryPlanner._first_sample`).
    """

    shape: str = "quintic"
    duration: float = 0.0
    sample_period: float = 0.01
    start_tolerance: float = 0.01
    first_point: float = 0.0

    def __post_init__(self) -> None:
        if self.shape not in SHAPE_NAMES:
            raise InvalidInput(f"unknown shape {self.shape!r}; valid: {list(SHAPE_NAMES)}")
        if not (math.isfinite(self.duration) and self.duration >= 0.0):
            raise InvalidInput(f"duration must be finite and >= 0 [s], got {self.duration!r}")
        if not (math.isfinite(self.sample_period) and self.sample_period > 0.0):
            raise InvalidInput(f"sample_period must be > 0 [s], got {self.sample_period!r}")
        if not (math.isfinite(self.start_tolerance) and self.start_tolerance >= 0.0):
            raise InvalidInput(f"start_tolerance must be >= 0 [rad], got {self.start_tolerance!r}")
        if not (math.isfinite(self.first_point) and self.first_point >= 0.0):
            raise InvalidInput(f"first_point must be finite and >= 0 [s], got {self.first_point!r}")


class Join(NamedTuple):
    """A goal that replaces a running motion mid-move: the controller joins it from where its
    reference is when the goal arrives, not from rest, and reaches its first point at the
    goal's stamp plus that point's time (joint_trajectory_controller's behaviour).
    ``reference``: the running motion's; ``at`` [s on it]: the instant the goal arrives;
    ``lead`` [s]: its stamp that much later (the goal's times count from there)."""

    reference: Reference
    at: float
    lead: float = 0.0

    def state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Position [rad], velocity [rad/s] and acceleration [rad/s²] at the join."""
        return tuple(self.reference(np.array([self.at]), r)[0] for r in range(3))


@dataclass(frozen=True)
class _Joined:
    """The running motion up to the join, then the goal's reference from its t = 0: what the
    controller follows across the join, for the limit check (continuity included)."""

    before: Reference
    at: float
    after: Reference

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self.after.joint_names

    @property
    def duration(self) -> float:
        return self.after.duration

    def __call__(self, t: np.ndarray | float, order: int = 0) -> np.ndarray:
        t = np.atleast_1d(np.asarray(t, dtype=float))
        early = t < 0.0
        out = self.after(np.where(early, 0.0, t), order)
        if early.any():
            out[early] = self.before(self.at + t[early], order)
        return out


class _Window(NamedTuple):
    """A reference judged up to ``duration`` [s] only, its values after it the reference's own
    (:func:`check_trajectory` samples a few periods past the end, where a reference is at
    rest): the start of a longer motion."""

    reference: Any
    duration: float

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self.reference.joint_names

    def __call__(self, t: np.ndarray | float, order: int = 0) -> np.ndarray:
        return self.reference(t, order)


class TrajectoryPlanner:
    """Turns goals into :class:`PlannedTrajectory` for one controller's joints.

    limits: the robot's limits (names as in its limits file). joints: the controller's joints
    (limits-file names, its order). prefix: put before each name in messages (franka_ros2:
    ``panda_`` or ``fr3_``).
    """

    def __init__(
        self, limits: JointLimits, joints: Sequence[str], policy: GoalPolicy, prefix: str = ""
    ) -> None:
        names = check_joint_names(joints)
        sub = limits.select(names)
        self.joint_names = tuple(prefix + n for n in names)
        self.limits = dataclasses.replace(sub, joint_names=self.joint_names)
        self.policy = policy

    # ------------------------------------------------------------------ validation
    def _order(self, joint_names: Sequence[str]) -> np.ndarray:
        """Index of each goal joint in the controller; unknown and duplicated names rejected."""
        return joint_indices(joint_names, self.joint_names)

    def current_positions(self, state: Mapping[str, float]) -> np.ndarray:
        """The controller's joints from a name → position [rad] map (a ``/joint_states``)."""
        missing = [n for n in self.joint_names if n not in state]
        if missing:
            raise InvalidInput(f"no current position for joint(s) {missing} in /joint_states")
        q = np.array([float(state[n]) for n in self.joint_names])
        bad = np.flatnonzero(~np.isfinite(q))
        if bad.size:
            raise InvalidInput(f"current position of {self.joint_names[bad[0]]!r} is not finite")
        return q

    def _waypoints(
        self, joint_names: Sequence[str], points: Sequence[GoalPoint], start: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Waypoints in controller order (joints the goal omits hold their current position),
        and their times [s] or ``None`` when the goal leaves the timing to us."""
        idx = self._order(joint_names)
        if not points:
            raise InvalidInput("empty goal: the trajectory has no points")
        names = list(joint_names)
        q = np.tile(start, (len(points), 1))
        times = np.empty(len(points))
        for i, point in enumerate(points):
            t = float(point.time_from_start)
            if not math.isfinite(t) or t < 0.0:
                raise InvalidInput(f"point {i}: time_from_start {t!r} s must be finite and >= 0")
            times[i] = t
            for field in ("positions", "velocities", "accelerations"):
                point_array(getattr(point, field), field, i, names, optional=field != "positions")
            q[i, idx] = np.asarray(point.positions, dtype=float)
        lim = self.limits
        for i, row in enumerate(q):
            out = np.flatnonzero((row < lim.position_min) | (row > lim.position_max))
            if out.size:
                j = out[0]
                raise LimitViolation(
                    f"point {i}: joint {self.joint_names[j]!r} = {row[j]:.4f} rad is outside its "
                    f"position limits [{lim.position_min[j]:.4f}, {lim.position_max[j]:.4f}] rad"
                )
        if not np.any(times):
            return q, None
        if times[0] == 0.0:  # a first point at t = 0 must be where the arm is: it is the start
            jump = np.abs(q[0] - start)
            if np.any(jump > self.policy.start_tolerance):
                j = int(np.argmax(jump))
                raise InvalidInput(
                    f"point 0 at t = 0 puts {self.joint_names[j]!r} {jump[j]:.4f} rad from its "
                    f"current position (start tolerance {self.policy.start_tolerance:g} rad): "
                    "give it a time > 0 or leave every time at 0"
                )
            q, times = q[1:], times[1:]
        steps = np.diff(np.concatenate([[0.0], times]))
        if times.size == 0 or np.any(steps <= 0.0):
            bad = int(np.argmax(steps <= 0.0)) if times.size else 0
            raise InvalidInput(
                f"time_from_start must strictly increase: {times.tolist()} s (problem at "
                f"waypoint {bad}); or give every point 0 to let the planner choose"
            )
        return q, times

    # ------------------------------------------------------------------ timing
    def _segment(self, move: JointMove, duration: float | None) -> Reference:
        """One rest-to-rest segment: fastest (``duration`` None) or exactly ``duration`` [s]."""
        shape = self.policy.shape
        if shape != "ruckig":
            return plan_move(move, shape, self.limits, duration)
        from physai_ros.core.motion.ruckig_shape import ruckig_move

        fastest = ruckig_move(move, self.limits)
        if duration is None or duration == fastest.duration:
            return fastest
        if duration < fastest.duration * (1 - RTOL):
            alone = [
                ruckig_move(JointMove((n,), [a], [b]), self.limits).duration
                for n, a, b in zip(move.joint_names, move.start, move.goal, strict=True)
            ]
            j = int(np.argmax(alone))
            lim = self.limits.select([move.joint_names[j]])
            raise LimitViolation(
                f"duration {duration:.4f} s is too short: joint {move.joint_names[j]!r} needs "
                f"≥ {alone[j]:.4f} s time-optimally under its velocity {lim.velocity[0]:.4g} "
                f"rad/s, acceleration {lim.acceleration[0]:.4g} rad/s² and jerk "
                f"{lim.jerk[0]:.4g} rad/s³ limits (set {self.limits.set_name!r})"
            )
        return Stretched(fastest, duration / fastest.duration)

    def _fastest(self, move: JointMove) -> float:
        if self.policy.shape == "ruckig":
            return self._segment(move, None).duration
        return shortest_duration(move, self.policy.shape, self.limits)

    def plan(
        self,
        joint_names: Sequence[str],
        points: Sequence[GoalPoint],
        current: Mapping[str, float],
        join: Join | None = None,
    ) -> PlannedTrajectory:
        """Validate ``points`` (goal order ``joint_names``), time them from the ``current``
        state (name → position [rad]) and sample them. Raises ``InvalidInput`` /
        ``LimitViolation`` naming the joint and the limit; nothing is returned unless every
        check passed. ``join``: the goal replaces a running motion mid-move and starts from its
        state there (only a sampled motion can: timed, with rates at every point)."""
        if join is not None:
            current = dict(zip(self.joint_names, join.state()[0], strict=True))
        start = self.current_positions(current)
        waypoints, times = self._waypoints(joint_names, points, start)
        rates = self._rates(joint_names, points, start.size)
        if times is not None and rates is not None:
            return self._through_samples(start, waypoints, times, *rates, join=join)
        if join is not None:
            raise InvalidInput(
                "a goal that replaces a moving arm mid-move must be a sampled motion (timed, "
                "velocities and accelerations at every point)"
            )
        ends = np.vstack([start, waypoints])
        moves = [
            JointMove(self.joint_names, ends[k], ends[k + 1])
            for k in range(len(waypoints))
            if times is not None or np.any(np.abs(ends[k + 1] - ends[k]) > SAME_POSITION)
        ]
        if not moves:  # already there: hold the current state for one period
            moves = [JointMove(self.joint_names, start, start)]
        if times is not None:
            durations = np.diff(np.concatenate([[0.0], times]))
            timed_by = "goal times"
        else:
            fastest = np.array([self._fastest(m) for m in moves])
            total = float(fastest.sum())
            requested = self.policy.duration
            if requested and requested < total * (1 - RTOL):
                prefix = f"duration {requested:g} s is too short (the goal needs ≥ {total:.4f} s)"
                for k, (move, d) in enumerate(zip(moves, fastest * requested / total, strict=True)):
                    try:  # name the joint and limit that bind in the first infeasible segment
                        self._segment(move, float(d))
                    except LimitViolation as err:
                        if len(moves) == 1:
                            raise
                        raise LimitViolation(f"{prefix} in segment {k}: {err}") from err
                raise LimitViolation(prefix)
            scale = requested / total if requested and total > 0 else 1.0
            durations = fastest * scale
            timed_by = "requested duration" if requested else "fastest within limits"
        fastest_plan = timed_by == "fastest within limits"  # the only timing ours to change
        for attempt in range(1, FOLLOW_RETIMES + 2):
            planned = self._timed(moves, durations, timed_by, start)
            stretch, problem = self._as_followed(start, planned)
            if problem is None:
                return planned
            if not fastest_plan or stretch is None:
                raise LimitViolation(
                    f"as the controller follows the {planned.times.size} samples (a quintic "
                    f"between each two): {problem}; give the goal more time"
                )
            durations = durations * stretch * (1.0 + FOLLOW_MARGIN) ** attempt
            timed_by = "fastest within limits as followed"
        raise LimitViolation(f"as the controller follows the samples: {problem}")

    def _timed(
        self,
        moves: Sequence[JointMove],
        durations: np.ndarray,
        timed_by: str,
        start: np.ndarray,
    ) -> PlannedTrajectory:
        """The rest-to-rest ``moves`` over ``durations`` [s], checked and sampled."""
        segments = []
        for k, (move, d) in enumerate(zip(moves, durations, strict=True)):
            try:
                segments.append(self._segment(move, float(d)))
            except LimitViolation as err:
                if len(moves) == 1:
                    raise
                raise LimitViolation(f"segment {k} (to waypoint {k}): {err}") from err
        starts = np.concatenate([[0.0], np.cumsum(durations)[:-1]])
        reference = PiecewiseReference(self.joint_names, tuple(segments), starts)
        peaks = check_trajectory(reference, self.limits)
        return self._sample(reference, peaks, timed_by)

    def _as_followed(
        self, start: np.ndarray, planned: PlannedTrajectory, join: Join | None = None
    ) -> tuple[float | None, str | None]:
        """What the controller will follow, checked: the quintic from ``start`` [rad] at rest
        through the samples sent, at the limits' control period. Returns ``(stretch, problem)``:
        ``problem`` None when it is inside every limit, else the violation (joint and limit)
        and the factor [-] slowing the plan down would need (``None``: a position limit, which
        time does not cure).

        Why: the reference is checked, and its samples, but the controller interpolates between
        the samples, and a shape whose acceleration or jerk jumps (a trapezoid, ruckig's
        time-optimal profile) overshoots between them: ruckig's fastest Panda move, followed so,
        reached 11.0 rad/s² and 5800 rad/s³ against libfranka's 10 and 5000. With ``join``
        the controller starts from the running motion's state there, which is checked too."""
        rest = np.zeros((1, start.size))
        qd0, qdd0 = (rest, rest) if join is None else ([v] for v in join.state()[1:])
        followed = sampled_reference(
            self.joint_names,
            np.concatenate([[0.0], planned.times]),
            np.vstack([start, planned.positions]),
            np.vstack([qd0, planned.velocities]),
            np.vstack([qdd0, planned.accelerations]),
            moving_start=join is not None,
        )
        if join is not None:
            followed = _Joined(join.reference, join.at, followed)
        try:
            check_trajectory(followed, self.limits)
        except LimitViolation as err:
            lim, peaks = self.limits, sampled_peaks(followed, self.limits.control_period)
            inside = np.all(peaks.position_min >= lim.position_min - RTOL) and np.all(
                peaks.position_max <= lim.position_max + RTOL
            )
            over = [
                float(np.max(getattr(peaks, name) / lim.rate(r))) ** (1.0 / r)
                for r, name in enumerate(RATE_NAMES, start=1)
            ]
            return (max(over) if inside else None), str(err)
        return 1.0, None

    def _rates(
        self, joint_names: Sequence[str], points: Sequence[GoalPoint], n: int
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """Velocities and accelerations (points × controller joints; joints the goal omits at
        rest) when every point carries both, else ``None``. A first point at t = 0 is the
        start, at rest: dropped, as :meth:`_waypoints` drops it."""
        if not all(len(p.velocities) and len(p.accelerations) for p in points):
            return None
        idx = self._order(joint_names)
        qd, qdd = np.zeros((len(points), n)), np.zeros((len(points), n))
        for i, point in enumerate(points):
            qd[i, idx], qdd[i, idx] = point.velocities, point.accelerations
        if float(points[0].time_from_start) == 0.0:
            qd, qdd = qd[1:], qdd[1:]
        return qd, qdd

    def _through_samples(
        self,
        start: np.ndarray,
        q: np.ndarray,
        times: np.ndarray,
        qd: np.ndarray,
        qdd: np.ndarray,
        join: Join | None = None,
    ) -> PlannedTrajectory:
        """A densely sampled timed goal as the controller will follow it (joint_trajectory_
        controller's quintic through each pair of samples), from ``start`` at rest (or, joining
        a running motion, from its state there, ``join.lead`` before the goal's stamp): checked
        whole at the robot's control period, jerk included, and never re-timed, since its
        times are the motion (a straight Cartesian descent would not survive a stop at every
        sample). Its last point must be at rest: a controller holds the last point, and a
        velocity there would be a step to zero. Its own samples before ``first_point`` are left
        out where the join to the next one stays inside the limits (:meth:`_first_sample`): a
        goal sampled from where its sender last saw the arm, 1 mrad from where it now is,
        joined over its first 20 ms left libfranka's acceleration limit.

        ``join``: the goal replaces a running motion mid-move (a stop on sensed support); the
        controller's reference there is exact, so every sample is kept, and the check runs
        across the join from the running motion into the goal."""
        if np.any(qd[-1] != 0.0) or np.any(qdd[-1] != 0.0):
            raise InvalidInput(
                "the last point's velocities and accelerations must be 0: the goal ends at rest"
            )
        if join is None:
            first = self._first_sample(start, times, q, qd, qdd)
            times, q, qd, qdd = times[first:], q[first:], qd[first:], qdd[first:]
            qd0 = qdd0 = np.zeros_like(start)
        else:  # on the join's timeline: the goal's times count from its stamp, lead later
            _, qd0, qdd0 = join.state()
            times = times + join.lead
        try:
            spline = sampled_reference(
                self.joint_names,
                np.concatenate([[0.0], times]),
                np.vstack([start, q]),
                np.vstack([qd0, qd]),
                np.vstack([qdd0, qdd]),
                moving_start=join is not None,
            )
        except InvalidInput as err:
            raise InvalidInput(f"goal samples: {err}") from err
        reference = PiecewiseReference(self.joint_names, (spline,), np.zeros(1))
        checked = reference if join is None else _Joined(join.reference, join.at, spline)
        try:
            peaks = check_trajectory(checked, self.limits)
        except LimitViolation as err:
            if join is None:
                raise
            raise LimitViolation(f"joining the running motion at {join.at:.3f} s: {err}") from err
        knots = np.concatenate([[0.0], times])
        planned = self._sample(reference, peaks, "goal samples", knots, join is None)
        _, problem = self._as_followed(start, planned, join)
        if problem is not None:  # (resampled from the same quintics: they follow exactly)
            raise LimitViolation(f"as the controller follows the goal's samples: {problem}")
        return planned

    def _sample(
        self,
        reference: PiecewiseReference,
        peaks: Peaks,
        timed_by: str,
        knots: np.ndarray | None = None,
        from_rest: bool = True,
    ) -> PlannedTrajectory:
        """``reference`` sampled for the controller: every knot [s] (default: where each
        segment starts, and the end) and each interval between two split evenly, at most
        ``sample_period`` apart. Why knots: the controller follows a quintic between two samples,
        which is the reference itself only if no knot (where a segment's or a goal's own
        quintic changes) falls between them; and why evenly: a short last interval (what is left
        after whole periods) had the controller bring the move to rest in a fraction of a ms (a
        trapezoid's last 0.4 ms: 27 000 rad/s³ against libfranka's 5000). A move shorter than a
        period is sampled once, a period in (at rest there). ``from_rest`` false: the reference
        starts moving (a join), and no sample is left out before ``first_point``."""
        period, duration = self.policy.sample_period, reference.duration
        if knots is None:
            knots = np.append(reference.starts, duration)
        if duration > period:
            knots = np.unique(np.clip(knots, 0.0, duration))
            pieces = [
                np.linspace(a, b, max(1, math.ceil((b - a) / period - 1e-9)) + 1)[1:]
                for a, b in itertools.pairwise(knots)
                if b - a > 1e-12
            ]
            times = np.concatenate(pieces)
        else:
            times = np.array([period])
        q, qd, qdd = (reference(times, r) for r in range(3))
        qd[-1] = qdd[-1] = 0.0  # the move ends at rest (a cubic's end acceleration jumps to 0)
        q[-1] = reference(np.array([duration + 1.0]))[0]
        check_samples(self.joint_names, q, qd, qdd, self.limits)
        if from_rest:
            first = self._first_sample(reference(np.zeros(1))[0], times, q, qd, qdd)
            times, q, qd, qdd = times[first:], q[first:], qd[first:], qdd[first:]
        return PlannedTrajectory(
            self.joint_names, reference, times, q, qd, qdd, peaks, timed_by, self.policy.shape
        )

    def _first_sample(
        self, start: np.ndarray, times: np.ndarray, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray
    ) -> int:
        """Index of the first sample sent: the one at ``first_point`` (or the last), or an
        earlier one where the controller's join to it would leave the limits.

        The controller follows the quintic through each pair of samples and from its state at
        the goal's start (at rest, at ``start`` [rad]) to the first one, so the samples left out
        are replaced by that join. A quintic-shaped move (min-jerk) is one quintic, and its join
        is the move itself; another shape (a trapezoid's acceleration step, ruckig's) or a goal's
        own samples may join faster than they move, so the join is checked at the limits'
        control period (positions, velocity, acceleration and jerk) and the first sample taken
        earlier until it is inside them (the first of all: nothing left out, as without
        ``first_point``)."""
        first_point = self.policy.first_point
        if first_point <= 0.0:
            return 0
        late = np.flatnonzero(times >= first_point - 1e-9)
        k = int(late[0]) if late.size else len(times) - 1
        for first in range(k, 0, -1):
            if self._join_within(start, times, q, qd, qdd, first):
                return first
        return 0

    def _join_within(
        self,
        start: np.ndarray,
        times: np.ndarray,
        q: np.ndarray,
        qd: np.ndarray,
        qdd: np.ndarray,
        first: int,
    ) -> bool:
        """Whether the controller's join from ``start`` [rad] at rest to sample ``first`` (the
        samples before it left out) stays inside every limit, as :func:`check_trajectory`
        judges it at the limits' control period, through the join and the interval after it."""
        rest = np.zeros((1, start.size))
        followed = sampled_reference(
            self.joint_names,
            np.concatenate([[0.0], times[first:]]),
            np.vstack([start, q[first:]]),
            np.vstack([rest, qd[first:]]),
            np.vstack([rest, qdd[first:]]),
        )
        end = times[min(first + 1, len(times) - 1)]
        try:
            check_trajectory(_Window(followed, float(end)), self.limits)
        except LimitViolation:
            return False
        return True
