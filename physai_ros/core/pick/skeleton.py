"""What every pick machine shares: its states' sequencing and how its arm stops.

The jaw pick (:class:`~physai_ros.core.pick.machine.PickMachine`) and the three-finger hand's
(:class:`~physai_ros.core.pick.hand_machine.HandPickMachine`) differ in their states, their
sensing and their way of closing (a :class:`~physai_ros.core.pick.closing.Closing`), not in how
a state is entered and timed, how a close hands over to the lift, how the arm is stopped and
where an abort or a cancel leaves it. :class:`PickSkeleton` is that part, once:

* every state entry is stamped (:attr:`PickSkeleton.entered`, :attr:`PickSkeleton.t_state`);
* every arm move is a min-jerk move timed by the arm's joint limits with room to stop anywhere
  (:meth:`PickSkeleton._timed`:
  :func:`~physai_ros.core.pick.place.stoppable_duration`), so a stop always fits in the limits;
* the close runs the machine's :class:`~physai_ros.core.pick.closing.Closing` and ends in the
  next state (its grip and time kept in :attr:`closed`, :attr:`close_s`) or in an abort with
  the closing's reason;
* an abort first slows a move under way to rest along its path, then moves to the machine's
  safe pose, timed by the limits too (:meth:`PickSkeleton._plan_abort`);
* a cancel (:meth:`PickSkeleton.cancel`) slows the arm to rest along its path within the
  limits, in ``cancel``, then holds it in the terminal ``canceled``, the fingers keeping the
  command of the cancel's moment; :attr:`canceled_in` is the state it stopped;
* :meth:`PickSkeleton.report` gives the numbers every outcome reports.

Pure: no ROS, no MuJoCo.
"""

from __future__ import annotations

import contextlib
import math
from abc import ABC, abstractmethod
from collections.abc import Callable

import numpy as np

from physai_ros.core.motion.limits import JointLimits
from physai_ros.core.motion.time_scaling import minjerk
from physai_ros.core.pick.closing import Closing, ClosingSensing
from physai_ros.core.pick.place import along, brake, own_brake, stoppable_duration
from physai_ros.errors import InvalidInput

Path = Callable[[float], np.ndarray]  # the arm joints [rad] as a function of time [s]
Move = tuple[np.ndarray, np.ndarray, float, float]  # start, change [rad], duration, began [s]


