"""Pure unit tests of the joint trajectory controller: header stamps and partial goals.

``physai_ros.core.controllers.jtc`` against the behaviour of ros2_controllers 5.17.0 (Kilted)
joint_trajectory_controller as docs/controllers.md describes it (its sections cited as §n),
except the deviations listed there. The controller is driven like a backend does
(``support/jtc.py``). Every test names the law it pins.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.jtc import Q0, ZERO, drive, make_jtc, msg, offset, pt, rejection, send

from physai_ros.core.controllers.jtc import GoalTolerances


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
