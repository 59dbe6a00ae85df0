"""What a ``/pick`` goal means, checked without a graph (``physai_ros.nodes._pick_action``): the
object a goal names, the close it asks for, and the outcome report as the typed result. The
node's own behaviour with these (refusals before anything moves, cancel) is tested over DDS in
test_pick_action.py."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from support.optional import require

from physai_ros.core.frames.tf_buffer import TfBuffer
from physai_ros.core.pick.machine import force_params, load_pick_config, load_pick_tree

Pick = require("physai_ros_interfaces.action").Pick
action = require("physai_ros.nodes._pick_action")
outcomes = require("physai_ros.nodes._pick_outcome")
outcome_fields, outcome_name, verdict_of = (
    outcomes.outcome_fields,
    outcomes.outcome_name,
    outcomes.verdict_of,
)

WORLD = "world"
FRAMES = TfBuffer(WORLD)
FRAMES.set(WORLD, "cube", (0.22, 0.0, 0.015), (1.0, 0.0, 0.0, 0.0), 10.0)  # stamp [s]
FRAMES.set("cube", "marker", (0.0, 0.0, 0.02), (1.0, 0.0, 0.0, 0.0), 0.0, static=True)
FRAMES.set("table", "leg", (0.0, 0.0, -0.1), (1.0, 0.0, 0.0, 0.0), 0.0, static=True)
NONE = TfBuffer(WORLD)  # no frame seen yet


def goal(**fields) -> Pick.Goal:
    out = Pick.Goal()
    for name, value in fields.items():
        setattr(out, name, value)
    return out


def test_a_known_fresh_frame_is_the_object():
    picked = action.goal_object(goal(object_frame="cube"), WORLD, FRAMES, 10.2, 0.5)
    assert picked == action.PickObject("cube", None)


def test_a_frame_below_another_is_the_object_as_fresh_as_its_moving_link():
    picked = action.goal_object(goal(object_frame="marker"), WORLD, FRAMES, 10.2, 0.5)
    assert picked == action.PickObject("marker", None)
    why = action.goal_object(goal(object_frame="marker"), WORLD, FRAMES, 11.0, 0.5)
    assert isinstance(why, str) and why.startswith("stale pose") and "1.00 s" in why


def test_an_unknown_frame_is_refused_naming_the_frames_known():
    why = action.goal_object(goal(object_frame="mug"), WORLD, FRAMES, 10.2, 0.5)
    assert isinstance(why, str) and "unknown TF frame 'mug'" in why
    assert "['cube', 'marker']" in why, why
    why = action.goal_object(goal(object_frame="leg"), WORLD, FRAMES, 10.2, 0.5)
    assert isinstance(why, str) and "not connected to 'world'" in why and "'table'" in why


def test_a_frame_not_seen_for_longer_than_max_age_is_stale():
    why = action.goal_object(goal(object_frame="cube"), WORLD, FRAMES, 11.0, 0.5)
    assert isinstance(why, str) and why.startswith("stale pose") and "1.00 s" in why


def test_a_pose_goal_in_the_world_frame_with_a_zero_stamp_is_now():
    g = goal()
    g.object_pose.pose.position.x, g.object_pose.pose.position.z = 0.2, 0.015
    picked = action.goal_object(g, WORLD, NONE, 50.0, 0.5)
    assert picked.frame is None and np.allclose(picked.position, [0.2, 0.0, 0.015])


@pytest.mark.parametrize(
    ("frame", "stamp", "says"),
    [("base_link", 0, "give it in 'world'"), ("world", 40, "stale pose"), ("", 40, "stale pose")],
)
def test_a_pose_in_another_frame_or_old_is_refused(frame, stamp, says):
    g = goal()
    g.object_pose.header.frame_id = frame
    g.object_pose.header.stamp.sec = stamp
    why = action.goal_object(g, WORLD, NONE, 50.0, 0.5)
    assert isinstance(why, str) and says in why, why


@pytest.fixture(scope="module")
def configs():
    """The SO-101's shipped pick configuration (cap close) and its force close's parameters."""
    return load_pick_config(), force_params(load_pick_tree())


def no_fault(_contact: float) -> None:
    return None


def test_the_closes_a_goal_can_ask_for(configs):
    configured, force = configs
    assert action.goal_config(goal(), configured, force, None, no_fault) is configured
    cap = action.goal_config(goal(close=Pick.Goal.CLOSE_CAP), configured, force, None, no_fault)
    assert cap.close_mode == "cap" and cap.force is None
    asked = goal(close=Pick.Goal.CLOSE_FORCE, force_target=8.0)
    forced = action.goal_config(asked, configured, force, None, no_fault)
    assert forced.close_mode == "force" and forced.force.target == 8.0
    assert forced.force.cap == force.cap  # the node's cap, the goal's target


def test_a_force_target_above_the_capacity_is_refused_with_the_numbers(configs):
    configured, force = configs
    asked = goal(close=Pick.Goal.CLOSE_FORCE, force_target=force.capacity * 1.5)
    why = action.goal_config(asked, configured, force, None, no_fault)
    assert isinstance(why, str) and "above what the gripper can apply" in why, why


def test_a_force_target_the_contact_phase_would_overshoot_is_refused(configs):
    configured, force = configs
    asked = goal(close=Pick.Goal.CLOSE_FORCE, force_target=force.contact)
    why = action.goal_config(asked, configured, force, None, no_fault)
    assert isinstance(why, str) and "over-squeeze" in why, why


@pytest.mark.parametrize("target", [0.0, -1.0, math.nan, math.inf])
def test_a_force_close_needs_a_finite_positive_target(configs, target):
    configured, force = configs
    asked = goal(close=Pick.Goal.CLOSE_FORCE, force_target=target)
    assert isinstance(action.goal_config(asked, configured, force, None, no_fault), str)


def test_a_planned_close_without_a_plan_and_an_unknown_close_are_refused(configs):
    configured, force = configs
    planned = goal(close=Pick.Goal.CLOSE_PLANNED)
    assert "no planned force target" in action.goal_config(
        planned, configured, force, None, no_fault
    )
    assert "unknown" in action.goal_config(goal(close=9), configured, force, None, no_fault)


def test_the_result_carries_the_outcome_report_in_si_units():
    report = {
        "outcome": "held",
        "judged_by": "cube_pose",
        "reason": "lifted",
        "state": "done",
        "lift_cm": 7.3,
        "squeeze_N": 80.0,
        "jaw_forces_N": [40.0, 40.5],
        "close_s": 0.5,
        "ik_error_mm": 0.01,
        "close_mode": "cap",
        "force": None,
        "robot": {"outcome": "held", "lift_cm": 7.1, "in_jaws": True, "reason": "stalled"},
        "cube_pose": {"outcome": "held", "lift_cm": 7.3, "in_jaws": True, "reason": "rose"},
    }
    result = action.result_from_report(report, ("fixed_jaw", "moving_jaw"), 5.5)
    assert result.outcome == Pick.Result.HELD and result.judged_by == "cube_pose"
    assert result.lift == pytest.approx(0.073) and result.ik_error == pytest.approx(1e-5)
    assert list(result.jaw_forces) == [40.0, 40.5] and result.duration == 5.5
    assert math.isnan(result.force_target)  # a cap close has no target
    assert list(result.jaw_targets) == [] and result.support_by == ""
    assert math.isnan(result.place_error) and math.isnan(result.strain_peak)
    # both witnesses, each with its own verdict, beside the one that decided
    fields = outcome_fields(result)
    assert fields["outcome"] == "held" and fields["close_mode"] == "cap"
    robot, pose = verdict_of(fields, "robot"), verdict_of(fields, "cube_pose")
    assert robot["reason"] == "stalled" and robot["lift"] == pytest.approx(0.071)
    assert pose["outcome"] == "held" and pose["lift"] == pytest.approx(0.073)
    assert math.isnan(pose["error"]) and verdict_of(fields, "robot", "place") is None
    assert fields["close_phase"] == "" and math.isnan(fields["close_effort"])


def test_a_place_and_a_force_close_carry_their_numbers_as_fields():
    """The place's witness numbers and each jaw's target, in SI units, as typed fields."""
    report = {
        "outcome": "placed",
        "judged_by": "cube_pose",
        "state": "placed",
        "force": {
            "target_N": 3.0,
            "capacity_N": 6.0,
            "squeeze_per_jaw_N": 3.1,
            "within_tolerance": True,
            "peak_while_closing_N": 3.3,
            "effort_Nm": 0.21,
            "phase": "done",
            "source": "planner",
        },
        "place": {
            "support_by": "stall",
            "error_cm": 0.42,
            "tilt_deg": 1.5,
            "robot": {"outcome": "placed", "error_cm": 0.5, "tilt_deg": None, "reason": "r"},
            "cube_pose": {"outcome": "placed", "error_cm": 0.42, "tilt_deg": 1.5, "reason": "p"},
        },
    }
    result = action.result_from_report(report, ("fixed_jaw", "moving_jaw"), 9.0)
    assert list(result.jaw_targets) == [3.0, 3.0] and result.support_by == "stall"
    assert result.place_error == pytest.approx(0.0042)
    assert result.place_tilt == pytest.approx(math.radians(1.5))
    assert (result.close_phase, result.force_source) == ("done", "planner")
    assert result.close_effort == pytest.approx(0.21)
    fields = outcome_fields(result)
    robot, pose = verdict_of(fields, "robot", "place"), verdict_of(fields, "cube_pose", "place")
    assert robot["error"] == pytest.approx(0.005) and math.isnan(robot["tilt"])
    assert pose["tilt"] == pytest.approx(math.radians(1.5)) and math.isnan(pose["lift"])


def test_the_hand_result_carries_each_fingers_target_and_the_strain():
    report = {
        "outcome": "held",
        "state": "done",
        "judged_by": "object pose",
        "close_s": 0.8,
        "strain_peak": 0.12,
        "force": {
            "targets_N": [2.0, 1.0, 1.0],
            "capacity_N": [5.0, 5.0, 5.0],
            "final_N": [1.9, 1.0, 1.05],
            "within_tolerance": [True, True, True],
            "peak_while_closing_N": [2.1, 1.1, 1.1],
        },
    }
    result = action.hand_result_from_report(report, ("f1", "f2", "f3"), 12.0)
    assert list(result.jaw_targets) == [2.0, 1.0, 1.0] and result.force_target == 2.0
    assert list(result.jaw_peaks) == [2.1, 1.1, 1.1] and result.force_within_tolerance
    assert result.strain_peak == pytest.approx(0.12) and result.support_by == ""
    assert (result.close_mode, result.force_source) == ("force", "planner")


@pytest.mark.parametrize(
    ("outcome", "constant"),
    [("not closed", "MISSED"), ("dropped", "DROPPED"), ("aborted", "ABORTED")],
)
def test_every_judged_outcome_has_its_constant(outcome, constant):
    report = {"outcome": outcome, "reason": "r", "abort_reason": "why", "state": "aborted"}
    result = action.result_from_report(report, ("a", "b"), 1.0)
    assert result.outcome == getattr(Pick.Result, constant)
    assert outcome_name(result.outcome) == outcome  # and back, for the tools that read it
    assert math.isnan(result.lift)  # not measured: NaN, never a made-up 0


def test_the_outcome_topics_message_is_the_results_fields_and_constants():
    """``PickOutcome`` is cut from ``Pick.action``'s Result section at build time: the same
    fields, types and constants, and a result crosses over whole."""
    PickOutcome = require("physai_ros_interfaces.msg").PickOutcome
    assert PickOutcome.get_fields_and_field_types() == Pick.Result.get_fields_and_field_types()
    for name in ("HELD", "PLACED", "DROPPED", "MISSED", "ABORTED", "CANCELED", "REJECTED"):
        assert getattr(PickOutcome, name) == getattr(Pick.Result, name), name
    report = {"outcome": "held", "robot": {"outcome": "held", "lift_cm": 5.0}, "close_mode": "cap"}
    result = action.result_from_report(report, ("a", "b"), 2.0)
    result.stamp.sec = 7
    message = outcomes.as_outcome(result)
    # as text: its NaN fields (not measured) are equal only as written
    assert json.dumps(outcome_fields(message)) == json.dumps(outcome_fields(result))
    assert message.witnesses[0].lift == pytest.approx(0.05) and message.stamp.sec == 7


def test_a_refusal_is_rejected_with_its_reason():
    result = action.result_from_report(action.refusal("busy"), ("a", "b"), 0.0)
    assert result.outcome == Pick.Result.REJECTED and result.reason == "busy"


def place(x: float, y: float, z: float, frame: str = "") -> Pick.Goal:
    g = goal(place=True)
    g.place_pose.header.frame_id = frame
    g.place_pose.pose.position.x, g.place_pose.pose.position.y = x, y
    g.place_pose.pose.position.z = z
    return g


def test_a_goal_without_place_lifts_and_holds_whatever_its_place_pose():
    g = place(math.nan, 0.0, 0.0, frame="camera")
    g.place = False
    assert action.goal_place(g, WORLD) is None


@pytest.mark.parametrize("frame", ["", "world"])
def test_a_place_pose_in_the_world_frame_is_the_place_position(frame):
    where = action.goal_place(place(0.2, -0.01, 0.015, frame), WORLD)
    assert isinstance(where, np.ndarray) and np.allclose(where, [0.2, -0.01, 0.015])


def test_a_place_pose_in_another_frame_is_refused_naming_both():
    why = action.goal_place(place(0.2, 0.0, 0.015, "camera"), WORLD)
    assert isinstance(why, str) and "'camera'" in why and "give it in 'world'" in why


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_place_pose_not_finite_is_refused(bad):
    why = action.goal_place(place(0.2, bad, 0.015), WORLD)
    assert isinstance(why, str) and "not finite" in why
