"""Pure unit tests of the joint trajectory controller: path and goal tolerances, goal_time,
merge_tolerances.

``physai_ros.core.controllers.jtc`` against the behaviour of ros2_controllers 5.17.0 (Kilted)
joint_trajectory_controller as docs/controllers.md describes it (its sections cited as §n),
except the deviations listed there. The controller is driven like a backend does
(``support/jtc.py``). Every test names the law it pins.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.jtc import (
    GOAL_TIME_ABORT,
    GOAL_TOLERANCE_VIOLATED,
    LOWER,
    NAMES,
    PATH_ABORT,
    PATH_TOLERANCE_VIOLATED,
    Q0,
    RANGES,
    UPPER,
    ZERO,
    drive,
    frozen,
    make_jtc,
    make_params,
    msg,
    offset,
    pt,
    send,
)

from physai_ros.core.controllers.jtc import GoalTolerances, JointTrajectoryController, JtcParams
from physai_ros.core.motion.joint_trajectory import JointTolerance, merge_tolerances


# === 5. path tolerance, goal_time (§5.1-5.3) =================================================
def test_path_tolerance_violation_aborts_naming_the_joint_and_holds_measured():
    """§5.2: |reference - measured| > path tolerance (0.05) before the end aborts with
    PATH_TOLERANCE_VIOLATED (-4), "Aborted due to path tolerance violation…" naming the joint;
    the reference holds the measured position."""
    c = make_jtc(trajectory=[0.05, 0.05, 0.05])
    send(c, msg([pt(1.0, [0.1, 0.3, 0.3])]), 0.0, "g")  # b at 0.5 rad/s
    stuck = Q0 + np.array([0.0, 0.0, 0.01])
    ends = drive(c, 0.0, 2.0, frozen(stuck))
    assert len(ends) == 1
    now, end = ends[0]
    assert (end.goal_id, end.status, end.error_code) == ("g", "aborted", PATH_TOLERANCE_VIOLATED)
    assert end.error_string.startswith(PATH_ABORT + ": b is ")
    assert 0.1 <= now <= 0.12
    assert not c.following
    np.testing.assert_array_equal(c.ref[0], stuck)


def test_single_point_at_time_zero_is_path_checked_on_its_first_sample():
    """§5.1: the path tolerance is checked on the first sample of every trajectory, so a single
    point at t = 0 that the robot is 0.03 from (path tolerance 0.01, within start_tolerance)
    aborts with PATH_TOLERANCE_VIOLATED."""
    c = make_jtc(trajectory=[0.01, 0.01, 0.01])
    send(c, msg([pt(0.0, Q0 + np.array([0.03, 0.0, 0.0]))]), 0.0, "g")
    ends = drive(c, 0.0, 0.5, frozen(Q0))
    assert [e.error_code for _, e in ends] == [PATH_TOLERANCE_VIOLATED]


def test_path_tolerance_is_not_tripped_at_the_tolerance():
    """§5.1: a violation is |error| > tolerance, strict: tracking 0.04 off with 0.05 runs to
    success."""
    c = make_jtc(trajectory=[0.05, 0.05, 0.05])
    send(c, msg([pt(1.0, [0.1, 0.3, 0.3])]), 0.0, "g")
    ends = drive(c, 0.0, 2.0, offset([0.04, -0.04, 0.04]))
    assert [e.status for _, e in ends] == ["succeeded"]


def test_goal_path_velocity_tolerance_is_enforced():
    """§5.3 + deviation: a goal's path_tolerance velocity (0.1 rad/s on c) is checked against
    the measured velocity: a robot reporting 0 rad/s while c's reference moves at 0.5 rad/s
    aborts (-4) naming c's velocity; without it the same run succeeds."""
    run = []
    for tolerances in (GoalTolerances(path=[JointTolerance("c", 0.0, 0.1)]), GoalTolerances()):
        c = make_jtc()
        send(c, msg([pt(1.0, [0.1, -0.2, 0.8])]), 0.0, "g", tolerances)
        run.append(drive(c, 0.0, 2.0, lambda now, c: (c.ref[0].copy(), ZERO.copy())))
    ((now, end),) = run[0]
    assert end.error_code == PATH_TOLERANCE_VIOLATED
    assert end.error_string.startswith(PATH_ABORT + ": c velocity")
    assert now == pytest.approx(0.01)
    assert [e.status for _, e in run[1]] == ["succeeded"]


