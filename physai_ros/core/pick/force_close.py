"""A force-controlled close of a one-servo parallel jaw: squeeze to a target normal force, no more.

The seed's real-hand step, for the pick's ``close_mode: force``:

1. ``preshape`` -- the jaw goes by position to ``preshape`` [rad] (just open of the object's
   faces; later the planner's initial contacts) with the servo's full authority (the cap), as
   fast as the cap-based close: at a squeeze-sized effort the damped jaw would crawl (SO-101:
   0.15 N·m moves it 0.16 rad/s). It moves in free space; a jaw touching on the way (for one
   ``update_period``) means the object is bigger than planned, and the close aborts rather
   than squeeze at the cap;
2. ``contact`` -- it closes on towards ``jaw_closed`` with the small ``contact`` effort until
   both jaws touch;
3. ``squeeze`` -- every ``update_period`` the effort moves ``gain`` of the way to the one that
   gives the target (``Δτ = gain · (N* − N) · r``, r the jaw's torque→force lever), so it
   climbs from the contact effort without overshooting the plant's need; a force above
   ``N*·(1 + tolerance)`` brings it down by the same law; it rests once within a third of the
   tolerance. A step waits a full period after the jaw controller took the last command (over
   ROS a goal in flight has not acted yet: stepping again on the old force would overshoot);
4. ``settle`` -- the force has stayed within ``N*·(1 ± tolerance)`` for ``settle_time``: done,
   the pick lifts. :meth:`ForceClose.hold` keeps the same law running through lift and hold
   (an object that relaxes, or a jaw whose friction let the force drift, is brought back into
   the band), without faults of its own: whether the object is still held is the pick's
   outcome test.

After the preshape the effort is clamped to the ``ceiling`` (what the band's top needs, plus
the jaw's friction; never above the cap), and never set to 0 (``GripperCommand``'s
``max_effort`` of 0 means "the controller's default", i.e. the full cap). Faults end in
``aborted`` with the reason, never a hang: a target above what the cap can apply (checked
before anything moves, :func:`capacity_fault`), a jaw touching during the preshape, no force
within the band by ``timeout`` (the object slipped or is softer than modelled), a jaw losing
contact after both touched.

Pure: time, jaw position and the two measured normal forces in, a jaw command out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from physai_ros.errors import InvalidInput

MIN_EFFORT = 1e-3  # [N·m] floor of every command: a max_effort of 0 means the full cap
DEADBAND = 1.0 / 3.0  # the effort rests once |N − N*| ≤ DEADBAND · tolerance · N*
PRESHAPE_REACHED = 0.02  # [rad] the jaw this close to ``preshape`` has arrived


@dataclass(frozen=True)
class ForceCloseParams:
    """target [N, normal, per jaw]; tolerance [fraction of target]; contact [N per jaw];
    settle_time, timeout, update_period [s]; cap [N·m]; lever [m] (normal force = torque /
    lever); preshape, jaw_closed [rad]; touch [N]: a jaw pushing harder touches; gain [-];
    still_speed [rad/s]: the jaw has arrived at the preshape once slower than this; friction
    [N·m]: the jaw's dry friction, which the effort ``ceiling`` allows for."""

    target: float
    cap: float
    lever: float
    preshape: float
    jaw_closed: float
    tolerance: float = 0.15
    contact: float = 1.0
    settle_time: float = 0.3
    timeout: float = 4.0
    update_period: float = 0.1
    touch: float = 0.01
    gain: float = 0.25
    still_speed: float = 0.05
    friction: float = 0.0

    def __post_init__(self) -> None:
        for name in ("target", "cap", "lever", "contact", "settle_time", "timeout", "still_speed"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise InvalidInput(f"force close {name} must be finite and > 0, got {value!r}")
        if not (math.isfinite(self.update_period) and self.update_period > 0.0):
            raise InvalidInput(f"update_period must be > 0 [s], got {self.update_period!r}")
        if not 0.0 < self.tolerance < 1.0:
            raise InvalidInput(f"tolerance must be in (0, 1), got {self.tolerance!r}")
        if not 0.0 < self.gain <= 1.0:
            raise InvalidInput(
                f"gain must be in (0, 1] (1 = one step to target), got {self.gain!r}"
            )
        if not (math.isfinite(self.touch) and self.touch >= 0.0):
            raise InvalidInput(f"touch must be finite and >= 0 [N], got {self.touch!r}")
        if not (math.isfinite(self.friction) and self.friction >= 0.0):
            raise InvalidInput(f"friction must be finite and >= 0 [N m], got {self.friction!r}")
        if not self.contact < self.target * (1.0 - self.tolerance):
            raise InvalidInput(
                f"contact force {self.contact} N must lie below the target's band "
                f"{self.target * (1.0 - self.tolerance):.3f} N: the approach would over-squeeze"
            )
        if not (math.isfinite(self.preshape) and math.isfinite(self.jaw_closed)):
            raise InvalidInput(f"preshape {self.preshape!r}, jaw_closed {self.jaw_closed!r}")

    @property
    def capacity(self) -> float:
        """Largest normal force per jaw [N] the cap can apply: cap / lever."""
        return self.cap / self.lever

    @property
    def band(self) -> tuple[float, float]:
        """Accepted normal force per jaw [N]: target · (1 ∓ tolerance)."""
        return self.target * (1.0 - self.tolerance), self.target * (1.0 + self.tolerance)

    @property
    def ceiling(self) -> float:
        """The most effort the close commands after the preshape [N·m]: what the band's top
        needs through the model's lever, plus the jaw's dry friction (a stalled jaw's gears may
        hold that much back), and never above the cap. Why a ceiling and not the law alone: the
        law raises the effort while the measured force is low, so a force reading that
        under-reads (an estimate that let go, a stale sensor) would squeeze on up to the cap.
        Seen on the bus emulator: the SO-101 driver's load estimate dropped out mid-squeeze
        and the law took the effort to the servo's 0.66 N·m protection: the soft cube felt
        10 N against a 2.78 N band top. With the ceiling the true force stays within the band's
        top, up to the lever's error."""
        return min(self.cap, self.target * (1.0 + self.tolerance) * self.lever + self.friction)


def capacity_fault(p: ForceCloseParams) -> str | None:
    """Why the target cannot be met at all (above the cap's capacity), or None."""
    if p.target > p.capacity:
        return (
            f"force target {p.target:.3f} N per jaw is above what the gripper can apply at its "
            f"cap: {p.cap:.3f} N m / lever {p.lever:.4f} m = {p.capacity:.3f} N"
        )
    return None


class JawCommand(NamedTuple):
    """The jaw's goal: position [rad] and max_effort [N·m]."""

    position: float
    effort: float


class ForceClose:
    """One force-controlled close from ``t0`` [s]; call :meth:`update` every control tick."""

    def __init__(self, params: ForceCloseParams, t0: float) -> None:
        self.p = params
        self.t0 = float(t0)
        self.phase = "preshape"
        self.reason: str | None = capacity_fault(params)
        if self.reason is not None:
            self.phase = "aborted"
        self.effort = params.cap
        self.position = params.preshape
        self.force = math.nan  # [N] the last measured normal force per jaw (mean of the jaws)
        self._next_update = math.inf  # [s] when the squeeze may change the effort next
        self._band_since: float | None = None  # [s] the force entered the band
        self._lost_since: float | None = None  # [s] a jaw stopped touching
        self._early_since: float | None = None  # [s] a jaw touches during the preshape

    @property
    def finished(self) -> bool:
        return self.phase in ("done", "aborted")

    @property
    def command(self) -> JawCommand:
        return JawCommand(self.position, self.effort)

    def within_tolerance(self, force: float) -> bool:
        low, high = self.p.band
        return low <= force <= high

    def update(
        self,
        now: float,
        jaw: float,
        jaw_speed: float,
        forces: tuple[float, float],
        acked: bool = True,
    ) -> str:
        """Advance with the jaw position [rad], its speed [rad/s] and the two jaws' normal
        forces [N] measured at ``now`` [s]; ``acked``: the last command has reached the jaw.
        Returns the phase (``done`` / ``aborted`` are final). The preshape ends with the jaw
        there *and* still: a jaw still swinging from the move at the cap would strike the
        object harder than the contact force."""
        if self.finished:
            return self.phase
        p = self.p
        touching = all(f > p.touch for f in forces)
        self.force = 0.5 * (forces[0] + forces[1])
        if self.phase == "preshape" and self._touched_early(now, forces):
            self._abort(
                f"a jaw touched before the preshape {p.preshape:.3f} rad (jaw at {jaw:.3f} "
                "rad): the object is bigger than planned"
            )
            return self.phase
        if (
            self.phase == "preshape"
            and abs(jaw - p.preshape) <= PRESHAPE_REACHED
            and abs(jaw_speed) < p.still_speed
        ):
            self.phase, self.position = "contact", p.jaw_closed
            self.effort = self._clamp(p.contact * p.lever)
        if self.phase == "contact" and touching:
            self.phase, self._next_update = "squeeze", now + p.update_period
        if not acked:  # the next step waits a full period from when it has
            self._next_update = max(self._next_update, now + p.update_period)
        if self.phase in ("squeeze", "settle"):
            self._squeeze(now, touching)
        if not self.finished and now - self.t0 > p.timeout:
            self._timeout()
        return self.phase

    def _touched_early(self, now: float, forces: tuple[float, float]) -> bool:
        """A jaw has touched through one ``update_period`` of the preshape. Not at once: the
        SO-101's load-based estimate reads a jaw told to move but not yet moving (stalled short
        of its goal at its torque limit) as touching; on the emulator, whose physics fell
        behind real time, that aborted 1 pick in 10 at the open jaw. A jaw that meets a bigger
        object stays on it and is caught a period later."""
        if not any(f > self.p.touch for f in forces):
            self._early_since = None
            return False
        self._early_since = now if self._early_since is None else self._early_since
        return now - self._early_since >= self.p.update_period

    def hold(self, now: float, forces: tuple[float, float], acked: bool = True) -> None:
        """After ``done``: keep the force at the target with the squeeze law while both jaws
        touch (a jaw that lets go is left to the pick's outcome test, not adjusted for)."""
        if not acked:
            self._next_update = max(self._next_update, now + self.p.update_period)
        if self.phase != "done" or not all(f > self.p.touch for f in forces):
            return
        self.force = 0.5 * (forces[0] + forces[1])
        self._step_effort(now)

    def _step_effort(self, now: float) -> None:
        """The squeeze law, at most once per ``update_period``."""
        p = self.p
        if now >= self._next_update:
            self._next_update = now + p.update_period
            error = p.target - self.force
            if abs(error) > DEADBAND * p.tolerance * p.target:
                self.effort = self._clamp(self.effort + p.gain * error * p.lever)

    def _squeeze(self, now: float, touching: bool) -> None:
        p = self.p
        if not touching:
            self._lost_since = now if self._lost_since is None else self._lost_since
            if now - self._lost_since >= p.update_period:
                self._abort(f"a jaw lost contact while squeezing (force {self.force:.3f} N)")
            return
        self._lost_since = None
        if self.within_tolerance(self.force):
            self._band_since = now if self._band_since is None else self._band_since
            self.phase = "settle"
            if now - self._band_since >= p.settle_time:
                self.phase = "done"
                return
        else:
            self._band_since, self.phase = None, "squeeze"
        self._step_effort(now)

    def _timeout(self) -> None:
        p = self.p
        if self.phase in ("preshape", "contact"):
            what = (
                "the jaw never reached the preshape"
                if self.phase == "preshape"
                else ("both jaws never touched the object")
            )
            self._abort(f"{what} within the force close timeout {p.timeout} s")
        else:
            low, high = p.band
            self._abort(
                f"the force never settled in [{low:.3f}, {high:.3f}] N within {p.timeout} s "
                f"(last {self.force:.3f} N at effort {self.effort:.3f} N m): the object "
                "slipped or is softer than modelled"
            )

    def _abort(self, reason: str) -> None:
        self.phase, self.reason = "aborted", reason

    def _clamp(self, effort: float) -> float:
        return min(max(effort, MIN_EFFORT), self.p.ceiling)
