"""Pure unit tests of the joint trajectory controller: preemption, the topic, cancel and success.

``physai_ros.core.controllers.jtc`` against the behaviour of ros2_controllers 5.17.0 (Kilted)
joint_trajectory_controller as docs/controllers.md describes it (its sections cited as §n),
except the deviations listed there. The controller is driven like a backend does
(``support/jtc.py``). Every test names the law it pins.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.jtc import (
    INVALID_GOAL,
    PATH_ABORT,
    PATH_TOLERANCE_VIOLATED,
    PREEMPTED,
    Q0,
    REACHED,
    SUCCESSFUL,
    ZERO,
    drive,
    frozen,
    goal_tol,
    ideal,
    make_jtc,
    msg,
    offset,
    pt,
    send,
)

from physai_ros.core.controllers.jtc import GoalEnd, GoalTolerances
from physai_ros.core.motion.joint_trajectory import JointTolerance


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
