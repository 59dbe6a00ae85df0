"""Jaw contact of a real SO-101 gripper, inferred from its one servo (no contact sensor exists).

Model. The gripper is a position servo told to close past the object. While it closes on air
the jaw follows the goal: small position error, small load, speed. When the jaws meet an
object the jaw stops short of the goal: the servo then pushes with its torque limit, the
position error stays large and the speed drops to zero. So contact is declared when, for
``confirm_time`` seconds, all three hold:

* ``q - q_goal > min_error`` -- the goal lies further in the closing direction (closing =
  decreasing joint angle on the SO-101) than the jaw is: something holds it open;
* ``|q̇| < still_speed`` -- the jaw has stopped;
* the load in the closing direction ``τ_c ≥ max(load_fraction · τ_limit, min_load)`` -- it
  pushes at (most of) its torque limit. ``Present_Load`` is sign-magnitude (bit 10 = sign) in
  0.1 % of the stall torque; the backend has decoded it to newton-metres.

It is released when the error falls below ``min_error / 2`` or the load below half its
threshold (hysteresis, so the estimate does not chatter). A parallel gripper with one servo
cannot tell the jaws apart: when the moving jaw presses with ``τ/r`` the fixed jaw pushes back
just as hard (lesson 16: ``N1 + N2 = 2τ/r``), so both jaws get the same normal force estimate
``N = (τ_c - τ_f) / r_jaw`` (``jaw_normal``): ``r_jaw`` is the moment arm of the contact about
the gripper axis, ``τ_f`` the part of the servo's torque its own gear friction takes while the
jaw is stalled closing. Both are a calibration: derived from the model at the pick's grasp and
checked against the emulator's true contact forces by ``physai_ros.robots.so101.jaw_lever``
(docs/real_so101.md, "Jaw force calibration").

Pure Python; thresholds come from ``config/so101_driver.yaml``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from physai_ros.core.pick.grip import G, cone_ratio
from physai_ros.errors import InvalidInput


@dataclass(frozen=True)
class JawModel:
    """Thresholds of the contact estimate (units in the names)."""

    min_error_rad: float = 0.05
    still_speed_rad_s: float = 0.05
    load_fraction: float = 0.6
    min_load_nm: float = 0.03
    confirm_time_s: float = 0.05
    jaw_moment_arm_m: float = 0.0718
    friction_torque_nm: float = 0.026
    closing_sign: float = -1.0  # closing decreases the joint angle

    def __post_init__(self) -> None:
        for name in ("min_error_rad", "still_speed_rad_s", "jaw_moment_arm_m"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise InvalidInput(f"jaw model {name} must be > 0, got {value!r}")
        if not (math.isfinite(self.friction_torque_nm) and self.friction_torque_nm >= 0.0):
            raise InvalidInput(f"friction_torque_nm must be ≥ 0, got {self.friction_torque_nm!r}")
        if not 0.0 < self.load_fraction <= 1.0:
            raise InvalidInput(f"load_fraction must be in (0, 1], got {self.load_fraction!r}")
        if self.closing_sign not in (-1.0, 1.0):
            raise InvalidInput(f"closing_sign must be ±1, got {self.closing_sign!r}")


class JawEstimate(NamedTuple):
    """contact: both jaws judged touching; normal_n: estimated normal force per jaw [N];
    closing_torque_nm: servo torque in the closing direction [N·m]."""

    contact: bool
    normal_n: float
    closing_torque_nm: float


def jaw_normal(closing_torque: float, model: JawModel) -> float:
    """Normal force per jaw [N] of a jaw stalled on an object with ``closing_torque`` [N·m].

    The stalled servo's torque goes into the contact (lever ``jaw_moment_arm_m``) and into its
    own gear friction; friction opposed the closing and, once still, may hold anything between
    0 and its full value, so ``friction_torque_nm`` is a midpoint and the error it leaves is
    at most that torque over the lever.
    """
    return max(closing_torque - model.friction_torque_nm, 0.0) / model.jaw_moment_arm_m


class JawContactEstimator:
    """Stateful (hysteresis and confirmation time); call ``update`` once per bus cycle."""

    def __init__(self, model: JawModel) -> None:
        self.model = model
        self.contact = False
        self._pending = 0.0

    def reset(self) -> None:
        self.contact = False
        self._pending = 0.0

    def update(
        self,
        position: float,
        goal: float,
        speed: float,
        torque: float,
        torque_limit: float,
        dt: float,
    ) -> JawEstimate:
        """position, goal [rad]; speed [rad/s]; torque: servo torque [N·m] (sign of the joint
        axis); torque_limit: the servo's present cap [N·m]; dt: time since the last call [s]."""
        m = self.model
        sign = m.closing_sign
        error = sign * (goal - position)  # > 0: the goal lies further closed than the jaw
        closing_torque = sign * torque
        threshold = max(m.load_fraction * torque_limit, m.min_load_nm)
        if self.contact:
            if error < 0.5 * m.min_error_rad or closing_torque < 0.5 * threshold:
                self.reset()
        else:
            if (
                error > m.min_error_rad
                and abs(speed) < m.still_speed_rad_s
                and (closing_torque >= threshold)
            ):
                self._pending += dt
                self.contact = self._pending >= m.confirm_time_s
            else:
                self._pending = 0.0
        normal = jaw_normal(closing_torque, m) if self.contact else 0.0
        return JawEstimate(self.contact, normal, closing_torque)


