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

The driver's bus cycle (``ServoLoop``) is in ``physai_ros.backends.so101_loop``.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import termios
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from physai_ros.core import feetech_protocol as fp
from physai_ros.errors import InvalidInput, PhysaiError

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
        except (OSError, RuntimeError, serial.SerialException, termios.error) as exc:
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
        except (OSError, serial.SerialException, termios.error) as exc:
            # termios.error is no OSError: pyserial's buffer flush raises it on a dead port
            self._release_port()
            if isinstance(exc, ConnectionError) and exc.errno is None:  # LeRobot: no reply
                raise ServoSilent(f"{what}: {exc}".replace("\n", " ")) from exc
            raise PortUnavailable(f"{what}: port {self.s.port} failed ({exc})") from exc
        except RuntimeError as exc:
            self._release_port()
            raise ServoSilent(f"{what}: {exc}") from exc

    def _release_port(self) -> None:
        """The Feetech SDK marks its port busy for a transaction and clears the mark only on
        its own return paths; an OS error in the middle (a pulled cable) leaves it set, and
        every later call fails with "Port is in use!". Calls are serialised by the caller (the
        control loop's lock), so after a failed one the port is certainly free."""
        if self.bus is not None:
            self.bus.port_handler.is_using = False

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
        """Servos that do not answer a ping now (names the culprit of a failed sync read).
        Raises ``PortUnavailable`` when the port itself failed (the caller reconnects)."""
        if self.bus is None:
            return list(IDS)
        silent = []
        for i in IDS:
            try:
                model = self._guard(f"ping servo {i}", lambda i=i: self.bus.ping(i, num_retry=1))
            except ServoSilent:
                model = None
            if model is None:
                silent.append(i)
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
