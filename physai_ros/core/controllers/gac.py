"""The gripper action controller's semantics, once, for every backend.

``control_msgs/action/GripperCommand`` as ros2_controllers' GripperActionController served it
(removed in 5.0; its rules live on unchanged in Kilted's parallel_gripper_action_controller
5.17.0, ``parallel_gripper_action_controller_impl.hpp``): a goal drives the jaw to
``position`` with ``max_effort``; it succeeds with ``reached_goal`` once
``|goal − position| < goal_tolerance``; a jaw slower than ``stall_velocity_threshold`` for
``stall_timeout`` since it last moved has ``stalled``, which succeeds with ``allow_stalling``
and aborts without it; after either the jaw keeps its goal and effort (a grasp keeps
squeezing). A new goal cancels the running one; a cancel holds the measured position with the
default effort.

Deliberate differences (docs/controllers.md): goals with a non-finite position or effort, or a
position outside the jaw's range, are rejected (upstream accepts anything); feedback is
published (upstream never does); ``stop(reason)`` aborts the goal on a fault. Pure.

One addition for grippers that move at a commanded speed (the Franka Hand's ``move``/``grasp``):
a goal may give ``max_speed`` (default ``GacParams.max_speed``); the setpoint then travels from
the measured position to the goal at that speed instead of jumping there (and keeps travelling
after the goal ended, so a grasp that stalled on an object keeps closing onto it), and a jaw
moving at half that speed or more is not taken for stalled. Without it (max_speed 0, the
default) nothing changes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from physai_ros.core.controllers.jtc import NOT_RUNNING, Rejected
from physai_ros.errors import InvalidInput


class GripperEnd(NamedTuple):
    """How a gripper goal ended (status succeeded | aborted | canceled) and its result."""

    goal_id: object
    status: str
    position: float
    effort: float
    stalled: bool
    reached_goal: bool
    message: str


@dataclass(frozen=True)
class GacParams:
    """joint, lower, upper [rad | m]: the jaw and its range; goal_tolerance [rad | m];
    allow_stalling; stall_velocity_threshold [rad/s | m/s]; stall_timeout [s]; max_effort:
    effort used when a goal gives 0 and when holding after a cancel [N·m | N]; max_speed
    [rad/s | m/s]: how fast the setpoint travels to a goal that gives no speed (0 = it jumps,
    as upstream's)."""

    joint: str
    lower: float
    upper: float
    goal_tolerance: float = 0.01
    allow_stalling: bool = False
    stall_velocity_threshold: float = 0.001
    stall_timeout: float = 1.0
    max_effort: float = 1.0
    max_speed: float = 0.0

    def __post_init__(self) -> None:
        if not self.lower < self.upper:
            raise InvalidInput(f"gripper range [{self.lower}, {self.upper}] is empty")
        for name in (
            "goal_tolerance",
            "stall_velocity_threshold",
            "stall_timeout",
            "max_effort",
            "max_speed",
        ):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0.0):
                raise InvalidInput(f"{name} must be finite and >= 0, got {value!r}")


def goal_effort(max_effort: float, default: float) -> float:
    """The effort [N·m | N] a goal's ``max_effort`` sets (the sim writes it as the jaw actuator's
    force range): itself when > 0, else ``default``, the controller's (the hardware's cap), as
    ros2_controllers' GripperActionController reads 0. In-process runners that step MuJoCo
    themselves call this too, so their jaw squeezes as over ROS."""
    return float(max_effort) if max_effort > 0.0 else float(default)


def gac_params(cfg: dict, joint: str, lower: float, upper: float, effort: float) -> GacParams:
    """From a ``gripper_controller`` section as YAML holds it; a ``max_effort`` of 0 (or none)
    means ``effort``, the hardware's own cap."""
    return GacParams(
        joint=joint,
        lower=float(lower),
        upper=float(upper),
        goal_tolerance=float(cfg.get("goal_tolerance", 0.01)),
        allow_stalling=bool(cfg.get("allow_stalling", False)),
        stall_velocity_threshold=float(cfg.get("stall_velocity_threshold", 0.001)),
        stall_timeout=float(cfg.get("stall_timeout", 1.0)),
        max_effort=float(cfg.get("max_effort", 0.0)) or float(effort),
        max_speed=float(cfg.get("max_speed", 0.0)),
    )


