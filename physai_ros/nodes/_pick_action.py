"""The pick node's ``/pick`` action (``physai_ros_interfaces/action/Pick``): what a goal asks
for, checked before anything moves, and the outcome as the action's typed result.

Why a module of its own: the node drives the machine; this says what a goal means (which
object, which close, where to place it) and turns the outcome report the node judges (a dict,
logged whole) into the result's fields: the one typed outcome, sent as the goal's result and
published on the ``pick/outcome`` topic.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from physai_ros_interfaces.action import Pick
from physai_ros_interfaces.msg import Witness

from physai_ros.core.frames.tf_buffer import FrameLookupError, TfBuffer
from physai_ros.core.pick.force_close import ForceCloseParams, capacity_fault
from physai_ros.core.pick.machine import PickConfig
from physai_ros.errors import InvalidInput
from physai_ros.nodes._pick_outcome import OUTCOMES

Result = Pick.Result
BUSY = "a pick is running (state {state}): one goal at a time; wait for its result or cancel it"


class PickObject(NamedTuple):
    """What a goal picks: a TF frame (its pose measured, kept fresh) and/or a fixed position
    in the world [m] (a target the user gave, fresh by definition)."""

    frame: str | None
    position: np.ndarray | None

    def describe(self) -> str:
        if self.frame is not None:
            return f"TF frame {self.frame!r}"
        return f"the position {np.round(self.position, 4).tolist()} m"


def goal_object(
    goal: Pick.Goal,
    world: str,
    tf: TfBuffer,
    now: float,
    max_age: float,
) -> PickObject | str:
    """The goal's object, or why it cannot be picked: a TF frame that is unknown, not chained
    to ``world`` or stale (its oldest moving link older than ``max_age`` [s]; the refusal lists
    the frames the tree knows), a pose in another frame than ``world`` or older than
    ``max_age``. ``tf``: every TF link seen (``world`` is its root)."""
    if goal.object_frame:
        try:
            age = tf.lookup(goal.object_frame).age(now)
        except FrameLookupError as exc:
            return f"{exc} (frames known under {world!r}: {tf.known() or 'none yet'})"
        if age > max_age:
            return (
                f"stale pose: TF frame {goal.object_frame!r} was last seen {age:.2f} s ago "
                f"(max_age {max_age:g} s)"
            )
        return PickObject(goal.object_frame, None)
    pose = goal.object_pose
    frame = pose.header.frame_id or world
    if frame != world:
        return (
            f"object_pose is in frame {frame!r}: give it in {world!r} (or name a TF frame "
            "in object_frame)"
        )
    p = pose.pose.position
    position = np.array([p.x, p.y, p.z], dtype=float)
    if not np.all(np.isfinite(position)):
        return f"object_pose position {position.tolist()} is not finite"
    stamp = pose.header.stamp.sec + pose.header.stamp.nanosec * 1e-9
    if stamp > 0.0 and now - stamp > max_age:
        return f"stale pose: object_pose is {now - stamp:.2f} s old (max_age {max_age:g} s)"
    return PickObject(None, position)


def goal_place(goal: Pick.Goal, world: str) -> np.ndarray | str | None:
    """The goal's place position (the object's centre where it should rest [m], in ``world``),
    None for a goal that lifts and holds, or why it cannot be placed: another frame than
    ``world`` (the pick plans in the world frame: no TF lookup converts it), not finite.
    Whether the arm can do it is the machine's check (``PickMachine``), made before it moves."""
    if not goal.place:
        return None
    pose = goal.place_pose
    frame = pose.header.frame_id or world
    if frame != world:
        return f"place_pose is in frame {frame!r}: give it in {world!r}"
    p = pose.pose.position
    position = np.array([p.x, p.y, p.z], dtype=float)
    if not np.all(np.isfinite(position)):
        return f"place_pose position {position.tolist()} is not finite"
    return position


def goal_config(
    goal: Pick.Goal,
    configured: PickConfig,
    force: ForceCloseParams,
    planned: PickConfig | None,
    contact_fault: Callable[[float], str | None],
) -> PickConfig | str:
    """The pick's configuration for the goal's close, or why it cannot be done.

    configured: the node's own (its close_mode); force: the force close's parameters with
    the node's cap (used by CLOSE_FORCE whatever the node's close_mode); planned: the
    configuration with the planner's target (None: the node has no plan); contact_fault:
    the gripper's check of the contact force (its friction floor)."""
    if goal.close == Pick.Goal.CLOSE_CONFIGURED:
        return configured
    if goal.close == Pick.Goal.CLOSE_CAP:
        return dataclasses.replace(configured, close_mode="cap", force=None)
    if goal.close == Pick.Goal.CLOSE_PLANNED:
        if planned is None:
            return (
                "no planned force target: start the node with close_mode force and "
                "plan.source planner (it asks the grasp planner once, at start)"
            )
        return planned
    if goal.close != Pick.Goal.CLOSE_FORCE:
        return f"close {goal.close} unknown: 0 configured, 1 cap, 2 force, 3 planned"
    target = float(goal.force_target)
    if not (math.isfinite(target) and target > 0.0):
        return f"close force needs a force_target > 0 [N], got {target!r}"
    try:  # the parameters check themselves (a target the contact force would over-squeeze)
        params = dataclasses.replace(force, target=target)
    except InvalidInput as exc:
        return f"force_target {target:g} N: {exc}"
    fault = capacity_fault(params) or contact_fault(params.contact)
    if fault is not None:
        return fault
    return dataclasses.replace(configured, close_mode="force", force=params)


