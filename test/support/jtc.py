"""Driving the pure controllers in tests as a backend does (no ROS, no processes): the
upstream texts and codes the tests pin, a 3-joint controller and the SO-101 arm's, trajectory
messages, and simulated measurements (ideal tracking = the previous cycle's reference, a frozen
joint, a constant offset) on a 10 ms grid. Shared by the test_jtc_*.py and test_gac.py modules.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from physai_ros.core.controllers.jtc import (
    GoalEnd,
    GoalTolerances,
    JointTrajectoryController,
    JtcParams,
    Rejected,
    TrajectoryMsg,
)
from physai_ros.core.motion.joint_trajectory import JointRanges, JointTolerance, TrajectoryPoint
from physai_ros.core.motion.limits import load_limits
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


FULL = [pt(1.0, Q0)]  # a one-point goal: Q0 at 1 s
RANGES = JointRanges(NAMES, LOWER, UPPER)