def test_goal_time_exceeded_aborts_with_the_lateness():
    """§5.2: outside goal tolerance more than goal_time (0.5 s) after the end aborts with
    GOAL_TOLERANCE_VIOLATED (-5), "Aborted due to goal_time_tolerance exceeding by <time since
    the end, %f> seconds"; the reference holds the measured position."""
    c = make_jtc(goal=[0.01, 0.01, 0.01], goal_time=0.5)
    send(c, msg([pt(1.0, [0.5, 0.0, 0.0])]), 0.0, "g")
    ends = drive(c, 0.0, 3.0, frozen(Q0))
    assert len(ends) == 1
    now, end = ends[0]
    assert (end.status, end.error_code) == ("aborted", GOAL_TOLERANCE_VIOLATED)
    assert now == pytest.approx(1.51)
    assert end.error_string.startswith(f"{GOAL_TIME_ABORT} 0.510000 seconds")
    np.testing.assert_array_equal(c.ref[0], Q0)


def test_goal_goal_time_overrides_the_default():
    """§5.3: a goal's goal_time_tolerance (0.2 s) replaces the default (0 = for ever)."""
    c = make_jtc(goal=[0.01, 0.01, 0.01])
    send(c, msg([pt(1.0, [0.5, 0.0, 0.0])]), 0.0, "g", GoalTolerances(goal_time=0.2))
    ends = drive(c, 0.0, 3.0, frozen(Q0))
    assert [e.error_code for _, e in ends] == [GOAL_TOLERANCE_VIOLATED]
    assert ends[0][0] == pytest.approx(1.21)


@pytest.mark.parametrize(
    ("config", "goal_time"),
    [({"goal_time": 0.0, "goal": 0.01}, 0.0), ({"goal_time": 0.5, "goal": 0.01}, -1.0)],
    ids=["constraint-0", "goal-minus-1"],
)
def test_goal_time_zero_waits_for_ever(config, goal_time):
    """§5.2/§8: constraints.goal_time = 0 (or a goal's -1, which erases it) waits for ever: an
    unreachable goal is not aborted after 100 s and the last point stays commanded."""
    p = JtcParams.from_config({"constraints": config}, NAMES, LOWER, UPPER)
    c = JointTrajectoryController(p)
    c.activate(0.0, Q0, ZERO)
    target = [0.5, 0.0, 0.0]
    send(c, msg([pt(1.0, target)]), 0.0, "g", GoalTolerances(goal_time=goal_time))
    assert drive(c, 0.0, 100.0, frozen(Q0), step=0.05) == []
    assert c.goal_id == "g" and c.following
    np.testing.assert_allclose(c.ref[0], target)


def test_from_config_reads_global_and_per_joint_constraints():
    """§8: constraints.<joint>.{trajectory,goal} per joint, stopped_velocity_tolerance and
    goal_time, with upstream's defaults (0, 0, 0.01, 0)."""
    cfg = {
        "allow_partial_joints_goal": True,
        "cmd_timeout": 2.0,
        "constraints": {"goal_time": 0.3, "trajectory": 0.1, "b": {"goal": 0.02}},
    }
    p = JtcParams.from_config(cfg, NAMES, LOWER, UPPER)
    np.testing.assert_array_equal(p.trajectory, [0.1, 0.1, 0.1])
    np.testing.assert_array_equal(p.goal, [0.0, 0.02, 0.0])
    assert (p.goal_time, p.cmd_timeout, p.allow_partial_joints_goal) == (0.3, 2.0, True)
    d = JtcParams.from_config({}, NAMES, LOWER, UPPER)
    assert (d.stopped_velocity_tolerance, d.goal_time, d.cmd_timeout) == (0.01, 0.0, 0.0)
    assert not d.allow_partial_joints_goal and not d.allow_nonzero_velocity_at_trajectory_end


