"""A planned trajectory goal: the continuous reference made of rest-to-rest segments, its
samples for the controller, and the last gate every sample passes before it is sent.

Split from :mod:`physai_ros.core.motion.goal_timing` (which decides the timing) so that what a plan
*is* can be read, and used (the trajectory node, :mod:`physai_ros.core.motion.tracking`),
without the planner. Pure numpy: no rclpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from physai_ros.core.motion.limits import RATE_NAMES, RTOL, UNITS, JointLimits, Peaks, Reference
from physai_ros.errors import LimitViolation


@dataclass(frozen=True)
class Stretched:
    """``base`` slowed down by ``factor`` ≥ 1: the r-th derivative scales by ``1/factor^r``."""

    base: Reference
    factor: float

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self.base.joint_names

    @property
    def duration(self) -> float:
        return self.base.duration * self.factor

    def __call__(self, t: np.ndarray | float, order: int = 0) -> np.ndarray:
        t = np.atleast_1d(np.asarray(t, dtype=float))
        return self.base(t / self.factor, order) / self.factor**order


@dataclass(frozen=True)
class PiecewiseReference:
    """Rest-to-rest segments one after the other; segment k runs from ``starts[k]`` [s].

    Each segment is at rest outside its own interval, so the sum of segments is continuous and
    every derivative is the one of the segment that owns the time.
    """

    joint_names: tuple[str, ...]
    segments: tuple[Reference, ...]
    starts: np.ndarray

    @property
    def duration(self) -> float:
        return float(self.starts[-1] + self.segments[-1].duration)

    def __call__(self, t: np.ndarray | float, order: int = 0) -> np.ndarray:
        t = np.atleast_1d(np.asarray(t, dtype=float))
        k = np.clip(np.searchsorted(self.starts, t, side="right") - 1, 0, len(self.segments) - 1)
        out = np.empty((t.size, len(self.joint_names)))
        for i, segment in enumerate(self.segments):
            mask = k == i
            if mask.any():
                out[mask] = segment(t[mask] - self.starts[i], order)
        return out


@dataclass(frozen=True)
class PlannedTrajectory:
    """A goal ready to send: the continuous reference and its samples (controller order).

    times [s] from the start (the first sample is one period in, or at the goal policy's
    first_point; t = 0 is the current state),
    positions [rad], velocities [rad/s], accelerations [rad/s²] of shape (N, n_joints); peaks:
    the reference's extremes as the robot samples it; timed_by: how the duration was chosen.
    """

    joint_names: tuple[str, ...]
    reference: PiecewiseReference
    times: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    accelerations: np.ndarray
    peaks: Peaks
    timed_by: str
    shape: str

    @property
    def duration(self) -> float:
        return float(self.times[-1])

    @property
    def goal(self) -> np.ndarray:
        return self.positions[-1]

    def describe(self, limits: JointLimits) -> str:
        """One log line: shape, duration, and how close the binding limit is."""
        use = {
            name: getattr(self.peaks, name) / limits.rate(r)
            for r, name in enumerate(RATE_NAMES, start=1)
        }
        name = max(use, key=lambda k: float(np.max(use[k])))
        j = int(np.argmax(use[name]))
        return (
            f"{self.shape}, {len(self.reference.segments)} segment(s), {self.duration:.4f} s "
            f"({self.timed_by}), {len(self.times)} points; binding: {self.joint_names[j]} "
            f"{name} at {100 * use[name][j]:.1f} % of its limit (set {limits.set_name!r})"
        )


def check_samples(
    joint_names: Sequence[str],
    positions: np.ndarray,
    velocities: np.ndarray,
    accelerations: np.ndarray,
    limits: JointLimits,
) -> None:
    """The last gate before sending: every sample finite and inside position, velocity and
    acceleration limits (``limits`` in ``joint_names`` order). Raises ``LimitViolation``."""
    checks = (
        ("position", positions, None),
        ("velocity", velocities, limits.velocity),
        ("acceleration", accelerations, limits.acceleration),
    )
    for what, values, bound in checks:
        bad = np.argwhere(~np.isfinite(values))
        if bad.size:
            i, j = bad[0]
            raise LimitViolation(f"sample {i}: {what} of joint {joint_names[j]!r} is not finite")
        if bound is None:
            low = values < limits.position_min - RTOL
            high = values > limits.position_max + RTOL
            out = np.argwhere(low | high)
            if out.size:
                i, j = out[0]
                raise LimitViolation(
                    f"sample {i}: joint {joint_names[j]!r} position {values[i, j]:.4f} rad is "
                    f"outside [{limits.position_min[j]:.4f}, {limits.position_max[j]:.4f}] rad"
                )
            continue
        out = np.argwhere(np.abs(values) > bound * (1 + RTOL))
        if out.size:
            i, j = out[0]
            raise LimitViolation(
                f"sample {i}: joint {joint_names[j]!r} {what} {values[i, j]:.4g} {UNITS[what]} "
                f"exceeds its limit {bound[j]:.4g} {UNITS[what]} (set {limits.set_name!r})"
            )
