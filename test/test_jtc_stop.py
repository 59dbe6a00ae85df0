"""Pure tests of the controller's ``stop_mode: decelerate``: how a cancel, a stop, a deactivation
and a command timeout come to rest, and the ramp to rest they share (``stopping_trajectory``).

Under ``hold_measured`` (upstream, the default) these hold the measured position at once; the
real SO-101 driver's default ``decelerate`` ramps the reference -- what the servos are sent --
to rest within the acceleration limits, along its direction of motion, and holds it there.
Every test names the law it pins.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.jtc import (
    INVALID_GOAL,
    LIMITS,
    NOT_RUNNING,
    drive,
    make_arm,
    msg,
    offset,
    pt,
    rejection,
    send,
)

from physai_ros.core.controllers.jtc import GoalEnd
from physai_ros.core.motion.joint_trajectory import stopping_trajectory
from physai_ros.errors import InvalidInput

DT = 0.01  # [s] the controller's cycle here
A_MAX = LIMITS.acceleration  # 38.96 rad/s² per joint
FAR = [1.2, -0.8, 0.6, 0.0, 0.0]  # a goal 1.2 s away: a linear move, 1 rad/s at most


def at_speed(stop_mode: str = "decelerate", **overrides):
    """An SO-101 arm controller half-way through a 1.2 s move, tracking with a lag."""
    c = make_arm(stop_mode=stop_mode, **overrides)
    send(c, msg([pt(1.2, FAR)], names=c.p.joints), 0.0, "g")
    drive(c, 0.0, 0.6, offset([-0.1, 0.05, -0.05, 0.0, 0.0]))
    return c


def references(c, t0: float, t1: float) -> np.ndarray:
    """The reference (q, q̇) at each cycle in (t0, t1], shape (cycles, 2, n)."""
    out = []
    for k in range(round(t0 / DT) + 1, round(t1 / DT) + 1):
        c.update(k * DT, c.ref[0] - np.array([0.1, -0.05, 0.05, 0.0, 0.0]), c.ref[1])
        out.append(c.ref[:2].copy())
    return np.array(out)


def test_stop_mode_is_checked():
    """An unknown stop_mode is refused with the choices."""
    with pytest.raises(InvalidInput, match="stop_mode must be one of"):
        make_arm(stop_mode="coast")


@pytest.mark.parametrize("how", ["cancel", "stop", "deactivate"])
def test_a_halt_ramps_the_reference_to_rest_within_the_limits_then_holds_it(how):
    """decelerate: from where the reference is (not the lagging measurement), it keeps its
    direction and slows at no more than the acceleration limit until at rest, never
    reversing; then it stays there. The goal ends as each way ends it; after a deactivation
    goals are refused while the ramp still runs."""
    c = at_speed()
    ref0, v0 = c.ref[0].copy(), c.ref[1].copy()
    assert np.abs(v0).max() > 0.9  # moving when halted (1 rad/s)
    if how == "cancel":
        assert c.cancel("g") == [GoalEnd("g", "canceled", 0, "")]
    elif how == "stop":
        assert c.stop("stop requested") == [GoalEnd("g", "aborted", INVALID_GOAL, "stop requested")]
    else:
        assert c.deactivate("released")[0].status == "aborted"
        assert rejection(c, msg([pt(1.0, FAR)], names=c.p.joints), 0.6).startswith(NOT_RUNNING)
    assert c.stopping
    seen = references(c, 0.6, 1.2)
    q, v = seen[:, 0], seen[:, 1]
    accel = np.diff(np.vstack([v0, v]), axis=0) / DT
    assert np.all(np.abs(accel) <= A_MAX * (1 + 1e-9)), np.abs(accel).max(axis=0)
    assert np.all(v * np.sign(v0) >= 0.0)  # never reverses
    assert np.all(np.diff(np.abs(np.vstack([v0, v])), axis=0) <= 1e-12)  # never speeds up
    assert not np.any(v[-1])
    travel = (q[-1] - ref0) * np.sign(v0)  # on along its direction, as far as braking takes
    np.testing.assert_allclose(travel, np.abs(v0) * np.abs(v0).max() / 2 / A_MAX)
    assert not c.stopping and not c.following
    np.testing.assert_array_equal(references(c, 1.2, 1.5)[:, 0], np.tile(q[-1], (30, 1)))


def test_a_command_timeout_holds_the_reference_under_decelerate():
    """cmd_timeout fires after the trajectory's end, the reference at rest on its last
    point: decelerate holds that (what the servos were sent), not the lagging measurement."""
    c = make_arm(stop_mode="decelerate", cmd_timeout=0.3, goal=np.full(5, 0.01))
    send(c, msg([pt(0.5, FAR)], names=c.p.joints), 0.0, "g")
    ends = drive(c, 0.0, 1.0, offset([-0.1, 0.0, 0.0, 0.0, 0.0]))
    assert [e.error_code for _, e in ends] == [-5]
    np.testing.assert_allclose(c.ref[0], FAR)
    assert not c.stopping and not c.following


def test_hold_measured_holds_the_measured_position_at_once():
    """hold_measured (upstream): the cancel holds the measured position, at rest."""
    c = at_speed("hold_measured")
    measured = c.q.copy()
    c.cancel("g")
    np.testing.assert_array_equal(c.ref[0], measured)
    assert not c.following and not c.stopping and not np.any(c.ref[1])


def test_without_finite_accelerations_decelerate_holds_the_measured_position():
    """No acceleration limit to ramp at (a controller without limits): the measured pose."""
    c = at_speed(limits=None)
    measured = c.q.copy()
    c.cancel("g")
    np.testing.assert_array_equal(c.ref[0], measured)
    assert not c.stopping


def test_a_path_violation_still_holds_the_measured_position():
    """The arm left its reference: holding the reference would drive it into what stopped
    it, so a path tolerance violation holds the measured position in either mode."""
    c = make_arm(stop_mode="decelerate", trajectory=np.full(5, 0.05))
    send(c, msg([pt(1.2, FAR)], names=c.p.joints), 0.0, "g")
    ends = drive(c, 0.0, 0.01, offset([-0.2, 0.0, 0.0, 0.0, 0.0]))
    assert [e.error_code for _, e in ends] == [-4]
    np.testing.assert_array_equal(c.ref[0], c.q)
    assert not c.stopping


def test_a_new_goal_during_the_ramp_takes_over_from_the_reference():
    """A goal accepted while the ramp runs ends it; with interpolate_from_desired_state it
    starts where the reference is, at its velocity (no jump)."""
    c = at_speed(interpolate_from_desired_state=True)
    c.cancel("g")
    references(c, 0.6, 0.64)
    before = c.ref[:2].copy()
    send(c, msg([pt(1.0, [0.0] * 5)], names=c.p.joints), 0.64, "g2")
    assert not c.stopping and c.following
    c.update(0.64, c.ref[0], c.ref[1])
    np.testing.assert_allclose(c.ref[0], before[0], atol=1e-12)


# --- the ramp itself -------------------------------------------------------------------------
joint = st.floats(-4.0, 4.0)


@settings(max_examples=300, deadline=None)
@given(
    v=st.lists(joint, min_size=5, max_size=5),
    q=st.lists(st.floats(-1.5, 1.5), min_size=5, max_size=5),
    a=st.lists(st.floats(5.0, 40.0), min_size=5, max_size=5),
)
def test_stopping_trajectory_properties(v, q, a):
    """For any state of a reference that could have stopped within its range at full
    deceleration: the ramp stays within each joint's deceleration and the range, its speed
    never grows, no joint reverses, and it ends at rest."""
    v, q, a = np.array(v), np.array(q), np.array(a)
    if not np.any(v):
        with pytest.raises(InvalidInput):
            stopping_trajectory(LIMITS.joint_names, q, v, a, q - 1, q + 1)
        return
    own = q + v * np.abs(v) / (2 * a)  # where each joint stops at its own full deceleration
    lower, upper = np.minimum(q, own) - 1e-9, np.maximum(q, own) + 1e-9
    traj = stopping_trajectory(LIMITS.joint_names, q, v, a, lower, upper)
    t = np.linspace(0.0, traj.duration + 0.1, 400)
    pos, vel, acc = traj(t, 0), traj(t, 1), traj(t, 2)
    assert np.all(np.abs(acc) <= a * (1 + 1e-9))
    assert np.all((pos >= lower - 1e-9) & (pos <= upper + 1e-9))
    assert np.all(np.diff(np.abs(vel), axis=0) <= 1e-9)
    assert np.all(vel * np.sign(v) >= -1e-12)
    np.testing.assert_allclose(vel[-1], 0.0, atol=1e-12)
    np.testing.assert_allclose(traj(np.array([0.0]), 0)[0], q)
    np.testing.assert_allclose(traj(np.array([0.0]), 1)[0], v, atol=1e-12)