class PickSkeleton(ABC):
    """The shared part of a pick machine (module doc). A machine calls :meth:`_start_skeleton`
    first and implements :meth:`_arm` (the arm's reference), :meth:`_grip` (the fingers'
    command) and :meth:`_state_move` (the move of a state of its own)."""

    TERMINAL: frozenset[str] = frozenset({"done", "aborted", "canceled"})
    brake_time = 0.05  # [s] shortest stop of a move (a longer one when the limits need it)

    def _start_skeleton(
        self, state: str, t0: float, limits: JointLimits | None, durations: dict[str, float]
    ) -> None:
        """state: the first; t0 [s]: now; limits: the arm's (None: the moves keep their
        configured ``durations`` [s], and a stop adds at most a move's own peak acceleration)."""
        self.state, self.t_state = state, float(t0)
        self.entered: list[tuple[str, float]] = [(state, float(t0))]  # (state, when [s])
        self.limits = limits
        self.durations = durations
        self.abort_reason: str | None = None
        self.canceled_in: str | None = None  # the state a cancel stopped the pick in
        self.closing: Closing | None = None  # the close's way, from the close on
        self.closed = False  # the close ended on a sensed grip
        self.close_s = math.nan  # [s] time in close when the grip was sensed (nan: never)
        self._cancel_path: Path | None = None  # the cancel's stop ...
        self._cancel_rest = math.inf  # ... at rest from then [s]
        self._cancel_grip: object = None  # the fingers' command a cancel keeps
        self._abort_from: np.ndarray | None = None  # [rad] where the abort's move starts
        self._abort_to: np.ndarray | None = None  # [rad] ... and ends
        self._abort_lead = 0.0  # [s] an abort's stop before its move ...
        self._abort_path: Path | None = None  # ... on this path

    @property
    def finished(self) -> bool:
        return self.state in self.TERMINAL

    @property
    def past_close(self) -> bool:
        """The close has ended, on a sensed grip or not (a cap close lifts after its timeout):
        the object is no longer known to stand where it stood."""
        return self.state != "close" and any(state == "close" for state, _ in self.entered)

    # ------------------------------------------------------------------ what a machine gives
    @abstractmethod
    def _arm(self, now: float) -> np.ndarray:
        """The arm's reference [rad] at ``now`` [s]."""

    @abstractmethod
    def _grip(self, now: float) -> object:
        """The fingers' command at ``now`` [s], as the machine gives it out (a cancel keeps it)."""

    @abstractmethod
    def _state_move(self) -> Move | None:
        """The min-jerk move of the current state (not abort), None where the arm rests."""

    def _entered(self, state: str, now: float) -> None:
        """What entering ``state`` at ``now`` [s] starts besides the stamp (default nothing)."""
        return

    # ------------------------------------------------------------------ states
    def _enter(self, state: str, now: float) -> None:
        self.state, self.t_state = state, now
        self.entered.append((state, now))
        self._entered(state, now)

    def _timed(self, start: np.ndarray, goal: np.ndarray, shortest: float) -> float:
        """Duration [s] of the arm move ``start → goal`` [rad]: at least ``shortest``, and with
        limits as long as a move that can be stopped anywhere needs (``InvalidInput``: a goal
        outside a joint's range)."""
        if self.limits is None:
            return shortest
        return stoppable_duration(start, goal, self.limits, shortest)

    def _close_step(self, now: float, sensed: ClosingSensing, after: str) -> None:
        """Advance the close with ``sensed``: on its end enter ``after`` (a sensed grip kept in
        :attr:`closed` and :attr:`close_s`), on its failure abort with its reason."""
        phase = self.closing.update(now, sensed)
        if phase == "done":
            if self.closing.gripped:
                self.close_s, self.closed = now - self.t_state, True
            self._enter(after, now)
        elif phase == "aborted":
            self.abort(now, self.closing.reason)

    @abstractmethod
    def abort(self, now: float, reason: str) -> None:
        """Stop the pick for ``reason`` (each machine knows where its arm and fingers go)."""

    # ------------------------------------------------------------------ the arm's stops
    def _move(self) -> Move | None:
        """The min-jerk move under way (the abort's after its stop, or the state's)."""
        if self.state == "abort":
            qa, lead = self._abort_from, self._abort_lead
            return qa, self._abort_to - qa, self.durations["abort"] - lead, self.t_state + lead
        return self._state_move()

    def _stop_path(self, now: float) -> tuple[Path, float] | None:
        """How the arm, moving at ``now``, comes to rest: (its path, when it is at rest [s]);
        None when it is at rest already.

        A min-jerk move is braked along its path (:func:`~physai_ros.core.pick.place.brake`):
        every move is timed with half the acceleration limit to spare (:meth:`_timed`), so the
        stop stays within the limits wherever it starts. Without limits the stop adds at most
        the move's own peak acceleration (:func:`~physai_ros.core.pick.place.own_brake`). The
        stop that leads an abort runs to its end; a move without acceleration to spare (none
        these machines time) runs to its end."""
        t0 = self.t_state
        if self.state == "abort" and now - t0 < self._abort_lead:
            return self._abort_path, t0 + self._abort_lead
        move = self._move()
        if move is None:
            return None
        qa, dq, T, began = move
        if now - began >= T or not np.any(dq):
            return None
        u0 = max(0.0, (now - began) / T)
        try:
            stop = (
                brake(now, u0, T, dq, self.limits, self.brake_time)
                if self.limits is not None
                else own_brake(now, u0, T, self.brake_time)
            )
        except InvalidInput:
            return (lambda time: along(qa, dq, (time - began) / T)), began + T
        return (lambda time: along(qa, dq, stop.u(time))), now + stop.D

    def _plan_abort(
        self, now: float, to: np.ndarray, shortest: float, start: np.ndarray | None = None
    ) -> None:
        """Time the abort's way to ``to`` [rad] from ``start`` (default: the arm's reference
        now, a move under way first slowed to rest along its path, since a jump to a move
        that starts at rest would be an acceleration spike): at least ``shortest`` [s] and,
        with limits, as long as they need (a start just outside a joint's range keeps
        ``shortest``)."""
        self._abort_from = self._arm(now) if start is None else np.asarray(start, float)
        self._abort_to = to
        stop = self._stop_path(now) if start is None else None
        self._abort_lead = 0.0
        if stop is not None:  # a move under way: stop it first (within the limits)
            self._abort_path, rest_at = stop
            self._abort_lead = rest_at - now
            self._abort_from = self._abort_path(rest_at)
        self.durations["abort"] = self._abort_lead + shortest
        if self.limits is not None:
            with contextlib.suppress(InvalidInput):
                self.durations["abort"] = self._abort_lead + stoppable_duration(
                    self._abort_from, to, self.limits, shortest
                )

    def _abort_arm(self, now: float) -> np.ndarray:
        """The arm in ``abort`` (the stop, then the min-jerk way) and after it (its end)."""
        t, lead = now - self.t_state, self._abort_lead
        if self.state == "abort" and t < lead:
            return self._abort_path(now)
        u = minjerk((t - lead) / (self.durations["abort"] - lead)) if self.state == "abort" else 1.0
        start = self._abort_from
        return start + u * (self._abort_to - start)

    def _motion_end(self) -> float | None:
        """When [s] the arm's current motion (a cancel's stop, an abort's way, a state's move)
        ends; None when the arm rests."""
        if self.state == "cancel":
            return self._cancel_rest
        if self.state == "abort":
            return self.t_state + self.durations["abort"]
        move = self._state_move()
        return None if move is None else move[3] + move[2]

    def arm_trajectory(self, now: float, dt: float) -> tuple[np.ndarray, np.ndarray]:
        """The arm's reference from ``now`` [s] to the end of its current motion, sampled for a
        FollowJointTrajectory goal that follows it exactly (a cancel's stop, say, which one
        timed point to its rest pose would not): ``(times, q)``, times [s] from ``now`` (first
        at ``dt``, last at the motion's end) and the joints [rad] there, shape (n, joints);
        empty when the arm rests."""
        if dt <= 0.0 or not math.isfinite(dt):
            raise InvalidInput(f"dt must be > 0 [s], got {dt!r}")
        end = self._motion_end()
        if end is None or end <= now:
            return np.empty(0), np.empty((0, self._arm(now).size))
        times = np.arange(now + dt, end, dt)
        times = np.append(times, end) if times.size == 0 or end - times[-1] > 1e-9 else times
        return times - now, np.array([self._arm(t) for t in times])

    # ------------------------------------------------------------------ cancel
    def cancel(self, now: float) -> None:
        """Stop the pick where it is, at ``now`` [s], and hold: the action's cancel.

        The arm slows to rest along the path it was on, within the joint limits (every move is
        timed to leave room for that stop), in state ``cancel``, then holds there in the
        terminal state ``canceled``; it never jumps and never goes home, so nothing it carries
        swings. The fingers' command (and effort) stays exactly as it was at ``now``: a held
        object stays squeezed, a close under way keeps its current target, and the fingers
        never open on a cancel. ``canceled_in`` remembers the state the cancel came in (a
        cancel during an abort's way stops that too). A cancel after the end, or during a
        cancel, does nothing."""
        if self.finished or self.state == "cancel":
            return
        arm, grip = self._arm(now), self._grip(now)
        stop = self._stop_path(now)
        self.canceled_in = self.state
        self._cancel_grip = grip
        if stop is None:  # at rest: hold right here
            held = arm.copy()
            stop = (lambda time: held), now
        self._cancel_path, self._cancel_rest = stop
        self.durations["cancel"] = self._cancel_rest - now
        self._enter("cancel" if self._cancel_rest > now else "canceled", now)

    def _cancel_arm(self, now: float) -> np.ndarray:
        return self._cancel_path(min(now, self._cancel_rest))

    def _cancel_update(self, now: float) -> None:
        """``cancel`` → ``canceled`` once the stop is at rest."""
        if self.state == "cancel" and now - self.t_state >= self.durations["cancel"] - 1e-9:
            self._enter("canceled", now)

    # ------------------------------------------------------------------ the outcome's numbers
    def report(self) -> dict[str, object]:
        """What every pick's outcome reports: the state it ended in, why it aborted, the state
        a cancel stopped, whether and how fast the close gripped [s], the closing's own."""
        return {
            "state": self.state,
            "abort_reason": self.abort_reason,
            "canceled_in": self.canceled_in,
            "closed": self.closed,
            "close_s": None if math.isnan(self.close_s) else self.close_s,
            "closing": None if self.closing is None else self.closing.report(),
        }
