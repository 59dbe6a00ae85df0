"""Pure unit tests of the shared controller layer (no ROS, no processes).

``physai_ros.core.controllers.jtc`` and ``.gac`` against the behaviour of ros2_controllers
5.17.0 (Kilted) joint_trajectory_controller and gripper action controller as docs/controllers.md
describes it (its sections cited as §n), except the deviations listed there. The controller is
driven like a backend does: ``update(now, q, qd)`` on a 10 ms grid with simulated measurements
(ideal tracking = the previous cycle's reference, a frozen joint, a lagging servo). Every test
names the law it pins.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from physai_ros.core.controllers.gac import GacParams, GripperActionController, gac_params
from physai_ros.core.controllers.jtc import (
    GoalEnd,
    GoalTolerances,
    JointTrajectoryController,
    JtcParams,
    Rejected,
    TrajectoryMsg,
)
from physai_ros.core.motion.joint_trajectory import (
    JointRanges,
    JointTolerance,
    StartState,
    Tolerances,
    TrajectoryPoint,
    check_goal,
    merge_tolerances,
    plan_trajectory,
)
from physai_ros.core.motion.limits import load_limits
from physai_ros.errors import InvalidInput
from physai_ros.models.joints import SO101_ARM_JOINTS

# --- upstream texts and codes, spelled out (not imported) so the tests pin them ---------------
NOT_RUNNING = "Can't accept new action goals. Controller is not running."
PREEMPTED = "Current goal preempted by new incoming action."
DEACTIVATED = "Current goal cancelled during deactivate transition."
REACHED = "Goal successfully reached!"
PATH_ABORT = "Aborted due to path tolerance violation"
GOAL_TIME_ABORT = "Aborted due to goal_time_tolerance exceeding by"
TIMEOUT_ABORT = "Aborted due to command timeout"
SUCCESSFUL, INVALID_GOAL, PATH_TOLERANCE_VIOLATED, GOAL_TOLERANCE_VIOLATED = 0, -1, -4, -5

NAMES = ("a", "b", "c")
LOWER = np.array([-1.0, -2.0, -3.0])
UPPER = np.array([1.0, 2.0, 3.0])
Q0 = np.array([0.1, -0.2, 0.3])
ZERO = np.zeros(3)
DT = 0.01  # [s] the simulated control period

ARM = SO101_ARM_JOINTS
LIMITS = load_limits("so101").select(ARM)  # 4.71 rad/s, 38.96 rad/s² per joint

Measure = Callable[[float, JointTrajectoryController], tuple[np.ndarray, np.ndarray]]


# --- helpers --------------------------------------------------------------------------------
def make_params(**overrides) -> JtcParams:
    kw = {
        "joints": NAMES,
        "lower": LOWER,
        "upper": UPPER,
        "trajectory": np.zeros(3),
        "goal": np.zeros(3),
    }
    kw.update(overrides)
    return JtcParams(**kw)


def make_jtc(q=Q0, now: float = 0.0, **overrides) -> JointTrajectoryController:
    """An active 3-joint controller that has measured ``q`` at rest at ``now``."""
    c = JointTrajectoryController(make_params(**overrides))
    q = np.asarray(q, dtype=float)
    c.activate(now, q, np.zeros_like(q))
    c.update(now, q, np.zeros_like(q))
    return c


def make_arm(q=None, **overrides) -> JointTrajectoryController:
    """An active controller of the SO-101 arm joints with its velocity/acceleration limits."""
    kw = {
        "joints": ARM,
        "lower": LIMITS.position_min,
        "upper": LIMITS.position_max,
        "trajectory": np.zeros(5),
        "goal": np.zeros(5),
        "limits": LIMITS,
    }
    kw.update(overrides)
    c = JointTrajectoryController(JtcParams(**kw))
    q = np.zeros(5) if q is None else np.asarray(q, dtype=float)
    c.activate(0.0, q, np.zeros(5))
    c.update(0.0, q, np.zeros(5))
    return c


def pt(t, positions, velocities=(), accelerations=()) -> TrajectoryPoint:
    return TrajectoryPoint(t, list(positions), list(velocities), list(accelerations))


def msg(points, names=NAMES, stamp: float = 0.0, has_effort: bool = False) -> TrajectoryMsg:
    return TrajectoryMsg(tuple(names), list(points), stamp, has_effort)


NO_TOLERANCES = GoalTolerances()


def send(c, message, now, goal_id="g", tolerances=NO_TOLERANCES) -> list[GoalEnd]:
    """Prepare and accept an action goal, as the ROS side does."""
    return c.accept(goal_id, c.prepare(message, now), tolerances)


def ideal(now: float, c: JointTrajectoryController) -> tuple[np.ndarray, np.ndarray]:
    """Ideal tracking: the robot is where the controller commanded it one cycle ago."""
    return c.ref[0].copy(), c.ref[1].copy()


def frozen(q) -> Measure:
    """A robot that does not move at all."""
    q = np.array(q, dtype=float)
    return lambda now, c: (q.copy(), np.zeros_like(q))


def offset(delta) -> Measure:
    """Tracking with a constant position offset (velocity ideal)."""
    delta = np.array(delta, dtype=float)
    return lambda now, c: (c.ref[0] + delta, c.ref[1].copy())


def drive(c, t0: float, t1: float, measure: Measure = ideal, step: float = DT):
    """``update`` at every grid time in (t0, t1]; the goal ends with the time they came."""
    ends = []
    for k in range(round(t0 / step) + 1, round(t1 / step) + 1):
        now = k * step
        q, qd = measure(now, c)
        ends += [(now, end) for end in c.update(now, q, qd)]
    return ends


def goal_tol(position: float = 0.0, velocity: float = 0.0) -> list[JointTolerance]:
    return [JointTolerance(n, position, velocity) for n in NAMES]


def rejection(c, message, now: float) -> str:
    with pytest.raises(Rejected) as info:
        c.prepare(message, now)
    return str(info.value)


# === 1. acceptance and rejection (§2.1, §2.2) ================================================
FULL = [pt(1.0, Q0)]
EFFORT_TEXT = (
    "Trajectories with effort fields are only supported for controllers using the 'effort' "
    "command interface."
)
UPSTREAM_ORDER = [
    # each message also breaks later rules: only the first failing rule may speak
    pytest.param(
        {},
        msg([], names=("a", "b")),
        "Joints on incoming trajectory don't match the controller joints.",
        id="1-joint-count-before-empty-points",
    ),
    pytest.param(
        {"allow_partial_joints_goal": True},
        msg([], names=()),
        "Empty joint names on incoming trajectory.",
        id="2-empty-names-before-empty-points",
    ),
    pytest.param(
        {},
        msg([], names=("a", "b", "x")),
        "Empty trajectory received.",
        id="3-empty-points-before-unknown-joint",
    ),
    pytest.param(
        {},
        msg([pt(1.0, Q0, [0.0, 0.0, 1.0])], names=("a", "x", "c")),
        "Incoming joint x doesn't match the controller's joints.",
        id="4-unknown-joint-before-end-velocity",
    ),
    pytest.param(
        {},
        msg([pt(1.0, Q0, [0.0, 1e-3, 0.0])], stamp=0.5),
        "Velocity of last trajectory point of joint b is not zero: 0.001000000000000",
        id="5-end-velocity-before-past-stamp",
    ),
    pytest.param(
        {},
        msg([pt(1.0, Q0), pt(1.0, Q0)], stamp=0.5),
        "Received trajectory with non-zero start time (0.500000) that ends in the past (1.500000)",
        id="6-ends-in-past-before-time-order",
    ),
    pytest.param({}, msg(FULL, has_effort=True), EFFORT_TEXT, id="9-effort"),
]


@pytest.mark.parametrize(("overrides", "message", "text"), UPSTREAM_ORDER)
def test_rejection_rules_run_in_upstream_order_with_upstream_text(overrides, message, text):
    """§2.2: validate_trajectory_msg's checks run in order and the first failure decides; the
    Rejected message is upstream's log line verbatim (here at now = 2 s)."""
    c = make_jtc(now=2.0, **overrides)
    assert rejection(c, message, 2.0) == text


UPSTREAM_TEXT_MISSING = [
    pytest.param(
        msg([pt(1.0, Q0), pt(1.0, Q0[:2])]),
        "Time between points 0 and 1 is not strictly increasing, it is 1.000000 and 1.000000 "
        "respectively",
        id="7-time-order-before-sizes",
    ),
    pytest.param(
        msg([pt(1.0, Q0[:2])]),
        "Mismatch between joint_names size (3) and positions (2) at point #0.",
        id="8-positions-size",
    ),
    pytest.param(
        msg([pt(1.0, [])]),
        "Mismatch between joint_names size (3) and positions (0) at point #0.",
        id="8-empty-positions",
    ),
    pytest.param(
        msg([pt(1.0, Q0), pt(2.0, Q0, [0.0, 0.0])]),
        "Mismatch between joint_names size (3) and velocities (2) at point #1.",
        id="8-velocities-size",
    ),
    pytest.param(
        msg([pt(1.0, Q0, ZERO, [0.0])]),
        "Mismatch between joint_names size (3) and accelerations (1) at point #0.",
        id="8-accelerations-size",
    ),
    pytest.param(
        msg([pt(1.0, Q0[:2])], has_effort=True),
        "Mismatch between joint_names size (3) and positions (2) at point #0.",
        id="8-sizes-before-effort",
    ),
    pytest.param(
        msg([pt(1.0, Q0, [0.0, 1e-3])]),
        "Velocity of last trajectory point of joint b is not zero: 0.001000000000000",
        id="5-end-velocity-before-sizes",
    ),
]