def _number(value: float | None, scale: float = 1.0) -> float:
    return math.nan if value is None else float(value) * scale


def result_from_report(report: dict, jaws: tuple[str, ...], duration: float) -> Pick.Result:
    """The typed result of an outcome report (the dict the node judges and logs, in its units:
    cm and mm converted to m), ``duration`` [s] from the goal's acceptance."""
    result = Pick.Result()
    result.outcome = OUTCOMES.get(report["outcome"], Result.ABORTED)
    result.reason = str(report.get("reason") or report.get("abort_reason") or "")
    if report["outcome"] == "aborted" and report.get("abort_reason"):
        result.reason = str(report["abort_reason"])
    judged = report.get("judged_by")
    result.judged_by = "" if judged in (None, "none") else str(judged)
    result.state = str(report.get("state") or "")
    result.lift = _number(report.get("lift_cm"), 0.01)
    result.squeeze = _number(report.get("squeeze_N"))
    result.jaw_names = list(jaws)
    result.jaw_forces = [float(f) for f in report.get("jaw_forces_N") or []]
    result.close_time = _number(report.get("close_s"))
    result.ik_error = _number(report.get("ik_error_mm"), 1e-3)
    result.duration = float(duration)
    force = report.get("force")
    if force:
        result.force_target = float(force["target_N"])
        result.force_capacity = float(force["capacity_N"])
        result.squeeze_per_jaw = _number(force.get("squeeze_per_jaw_N"))
        result.force_within_tolerance = bool(force.get("within_tolerance"))
        result.peak_while_closing = float(force.get("peak_while_closing_N") or 0.0)
    else:
        result.force_target = result.force_capacity = result.squeeze_per_jaw = math.nan
        result.peak_while_closing = math.nan
    targets = report.get("jaw_targets_N")
    if targets is None and force:  # one target for each jaw
        targets = [force["target_N"]] * len(jaws)
    result.jaw_targets = [float(t) for t in targets or []]
    result.jaw_peaks = [float(f) for f in report.get("jaw_peaks_N") or []]
    result.strain_peak = _number(report.get("strain_peak"))
    place = report.get("place") or {}
    result.support_by = str(place.get("support_by") or "")
    result.place_error = _number(place.get("error_cm"), 0.01)
    result.place_tilt = _number(place.get("tilt_deg"), math.pi / 180.0)
    result.witnesses = [
        witness(name, judges, verdict)
        for judges, verdicts in (("pick", report), ("place", place))
        for name in ("robot", "cube_pose", "object_pose")
        if (verdict := verdicts.get(name))
    ]
    result.close_mode = str(report.get("close_mode") or "")
    result.force_source = str((force or {}).get("source") or "")
    result.close_phase = str((force or {}).get("phase") or "")
    result.close_effort = _number((force or {}).get("effort_Nm"))
    return result


def witness(name: str, judges: str, verdict: dict) -> Witness:
    """One witness's verdict of an outcome report (a pick's lift or a place's error, in cm;
    a place's tilt in degrees) as the result's ``Witness``."""
    return Witness(
        name=name,
        judges=judges,
        outcome=str(verdict["outcome"]),
        reason=str(verdict.get("reason") or ""),
        lift=_number(verdict.get("lift_cm"), 0.01),
        error=_number(verdict.get("error_cm"), 0.01),
        tilt=_number(verdict.get("tilt_deg"), math.pi / 180.0),
    )


def hand_result_from_report(report: dict, fingers: tuple[str, ...], duration: float) -> Pick.Result:
    """The typed result of the hand pick's outcome report (``hand_pick/outcome``): its numbers
    put where the jaw pick's are -- the rise as the lift, the fingers as the jaws, the squeeze
    the sum of the three final forces, each finger's target in ``jaw_targets`` and, in the
    one-target fields, the largest finger target and the smallest finger capacity, the mean
    final force, all three within tolerance, the largest peak; the object's peak strain. A
    crushed object is no constant of the result: ABORTED, the reason saying so."""
    force = report.get("force") or {}
    targets, final = force.get("targets_N"), force.get("final_N") or []
    as_jaw = {
        **{k: report.get(k) for k in ("outcome", "reason", "abort_reason", "state", "close_s")},
        "judged_by": None if report.get("judged_by") is None else "object_pose",
        "lift_cm": report.get("rise_cm"),
        "squeeze_N": sum(final) if report.get("close_s") is not None else None,
        "jaw_forces_N": final,
        "ik_error_mm": report.get("ik_error_mm"),
        "jaw_targets_N": targets,
        "jaw_peaks_N": force.get("peak_while_closing_N"),
        "strain_peak": report.get("strain_peak"),
        "close_mode": "force",
    }
    if report.get("verdict") is not None:  # the object pose's own verdict
        as_jaw["object_pose"] = {
            "outcome": report["verdict"],
            "reason": report.get("verdict_reason"),
            "lift_cm": report.get("rise_cm"),
        }
    if targets:
        as_jaw["force"] = {
            "target_N": max(targets),
            "capacity_N": min(force.get("capacity_N") or [math.nan]),
            "squeeze_per_jaw_N": sum(final) / len(final) if final else None,
            "within_tolerance": all(force.get("within_tolerance") or [False]),
            "peak_while_closing_N": max(force.get("peak_while_closing_N") or [0.0]),
            "source": "planner",
        }
    return result_from_report(as_jaw, fingers, duration)


def refusal(reason: str) -> dict:
    """The outcome report of a goal refused before anything moved (any pick node's)."""
    return {"outcome": "rejected", "reason": reason, "state": "rejected"}
