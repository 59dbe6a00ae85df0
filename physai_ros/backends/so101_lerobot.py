"""The seam to a real SO-101: LeRobot's ``FeetechMotorsBus`` (``feetech-servo-sdk`` beneath).

``So101Bus`` speaks joint angles in radians (the model's convention) and hides LeRobot's
calibrated degrees; it builds the bus exactly as LeRobot's ``SOFollower`` does (ids 1-6,
STS3215, the same ``configure()`` registers and gripper protections, the calibration file
LeRobot writes), but every motor -- the gripper too -- in ``DEGREES`` mode, so the jaw has an
angle. ``SOFollower`` itself is not imported: it drags in torchvision (``lerobot.processor``)
for cameras we do not use, and its ``connect()`` may call ``calibrate()``, which prompts with
``input()``; this class never calibrates (a mismatch between file and servos is resolved the
way LeRobot does when the user presses ENTER: the file is written to the servos).

Safety: in DEGREES mode LeRobot neither clamps goals nor checks the calibrated range. Every
goal here is clipped to the intersection of the calibrated range and the joint limits, half a
step inside (LeRobot truncates to int), and ``send_positions`` returns what was sent.

``ServoLoop`` is one bus cycle of the driver (state in, trajectory/gripper goals out, contact
estimate, fault policy), pure and thread-safe, so the node stays a thin ROS shell.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

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
from physai_ros.errors import InvalidInput, LimitViolation, PhysaiError

JOINTS = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper")
ARM = JOINTS[:5]
IDS = (1, 2, 3, 4, 5, 6)
STALL_TORQUE = 2.94  # [N·m] STS3215 at 12 V; Present_Load and Torque_Limit are 0.1 % of it
CURRENT_UNIT = 0.0065  # [A] per count
STEP_RAD = 2.0 * math.pi / fp.STEPS_PER_TURN
LEROBOT_MAX_RES = 4095  # LeRobot's DEGREES scale: 360° per 4095 steps


class BusError(PhysaiError):
    """The bus failed; ``ids`` names the servos concerned (empty = the port itself)."""

    def __init__(self, message: str, ids: Sequence[int] = ()) -> None:
        super().__init__(message)
        self.ids = tuple(ids)


class PortUnavailable(BusError):
    """The port is missing, busy (another process holds it) or vanished (cable pulled)."""


class ServoSilent(BusError):
    """Servos did not answer ("There is no status packet") or answered garbage."""


def default_calibration_path(robot_id: str) -> Path:
    """Where LeRobot 0.4 keeps ``<robot_id>.json`` for an SO follower."""
    home = Path(os.environ.get("HF_LEROBOT_HOME", "~/.cache/huggingface/lerobot")).expanduser()
    root = Path(os.environ.get("HF_LEROBOT_CALIBRATION", str(home / "calibration"))).expanduser()
    for robot in ("so_follower", "so101_follower"):  # 0.4 name, then the 0.3 name
        path = root / "robots" / robot / f"{robot_id}.json"
        if path.is_file():
            return path
    return root / "robots" / "so_follower" / f"{robot_id}.json"


@dataclass(frozen=True)
class BusSettings:
    """Everything ``So101Bus`` needs; see config/so101_driver.yaml for meanings and units."""

    port: str
    calibration_file: Path
    joint_min: np.ndarray  # [rad] joint limits (model), all six joints
    joint_max: np.ndarray
    baudrate: int = 1_000_000
    joint_offsets: tuple[float, ...] = (0.0,) * 6
    joint_directions: tuple[int, ...] = (1,) * 6
    servo: dict[str, int] = field(default_factory=dict)
    gripper_protection: dict[str, int] = field(default_factory=dict)
    read_retries: int = 1


class JointReading(NamedTuple):
    position: np.ndarray  # [rad], six joints
    velocity: np.ndarray  # [rad/s]
    torque: np.ndarray  # [N·m] from Present_Load


class Health(NamedTuple):
    temperature: np.ndarray  # [°C]
    voltage: np.ndarray  # [V]
    current: np.ndarray  # [A]
    status: np.ndarray  # ErrorBit flags per servo


def _lerobot():
    try:
        from lerobot.motors import Motor, MotorCalibration, MotorNormMode
        from lerobot.motors.feetech import FeetechMotorsBus
    except ImportError as exc:
        raise PhysaiError(
            "LeRobot's Feetech bus is not installed: pip install -r requirements/lerobot.txt "
            f"&& pip install --no-deps lerobot==0.4.4 ({exc})"
        ) from exc
    return Motor, MotorCalibration, MotorNormMode, FeetechMotorsBus


def load_calibration(path: Path) -> dict[str, Any]:
    """LeRobot's calibration file, read as LeRobot reads it (draccus)."""
    import draccus

    _, MotorCalibration, _, _ = _lerobot()
    if not path.is_file():
        raise InvalidInput(
            f"calibration file {path} not found: calibrate the arm with LeRobot first "
            "(lerobot-calibrate --robot.type=so101_follower --robot.id=<id>)"
        )
    with path.open() as stream:
        calibration = draccus.load(dict[str, MotorCalibration], stream)
    missing = [j for j in JOINTS if j not in calibration]
    if missing:
        raise InvalidInput(f"calibration file {path} lacks {missing}")
    return calibration


