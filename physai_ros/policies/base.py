"""What every policy the runner drives offers, and the running statistics it publishes."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np


class Policy(Protocol):
    """A source of SO-101 actions in LeRobot's units, one per call of ``step``."""

    description: str  # for the log: what was loaded, from where
    fps: float | None  # the frame rate its actions are meant for (a dataset's), None = unknown
    image_features: tuple[str, ...]  # the ``observation.images.<camera>`` keys it needs
    needs_state: bool  # whether ``observation.state`` is read

    def reset(self) -> None:
        """Forget queued actions and history: the next ``step`` starts an episode."""

    def step(self, observation: dict[str, np.ndarray]) -> np.ndarray | None:
        """The next action (float vector of the six motors), or None once there is no more."""

    @property
    def queue_depth(self) -> int:
        """Actions already computed and waiting (an action chunk's rest)."""


@dataclass
class RunStatistics:
    """Per-step timing of a running policy (or a leader's reads, ``label="read"``): what
    ``/diagnostics`` reports."""

    label: str = "inference"  # what is timed: the summary's keys begin with it
    window: int = 300  # steps the percentiles are taken over (10 s at 30 Hz)
    steps: int = 0
    dropped: int = 0  # frames whose action was not sent: inference overran, or stale inputs
    stale: int = 0  # of those: an input older than allowed
    times: deque = field(default_factory=deque)  # [s] the recent steps' times

    def add(self, seconds: float) -> None:
        self.steps += 1
        self.times.append(seconds)
        while len(self.times) > self.window:
            self.times.popleft()

    def summary(self) -> dict[str, float]:
        """Last, mean, p95 and max time [ms] of the window's steps; counts."""
        times = np.asarray(self.times, dtype=float) * 1e3
        if times.size == 0:
            times = np.zeros(1)
        label = self.label
        return {
            f"{label}_last_ms": float(times[-1]),
            f"{label}_mean_ms": float(times.mean()),
            f"{label}_p95_ms": float(np.percentile(times, 95)),
            f"{label}_max_ms": float(times.max()),
            "steps": float(self.steps),
            "dropped_frames": float(self.dropped),
            "stale_frames": float(self.stale),
        }
