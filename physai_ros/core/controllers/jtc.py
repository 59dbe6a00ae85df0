"""joint_trajectory_controller's semantics, once, for every backend (sim bridge, SO-101 driver).

Matched against ros2_controllers 5.17.0 as released for ROS 2 Kilted
(``joint_trajectory_controller/src/joint_trajectory_controller.cpp``): what is accepted and
rejected (and the log line that says why), preemption, cancel, stamps, path and goal
tolerances, goal_time, partial goals, the topic interface, activation and deactivation, and the
result codes and strings. A backend only reads its robot (``update(now, q, qd)``) and commands
the reference this returns; the ROS side (``physai_ros.nodes._controllers``) only translates
messages. Pure: numpy only.

Deliberate differences, each for safety or because the upstream behaviour is a defect, and
each documented in docs/controllers.md:

* goals are checked against the joint position ranges and, when ``limits`` is given, against
  velocity and acceleration limits at the control period (``physai_ros.core.motion.limits``);
* a first point at t = 0 farther than ``start_tolerance`` from the current position (the
  measured one too when starting from the reference) or, with ``limits``, a step from it faster
  than the velocity limit over one limit period, duplicate joint names, and accelerations
  without velocities are rejected (upstream jumps, accepts, and commands zeros, respectively);
* a trajectory stamped in the past (a goal that arrived late) starts now from the current
  state, its points keeping their times (upstream samples the spline mid-way: a jump);
* path and goal *velocity* tolerances are enforced (our backends measure velocity), acceleration
  tolerances are accepted and not checked (nothing measures acceleration), as upstream does
  without an acceleration state interface;
* failure strings start with the upstream text and add the joint and the numbers after ": ";
* ``cmd_timeout`` aborts an action goal (upstream reports it succeeded);
* ``stop(reason)`` (faults, a stop request) aborts the goal like a deactivation, with the reason;
* a stream of position targets (``stream``: a leader arm, a policy) is followed beside the
  trajectory interfaces, inside the limits (``physai_ros.core.controllers.streaming``); while a
  stream moves the arm, trajectories are refused, and while a trajectory runs, stream targets;
* with ``stop_mode="decelerate"`` (the real SO-101's default) a cancel, a stop, a deactivation
  and a command-timeout abort ramp the *reference* down to rest within the acceleration limits,
  along the direction it was moving, then hold where it came to rest. Upstream holds the
  measured position, which on a position servo with its own acceleration profile lags the
  servo's goal by about v²/2a (0.12 rad at 3 rad/s): the servo overshoots and reverses. A path
  or goal tolerance violation still holds the measured position: the arm has left its
  reference (blocked, pushed), and the reference is no place to drive it to.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from physai_ros.core.controllers.streaming import StreamFollower, StreamSettings
from physai_ros.core.motion.joint_trajectory import (
    FLT_EPSILON,
    GoalState,
    JointRanges,
    JointTolerance,
    StartState,
    TimedTrajectory,
    Tolerances,
    TrajectoryPoint,
    check_goal,
    merge_tolerances,
    plan_trajectory,
    stopping_trajectory,
)
from physai_ros.core.motion.limits import JointLimits, check_trajectory, check_waypoints
from physai_ros.errors import InvalidInput

# control_msgs/action/FollowJointTrajectory result codes
SUCCESSFUL = 0
INVALID_GOAL = -1
PATH_TOLERANCE_VIOLATED = -4
GOAL_TOLERANCE_VIOLATED = -5

STOP_MODES = ("hold_measured", "decelerate")
PREEMPTED = "Current goal preempted by new incoming action."
DEACTIVATED = "Current goal cancelled during deactivate transition."
REACHED = "Goal successfully reached!"
PATH_ABORT = "Aborted due to path tolerance violation"
TIMEOUT_ABORT = "Aborted due to command timeout"
NOT_RUNNING = "Can't accept new action goals. Controller is not running."


class Rejected(InvalidInput):
    """A trajectory the controller refuses; the message is the log line that says why."""


class GoalEnd(NamedTuple):
    """How an action goal ended: status ``succeeded`` | ``aborted`` | ``canceled``, with the
    FollowJointTrajectory result's error_code and error_string."""

    goal_id: object
    status: str
    error_code: int
    error_string: str


