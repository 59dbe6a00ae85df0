"""libfranka-style rate limiting of a command stream, with a report of what was clipped.

libfranka's ``limitRate`` (``rate_limiting.h``) makes every command valid for the robot: from
the last commanded velocity and acceleration it clips the commanded jerk, then the acceleration
(to ±a_max, and tighter near the velocity limit so the joint can still stop at ``v_max``), and
integrates. That keeps the robot running, but clipping is not smoothing: a jumping reference
becomes a different, unplanned motion. The report says how much, so the caller can plan a
smooth reference instead (:func:`physai_ros.core.motion.limits.plan_move`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from physai_ros.errors import InvalidInput

if TYPE_CHECKING:
    from physai_ros.core.motion.limits import JointLimits

KINDS = ("position", "velocity", "torque")


class RateReport(NamedTuple):
    """Per joint: steps clipped by each limit and the largest |limited − commanded|
    (units of the command: rad, rad/s or N·m)."""

    joint_names: tuple[str, ...]
    clipped_steps: dict[str, np.ndarray]
    max_deviation: np.ndarray

    @property
    def clipped(self) -> bool:
        """Whether anything was changed."""
        return any(int(v.sum()) for v in self.clipped_steps.values())

    def __str__(self) -> str:
        parts = [
            f"{name} {limit}: {int(n)} steps"
            for limit, counts in self.clipped_steps.items()
            for name, n in zip(self.joint_names, counts, strict=True)
            if n
        ]
        return "; ".join(parts) if parts else "nothing clipped"


class RateLimited(NamedTuple):
    """The limited command stream ``(n_steps, n_joints)`` and the report."""

    commands: np.ndarray
    report: RateReport


def _limit_velocity(
    v_cmd: np.ndarray, v_last: np.ndarray, a_last: np.ndarray, lim: JointLimits, dt: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One libfranka step on velocities → (v, a, jerk clipped, accel clipped, velocity clipped)."""
    vmax, amax, jmax = lim.velocity, lim.acceleration, lim.jerk
    jerk = ((v_cmd - v_last) / dt - a_last) / dt
    a = a_last + np.clip(jerk, -jmax, jmax) * dt
    with np.errstate(invalid="ignore"):  # inf/inf where a joint is unlimited
        ratio = np.where(np.isfinite(jmax / amax), jmax / amax, np.inf)
        a_hi = np.minimum(np.nan_to_num(ratio * (vmax - v_last), nan=np.inf), amax)
        a_lo = np.maximum(np.nan_to_num(ratio * (-vmax - v_last), nan=-np.inf), -amax)
    a_safe = np.clip(a, a_lo, a_hi)
    by_velocity = (a_safe != a) & ((a_hi < amax) | (a_lo > -amax))
    return (
        v_last + a_safe * dt,
        a_safe,
        np.abs(jerk) > jmax,
        (a_safe != a) & ~by_velocity,
        by_velocity,
    )


def limit_rate(
    commands: np.ndarray,
    limits: JointLimits,
    kind: str = "position",
    dt: float | None = None,
    initial: np.ndarray | None = None,
) -> RateLimited:
    """Clip a command stream ``(n_steps, n_joints)`` step by step, as libfranka would.

    kind: "position" [rad] (velocity = difference / dt), "velocity" [rad/s], or "torque" [N·m]
        (only the torque rate is limited). The robot starts at rest at ``initial`` (default:
        the first command). dt: control period [s] (default: the limits' period).
    """
    if kind not in KINDS:
        raise InvalidInput(f"unknown command kind {kind!r}; valid: {list(KINDS)}")
    cmd = np.asarray(commands, dtype=float)
    n = len(limits.joint_names)
    if cmd.ndim != 2 or cmd.shape[1] != n or not np.all(np.isfinite(cmd)):
        raise InvalidInput(
            f"commands must be finite with shape (steps, {n}) for {limits.joint_names}"
        )
    dt = dt or limits.control_period
    out = np.empty_like(cmd)
    counts = {
        k: np.zeros(n, dtype=int) for k in ("jerk", "acceleration", "velocity", "torque_rate")
    }
    last = cmd[0].copy() if initial is None else np.asarray(initial, dtype=float).copy()
    v_last, a_last = np.zeros(n), np.zeros(n)
    for k, c in enumerate(cmd):
        if kind == "torque":
            rate = (c - last) / dt
            counts["torque_rate"] += np.abs(rate) > limits.torque_rate
            last = last + np.clip(rate, -limits.torque_rate, limits.torque_rate) * dt
            out[k] = last
            continue
        v_cmd = (c - last) / dt if kind == "position" else c
        v, a, cj, ca, cv = _limit_velocity(v_cmd, v_last, a_last, limits, dt)
        counts["jerk"] += cj
        counts["acceleration"] += ca
        counts["velocity"] += cv
        v_last, a_last = v, a
        last = last + v * dt if kind == "position" else v
        out[k] = last
    used = {k: v for k, v in counts.items() if (k == "torque_rate") == (kind == "torque")}
    report = RateReport(tuple(limits.joint_names), used, np.abs(out - cmd).max(axis=0))
    return RateLimited(out, report)


class BoundedStep(NamedTuple):
    """One command bounded by ``limit_step``: the command [rad] and, per joint, whether the
    bound changed it."""

    command: np.ndarray
    clipped: np.ndarray


def limit_step(
    last: np.ndarray, target: np.ndarray, velocity: np.ndarray, dt: float
) -> BoundedStep:
    """The command nearest ``target`` [rad] that is at most ``velocity``·``dt`` from ``last``
    [rad] on every joint: the velocity bound of :func:`limit_rate` for one step of any length
    (a command stream whose sends are not evenly spaced: a late bus cycle, a lost read).
    velocity [rad/s] per joint (inf = not bounded); dt [s] since ``last`` was sent."""
    last = np.asarray(last, dtype=float)
    target = np.asarray(target, dtype=float)
    velocity = np.broadcast_to(np.asarray(velocity, dtype=float), last.shape)
    if not (math.isfinite(dt) and dt >= 0.0):
        raise InvalidInput(f"dt must be finite and >= 0 [s], got {dt!r}")
    if target.shape != last.shape or not np.all(np.isfinite(last) & np.isfinite(target)):
        raise InvalidInput(f"last and target must be finite with one shape, got {last}, {target}")
    if np.any(np.isnan(velocity) | (velocity < 0.0)):
        raise InvalidInput(f"velocity limits must be >= 0 [rad/s], got {velocity}")
    with np.errstate(invalid="ignore"):  # inf·0 where a joint is unbounded
        bound = np.where(np.isinf(velocity), np.inf, velocity * dt)
    step = target - last
    clipped = np.abs(step) > bound
    return BoundedStep(np.where(clipped, last + np.clip(step, -bound, bound), target), clipped)
