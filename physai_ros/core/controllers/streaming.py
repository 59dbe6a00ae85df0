"""The streaming controller's core: position targets arriving at 10–60 Hz (a teleoperated leader,
a learned policy) turned into a command every control cycle that never leaves the active limits.

A trajectory action plans a whole motion; a policy or a leader arm sends one target per frame
instead, and how those targets are followed between frames decides how the arm moves. Three
modes, chosen per controller:

``staircase``
    Each target as is, the way LeRobot sends it: the servo's own profile takes the arm there as
    fast as the limits allow (a trapezoid: full acceleration, full braking, every frame).
``linear``
    Each target reached at the next one's expected time, on a straight line from the last one
    (LeRobot's ``ActionInterpolator``): smoother, one frame later.
``limited``
    The same line's end, reached when ``linear`` reaches it and with the line's speed, but on
    Ruckig's online jerk-limited motion (recomputed every cycle from the command's own
    position, velocity and acceleration, each joint on its own): no velocity steps at the
    frames. A stream that ends leaves the arm its braking distance past its last target.

Every mode's command passes through the same rule before it is sent: the position inside the
range, the velocity and the acceleration inside the limit set, and never faster than braking at
full acceleration can still stop before the target or a range's end. So whatever a stream
does — jumps, gaps, a target at a range's end — the command stays inside the limits.

The deadman: a stream that misses its next target by more than ``grace`` brakes to a hold
(within the limits) and says why; a stream that then resumes far from the held pose is refused,
as is a first target far from where the arm is, since following it would be a jump the user did
not command.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from physai_ros.core.motion.limits import JointLimits
from physai_ros.errors import InvalidInput

MODES = ("staircase", "linear", "limited")

RATE_RANGE = (10.0, 60.0)  # [Hz] the target rates the controller is made for


@dataclass(frozen=True)
class StreamSettings:
    """How a target stream is followed.

    mode: one of ``MODES``. rate [Hz]: the stream's expected target rate (``RATE_RANGE``).
    grace [s]: how late past the expected next target the stream may be before the arm brakes.
    resume_tolerance [rad]: how far (any joint) a first or resumed target may be from the held
    pose. jerk_ramp [s]: for ``limited`` where the limit set has no jerk limit (the SO-101's
    servos publish none): the time to ramp to full acceleration, jerk = acceleration / ramp.
    """

    mode: str = "linear"
    rate: float = 30.0
    grace: float = 0.02
    resume_tolerance: float = 0.15
    jerk_ramp: float = 0.05

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise InvalidInput(f"stream mode {self.mode!r}: choose one of {MODES}")
        lo, hi = RATE_RANGE
        checks = {
            f"rate must be in [{lo:g}, {hi:g}] Hz": lo <= self.rate <= hi,
            "grace must be in [0, 0.5] s": 0.0 <= self.grace <= 0.5,
            "resume_tolerance must be in (0, 1] rad": 0.0 < self.resume_tolerance <= 1.0,
            "jerk_ramp must be in (0, 1] s": 0.0 < self.jerk_ramp <= 1.0,
        }
        for message, ok in checks.items():
            if not ok:  # also false for NaN
                raise InvalidInput(f"{message}, got {self}")

    @property
    def period(self) -> float:
        """[s] between expected targets."""
        return 1.0 / self.rate


class Command(NamedTuple):
    """One control cycle's command: position [rad], velocity [rad/s], acceleration [rad/s²]."""

    position: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray


