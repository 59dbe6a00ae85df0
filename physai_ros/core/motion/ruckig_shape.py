"""Time-optimal jerk-limited moves from Ruckig, as an alternative to a fixed time scaling.

A quintic is smooth but not fast: every joint follows the same ``s(u)``, so the move's duration
is set by whichever normalised peak hits its limit first, and the other limits are left unused.
Ruckig (Berscheid & Kröger, RSS 2021) computes the time-optimal profile under per-joint
velocity, acceleration and jerk limits (all joints synchronised to finish together), so it
saturates the binding limit for most of the move. The result has the same interface as
:class:`physai_ros.core.motion.time_scaling.ShapedMove`, so
:func:`physai_ros.core.motion.limits.check_trajectory`
checks it the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from physai_ros.core.motion.limits import JointLimits
from physai_ros.core.motion.time_scaling import JointMove
from physai_ros.errors import InvalidInput, PhysaiError

JERK_STEP = 1e-7  # [s] half-width of the difference that recovers the piecewise-constant jerk


def _ruckig():
    try:
        import ruckig
    except ImportError as err:
        raise PhysaiError(
            "the 'ruckig' package is needed for time-optimal moves: pip install ruckig"
        ) from err
    return ruckig


@dataclass(frozen=True)
class RuckigMove:
    """A time-optimal move: ``duration`` [s] and ``__call__(t, order)`` like ``ShapedMove``."""

    move: JointMove
    duration: float
    trajectory: object = field(repr=False)

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self.move.joint_names

    def _at(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        pos, vel, acc = self.trajectory.at_time(min(max(t, 0.0), self.duration))
        return np.asarray(pos), np.asarray(vel), np.asarray(acc)

    def __call__(self, t: np.ndarray | float, order: int = 0) -> np.ndarray:
        """``order``-th derivative at times ``t`` [s]; at rest outside ``[0, duration]``."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        out = np.zeros((t.size, len(self.joint_names)))
        for i, ti in enumerate(t):
            if order == 0:
                out[i] = self._at(ti)[0]
            elif 0.0 <= ti <= self.duration:
                if order < 3:
                    out[i] = self._at(ti)[order]
                else:  # jerk is piecewise constant: a one-sided difference inside the move
                    lo = ti if ti + JERK_STEP <= self.duration else ti - JERK_STEP
                    out[i] = (self._at(lo + JERK_STEP)[2] - self._at(lo)[2]) / JERK_STEP
        return out


def ruckig_move(move: JointMove, limits: JointLimits, dt: float | None = None) -> RuckigMove:
    """The time-optimal move under ``limits`` (velocity, acceleration, jerk), from rest to rest."""
    ruckig = _ruckig()
    sub = limits.select(move.joint_names)
    n = len(move.joint_names)
    otg = ruckig.Ruckig(n, dt or limits.control_period)
    inp = ruckig.InputParameter(n)
    inp.current_position, inp.target_position = move.start.tolist(), move.goal.tolist()
    inp.current_velocity = inp.current_acceleration = [0.0] * n
    inp.target_velocity = inp.target_acceleration = [0.0] * n
    inp.max_velocity, inp.max_acceleration = sub.velocity.tolist(), sub.acceleration.tolist()
    inp.max_jerk = sub.jerk.tolist()
    trajectory = ruckig.Trajectory(n)
    result = otg.calculate(inp, trajectory)
    if result != ruckig.Result.Working:
        raise InvalidInput(f"ruckig could not plan {move.joint_names}: {result}")
    return RuckigMove(move, float(trajectory.duration), trajectory)
