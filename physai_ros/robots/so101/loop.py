"""The SO-101 driver's bus loop: lifecycle steps, one bus cycle, faults. Pure (no rclpy), so
the node stays a thin ROS shell and this can be tested against the emulator directly.

Modes, as the lifecycle node drives them:

* ``unconfigured`` -- the port is closed.
* ``inactive`` -- ``configure()`` opened the port, verified the servos and read the present
  pose; the loop reads and publishes the state and commands nothing (after a deactivation,
  once the arm's goal has come to rest). Torque is whatever it was.
* ``active`` -- ``activate()`` armed the servos at their present pose (refused, naming the
  joint or the register, when the pose is outside the limits, the calibration differs or a
  servo reports an error); the controllers (``physai_ros.core.controllers``) run each cycle
  and their reference goes to the servos.

Faults, and what they do (a fault never re-energises anything):

* port lost: goals aborted with the reason; the servos keep holding their last goal; the port
  is retried every ``reconnect_period``; once back, reading resumes and the controllers hold
  the goal the servos already have -- nothing moves until the next goal;
* servos silent: the same; when they answer again with torque off (their power was lost and
  came back: the arm fell), the driver refuses goals until re-armed (``rearm_needed``);
* a servo's error flags (overload, overheat, over-current, a failed magnetic encoder), or an
  exception in the cycle itself: goals aborted, the arm joints hold the present pose, re-arm
  needed (a servo whose encoder failed does not know where it is: it is never commanded on);
  a voltage flag alone is a warning;
* a servo found at configure under a latched protection (the driver was killed and the servo
  tripped holding the arm): it answers, so it is named with its status byte, never taken for
  a missing one; activation is refused while it holds torque, and the loop never clears the
  protection itself (``CLEAR_PROTECTION`` says what a person does and why);
* ``stop()`` brings the arm's goal to rest within the acceleration limits (the arm
  controller's ``stop_mode``) and holds it with torque on, refusing goals until ``resume()``;
  ``release()`` switches torque off (the arm goes limp) and needs a re-arm.

Holding "the present pose" (a held fault; a stop or deactivation under ``hold_measured``) holds
the five arm joints where they are; the gripper keeps its last goal and torque limit, and
``resume()`` and a re-arm (``activate()`` while the gripper still holds that goal with torque
on) keep them too. A jaw stalled on an object is short of its goal: sent its present angle
instead, a servo with a dead band (the STS3215's CW/CCW_Dead_Zone) applies no torque there and
the squeeze relaxes -- the object slips or falls.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from physai_ros.core.controllers.gac import GripperActionController, GripperEnd
from physai_ros.core.controllers.jtc import GoalEnd, JointTrajectoryController
from physai_ros.core.motion.rate_limit import limit_step
from physai_ros.errors import InvalidInput
from physai_ros.robots.so101 import protocol as fp
from physai_ros.robots.so101.bus import (
    IDS,
    JOINTS,
    BusError,
    Health,
    JointReading,
    PortUnavailable,
    So101Bus,
)
from physai_ros.robots.so101.jaw_estimate import JawContactEstimator, JawEstimate, JawModel

Log = Callable[[str, str], None]  # (level: info | warn | error, message)
# the servo's own latched protections (torque off and on clears them)
PROTECTION_FLAGS = fp.ErrorBit.OVERLOAD | fp.ErrorBit.OVERHEAT | fp.ErrorBit.OVERCURRENT
# flags that fault the driver: the protections and a failed encoder (VOLTAGE only warns)
FAULT_FLAGS = PROTECTION_FLAGS | fp.ErrorBit.ENCODER
KNOWN_FLAGS = sum(int(bit) for bit in fp.ErrorBit)  # bits the STS3215 documents (0x2f)
MAX_SPEED = 2.0 * 4.71  # [rad/s] twice the STS3215's no-load speed: faster = a garbled read
BEYOND_RANGE = 0.5  # [rad] no joint rests further beyond its range: further = a garbled read
AGREE = 0.02  # [rad] two reads of a resting arm agree this well: arming needs two such reads
# The fault of servos that are not the configured arm (found on reconnect): its message starts so
FOREIGN = "another arm on the port: its calibration or setup differs from the configured one"
BOUND_LOG_PERIOD = 1.0  # [s] a goal held back by the speed bound is logged at most this often
GRIPPER_SLACK = 0.02  # [rad] a jaw goal this far past its range is accepted, then clipped
# (closing onto the jaw's own stop is how a pick closes)


@dataclass(frozen=True)
class LoopSettings:
    """Behaviour of ``ServoLoop`` (config/so101_driver.yaml; units in the names' comments).

    limit_margin [rad]: a present pose this far outside the limits still arms (a joint resting
    on its stop reads a hair beyond it); stale_timeout [s]: no good read for this long =
    servos silent; reconnect_period [s]; health_every: read temperature/voltage/flags every
    n-th cycle; write_calibration: write the file's calibration to the servos' EPROM at
    configure (an explicit request; torque must be off); jaw: the contact estimate; relax_torque
    [N·m]: gripper torque once the grasp formed (0 = keep the goal's); relax_delay [s];
    max_velocity [rad/s] per joint (the active limit set's): no goal sent is further than
    max_velocity·dt from the one sent before it, dt [s] the time between the two sends, at
    most max_step_time [s] (a send after a pause -- a lost read, a hold -- moves no further
    than one after max_step_time would).
    """

    limit_margin: float = 0.02
    stale_timeout: float = 0.2
    reconnect_period: float = 1.0
    health_every: int = 10
    write_calibration: bool = False
    jaw: JawModel = field(default_factory=JawModel)
    relax_torque: float = 0.0
    relax_delay: float = 0.3
    max_velocity: tuple[float, ...] = (4.71,) * 6
    max_step_time: float = 0.05

    def __post_init__(self) -> None:
        velocity = np.asarray(self.max_velocity, dtype=float)
        if velocity.shape != (6,) or np.any(np.isnan(velocity) | (velocity <= 0.0)):
            raise InvalidInput(f"max_velocity must be six speeds > 0 [rad/s], got {velocity}")
        names = ("limit_margin", "stale_timeout", "reconnect_period", "relax_delay")
        for name in (*names, "max_step_time"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0.0):
                raise InvalidInput(f"{name} must be finite and >= 0, got {value!r}")
        if self.health_every < 1:
            raise InvalidInput(f"health_every must be >= 1, got {self.health_every!r}")


def flag_names(flags: int) -> str:
    """A servo's error byte in words ("OVERLOAD|OVERHEAT")."""
    names = [bit.name for bit in fp.ErrorBit if int(flags) & int(bit)]
    return "|".join(names) if names else "no error"


# What a person does about a servo's latched protection (overload, overheat, over-current).
# The driver never clears one itself: only switching torque off and on again does (or a power
# cycle), which drops the arm for that instant and gives full torque back to a servo that has
# just declared its load too much -- it would trip again, or push on into what blocked it.
CLEAR_PROTECTION = (
    "support the arm, call ~/release (torque off: the arm goes limp), rest it where the "
    "servos can hold it (folded) or remove what blocks it, then activate again (switching "
    "torque on clears the protection; where it does not, a power cycle of the servos does)"
)

# What a person does about a protection that arming did not clear: a servo whose firmware keeps
# it latched through a torque re-enable (whether a real STS3215 clears it so is not documented)
# is cleared only by switching its supply off and on.
POWER_CYCLE = (
    "the protection stays latched through a torque re-enable: support the arm, power cycle the "
    "servos (switch the arm's supply off and on; they come back with torque off), then "
    "activate again"
)


# What a person does about a failed magnetic encoder: the servo no longer knows its angle, so
# re-arming would command it blind.
ENCODER_FAILED = (
    "the servo's position sensor failed: support the arm, call ~/release, and check the "
    "servo (its magnet, cable and power) or replace it before activating again"
)


def what_to_do(flags: int) -> str:
    """The way out of a servo's faulting ``flags``: the encoder first (re-arming clears no
    sensor failure), else the latched protection's."""
    return ENCODER_FAILED if int(flags) & int(fp.ErrorBit.ENCODER) else CLEAR_PROTECTION


def servo_error(index: int, flags: int) -> str:
    """'servo 3 (elbow_flex) reports OVERLOAD (status 0x20)' for joint ``index``."""
    flags = int(flags)
    return f"servo {IDS[index]} ({JOINTS[index]}) reports {flag_names(flags)} (status {flags:#04x})"


class Snapshot(NamedTuple):
    """What one cycle publishes: stamp [s, loop clock]; the state (None when stale); the jaw
    estimate; the last health read; mode; fault ("" = none); the gripper torque limit [N·m];
    bounded_goals: goals the speed bound held back since start (``LoopSettings.max_velocity``)."""

    stamp: float
    reading: JointReading | None
    jaw: JawEstimate
    health: Health | None
    mode: str
    fault: str
    gripper_limit: float
    bounded_goals: int = 0
    supply: str = ""  # the servos' supply outside its band ('' = within)


class Refused(BusError):
    """A lifecycle step that must not happen now; the message says why and what to do."""


class ServoLoop:
    """The driver's loop around one ``So101Bus`` and its two controllers (see the module
    docstring). ``lock`` guards everything; the node's callbacks take it too."""

    def __init__(
        self,
        bus: So101Bus,
        arm: JointTrajectoryController,
        gripper: GripperActionController,
        settings: LoopSettings,
        log: Log,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """clock [s]: times the goals sent (the speed bound's dt); the loop's own clock, as
        ``cycle(now)`` is given it."""
        self.bus, self.arm, self.gripper, self.s, self.log = bus, arm, gripper, settings, log
        self.clock = clock
        self.max_velocity = np.asarray(settings.max_velocity, dtype=float)
        self.lock = threading.RLock()
        self.jaw = JawContactEstimator(settings.jaw)
        self.mode = "unconfigured"
        self.armed = False  # the servos were armed by us and should be holding torque
        self.fault = ""
        self.rearm_needed = False
        self.stopped = False
        self.reading: JointReading | None = None
        self.health: Health | None = None
        self.last_good = -math.inf
        self.last_attempt = -math.inf
        self.last_cycle: float | None = None
        self.cycles = 0
        self.sent: np.ndarray | None = None  # last goal written [rad], None = nothing yet
        self.commanded = np.full(6, np.nan)  # last goal asked for [rad] (before clipping)
        self.sent_at = -math.inf  # [s, clock] when ``sent`` was written
        self.bounding = False  # the last goal sent was held back by the speed bound
        self.bounded_sends = 0  # goals the speed bound held back, since start
        self._bound_logged = -math.inf  # [s, clock] when a bounded goal was last logged
        self.grip_limit = bus.s.stall_torque  # gripper torque limit in force [N·m]
        self.grip_requested = bus.s.stall_torque  # and the one asked for (the servo may cap it)
        self._limit_stall = math.nan  # [N·m] the gripper's stall torque when its limit was set
        self._overload = bus.s.gripper_setup.get("Overload_Torque", 100)  # [%]
        self.supply_note = ""  # the supply outside its band ('' = within)
        self._warned_effort = math.nan
        self.contact_since: float | None = None
        self.relaxed = False
        self.ends: list[GoalEnd | GripperEnd] = []  # goals ended, for the node to deliver
        self._reported_flags = np.zeros(6, dtype=int)
        self.pending_fault = ""  # a watchdog's fault the stuck bus thread takes when it returns

    @property
    def grip_safe(self) -> float:
        """[N·m] The gripper's overload protection (LeRobot: above Overload_Torque for 2 s the
        servo latches OVERLOAD and drops its torque), 10 % below it: a squeeze is kept there.
        Overload_Torque is a share of the stall torque at the present supply."""
        return 0.9 * float(self.bus.stall()[5]) * self._overload / 100.0

    def _set_grip_limit(self, limit: float) -> None:
        self.grip_limit = self.bus.set_torque_limit(5, limit)
        self.grip_requested, self._limit_stall = limit, float(self.bus.stall()[5])

    # --- lifecycle steps -----------------------------------------------------------------
    def configure(self, now: float) -> str:
        """Open the port, verify calibration and registers, read the pose. No torque change.
        Raises ``BusError`` (port, servos) or ``Refused``; returns a summary line."""
        with self.lock:
            bus = self.bus
            bus.open()
            try:
                # every N·m is a share of the stall torque at the supply: a servo of another
                # voltage (a 7.4 V STS3215 on a driver set for the 12 V one) or a supply far
                # from its rating makes every one of them wrong
                problem = bus.supply_problem(bus.read_supply())
                if problem:
                    raise Refused(problem)
                notes = self._verify_setup()
                reading = bus.read_state()
                errors = self._servo_errors()
            except BusError:
                bus.close()
                raise
            # the calibrated ranges (loaded with the file) bound what the controllers accept
            self.arm.p = dataclasses.replace(self.arm.p, lower=bus.lower[:5], upper=bus.upper[:5])
            low, high = bus.lower[5] - GRIPPER_SLACK, bus.upper[5] + GRIPPER_SLACK
            self.gripper.p = dataclasses.replace(self.gripper.p, lower=low, upper=high)
            self.reading, self.last_good, self.mode = reading, now, "inactive"
            self.fault, self.rearm_needed = "", False
            torque = bus.torque_enabled()
            outside = self.outside_limits(reading.position)
            lines = [
                f"configured on {bus.s.port}: servos {list(IDS)} answer, torque "
                f"{'on' if torque.all() else 'off' if not torque.any() else 'mixed'}",
                *notes,
            ]
            if outside:
                lines.append(f"present pose outside the limits: {outside} (activation refused)")
            if errors:
                self.log("warn", f"{'; '.join(errors)}: {CLEAR_PROTECTION}")
                lines.append(f"servo errors: {'; '.join(errors)}")
            return "; ".join(lines)

    def _servo_errors(self) -> list[str]:
        """Each servo's error flags in words -- from its status register and from the error
        byte its ping answered with -- also stored as the health the diagnostics report."""
        health = self.bus.read_health()
        flags = self._latched_flags(health.status.astype(int))
        for sid, error in self.bus.ping_errors.items():
            flags[IDS.index(sid)] |= error & KNOWN_FLAGS
        self.health = health._replace(status=flags)
        self._reported_flags = flags.copy()
        return [servo_error(i, f) for i, f in enumerate(flags) if f]

    def _latched_flags(self, first: np.ndarray) -> np.ndarray:
        """The error flags of ``first`` (a Status read) that a second read repeats: a latched
        protection stays, while one garbled read (a desynchronised bus hands another
        register's bytes to this one: 0x5b seen on a starved machine) must not refuse
        arming or name a servo wrongly."""
        return first & self.bus.read_health().status.astype(int)

    def _verify_setup(self) -> list[str]:
        bus, notes = self.bus, []
        mismatches = bus.calibration_mismatches()
        if mismatches and self.s.write_calibration:
            bus.write_calibration()
            notes.append(f"calibration written to the servos' EPROM ({len(mismatches)} fields)")
            mismatches = bus.calibration_mismatches()
        if mismatches:
            notes.append(
                "calibration differs from the servos (activation refused; set "
                f"write_calibration:=true to write the file): {mismatches}"
            )
        writes = bus.setup_differences()
        if writes:
            bus.write_setup(writes)
            changed = [f"{w.joint}.{w.register} {w.present}->{w.wanted}" for w in writes]
            notes.append(f"servo registers set: {changed}")
        return notes

    def outside_limits(self, q: np.ndarray) -> list[str]:
        """Joints beyond their limits by more than ``limit_margin``, named with values."""
        margin = self.s.limit_margin
        low, high = self.bus.lower - margin, self.bus.upper + margin
        return [
            f"{JOINTS[j]} = {q[j]:.4f} rad (limits [{self.bus.lower[j]:.4f}, "
            f"{self.bus.upper[j]:.4f}])"
            for j in np.flatnonzero((q < low) | (q > high))
        ]

    def activate(self, now: float) -> str:
        """Arm the servos at the present pose and start the controllers. Raises ``Refused``
        naming what is wrong (pose outside the limits, calibration, a servo's error flags)."""
        with self.lock:
            bus = self.bus
            if not bus.connected:
                raise Refused("the port is not open: configure first")
            mismatches = bus.calibration_mismatches()
            if mismatches:
                raise Refused(
                    f"calibration differs from the servos: {mismatches}; recalibrate, use the "
                    "right file, or configure with write_calibration:=true"
                )
            reading = self._agreeing_reading()
            outside = self.outside_limits(reading.position)
            if outside:
                raise Refused(
                    f"present pose outside the limits: {'; '.join(outside)}; move the arm "
                    "inside its range by hand (torque is off) and activate again"
                )
            flags = self._latched_flags(bus.read_health().status.astype(int))
            torque = bus.torque_enabled()
            held = [i for i, f in enumerate(flags) if f & FAULT_FLAGS and torque[i]]
            if held:  # a servo holding torque under a latched protection: release it first
                names = "; ".join(servo_error(i, flags[i]) for i in held)
                advice = what_to_do(int(np.bitwise_or.reduce(flags[held])))
                raise Refused(f"servo errors: {names}: {advice}")
            q = np.clip(reading.position, bus.lower, bus.upper)
            grip = self._kept_grip(torque)
            if grip is not None:
                q[5] = grip
            try:
                self._sent(bus.arm(q, self.grip_requested if grip is not None else None))
            except BusError:  # half-armed: back to how it was, then say why
                with contextlib.suppress(BusError):
                    self._unarm(torque)
                raise
            # arming clears latched protections; the voltage bit is no fault (it never was one
            # to refuse on: a servo keeps working on a sagging supply)
            flags = self._latched_flags(bus.read_health().status.astype(int)) & FAULT_FLAGS
            if flags.any():
                self._unarm(torque)
                names = [
                    f"servo {IDS[i]} ({JOINTS[i]}) {flag_names(f)}"
                    for i, f in enumerate(flags)
                    if f
                ]
                either = int(np.bitwise_or.reduce(flags))
                advice = ENCODER_FAILED if either & int(fp.ErrorBit.ENCODER) else POWER_CYCLE
                raise Refused(
                    f"servo errors persist after arming: {names}; back to how they were "
                    f"(torque off where it was off; servos that held torque hold on): {advice}"
                )
            self.commanded = self.sent.copy()
            effort = None  # a kept grip keeps its effort and torque limit
            if grip is None:
                self.grip_requested = min(self.gripper.p.max_effort, self.grip_safe)
            else:
                effort = self.gripper.effort
            self._set_grip_limit(self.grip_requested)
            self.reading, self.last_good = reading, now
            self.arm.activate(now, reading.position[:5], reading.velocity[:5], hold=self.sent[:5])
            hold = float(self.sent[5])
            self.gripper.activate(now, float(reading.position[5]), hold=hold, effort=effort)
            self.mode, self.armed, self.stopped = "active", True, False
            self.fault, self.rearm_needed = "", False
            return f"armed at {np.round(self.sent, 4).tolist()} rad"

    def _kept_grip(self, torque: np.ndarray) -> float | None:
        """The gripper goal [rad] a re-arm keeps: the last one sent, while the gripper still
        holds it with torque on (``torque``: each servo's Torque_Enable) -- a jaw squeezing
        an object keeps squeezing it. None (arm the gripper at its present angle, as every
        other servo) on a first arming, after a release or a power loss, or when the servo's
        goal is no longer the one sent."""
        if not (self.armed and self.sent is not None and torque[5]):
            return None
        held = float(self.bus.read_goal()[5])
        if abs(held - self.sent[5]) > AGREE:
            return None
        return float(self.sent[5])

    def _unarm(self, torque_before: np.ndarray) -> None:
        """A failed arming undone: torque off again only on the servos that had it off. A
        servo that held torque before (a re-activation, a restarted driver taking over a
        holding arm) keeps holding: switching it off would drop the arm it carries."""
        off = [i for i in range(6) if not torque_before[i]]
        if off:
            self.bus.release(off)
            self.armed = False

    def _agreeing_reading(self, tries: int = 4) -> JointReading:
        """A reading of the pose that the one before it repeats within ``AGREE``: one garbled
        read (a well-formed reply with wrong data, as a desynchronised bus delivers) must not
        be armed at -- the servos would go there. ``BusError`` after ``tries`` reads."""
        last = self.bus.read_state()
        for _ in range(tries - 1):
            reading = self.bus.read_state()
            jump = np.abs(reading.position - last.position)
            if np.all(jump <= AGREE):
                return reading
            last = reading
        j = int(np.argmax(jump))
        raise BusError(
            f"the pose reads differently on successive reads ({JOINTS[j]} by {jump[j]:.3f} rad, "
            f"{tries} reads): not armed at a garbled reading; activate again"
        )

    def deactivate(self, reason: str = "") -> str:
        """Stop following and hold: the arm joints come to rest (``stop``) and hold if torque
        is on, the gripper keeps its last goal and torque limit."""
        with self.lock:
            self._end_goals(reason or "deactivated")
            ramp = self.arm.stopping  # the next cycles ramp the arm's goal to rest (stop_mode)
            if self.armed and self.bus.connected and not self.rearm_needed and not ramp:
                try:
                    self._hold_present()
                except BusError as exc:
                    self.log("warn", f"hold at deactivation failed: {exc}")
            self.mode = "inactive"
            return "holding the present pose and the gripper's goal" if self.armed else "not armed"

    def cleanup(self) -> None:
        """Close the port (torque unchanged)."""
        with self.lock:
            self._end_goals("port closed")
            self.bus.close()
            self.mode, self.reading = "unconfigured", None

    def release(self, reason: str = "release requested") -> str:
        """Torque off on every servo (the arm goes limp); a re-arm is needed after."""
        with self.lock:
            self._end_goals(f"released: {reason}")
            self.bus.release()
            self.armed = False
            self._need_rearm(f"torque released ({reason})")
            return "torque off on all servos: the arm is limp"

    def stop(self) -> str:
        """Come to rest and hold with torque on (the gripper keeps its last goal and torque
        limit: a held object stays squeezed); goals refused until ``resume``. With the arm
        controller's ``stop_mode: decelerate`` the arm's goal is ramped to rest within the
        acceleration limits by the next cycles and then held; with ``hold_measured`` the
        present pose is held at once."""
        with self.lock:
            if self.mode != "active":
                raise Refused(f"not active ({self.fault or self.mode}): nothing to stop")
            self._end_goals("stopped: call the resume service")
            if self.arm.p.stop_mode != "decelerate":
                self._hold_present()
            self.stopped = True
            how = (
                "decelerating to rest, then holding there"
                if self.arm.stopping
                else "holding the present pose"
            )
            return (
                f"stopped: {how} with torque on (the gripper keeps its goal); goals refused "
                "until resume"
            )

    def resume(self, now: float) -> str:
        with self.lock:
            if not self.stopped or self.mode != "active" or self.reading is None:
                raise Refused(f"not stopped ({self.fault or self.mode})")
            if self.arm.stopping:
                raise Refused("still decelerating to rest (a tenth of a second): resume after")
            r = self.reading
            self.arm.activate(now, r.position[:5], r.velocity[:5], hold=self.sent[:5])
            hold, effort = float(self.sent[5]), self.gripper.effort  # the squeeze, kept
            self.gripper.activate(now, float(r.position[5]), hold=hold, effort=effort)
            self.stopped = False
            return "resumed: goals accepted"

    # --- the cycle (bus thread) ----------------------------------------------------------
    def cycle(self, now: float) -> Snapshot:
        """One bus cycle; never raises (a failure becomes a fault)."""
        with self.lock:
            dt = 0.0 if self.last_cycle is None else now - self.last_cycle
            self.last_cycle = now
            try:
                if self.pending_fault:  # the watchdog found this thread stuck: hold, re-arm
                    reason, self.pending_fault = self.pending_fault, ""
                    self._fault(f"{reason} (it cycles again)", hold=True)
                if self.mode != "unconfigured":
                    self._cycle(now)
            except Exception as exc:  # any bug must end in a safe fault
                self.log("error", f"bus loop failed: {exc!r}\n{traceback.format_exc()}")
                self._fault(f"internal error in the bus loop: {exc!r}", hold=True)
            jaw = JawEstimate(False, 0.0, 0.0)
            if self.reading is not None and self.mode == "active":
                r = self.reading
                jaw = self.jaw.update(
                    r.position[5],
                    self.gripper.setpoint,
                    r.velocity[5],
                    r.torque[5],
                    self.grip_limit,
                    dt,
                )
                self._relax(jaw, now)
            return Snapshot(
                now,
                self.reading,
                jaw,
                self.health,
                self.mode,
                self.fault,
                self.grip_limit,
                self.bounded_sends,
                self.supply_note,
            )

    def _cycle(self, now: float) -> None:
        if self.fault.startswith(FOREIGN):  # not the configured arm: not even read
            return
        if not self.bus.connected:
            self._reconnect(now)
            return
        try:
            reading = self.bus.read_state()
        except PortUnavailable as exc:
            self._port_lost(str(exc))
            return
        except BusError as exc:
            if now - self.last_good > self.s.stale_timeout:
                self.reading = None  # never publish a stale state as current
                self._silent(now, str(exc))
            return
        if self._implausible(reading, now):
            return
        if self.fault.startswith(("silent", "port lost")) and not self._resume_after_loss(
            now, reading
        ):
            return
        self.reading, self.last_good = reading, now
        self.cycles += 1
        if self.cycles % self.s.health_every == 1:
            self._check_health()
        if self.rearm_needed or self.fault:
            return
        idle = self.mode != "active" or self.stopped  # deactivated, or stopped: no goals
        if idle and not (self.armed and self.arm.stopping):  # at rest: the servos hold
            return
        q, qd = reading.position, reading.velocity
        self.ends += self.arm.update(now, q[:5], qd[:5])
        self.ends += self.gripper.update(now, q[5], qd[5])
        try:
            self._command()
        except PortUnavailable as exc:
            self._port_lost(str(exc))
        except BusError as exc:  # a lost reply: the next cycle writes again
            self.log("warn", f"command write failed, retrying: {exc}")

    def _implausible(self, reading: JointReading, now: float) -> bool:
        """A reading no joint could be at: beyond its range by more than ``BEYOND_RANGE`` (a
        well-formed reply with another register's data, as a desynchronised bus delivers),
        or reached since the last good one faster than ``MAX_SPEED``. Dropped like a lost
        reply, also right after a silence: holding or resuming toward such a reading would
        throw the arm. A jump within the ranges that persists past ``stale_timeout`` is
        believed (the arm was moved)."""
        why = self._why_implausible(reading.position, now)
        if why:
            self.log("warn", f"reading dropped: {why}")
        return bool(why)

    def _why_implausible(self, position: np.ndarray, now: float) -> str:
        """Why ``position`` [rad] at ``now`` cannot be the arm's ('' if it can): beyond the
        range, or a jump from the last good reading faster than ``MAX_SPEED`` (not checked
        once the last good reading is older than ``stale_timeout``)."""
        beyond = self._beyond_range(position)
        last = self.reading
        if beyond or last is None or now - self.last_good > self.s.stale_timeout:
            return beyond
        reach = MAX_SPEED * max(now - self.last_good, 0.0) + 0.05
        jump = np.abs(position - last.position)
        if not np.any(jump > reach):
            return ""
        j = int(np.argmax(jump))
        return f"{JOINTS[j]} jumped {jump[j]:.3f} rad in one cycle"

    def _beyond_range(self, position: np.ndarray) -> str:
        """Why ``position`` [rad] cannot be the arm's ('' if it can): a joint further than
        ``BEYOND_RANGE`` beyond its range."""
        lower, upper = self.bus.lower - BEYOND_RANGE, self.bus.upper + BEYOND_RANGE
        outside = np.flatnonzero((position < lower) | (position > upper))
        if outside.size == 0:
            return ""
        j = int(outside[0])
        return (
            f"{JOINTS[j]} at {position[j]:.3f} rad is beyond its range "
            f"[{self.bus.lower[j]:.3f}, {self.bus.upper[j]:.3f}] by more than {BEYOND_RANGE} rad"
        )

    def _sent(self, sent: np.ndarray) -> None:
        """``sent`` [rad] was just written to the servos (a goal, a hold, an arming)."""
        self.sent, self.sent_at, self.bounding = sent, self.clock(), False

    def _command(self) -> None:
        """Write the controllers' reference, and the gripper's effort, when they change. The
        goal written is never further from the one sent before than the velocity limit
        allows in the time between the two (``LoopSettings.max_velocity``): a cycle late by a
        stalled read or a lost one would otherwise send the time it missed in one jump."""
        goal = np.append(self.arm.ref[0], self.gripper.setpoint)
        if self.sent is None or self.bounding or np.any(np.abs(goal - self.commanded) > 1e-9):
            now = self.clock()
            last = self.sent if self.sent is not None else self.reading.position
            dt = min(max(now - self.sent_at, 0.0), self.s.max_step_time)
            bounded = limit_step(last, goal, self.max_velocity, dt)
            self._sent(self.bus.send_positions(bounded.command))
            self.commanded = goal
            self._note_bound(bounded.clipped, goal - bounded.command, dt)
        limit = min(self.gripper.effort, self.grip_safe)
        if self.gripper.effort > self.grip_safe and self._warned_effort != self.gripper.effort:
            self._warned_effort = self.gripper.effort
            self.log(
                "warn",
                f"gripper effort {self.gripper.effort:.3f} N·m is above the overload protection "
                f"(held for 2 s it trips the servo): squeezing with {self.grip_safe:.3f} N·m",
            )
        if self.s.relax_torque > 0.0 and self.relaxed:
            limit = min(limit, self.s.relax_torque)
        # the limit is a share of the stall torque at the supply: rewritten as it moves
        moved = abs(float(self.bus.stall()[5]) / self._limit_stall - 1.0) > 0.01
        if abs(limit - self.grip_requested) > 1e-9 or moved:
            self._set_grip_limit(limit)

    def _note_bound(self, clipped: np.ndarray, behind: np.ndarray, dt: float) -> None:
        """Count a goal the speed bound held back; warn when it holds an arm joint back, at
        most every BOUND_LOG_PERIOD (the gripper's goals are steps by design: bounded, they
        become the ramp the servo would make of them itself)."""
        self.bounding = bool(clipped.any())
        self.bounded_sends += self.bounding
        arm = np.flatnonzero(clipped[:5])
        if not arm.size or self.sent_at - self._bound_logged < BOUND_LOG_PERIOD:
            return
        self._bound_logged = self.sent_at
        names = ", ".join(f"{JOINTS[j]} {behind[j]:+.3f} rad" for j in arm)
        self.log(
            "warn",
            f"goal step bounded by the velocity limit ({dt * 1000:.0f} ms since the goal before; "
            f"{self.bounded_sends} bounded goals so far): {names} behind the reference",
        )

    def _relax(self, jaw: JawEstimate, now: float) -> None:
        """Once the grasp formed, lower the gripper torque to the least squeeze that carries
        the object (only when its mass and friction were given: ``relax_torque`` > 0)."""
        if not jaw.contact:
            self.contact_since, self.relaxed = None, False
            return
        if self.contact_since is None:
            self.contact_since = now
        if (
            self.s.relax_torque > 0.0
            and not self.relaxed
            and now - self.contact_since >= self.s.relax_delay
        ):
            self.relaxed = True
            self.log("info", f"grasp formed: gripper torque limit -> {self.s.relax_torque:.3f} N·m")

    def _check_health(self) -> None:
        """Every ``health_every`` cycles: flags, temperature, voltage and, on an armed arm,
        torque (servos found with torque off were reset by a power loss). A port that fails
        here is lost as in any other transfer; a lost reply waits for the next check."""
        try:
            self._read_health()
        except PortUnavailable as exc:
            self._port_lost(str(exc))
        except BusError as exc:
            self.log("warn", f"health read failed: {exc}")

    def _read_health(self) -> None:
        health = self.bus.read_health()  # the N·m scale follows its voltage
        note = self.bus.supply_problem(health.voltage)
        if note and note != self.supply_note:
            self.log("warn", note)
        self.supply_note = note
        status = health.status.astype(int)
        if status.any():  # confirmed by a second read before anyone is told
            status = self._latched_flags(status)
        self.health = health._replace(status=status)
        new = status & ~self._reported_flags
        self._reported_flags = status.copy()
        for i in np.flatnonzero(new):
            self.log("warn", servo_error(i, status[i]))
        if self.mode != "active" or self.rearm_needed:
            return
        bad = [
            f"servo {IDS[i]} ({JOINTS[i]}) {flag_names(f)}"
            for i, f in enumerate(status)
            if int(f) & FAULT_FLAGS
        ]
        if bad:
            self._fault(f"servo error: {', '.join(bad)}", hold=True)
            return
        if self.armed and not self.bus.torque_enabled().all():  # a brief power loss reset them
            self.armed = False
            self._fault("power loss: servos found with torque off (they were reset)", hold=False)

    # --- faults --------------------------------------------------------------------------
    def _end_goals(self, reason: str) -> None:
        self.ends += self.arm.deactivate(reason)
        self.ends += self.gripper.deactivate(reason)

    def _need_rearm(self, reason: str) -> None:
        self.fault, self.rearm_needed = reason, True
        self._end_goals(reason)

    def _fault(self, reason: str, hold: bool) -> None:
        """Abort goals with ``reason``; hold the present pose if the bus allows; re-arm."""
        self.log("error", f"{reason}: goals aborted; re-arm needed (lifecycle activate)")
        self._need_rearm(reason)
        if hold and self.armed and self.bus.connected:
            try:
                self._hold_present()
            except Exception as exc:  # any failure: say so (the servos keep their goal)
                self.log(
                    "error",
                    f"hold after the fault failed ({type(exc).__name__}: {exc}): the servos keep "
                    "their last goal",
                )

    def watchdog(self, reason: str, timeout: float = 0.2) -> bool:
        """The bus thread stopped cycling (``reason``; called from another thread): a fault
        that aborts goals and holds the present pose. False when the loop's lock stays taken
        for ``timeout`` [s] (the bus thread is stuck inside a transfer): nothing can command
        the servos then; they keep their last goal, and the fault is left for the bus thread
        to take first thing should it cycle again (what it was following is stale by then)."""
        if not self.lock.acquire(timeout=timeout):
            self.pending_fault = reason  # one attribute write: safe without the lock
            return False
        try:
            self._fault(reason, hold=True)
            return True
        finally:
            self.lock.release()

    def _hold_present(self) -> None:
        """Hold the arm joints where they are: a fresh reading, or the last good one if the
        fresh one cannot be the arm's -- beyond the range, or a jump the cycle would drop
        (holding a garbled reading would throw the arm). The gripper keeps its last goal and
        torque limit (nothing is written to it): a jaw stalled on an object is short of its
        goal, and sent its present angle it would let the object go (see the module
        docstring)."""
        present = self.bus.read_state().position
        now = self.last_cycle if self.last_cycle is not None else self.last_good
        if self.reading is not None and (why := self._why_implausible(present, now)):
            self.log("warn", f"holding the last good reading: the fresh one is garbled ({why})")
            present = self.reading.position
        if self.sent is None:  # nothing sent yet: the gripper too has no goal of ours
            self._sent(self.bus.send_positions(present))
        else:
            arm = self.bus.send_positions(present[:5], joints=range(5))
            self._sent(np.append(arm, self.sent[5]))
        self.commanded = self.sent.copy()

    def _port_lost(self, reason: str) -> None:
        self.bus.close()
        self.reading = None
        if not self.fault.startswith("port lost"):
            self.log("error", f"port lost: {reason}; servos keep their last goal; reconnecting")
            self.fault = f"port lost: {reason}"
            self._end_goals(self.fault)

    def _silent(self, now: float, reason: str) -> None:
        if not self.fault.startswith("silent"):
            self.log("error", f"servos silent for {self.s.stale_timeout} s: {reason}")
            self.fault = f"silent servos: {reason}"
            self._end_goals(self.fault)

    def _reconnect(self, now: float) -> None:
        if now - self.last_attempt < self.s.reconnect_period:
            return
        self.last_attempt = now
        try:
            self.bus.open()
        except BusError as exc:
            if not self.fault.startswith("port lost"):
                self.fault = f"port lost: {exc}"
            return
        self.log("info", f"port {self.bus.s.port} is back; reading the servos")

    def _resume_after_loss(self, now: float, reading: JointReading) -> bool:
        """The bus answers again: resume reading; hold what the servos already hold. Torque
        found off on an armed arm = the servos lost power: never re-energise, re-arm. Servos
        whose calibration or setup differs from configure's are another arm: nothing is read
        or sent until the user configures again. False: ``reading`` is not to be used."""
        was = self.fault
        try:  # configure's calibration and setup check, read-only, on reads that agree
            differs = self._identity_differences()
        except BusError as exc:
            self.log("warn", f"servos answer again but not every read does ({exc}); retrying")
            return False
        if differs:
            self._foreign(differs)
            return False
        if not self.armed or self.rearm_needed:
            self.fault = ""
            self.log("info", f"servos answer again after: {was}")
            return
        try:  # one answer is not yet a bus that answers: any failed read keeps the fault
            torque = self.bus.torque_enabled()
            held = self.bus.read_goal()
        except BusError as exc:
            self.log("warn", f"servos answer again but not every read does ({exc}); retrying")
            return False
        if beyond := self._beyond_range(held):  # a garbled goal read: resuming would throw it
            self.log("warn", f"servos answer again but their goal reads wrong ({beyond}); retrying")
            return False
        self.fault = ""
        if not torque.all():
            off = [JOINTS[i] for i in np.flatnonzero(~torque)]
            self.armed = False
            self._fault(
                f"power loss: {off} answer with torque off (the arm may have fallen)", False
            )
            return True
        self._sent(held)
        self.commanded = held.copy()
        if self.mode == "active" and not self.stopped:
            self.arm.activate(now, reading.position[:5], reading.velocity[:5], hold=held[:5])
            # the jaw keeps its squeeze: its goal (read back) and the effort it had
            effort = self.gripper.effort
            self.gripper.activate(
                now, float(reading.position[5]), hold=float(held[5]), effort=effort
            )
        self.log("info", f"servos answer again after: {was}; holding their goal, goals accepted")
        return True

    def _identity_differences(self) -> list[str]:
        """How the servos' calibration and setup registers differ from the configured arm's
        (empty: they are its servos). Each register as two successive reads agree: one
        garbled read (a desynchronised bus) would fake a difference."""
        setup = [
            f"{w.joint} {w.register} is {w.present} on the servo, {w.wanted} as configured"
            for w in self.bus.setup_differences(agreed=True)
        ]
        return [*self.bus.calibration_mismatches(agreed=True), *setup]

    def _foreign(self, differs: list[str]) -> None:
        """The port reached servos that are not the configured arm (another SO-101 re-plugged
        into this adapter, or one recalibrated meanwhile): they are not commanded -- no hold,
        no release -- and their readings, taken with this arm's calibration, are not
        published. The user checks the cable and configures again (cleanup, configure)."""
        self.armed, self.reading = False, None
        self._need_rearm(f"{FOREIGN}: {'; '.join(differs)}")
        self.log(
            "error",
            f"{self.fault}: nothing is sent to these servos; plug in the configured arm, "
            "then cleanup and configure (lifecycle)",
        )

    def take_ends(self) -> list[GoalEnd | GripperEnd]:
        with self.lock:
            ends, self.ends = self.ends, []
            return ends


class Report(NamedTuple):
    """One line of /diagnostics: name, hardware id, level ok | warn | error | stale, message,
    values (temperature [°C], voltage [V], current [A], error flags, load [N·m])."""

    name: str
    hardware_id: str
    level: str
    message: str
    values: dict[str, float]


def reports(snap: Snapshot, rearm_needed: bool, stopped: bool) -> list[Report]:
    """The driver's state, then each servo's health. A servo's own fault (a latched overload,
    overheat or over-current; a failed encoder) is named first, with what to do; then a fault of the
    driver, then a stale state, then the servo's other error flags."""
    if snap.fault:
        level, message = "error", snap.fault + ("; re-arm needed" if rearm_needed else "")
    elif snap.mode == "active":
        level, message = (
            ("warn", "stopped: goals refused until resume") if stopped else ("ok", "active")
        )
    else:
        level, message = "warn", f"{snap.mode}: not commanding the servos"
    if snap.supply and level == "ok":
        level, message = "warn", snap.supply
    out = [Report("so101/driver", "so101", level, message, {"bounded_goals": snap.bounded_goals})]
    h = snap.health
    for i, (sid, joint) in enumerate(zip(IDS, JOINTS, strict=True)):
        flags = 0 if h is None else int(h.status[i])
        level, message = "ok", "ok"
        if flags & FAULT_FLAGS:
            level, message = "error", f"{servo_error(i, flags)}: {what_to_do(flags)}"
        elif snap.fault:
            level, message = "error", snap.fault
        elif snap.reading is None:
            level, message = "stale", "no fresh state"
        elif flags:
            level, message = "warn", servo_error(i, flags)
        elif snap.supply:
            level, message = "warn", snap.supply
        values: dict[str, float] = {}
        if h is not None:
            values = {
                "temperature_C": h.temperature[i],
                "voltage_V": h.voltage[i],
                "current_A": h.current[i],
                "error_flags": flags,
            }
        if snap.reading is not None:
            values["load_Nm"] = snap.reading.torque[i]
        out.append(
            Report(f"so101/servo {sid} ({joint})", f"sts3215 id {sid}", level, message, values)
        )
    return out
