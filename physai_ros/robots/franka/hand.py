"""The Franka Hand's commands as goals for the shared gripper controller, and their verdicts.

franka_gripper (franka_ros2 ``franka_gripper/src/gripper_action_server.cpp``, the same from
v0.1.13 to v3.4.0) puts libfranka's ``Gripper::homing/move/grasp`` behind four actions; this
module gives each the meaning it has there, in terms of ``GripperActionController`` goals
(``physai_ros.core.controllers.gac``: a finger position, an effort cap, a speed), so that the
simulated hand is the shared controller and not a second gripper:

* widths are between the fingers [m] (twice a finger's position), speeds are of the width;
* ``homing``: open fully (the real hand also closes once first, to measure its width);
* ``move(width, speed)``: succeeds when the width is reached, fails when blocked short of it;
* ``grasp(width, speed, force, epsilon)``: closes at ``speed`` until the fingers stop (on an
  object, or on each other) and squeezes with ``force`` [N] per finger; succeeds iff the
  width where they stopped satisfies ``width - epsilon.inner < d < width + epsilon.outer``
  (libfranka's rule);
* ``gripper_command(position, max_effort)`` (control_msgs GripperCommand on ``gripper_action``):
  ``position`` is per finger; opening is a move and closing a grasp at the default speed and
  epsilons with ``max_effort`` as the force; the result's ``position`` is the whole width.

Failures read as libfranka's exceptions (``libfranka gripper: Command failed!``) with the
reason added; where the real gripper fails silently (a grasp that missed: ``success`` false,
``error`` empty) the reason is given anyway. The real hand squeezes with at least about 30 N
whatever ``force`` says (libfranka issue #111): smaller forces are raised to ``min_force``
with a warning, forces above ``max_force`` fail. Pure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from physai_ros.core.controllers.gac import GripperEnd
from physai_ros.errors import InvalidInput

COMMAND_FAILED = "libfranka gripper: Command failed!"
COMMAND_ABORTED = "libfranka gripper: Command aborted!"
SAME_WIDTH = 1e-4  # [m] franka_gripper's kSamePositionThreshold: a GripperCommand already there


class CommandFailed(InvalidInput):
    """A command the hand refuses; the message reads as libfranka's."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"{COMMAND_FAILED} ({reason})")


@dataclass(frozen=True)
class HandSpec:
    """The Franka Hand: max_width [m] between the fingers; max_speed [m/s] of the width;
    min_force [N]: the least it squeezes with; continuous_force, max_force [N]."""

    max_width: float
    max_speed: float
    min_force: float
    continuous_force: float
    max_force: float

    def __post_init__(self) -> None:
        values = (self.max_width, self.max_speed, self.min_force, self.max_force)
        if not all(math.isfinite(v) and v > 0.0 for v in values) or not (
            self.min_force <= self.continuous_force <= self.max_force
        ):
            raise InvalidInput(f"inconsistent Franka Hand data: {self}")

    @classmethod
    def from_config(cls, cfg: dict, max_width: float) -> HandSpec:
        """From ``config/sim_robots.yaml``'s ``franka_hand`` section; the width is the model's."""
        return cls(
            max_width=float(max_width),
            max_speed=float(cfg["max_speed"]),
            min_force=float(cfg["min_force"]),
            continuous_force=float(cfg["continuous_force"]),
            max_force=float(cfg["max_force"]),
        )


@dataclass(frozen=True)
class HandFloor:
    """The least squeeze of the Franka Hand [N per finger]: it squeezes with at least
    ``min_force`` whatever a grasp asks (libfranka issue #111), so a planned target below it is
    raised to it (the pick's counterpart of the SO-101's ``force_plan.JawFloor``)."""

    min_force: float

    @property
    def force(self) -> float:
        return self.min_force

    @property
    def why(self) -> str:
        return (
            f"below the {self.min_force:g} N the Franka Hand squeezes with at least "
            "(libfranka issue #111)"
        )

    @staticmethod
    def contact_fault(_contact: float) -> str | None:
        """None: a grasp has no contact phase of the pick's to check (the hand closes at its
        speed, then squeezes)."""
        return None


class HandGoal(NamedTuple):
    """A Franka Hand command as a gripper controller goal.

    kind: homing | move | grasp; position [m per finger], effort (the controller's max_effort,
    0 = its default), max_speed [m/s per finger]: the goal; width [m], inner, outer [m]: what
    a grasp is judged by; warnings: what was changed to make the command executable."""

    kind: str
    position: float
    effort: float
    max_speed: float
    width: float
    inner: float = 0.0
    outer: float = 0.0
    warnings: tuple[str, ...] = ()


