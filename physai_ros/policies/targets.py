"""From a policy's action to the position targets streamed to the arm.

A policy speaks LeRobot's units (degrees, the jaw in percent of its range); the arm's stream
takes radians. Two things happen on the way, both so that running a policy never makes the
arm jump:

- **blend-in**: the first target is where the arm is, and the targets move from there to the
  policy's over ``blend_in`` seconds on a minimum-jerk profile. The stream refuses a first
  target far from the held pose (its resume tolerance); a freshly trained policy's first action
  usually is, and would otherwise never be followed.
- **range**: a target outside a joint's position range (a policy's output is unbounded) is
  clipped into it and counted, instead of having the whole frame refused.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from physai_ros.datasets.features import from_lerobot
from physai_ros.errors import InvalidInput


def min_jerk(s: float) -> float:
    """The minimum-jerk blend 10s³ − 15s⁴ + 6s⁵ of progress ``s`` in [0, 1]."""
    s = min(max(s, 0.0), 1.0)
    return s * s * s * (10.0 + s * (-15.0 + 6.0 * s))


class TargetMaker:
    """Targets [rad] of the five arm joints and the jaw for the actions of one run.

    lower, upper: the six joints' position ranges [rad] (arm, then jaw); jaw_range: the jaw
    range [rad] that 0 and 100 % stand for; blend_in: [s] from the measured pose to the policy's
    targets (0 = at once).
    """

    def __init__(
        self,
        lower: Sequence[float],
        upper: Sequence[float],
        jaw_range: Sequence[float],
        blend_in: float,
    ) -> None:
        self.lower, self.upper = np.asarray(lower, float), np.asarray(upper, float)
        if self.lower.shape != (6,) or self.upper.shape != (6,):
            raise InvalidInput("TargetMaker needs the six SO-101 joints' ranges")
        if not math.isfinite(blend_in) or blend_in < 0.0:
            raise InvalidInput(f"blend_in must be finite and >= 0 s, got {blend_in!r}")
        self.jaw_range, self.blend_in = tuple(jaw_range), float(blend_in)
        self.start: np.ndarray | None = None  # the measured pose [rad] the run began from
        self.clipped = 0  # targets that left a range and were clipped into it

    def begin(self, measured: Sequence[float]) -> None:
        """A run starts with the arm (and jaw) measured at ``measured`` [rad]."""
        measured = np.asarray(measured, float)
        if measured.shape != (6,) or not np.all(np.isfinite(measured)):
            raise InvalidInput(f"a measured pose is six finite angles, got {measured.tolist()}")
        self.start = measured

    def target(self, action: Sequence[float], elapsed: float) -> np.ndarray:
        """The six targets [rad] for LeRobot ``action`` ``elapsed`` seconds into the run.
        Raises ``InvalidInput`` for an action that is not six finite numbers."""
        if self.start is None:
            raise InvalidInput("TargetMaker.begin must be given the measured pose first")
        action = np.asarray(action, float)
        if action.shape != (6,) or not np.all(np.isfinite(action)):
            raise InvalidInput(f"a policy action is six finite numbers, got {action.tolist()}")
        arm, jaw = from_lerobot(action, self.jaw_range)
        wanted = np.append(arm, jaw)
        inside = np.clip(wanted, self.lower, self.upper)
        self.clipped += bool(np.any(inside != wanted))
        share = 1.0 if self.blend_in == 0.0 else min_jerk(elapsed / self.blend_in)
        if share >= 1.0:
            return inside
        # a blend of two poses inside the ranges is inside them, but for rounding
        return np.clip(self.start + share * (inside - self.start), self.lower, self.upper)
