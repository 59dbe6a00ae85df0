"""How well a planned trajectory was followed, and the JSON summary of one goal.

``TrackingMonitor`` measures ``q_reference(t) − q_measured`` from the joint states while the
controller runs a :class:`~physai_ros.core.motion.planned.PlannedTrajectory`;
``outcome_report`` puts status, plan and tracking in one JSON-ready dict. Pure numpy: no rclpy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from physai_ros.core.motion.planned import PlannedTrajectory


class TrackingMonitor:
    """``q_reference(t) − q_measured`` per joint while a planned trajectory runs.

    start_time: when the controller starts the trajectory, on the clock of the joint states'
    stamps [s]. ``update`` keeps each ``/joint_states`` sample; the errors are computed from the
    kept samples when asked, so a start time learned late (``started_by``) applies to every
    sample, including those that arrived before it was known.
    """

    START_CANDIDATES = 400  # coarse start times tried across an uncertain window ...
    START_RESOLUTION = 2.5e-4  # [s] ... then refined to this around the best one

    def __init__(self, planned: PlannedTrajectory, start_time: float) -> None:
        self.planned = planned
        self.start_time = start_time
        self.latest_start = start_time
        self._samples: list[tuple[float, np.ndarray]] = []  # one atomic append per state

    def update(self, stamp: float, names: Sequence[str], positions: Sequence[float]) -> None:
        """One measurement at ``stamp`` [s]; ignored if it lacks a joint or is not finite."""
        where = {name: i for i, name in enumerate(names)}
        try:
            q = np.array([positions[where[n]] for n in self.planned.joint_names], dtype=float)
        except (KeyError, IndexError):
            return
        if np.all(np.isfinite(q)):
            self._samples.append((float(stamp), q))

    def started_by(self, confirmed: float) -> None:
        """The node learned of the goal's acceptance only at ``confirmed`` [s], after its stamp:
        the controller may have started it on arrival (as joint_trajectory_controller does),
        and a lagging node's clock does not even bound when. The report then fits the start
        to the measured motion, anywhere from the stamp to the newest sample."""
        self.latest_start = max(self.latest_start, float(confirmed))

    def _arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(stamps [s], positions [rad]) of the samples so far, as arrays."""
        samples = self._samples[:]  # the subscriber may append meanwhile
        n = len(self.planned.joint_names)
        if not samples:
            return np.zeros(0), np.zeros((0, n))
        return np.array([t for t, _ in samples]), np.array([q for _, q in samples])

    def _errors(self, start: float) -> tuple[np.ndarray, np.ndarray]:
        """(times since ``start`` [s], reference − measured [rad]) of the samples at t ≥ 0."""
        stamps, q = self._arrays()
        t = stamps - start
        moving = t >= 0.0
        return t[moving], self.planned.reference(t[moving]) - q[moving]

    def fitted_start(self) -> float:
        """``start_time``, or, after a late confirmation, the start between ``start_time`` and
        the newest sample that fits the motion best: least max error over every sample since
        ``start_time``, those before a candidate start compared with the start position the arm
        holds until then (judging a candidate only by the samples after it would favour late,
        at-rest ones)."""
        if self.latest_start <= self.start_time:
            return self.start_time
        stamps, q = self._arrays()
        since = stamps >= self.start_time
        stamps, q = stamps[since], q[since]
        if stamps.size == 0:
            return self.start_time

        def worst(start: float) -> float:
            # the reference is at rest outside [0, duration]: start position before, goal after
            return float(np.abs(self.planned.reference(stamps - start) - q).max())

        end = max(self.latest_start, float(stamps[-1]))
        coarse = np.linspace(self.start_time, end, self.START_CANDIDATES)
        best = coarse[int(np.argmin([worst(c) for c in coarse]))]
        step = coarse[1] - coarse[0]
        fine = np.arange(max(best - step, self.start_time), best + step, self.START_RESOLUTION)
        return float(fine[int(np.argmin([worst(c) for c in fine]))]) if fine.size else best

    @property
    def samples(self) -> int:
        return len(self._errors(self.fitted_start())[0])

    @property
    def max_error(self) -> np.ndarray:
        """Per joint max |reference − measured| [rad] over the samples since the start."""
        err = self._errors(self.fitted_start())[1]
        return np.abs(err).max(axis=0) if err.size else np.zeros(len(self.planned.joint_names))

    @property
    def final_error(self) -> np.ndarray:
        """Goal − last measured position [rad] (NaN before any sample)."""
        if not self._samples:
            return np.full(len(self.planned.joint_names), np.nan)
        return self.planned.goal - self._samples[-1][1]

    def reached(self, tolerance: float) -> bool:
        """The latest sample is within ``tolerance`` [rad] of the goal on every joint
        (``inf`` = any sample will do)."""
        if not self._samples:
            return False
        return bool(np.abs(self.planned.goal - self._samples[-1][1]).max() <= tolerance)

    def report(self) -> dict[str, Any]:
        """JSON-ready: per joint max |error| while moving and final error [rad and deg]."""
        names = list(self.planned.joint_names)
        start = self.fitted_start()
        t, err = self._errors(start)
        if t.size == 0:
            return {"joints": names, "samples": 0, "note": "no /joint_states during the move"}
        abs_err = np.abs(err)
        max_error, when = abs_err.max(axis=0), t[abs_err.argmax(axis=0)]
        final = self.final_error
        j = int(np.argmax(max_error))
        return {
            "joints": names,
            "samples": int(t.size),
            # the longest stretch without a state: well above the publish period means states
            # were lost on the way (a starved subscriber), and the maximum may be missed
            "max_gap_s": round(float(np.diff(t).max()), 4) if t.size > 1 else None,
            "start_s": round(start, 6),
            "start_fitted": self.latest_start > self.start_time,
            "max_error_rad": [round(float(v), 6) for v in max_error],
            "max_error_time_s": [round(float(v), 4) for v in when],
            "final_error_rad": [round(float(v), 6) for v in final],
            "max_error_deg": round(math.degrees(float(max_error.max())), 4),
            "final_error_deg": round(math.degrees(float(np.nanmax(np.abs(final)))), 4),
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
