"""Pure unit tests of the helpers of joint_trajectory.py the joint trajectory controller relies
on: sampling a planned trajectory, the goal check.

``physai_ros.core.controllers.jtc`` against the behaviour of ros2_controllers 5.17.0 (Kilted)
joint_trajectory_controller as docs/controllers.md describes it (its sections cited as §n),
except the deviations listed there. The controller is driven like a backend does
(``support/jtc.py``). Every test names the law it pins.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.jtc import NAMES, Q0, RANGES, ZERO, pt

from physai_ros.core.motion.joint_trajectory import (
    StartState,
    Tolerances,
    check_goal,
    plan_trajectory,
)


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
