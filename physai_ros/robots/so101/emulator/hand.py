"""A human hand moving a leader arm: minimum-jerk reaches between random poses (Flash & Hogan
1985) with a small physiological tremor.

Why here: the bus emulator's leader mode (a torque-off SO-101 moved by this hand, for
teleoperation tests) and the streaming benchmark's human-like stream (``physai bench stream``)
must move alike, so both take their motion from this one place. Pure numpy.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

TREMOR = 1e-3  # [rad] amplitude of the tremor (8–12 Hz per joint)
REACH = (0.6, 1.5)  # [s] shortest and longest reach


class HandMotion:
    """Joint angles [rad] of an arm a hand moves for ``seconds``, from ``start``.

    rng: the random draws (reach durations and poses, then tremor frequencies, in that order);
    start: the pose at t = 0 [rad]; amplitude [rad]: each reach ends within this of ``start``
    (one value for all joints, or one per joint); lower, upper [rad]: the poses are kept inside
    these (the joints' ranges), so a reach never leaves them; hold [s]: the hand rests at
    ``start`` this long before its first reach.
    """

    def __init__(
        self,
        rng: np.random.Generator,
        start: Sequence[float],
        seconds: float,
        amplitude: float | Sequence[float] = 0.6,
        lower: Sequence[float] | None = None,
        upper: Sequence[float] | None = None,
        hold: float = 0.0,
    ) -> None:
        self.start = np.asarray(start, dtype=float)
        n = self.start.size
        low = np.full(n, -np.inf) if lower is None else np.asarray(lower, dtype=float)
        high = np.full(n, np.inf) if upper is None else np.asarray(upper, dtype=float)
        amplitude = np.broadcast_to(np.asarray(amplitude, dtype=float), (n,))
        knots, poses, clock = [0.0], [self.start], 0.0
        if hold > 0.0:
            knots.append(hold)
            poses.append(self.start)
            clock = hold
        while clock < seconds:
            clock += rng.uniform(*REACH)
            pose = np.clip(self.start + rng.uniform(-amplitude, amplitude, n), low, high)
            knots.append(clock)
            poses.append(pose)
        self.knots, self.poses = np.asarray(knots), np.asarray(poses)
        self.tremor_hz = rng.uniform(8, 12, n)

    def at(self, t: float | np.ndarray) -> np.ndarray:
        """The joint angles [rad] at time(s) ``t`` [s]: shape ``(n,)`` or ``(len(t), n)``."""
        times = np.atleast_1d(np.asarray(t, dtype=float))
        knots = self.knots
        segment = np.clip(np.searchsorted(knots, times, side="right") - 1, 0, len(knots) - 2)
        k0, k1 = knots[segment], knots[segment + 1]
        s = np.clip((times - k0) / (k1 - k0), 0.0, 1.0)[:, None]
        blend = 10 * s**3 - 15 * s**4 + 6 * s**5  # minimum jerk
        p = self.poses
        q = p[segment] + blend * (p[segment + 1] - p[segment])
        q = q + TREMOR * np.sin(2 * np.pi * self.tremor_hz * times[:, None])
        return q[0] if np.ndim(t) == 0 else q