class GripperActionController:
    """One jaw. Not thread-safe: the caller holds one lock around every call."""

    def __init__(self, params: GacParams) -> None:
        self.p = params
        self.active = False
        self.setpoint = 0.0  # [rad | m] commanded jaw position (travels to target)
        self.target = 0.0  # [rad | m] the goal's position
        self.max_speed = math.inf  # [rad/s | m/s] how fast the setpoint travels to the target
        self.updated = 0.0  # [s] time of the last update
        self.effort = params.max_effort  # [N·m | N] commanded effort cap
        self.goal_id: object | None = None
        self.position = 0.0
        self.velocity = 0.0
        self.last_movement = 0.0  # [s] when the jaw last moved faster than the threshold
        self.inactive_reason = ""

    def activate(
        self, now: float, position: float, hold: float | None = None, effort: float | None = None
    ) -> None:
        """Hold the measured position (or ``hold``, the goal the jaw already has) with the
        default effort (or ``effort``, the one the jaw already squeezes with)."""
        self.position = position
        self.setpoint = self.target = position if hold is None else float(hold)
        self.max_speed = math.inf
        self.effort = self.p.max_effort if effort is None else float(effort)
        self.last_movement = self.updated = now
        self.active, self.inactive_reason = True, ""

    def deactivate(self, reason: str = "") -> list[GripperEnd]:
        ends = self._end("aborted", reason or "controller deactivated")
        self.active, self.inactive_reason = False, reason
        return ends

    def stop(self, reason: str) -> list[GripperEnd]:
        """A fault or a stop request: abort the goal, hold the measured position."""
        ends = self._end("aborted", reason)
        self._hold(self.position)
        return ends

    def _hold(self, position: float) -> None:
        self.setpoint = self.target = position
        self.max_speed = math.inf

    @property
    def travelling(self) -> bool:
        """Whether the setpoint is still on its way to the target (needs ``update`` calls)."""
        return self.setpoint != self.target

    def check(self, position: float, max_effort: float, max_speed: float | None = None) -> None:
        """Raise ``Rejected`` unless the goal can be executed (``max_speed`` [rad/s | m/s]:
        > 0, inf = the setpoint jumps to the goal, None = ``p.max_speed``)."""
        if not self.active:
            raise Rejected(
                NOT_RUNNING + (f" ({self.inactive_reason})" if self.inactive_reason else "")
            )
        if not math.isfinite(position) or not self.p.lower <= position <= self.p.upper:
            raise Rejected(
                f"gripper position {position!r} outside the {self.p.joint} range "
                f"[{self.p.lower:.4f}, {self.p.upper:.4f}]"
            )
        if not math.isfinite(max_effort) or max_effort < 0.0:
            raise Rejected(f"gripper max_effort {max_effort!r} must be finite and >= 0")
        if max_speed is not None and not max_speed > 0.0:  # NaN fails too
            raise Rejected(f"gripper max_speed {max_speed!r} must be > 0")

    def accept(
        self,
        goal_id: object,
        position: float,
        max_effort: float,
        now: float,
        max_speed: float | None = None,
    ):
        """Start a goal (after ``check``); the running one ends CANCELED. With a finite
        ``max_speed`` (None: ``p.max_speed``) the setpoint starts at the measured position and
        travels to ``position`` at that speed."""
        ends = self._end("canceled", "preempted by a new gripper goal")
        if max_speed is None:
            max_speed = self.p.max_speed or math.inf
        self.goal_id = goal_id
        self.target = float(position)
        self.max_speed = float(max_speed)
        self.setpoint = self.target if math.isinf(self.max_speed) else self.position
        self.effort = goal_effort(max_effort, self.p.max_effort)
        self.last_movement = self.updated = now
        return ends

    def cancel(self, goal_id: object) -> list[GripperEnd]:
        if goal_id is None or goal_id != self.goal_id:
            return []
        ends = self._end("canceled", "canceled")
        self._hold(self.position)
        self.effort = self.p.max_effort
        return ends

    def update(self, now: float, position: float, velocity: float) -> list[GripperEnd]:
        """One cycle: measure, move the setpoint on, judge the goal (``setpoint``/``effort``
        are the command)."""
        self.position, self.velocity = float(position), float(velocity)
        if self.travelling and self.active:
            step = self.max_speed * max(now - self.updated, 0.0)
            gap = self.target - self.setpoint
            self.setpoint = (
                self.target if abs(gap) <= step else self.setpoint + math.copysign(step, gap)
            )
        self.updated = now
        if self.goal_id is None or not self.active:
            return []
        if abs(self.target - self.position) < self.p.goal_tolerance:
            return self._end("succeeded", "reached the goal", reached=True)
        if abs(self.velocity) > min(self.p.stall_velocity_threshold, 0.5 * self.max_speed):
            self.last_movement = now
        elif now - self.last_movement > self.p.stall_timeout:
            status = "succeeded" if self.p.allow_stalling else "aborted"
            return self._end(status, f"stalled at {self.position:.4f}", stalled=True)
        return []

    def _end(
        self, status: str, message: str, stalled: bool = False, reached: bool = False
    ) -> list[GripperEnd]:
        if self.goal_id is None:
            return []
        end = GripperEnd(
            self.goal_id, status, self.position, self.effort, stalled, reached, message
        )
        self.goal_id = None
        return [end]
