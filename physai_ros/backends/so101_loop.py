"""The SO-101 driver's bus cycle: ``ServoLoop`` runs one cycle of the bus thread (state in,
trajectory/gripper goals out, jaw contact estimate, squeeze relaxation, fault policy), pure and
thread-safe, so the node stays a thin ROS shell. The bus itself (``So101Bus``, LeRobot's Feetech
bus beneath) lives in ``physai_ros.backends.so101_lerobot``.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from physai_ros.backends.so101_lerobot import (
    ARM,
    IDS,
    JOINTS,
    STALL_TORQUE,
    BusError,
    Health,
    JointReading,
    PortUnavailable,
    ServoSilent,
    So101Bus,
)
from physai_ros.core import feetech_protocol as fp
from physai_ros.core.jaw_estimate import (
    GripperMonitor,
    JawContactEstimator,
    JawEstimate,
    JawModel,
    least_squeeze_torque,
)
from physai_ros.core.joint_trajectory import (
    JointRanges,
    StartState,
    TimedTrajectory,
    Tolerances,
    TrajectoryPoint,
    check_goal,
    plan_trajectory,
)
from physai_ros.errors import InvalidInput, LimitViolation


@dataclass
class LoopSettings:
    """Behaviour of ``ServoLoop`` (config/so101_driver.yaml)."""

    tolerances: Tolerances
    start_tolerance: float
    gripper_goal_tolerance: float
    gripper_stall_speed: float
    gripper_stall_time: float
    gripper_timeout: float
    allow_stalling: bool
    jaw: JawModel
    fault_policy: str = "hold"
    stale_timeout: float = 0.2
    reconnect_period: float = 1.0
    watchdog_timeout: float = 0.5
    health_every: int = 10
    relax: bool = True
    relax_delay: float = 0.3
    relax_torque: float = 0.1  # [N·m] least squeeze torque (least_squeeze_torque)

    def __post_init__(self) -> None:
        if self.fault_policy not in ("hold", "torque_off"):
            raise InvalidInput(
                f"fault_policy must be 'hold' or 'torque_off', got {self.fault_policy!r}"
            )


class Outcome(NamedTuple):
    state: str  # running | succeeded | aborted
    message: str


class Snapshot(NamedTuple):
    """What one cycle publishes."""

    stamp: float
    reading: JointReading | None
    jaw: JawEstimate
    health: Health | None
    connected: bool
    fault: str
    gripper_limit: float  # [N·m]


def relax_torque(mass: float, mu: float, accel: float, margin: float, arm: float, floor: float):
    return max(least_squeeze_torque(mass, mu, accel, margin, arm), floor)


class ServoLoop:
    """One cycle every call of ``cycle``: reconnect if needed, read the state, advance the arm
    trajectory and the gripper goal, estimate jaw contact, relax the squeeze, apply the fault
    policy. Goals come from other threads through the locked ``start_*``/``cancel_*`` calls."""

    def __init__(self, bus: So101Bus, settings: LoopSettings, log) -> None:
        self.bus = bus
        self.s = settings
        self.log = log
        self.lock = threading.RLock()
        self.ranges = JointRanges(ARM, bus.lower[:5].copy(), bus.upper[:5].copy())
        self.jaw = JawContactEstimator(settings.jaw)
        self.gripper_monitor = GripperMonitor(
            settings.gripper_goal_tolerance,
            settings.gripper_stall_speed,
            settings.gripper_stall_time,
        )
        self.ref = np.zeros((3, 5))
        self.traj: TimedTrajectory | None = None
        self.traj_token = 0
        self.traj_start = 0.0
        self.traj_tolerances = settings.tolerances
        self.traj_outcome: Outcome | None = None
        self.watchdog_deadline: float | None = None
        self.grip_goal: float | None = None
        self.grip_token = 0
        self.grip_started = 0.0
        self.grip_outcome: Outcome | None = None
        self.grip_limit = STALL_TORQUE / 2.0
        self.grip_commanded_limit = STALL_TORQUE / 2.0
        self.contact_since: float | None = None
        self.relaxed = False
        self.estopped = False
        self.fault = "not connected"
        self.last_good = -math.inf
        self.last_attempt = -math.inf
        self.reading: JointReading | None = None
        self.health: Health | None = None
        self.cycles = 0
        self.last_cycle = None
        self.reported_flags = np.zeros(6, dtype=int)
        self._pending_limit: float | None = None
        self._grip_last: float | None = None
        self._last_connect_error = ""

    # --- goals (other threads) -------------------------------------------------------------
    def plan(
        self, joint_names: Sequence[str], points: Sequence[TrajectoryPoint]
    ) -> TimedTrajectory:
        with self.lock:
            if self.estopped:
                raise InvalidInput("torque is off (e-stop): call the hold service first")
            if not self.ready:
                raise InvalidInput(f"the arm is not ready: {self.fault}")
            start = StartState(self.ref[0].copy(), self.ref[1].copy(), self.ref[2].copy())
            return plan_trajectory(self.ranges, joint_names, points, start, self.s.start_tolerance)

    def start_trajectory(
        self, traj: TimedTrajectory, now: float, tolerances: Tolerances, watchdog: bool = False
    ) -> int:
        with self.lock:
            self._end_traj("aborted", "preempted by a new trajectory")
            self.traj_token += 1
            self.traj, self.traj_start, self.traj_tolerances = traj, now, tolerances
            self.traj_outcome = Outcome("running", "")
            self.watchdog_deadline = now + self.s.watchdog_timeout if watchdog else None
            return self.traj_token

    def cancel_trajectory(self, token: int) -> None:
        with self.lock:
            if token == self.traj_token:
                self._end_traj("aborted", "cancelled")
                self.ref[1:] = 0.0

    def trajectory_outcome(self, token: int) -> Outcome:
        with self.lock:
            if token != self.traj_token:
                return Outcome("aborted", "preempted by a new trajectory")
            return self.traj_outcome or Outcome("aborted", "no trajectory")

    GRIPPER_CLIP = 0.02  # [rad] goals this little beyond the calibrated range are clipped

    def check_gripper_goal(self, position: float, max_effort: float) -> float:
        """The goal position to use: inside the calibrated range, or at most ``GRIPPER_CLIP``
        beyond it (closing onto the jaw's own stop is how a pick closes) and then clipped."""
        low, high = self.bus.lower[5], self.bus.upper[5]
        slack = self.GRIPPER_CLIP
        if not (math.isfinite(position) and low - slack <= position <= high + slack):
            raise LimitViolation(
                f"gripper position {position!r} outside its calibrated range "
                f"[{low:.4f}, {high:.4f}]"
            )
        if not math.isfinite(max_effort):
            raise InvalidInput(f"gripper max_effort {max_effort!r} must be finite")
        with self.lock:
            if self.estopped:
                raise InvalidInput("torque is off (e-stop): call the hold service first")
            if not self.ready:
                raise InvalidInput(f"the gripper is not ready: {self.fault}")
        return min(max(position, low), high)

    def start_gripper(self, position: float, max_effort: float, now: float) -> int:
        with self.lock:
            if self.grip_outcome and self.grip_outcome.state == "running":
                self.grip_outcome = Outcome("aborted", "preempted by a new gripper goal")
            self.grip_token += 1
            self.grip_goal, self.grip_started = float(position), now
            self.grip_commanded_limit = STALL_TORQUE if max_effort <= 0 else float(max_effort)
            self.grip_outcome = Outcome("running", "")
            self.gripper_monitor.reset()
            self.jaw.reset()
            self.contact_since, self.relaxed = None, False
            self._pending_limit = self.grip_commanded_limit
            return self.grip_token

    def gripper_outcome(self, token: int) -> Outcome:
        with self.lock:
            if token != self.grip_token:
                return Outcome("aborted", "preempted by a new gripper goal")
            return self.grip_outcome or Outcome("aborted", "no goal")

    def cancel_gripper(self, token: int) -> None:
        with self.lock:
            if token == self.grip_token and self.reading is not None:
                self.grip_goal = float(self.reading.position[5])
                self.grip_outcome = Outcome("aborted", "cancelled")

    @property
    def ready(self) -> bool:
        return self.bus.connected and not self.fault

    def estop(self) -> str:
        with self.lock:
            self.estopped = True
            self._end_traj("aborted", "e-stop: torque released")
            if self.grip_outcome and self.grip_outcome.state == "running":
                self.grip_outcome = Outcome("aborted", "e-stop: torque released")
            try:
                self.bus.torque_off()
            except BusError as exc:
                return f"torque off sent, but the bus failed: {exc}"
            return "torque released on all servos"

    def hold(self) -> str:
        with self.lock:
            self._end_traj("aborted", "hold requested")
            q = self.bus.hold()
            self._hold_reference(q)
            self.estopped = False
            return "holding the present position with torque on"

    # --- the cycle (bus thread) ------------------------------------------------------------
    def _end_traj(self, state: str, message: str) -> None:
        if self.traj is not None and self.traj_outcome and self.traj_outcome.state == "running":
            self.traj_outcome = Outcome(state, message)
        self.traj = None
        self.watchdog_deadline = None

    def _hold_reference(self, q: np.ndarray) -> None:
        self.ref[0] = q[:5]
        self.ref[1:] = 0.0
        self.grip_goal = float(q[5])

    def _fail(self, message: str, ids: Sequence[int] = ()) -> None:
        first = message != self.fault
        self.fault = message
        self._end_traj("aborted", f"bus fault: {message}")
        if self.grip_outcome and self.grip_outcome.state == "running":
            self.grip_outcome = Outcome("aborted", f"bus fault: {message}")
        if first:
            self.log("error", f"{message} -> policy {self.s.fault_policy}")
            if self.bus.connected:
                try:
                    if self.s.fault_policy == "torque_off":
                        self.bus.torque_off()
                    else:
                        self.bus.hold()
                except BusError:
                    pass

    def _port_lost(self, exc: PortUnavailable) -> None:
        """Close the dead port (reconnection is retried every reconnect_period) and fail."""
        self.bus.disconnect()
        self.reading = None
        self._fail(f"port lost: {exc}")

    def cycle(self, now: float) -> Snapshot:
        with self.lock:
            dt = 0.0 if self.last_cycle is None else now - self.last_cycle
            self.last_cycle = now
            if not self.bus.connected:
                self._try_connect(now)
            elif (
                self.fault.startswith("silent")
                and now - self.last_attempt >= self.s.reconnect_period
            ):
                self.last_attempt = now
                try:
                    if not self.bus.silent_ids():
                        self.log("info", "all servos answer again: holding the present position")
                        self._recover()
                except PortUnavailable as exc:
                    self._port_lost(exc)
            if self.bus.connected and not self.fault.startswith("silent"):
                self._io(now, dt)
            if now - self.last_good > self.s.stale_timeout and self.reading is not None:
                self.reading = None  # never publish a stale state as current
            jaw = (
                self.jaw.update(*self._jaw_inputs(), dt)
                if self.reading is not None and self.grip_goal is not None
                else JawEstimate(False, 0.0, 0.0)
            )
            self._after_jaw(jaw, now)
            return Snapshot(
                now, self.reading, jaw, self.health, self.bus.connected, self.fault, self.grip_limit
            )

    def _try_connect(self, now: float) -> None:
        if now - self.last_attempt < self.s.reconnect_period:
            return
        self.last_attempt = now
        try:
            self.bus.connect()
        except BusError as exc:
            if exc.__class__.__name__ + str(exc) != self._last_connect_error:
                self.log(
                    "error", f"connect failed: {exc}; retrying every {self.s.reconnect_period} s"
                )
                self._last_connect_error = exc.__class__.__name__ + str(exc)
            self.fault = f"not connected: {exc}"
            return
        self._last_connect_error = ""
        self.log("info", f"connected to the SO-101 on {self.bus.s.port}; holding its pose")
        self._recover()

    def _recover(self) -> None:
        self.ranges = JointRanges(ARM, self.bus.lower[:5].copy(), self.bus.upper[:5].copy())
        if self.estopped:  # an e-stop outlives a reconnection: torque stays off until hold
            try:
                self.bus.torque_off()
                self.fault = ""
            except BusError as exc:
                self.fault = f"silent: {exc}"
            return
        try:
            q = self.bus.hold()
            self.grip_limit = self.bus.set_torque_limit(5, STALL_TORQUE)
        except BusError as exc:
            self.fault = f"silent: {exc}"
            return
        self._hold_reference(q)
        self.fault = ""
        self.estopped = False
        self.jaw.reset()

    def _io(self, now: float, dt: float) -> None:
        try:
            reading = self.bus.read_state()
        except PortUnavailable as exc:
            self._port_lost(exc)
            return
        except ServoSilent as exc:
            if now - self.last_good <= self.s.stale_timeout:
                return  # a lost or corrupted reply: try again next cycle
            try:
                ids = self.bus.silent_ids()
            except PortUnavailable as lost:
                self._port_lost(lost)
                return
            if ids:
                self._fail(f"silent servo(s) {ids}: {exc}", ids)
                self.fault = f"silent servo(s) {ids}"
            else:
                self.log("warn", f"no good state for {self.s.stale_timeout} s ({exc}); retrying")
                self.last_good = now
            return
        self.reading, self.last_good = reading, now
        self.cycles += 1
        if self.cycles % self.s.health_every == 1:
            self._check_health()
        if self.estopped or self.fault:
            return
        self._advance_arm(now, reading)
        try:
            self._send(now)
        except PortUnavailable as exc:
            self._port_lost(exc)
        except ServoSilent as exc:
            self.log("warn", f"command write failed: {exc}")

    def _check_health(self) -> None:
        try:
            self.health = self.bus.read_health()
        except BusError as exc:
            self.log("warn", f"health read failed: {exc}")
            return
        new = self.health.status & ~self.reported_flags
        for i in np.flatnonzero(new):
            flags = fp.ErrorBit(int(self.health.status[i]))
            self.log("warn", f"servo {IDS[i]} ({JOINTS[i]}) reports {flags!r}")
            if i < 5 and flags & (fp.ErrorBit.OVERLOAD | fp.ErrorBit.OVERHEAT):
                self._end_traj("aborted", f"servo {IDS[i]} ({JOINTS[i]}) {flags!r}")
        self.reported_flags = self.health.status.copy()

    def _advance_arm(self, now: float, reading: JointReading) -> None:
        if self.traj is None:
            return
        if self.watchdog_deadline is not None and now > self.watchdog_deadline:
            self.log("warn", f"watchdog: no command for {self.s.watchdog_timeout} s, stopping")
            self._end_traj("aborted", "watchdog: commands stopped arriving")
            self._hold_reference(np.append(reading.position[:5], self.grip_goal))
            return
        t = now - self.traj_start
        self.traj.sample(t, self.ref)
        state = check_goal(
            t,
            self.traj,
            self.ref[0],
            reading.position[:5],
            reading.velocity[:5],
            self.traj_tolerances,
        )
        if state.outcome != "running":
            ok = state.outcome == "succeeded"
            self.traj_outcome = Outcome("succeeded" if ok else "aborted", state.message)
            self.traj = None
            self.watchdog_deadline = None
            if not ok:  # hold where the arm is, not where it failed to go
                self.ref[0] = reading.position[:5]
                self.ref[1:] = 0.0

    def feed_watchdog(self, now: float) -> None:
        with self.lock:
            if self.watchdog_deadline is not None:
                self.watchdog_deadline = now + self.s.watchdog_timeout

    def _send(self, now: float) -> None:
        goal = np.append(self.ref[0], self.grip_goal)
        self.bus.send_positions(goal)
        pending = self._pending_limit
        if pending is not None:
            self._pending_limit = None
            self.grip_limit = self.bus.set_torque_limit(5, pending)

    def _jaw_inputs(self):
        r = self.reading
        return r.position[5], self.grip_goal, r.velocity[5], r.torque[5], self.grip_limit

    def _after_jaw(self, jaw: JawEstimate, now: float) -> None:
        if self.grip_outcome and self.grip_outcome.state == "running" and self.reading is not None:
            reached, stalled = self.gripper_monitor.update(
                self.reading.position[5],
                self.grip_goal,
                self.reading.velocity[5],
                0.0 if self._grip_last is None else now - self._grip_last,
            )
            if reached:
                self.grip_outcome = Outcome("succeeded", "reached_goal")
            elif stalled and self.s.allow_stalling:
                self.grip_outcome = Outcome("succeeded", "stalled")
            elif now - self.grip_started > self.s.gripper_timeout:
                self.grip_outcome = Outcome("aborted", "timeout: neither reached nor stalled")
        self._grip_last = now
        if not jaw.contact:
            self.contact_since = None
            return
        if self.contact_since is None:
            self.contact_since = now
        if (
            self.s.relax
            and not self.relaxed
            and now - self.contact_since >= self.s.relax_delay
            and self.s.relax_torque < self.grip_limit
        ):
            self.relaxed = True
            self._pending_limit = self.s.relax_torque
            self.log(
                "info",
                f"grasp formed: gripper torque limit {self.grip_limit:.3f} -> "
                f"{self.s.relax_torque:.3f} N·m (least squeeze with margin)",
            )


class ServoReport(NamedTuple):
    """One servo's line of the diagnostics: level is ok | warn | error | stale; values are
    temperature [°C], voltage [V], current [A], error flags and load [N·m] when known."""

    servo_id: int
    joint: str
    level: str
    message: str
    values: dict[str, float]


def servo_reports(snap: Snapshot) -> list[ServoReport]:
    """Health of each servo from one cycle: a bus fault outranks a stale state, which outranks
    the servo's own error flags."""
    reports = []
    h = snap.health
    for i, (sid, joint) in enumerate(zip(IDS, JOINTS, strict=True)):
        flags = 0 if h is None else int(h.status[i])
        level, message = "ok", "ok"
        if snap.fault:
            level, message = "error", snap.fault
        elif snap.reading is None:
            level, message = "stale", "no fresh state"
        elif flags:
            level, message = "warn", f"error flags 0x{flags:02x}"
        values = {}
        if h is not None:
            values = {
                "temperature_C": h.temperature[i],
                "voltage_V": h.voltage[i],
                "current_A": h.current[i],
                "error_flags": flags,
            }
            if snap.reading is not None:
                values["load_Nm"] = snap.reading.torque[i]
        reports.append(ServoReport(sid, joint, level, message, values))
    return reports