class FrankaHand:
    """Translates one hand's commands. ``force_per_effort`` [N per unit of effort]: what one
    finger presses with per unit of the gripper actuator's effort (``MujocoSim.
    gripper_force_per_effort``)."""

    def __init__(self, spec: HandSpec, force_per_effort: float) -> None:
        if not (math.isfinite(force_per_effort) and force_per_effort > 0.0):
            raise InvalidInput(f"force_per_effort must be > 0, got {force_per_effort!r}")
        self.spec, self.force_per_effort = spec, force_per_effort

    # --- the commands ------------------------------------------------------------------
    def homing(self, speed: float) -> HandGoal:
        """Open to the full width at ``speed`` [m/s]."""
        return self.move(self.spec.max_width, speed)._replace(kind="homing")

    def move(self, width: float, speed: float) -> HandGoal:
        """Go to ``width`` [m] at ``speed`` [m/s]; raises ``CommandFailed``."""
        self._check_width(width)
        speed, warnings = self._speed(speed)
        return HandGoal("move", width / 2.0, 0.0, speed / 2.0, width, warnings=warnings)

    def grasp(self, width: float, speed: float, force: float, inner: float, outer: float):
        """Close at ``speed`` until stopped, squeeze with ``force`` [N]; raises
        ``CommandFailed``."""
        self._check_width(width)
        for name, value in (("epsilon.inner", inner), ("epsilon.outer", outer)):
            if not (math.isfinite(value) and value >= 0.0):
                raise CommandFailed(f"{name} {value!r} must be finite and >= 0 [m]")
        speed, warnings = self._speed(speed)
        force, more = self._force(force)
        effort = force / self.force_per_effort
        return HandGoal("grasp", 0.0, effort, speed / 2.0, width, inner, outer, warnings + more)

    def gripper_command(
        self,
        position: float,
        max_effort: float,
        current_width: float,
        speed: float,
        inner: float,
        outer: float,
    ) -> HandGoal | None:
        """franka_gripper's GripperCommand: ``position`` per finger [m]; None when the hand is
        there already (franka_gripper then succeeds at once); raises ``CommandFailed``."""
        width = 2.0 * position
        self._check_width(width)
        if abs(width - current_width) < SAME_WIDTH:
            return None
        if width >= current_width:
            return self.move(width, speed)
        return self.grasp(width, speed, max_effort, inner, outer)

    # --- the verdict -------------------------------------------------------------------
    @staticmethod
    def judge(goal: HandGoal, end: GripperEnd) -> tuple[bool, str]:
        """(success, error) of a command whose controller goal ended with ``end``."""
        d = 2.0 * end.position
        if end.status == "canceled":
            return False, f"{COMMAND_ABORTED} ({end.message})"
        if not (end.stalled or end.reached_goal):  # a fault, a reset
            return False, f"{COMMAND_ABORTED} ({end.message})"
        if goal.kind == "grasp":
            low, high = goal.width - goal.inner, goal.width + goal.outer
            if low < d < high:
                return True, ""
            return False, (
                f"grasp failed: the fingers stopped at a width of {d:.4f} m, outside "
                f"({low:.4f}, {high:.4f}) m = (width - epsilon.inner, width + epsilon.outer)"
            )
        if end.reached_goal:
            return True, ""
        return False, (
            f"{COMMAND_FAILED} (blocked at a width of {d:.4f} m, {abs(goal.width - d):.4f} m "
            f"short of {goal.width:.4f} m)"
        )

    # --- checks ------------------------------------------------------------------------
    def _check_width(self, width: float) -> None:
        if not (math.isfinite(width) and 0.0 <= width <= self.spec.max_width):
            raise CommandFailed(
                f"width {width!r} m is outside the hand's range [0, {self.spec.max_width:.4f}] m"
            )

    def _speed(self, speed: float) -> tuple[float, tuple[str, ...]]:
        if not (math.isfinite(speed) and speed > 0.0):
            raise CommandFailed(f"speed {speed!r} m/s must be > 0")
        if speed > self.spec.max_speed:
            text = (
                f"speed {speed:g} m/s above the hand's {self.spec.max_speed:g} m/s: moving at that"
            )
            return self.spec.max_speed, (text,)
        return speed, ()

    def _force(self, force: float) -> tuple[float, tuple[str, ...]]:
        spec = self.spec
        if not (math.isfinite(force) and force >= 0.0):
            raise CommandFailed(f"force {force!r} N must be finite and >= 0")
        if force > spec.max_force:
            raise CommandFailed(f"force {force:g} N is above the hand's {spec.max_force:g} N")
        if force < spec.min_force:
            text = (
                f"force {force:g} N below the {spec.min_force:g} N the real Franka Hand squeezes "
                f"with at least (libfranka issue #111): squeezing with {spec.min_force:g} N"
            )
            return spec.min_force, (text,)
        if force > spec.continuous_force:
            text = (
                f"force {force:g} N above the hand's {spec.continuous_force:g} N continuous "
                f"rating (at most {spec.max_force:g} N, briefly)"
            )
            return force, (text,)
        return force, ()