class TrajectoryMsg(NamedTuple):
    """A JointTrajectory's content: joint names, points, header stamp [s] (0 = now)."""

    joint_names: Sequence[str]
    points: Sequence[TrajectoryPoint]
    stamp: float = 0.0
    has_effort: bool = False


class GoalTolerances(NamedTuple):
    """A FollowJointTrajectory goal's tolerances (control_msgs/JointTolerance lists)."""

    path: Sequence[JointTolerance] = ()
    goal: Sequence[JointTolerance] = ()
    goal_time: float = 0.0


@dataclass(frozen=True)
class JtcParams:
    """The controller's parameters (names as joint_trajectory_controller's).

    joints, lower, upper: controlled joints and position ranges [rad];
    trajectory, goal: per-joint path and goal position tolerances [rad] (0 = not checked);
    stopped_velocity_tolerance: goal velocity tolerance [rad/s] (0 = not checked);
    goal_time: [s] after the last point the goal may take (0 = wait for ever);
    allow_partial_joints_goal, allow_nonzero_velocity_at_trajectory_end,
    interpolate_from_desired_state: as upstream; cmd_timeout [s] (0 = off);
    start_tolerance [rad]: a first point at t = 0 may differ this much from the current
    position (0 = any jump is refused); limits, limit_period [s]: velocity and acceleration
    limits checked at this period (None = not checked); blocked_error [rad], blocked_speed
    [rad/s], blocked_time [s]: a joint more than blocked_error from its reference that for
    blocked_time gets no closer to it at blocked_speed, neither by moving towards it nor by the
    reference coming back, while a trajectory runs is blocked: the goal aborts as a path
    tolerance violation (0 = off). Unlike a path tolerance this does not trip on the lag of a
    servo that follows its reference, only on one that stopped; nor on a reference that
    returns to a stopped joint (a place relieving its press on the table). stop_mode: what a
    cancel, stop, deactivation or command timeout holds: ``hold_measured`` (upstream: the
    measured position at once) or ``decelerate`` (the reference ramped to rest within
    ``limits``' accelerations, then held; without finite acceleration limits it holds the
    measured position). stream: how streamed targets are followed (``StreamSettings``).
    """

    joints: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray
    trajectory: np.ndarray
    goal: np.ndarray
    stopped_velocity_tolerance: float = 0.01
    goal_time: float = 0.0
    allow_partial_joints_goal: bool = False
    allow_nonzero_velocity_at_trajectory_end: bool = False
    interpolate_from_desired_state: bool = False
    cmd_timeout: float = 0.0
    start_tolerance: float = 0.05
    limits: JointLimits | None = None
    limit_period: float = 0.01
    blocked_error: float = 0.0
    blocked_speed: float = 0.05
    blocked_time: float = 0.1
    stop_mode: str = "hold_measured"
    stream: StreamSettings = dataclasses.field(default_factory=StreamSettings)

    def __post_init__(self) -> None:
        n = len(self.joints)
        for name in ("lower", "upper", "trajectory", "goal"):
            value = np.asarray(getattr(self, name), dtype=float)
            if value.shape != (n,) or np.any(np.isnan(value)):
                raise InvalidInput(f"{name} needs {n} numbers (one per joint), got {value!r}")
            object.__setattr__(self, name, value)
        for name in (
            "stopped_velocity_tolerance",
            "goal_time",
            "cmd_timeout",
            "start_tolerance",
            "blocked_error",
            "blocked_speed",
            "blocked_time",
        ):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0.0):
                raise InvalidInput(f"{name} must be finite and >= 0, got {value!r}")
        if not (math.isfinite(self.limit_period) and self.limit_period > 0.0):
            raise InvalidInput(f"limit_period must be > 0 [s], got {self.limit_period!r}")
        if self.stop_mode not in STOP_MODES:
            raise InvalidInput(f"stop_mode must be one of {STOP_MODES}, got {self.stop_mode!r}")

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], joints: Sequence[str], lower, upper) -> JtcParams:
        """From a controller section as YAML holds it (upstream names; ``constraints`` may
        give ``trajectory``/``goal`` for every joint and ``<joint>: {trajectory, goal}`` per
        joint)."""
        c = cfg.get("constraints", {})

        def per_joint(kind: str) -> np.ndarray:
            return np.array([float(c.get(j, {}).get(kind, c.get(kind, 0.0))) for j in joints])

        return cls(
            joints=tuple(joints),
            lower=np.asarray(lower, dtype=float),
            upper=np.asarray(upper, dtype=float),
            trajectory=per_joint("trajectory"),
            goal=per_joint("goal"),
            stopped_velocity_tolerance=float(c.get("stopped_velocity_tolerance", 0.01)),
            goal_time=float(c.get("goal_time", 0.0)),
            allow_partial_joints_goal=bool(cfg.get("allow_partial_joints_goal", False)),
            allow_nonzero_velocity_at_trajectory_end=bool(
                cfg.get("allow_nonzero_velocity_at_trajectory_end", False)
            ),
            interpolate_from_desired_state=bool(cfg.get("interpolate_from_desired_state", False)),
            cmd_timeout=float(cfg.get("cmd_timeout", 0.0)),
            start_tolerance=float(cfg.get("start_tolerance", 0.05)),
            blocked_error=float(c.get("blocked_error", 0.0)),
            blocked_speed=float(c.get("blocked_speed", 0.05)),
            blocked_time=float(c.get("blocked_time", 0.1)),
        )

    def default_tolerances(self) -> Tolerances:
        def off(v: np.ndarray) -> np.ndarray:
            return np.where(v > 0.0, v, np.inf)

        n = len(self.joints)
        stopped = self.stopped_velocity_tolerance or math.inf
        return Tolerances(
            path_position=off(self.trajectory),
            goal_position=off(self.goal),
            goal_velocity=np.full(n, stopped),
            goal_time=self.goal_time or math.inf,
            path_velocity=np.full(n, math.inf),
        )


