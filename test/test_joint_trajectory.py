"""Pure tests of trajectory validation, interpolation and goal checks (no MuJoCo, no ROS)."""

from __future__ import annotations

import math

import numpy as np
import pytest

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
from physai_ros.errors import InvalidInput, LimitViolation

NAMES = ("a", "b", "c")
RANGES = JointRanges(NAMES, np.array([-1.0, -2.0, -3.0]), np.array([1.0, 2.0, 3.0]))
REST = StartState(np.array([0.1, -0.2, 0.3]), np.zeros(3), np.zeros(3))
START_TOL = 0.05


def plan(points, names=NAMES, start=REST):
    return plan_trajectory(RANGES, names, points, start, START_TOL)


def sample(traj, t):
    out = np.zeros((3, len(NAMES)))
    traj.sample(t, out)
    return out


def numeric_derivative(traj, t, order, h=1e-6):
    return (sample(traj, t + h)[order] - sample(traj, t - h)[order]) / (2 * h)


def test_linear_passes_through_waypoints_from_the_start_state():
    pts = [TrajectoryPoint(1.0, [0.5, 0.0, 0.0]), TrajectoryPoint(3.0, [-0.5, 1.0, 2.0])]
    traj = plan(pts)
    assert traj.kind == "linear" and traj.duration == 3.0
    np.testing.assert_allclose(sample(traj, 0.0)[0], REST.positions, atol=1e-12)
    np.testing.assert_allclose(sample(traj, 1.0)[0], pts[0].positions, atol=1e-12)
    np.testing.assert_allclose(sample(traj, 2.0)[0], [0.0, 0.5, 1.0], atol=1e-12)
    # constant velocity inside a segment; holds at rest after the end
    np.testing.assert_allclose(sample(traj, 0.5)[1], (np.array(pts[0].positions) - REST[0]) / 1.0)
    after = sample(traj, 10.0)
    np.testing.assert_allclose(after[0], pts[1].positions)
    assert np.all(after[1:] == 0.0)


def test_joint_order_of_the_goal_is_mapped_to_the_robot_order():
    traj = plan([TrajectoryPoint(1.0, [3.0 - 1.0, 0.0, 1.0])], names=("c", "a", "b"))
    np.testing.assert_allclose(traj.positions_end, [0.0, 1.0, 2.0])


def test_cubic_meets_positions_and_velocities_and_is_c1():
    pts = [
        TrajectoryPoint(1.0, [0.5, 0.1, -0.4], [0.3, 0.0, -0.2]),
        TrajectoryPoint(2.5, [0.0, 0.4, 0.2], [0.0, 0.0, 0.0]),
    ]
    start = StartState(REST.positions, np.array([0.1, -0.1, 0.0]), np.zeros(3))
    traj = plan(pts, start=start)
    assert traj.kind == "cubic"
    np.testing.assert_allclose(sample(traj, 0.0)[1], start.velocities, atol=1e-12)
    for p in pts[:1]:
        left, right = sample(traj, p.time_from_start - 1e-9), sample(traj, p.time_from_start + 1e-9)
        np.testing.assert_allclose(left[0], p.positions, atol=1e-8)
        np.testing.assert_allclose(left[1], p.velocities, atol=1e-6)
        np.testing.assert_allclose(right[1], p.velocities, atol=1e-6)
    # the sampled velocity and acceleration are the derivatives of the sampled position
    for t in (0.3, 1.7):
        np.testing.assert_allclose(numeric_derivative(traj, t, 0), sample(traj, t)[1], atol=1e-5)
        np.testing.assert_allclose(numeric_derivative(traj, t, 1), sample(traj, t)[2], atol=1e-4)


def test_quintic_from_rest_is_the_min_jerk_profile():
    """Rest to rest in one segment: q = q0 + Δq (10u³ − 15u⁴ + 6u⁵), peak speed 1.875 Δq/T."""
    goal = np.array([0.9, 1.5, -2.5])
    T = 2.0
    traj = plan([TrajectoryPoint(T, goal, [0, 0, 0], [0, 0, 0])])
    assert traj.kind == "quintic"
    delta = goal - REST.positions
    for u in (0.1, 0.37, 0.5, 0.8):
        s = 10 * u**3 - 15 * u**4 + 6 * u**5
        np.testing.assert_allclose(sample(traj, u * T)[0], REST.positions + s * delta, atol=1e-12)
    np.testing.assert_allclose(sample(traj, T / 2)[1], 1.875 * delta / T, rtol=1e-12)
    u = (3 - math.sqrt(3)) / 6
    np.testing.assert_allclose(
        sample(traj, u * T)[2], 10 * math.sqrt(3) / 3 * delta / T**2, rtol=1e-9
    )
    for t in (0.2, 1.3):
        np.testing.assert_allclose(numeric_derivative(traj, t, 1), sample(traj, t)[2], atol=1e-5)


def test_first_point_at_time_zero_replaces_the_start_if_close():
    near = REST.positions + 0.01
    traj = plan([TrajectoryPoint(0.0, near), TrajectoryPoint(1.0, [0.0, 0.0, 0.0])])
    np.testing.assert_allclose(sample(traj, 0.0)[0], near)
    with pytest.raises(LimitViolation, match=r"point 0 at t = 0 puts a"):
        plan([TrajectoryPoint(0.0, [0.9, -0.2, 0.3])])