@pytest.mark.parametrize(("message", "text"), UPSTREAM_TEXT_MISSING)
def test_time_order_and_size_rules_use_upstream_text(message, text):
    """§2.2 rules 5, 7, 8: upstream's log lines for non-increasing times and field sizes (sizes
    are checked per point before that point's effort; rule 5 reads every given velocity)."""
    assert rejection(make_jtc(now=2.0), message, 2.0) == text


def test_rejected_is_an_invalid_input_and_changes_nothing():
    """§2.1: a rejected goal gets no result and leaves the running goal and reference alone."""
    c = make_jtc()
    send(c, msg([pt(1.0, [0.5, 0.0, 0.0])]), 0.0, "g1")
    drive(c, 0.0, 0.3)
    traj, ref = c.traj, c.ref.copy()
    with pytest.raises(InvalidInput):
        c.prepare(msg([pt(1.0, Q0[:2])]), 0.3)
    assert c.goal_id == "g1" and c.traj is traj
    np.testing.assert_array_equal(c.ref, ref)


def test_inactive_controller_rejects_before_validating():
    """§2.1: an inactive controller rejects with "Controller is not running." before (and
    instead of) any validation."""
    c = JointTrajectoryController(make_params())
    assert rejection(c, msg([]), 0.0) == NOT_RUNNING
    assert rejection(c, msg(FULL), 0.0) == NOT_RUNNING


@pytest.mark.parametrize(
    ("velocity", "allowed", "accepted"),
    [(1.0e-7, False, True), (1.2e-7, False, False), (0.5, True, True)],
)
def test_end_velocity_threshold_is_flt_epsilon(velocity, allowed, accepted):
    """§2.2 rule 5: |last velocity| > FLT_EPSILON (1.19e-7) is rejected unless
    allow_nonzero_velocity_at_trajectory_end."""
    c = make_jtc(allow_nonzero_velocity_at_trajectory_end=allowed)
    message = msg([pt(1.0, Q0, [0.0, 0.0, velocity])])
    if accepted:
        c.prepare(message, 0.0)
    else:
        assert "joint c is not zero" in rejection(c, message, 0.0)


def test_end_velocity_rule_is_live_parameter():
    """§2.2: allow_nonzero_velocity_at_trajectory_end is read at validation, so replacing the
    parameters changes acceptance."""
    c = make_jtc()
    message = msg([pt(1.0, [0.5, 0.0, 0.0], [0.2, 0.0, 0.0])])
    rejection(c, message, 0.0)
    c.p = make_params(allow_nonzero_velocity_at_trajectory_end=True)
    c.prepare(message, 0.0)


def test_stamp_ending_in_the_future_is_accepted():
    """§2.2 rule 6 only rejects stamp + last time < now: a past stamp ending later is taken."""
    c = make_jtc(q=[0.0, 0.0, 0.0], now=2.0)
    c.prepare(msg([pt(1.0, ZERO), pt(2.0, ZERO)], stamp=0.5), 2.0)  # ends at 2.5 s


def test_stamp_ending_exactly_now_is_accepted():
    """§2.2 rule 6 (strict <): stamp + last time == now is not in the past: accepted, and
    (our deviation for late goals) run from now, ending at its last point."""
    c = make_jtc(q=[0.2, 0.0, 0.0], now=2.0)
    traj, _ = c.prepare(msg([pt(0.5, [0.1, 0.0, 0.0]), pt(1.0, [0.2, 0.0, 0.0])], stamp=1.0), 2.0)
    np.testing.assert_allclose(traj.positions_end, [0.2, 0.0, 0.0])


def test_non_increasing_times_are_rejected_whatever_the_stamp():
    """§2.2 rule 7: times must strictly increase; checked on the message as given."""
    c = make_jtc(q=[0.0, 0.0, 0.0], now=2.0)
    points = [pt(2.0, ZERO), pt(1.0, ZERO), pt(3.0, ZERO)]
    rejection(c, msg(points, stamp=0.5), 2.0)


# --- our deviations (jtc.py module docstring) ----------------------------------------------------
def test_duplicate_joint_names_are_rejected():
    """Deviation: duplicate names (which pass upstream rules 1 and 4) are rejected."""
    text = rejection(make_jtc(), msg([pt(1.0, [0.1, 0.1, -0.2])], names=("a", "a", "b")), 0.0)
    assert "not unique" in text


def test_accelerations_without_velocities_are_rejected():
    """Deviation: accelerations without velocities (upstream commands zeros) are rejected."""
    text = rejection(make_jtc(), msg([pt(1.0, Q0, (), ZERO)]), 0.0)
    assert "accelerations given without velocities" in text


def test_positions_outside_the_joint_range_are_rejected():
    """Deviation: a waypoint outside its joint's range is rejected naming joint and bound; the
    bound itself is inside."""
    c = make_jtc()
    text = rejection(c, msg([pt(0.5, [0.1, 1.0, 0.3]), pt(1.0, [0.1, 2.5, 0.3])]), 0.0)
    assert "b = 2.5000" in text and "upper limit 2.0000" in text
    c.prepare(msg([pt(1.0, [1.0, -2.0, 3.0])]), 0.0)


def test_first_point_at_time_zero_must_be_within_start_tolerance():
    """§4.3 + deviation: a first point at t = 0 is commanded at once (no interpolation from the
    current state); farther than start_tolerance (0.05) from the measured position it is
    rejected naming the joint."""
    c = make_jtc()
    text = rejection(c, msg([pt(0.0, Q0 + np.array([0.0, 0.06, 0.0])), pt(1.0, Q0)]), 0.0)
    assert "start tolerance" in text and "puts b" in text
    first = Q0 + np.array([0.04, 0.0, -0.04])
    send(c, msg([pt(0.0, first), pt(1.0, [0.5, 0.0, 0.0])]), 0.0)
    c.update(0.0, Q0, ZERO)
    np.testing.assert_allclose(c.ref[0], first)


def test_limits_reject_fast_goals_naming_the_limit():
    """Deviation: with ``limits`` a goal is sampled at limit_period; a linear 1 rad in 0.1 s
    (10 rad/s > 4.71) fails on velocity, a cubic 0.5 rad in 0.25 s (peak 48 rad/s² > 38.96,
    3 rad/s) on acceleration only; slower versions are accepted."""
    c = make_arm()
    fast_linear = msg([pt(0.1, [1.0, 0, 0, 0, 0])], names=ARM)
    text = rejection(c, fast_linear, 0.0)
    assert "shoulder_pan' velocity" in text and "exceeds the joint limits" in text
    c.prepare(msg([pt(0.5, [1.0, 0, 0, 0, 0]), pt(1.0, [1.0, 0, 0, 0, 0])], names=ARM), 0.0)

    fast_cubic = msg([pt(0.25, [0, 0, 0.5, 0, 0], np.zeros(5))], names=ARM)
    text = rejection(c, fast_cubic, 0.0)
    assert "elbow_flex' acceleration" in text and "velocity" not in text
    c.prepare(msg([pt(0.3, [0, 0, 0.5, 0, 0], np.zeros(5))], names=ARM), 0.0)


def test_limits_judge_a_positions_only_goal_over_its_point_spacing():
    """Deviation: a positions-only (linear) goal's velocity steps are judged as accelerations
    over its points' spacing, not over limit_period: 1 rad/s steps every 0.5 s (2 rad/s²) pass
    although they are 100 rad/s² at 10 ms; the same steps every 0.02 s (50 rad/s²) fail."""
    c = make_arm()
    slow = [pt(0.5, [0.5, 0, 0, 0, 0]), pt(1.0, [0.5, 0, 0, 0, 0]), pt(1.5, [0, 0, 0, 0, 0])]
    c.prepare(msg(slow, names=ARM), 0.0)
    dense = [pt(0.02 * (k + 1), [0.02 * (k + 1), 0, 0, 0, 0]) for k in range(10)]
    text = rejection(c, msg(dense, names=ARM), 0.0)
    assert "shoulder_pan' acceleration" in text