# === 6. merge_tolerances (§5.3) ===============================================================
DEFAULTS = make_params(trajectory=[0.1, 0.2, 0.3], goal=[0.01, 0.02, 0.03], goal_time=2.0)


def test_merge_sets_keeps_and_erases_per_field():
    """§5.3 resolve_tolerance_source: > 0 sets, 0 keeps the default, -1 erases (not checked =
    inf), per position/velocity field; goal_time likewise; unlisted joints keep defaults."""
    path = [JointTolerance("c", -1.0, 0.4), JointTolerance("a", 0.5, 0.0)]
    goal = [JointTolerance("b", 0.0, -1.0), JointTolerance("c", 0.07, 0.3, -1.0)]
    merged, warning = merge_tolerances(DEFAULTS.default_tolerances(), RANGES, path, goal, 0.0)
    assert warning == ""
    np.testing.assert_array_equal(merged.path_position, [0.5, 0.2, np.inf])
    np.testing.assert_array_equal(merged.path_velocity, [np.inf, np.inf, 0.4])
    np.testing.assert_array_equal(merged.goal_position, [0.01, 0.02, 0.07])
    np.testing.assert_array_equal(merged.goal_velocity, [0.01, np.inf, 0.3])
    assert merged.goal_time == 2.0
    for goal_time, expected in ((-1.0, np.inf), (3.0, 3.0)):
        merged, _ = merge_tolerances(DEFAULTS.default_tolerances(), RANGES, [], [], goal_time)
        assert merged.goal_time == expected


@pytest.mark.parametrize(
    ("path", "goal", "goal_time", "says"),
    [
        ([JointTolerance("a", -0.5, 0.0)], [], 0.0, "goal.path_tolerance has a invalid position"),
        ([], [JointTolerance("b", 0.0, -2.0)], 0.0, "goal.goal_tolerance has a invalid velocity"),
        ([JointTolerance("c", 0.1, 0.1, -0.3)], [], 0.0, "invalid acceleration"),
        ([], [], -0.5, "Specified illegal goal_time_tolerance: -0.500000"),
        ([JointTolerance("x", 0.1, 0.0)], [], 0.0, "joint 'x' specified in goal.path_tolerance"),
        ([], [JointTolerance("x", 0.1, 0.0)], 0.0, "does not exist"),
    ],
)
def test_any_illegal_tolerance_or_unknown_joint_falls_back_to_all_defaults(
    path, goal, goal_time, says
):
    """§5.3: any negative value other than -1, or an unknown joint, drops *every* override
    (valid ones and goal_time included) for the defaults, with an error saying why."""
    valid = [JointTolerance("b", 0.9, 0.9)]
    defaults = DEFAULTS.default_tolerances()
    merged, warning = merge_tolerances(defaults, RANGES, valid + path, valid + goal, goal_time)
    assert says in warning and "default tolerances" in warning.lower()
    for field in ("path_position", "path_velocity", "goal_position", "goal_velocity"):
        np.testing.assert_array_equal(getattr(merged, field), getattr(defaults, field))
    assert merged.goal_time == defaults.goal_time


def test_a_goal_with_illegal_tolerances_is_still_accepted_with_the_defaults():
    """§5.3: invalid tolerances are no rejection: the goal runs with the default tolerances and
    the fall-back is logged; the next goal with valid tolerances uses them."""
    c = make_jtc(trajectory=[0.1, 0.1, 0.1])
    bad = GoalTolerances(path=[JointTolerance("a", 0.5, 0.0), JointTolerance("b", -3.0, 0.0)])
    assert send(c, msg([pt(1.0, Q0)]), 0.0, "g", bad) == []
    assert c.goal_id == "g" and len(c.warnings) == 1
    np.testing.assert_array_equal(c.tolerances.path_position, [0.1, 0.1, 0.1])
    send(c, msg([pt(1.0, Q0)]), 0.0, "g2", GoalTolerances(path=[JointTolerance("a", 0.5, 0.0)]))
    np.testing.assert_array_equal(c.tolerances.path_position, [0.5, 0.1, 0.1])
