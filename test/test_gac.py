"""Pure unit tests of the gripper action controller.

``physai_ros.core.controllers.gac`` against the behaviour of ros2_controllers 5.17.0 (Kilted)
gripper action controller as docs/controllers.md describes it (its sections cited as §n),
except the deviations listed there. The controller is driven like a backend does
(``support/jtc.py``). Every test names the law it pins.
"""

from __future__ import annotations

import math

import pytest
from support.jtc import DT, NOT_RUNNING

from physai_ros.core.controllers.gac import GacParams, GripperActionController, gac_params
from physai_ros.core.controllers.jtc import Rejected
from physai_ros.errors import InvalidInput


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
    with pytest.raises(InvalidInput, match=r"stall_timeout must be finite and >= 0, got -1\.0"):
        gac_params({"stall_timeout": -1.0}, "jaw", 0.0, 1.0, 2.94)


def test_gripper_reactivated_with_an_effort_keeps_it():
    """A jaw re-armed on the object it squeezes (the SO-101 driver's resume and re-arm) holds
    its goal with the effort it had, not the default."""
    g = make_gripper()
    g.accept("grip", 0.0, 0.4, 1.0)  # closes onto an object with 0.4
    g.deactivate("stopped")
    g.activate(2.0, 0.3, hold=0.0, effort=g.effort)
    assert (g.setpoint, g.effort) == (0.0, 0.4)
    g.activate(3.0, 0.3)
    assert (g.setpoint, g.effort) == (0.3, 2.0)  # without: the measured position, the default
