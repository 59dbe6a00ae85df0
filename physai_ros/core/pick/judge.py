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

The place is judged the same way (:func:`place_pose_verdict`, :func:`place_robot_verdict`):
the object within 1 cm of the place position and upright, or the robot's release point.

Pure: no ROS, no MuJoCo.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
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


# --- The place: was the object set down where it was asked to be? -----------------------------

PLACE_TOLERANCE = 0.01  # [m] the object's centre this close to the place position, in 3-D ...
MAX_TILT = math.radians(10.0)  # [rad] ... and its z axis this close to the vertical: placed


class PlaceVerdict(NamedTuple):
    """One witness's judgement of a place: outcome (placed | dropped | no measurement), error:
    distance of the object's centre from the place position [m] (nan: unknown), tilt of its z
    axis from the vertical [rad] (nan: unknown), reason (why, in words)."""

    outcome: str
    error: float
    tilt: float
    reason: str


def tilt_of(quat_wxyz: object) -> float:
    """Angle [rad] between a body's z axis and the world's vertical, from its unit quaternion
    (scalar first): ``cos θ = 1 − 2 (x² + y²)``, the z-z entry of its rotation matrix."""
    w, x, y, z = (float(v) for v in quat_wxyz)  # type: ignore[union-attr]
    norm = w * w + x * x + y * y + z * z
    return math.acos(max(-1.0, min(1.0, 1.0 - 2.0 * (x * x + y * y) / norm)))


def _placed_or_not(error: float, tilt: float, clear: bool, tol: float, max_tilt: float) -> str:
    if error <= tol and tilt <= max_tilt and clear:
        return "placed"
    return "dropped"


def place_pose_verdict(
    position: object,
    quat_wxyz: object,
    age: float,
    target: object,
    *,
    jaw_clear: bool,
    tolerance: float = PLACE_TOLERANCE,
    max_tilt: float = MAX_TILT,
    max_age: float = math.inf,
    source: str = "cube pose",
) -> PlaceVerdict:
    """Judge a place from the object's pose (centre [m], orientation) measured ``age`` [s] ago,
    after the retreat: placed when its centre is within ``tolerance`` [m] of ``target`` [m],
    it stands within ``max_tilt`` [rad] of upright and the jaws are clear of it (a jaw still on
    it can drag it on the way up); otherwise dropped, with the numbers. A stale pose judges
    nothing. Why a pose wins over the robot's reading: it measures the object, not the hand."""
    if not age <= max_age:
        return PlaceVerdict(
            NO_MEASUREMENT, math.nan, math.nan, f"{source} stale: {age:.3f} s old > {max_age:g} s"
        )
    error = float(math.dist(tuple(position), tuple(target)))  # type: ignore[arg-type]
    tilt = tilt_of(quat_wxyz)
    outcome = _placed_or_not(error, tilt, jaw_clear, tolerance, max_tilt)
    reason = (
        f"{source}: {error * 100:.2f} cm from the place position (≤ {tolerance * 100:g} cm), "
        f"tilted {math.degrees(tilt):.1f}° (≤ {math.degrees(max_tilt):g}°)"
        + ("" if jaw_clear else ", a jaw still touches it")
    )
    return PlaceVerdict(outcome, error, tilt, reason)


class RobotPlaceReading(NamedTuple):
    """The robot's own measurements of a place.

    released: gripper-site position [m] when the jaw opened, by forward kinematics of the
    measured joints (where the object's centre sits from it: ``grip``); supported: the descent
    ended on a sensed support signal (not on its bound), or at the placing height when support
    is not sensed (``place.sense_support`` false); jaw_touch: contact still estimated on
    a jaw after the retreat; age: age of the oldest of these readings [s].
    """

    released: object
    supported: bool
    jaw_touch: bool
    age: float


def place_robot_verdict(
    reading: RobotPlaceReading | None,
    target: object,
    *,
    grip: Sequence[float],
    tolerance: float = PLACE_TOLERANCE,
    max_age: float = math.inf,
) -> PlaceVerdict:
    """Judge a place from the robot alone (no view of the object): placed when the descent was
    stopped by a sensed support, the jaw opened with its site within ``tolerance`` [m] of where
    it holds an object centred on ``target`` and no jaw touches anything after the retreat.
    ``grip`` [m]: the object's centre seen from the site, x and y, and the site's height above
    it, z (the pick machine's ``grip``: the planned ``offsets.down``, or where the object was
    seen in the jaws at the end of lift, which the place's site targets were moved by).
    Its tilt is unknown (nan): only a pose can tell an object that fell over."""
    if reading is None:
        return PlaceVerdict(NO_MEASUREMENT, math.nan, math.nan, "no joint state was received")
    if not reading.age <= max_age:
        return PlaceVerdict(
            NO_MEASUREMENT,
            math.nan,
            math.nan,
            f"joint state stale: {reading.age:.3f} s old > {max_age:g} s",
        )
    gx, gy, gz = (float(v) for v in grip)
    site = [float(v) for v in reading.released]  # type: ignore[attr-defined]
    held_at = (site[0] + gx, site[1] + gy, site[2] - gz)
    error = float(math.dist(held_at, tuple(target)))  # type: ignore[arg-type]
    ok = reading.supported and not reading.jaw_touch
    outcome = _placed_or_not(error, 0.0, ok, tolerance, math.inf)
    why = [f"released {error * 100:.2f} cm from the place position (≤ {tolerance * 100:g} cm)"]
    if not reading.supported:
        why.append("no support was sensed before the release")
    if reading.jaw_touch:
        why.append("a jaw still touches something after the retreat")
    return PlaceVerdict(outcome, error, math.nan, "; ".join(why))


def final_place_verdict(robot: PlaceVerdict, pose: PlaceVerdict | None) -> tuple[PlaceVerdict, str]:
    """The place's outcome and its witness: a fresh object pose, else the robot, else none."""
    if pose is not None and pose.outcome != NO_MEASUREMENT:
        return pose, "cube_pose"
    if robot.outcome != NO_MEASUREMENT:
        return robot, "robot"
    reasons = [robot.reason] + ([pose.reason] if pose is not None else [])
    return PlaceVerdict(NO_MEASUREMENT, math.nan, math.nan, "; ".join(reasons)), "none"