class So101Bus:
    """Connect / read / send on the six servos, in radians. Not thread-safe (one bus loop)."""

    def __init__(self, settings: BusSettings) -> None:
        self.s = settings
        self.offsets = np.asarray(settings.joint_offsets, dtype=float)
        self.directions = np.asarray(settings.joint_directions, dtype=float)
        self.lower = np.asarray(settings.joint_min, dtype=float).copy()
        self.upper = np.asarray(settings.joint_max, dtype=float).copy()
        self.calibration: dict[str, Any] | None = None
        self.bus = None
        self._lock_fd: int | None = None
        if settings.calibration_file.is_file():
            self.load_calibration()

    def load_calibration(self) -> None:
        """Read LeRobot's calibration file and narrow the safe range to it (half a step
        inside: LeRobot truncates the step value with int())."""
        calibration = load_calibration(self.s.calibration_file)
        lo_deg, hi_deg = [], []
        for j in JOINTS:
            cal = calibration[j]
            mid = (cal.range_min + cal.range_max) / 2.0
            lo_deg.append((cal.range_min + 0.5 - mid) * 360.0 / LEROBOT_MAX_RES)
            hi_deg.append((cal.range_max - 0.5 - mid) * 360.0 / LEROBOT_MAX_RES)
        a = self.to_rad(np.array(lo_deg))
        b = self.to_rad(np.array(hi_deg))
        lower = np.maximum(np.minimum(a, b), self.s.joint_min)
        upper = np.minimum(np.maximum(a, b), self.s.joint_max)
        if np.any(lower >= upper):
            bad = [JOINTS[i] for i in np.flatnonzero(lower >= upper)]
            raise InvalidInput(f"calibrated ranges of {bad} do not overlap the joint limits")
        self.calibration, self.lower, self.upper = calibration, lower, upper

    # --- units -----------------------------------------------------------------------------
    def to_rad(self, degrees: np.ndarray) -> np.ndarray:
        return self.directions * np.radians(degrees) + self.offsets

    def to_deg(self, radians: np.ndarray) -> np.ndarray:
        return np.degrees((np.asarray(radians) - self.offsets) * self.directions)

    # --- connection ------------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        return self.bus is not None

    def _lock_port(self) -> None:
        port = self.s.port
        if not os.path.exists(port):
            raise PortUnavailable(f"port {port} does not exist (unplugged? see lerobot-find-port)")
        try:
            fd = os.open(port, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        except OSError as exc:
            raise PortUnavailable(f"cannot open port {port}: {exc.strerror}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            raise PortUnavailable(f"port {port} is busy: another process holds it") from exc
        self._lock_fd = fd

    def connect(self) -> None:
        """Open the port, find all six servos, make the servos' calibration the file's and
        configure them as SOFollower does; servos end holding their present position."""
        Motor, _, MotorNormMode, FeetechMotorsBus = _lerobot()
        import serial

        if self.calibration is None:
            try:
                self.load_calibration()
            except InvalidInput as exc:
                raise BusError(str(exc)) from exc
        self._lock_port()
        motors = {
            j: Motor(i, "sts3215", MotorNormMode.DEGREES) for j, i in zip(JOINTS, IDS, strict=True)
        }
        bus = FeetechMotorsBus(self.s.port, motors, calibration=dict(self.calibration))
        try:
            bus.connect(handshake=False)
            if bus.get_baudrate() != self.s.baudrate:
                bus.set_baudrate(self.s.baudrate)
            found = {i: bus.ping(i) for i in IDS}
            silent = [i for i, model in found.items() if model is None]
            if silent:
                raise ServoSilent(
                    f"servo(s) {silent} do not answer on {self.s.port} at {self.s.baudrate} "
                    "bit/s (power off, cable, or a wrong baud rate)",
                    silent,
                )
            wrong = [i for i, model in found.items() if model != 777]
            if wrong:
                raise ServoSilent(f"servo(s) {wrong} are not STS3215 (model 777)", wrong)
            self.bus = bus
            if not bus.is_calibrated:
                bus.write_calibration(dict(self.calibration))
            self._configure()
        except BusError:
            self._close(bus)
            raise
        except (ConnectionError, OSError, RuntimeError, serial.SerialException) as exc:
            self._close(bus)
            raise ServoSilent(f"connect on {self.s.port} failed: {exc}") from exc

    def _configure(self) -> None:
        bus, servo = self.bus, self.s.servo
        bus.disable_torque()
        bus.configure_motors(
            return_delay_time=servo.get("return_delay_time", 0),
            acceleration=servo.get("acceleration", 254),
        )
        for j in JOINTS:
            bus.write("Operating_Mode", j, 0)
            bus.write("P_Coefficient", j, servo.get("p_coefficient", 16))
            bus.write("I_Coefficient", j, servo.get("i_coefficient", 0))
            bus.write("D_Coefficient", j, servo.get("d_coefficient", 32))
        g = self.s.gripper_protection
        bus.write("Max_Torque_Limit", "gripper", g.get("max_torque_limit", 500))
        bus.write("Protection_Current", "gripper", g.get("protection_current", 250))
        bus.write("Overload_Torque", "gripper", g.get("overload_torque", 25))
        for j in JOINTS:
            bus.write("Torque_Limit", j, 1000)  # RAM limit back to full; Max_Torque_Limit caps
        self.hold()

    def _close(self, bus) -> None:
        with contextlib.suppress(Exception):
            bus.port_handler.closePort()
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._lock_fd)
            self._lock_fd = None
        self.bus = None

    def disconnect(self, disable_torque: bool = False) -> None:
        if self.bus is None:
            return
        if disable_torque:
            with contextlib.suppress(Exception):
                self.bus.disable_torque(num_retry=2)
        self._close(self.bus)

    # --- cycle I/O -------------------------------------------------------------------------
    def _guard(self, what: str, call):
        import serial

        if self.bus is None:
            raise PortUnavailable(f"{what}: not connected")
        try:
            return call()
        except (OSError, serial.SerialException) as exc:
            if isinstance(exc, ConnectionError):
                raise ServoSilent(f"{what}: {exc}".replace("\n", " ")) from exc
            raise PortUnavailable(f"{what}: port {self.s.port} failed ({exc})") from exc
        except RuntimeError as exc:
            raise ServoSilent(f"{what}: {exc}") from exc

    def _sync_read(self, name: str, normalize: bool = True) -> np.ndarray:
        values = self._guard(
            f"sync read {name}",
            lambda: self.bus.sync_read(name, normalize=normalize, num_retry=self.s.read_retries),
        )
        return np.array([values[j] for j in JOINTS], dtype=float)

    def read_state(self) -> JointReading:
        position = self.to_rad(self._sync_read("Present_Position"))
        velocity = self.directions * self._sync_read("Present_Velocity") * STEP_RAD
        torque = self.directions * self._sync_read("Present_Load") * STALL_TORQUE / 1000.0
        return JointReading(position, velocity, torque)

    def read_health(self) -> Health:
        return Health(
            temperature=self._sync_read("Present_Temperature"),
            voltage=self._sync_read("Present_Voltage") / 10.0,
            current=self._sync_read("Present_Current") * CURRENT_UNIT,
            status=self._sync_read("Status").astype(int),
        )

    def silent_ids(self) -> list[int]:
        """Servos that do not answer a ping now (names the culprit of a failed sync read)."""
        if self.bus is None:
            return list(IDS)
        silent = []
        for i in IDS:
            try:
                if self.bus.ping(i, num_retry=1) is None:
                    silent.append(i)
            except Exception:  # a dead port: everyone is silent
                return list(IDS)
        return silent

    def clip(self, positions: np.ndarray) -> np.ndarray:
        return np.clip(np.asarray(positions, dtype=float), self.lower, self.upper)

    def _steps(self, q: np.ndarray, joints: Sequence[int]) -> np.ndarray:
        """Fractional servo steps (LeRobot's DEGREES scale) of angles ``q`` [rad]."""
        deg = np.degrees((q - self.offsets[joints]) * self.directions[joints])
        mids = np.array([self._mid(j) for j in joints])
        return deg * LEROBOT_MAX_RES / 360.0 + mids

    def _mid(self, joint: int) -> float:
        cal = self.calibration[JOINTS[joint]]
        return (cal.range_min + cal.range_max) / 2.0

    def send_positions(self, positions: np.ndarray, joints: Sequence[int] = range(6)) -> np.ndarray:
        """Sync-write Goal_Position, each goal a whole step inside both the calibrated range
        and the joint limits; returns the angles actually sent [rad].

        The steps are chosen here, not by LeRobot's ``int()`` truncation: the degrees handed
        to LeRobot are ``(step + 0.5 - mid)`` so that its truncation lands on that step."""
        joints = list(joints)
        q = np.asarray(positions, dtype=float)
        if q.shape != (len(joints),) or not np.all(np.isfinite(q)):
            raise InvalidInput(f"positions must be {len(joints)} finite values, got {positions!r}")
        if self.calibration is None:
            raise PortUnavailable("no calibration loaded: not connected")
        a = self._steps(self.lower[joints], joints)
        b = self._steps(self.upper[joints], joints)
        cal_min = np.array([self.calibration[JOINTS[j]].range_min for j in joints])
        cal_max = np.array([self.calibration[JOINTS[j]].range_max for j in joints])
        low = np.maximum(np.ceil(np.minimum(a, b) - 1e-9), cal_min)
        high = np.minimum(np.floor(np.maximum(a, b) + 1e-9), cal_max)
        steps = np.clip(np.round(self._steps(q, joints)), low, high)
        mids = np.array([self._mid(j) for j in joints])
        deg = (steps + 0.5 - mids) * 360.0 / LEROBOT_MAX_RES
        goal = {JOINTS[j]: float(d) for j, d in zip(joints, deg, strict=True)}
        self._guard("sync write Goal_Position", lambda: self.bus.sync_write("Goal_Position", goal))
        sent_deg = (steps - mids) * 360.0 / LEROBOT_MAX_RES
        return self.directions[joints] * np.radians(sent_deg) + self.offsets[joints]

    def set_torque_limit(self, joint: int, torque: float) -> float:
        """Torque_Limit (RAM) of one servo from newton-metres; never above Max_Torque_Limit
        (LeRobot's gripper protection). Returns the limit now in force [N·m]."""
        if not math.isfinite(torque):
            raise InvalidInput(f"torque limit {torque!r} must be finite")
        name = JOINTS[joint]
        cap = self._guard("read Max_Torque_Limit", lambda: self.bus.read("Max_Torque_Limit", name))
        counts = int(min(max(round(1000.0 * torque / STALL_TORQUE), 1), cap))
        self._guard("write Torque_Limit", lambda: self.bus.write("Torque_Limit", name, counts))
        return counts * STALL_TORQUE / 1000.0

    def torque_off(self) -> None:
        self._guard("disable torque", lambda: self.bus.disable_torque())

    def hold(self) -> np.ndarray:
        """Goal := present position (clipped to the safe range), then torque on, so the
        servos do not jump to an old goal. Returns the goal [rad]."""
        present = self.to_rad(self._sync_read("Present_Position"))
        sent = self.send_positions(present)
        self._guard("enable torque", lambda: self.bus.enable_torque())
        return sent


# --- the driver's bus cycle ---------------------------------------------------------------------
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
                if not self.bus.silent_ids():
                    self.log("info", "all servos answer again: holding the present position")
                    self._recover()
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
            self.bus.disconnect()
            self.reading = None
            self._fail(f"port lost: {exc}")
            return
        except ServoSilent as exc:
            if now - self.last_good <= self.s.stale_timeout:
                return  # a lost or corrupted reply: try again next cycle
            ids = self.bus.silent_ids()
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
            self.bus.disconnect()
            self._fail(f"port lost: {exc}")
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


def wait_until(predicate, timeout: float, period: float = 0.01) -> bool:
    """Poll ``predicate`` (tests and scripts); True if it held within ``timeout`` [s]."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(period)
    return bool(predicate())
