"""Did the pick hold the cube? Judged from what is measured, and only from that.

Two witnesses can judge, and the outcome names which one did:

* **the robot itself** -- what a real SO-101 measures with no camera or motion capture: the
  gripper still stalls short of its empty-closed position with contact estimated (something
  holds the jaws apart), and the gripper site rose by at least ``min_lift`` since the grip
  formed (forward kinematics of the measured joint angles; a cube resting on the table when
  it was gripped and still gripped was lifted by as much);
* **a cube pose** -- from the simulation, a detector or motion capture (TF frame ``cube``): the
  cube's bottom at least ``min_lift`` above the table and in both jaws (lesson 16's test).

A measurement older than ``max_age`` seconds is stale and judges nothing: with no fresh witness
the outcome is ``no measurement`` with the reason, never a guess.

Pure: no ROS, no MuJoCo.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from physai_ros.core.pick.grip import pick_outcome

NO_MEASUREMENT = "no measurement"


class Verdict(NamedTuple):
    """One witness's judgement: outcome (held | dropped | not closed | no measurement), lift
    [m] (nan when unknown), in_jaws (both jaws on the object), reason (why, in words)."""

    outcome: str
    lift: float
    in_jaws: bool
    reason: str

    def as_dict(self) -> dict[str, object]:
        return {
            "outcome": self.outcome,
            "lift_cm": None if math.isnan(self.lift) else round(self.lift * 100.0, 3),
            "in_jaws": self.in_jaws,
            "reason": self.reason,
        }


class RobotReading(NamedTuple):
    """The robot's own measurements at the end of the pick.

    site_lift: gripper-site height now minus at the end of close [m], from forward
    kinematics of measured joint angles; jaw: gripper joint angle [rad]; jaw_speed [rad/s];
    both_touch: contact on both jaws (sensed or estimated from the servo); age: age of the
    oldest of these readings [s].
    """

    site_lift: float
    jaw: float
    jaw_speed: float
    both_touch: bool
    age: float


def robot_verdict(
    reading: RobotReading | None,
    *,
    closed: bool,
    jaw_closed: float,
    empty_margin: float,
    still_speed: float,
    min_lift: float,
    max_age: float,
) -> Verdict:
    """Judge from the robot alone (see the module docstring).

    closed: the close state ended on the sensed grip; jaw_closed: the gripper's empty-closed
    angle [rad] (closing decreases it); empty_margin [rad]: a jaw within this of jaw_closed
    holds nothing; still_speed [rad/s]; min_lift [m]; max_age [s].
    """
    if reading is None:
        return Verdict(NO_MEASUREMENT, math.nan, False, "no joint state was received")
    if not reading.age <= max_age:
        return Verdict(
            NO_MEASUREMENT,
            math.nan,
            False,
            f"joint state stale: {reading.age:.3f} s old > {max_age:g} s",
        )
    short = reading.jaw > jaw_closed + empty_margin
    still = abs(reading.jaw_speed) < still_speed
    in_jaws = reading.both_touch and short and still
    outcome = pick_outcome(reading.site_lift, in_jaws, closed, min_lift)
    if not reading.both_touch:
        why = "no contact on both jaws"
    elif not short:
        why = f"jaw closed to {reading.jaw:.3f} rad, within {empty_margin:g} of empty"
    elif not still:
        why = f"jaw still moving at {reading.jaw_speed:.3f} rad/s"
    else:
        why = "gripper stalled on the object"
    return Verdict(
        outcome, reading.site_lift, in_jaws, f"{why}; lifted {reading.site_lift * 100:.2f} cm"
    )


def pose_verdict(
    cube_bottom: float | None,
    pose_age: float,
    both_touch: bool,
    *,
    closed: bool,
    min_lift: float,
    max_age: float,
    source: str = "cube pose",
) -> Verdict | None:
    """Judge from a cube pose (bottom height above the table [m], its age [s]); None when no
    pose was ever received. A stale pose judges nothing."""
    if cube_bottom is None:
        return None
    if not pose_age <= max_age:
        return Verdict(
            NO_MEASUREMENT, math.nan, False, f"{source} stale: {pose_age:.3f} s old > {max_age:g} s"
        )
    outcome = pick_outcome(cube_bottom, both_touch, closed, min_lift)
    return Verdict(
        outcome,
        cube_bottom,
        both_touch,
        f"{source}: bottom {cube_bottom * 100:.2f} cm above the table"
        + ("" if both_touch else ", not in both jaws"),
    )


def final_verdict(robot: Verdict, pose: Verdict | None) -> tuple[Verdict, str]:
    """The outcome and the witness that judged it: a fresh cube pose measures the cube itself
    and wins; else the robot's own measurements; else ``no measurement``."""
    if pose is not None and pose.outcome != NO_MEASUREMENT:
        return pose, "cube_pose"
    if robot.outcome != NO_MEASUREMENT:
        return robot, "robot"
    reasons = [robot.reason] + ([pose.reason] if pose is not None else [])
    return Verdict(NO_MEASUREMENT, math.nan, False, "; ".join(reasons)), "none"
