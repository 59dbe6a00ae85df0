"""How well a planned trajectory was followed, and the JSON summary of one goal.

``TrackingMonitor`` measures ``q_reference(t) − q_measured`` from the joint states while the
controller runs a :class:`~physai_ros.core.planned_trajectory.PlannedTrajectory`;
``outcome_report`` puts status, plan and tracking in one JSON-ready dict. Pure numpy: no rclpy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from physai_ros.core.planned_trajectory import PlannedTrajectory


class TrackingMonitor:
    """``q_reference(t) − q_measured`` per joint while a planned trajectory runs.

    start_time: when the controller starts the trajectory, on the clock of the joint states'
    stamps [s]. ``update`` takes each ``/joint_states``; ``report`` gives max and final errors.
    """

    def __init__(self, planned: PlannedTrajectory, start_time: float) -> None:
        self.planned = planned
        self.start_time = start_time
        n = len(planned.joint_names)
        self.max_error = np.zeros(n)
        self.max_error_time = np.zeros(n)
        self.final_error = np.full(n, np.nan)
        self.samples = 0
        self._index: dict[str, int] = {}

    def update(self, stamp: float, names: Sequence[str], positions: Sequence[float]) -> None:
        """One measurement at ``stamp`` [s]; ignored if it lacks a joint or is not finite."""
        where = {name: i for i, name in enumerate(names)}
        try:
            q = np.array([positions[where[n]] for n in self.planned.joint_names], dtype=float)
        except (KeyError, IndexError):
            return
        if not np.all(np.isfinite(q)):
            return
        t = stamp - self.start_time
        error = self.planned.reference(np.array([t]))[0] - q
        self.final_error = self.planned.goal - q
        if t < 0.0:
            return
        worse = np.abs(error) > self.max_error
        self.max_error[worse] = np.abs(error[worse])
        self.max_error_time[worse] = t
        self.samples += 1

    def report(self) -> dict[str, Any]:
        """JSON-ready: per joint max |error| while moving and final error [rad and deg]."""
        names = list(self.planned.joint_names)
        if self.samples == 0:
            return {"joints": names, "samples": 0, "note": "no /joint_states during the move"}
        j = int(np.argmax(self.max_error))
        return {
            "joints": names,
            "samples": self.samples,
            "max_error_rad": [round(float(v), 6) for v in self.max_error],
            "max_error_time_s": [round(float(v), 4) for v in self.max_error_time],
            "final_error_rad": [round(float(v), 6) for v in self.final_error],
            "max_error_deg": round(math.degrees(float(self.max_error.max())), 4),
            "final_error_deg": round(math.degrees(float(np.nanmax(np.abs(self.final_error)))), 4),
            "worst_joint": names[j],
        }


def outcome_report(
    status: str,
    message: str,
    planned: PlannedTrajectory | None = None,
    tracking: TrackingMonitor | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The JSON-ready summary of one goal: status (``rejected``, ``succeeded``, ``aborted``,
    ``canceled``, ``preempted``), a message naming what went wrong, the plan and the tracking."""
    report: dict[str, Any] = {"status": status, "message": message, **extra}
    if planned is not None:
        report["plan"] = {
            "shape": planned.shape,
            "duration_s": round(planned.duration, 6),
            "timed_by": planned.timed_by,
            "points": len(planned.times),
            "segments": len(planned.reference.segments),
        }
    if tracking is not None:
        report["tracking"] = tracking.report()
    return report