def test_limits_catch_a_short_fast_segment_in_a_positions_only_goal():
    """Deviation (limits): nothing accepted exceeds the velocity limit as commanded every
    limit_period; a 0.2 s segment of 1.2 rad (6 rad/s) among 0.8-1 s ones must be rejected."""
    c = make_arm()
    points = [
        pt(1.0, [0, 0, 0, 0, 0]),
        pt(1.2, [1.2, 0, 0, 0, 0]),
        pt(2.2, [1.2, 0, 0, 0, 0]),
        pt(3.0, [1.2, 0, 0, 0, 0]),
    ]
    assert "velocity" in rejection(c, msg(points, names=ARM), 0.0)


# === 2. preemption and the topic (§3.1, §3.2) ===============================================
def test_new_goal_preempts_the_running_one_without_a_jump():
    """§3.1: accepting a second goal ends the first ABORTED, INVALID_GOAL (-1), "Current goal
    preempted by new incoming action."; the new one starts from the current state (no hold,
    no jump) and succeeds on its own."""
    c = make_jtc()
    assert send(c, msg([pt(2.0, [0.5, 0.0, 0.0])]), 0.0, "g1") == []
    assert drive(c, 0.0, 0.5) == []
    before = c.ref[0].copy()
    ends = send(c, msg([pt(1.0, [-0.5, 0.5, 0.5])]), 0.5, "g2")
    assert ends == [GoalEnd("g1", "aborted", INVALID_GOAL, PREEMPTED)]
    assert c.goal_id == "g2"
    c.update(0.51, *ideal(0.51, c))
    assert np.abs(c.ref[0] - before).max() < 0.02
    rest = drive(c, 0.51, 2.0)
    assert [e for _, e in rest] == [GoalEnd("g2", "succeeded", SUCCESSFUL, REACHED)]
    assert 1.5 <= rest[0][0] <= 1.52


def test_topic_trajectory_does_not_end_the_goal_which_succeeds_on_it():
    """§3.2: a topic trajectory replaces the one followed but neither aborts nor cancels the
    action goal; the goal is judged against it and succeeds when it ends (0.5 s after it came,
    long before the goal's own 2 s)."""
    c = make_jtc()
    tolerances = GoalTolerances(goal=goal_tol(0.01))
    send(c, msg([pt(2.0, [0.5, 0.5, 0.5])]), 0.0, "g1", tolerances)
    drive(c, 0.0, 0.3)
    target = [-0.2, 0.1, 0.0]
    assert c.follow(c.prepare(msg([pt(0.5, target)]), 0.3)) is None
    assert c.goal_id == "g1"
    ends = drive(c, 0.3, 2.5)
    assert [e for _, e in ends] == [GoalEnd("g1", "succeeded", SUCCESSFUL, REACHED)]
    assert 0.8 <= ends[0][0] <= 0.82
    np.testing.assert_allclose(c.ref[0], target)


def test_topic_trajectory_keeps_the_goal_tolerances_and_can_abort_the_goal():
    """§3.2: the running goal keeps its own tolerances on the topic trajectory: a path
    violation there (frozen joint, goal path tolerance 0.05) aborts the goal (-4)."""
    c = make_jtc()
    tolerances = GoalTolerances(path=[JointTolerance("a", 0.05, 0.0)])
    send(c, msg([pt(2.0, Q0)]), 0.0, "g1", tolerances)  # holds still: no violation
    assert drive(c, 0.0, 0.3, frozen(Q0)) == []
    c.follow(c.prepare(msg([pt(1.0, [0.6, -0.2, 0.3])]), 0.3))
    ends = drive(c, 0.3, 2.0, frozen(Q0))
    assert len(ends) == 1
    now, end = ends[0]
    assert end.goal_id == "g1" and end.status == "aborted"
    assert end.error_code == PATH_TOLERANCE_VIOLATED and end.error_string.startswith(PATH_ABORT)
    assert 0.4 <= now <= 0.42  # a moves at 0.5 rad/s: 0.05 rad after 0.1 s


# === 3. cancel (§3.3) =========================================================================
def test_cancel_holds_the_measured_position():
    """§3.3: cancelling the running goal gives CANCELED, code 0, empty string; the reference
    then holds the last *measured* position (not the reference) and stays there."""
    c = make_jtc()
    send(c, msg([pt(1.0, [0.5, 0.5, 0.5])]), 0.0, "g")
    lag = offset([-0.02, 0.03, 0.0])
    drive(c, 0.0, 0.4, lag)
    measured, reference = c.q.copy(), c.ref[0].copy()
    assert c.cancel("someone else") == [] and c.goal_id == "g"
    assert c.cancel("g") == [GoalEnd("g", "canceled", SUCCESSFUL, "")]
    assert not c.following
    assert np.abs(measured - reference).max() > 0.01
    np.testing.assert_array_equal(c.ref[0], measured)
    assert np.all(c.ref[1:] == 0.0)
    assert drive(c, 0.4, 1.5, frozen([0.0, 0.0, 0.0])) == []
    np.testing.assert_array_equal(c.ref[0], measured)
    assert c.cancel("g") == []


# === 4. success (§5.2, §6.1) ==================================================================
def test_goal_succeeds_after_its_end_within_goal_tolerance_and_holds_the_last_point():
    """§5.2: after the last point, within goal tolerance (0.01) and stopped: SUCCEEDED, code 0,
    "Goal successfully reached!"; the reference then holds the last point, not the measured
    position."""
    c = make_jtc(goal=[0.01, 0.01, 0.01])
    target = np.array([0.5, -0.5, 1.0])
    send(c, msg([pt(0.5, [0.3, 0.0, 0.5]), pt(1.0, target)]), 0.0, "g")
    ends = drive(c, 0.0, 2.0)
    assert [e for _, e in ends] == [GoalEnd("g", "succeeded", SUCCESSFUL, REACHED)]
    assert 1.0 <= ends[0][0] <= 1.02
    assert not c.following and c.goal_id is None
    assert drive(c, 2.0, 2.5, frozen(target + 0.1)) == []
    np.testing.assert_array_equal(c.ref[0], target)
    assert np.all(c.ref[1:] == 0.0)


def test_early_arrival_does_not_succeed_before_the_nominal_end():
    """§5.1: goal tolerances apply only from the last point's time on; a robot already at the
    goal succeeds exactly at t = 1.0 s, not before."""
    target = [0.5, 0.0, 0.0]
    c = make_jtc(goal=[0.01, 0.01, 0.01])
    send(c, msg([pt(1.0, target)]), 0.0, "g")
    ends = drive(c, 0.0, 1.5, frozen(target))
    assert len(ends) == 1 and ends[0][1].status == "succeeded"
    assert ends[0][0] == pytest.approx(1.0)


def test_default_tolerances_succeed_at_the_end_wherever_the_robot_is():
    """§5.2: with the default tolerances (goal 0 = off) a goal succeeds on the first cycle at
    its end wherever the (stopped) robot is."""
    c = make_jtc()
    send(c, msg([pt(1.0, [0.9, 0.0, 0.0])]), 0.0, "g")
    ends = drive(c, 0.0, 1.5, frozen(Q0))
    assert [e.status for _, e in ends] == ["succeeded"] and ends[0][0] == pytest.approx(1.0)


def test_stopped_velocity_tolerance_delays_success_until_the_robot_stops():
    """§5.3 + deviation (velocity tolerances enforced): success needs |measured velocity| <=
    stopped_velocity_tolerance (0.01 rad/s); a robot still moving at 0.02 rad/s waits."""
    c = make_jtc()
    send(c, msg([pt(1.0, Q0)]), 0.0, "g")
    creeping = lambda now, c: (Q0.copy(), np.array([0.0, 0.02 if now < 1.3 else 0.0, 0.0]))  # noqa: E731
    ends = drive(c, 0.0, 2.0, creeping)
    assert ends[0][0] == pytest.approx(1.3)


