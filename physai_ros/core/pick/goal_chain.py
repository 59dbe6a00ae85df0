"""When the next goal of a chain of arm phases may start on the controller.

Why: the pick sends each arm phase as a ``FollowJointTrajectory`` goal stamped ``lead`` ahead
of the moment it is sent, so a goal that reaches the controller within ``lead`` starts exactly
where the previous phase ends. A goal that arrives after its stamp is started by our
controller when it arrives, from where the arm is, its points keeping their times
(docs/controllers.md: no jumps) -- it ends late by as much. A new goal replaces the running
one when it arrives, and the controller moves the arm from where it is to the new goal's first
point by the new stamp. Stamped on the pick's own timeline, the next phase would leave only
``lead`` (or, itself arriving late, no time at all) for what is left of the late phase too: a
jump, rejected by the limit check -- on a starved computer one late goal ended the whole pick.
The chain stamps each goal no earlier than the estimated end of the one before it, so that
stretch keeps the time the plan gave it.

The estimate never runs early: a goal starts on the controller at ``max(stamp, arrival)``,
and its arrival is no later than the moment its acceptance is seen here; a goal whose
acceptance has not been seen yet starts no earlier than now. An estimate that runs late only
makes the arm wait, still, a little longer between two phases.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from physai_ros.errors import InvalidInput


@dataclass
class _Goal:
    stamp: float  # [s] header stamp sent
    duration: float  # [s] time_from_start of its last point
    sent_at: float  # [s] when it was sent: its points' times count from there on the plan
    seen_accepted: float | None = None  # [s] when the acceptance reached the sender
    started: float | None = None  # [s] when it started, as its controller reported


class GoalChain:
    """Stamps for a chain of trajectory goals sent one after another to one controller.

    lead: [s] how far ahead of the moment it is sent a goal is stamped (at least); gap: [s] how
    long after the previous goal's end the next one starts (a relay that forwards each goal
    once the one before it has ended needs the time); all times are on the sender's clock [s].
    """

    def __init__(self, lead: float, gap: float = 0.0) -> None:
        if not (math.isfinite(lead) and lead >= 0.0):
            raise InvalidInput(f"lead must be a finite time >= 0 [s], got {lead!r}")
        if not (math.isfinite(gap) and gap >= 0.0):
            raise InvalidInput(f"gap must be a finite time >= 0 [s], got {gap!r}")
        self.lead, self.gap = float(lead), float(gap)
        self._key: int | None = None  # the last goal sent (earlier ones were replaced)
        self._goal: _Goal | None = None

    def start(self, now: float) -> float:
        """The stamp for a goal sent at ``now``: ``lead`` ahead, or the estimated end of the
        previous goal (and ``gap``) when that is later."""
        return max(now + self.lead, self.end(now) + self.gap)

    def end(self, now: float) -> float:
        """Estimated end of the last goal on the controller (``-inf`` if none is running)."""
        goal = self._goal
        if goal is None:
            return -math.inf
        return self._start(goal, now) + goal.duration

    @staticmethod
    def _start(goal: _Goal, now: float) -> float:
        """When ``goal`` starts on the controller: as reported, else estimated (module doc)."""
        if goal.started is not None:
            return goal.started
        arrival = now if goal.seen_accepted is None else goal.seen_accepted
        return max(goal.stamp, arrival)

    def late(self, now: float) -> float:
        """How long after its stamp the last goal reached the controller [s] (0: in time)."""
        goal = self._goal
        if goal is None:
            return 0.0
        arrival = now if goal.seen_accepted is None else goal.seen_accepted
        return max(0.0, arrival - goal.stamp)

    def lag(self, now: float) -> float:
        """How far behind the plan the arm runs [s]: a goal sampled from the plan at its
        send time ``sent_at`` runs on the controller from ``max(stamp, arrival)``, so the
        plan's time t is reached at t + lag. A goal that replaces the running one mid-way
        (a stop) joins it when stamped ``now + lag`` (``lead`` when no goal runs)."""
        goal = self._goal
        if goal is None:
            return self.lead
        return self._start(goal, now) - goal.sent_at

    def sent(self, key: int, stamp: float, duration: float, sent_at: float | None = None) -> None:
        """Record goal ``key`` sent at ``sent_at`` (default ``stamp - lead``) with ``stamp``
        and lasting ``duration`` after it."""
        if not (math.isfinite(stamp) and math.isfinite(duration) and duration >= 0.0):
            raise InvalidInput(f"goal {key}: stamp {stamp!r} and duration {duration!r} [s]")
        at = stamp - self.lead if sent_at is None else float(sent_at)
        self._key, self._goal = key, _Goal(float(stamp), float(duration), at)

    def accepted(self, key: int, at: float) -> None:
        """Goal ``key``'s acceptance was seen at ``at``; a goal since replaced is ignored."""
        if key == self._key and self._goal is not None and self._goal.seen_accepted is None:
            self._goal.seen_accepted = float(at)

    def started(self, key: int, at: float) -> float:
        """Goal ``key`` started at ``at``, as its controller (or a relay before it) reported:
        the estimate gives way to it. Returns how much later than its stamp it started (0 for
        a goal since replaced, or reported before)."""
        goal = self._goal
        if key != self._key or goal is None or goal.started is not None:
            return 0.0
        goal.started = float(at)
        return max(0.0, goal.started - goal.stamp)

    def forget(self) -> None:
        """Drop the running goal (it was aborted or rejected: the controller holds the arm)."""
        self._key, self._goal = None, None