def least_squeeze_torque(
    mass_kg: float,
    mu: float,
    lift_accel: float,
    margin: float,
    jaw_moment_arm_m: float,
    friction_torque_nm: float = 0.0,
) -> float:
    """Smallest servo torque [N·m] whose squeeze still carries the object with ``margin``.

    Friction cone of an antipodal grip (``physai_ros.core.pick.grip``): it holds while
    ``μ (N1 + N2) ≥ m (g + a)``; a stalled parallel jaw squeezes ``N1 + N2 = 2 (τ - τ_f) / r``
    (``jaw_normal``). So ``τ = margin · m (g + a) r / (2 μ) + τ_f``; the result is checked
    against ``cone_ratio``.
    """
    if not (math.isfinite(margin) and margin >= 1.0):
        raise InvalidInput(f"margin must be ≥ 1 (1 = exactly on the cone), got {margin!r}")
    if not (math.isfinite(lift_accel) and lift_accel >= 0.0):
        raise InvalidInput(f"lift_accel must be finite and ≥ 0 [m/s²], got {lift_accel!r}")
    if not (math.isfinite(mu) and mu > 0.0):
        raise InvalidInput(f"mu must be > 0, got {mu!r}")
    squeeze = margin * mass_kg * (G + lift_accel) / mu
    torque = squeeze * jaw_moment_arm_m / 2.0 + friction_torque_nm
    ratio = cone_ratio(mu, [squeeze / 2.0, squeeze / 2.0], mass_kg, accel=lift_accel)
    if not math.isclose(ratio, margin, rel_tol=1e-9):
        raise InvalidInput(f"squeeze {squeeze} N gives cone ratio {ratio}, not {margin}")
    return torque


class GripperMonitor:
    """GripperCommand outcome as ros2_controllers' gripper controller judges it: reached when
    within ``goal_tolerance`` [rad]; stalled when slower than ``stall_speed`` [rad/s] for
    ``stall_time`` [s] away from the goal."""

    def __init__(self, goal_tolerance: float, stall_speed: float, stall_time: float) -> None:
        self.goal_tolerance = goal_tolerance
        self.stall_speed = stall_speed
        self.stall_time = stall_time
        self._still = 0.0

    def reset(self) -> None:
        self._still = 0.0

    def update(self, position: float, goal: float, speed: float, dt: float) -> tuple[bool, bool]:
        """(reached_goal, stalled) after one cycle of ``dt`` [s]."""
        if abs(position - goal) <= self.goal_tolerance:
            self._still = 0.0
            return True, False
        self._still = self._still + dt if abs(speed) < self.stall_speed else 0.0
        return False, self._still >= self.stall_time