class StreamFollower:
    """Follows a target stream for the joints of ``limits``.

    Call :meth:`start` with the measured position when the controller becomes active, then
    :meth:`target` whenever a target arrives and :meth:`update` every control cycle; ``now`` is
    the controller's own monotonic clock [s], never a message's stamp.
    """

    def __init__(self, limits: JointLimits, settings: StreamSettings) -> None:
        self.limits = limits
        self.settings = settings
        self._vmax = np.asarray(limits.velocity, float)
        self._amax = np.asarray(limits.acceleration, float)
        if not (np.all(np.isfinite(self._vmax)) and np.all(np.isfinite(self._amax))):
            raise InvalidInput(
                f"streaming needs finite velocity and acceleration limits for every joint of "
                f"{limits.robot} ({limits.set_name})"
            )
        jerk = np.asarray(limits.jerk, float)
        self._jmax = np.where(np.isfinite(jerk), jerk, self._amax / settings.jerk_ramp)
        self._lo = np.asarray(limits.position_min, float)
        self._hi = np.asarray(limits.position_max, float)
        n = len(limits.joint_names)
        self._p, self._v, self._a = np.zeros(n), np.zeros(n), np.zeros(n)
        self._rate = np.zeros(n)  # [rad/s] the last cycle's step over its length, as sent
        self._last_update: float | None = None
        self._targets: list[tuple[float, np.ndarray]] = []  # the last two (time, position)
        self.state = "inactive"  # inactive | held | following | stopping
        self.reason = "not started"
        self._otg = None

    # -- inputs --------------------------------------------------------------------------

    def start(self, now: float, position: Sequence[float]) -> None:
        """Hold ``position`` (the measured one) until a target near it arrives."""
        p = self._vector(position, "measured position")
        self._p = np.clip(p, self._lo, self._hi)
        self._v = np.zeros_like(p)
        self._rate = np.zeros_like(p)
        self._a = np.zeros_like(p)
        self._last_update = now
        self._targets = []
        self.state, self.reason = "held", "waiting for the first target"

    def target(self, now: float, position: Sequence[float]) -> None:
        """Take a target [rad] received at ``now``. Refused (InvalidInput, nothing changed)
        when it is not finite, outside the position range, or — as the first target or the
        first after a hold — farther than ``resume_tolerance`` from the held pose."""
        if self.state == "inactive":
            raise InvalidInput("the stream controller is not active: no target is taken")
        x = self._vector(position, "target")
        outside = (x < self._lo) | (x > self._hi)
        if outside.any():
            joints = [self.limits.joint_names[i] for i in np.flatnonzero(outside)]
            raise InvalidInput(
                f"target outside the position range on {joints}: {x.tolist()} "
                f"(range {self._lo.tolist()} .. {self._hi.tolist()} rad)"
            )
        if self.state in ("held", "stopping"):
            gap = np.abs(x - self._p)
            if gap.max() > self.settings.resume_tolerance:
                joint = self.limits.joint_names[int(gap.argmax())]
                raise InvalidInput(
                    f"target is {gap.max():.3f} rad from the held pose on {joint} (tolerance "
                    f"{self.settings.resume_tolerance} rad): the arm does not jump to a stream; "
                    f"start the stream from where the arm is"
                )
            self._targets = []
        if self._targets and now < self._targets[-1][0]:
            raise InvalidInput(f"target time {now} is before the last one's: the clock went back")
        if self._targets and now == self._targets[-1][0]:  # two in one cycle: the newer counts
            self._targets[-1] = (now, x)
        else:
            self._targets = [*self._targets[-1:], (now, x)]
        self.state, self.reason = "following", ""

    # -- the control cycle ---------------------------------------------------------------

    def update(self, now: float) -> Command:
        """The command for the cycle at ``now`` [s]."""
        if self.state == "inactive" or self._last_update is None:
            raise InvalidInput("the stream controller is not active")
        dt = now - self._last_update
        if not dt > 0.0:
            return Command(self._p.copy(), self._v.copy(), self._a.copy())
        self._last_update = now
        if self.state == "following" and now > self._deadline():
            late = (now - self._targets[-1][0]) * 1e3
            self.state = "stopping"
            self.reason = (
                f"stream stopped: no target for {late:.0f} ms (expected every "
                f"{self.settings.period * 1e3:.0f} ms); braking to a hold"
            )
        if self.state == "following":
            goal, goal_velocity, arrive = self._goal(now)
            if self.settings.mode == "limited":
                p, v, a = self._ruckig(goal, goal_velocity, dt, arrive)
            else:
                p, v, a = self._approach(goal, dt)
        elif self.state == "stopping":
            p, v, a = self._brake(dt)
            if not np.any(v) and (self.settings.mode != "limited" or not np.any(a)):
                self.state = "held"
                self.reason = self.reason.replace("braking to a hold", "holding")
        else:  # held
            p, v, a = self._p, np.zeros_like(self._p), np.zeros_like(self._p)
        self._rate = (p - self._p) / dt
        self._p, self._v, self._a = p, v, a
        return Command(p.copy(), v.copy(), a.copy())

    def _deadline(self) -> float:
        """[s] when the stream counts as stopped: the expected next target plus the grace."""
        return self._targets[-1][0] + self.settings.period + self.settings.grace

    def _goal(self, now: float) -> tuple[np.ndarray, np.ndarray, float]:
        """Where the mode aims this cycle, with what velocity it should arrive there, and the
        least time [s] it may take to get there."""
        (t1, x1) = self._targets[-1]
        if len(self._targets) < 2:
            return x1, np.zeros_like(x1), 0.0
        x0 = self._targets[0][1]
        s = (now - t1) / self.settings.period  # along the line from the last target to this
        if self.settings.mode == "linear":  # LeRobot's interpolation: one period late
            return x0 + min(max(s, 0.0), 1.0) * (x1 - x0), np.zeros_like(x1), 0.0
        if self.settings.mode == "limited":  # the line's end, when linear gets there
            if s >= 1.0:
                return x1, np.zeros_like(x1), 0.0
            speed = np.clip((x1 - x0) / self.settings.period, -self._vmax, self._vmax)
            return x1, speed, (1.0 - max(s, 0.0)) * self.settings.period
        return x1, np.zeros_like(x1), 0.0

    # -- the limit rule every mode's command passes ----------------------------------------

    def _stoppable(self, distance: np.ndarray, dt: float) -> np.ndarray:
        """The fastest speed for this cycle from which braking at full acceleration, cycle by
        cycle, stops within ``distance`` (≥ 0): the exact inverse of the distance braking
        covers, so the bound holds at every cycle, not only in the limit dt → 0."""
        step = self._amax * dt  # [rad/s] the speed one cycle of braking removes
        cycles = np.maximum(distance, 0.0) / (step * dt)  # the distance in units of step·dt
        whole = np.floor((np.sqrt(1.0 + 8.0 * cycles) - 1.0) / 2.0)  # full braking cycles
        part = np.clip((cycles - whole * (whole + 1.0) / 2.0) / (whole + 1.0), 0.0, 1.0)
        return step * (whole + part)

    def _approach(self, goal: np.ndarray, dt: float) -> tuple[np.ndarray, ...]:
        """One cycle toward ``goal`` as fast as the limits allow, and no faster than can stop
        at the goal (a servo's trapezoidal profile)."""
        error = goal - self._p
        speed = np.minimum(np.abs(error) / dt, self._stoppable(np.abs(error), dt))
        return self._step(np.sign(error) * speed, dt)

    def _brake(self, dt: float) -> tuple[np.ndarray, ...]:
        """One cycle of braking toward standstill."""
        if self.settings.mode == "limited":
            return self._ruckig(None, None, dt)
        return self._step(np.zeros_like(self._v), dt)

    def _step(self, velocity: np.ndarray, dt: float) -> tuple[np.ndarray, ...]:
        """The limit rule every command passes: the cycle's velocity moved toward ``velocity``
        [rad/s], at most the velocity limit, never faster than braking can still stop before
        the range's end, and changed by at most the acceleration limit. The velocity moved is
        the last cycle's step over its length (what a servo is judged by), not a Ruckig state's
        velocity at the cycle's end. Returns (position, velocity, acceleration)."""
        wall = np.where(velocity >= 0, self._hi - self._p, self._p - self._lo)
        speed = np.minimum.reduce([np.abs(velocity), self._vmax, self._stoppable(wall, dt)])
        a = np.clip((np.sign(velocity) * speed - self._rate) / dt, -self._amax, self._amax)
        v = self._rate + a * dt
        v = np.where(np.abs(v) < 1e-12, 0.0, v)
        return np.clip(self._p + v * dt, self._lo, self._hi), v, a

    def _ruckig(
        self,
        goal: np.ndarray | None,
        goal_velocity: np.ndarray | None,
        dt: float,
        arrive: float = 0.0,
    ) -> tuple[np.ndarray, ...]:
        """One cycle of Ruckig's time-optimal jerk-limited motion from the command's state to
        ``goal`` with ``goal_velocity`` in no less than ``arrive`` [s] (goal None: to
        standstill wherever that is)."""
        import ruckig

        n = self._p.size
        if self._otg is None:
            self._otg = ruckig.Ruckig(n)
        inp = ruckig.InputParameter(n)
        inp.current_position = self._p.tolist()
        inp.current_velocity = self._v.tolist()
        inp.current_acceleration = self._a.tolist()
        inp.max_velocity = self._vmax.tolist()
        inp.max_acceleration = self._amax.tolist()
        inp.max_jerk = self._jmax.tolist()
        # each joint on its own: synchronised joints would all wait for the slowest one
        inp.synchronization = ruckig.Synchronization.No
        if goal is None:
            inp.control_interface = ruckig.ControlInterface.Velocity
            inp.target_velocity = [0.0] * n
            inp.target_acceleration = [0.0] * n
        else:
            inp.target_position = goal.tolist()
            inp.target_velocity = goal_velocity.tolist()
            inp.target_acceleration = [0.0] * n
            inp.minimum_duration = arrive
        trajectory = ruckig.Trajectory(n)
        try:
            result = self._otg.calculate(inp, trajectory)
        except ruckig.RuckigError:  # a synchronisation its solver could not find (rare)
            result = None
        if result not in (ruckig.Result.Working, ruckig.Result.Finished):
            return self._approach(self._p if goal is None else goal, dt)  # the plain rule
        p, v, a = (np.asarray(x) for x in trajectory.at_time(min(dt, trajectory.duration)))
        v = np.where(np.abs(v) < 1e-9, 0.0, v)
        a = np.where(np.abs(a) < 1e-9, 0.0, a)
        # Ruckig knows no position range, and a state the plain rule left (full acceleration
        # near full speed) can carry it past a limit: where the rule changes its step, the
        # rule's step is sent (the jerk unlimited for that cycle, the limits kept)
        ruled = self._step((p - self._p) / dt, dt)
        changed = np.abs(ruled[0] - p) > 1e-12
        return tuple(np.where(changed, x, y) for x, y in zip(ruled, (p, v, a), strict=True))

    def _vector(self, values: Sequence[float], what: str) -> np.ndarray:
        x = np.asarray(values, dtype=float)
        if x.shape != self._p.shape:
            raise InvalidInput(
                f"{what} has {x.size} values for {len(self._p)} joints {self.limits.joint_names}"
            )
        if not np.all(np.isfinite(x)):
            raise InvalidInput(f"{what} is not finite: {x.tolist()}")
        return x
