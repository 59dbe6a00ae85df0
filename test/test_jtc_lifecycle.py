"""Pure unit tests of the joint trajectory controller: activate, deactivate, stop.

``physai_ros.core.controllers.jtc`` against the behaviour of ros2_controllers 5.17.0 (Kilted)
joint_trajectory_controller as docs/controllers.md describes it (its sections cited as §n),
except the deviations listed there. The controller is driven like a backend does
(``support/jtc.py``). Every test names the law it pins.
"""

from __future__ import annotations

import numpy as np
from support.jtc import (
    DEACTIVATED,
    FULL,
    INVALID_GOAL,
    NOT_RUNNING,
    Q0,
    ZERO,
    drive,
    frozen,
    make_jtc,
    make_params,
    msg,
    offset,
    pt,
    rejection,
    send,
)

from physai_ros.core.controllers.jtc import GoalEnd, JointTrajectoryController


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