def test_success_holds_the_last_point_at_rest():
    """§6.1 with our deviation: upstream keeps commanding a nonzero final velocity after
    success (a velocity interface would keep moving); our position-commanded backends hold
    the last point's position at rest (velocity 0)."""
    c = make_jtc(allow_nonzero_velocity_at_trajectory_end=True)
    send(c, msg([pt(1.0, [0.5, 0.0, 0.0], [0.2, 0.0, 0.0])]), 0.0, "g")
    ends = drive(c, 0.0, 1.5, offset(ZERO))
    assert [e.status for _, e in ends] == ["succeeded"]
    np.testing.assert_allclose(c.ref[0], [0.5, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(c.ref[1], [0.0, 0.0, 0.0])


# === 5. path tolerance, goal_time (§5.1-5.3) =================================================
def test_path_tolerance_violation_aborts_naming_the_joint_and_holds_measured():
    """§5.2: |reference - measured| > path tolerance (0.05) before the end aborts with
    PATH_TOLERANCE_VIOLATED (-4), "Aborted due to path tolerance violation…" naming the joint;
    the reference holds the measured position."""
    c = make_jtc(trajectory=[0.05, 0.05, 0.05])
    send(c, msg([pt(1.0, [0.1, 0.3, 0.3])]), 0.0, "g")  # b at 0.5 rad/s
    stuck = Q0 + np.array([0.0, 0.0, 0.01])
    ends = drive(c, 0.0, 2.0, frozen(stuck))
    assert len(ends) == 1
    now, end = ends[0]
    assert (end.goal_id, end.status, end.error_code) == ("g", "aborted", PATH_TOLERANCE_VIOLATED)
    assert end.error_string.startswith(PATH_ABORT + ": b is ")
    assert 0.1 <= now <= 0.12
    assert not c.following
    np.testing.assert_array_equal(c.ref[0], stuck)


def test_single_point_at_time_zero_is_path_checked_on_its_first_sample():
    """§5.1: the path tolerance is checked on the first sample of every trajectory, so a single
    point at t = 0 that the robot is 0.03 from (path tolerance 0.01, within start_tolerance)
    aborts with PATH_TOLERANCE_VIOLATED."""
    c = make_jtc(trajectory=[0.01, 0.01, 0.01])
    send(c, msg([pt(0.0, Q0 + np.array([0.03, 0.0, 0.0]))]), 0.0, "g")
    ends = drive(c, 0.0, 0.5, frozen(Q0))
    assert [e.error_code for _, e in ends] == [PATH_TOLERANCE_VIOLATED]


def test_path_tolerance_is_not_tripped_at_the_tolerance():
    """§5.1: a violation is |error| > tolerance, strict: tracking 0.04 off with 0.05 runs to
    success."""
    c = make_jtc(trajectory=[0.05, 0.05, 0.05])
    send(c, msg([pt(1.0, [0.1, 0.3, 0.3])]), 0.0, "g")
    ends = drive(c, 0.0, 2.0, offset([0.04, -0.04, 0.04]))
    assert [e.status for _, e in ends] == ["succeeded"]


def test_goal_path_velocity_tolerance_is_enforced():
    """§5.3 + deviation: a goal's path_tolerance velocity (0.1 rad/s on c) is checked against
    the measured velocity: a robot reporting 0 rad/s while c's reference moves at 0.5 rad/s
    aborts (-4) naming c's velocity; without it the same run succeeds."""
    run = []
    for tolerances in (GoalTolerances(path=[JointTolerance("c", 0.0, 0.1)]), GoalTolerances()):
        c = make_jtc()
        send(c, msg([pt(1.0, [0.1, -0.2, 0.8])]), 0.0, "g", tolerances)
        run.append(drive(c, 0.0, 2.0, lambda now, c: (c.ref[0].copy(), ZERO.copy())))
    ((now, end),) = run[0]
    assert end.error_code == PATH_TOLERANCE_VIOLATED
    assert end.error_string.startswith(PATH_ABORT + ": c velocity")
    assert now == pytest.approx(0.01)
    assert [e.status for _, e in run[1]] == ["succeeded"]


def test_goal_time_exceeded_aborts_with_the_lateness():
    """§5.2: outside goal tolerance more than goal_time (0.5 s) after the end aborts with
    GOAL_TOLERANCE_VIOLATED (-5), "Aborted due to goal_time_tolerance exceeding by <time since
    the end, %f> seconds"; the reference holds the measured position."""
    c = make_jtc(goal=[0.01, 0.01, 0.01], goal_time=0.5)
    send(c, msg([pt(1.0, [0.5, 0.0, 0.0])]), 0.0, "g")
    ends = drive(c, 0.0, 3.0, frozen(Q0))
    assert len(ends) == 1
    now, end = ends[0]
    assert (end.status, end.error_code) == ("aborted", GOAL_TOLERANCE_VIOLATED)
    assert now == pytest.approx(1.51)
    assert end.error_string.startswith(f"{GOAL_TIME_ABORT} 0.510000 seconds")
    np.testing.assert_array_equal(c.ref[0], Q0)


def test_goal_goal_time_overrides_the_default():
    """§5.3: a goal's goal_time_tolerance (0.2 s) replaces the default (0 = for ever)."""
    c = make_jtc(goal=[0.01, 0.01, 0.01])
    send(c, msg([pt(1.0, [0.5, 0.0, 0.0])]), 0.0, "g", GoalTolerances(goal_time=0.2))
    ends = drive(c, 0.0, 3.0, frozen(Q0))
    assert [e.error_code for _, e in ends] == [GOAL_TOLERANCE_VIOLATED]
    assert ends[0][0] == pytest.approx(1.21)


@pytest.mark.parametrize(
    ("config", "goal_time"),
    [({"goal_time": 0.0, "goal": 0.01}, 0.0), ({"goal_time": 0.5, "goal": 0.01}, -1.0)],
    ids=["constraint-0", "goal-minus-1"],
)
def test_goal_time_zero_waits_for_ever(config, goal_time):
    """§5.2/§8: constraints.goal_time = 0 (or a goal's -1, which erases it) waits for ever: an
    unreachable goal is not aborted after 100 s and the last point stays commanded."""
    p = JtcParams.from_config({"constraints": config}, NAMES, LOWER, UPPER)
    c = JointTrajectoryController(p)
    c.activate(0.0, Q0, ZERO)
    target = [0.5, 0.0, 0.0]
    send(c, msg([pt(1.0, target)]), 0.0, "g", GoalTolerances(goal_time=goal_time))
    assert drive(c, 0.0, 100.0, frozen(Q0), step=0.05) == []
    assert c.goal_id == "g" and c.following
    np.testing.assert_allclose(c.ref[0], target)


def test_from_config_reads_global_and_per_joint_constraints():
    """§8: constraints.<joint>.{trajectory,goal} per joint, stopped_velocity_tolerance and
    goal_time, with upstream's defaults (0, 0, 0.01, 0)."""
    cfg = {
        "allow_partial_joints_goal": True,
        "cmd_timeout": 2.0,
        "constraints": {"goal_time": 0.3, "trajectory": 0.1, "b": {"goal": 0.02}},
    }
    p = JtcParams.from_config(cfg, NAMES, LOWER, UPPER)
    np.testing.assert_array_equal(p.trajectory, [0.1, 0.1, 0.1])
    np.testing.assert_array_equal(p.goal, [0.0, 0.02, 0.0])
    assert (p.goal_time, p.cmd_timeout, p.allow_partial_joints_goal) == (0.3, 2.0, True)
    d = JtcParams.from_config({}, NAMES, LOWER, UPPER)
    assert (d.stopped_velocity_tolerance, d.goal_time, d.cmd_timeout) == (0.01, 0.0, 0.0)
    assert not d.allow_partial_joints_goal and not d.allow_nonzero_velocity_at_trajectory_end


# === 6. merge_tolerances (§5.3) ===============================================================
RANGES = JointRanges(NAMES, LOWER, UPPER)
DEFAULTS = make_params(trajectory=[0.1, 0.2, 0.3], goal=[0.01, 0.02, 0.03], goal_time=2.0)


def test_merge_sets_keeps_and_erases_per_field():
    """§5.3 resolve_tolerance_source: > 0 sets, 0 keeps the default, -1 erases (not checked =
    inf), per position/velocity field; goal_time likewise; unlisted joints keep defaults."""
    path = [JointTolerance("c", -1.0, 0.4), JointTolerance("a", 0.5, 0.0)]
    goal = [JointTolerance("b", 0.0, -1.0), JointTolerance("c", 0.07, 0.3, -1.0)]
    merged, warning = merge_tolerances(DEFAULTS.default_tolerances(), RANGES, path, goal, 0.0)
    assert warning == ""
    np.testing.assert_array_equal(merged.path_position, [0.5, 0.2, np.inf])
    np.testing.assert_array_equal(merged.path_velocity, [np.inf, np.inf, 0.4])
    np.testing.assert_array_equal(merged.goal_position, [0.01, 0.02, 0.07])
    np.testing.assert_array_equal(merged.goal_velocity, [0.01, np.inf, 0.3])
    assert merged.goal_time == 2.0
    for goal_time, expected in ((-1.0, np.inf), (3.0, 3.0)):
        merged, _ = merge_tolerances(DEFAULTS.default_tolerances(), RANGES, [], [], goal_time)
        assert merged.goal_time == expected


@pytest.mark.parametrize(
    ("path", "goal", "goal_time", "says"),
    [
        ([JointTolerance("a", -0.5, 0.0)], [], 0.0, "goal.path_tolerance has a invalid position"),
        ([], [JointTolerance("b", 0.0, -2.0)], 0.0, "goal.goal_tolerance has a invalid velocity"),
        ([JointTolerance("c", 0.1, 0.1, -0.3)], [], 0.0, "invalid acceleration"),
        ([], [], -0.5, "Specified illegal goal_time_tolerance: -0.500000"),
        ([JointTolerance("x", 0.1, 0.0)], [], 0.0, "joint 'x' specified in goal.path_tolerance"),
        ([], [JointTolerance("x", 0.1, 0.0)], 0.0, "does not exist"),
    ],
)
def test_any_illegal_tolerance_or_unknown_joint_falls_back_to_all_defaults(
    path, goal, goal_time, says
):
    """§5.3: any negative value other than -1, or an unknown joint, drops *every* override
    (valid ones and goal_time included) for the defaults, with an error saying why."""
    valid = [JointTolerance("b", 0.9, 0.9)]
    defaults = DEFAULTS.default_tolerances()
    merged, warning = merge_tolerances(defaults, RANGES, valid + path, valid + goal, goal_time)
    assert says in warning and "default tolerances" in warning.lower()
    for field in ("path_position", "path_velocity", "goal_position", "goal_velocity"):
        np.testing.assert_array_equal(getattr(merged, field), getattr(defaults, field))
    assert merged.goal_time == defaults.goal_time


def test_a_goal_with_illegal_tolerances_is_still_accepted_with_the_defaults():
    """§5.3: invalid tolerances are no rejection: the goal runs with the default tolerances and
    the fall-back is logged; the next goal with valid tolerances uses them."""
    c = make_jtc(trajectory=[0.1, 0.1, 0.1])
    bad = GoalTolerances(path=[JointTolerance("a", 0.5, 0.0), JointTolerance("b", -3.0, 0.0)])
    assert send(c, msg([pt(1.0, Q0)]), 0.0, "g", bad) == []
    assert c.goal_id == "g" and len(c.warnings) == 1
    np.testing.assert_array_equal(c.tolerances.path_position, [0.1, 0.1, 0.1])
    send(c, msg([pt(1.0, Q0)]), 0.0, "g2", GoalTolerances(path=[JointTolerance("a", 0.5, 0.0)]))
    np.testing.assert_array_equal(c.tolerances.path_position, [0.5, 0.1, 0.1])


# === 7. stamps (§4.2, §4.3) ===================================================================
def test_future_stamp_moves_now_and_reaches_the_first_point_at_stamp_plus_time():
    """§4.2/§4.3: a future stamp does not wait: the reference interpolates from the current
    state from now on and reaches points[0] at stamp + its time (1.5 + 0.5 = 2.0 s)."""
    c = make_jtc(now=1.0)
    target = np.array([0.5, 0.2, -0.1])
    send(c, msg([pt(0.5, target), pt(1.0, target)], stamp=1.5), 1.0, "g")
    drive(c, 1.0, 1.01)
    assert np.abs(c.ref[0] - Q0).max() > 0.0
    drive(c, 1.01, 1.5)
    np.testing.assert_allclose(c.ref[0], (Q0 + target) / 2, atol=1e-12)
    drive(c, 1.5, 2.0)
    np.testing.assert_allclose(c.ref[0], target, atol=1e-12)


def test_past_stamp_starts_now_from_the_current_state_and_ends_late():
    """Deviation (§4.3 says upstream samples the spline mid-way: a jump): a goal stamped
    1.5 s in the past starts now from the current state, its points keeping their times --
    the reference reaches the first point 1 s after now, the last 2 s after; a warning says
    how late it was."""
    c = make_jtc(q=[0.29, 0.0, 0.0], now=3.0)
    points = [pt(1.0, [0.2, 0.0, 0.0]), pt(2.0, [0.4, 0.0, 0.0])]
    send(c, msg(points, stamp=1.5), 3.0, "g")
    assert "1.500 s late" in c.warnings[-1]
    c.update(3.0, np.array([0.29, 0.0, 0.0]), ZERO)
    np.testing.assert_allclose(c.ref[0], [0.29, 0.0, 0.0], atol=1e-12)  # no jump
    drive(c, 3.0, 4.0)
    np.testing.assert_allclose(c.ref[0], [0.2, 0.0, 0.0], atol=1e-12)
    ends = drive(c, 4.0, 5.5)
    assert [e.status for _, e in ends] == ["succeeded"]
    assert 5.0 <= ends[0][0] <= 5.02


# === 8. partial goals (§2.2) ==================================================================
def test_partial_goal_keeps_the_commanded_position_of_missing_joints():
    """§2.2 fill_partial_goal: with allow_partial_joints_goal a goal may name a subset (any
    order); a missing joint's points get its *commanded* position (0.4, not the measured 0.43)
    and velocity 0 when the points carry velocities; the trajectory starts from the measured
    state as any other (§4.1)."""
    c = make_jtc(allow_partial_joints_goal=True)
    first = np.array([0.5, 0.4, -0.3])
    send(c, msg([pt(1.0, first)]), 0.0, "g1")
    drive(c, 0.0, 1.0)
    lagging_b = offset([0.0, 0.03, 0.0])
    drive(c, 1.0, 1.5, lagging_b)  # succeeded; holds 0.4 while b measures 0.43
    assert c.goal_id is None and c.q[1] == pytest.approx(0.43)
    message = msg([pt(0.5, [0.0, -0.4], [0.2, -0.4]), pt(1.0, [0.7, -0.8], [0.0, 0.0])], ("c", "a"))
    traj, start = c.prepare(message, 1.5)
    np.testing.assert_allclose(traj(np.array([0.5, 1.0]), 0)[:, 1], [0.4, 0.4], atol=1e-12)
    np.testing.assert_allclose(traj(np.array([0.5]), 1)[0], [-0.4, 0.0, 0.2], atol=1e-12)
    c.accept("g2", (traj, start), GoalTolerances())
    ends = drive(c, 1.5, 3.0, lagging_b)
    assert [e.status for _, e in ends] == ["succeeded"]
    np.testing.assert_allclose(c.ref[0], [-0.8, 0.4, 0.7], atol=1e-12)


def test_partial_goal_is_rejected_when_not_allowed():
    """§2.2 rule 1: without allow_partial_joints_goal a subset of the joints is rejected."""
    text = rejection(make_jtc(), msg([pt(1.0, [0.1, 0.2])], names=("a", "b")), 0.0)
    assert text == "Joints on incoming trajectory don't match the controller joints."


# === 9. blocked joints (blocked_*, our extension) ============================================
BLOCKED = {"blocked_error": 0.05, "blocked_speed": 0.05, "blocked_time": 0.1}


def test_a_stopped_joint_aborts_within_blocked_time():
    """blocked_*: a joint frozen while its reference moves (b at 2 rad/s) aborts with -4 naming
    it, blocked_time (0.1 s) after its error first exceeds blocked_error (0.05 at 0.025 s);
    the reference holds the measured position."""
    c = make_jtc(**BLOCKED)
    send(c, msg([pt(0.5, [0.1, 0.8, 0.3])]), 0.0, "g")
    ends = drive(c, 0.0, 1.0, frozen(Q0))
    assert len(ends) == 1
    now, end = ends[0]
    assert end.error_code == PATH_TOLERANCE_VIOLATED
    assert end.error_string.startswith(PATH_ABORT + ": b is blocked")
    assert 0.025 + 0.1 - DT <= now <= 0.03 + 0.1 + 2 * DT
    np.testing.assert_array_equal(c.ref[0], Q0)


def test_a_lagging_but_moving_joint_is_not_blocked():
    """blocked_*: a servo that follows its reference with a lag (first order, 15 % of the
    error per 10 ms: 0.11 rad behind at 2 rad/s, twice blocked_error) keeps moving and the goal
    succeeds; with blocked_error 0 a frozen joint is not judged at all."""
    c = make_jtc(**BLOCKED)
    send(c, msg([pt(0.5, [0.1, 0.8, 0.3])]), 0.0, "g")
    state = {"q": Q0.copy()}
    lags = []

    def servo(now, c):
        previous = state["q"]
        state["q"] = previous + 0.15 * (c.ref[0] - previous)
        lags.append(np.abs(c.ref[0] - state["q"]).max())
        return state["q"].copy(), (state["q"] - previous) / DT

    ends = drive(c, 0.0, 2.0, servo)
    assert max(lags) > 0.1
    assert [e.status for _, e in ends] == ["succeeded"]
    off = make_jtc()
    send(off, msg([pt(0.5, [0.1, 0.8, 0.3])]), 0.0, "g")
    assert [e.status for _, e in drive(off, 0.0, 1.0, frozen(Q0))] == ["succeeded"]


def test_a_joint_rattling_in_place_is_blocked():
    """blocked_*: progress counts towards the reference only: a joint rattling 0.02 rad back
    and forth at 5 Hz against an obstacle while its reference runs away (2 rad/s) gets no
    closer and aborts (-4, naming it) within a few blocked_time."""
    c = make_jtc(**BLOCKED)
    send(c, msg([pt(0.5, [0.1, 0.8, 0.3])]), 0.0, "g")

    def rattle(now, c):
        q = Q0 + np.array([0.0, 0.02 * abs(np.sin(2 * np.pi * 5 * now)), 0.0])
        return q, np.zeros(3)

    ends = drive(c, 0.0, 1.0, rattle)
    assert len(ends) == 1
    now, end = ends[0]
    assert end.error_string.startswith(PATH_ABORT + ": b is blocked") and now < 0.3


# === 10. cmd_timeout (§5.4 + deviation) =====================================================
def test_cmd_timeout_aborts_the_goal():
    """Deviation (§5.4 upstream reports success): past the end by more than cmd_timeout (0.3 s)
    and not within goal tolerance, the goal aborts with -5 "Aborted due to command timeout";
    the reference holds the measured position."""
    c = make_jtc(goal=[0.01, 0.01, 0.01], cmd_timeout=0.3)
    send(c, msg([pt(1.0, [0.5, 0.0, 0.0])]), 0.0, "g")
    ends = drive(c, 0.0, 3.0, frozen(Q0))
    assert len(ends) == 1
    now, end = ends[0]
    assert (end.status, end.error_code) == ("aborted", GOAL_TOLERANCE_VIOLATED)
    assert end.error_string.startswith(TIMEOUT_ABORT)
    assert 1.3 <= now <= 1.32
    np.testing.assert_array_equal(c.ref[0], Q0)
    assert not c.following


def test_cmd_timeout_on_a_topic_trajectory_holds_measured_with_a_warning():
    """§5.4: a topic trajectory past cmd_timeout holds the measured position (logged)."""
    c = make_jtc(goal=[0.01, 0.01, 0.01], cmd_timeout=0.3)
    c.follow(c.prepare(msg([pt(1.0, [0.5, 0.0, 0.0])]), 0.0))
    assert drive(c, 0.0, 3.0, frozen(Q0)) == []
    assert TIMEOUT_ABORT in c.warnings and not c.following
    np.testing.assert_array_equal(c.ref[0], Q0)


def test_cmd_timeout_not_above_goal_time_is_disabled():
    """§5.4: cmd_timeout is enabled only if it is > goal_time; cmd_timeout 0.5 with goal_time
    1.0 is off, so the goal ends by goal_time (-5, "goal_time_tolerance") at 2.0 s."""
    c = make_jtc(goal=[0.01, 0.01, 0.01], goal_time=1.0, cmd_timeout=0.5)
    send(c, msg([pt(1.0, [0.5, 0.0, 0.0])]), 0.0, "g")
    ((now, end),) = drive(c, 0.0, 3.0, frozen(Q0))
    assert end.error_string.startswith(GOAL_TIME_ABORT)
    assert now == pytest.approx(2.01)


# === 11. activate, deactivate, stop (§6.4) ==================================================
def test_deactivate_aborts_the_goal_and_rejects_later_goals_with_the_reason():
    """§6.4: deactivation aborts the running goal (-1, "Current goal cancelled during
    deactivate transition.", our reason appended), drops the trajectory without moving the
    position reference; later goals are rejected "…not running." (with the reason)."""
    c = make_jtc()
    send(c, msg([pt(1.0, [0.5, 0.0, 0.0])]), 0.0, "g")
    drive(c, 0.0, 0.4)
    ref = c.ref[0].copy()
    assert c.deactivate() == [GoalEnd("g", "aborted", INVALID_GOAL, DEACTIVATED)]
    assert not c.following and rejection(c, msg(FULL), 0.4) == NOT_RUNNING
    assert drive(c, 0.4, 1.0, frozen(ZERO)) == []
    np.testing.assert_array_equal(c.ref[0], ref)

    c = make_jtc()
    send(c, msg([pt(1.0, [0.5, 0.0, 0.0])]), 0.0, "g")
    ends = c.deactivate("servo b overload")
    assert ends == [GoalEnd("g", "aborted", INVALID_GOAL, DEACTIVATED + " servo b overload")]
    assert rejection(c, msg(FULL), 0.0) == NOT_RUNNING + " (servo b overload)"
    assert c.deactivate() == []


def test_stop_aborts_with_the_reason_and_holds_measured():
    """Deviation: stop(reason) aborts the goal (-1, the reason as the string) and holds the
    measured position; the controller stays active and takes the next goal."""
    c = make_jtc()
    send(c, msg([pt(1.0, [0.5, 0.0, 0.0])]), 0.0, "g")
    drive(c, 0.0, 0.3, offset([0.02, 0.0, 0.0]))
    measured = c.q.copy()
    assert c.stop("stop requested") == [GoalEnd("g", "aborted", INVALID_GOAL, "stop requested")]
    np.testing.assert_array_equal(c.ref[0], measured)
    assert not c.following and c.active
    assert send(c, msg(FULL), 0.3, "g2") == []


def test_activate_holds_the_measured_position_or_the_given_hold():
    """§6.4: activation holds the measured position (at rest, no trajectory); with ``hold``
    it holds that (the hardware's own goal) instead; re-activation after deactivation accepts
    goals again."""
    c = JointTrajectoryController(make_params())
    c.activate(0.0, Q0, np.array([0.1, 0.2, 0.3]))
    np.testing.assert_array_equal(c.ref[0], Q0)
    assert np.all(c.ref[1:] == 0.0) and not c.following and c.active
    hold = np.array([0.12, -0.18, 0.31])
    c.deactivate("fault")
    c.activate(1.0, Q0, ZERO, hold=hold)
    np.testing.assert_array_equal(c.ref[0], hold)
    assert drive(c, 1.0, 1.5, frozen(Q0)) == []
    np.testing.assert_array_equal(c.ref[0], hold)
    assert send(c, msg(FULL), 1.5) == []


# === 12. gripper (§10, Appendix A) ===========================================================
def make_gripper(**overrides) -> GripperActionController:
    kw = {
        "joint": "jaw",
        "lower": 0.0,
        "upper": 1.0,
        "goal_tolerance": 0.125,
        "stall_velocity_threshold": 0.001,
        "stall_timeout": 1.0,
        "max_effort": 2.0,
    }
    kw.update(overrides)
    g = GripperActionController(GacParams(**kw))
    g.activate(0.0, 0.25)
    return g


def test_gripper_succeeds_strictly_inside_goal_tolerance():
    """§10.4: |setpoint - position| < goal_tolerance (strict: 0.125 off is not reached)
    succeeds with reached_goal, stalled False, the measured position and the goal effort."""
    g = make_gripper()
    assert g.accept("g", 0.5, 5.0, 0.0) == []
    assert (g.setpoint, g.effort) == (0.5, 5.0)
    assert g.update(0.1, 0.625, 0.1) == []
    (end,) = g.update(0.2, 0.62, 0.1)
    assert (end.goal_id, end.status, end.reached_goal, end.stalled) == (
        "g",
        "succeeded",
        True,
        False,
    )
    assert (end.position, end.effort) == (0.62, 5.0)


@pytest.mark.parametrize(("allow", "status"), [(False, "aborted"), (True, "succeeded")])
def test_gripper_stall_ends_by_allow_stalling(allow, status):
    """§10.4: a jaw slower than stall_velocity_threshold (|v| <= 0.001) for more than
    stall_timeout (1 s) since it last moved has stalled: aborted, or succeeded with
    allow_stalling; stalled True, reached_goal False."""
    g = make_gripper(allow_stalling=allow)
    g.accept("g", 0.9, 0.0, 0.0)
    for k in range(1, 51):  # moving until 0.5 s
        assert g.update(k * DT, 0.25 + 0.005 * k, 0.5) == []
    for k in range(51, 151):  # stopped on an object at 0.5: not before 1.5 s
        assert g.update(k * DT, 0.5, 0.001) == []
    (end,) = g.update(1.51, 0.5, 0.0)
    assert (end.status, end.stalled, end.reached_goal, end.position) == (status, True, False, 0.5)


def test_gripper_that_never_moves_stalls_after_stall_timeout():
    """§10.4: the stall clock starts at acceptance, so a jaw that never moves stalls
    stall_timeout after the goal came."""
    g = make_gripper()
    g.accept("g", 0.9, 0.0, 10.0)
    assert g.update(11.0, 0.25, 0.0) == []
    (end,) = g.update(11.01, 0.25, 0.0)
    assert end.stalled and end.status == "aborted"


def test_gripper_keeps_the_goal_setpoint_and_effort_after_success():
    """§10.4: after the goal ends the setpoint stays at the goal with the goal's effort (a grasp
    keeps squeezing), whatever the jaw does next."""
    g = make_gripper()
    g.accept("g", 0.5, 3.0, 0.0)
    assert g.update(0.1, 0.45, 0.0)[0].status == "succeeded"
    for k in range(2, 20):
        assert g.update(k * 0.1, 0.3, 0.0) == []
    assert (g.setpoint, g.effort) == (0.5, 3.0)


def test_gripper_zero_effort_means_the_default():
    """Appendix A / gac_params: a goal max_effort of 0 commands the configured max_effort."""
    g = make_gripper()
    g.accept("g", 0.5, 0.0, 0.0)
    assert g.effort == 2.0


def test_gripper_new_goal_cancels_the_running_one():
    """§10.5: a new goal ends the running one CANCELED and applies at once."""
    g = make_gripper()
    g.accept("g1", 0.9, 3.0, 0.0)
    (end,) = g.accept("g2", 0.1, 0.0, 0.2)
    assert (end.goal_id, end.status, end.reached_goal) == ("g1", "canceled", False)
    assert (g.goal_id, g.setpoint, g.effort) == ("g2", 0.1, 2.0)


def test_gripper_cancel_holds_measured_with_default_effort():
    """§10.5: cancelling the running goal ends it CANCELED; the setpoint becomes the measured
    position and the effort max_effort; a cancel of another goal does nothing."""
    g = make_gripper()
    g.accept("g", 0.9, 5.0, 0.0)
    g.update(0.1, 0.4, 0.3)
    assert g.cancel("other") == [] and g.goal_id == "g"
    (end,) = g.cancel("g")
    assert (end.status, end.stalled, end.reached_goal) == ("canceled", False, False)
    assert (g.setpoint, g.effort, g.goal_id) == (0.4, 2.0, None)
    assert g.update(0.2, 0.4, 0.0) == []


@pytest.mark.parametrize(
    ("position", "effort", "says"),
    [
        (float("nan"), 1.0, "outside the jaw range"),
        (1.5, 1.0, "outside the jaw range"),
        (-0.01, 1.0, "outside the jaw range"),
        (0.5, -1.0, "must be finite and >= 0"),
        (0.5, float("nan"), "must be finite and >= 0"),
        (0.5, float("inf"), "must be finite and >= 0"),
    ],
)
def test_gripper_rejects_non_finite_out_of_range_and_negative(position, effort, says):
    """Deviation: NaN or out-of-range positions and negative or non-finite efforts are
    rejected (the bounds themselves are accepted)."""
    g = make_gripper()
    with pytest.raises(Rejected) as info:
        g.check(position, effort)
    assert says in str(info.value)
    g.check(0.0, 0.0)
    g.check(1.0, 10.0)


def test_gripper_inactive_rejects_and_deactivate_aborts_with_the_reason():
    """§2.1 text for the gripper; deactivation (like stop) aborts the running goal with the
    reason and refuses goals until re-activation, naming the reason."""
    g = GripperActionController(GacParams("jaw", 0.0, 1.0))
    with pytest.raises(Rejected, match=r"^Can't accept new action goals\. Controller is not"):
        g.check(0.5, 1.0)
    g = make_gripper()
    g.accept("g", 0.9, 0.0, 0.0)
    (end,) = g.deactivate("bus error")
    assert (end.status, end.message) == ("aborted", "bus error")
    with pytest.raises(Rejected) as info:
        g.check(0.5, 1.0)
    assert str(info.value) == NOT_RUNNING + " (bus error)"
    g.activate(1.0, 0.3, hold=0.35)
    assert g.setpoint == 0.35 and g.effort == 2.0
    g.check(0.5, 1.0)
    g.accept("g2", 0.9, 0.0, 1.0)
    g.update(1.1, 0.4, 0.2)
    (end,) = g.stop("fault")
    assert (end.status, g.setpoint) == ("aborted", 0.4)


def test_gripper_max_speed_moves_the_setpoint_at_that_speed_to_the_goal():
    """Addition (the Franka Hand's move/grasp speed): with max_speed the setpoint starts at the
    measured position and travels at that speed; the goal is judged against its target, so a
    jaw that follows the moving setpoint has not reached it; without max_speed it jumps."""
    g = make_gripper(goal_tolerance=0.01)
    g.accept("g", 0.75, 0.0, 0.0, max_speed=0.5)
    assert g.setpoint == 0.25 and g.target == 0.75 and g.travelling
    for k in range(1, 200):  # the jaw follows 0.05 behind the setpoint: not at the goal
        t = k * DT
        assert g.update(t, g.setpoint - 0.05, 0.5) == []
        assert g.setpoint == pytest.approx(min(0.25 + 0.5 * t, 0.75))
        if g.setpoint == 0.75:
            break
    assert g.setpoint == 0.75 and not g.travelling and t == pytest.approx(1.0)
    (end,) = g.update(t + DT, 0.745, 0.0)
    assert end.reached_goal and end.status == "succeeded"
    g.accept("g2", 0.5, 0.0, t + DT)  # no max_speed: upstream's jump
    assert g.setpoint == 0.5 and not g.travelling
    g = make_gripper(max_speed=0.5)  # a default for goals that give none
    g.accept("g3", 0.75, 0.0, 0.0)
    assert g.setpoint == 0.25 and g.max_speed == 0.5
    g.accept("g4", 0.75, 0.0, 0.0, max_speed=math.inf)  # a goal may still ask for the jump
    assert g.setpoint == 0.75


def test_gripper_slow_goal_is_not_a_stall_and_a_blocked_one_keeps_closing():
    """Addition: a jaw moving at half max_speed or more is moving even below
    stall_velocity_threshold; one blocked by an object stalls after stall_timeout, and its
    setpoint keeps travelling to the target after the end (a grasp squeezes on)."""
    g = make_gripper(stall_velocity_threshold=0.05, allow_stalling=True)
    g.accept("g", 0.0, 0.0, 0.0, max_speed=0.02)  # closing at 0.02 < the 0.05 threshold
    for k in range(1, 201):  # two seconds closing at 0.02: not a stall
        assert g.update(k * DT, g.setpoint, -0.02) == [], k
    blocked, t = g.position, 2.0
    ends = []
    while not ends:
        t += DT
        ends = g.update(t, blocked, 0.0)
    (end,) = ends
    assert end.stalled and end.position == blocked and t == pytest.approx(3.01)
    before = g.setpoint
    g.update(t + 1.0, blocked, 0.0)
    assert g.setpoint == pytest.approx(before - 0.02)


def test_gripper_cancel_and_stop_end_the_travel():
    g = make_gripper()
    g.accept("g", 0.9, 0.0, 0.0, max_speed=0.1)
    g.update(0.5, 0.3, 0.1)
    g.cancel("g")
    assert g.setpoint == g.target == 0.3 and not g.travelling
    g.accept("g2", 0.9, 0.0, 1.0, max_speed=0.1)
    g.update(1.5, 0.35, 0.1)
    g.stop("fault")
    assert g.setpoint == g.target == 0.35 and not g.travelling
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(Rejected, match="max_speed"):
            g.check(0.5, 1.0, bad)


def test_gac_params_defaults_and_hardware_effort():
    """Appendix A: defaults goal_tolerance 0.01, stall threshold 0.001, timeout 1 s, no
    stalling; max_effort 0 or absent means the hardware's effort."""
    p = gac_params({}, "jaw", 0.0, 1.0, 2.94)
    assert (p.goal_tolerance, p.stall_velocity_threshold, p.stall_timeout) == (0.01, 0.001, 1.0)
    assert not p.allow_stalling and p.max_effort == 2.94
    assert gac_params({"max_effort": 1.5}, "jaw", 0.0, 1.0, 2.94).max_effort == 1.5
    with pytest.raises(InvalidInput):
        gac_params({"stall_timeout": -1.0}, "jaw", 0.0, 1.0, 2.94)


# === helpers of joint_trajectory.py the controller relies on =================================
def _plan(points):
    start = StartState(Q0.copy(), np.array([0.2, 0.0, -0.1]), ZERO.copy())
    return plan_trajectory(RANGES, NAMES, points, start, 0.05)


@pytest.mark.parametrize(
    "points",
    [
        [pt(0.5, [0.3, 0.0, 0.0]), pt(1.2, [0.0, 0.5, 0.5])],
        [pt(0.5, [0.3, 0.0, 0.0], [0.1, 0.2, 0.0]), pt(1.2, [0.0, 0.5, 0.5], ZERO)],
        [
            pt(0.5, [0.3, 0.0, 0.0], [0.1, 0.2, 0.0], [1.0, 0, 0]),
            pt(1.2, [0, 0.5, 0.5], ZERO, ZERO),
        ],
    ],
    ids=["linear", "cubic", "quintic"],
)
def test_timed_trajectory_call_matches_sample(points):
    """TimedTrajectory.__call__ (what the limit check samples) equals ``sample`` (what the
    controller emits) inside, holds the last point at rest after the end, continues the start
    state's velocity before 0 (a linear one starts at rest), and order 1 is d/dt of order 0."""
    traj = _plan(points)
    t = np.linspace(0.0, 1.19, 120)
    out = np.zeros((3, 3))
    for order in range(3):
        values = traj(t, order)
        for i, ti in enumerate(t):
            traj.sample(float(ti), out)
            np.testing.assert_allclose(values[i], out[order], atol=1e-12)
    after = np.array([1.2, 5.0])
    np.testing.assert_array_equal(traj(after, 0), [traj.positions_end] * 2)
    assert np.all(traj(after, 1) == 0.0) and np.all(traj(after, 2) == 0.0)
    v0 = np.zeros(3) if traj.degree == 1 else np.array([0.2, 0.0, -0.1])
    np.testing.assert_allclose(traj(np.array([-0.1]), 0)[0], Q0 - 0.1 * v0, atol=1e-12)
    np.testing.assert_allclose(traj(np.array([-0.1]), 1)[0], v0, atol=1e-12)
    h, inner = 1e-6, np.array([0.2, 0.7, 1.0])
    numeric = (traj(inner + h, 0) - traj(inner - h, 0)) / (2 * h)
    np.testing.assert_allclose(traj(inner, 1), numeric, atol=1e-6)


def test_check_goal_boundaries_are_strict_and_goal_time_counts_lateness():
    """§5.1/§5.2: path violation is error > tolerance (equal passes); before the end only path
    tolerances apply; after it, success needs goal position and velocity within tolerance,
    and failing ones are a violation only once late > goal_time (0.25 s)."""
    traj = plan_trajectory(
        RANGES, NAMES, [pt(1.0, [0.5, 0.5, 0.5])], StartState(ZERO, ZERO, ZERO), 0.05
    )
    tol = Tolerances(
        path_position=np.full(3, 0.25),
        goal_position=np.full(3, 0.125),
        goal_velocity=np.full(3, 0.5),
        goal_time=0.25,
    )
    desired = np.array([0.5, 0.5, 0.5])
    at = lambda t, q, v=ZERO: check_goal(t, traj, desired, np.asarray(q), v, tol).outcome  # noqa: E731
    assert at(0.5, [0.25, 0.5, 0.5]) == "running"
    assert at(0.5, [0.5, 0.75, 0.5]) == "running"
    assert at(0.5, [0.5, 0.5, 0.8]) == "path_tolerance_violated"
    assert at(0.99, desired) == "running"  # arrived early: not yet
    assert at(1.0, [0.375, 0.5, 0.5]) == "succeeded"
    assert at(1.0, [0.37, 0.5, 0.5]) == "running"
    assert at(1.25, [0.37, 0.5, 0.5]) == "running"
    state = check_goal(1.3, traj, desired, np.array([0.37, 0.5, 0.5]), ZERO, tol)
    assert state.outcome == "goal_tolerance_violated" and state.late == pytest.approx(0.3)
    assert at(1.0, desired, np.array([0.0, 0.6, 0.0])) == "running"
    assert at(2.0, desired, np.array([0.0, 0.6, 0.0])) == "goal_tolerance_violated"


# === 13. property: nothing accepted leaves the ranges or the limits ==========================
class Goal(NamedTuple):
    """A random goal: start position, waypoint times [s], positions, and the optional
    velocities/accelerations (``None`` = not given)."""

    q0: tuple[float, ...]
    times: tuple[float, ...]
    positions: tuple[tuple[float, ...], ...]
    velocities: tuple[tuple[float, ...], ...] | None
    accelerations: tuple[tuple[float, ...], ...] | None

    def message(self, names) -> TrajectoryMsg:
        points = []
        for i, t in enumerate(self.times):
            v = self.velocities[i] if self.velocities else ()
            a = self.accelerations[i] if self.accelerations else ()
            points.append(pt(t, self.positions[i], v, a))
        return msg(points, names=names)


@st.composite
def goals(draw, lower, upper, window: float, kinds=("positions", "velocities", "accelerations")):
    """Waypoints within the ranges (within ``window`` of a random centre, so that some are
    feasible), 1-4 points at 0.2-3 s (steps of 10 ms), of the given interpolation kinds."""
    n = len(lower)
    centre = [draw(st.floats(lo, hi)) for lo, hi in zip(lower, upper, strict=True)]
    box = [
        (max(lo, c - window), min(hi, c + window))
        for lo, hi, c in zip(lower, upper, centre, strict=True)
    ]

    def position():
        return tuple(draw(st.floats(lo, hi)) for lo, hi in box)

    ticks = [draw(st.integers(20, 100))]
    for step in draw(st.lists(st.integers(10, 100), max_size=3)):
        ticks.append(ticks[-1] + step)
    times = tuple(k / 100 for k in ticks if k <= 300)
    kind = draw(st.sampled_from(kinds))
    rates = st.floats(-2.0, 2.0)
    velocities = accelerations = None
    if kind != "positions":
        velocities = tuple(
            tuple(0.0 if i == len(times) - 1 else draw(rates) for _ in range(n))
            for i in range(len(times))
        )
    if kind == "accelerations":
        accelerations = tuple(tuple(5 * draw(rates) for _ in range(n)) for _ in range(len(times)))
    return Goal(position(), times, tuple(position() for _ in times), velocities, accelerations)


def emitted(c: JointTrajectoryController, goal: Goal, names, step: float) -> np.ndarray:
    """The reference positions the controller emits on a ``step`` grid under ideal tracking,
    from one period before the goal to a few after its end (shape (K, n))."""
    traj, _ = c.prepare(goal.message(names), 0.0)
    c.accept("g", (traj, 0.0), GoalTolerances())
    refs = [c.ref[0].copy(), c.ref[0].copy()]  # held at -step and at 0
    for k in range(1, round((traj.duration + 3 * step) / step) + 2):
        q, qd = ideal(k * step, c)
        c.update(k * step, q, qd)
        refs.append(c.ref[0].copy())
    return np.array(refs)


PROPERTY = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
)
SHORT_FAST_SEGMENT = Goal(
    (0.0,) * 5,
    (1.0, 1.2, 2.2, 3.0),
    ((0.0,) * 5, (1.2, 0, 0, 0, 0), (1.2, 0, 0, 0, 0), (1.2, 0, 0, 0, 0)),
    None,
    None,
)
TWO_POINT_FAST_SEGMENT = Goal(  # wrist_roll 0.5 rad in 0.1 s (5 rad/s), sampled every 0.15 s
    (0.0,) * 5, (0.2, 0.3), ((0.0,) * 5, (0, 0, 0, 0, 0.5)), None, None
)
CUBIC_OVERSHOOT = Goal(
    (0.0, 0.0, 0.0), (0.5, 1.0), ((0.9, 0, 0), (0.9, 0, 0)), ((3.0, 0, 0), (0, 0, 0)), None
)


def _assert_within_limits(goal: Goal) -> None:
    c = make_arm(q=goal.q0)
    try:
        c.prepare(goal.message(ARM), 0.0)
    except Rejected:
        assume(False)
    refs = emitted(make_arm(q=goal.q0), goal, ARM, DT)
    slack = 1e-9
    assert np.all(refs >= LIMITS.position_min - slack) and np.all(
        refs <= LIMITS.position_max + slack
    )
    velocity = np.abs(np.diff(refs, axis=0)) / DT
    assert np.all(velocity <= LIMITS.velocity * (1 + 1e-6)), velocity.max(axis=0)
    traj, _ = c.prepare(goal.message(ARM), 0.0)
    period = DT if traj.degree > 1 else max(DT, float(np.median(np.diff(traj.knots))))
    coarse = refs if period == DT else emitted(make_arm(q=goal.q0), goal, ARM, period)
    acceleration = np.abs(np.diff(coarse, n=2, axis=0)) / period**2
    assert np.all(acceleration <= LIMITS.acceleration * (1 + 1e-6)), acceleration.max(axis=0)


@PROPERTY
@given(goal=goals(LIMITS.position_min, LIMITS.position_max, 0.8, ("velocities", "accelerations")))
def test_property_accepted_smooth_goals_stay_within_ranges_and_limits(goal):
    """Deviation (limits), property: for every accepted goal with velocities (cubic) or
    accelerations (quintic), the reference the controller emits every 10 ms under ideal
    tracking stays within the joint ranges and its finite-difference velocity and
    acceleration within the limits."""
    _assert_within_limits(goal)


@PROPERTY
@example(goal=SHORT_FAST_SEGMENT)
@example(goal=TWO_POINT_FAST_SEGMENT)
@given(goal=goals(LIMITS.position_min, LIMITS.position_max, 0.8))
def test_property_accepted_goals_stay_within_ranges_and_limits(goal):
    """Deviation (limits), property: for every accepted goal of any kind the emitted reference
    stays within the ranges; its velocity (10 ms differences) within the velocity limit; its
    acceleration within the limit at the controller's period (limit_period, or the points'
    median spacing for a positions-only goal)."""
    _assert_within_limits(goal)


def _assert_within_ranges(goal: Goal) -> None:
    try:
        make_jtc(q=goal.q0).prepare(goal.message(NAMES), 0.0)
    except Rejected:
        assume(False)
    refs = emitted(make_jtc(q=goal.q0), goal, NAMES, DT)
    assert np.all(refs >= LOWER - 1e-9) and np.all(refs <= UPPER + 1e-9)


@PROPERTY
@given(goal=goals(LOWER, UPPER, 10.0, ("positions",)))
def test_property_positions_only_goals_stay_within_ranges(goal):
    """Deviation (ranges), property: without limits, every accepted positions-only goal keeps
    the emitted reference within the joint ranges."""
    _assert_within_ranges(goal)


@PROPERTY
@example(goal=CUBIC_OVERSHOOT)
@given(goal=goals(LOWER, UPPER, 10.0))
def test_property_accepted_goals_stay_within_ranges(goal):
    """Deviation (ranges), property: without limits, no accepted goal (any kind) makes the
    emitted reference leave the joint ranges ("goals are checked against the joint position
    ranges")."""
    _assert_within_ranges(goal)