class JointTrajectoryController:
    """One arm's trajectory controller. Not thread-safe: the caller holds one lock around
    every call (the backend loop calls ``update``; the ROS side the rest)."""

    def __init__(self, params: JtcParams) -> None:
        self.p = params
        n = len(params.joints)
        self.active = False
        self.ref = np.zeros((3, n))  # desired (q, q̇, q̈) now
        self.q = np.zeros(n)  # last measured position [rad] and velocity [rad/s]
        self.qd = np.zeros(n)
        self.time = 0.0
        self.traj: TimedTrajectory | None = None
        self.start = 0.0
        self.goal_id: object | None = None
        self.tolerances = params.default_tolerances()
        self.warnings: list[str] = []  # for the node to log (tolerance fall-backs, holds)
        self.inactive_reason = ""  # why goals are refused, added to the rejection
        self._first_sample = False  # the next update is a new trajectory's first
        self._timeout_warned: JtcParams | None = None
        self._anchor_q = np.zeros(n)  # [rad] where each joint was when it last moved
        self._anchor_t = np.zeros(n)  # [s] and when
        self._anchor_error = np.zeros(n)  # [rad] its widest distance from the reference since
        self.stopping = False  # following a ramp to rest that no goal owns (stop_mode)
        self._stream: StreamFollower | None = None  # built on the first streamed target

    @property
    def ranges(self) -> JointRanges:
        """The joints and position ranges goals are held to (``p`` may be replaced live)."""
        return JointRanges(self.p.joints, self.p.lower, self.p.upper)

    # --- lifecycle -----------------------------------------------------------------------
    def activate(
        self, now: float, q: np.ndarray, qd: np.ndarray, hold: np.ndarray | None = None
    ) -> None:
        """Hold the measured position (upstream ``on_activate``), or ``hold`` [rad]: the goal
        the hardware already holds, so that activating moves nothing."""
        self._measure(now, q, qd)
        self._hold_measured()
        self._stream = None
        if hold is not None:
            self.ref[0] = np.asarray(hold, dtype=float)
        self.active, self.inactive_reason = True, ""

    def deactivate(self, reason: str = "", stopped_by_hardware: bool = False) -> list[GoalEnd]:
        """Abort the goal (INVALID_GOAL) and stop following: nothing is commanded after, or,
        with ``stop_mode="decelerate"``, only the ramp to rest (``update`` still samples it;
        ``stopping`` says so). ``reason`` is added to the abort string and to later
        rejections. ``stopped_by_hardware``: the robot stopped the arm itself (a Franka
        reflex), so the reference is where it stopped, whatever ``stop_mode`` says."""
        ends = self._abort(INVALID_GOAL, DEACTIVATED + (f" {reason}" if reason else ""))
        if stopped_by_hardware:
            self._hold_measured()
        elif self.p.stop_mode == "decelerate":
            self._halt()
        else:  # upstream: the reference stays where it was
            self.traj, self.stopping, self._stream = None, False, None
        self.active, self.inactive_reason = False, reason
        return ends

    def stop(self, reason: str) -> list[GoalEnd]:
        """A fault or a stop request: abort the goal with ``reason`` and hold (the measured
        position, or the reference ramped to rest: ``stop_mode``). The controller stays
        active; the caller decides whether goals may come."""
        ends = self._abort(INVALID_GOAL, reason)
        self._halt()
        return ends

    # --- goals ---------------------------------------------------------------------------
    def prepare(self, msg: TrajectoryMsg, now: float) -> tuple[TimedTrajectory, float]:
        """Validate a trajectory and interpolate it from the current state; returns it and its
        start time. Raises ``Rejected`` with upstream's log line (plus our safety checks)."""
        if not self.active:
            raise Rejected(
                NOT_RUNNING + (f" ({self.inactive_reason})" if self.inactive_reason else "")
            )
        if self.streaming:
            raise Rejected(
                "the arm is following a target stream: stop the stream (the arm then holds "
                "where it ends) before sending a trajectory"
            )
        names = list(msg.joint_names)
        self._validate(names, msg, now)
        names, points = self._fill_partial(names, msg.points)
        start_time, points = self._time_base(msg.stamp, now, points)
        try:
            traj = plan_trajectory(
                self.ranges,
                names,
                points,
                self._point_before(),
                self._start_tolerance(),
                measured=self.q.copy(),
                max_step=self._max_step(),
            )
            self._check_limits(traj)
        except InvalidInput as exc:
            raise Rejected(str(exc)) from exc
        return traj, start_time

    def _validate(self, names: list[str], msg: TrajectoryMsg, now: float) -> None:
        """Upstream's ``validate_trajectory_msg``, its rules in its order and words."""
        p = self.p
        if not p.allow_partial_joints_goal and len(names) != len(p.joints):
            raise Rejected("Joints on incoming trajectory don't match the controller joints.")
        if not names:
            raise Rejected("Empty joint names on incoming trajectory.")
        if not msg.points:
            raise Rejected("Empty trajectory received.")
        for name in names:
            if name not in p.joints:
                raise Rejected(f"Incoming joint {name} doesn't match the controller's joints.")
        if len(set(names)) != len(names):  # ours: upstream lets [j1, j1, j2] through
            raise Rejected(f"Incoming joint names {names} are not unique.")
        last = msg.points[-1]
        if not p.allow_nonzero_velocity_at_trajectory_end:
            for name, v in zip(names, last.velocities, strict=False):
                if abs(v) > FLT_EPSILON:
                    raise Rejected(
                        f"Velocity of last trajectory point of joint {name} is not zero: {v:.15f}"
                    )
        end = msg.stamp + last.time_from_start
        if msg.stamp != 0.0 and end < now:
            raise Rejected(
                f"Received trajectory with non-zero start time ({msg.stamp:f}) that ends in the "
                f"past ({end:f})"
            )
        for i in range(1, len(msg.points)):
            t0, t1 = msg.points[i - 1].time_from_start, msg.points[i].time_from_start
            if not t1 > t0:
                raise Rejected(
                    f"Time between points {i - 1} and {i} is not strictly increasing, it is "
                    f"{t0:f} and {t1:f} respectively"
                )
        for i, point in enumerate(msg.points):
            for field, values in (
                ("positions", point.positions),
                ("velocities", point.velocities),
                ("accelerations", point.accelerations),
            ):
                if (field == "positions" or len(values)) and len(values) != len(names):
                    raise Rejected(
                        f"Mismatch between joint_names size ({len(names)}) and {field} "
                        f"({len(values)}) at point #{i}."
                    )
        if msg.has_effort:
            raise Rejected(
                "Trajectories with effort fields are only supported for controllers using the "
                "'effort' command interface."
            )

    def _check_limits(self, traj: TimedTrajectory) -> None:
        """Positions within the controller's ranges all along (a spline can overshoot between
        its points), and velocity/acceleration within ``limits`` when given."""
        p = self.p
        limits = p.limits.select(p.joints) if p.limits is not None else None
        if limits is None:
            limits = JointLimits.ranges_only(p.joints, p.lower, p.upper, p.limit_period)
        else:
            limits = dataclasses.replace(limits, position_min=p.lower, position_max=p.upper)
        try:
            if traj.degree == 1:
                knots = traj.knots
                check_waypoints(p.joints, knots, traj(knots, 0), limits)
            else:
                check_trajectory(traj, limits, p.limit_period)
        except InvalidInput as exc:
            raise Rejected(f"trajectory exceeds the joint limits: {exc}") from exc

    def accept(
        self,
        goal_id: object,
        prepared: tuple[TimedTrajectory, float],
        tolerances: GoalTolerances,
    ) -> list[GoalEnd]:
        """Start an accepted action goal (from ``prepare``); a running goal is preempted."""
        ends = self._abort(INVALID_GOAL, PREEMPTED)
        self.traj, self.start = prepared
        self._first_sample, self.stopping = True, False
        self._anchor_joints()
        self.goal_id = goal_id
        merged, warning = merge_tolerances(
            self.p.default_tolerances(),
            self.ranges,
            tolerances.path,
            tolerances.goal,
            tolerances.goal_time,
        )
        if warning:
            self.warnings.append(warning)
        self.tolerances = merged
        return ends

    def follow(self, prepared: tuple[TimedTrajectory, float]) -> None:
        """A trajectory from the topic: replaces the one followed. A running action goal is
        not ended; it is judged against the new trajectory (upstream behaviour)."""
        self.traj, self.start = prepared
        self._first_sample, self.stopping = True, False
        self._anchor_joints()

    def cancel(self, goal_id: object) -> list[GoalEnd]:
        """Cancel the goal if it is the running one: CANCELED (code 0, empty string), hold the
        measured position."""
        if goal_id is None or goal_id != self.goal_id:
            return []
        self.goal_id = None
        self._halt()
        return [GoalEnd(goal_id, "canceled", SUCCESSFUL, "")]

    def stream(self, now: float, names: Sequence[str], positions: Sequence[float]) -> None:
        """A streamed position target [rad] for every joint (``names`` in any order), received
        at ``now`` on the loop clock. Refused (``Rejected``, nothing changed) while a
        trajectory runs, without finite velocity and acceleration limits, and as
        ``StreamFollower.target`` refuses (a first or resumed target away from the arm)."""
        if not self.active:
            raise Rejected(
                NOT_RUNNING + (f" ({self.inactive_reason})" if self.inactive_reason else "")
            )
        if self.traj is not None or self.goal_id is not None:
            raise Rejected(
                "stream target refused: the arm is following a trajectory (a goal, the topic, "
                "or a ramp to rest); stream once it holds"
            )
        if self.p.limits is None:
            raise Rejected("stream target refused: streaming needs the limits (check_limits)")
        if sorted(names) != sorted(self.p.joints) or len(set(names)) != len(names):
            raise Rejected(
                f"stream target refused: it must name every joint once, {list(self.p.joints)}; "
                f"got {list(names)}"
            )
        order = [list(names).index(j) for j in self.p.joints]
        target = np.asarray(positions, dtype=float)
        if target.shape != (len(names),):
            raise Rejected(
                f"stream target refused: {len(positions)} positions for {len(names)} names"
            )
        follower = self._stream
        if follower is None or follower.settings != self.p.stream:
            limits = self.p.limits.select(self.p.joints)
            limits = dataclasses.replace(  # the controller's ranges and the limits', both
                limits,
                position_min=np.maximum(self.p.lower, limits.position_min),
                position_max=np.minimum(self.p.upper, limits.position_max),
            )
            try:
                follower = StreamFollower(limits, self.p.stream)
            except InvalidInput as exc:
                raise Rejected(f"stream target refused: {exc}") from exc
        if follower.state in ("inactive", "held"):
            follower.start(now, self.ref[0])
        try:
            follower.target(now, target[order])
        except InvalidInput as exc:
            raise Rejected(f"stream target refused: {exc}") from exc
        self._stream = follower

    @property
    def streaming(self) -> bool:
        """Whether a stream moves the arm (following it, or braking after it stopped)."""
        return self._stream is not None and self._stream.state in ("following", "stopping")

    @property
    def stream_state(self) -> tuple[str, str]:
        """The stream's state (inactive | held | following | stopping) and why it is so."""
        if self._stream is None:
            return "inactive", ""
        return self._stream.state, self._stream.reason

    # --- the control cycle ---------------------------------------------------------------
    def update(self, now: float, q: np.ndarray, qd: np.ndarray) -> list[GoalEnd]:
        """One cycle: measure, sample the reference (``self.ref``), judge the goal."""
        gap = now - self.time  # since the previous cycle: the last set-point's age
        self._measure(now, q, qd)
        if self.streaming and self.active:
            self.ref[:] = self._stream.update(now)
            if self._stream.state == "held":
                self.warnings.append(self._stream.reason)
            return []
        traj = self.traj
        if traj is None or not (self.active or self.stopping):
            return []
        t = now - self.start
        traj.sample(t, self.ref)
        if self.stopping:  # a ramp to rest: no goal, no tolerance owns it
            if t >= traj.duration:
                self.traj, self.stopping = None, False
                self.ref[0], self.ref[1:] = traj.positions_end, 0.0
            return []
        first, self._first_sample = self._first_sample, False
        state = check_goal(
            t, traj, self.ref[0], self.q, self.qd, self.tolerances, self.ref[1], path=first
        )
        if state.outcome == "running":
            state = self._blocked(t, gap)
        if state.outcome == "running":
            late = t - traj.duration
            if self._cmd_timeout() > 0.0 and late > self._cmd_timeout():
                self.warnings.append(TIMEOUT_ABORT)
                ends = self._abort(GOAL_TOLERANCE_VIOLATED, TIMEOUT_ABORT)
                self._halt()
                return ends
            return []
        if state.outcome == "succeeded":
            self.traj = None  # hold the last point
            self.ref[0], self.ref[1:] = traj.positions_end, 0.0
            if self.goal_id is None:
                return []
            ends = [GoalEnd(self.goal_id, "succeeded", SUCCESSFUL, REACHED)]
            self.goal_id = None
            return ends
        if state.outcome == "path_tolerance_violated":
            code, text = PATH_TOLERANCE_VIOLATED, f"{PATH_ABORT}: {state.message}"
            topic_text = f"Holding position due to state tolerance violation: {state.message}"
        else:
            code = GOAL_TOLERANCE_VIOLATED
            text = (
                f"Aborted due to goal_time_tolerance exceeding by {state.late:f} seconds: "
                f"{state.message}"
            )
            topic_text = f"Exceeded goal_time_tolerance: holding position... {state.message}"
        if self.goal_id is None:
            self.warnings.append(topic_text)
        ends = self._abort(code, text)
        self._hold_measured()
        return ends

    def _cmd_timeout(self) -> float:
        """Upstream enables cmd_timeout only above goal_time (else it warns and ignores it)."""
        p = self.p
        if p.cmd_timeout <= 0.0 or (p.goal_time > 0.0 and p.cmd_timeout <= p.goal_time):
            if p.cmd_timeout > 0.0 and self._timeout_warned is not p:
                self._timeout_warned = p
                self.warnings.append(
                    "Command timeout must be higher than goal_time tolerance "
                    f"({p.cmd_timeout:f} vs. {p.goal_time:f})"
                )
            return 0.0
        return p.cmd_timeout

    def _anchor_joints(self) -> None:
        """Judge every joint's progress towards its reference afresh from this cycle."""
        self._anchor_q, self._anchor_t = self.q.copy(), np.full(len(self.q), self.time)
        self._anchor_error = np.abs(self.ref[0] - self.q)

    def _blocked(self, t: float, gap: float) -> GoalState:
        """A joint that stopped away from its moving reference (``blocked_*``): more than
        ``blocked_error`` from it and not ``blocked_speed × blocked_time`` closer to it since
        ``blocked_time`` ago. Judged on progress towards the reference, not on one velocity
        reading: a servo chasing a streamed goal moves in spurts, and a joint rattling
        against an obstacle moves without getting anywhere. Progress is the joint's own
        motion towards the reference or the gap between them shrinking from its widest since
        then, whichever is larger: a reference that comes back to a joint held by an obstacle
        (a place's stop and relief of its press on the table) ends the press the check is
        there to end, and must not be refused for it.

        Only over time the backend commanded: after a ``gap`` [s] between cycles longer than
        half ``blocked_time`` (the backend's loop stalled: a starved driver on a loaded
        machine) the arm stood at the last set-point it was sent while the reference ran on,
        so every joint is judged afresh from this cycle. Before, a 0.3 s stall of a healthy
        arm tripped the shipped 0.2 s check."""
        p = self.p
        if p.blocked_error <= 0.0:
            return GoalState("running", "")
        if gap > 0.5 * p.blocked_time:
            self._anchor_joints()
            return GoalState("running", "")
        error = np.abs(self.ref[0] - self.q)
        moved = (self.q - self._anchor_q) * np.sign(self.ref[0] - self.q)
        widest = np.maximum(self._anchor_error, error)
        progress = np.maximum(moved, widest - error)
        fresh = (progress > p.blocked_speed * p.blocked_time) | (error <= p.blocked_error)
        self._anchor_q = np.where(fresh, self.q, self._anchor_q)
        self._anchor_t = np.where(fresh, self.time, self._anchor_t)
        self._anchor_error = np.where(fresh, error, widest)
        still = self.time - self._anchor_t
        if not np.any(still >= p.blocked_time):
            return GoalState("running", "")
        j = int(np.argmax(still))
        return GoalState(
            "path_tolerance_violated",
            f"{p.joints[j]} is blocked: {error[j]:.4f} rad from the reference, less than "
            f"{p.blocked_speed * p.blocked_time:.4f} rad closer in {still[j]:.2f} s at "
            f"t = {t:.3f} s",
        )

    # --- what the ROS side reports -------------------------------------------------------
    @property
    def following(self) -> bool:
        return self.traj is not None

    def error(self) -> np.ndarray:
        """(position, velocity) error desired − measured, shape (2, n)."""
        return np.array([self.ref[0] - self.q, self.ref[1] - self.qd])

    def segment_index(self) -> int:
        """Feedback ``index``: the waypoint the reference heads for (len = after the end)."""
        if self.traj is None:
            return 0
        t = self.time - self.start
        return int(np.searchsorted(self.traj.knots[1:], t, side="right"))

    # --- internals -----------------------------------------------------------------------
    def _measure(self, now: float, q: np.ndarray, qd: np.ndarray) -> None:
        self.time = float(now)
        self.q = np.asarray(q, dtype=float).copy()
        self.qd = np.asarray(qd, dtype=float).copy()

    def _hold_measured(self) -> None:
        self.traj, self.stopping, self._stream = None, False, None
        self.ref[0], self.ref[1:] = self.q, 0.0

    def _halt(self) -> None:
        """Come to rest as ``stop_mode`` says: the measured position at once, or the
        reference (where the servos are sent) ramped to rest within the acceleration limits
        and the position ranges. Nothing to ramp (at rest, or no finite acceleration limits):
        hold the reference if ``decelerate``, the measured position otherwise."""
        limits = self.p.limits
        if self.p.stop_mode != "decelerate":
            self._hold_measured()
            return
        accel = limits.select(self.p.joints).acceleration if limits is not None else None
        if accel is None or not np.all(np.isfinite(accel)):
            self._hold_measured()
            return
        moving = self.traj is not None or self.streaming  # a stream ramps as a trajectory
        self._stream = None
        if not moving or not np.any(self.ref[1]):
            self.traj, self.stopping = None, False
            self.ref[1:] = 0.0
            return
        self.traj = stopping_trajectory(
            self.p.joints, self.ref[0], self.ref[1], accel, self.p.lower, self.p.upper
        )
        self.start, self.stopping = self.time, True

    def _abort(self, code: int, text: str) -> list[GoalEnd]:
        if self.goal_id is None:
            return []
        ends = [GoalEnd(self.goal_id, "aborted", code, text)]
        self.goal_id = None
        return ends

    def _point_before(self) -> StartState:
        """Where a new trajectory starts: the measured state, or the last reference with
        ``interpolate_from_desired_state``."""
        if self.p.interpolate_from_desired_state:
            return StartState(self.ref[0].copy(), self.ref[1].copy(), self.ref[2].copy())
        n = len(self.p.joints)
        return StartState(self.q.copy(), self.qd.copy(), np.zeros(n))

    def _max_step(self) -> np.ndarray | None:
        """What the velocity limits allow in one limit period [rad] (None: no limits)."""
        if self.p.limits is None:
            return None
        return self.p.limits.select(self.p.joints).velocity * self.p.limit_period

    def _start_tolerance(self) -> float:
        return self.p.start_tolerance if self.p.start_tolerance > 0.0 else 1e-9

    def _fill_partial(
        self, names: list[str], points: Sequence[TrajectoryPoint]
    ) -> tuple[list[str], list[TrajectoryPoint]]:
        """Joints a partial goal leaves out keep their commanded position (velocity and
        acceleration 0 where the points carry them), as upstream's ``fill_partial_goal``."""
        missing = [j for j in self.p.joints if j not in names]
        if not missing:
            return names, list(points)
        held = [float(self.ref[0][self.p.joints.index(j)]) for j in missing]
        zeros = [0.0] * len(missing)
        out = []
        for point in points:
            out.append(
                TrajectoryPoint(
                    point.time_from_start,
                    [*point.positions, *held],
                    [*point.velocities, *zeros] if len(point.velocities) else (),
                    [*point.accelerations, *zeros] if len(point.accelerations) else (),
                )
            )
        return names + missing, out

    def _time_base(
        self, stamp: float, now: float, points: list[TrajectoryPoint]
    ) -> tuple[float, list[TrajectoryPoint]]:
        """Start time and points timed from it. Stamp 0 starts now; a future stamp starts
        now too, reaching the first point at stamp + its time (upstream). A stamp in the past
        (a goal that arrived late) also starts now, from the current state, its points keeping
        their times: it ends late by as much, but nothing jumps (upstream samples it mid-way)."""
        if stamp > now:
            return now, [
                p._replace(time_from_start=p.time_from_start + stamp - now) for p in points
            ]
        if stamp != 0.0:
            self.warnings.append(
                f"trajectory stamped {now - stamp:.3f} s in the past: started now, "
                f"{now - stamp:.3f} s late"
            )
        return now, list(points)