@pytest.mark.parametrize(
    ("names", "points", "error", "match"),
    [
        ((), [TrajectoryPoint(1.0, [])], InvalidInput, "no joint names"),
        (("a", "b", "x"), [TrajectoryPoint(1.0, [0, 0, 0])], InvalidInput, r"unknown joint.*'x'"),
        (("a", "b"), [TrajectoryPoint(1.0, [0, 0])], InvalidInput, r"missing joint.*'c'"),
        (("a", "a", "b"), [TrajectoryPoint(1.0, [0, 0, 0])], InvalidInput, "duplicate"),
        (NAMES, [], InvalidInput, "no points"),
        (NAMES, [TrajectoryPoint(1.0, [0, 0])], InvalidInput, "positions has 2 values"),
        (NAMES, [TrajectoryPoint(1.0, [0, math.nan, 0])], InvalidInput, r"joint 'b' is nan"),
        (NAMES, [TrajectoryPoint(1.0, [0, 0, 0], [0, math.inf, 0])], InvalidInput, "velocities"),
        (NAMES, [TrajectoryPoint(math.nan, [0, 0, 0])], InvalidInput, "time_from_start"),
        (NAMES, [TrajectoryPoint(-1.0, [0, 0, 0])], InvalidInput, "time_from_start"),
        (
            NAMES,
            [TrajectoryPoint(2.0, [0, 0, 0]), TrajectoryPoint(1.0, [0, 0, 0])],
            InvalidInput,
            "must increase: point 1 at 1 s is not after point 0 at 2 s",
        ),
        (
            NAMES,
            [TrajectoryPoint(1.0, [0, 0, 0]), TrajectoryPoint(1.0, [0, 0, 0])],
            InvalidInput,
            "must increase",
        ),
        (NAMES, [TrajectoryPoint(1.0, [0, 0, 3.5])], LimitViolation, r"c = 3.5000.*upper limit 3"),
        (NAMES, [TrajectoryPoint(1.0, [-1.2, 0, 0])], LimitViolation, r"a = -1.2000.*lower limit"),
        (
            NAMES,
            [TrajectoryPoint(1.0, [0, 0, 0], [0, 0, 0]), TrajectoryPoint(2.0, [0, 0, 0])],
            InvalidInput,
            "velocities given for points",
        ),
        (
            NAMES,
            [TrajectoryPoint(1.0, [0, 0, 0], (), [0, 0, 0])],
            InvalidInput,
            "without velocities",
        ),
    ],
)
def test_bad_goals_are_rejected_with_the_reason(names, points, error, match):
    with pytest.raises(error, match=match):
        plan(points, names=names)


def test_tolerances_follow_the_controller_convention():
    """ros2_controllers' rule: > 0 sets, 0 keeps the default, -1 disables; anything illegal
    (another negative, NaN, an unknown joint) drops all the goal's values, with a warning."""
    defaults = Tolerances(np.full(3, 0.1), np.full(3, 0.02), np.full(3, 0.05), 1.0)
    merged, warning = merge_tolerances(
        defaults,
        RANGES,
        [JointTolerance("a", 0.3, 0.0), JointTolerance("b", -1.0, 0.0)],
        [JointTolerance("c", 0.0, 0.5)],
        0.0,
    )
    assert warning == ""
    np.testing.assert_allclose(merged.path_position, [0.3, math.inf, 0.1])
    np.testing.assert_allclose(merged.goal_position, [0.02, 0.02, 0.02])
    np.testing.assert_allclose(merged.goal_velocity, [0.05, 0.05, 0.5])
    assert merged.goal_time == 1.0
    assert merge_tolerances(defaults, RANGES, [], [], 2.5)[0].goal_time == 2.5
    assert merge_tolerances(defaults, RANGES, [], [], -1.0)[0].goal_time == math.inf
    for path, text in (
        ([JointTolerance("z", 0.1, 0.0)], "joint 'z' specified in goal.path_tolerance does not"),
        ([JointTolerance("a", math.nan, 0.0)], "has a invalid position tolerance"),
        ([JointTolerance("a", 0.3, 0.0), JointTolerance("b", -2.0, 0.0)], "invalid position"),
    ):
        merged, warning = merge_tolerances(defaults, RANGES, path, [], 0.7)
        assert text in warning and merged is defaults  # all dropped, goal_time too


def test_goal_check_running_success_and_violations():
    traj = plan([TrajectoryPoint(1.0, [0.5, 0.5, 0.5])])
    tol = Tolerances(np.full(3, 0.1), np.full(3, 0.02), np.full(3, 0.05), 0.5)
    ref = sample(traj, 0.5)[0]
    still = np.zeros(3)
    assert check_goal(0.5, traj, ref, ref + 0.05, still, tol).outcome == "running"
    path = check_goal(0.5, traj, ref, ref + np.array([0, 0.2, 0]), still, tol)
    assert path.outcome == "path_tolerance_violated" and "b is 0.2000 rad" in path.message
    end = traj.positions_end
    assert check_goal(1.0, traj, end, end + 0.01, still, tol).outcome == "succeeded"
    assert check_goal(1.2, traj, end, end + 0.05, still, tol).outcome == "running"  # still in time
    late = check_goal(1.6, traj, end, end + np.array([0.05, 0, 0]), still, tol)
    assert late.outcome == "goal_tolerance_violated" and "a is 0.0500 rad" in late.message
    assert late.late == pytest.approx(0.6)
    moving = check_goal(1.6, traj, end, end, np.array([0, 0, 0.2]), tol)
    assert moving.outcome == "goal_tolerance_violated" and "c still moves" in moving.message
