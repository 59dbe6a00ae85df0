"""Whether the pick held the cube, judged from measurements only (physai_ros.core.pick.judge):
the robot's own (gripper stalled short of empty-closed with contact, lift by forward
kinematics), a cube pose when one is fresh, and nothing when everything is stale."""

from __future__ import annotations

import math

from physai_ros.core.pick.judge import (
    NO_MEASUREMENT,
    RobotReading,
    final_verdict,
    pose_verdict,
    robot_verdict,
)

JUDGE = {
    "closed": True,
    "jaw_closed": -0.17453,
    "empty_margin": 0.05,
    "still_speed": 0.05,
    "min_lift": 0.04,
    "max_age": 0.5,
}


def robot(**change) -> RobotReading:
    fields = {"site_lift": 0.07, "jaw": 0.2, "jaw_speed": 0.0, "both_touch": True, "age": 0.01}
    return RobotReading(**(fields | change))


def test_the_robot_alone_judges_a_held_cube():
    verdict = robot_verdict(robot(), **JUDGE)
    assert verdict.outcome == "held" and verdict.in_jaws and verdict.lift == 0.07
    assert "stalled on the object" in verdict.reason


def test_the_robot_tells_a_drop_from_a_held_cube():
    """Each missing sign of a held cube makes it "dropped" (the grip had formed): the jaw at
    its empty-closed stop, no contact, a jaw still moving, or a lift short of 4 cm."""
    for change, why in (
        ({"jaw": -0.16}, "within 0.05 of empty"),
        ({"both_touch": False}, "no contact"),
        ({"jaw_speed": 0.3}, "still moving"),
        ({"site_lift": 0.03}, "lifted 3.00 cm"),
    ):
        verdict = robot_verdict(robot(**change), **JUDGE)
        assert verdict.outcome == "dropped" and why in verdict.reason, (change, verdict)
    not_closed = robot_verdict(robot(both_touch=False), **(JUDGE | {"closed": False}))
    assert not_closed.outcome == "not closed"


def test_stale_or_missing_measurements_judge_nothing():
    assert robot_verdict(None, **JUDGE).outcome == NO_MEASUREMENT
    stale = robot_verdict(robot(age=0.8), **JUDGE)
    assert stale.outcome == NO_MEASUREMENT and "0.800 s old > 0.5 s" in stale.reason
    assert math.isnan(stale.lift)
    assert pose_verdict(None, 0.0, True, closed=True, min_lift=0.04, max_age=0.5) is None
    old = pose_verdict(0.07, 2.0, True, closed=True, min_lift=0.04, max_age=0.5)
    assert old.outcome == NO_MEASUREMENT
    final, judge = final_verdict(stale, old)
    assert final.outcome == NO_MEASUREMENT and judge == "none"
    assert "joint state stale" in final.reason and "cube pose stale" in final.reason


def test_a_fresh_cube_pose_judges_and_is_named():
    held = pose_verdict(0.073, 0.02, True, closed=True, min_lift=0.04, max_age=0.5)
    dropped = pose_verdict(0.0, 0.02, False, closed=True, min_lift=0.04, max_age=0.5)
    assert held.outcome == "held" and dropped.outcome == "dropped"
    robot_says = robot_verdict(robot(), **JUDGE)
    assert final_verdict(robot_says, dropped) == (dropped, "cube_pose")
    assert final_verdict(robot_says, None) == (robot_says, "robot")
