"""Pure unit tests of the joint trajectory controller: acceptance and rejection of goals.

``physai_ros.core.controllers.jtc`` against the behaviour of ros2_controllers 5.17.0 (Kilted)
joint_trajectory_controller as docs/controllers.md describes it (its sections cited as §n),
except the deviations listed there. The controller is driven like a backend does
(``support/jtc.py``). Every test names the law it pins.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.jtc import (
    ARM,
    FULL,
    NOT_RUNNING,
    Q0,
    ZERO,
    drive,
    make_arm,
    make_jtc,
    make_params,
    msg,
    pt,
    rejection,
    send,
)

from physai_ros.core.controllers.jtc import JointTrajectoryController
from physai_ros.errors import InvalidInput

# === 1. acceptance and rejection (§2.1, §2.2) ================================================
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
    # the rule's own reason (upstream's text), not any rejection
    reason = r"^Mismatch between joint_names size \(3\) and positions \(2\) at point #0\.$"
    with pytest.raises(InvalidInput, match=reason):
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


def test_first_point_at_time_zero_is_checked_against_the_measured_position():
    """Deviation: starting from the reference (interpolate_from_desired_state), a first point
    at t = 0 on that reference but 0.2 rad from where the joint is measured would command a
    0.2 rad step: rejected naming the joint and its measured position; one within
    start_tolerance of both is accepted."""
    c = make_jtc(interpolate_from_desired_state=True)
    away = Q0 + np.array([0.0, 0.2, 0.0])
    c.update(0.01, away, ZERO)  # the joint sagged / was pushed: the reference stayed at Q0
    text = rejection(c, msg([pt(0.0, Q0), pt(1.0, Q0)]), 0.01)
    assert "puts b 0.2000 away from its measured position" in text, text
    c.update(0.02, Q0 + np.array([0.0, 0.01, 0.0]), ZERO)
    c.prepare(msg([pt(0.0, Q0), pt(1.0, Q0)]), 0.02)


def test_first_point_at_time_zero_is_a_step_the_velocity_limit_judges():
    """Deviation (limits): a first point at t = 0 is commanded at once, so its distance from
    the measured position is a step in one limit period like any other: with a start
    tolerance raised to 3.2 rad, a 1 rad step (100 rad/s at 10 ms, limit 4.71) is still
    rejected; a 0.01 rad one (1 rad/s) is accepted."""
    c = make_arm(start_tolerance=3.2)
    text = rejection(c, msg([pt(0.0, [1.0, 0, 0, 0, 0]), pt(2.0, [1.0, 0, 0, 0, 0])], ARM), 0.0)
    assert "step of 1.0000 for shoulder_pan" in text and "velocity limit" in text, text
    c.prepare(msg([pt(0.0, [0.01, 0, 0, 0, 0]), pt(2.0, [0.5, 0, 0, 0, 0])], names=ARM), 0.0)


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
