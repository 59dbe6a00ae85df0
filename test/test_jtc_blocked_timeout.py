"""Pure unit tests of the joint trajectory controller: blocked joints and cmd_timeout.

``physai_ros.core.controllers.jtc`` against the behaviour of ros2_controllers 5.17.0 (Kilted)
joint_trajectory_controller as docs/controllers.md describes it (its sections cited as §n),
except the deviations listed there. The controller is driven like a backend does
(``support/jtc.py``). Every test names the law it pins.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.jtc import (
    DT,
    GOAL_TIME_ABORT,
    GOAL_TOLERANCE_VIOLATED,
    PATH_ABORT,
    PATH_TOLERANCE_VIOLATED,
    Q0,
    TIMEOUT_ABORT,
    drive,
    frozen,
    make_jtc,
    msg,
    pt,
    send,
)

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


def test_a_reference_coming_back_to_a_joint_held_by_an_obstacle_is_not_blocked():
    """blocked_*: progress is also the gap shrinking from its widest: b held by an obstacle at
    Q0 while its reference presses 0.08 rad past it (widest at 0.1 s) and comes back to it by
    0.5 s -- a place's stop and relief of its press on the table -- is not blocked, though the
    gap stays above blocked_error (0.05) for 0.17 s, longer than blocked_time (0.1 s). The
    same press held there is blocked."""
    press = Q0 + np.array([0.0, 0.08, 0.0])
    c = make_jtc(**BLOCKED)
    send(c, msg([pt(0.1, press), pt(0.5, Q0)]), 0.0, "g")
    gaps = []

    def held(now, c):
        gaps.append((now, abs(c.ref[0][1] - Q0[1])))
        return Q0.copy(), np.zeros(3)

    ends = drive(c, 0.0, 1.5, held)
    assert [e.status for _, e in ends] == ["succeeded"], ends
    over = [now for now, gap in gaps if gap > BLOCKED["blocked_error"]]
    assert over[-1] - over[0] > 1.5 * BLOCKED["blocked_time"], over
    c = make_jtc(**BLOCKED)
    send(c, msg([pt(0.1, press), pt(0.3, press)]), 0.0, "g")
    ends = drive(c, 0.0, 1.0, frozen(Q0))
    assert [e.error_string.startswith(PATH_ABORT + ": b is blocked") for _, e in ends] == [True]


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


def test_a_stalled_control_loop_does_not_blame_the_joint():
    """blocked_*, the shipped so101_driver values (0.05 rad, 0.05 rad/s, 0.2 s): the backend's
    own loop stalls for 0.3 s (a loaded machine starves the driver) while a healthy servo
    follows every set-point it is sent. No set-point came during the stall, so the arm stood at
    the last one while the reference ran 0.3 s ahead: that is no blocked joint, and the goal
    succeeds. A joint that stays frozen after the stall is still blocked, blocked_time later."""
    shipped = {"blocked_error": 0.05, "blocked_speed": 0.05, "blocked_time": 0.2}
    c = make_jtc(**shipped)
    send(c, msg([pt(1.0, [0.1, 0.8, 0.3])]), 0.0, "g")  # b at 1 rad/s
    state = {"q": Q0.copy()}

    def servo(now, c):  # reaches each set-point within one cycle: the previous reference
        q, state["q"] = state["q"], c.ref[0].copy()
        return q, (state["q"] - q) / DT

    ends = drive(c, 0.0, 0.3, servo)
    ends += drive(c, 0.6, 2.0, servo)  # no cycle, so no set-point, from 0.3 s to 0.6 s
    assert [e.status for _, e in ends] == ["succeeded"], ends

    c = make_jtc(**shipped)
    send(c, msg([pt(1.0, [0.1, 0.8, 0.3])]), 0.0, "g")
    assert drive(c, 0.0, 0.3, servo) == []
    stuck = state["q"].copy()
    ends = drive(c, 0.6, 2.0, frozen(stuck))
    assert [e.error_code for _, e in ends] == [PATH_TOLERANCE_VIOLATED], ends
    assert 0.6 + 0.2 - DT <= ends[0][0] <= 0.6 + 0.2 + 3 * DT, ends
