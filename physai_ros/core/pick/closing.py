"""How a pick closes its fingers on the object: one interface, one implementation per way.

A pick's ``close`` state hands the fingers to a :class:`Closing` (a parallel jaw is one finger
here, a three-finger hand three): what it commands for each finger every tick
(:meth:`Closing.command`), when it has ended and how (:attr:`Closing.phase`: ``closing``, then
``done`` or ``aborted`` with a :attr:`Closing.reason`; :attr:`Closing.gripped`: the grip was
*sensed*), what it keeps doing while the object is held (:meth:`Closing.hold`) and the numbers
the outcome reports (:meth:`Closing.report`). The pick machines own the states around it
(:mod:`~physai_ros.core.pick.skeleton`), so a new way of closing is one class, not a branch in
every state.

The ways:

* :class:`CapClose` -- the jaw ramps closed under its torque cap and the close ends on the
  sensed grip: all fingers touch and are still for ``still_time`` (how long a jaw takes to seat
  depends on its cap and the object: a timer would lift early or waste time); the timeout
  ends it without a grip (the pick lifts anyway, its outcome test tells);
* :class:`ForceClosing` -- each finger a :class:`~physai_ros.core.pick.force_close.ForceClose`
  of its own, squeezing to its target normal force (the SO-101's servo jaw: one; the
  Barrett-like hand: three), done when all have settled, aborted when any fails;
* :class:`GraspClose` -- a gripper whose own force control squeezes once told to (the Franka
  Hand's ``Grasp``): the jaw is commanded closed at the target force and the close ends on the
  gripper's result.

The contract every way keeps (test/test_closing.py): ``done`` and ``aborted`` are final; every
commanded position is finite and every effort finite and > 0 or nan (the finger's cap, never 0:
``GripperCommand``'s ``max_effort`` 0 means the full cap); a close never commands a finger more
open than where it started (a cancel keeps the command of its moment, so it never opens).

Pure: time and sensed values in, finger commands out.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import NamedTuple

from physai_ros.core.motion.time_scaling import minjerk
from physai_ros.core.pick.force_close import ForceClose, JawCommand

FingerCommand = JawCommand  # one finger's goal: position [rad] and max_effort [N·m] (nan: cap)
PHASES = ("closing", "done", "aborted")


class ClosingSensing(NamedTuple):
    """What a close reads, one entry per finger: positions [rad], speeds [rad/s], forces: the
    normal forces [N] of the finger's contact pair (a jaw: (fixed, moving); a finger of a hand:
    its own force twice), acked: the finger's controller has taken its last command. touch: all
    fingers push on the object (a contact sensor's answer, read by the cap close); result: the
    gripper's own (success, error) once it answered (the grasp close)."""

    positions: tuple[float, ...]
    speeds: tuple[float, ...]
    forces: tuple[tuple[float, float], ...]
    acked: tuple[bool, ...]
    touch: bool = False
    result: tuple[bool, str] | None = None


class Closing(ABC):
    """One close, from ``t0`` [s]: the interface every way of closing implements (module doc)."""

    def __init__(self, t0: float) -> None:
        self.t0 = float(t0)
        self.phase = "closing"
        self.reason: str | None = None  # why it aborted (a whole sentence), None otherwise
        self.gripped = False  # it ended on a sensed grip (not a timeout)

    @property
    def finished(self) -> bool:
        return self.phase != "closing"

    @abstractmethod
    def command(self, now: float) -> tuple[FingerCommand, ...]:
        """Every finger's goal at ``now`` [s], while closing and after."""

    @abstractmethod
    def _step(self, now: float, sensed: ClosingSensing) -> None:
        """Advance the close with ``sensed`` (only called while closing)."""

    def update(self, now: float, sensed: ClosingSensing) -> str:
        """Advance with what is sensed at ``now`` [s]; returns the phase (final once ended)."""
        if not self.finished:
            self._step(now, sensed)
        return self.phase

    def hold(self, now: float, sensed: ClosingSensing) -> None:
        """After a grip, while the object is held: keep it (default: the command as it is)."""
        return

    def held_efforts(self) -> tuple[float, ...]:
        """Each finger's effort [N·m] while the object is held after a grip (nan: its cap)."""
        return (math.nan,) * len(self.command(self.t0))

    def needs_contacts(self, now: float, speeds: Sequence[float]) -> bool:
        """Whether a contact reading (``touch``, ``forces``) can change what :meth:`update`
        decides at ``now`` with the fingers at ``speeds`` [rad/s] (a lockstep loop skips the
        costly reading otherwise)."""
        return not self.finished

    def report(self) -> dict[str, object]:
        """The close's numbers for an outcome: how it ended (a way adds its own)."""
        return {"phase": self.phase, "gripped": self.gripped, "reason": self.reason}

    def _end(self, gripped: bool) -> None:
        self.phase, self.gripped = "done", gripped

    def _abort(self, reason: str) -> None:
        self.phase, self.reason = "aborted", reason


class CapClose(Closing):
    """A jaw closed by position under its torque cap: a min-jerk ramp from ``jaw_open`` to
    ``jaw_closed`` [rad] over ``ramp`` [s] (effort nan: the cap throughout), ended by the sensed
    grip -- ``touch`` with the jaw slower than ``still_speed`` [rad/s] for ``still_time`` [s]
    after the ramp -- or, without one, by ``timeout`` [s] (ended, not gripped)."""

    def __init__(
        self,
        t0: float,
        jaw_open: float,
        jaw_closed: float,
        ramp: float,
        still_speed: float,
        still_time: float,
        timeout: float,
    ) -> None:
        super().__init__(t0)
        self.jaw_open, self.jaw_closed, self.ramp = jaw_open, jaw_closed, ramp
        self.still_speed, self.still_time, self.timeout = still_speed, still_time, timeout
        self.still_since: float | None = None  # [s] the grip condition has held since

    def command(self, now: float) -> tuple[FingerCommand, ...]:
        u = minjerk((now - self.t0) / self.ramp)
        return (FingerCommand(self.jaw_open + u * (self.jaw_closed - self.jaw_open), math.nan),)

    def needs_contacts(self, now: float, speeds: Sequence[float]) -> bool:
        return not self.finished and abs(speeds[0]) < self.still_speed and now - self.t0 > self.ramp

    def _step(self, now: float, sensed: ClosingSensing) -> None:
        t = now - self.t0
        settled = sensed.touch and abs(sensed.speeds[0]) < self.still_speed and t > self.ramp
        if not settled:
            self.still_since = None
        elif self.still_since is None:
            self.still_since = now
        if self.still_since is not None and now - self.still_since >= self.still_time:
            self._end(gripped=True)
        elif t > self.timeout:
            self._end(gripped=False)  # lift anyway; the outcome test will tell


class ForceClosing(Closing):
    """Every finger squeezed to its own target by a :class:`ForceClose` (``closes``, one per
    finger, all started at the same ``t0``): done once all have settled, aborted with the first
    failing finger's reason. ``labels``: each finger's name in that reason (``""`` for a lone
    jaw: "force close: …"; " of finger F2": "force close of finger F2: …"). After the grip the
    squeeze law keeps each finger at its target (:meth:`hold`)."""

    def __init__(self, closes: Sequence[ForceClose], labels: Sequence[str] | None = None) -> None:
        super().__init__(closes[0].t0)
        self.closes = list(closes)
        self.labels = list(labels) if labels is not None else [""] * len(self.closes)
        self._check()

    def command(self, now: float) -> tuple[FingerCommand, ...]:
        return tuple(c.command for c in self.closes)

    def _step(self, now: float, sensed: ClosingSensing) -> None:
        for k, close in enumerate(self.closes):
            if close.phase == "done":  # settled early: it keeps its squeeze while others close
                close.hold(now, sensed.forces[k], sensed.acked[k])
            else:
                close.update(
                    now, sensed.positions[k], sensed.speeds[k], sensed.forces[k], sensed.acked[k]
                )
        self._check()

    def _check(self) -> None:
        failed = [k for k, c in enumerate(self.closes) if c.phase == "aborted"]
        if failed:
            k = failed[0]
            self._abort(f"force close{self.labels[k]}: {self.closes[k].reason}")
        elif all(c.phase == "done" for c in self.closes):
            self._end(gripped=True)

    def held_efforts(self) -> tuple[float, ...]:
        return tuple(c.effort for c in self.closes)

    def hold(self, now: float, sensed: ClosingSensing) -> None:
        for k, close in enumerate(self.closes):
            close.hold(now, sensed.forces[k], sensed.acked[k])

    def report(self) -> dict[str, object]:
        """Adds each finger's last measured force [N] and last commanded effort [N·m]."""
        return super().report() | {
            "forces_N": [c.force for c in self.closes],
            "efforts_Nm": [c.effort for c in self.closes],
        }


class GraspClose(Closing):
    """A gripper that squeezes by itself: the jaw goes to ``jaw_closed`` [rad] at ``target`` [N]
    (the grasp goal's force, passed as the effort), and the close ends on the gripper's result:
    done on success, aborted on failure (its own reason) or on no answer within ``timeout``
    [s] (a gripper that never answers squeezes on unobserved: the pick must not lift what it
    cannot tell it holds)."""

    def __init__(self, t0: float, jaw_closed: float, target: float, timeout: float) -> None:
        super().__init__(t0)
        self.jaw_closed, self.target, self.timeout = jaw_closed, target, timeout

    def command(self, now: float) -> tuple[FingerCommand, ...]:
        return (FingerCommand(self.jaw_closed, self.target),)

    def needs_contacts(self, now: float, speeds: Sequence[float]) -> bool:
        return False  # the result decides, not the contacts

    def _step(self, now: float, sensed: ClosingSensing) -> None:
        result = sensed.result
        if result is not None and result[0]:
            self._end(gripped=True)
        elif result is not None:
            self._abort(f"the gripper's grasp failed: {result[1] or 'no reason given'}")
        elif now - self.t0 > self.timeout:
            self._abort(f"no grasp result within force.timeout {self.timeout:g} s")

    def report(self) -> dict[str, object]:
        """Adds the force the gripper was told to squeeze with [N]."""
        return super().report() | {"target_N": self.target}
