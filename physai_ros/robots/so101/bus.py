"""The seam to a real SO-101: LeRobot's ``FeetechMotorsBus`` (``feetech-servo-sdk`` beneath).

``So101Bus`` speaks joint angles in radians (the model's convention) and hides LeRobot's
calibrated degrees. It builds the bus as LeRobot's ``SOFollower`` does (ids 1-6, STS3215, the
calibration file LeRobot writes), every motor -- the gripper too -- in ``DEGREES`` mode so the
jaw has an angle. ``SOFollower`` itself is not imported: it drags in torchvision
(``lerobot.processor``) for cameras we do not use, and its ``connect()`` may call
``calibrate()``, which prompts with ``input()``, and ``configure()``, which switches torque off
to write registers.

What a careful owner of a real arm expects, and this class keeps apart:

* ``open`` connects and finds the servos; it writes nothing.
* ``calibration_mismatches`` compares the servos' EPROM calibration with the file; only
  ``write_calibration`` (an explicit request, torque off) writes the file to the servos.
* ``setup_differences`` / ``write_setup`` bring the servo registers to ``config/so101_driver.yaml``
  writing only the registers that differ; EPROM registers only while torque is off (the STS
  Lock), so never under load.
* ``arm`` sets the RAM registers (acceleration profile, torque limit), the goal to a given pose
  and then switches torque on; ``release`` switches it off. Nothing else changes torque.

Safety: in DEGREES mode LeRobot neither clamps goals nor checks the calibrated range. Every
goal here is clipped to the intersection of the calibrated range and the joint limits, half a
step inside (LeRobot truncates to int), and ``send_positions`` returns what was sent.

The driver's bus cycle (``ServoLoop``) is in ``physai_ros.robots.so101.loop``.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import itertools
import math
import os
import termios
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from physai_ros.errors import InvalidInput, PhysaiError
from physai_ros.models.joints import SO101_ARM_JOINTS, SO101_JOINTS
from physai_ros.robots.so101 import protocol as fp

JOINTS = SO101_JOINTS
ARM = SO101_ARM_JOINTS
IDS = (1, 2, 3, 4, 5, 6)
STALL_TORQUE = 2.94  # [N·m] STS3215 (C018/C047) at its rated 12 V: the default servo variant
RATED_VOLTAGE = 12.0  # [V]
# Present_Load and Torque_Limit are 0.1 % of the stall torque *at the present supply* (a DC
# motor's stall torque is proportional to its voltage): ``So101Bus.stall``. A supply this far
# (relative) from the rated voltage is refused at configure and warned about while running.
VOLTAGE_BAND = 0.2
# [V] two reads of Present_Voltage (0.1 V a count) agree within one count of ADC noise; a
# reading that moved further from the supply in use is acted on only when a second agrees
VOLTAGE_AGREE = 0.1 + 1e-6
CURRENT_UNIT = 0.0065  # [A] per count
STEP_RAD = 2.0 * math.pi / fp.STEPS_PER_TURN
LEROBOT_MAX_RES = 4095  # LeRobot's DEGREES scale: 360° per 4095 steps
# read in one sync read each cycle: contiguous on the STS3215 (addresses 56-61)
STATE_REGISTERS = ("Present_Position", "Present_Velocity", "Present_Load")


class BusError(PhysaiError):
    """The bus failed; ``ids`` names the servos concerned (empty = the port itself)."""

    def __init__(self, message: str, ids: Sequence[int] = ()) -> None:
        super().__init__(message)
        self.ids = tuple(ids)


class PortUnavailable(BusError):
    """The port is missing, busy (another process holds it) or vanished (cable pulled)."""


class ServoSilent(BusError):
    """Servos did not answer ("There is no status packet") or answered garbage."""


def ping(bus, servo_id: int, retries: int = 0) -> tuple[int | None, int]:
    """(model number, error byte) of one servo; the model is None when it does not answer.

    Not LeRobot's ``FeetechMotorsBus.ping``: that returns None both for silence and for a
    status packet with an error bit set, so a servo that answers "overloaded" would read as a
    missing one. A servo keeps answering under a latched protection, its error byte saying
    which (the Feetech SCS/STS protocol's response frame carries the servo's state; LeRobot's
    own ``broadcast_ping`` logs "Some motors found returned an error status"); the SDK's ping,
    which LeRobot's wraps, keeps the two apart."""
    from scservo_sdk import COMM_SUCCESS

    for _ in range(1 + retries):
        model, comm, error = bus.packet_handler.ping(bus.port_handler, servo_id)
        if comm == COMM_SUCCESS:
            return int(model), int(error)
    return None, 0


def lerobot_calibration_file(kind: str, names: Sequence[str], device_id: str) -> Path:
    """Where LeRobot keeps ``<device_id>.json`` of a ``kind`` (robots, teleoperators) whose
    class was called each of ``names`` in turn (the newest first): the first that exists, else
    where the newest would write it (``HF_LEROBOT_HOME``, ``HF_LEROBOT_CALIBRATION`` honoured)."""
    home = Path(os.environ.get("HF_LEROBOT_HOME", "~/.cache/huggingface/lerobot")).expanduser()
    root = Path(os.environ.get("HF_LEROBOT_CALIBRATION", str(home / "calibration"))).expanduser()
    for name in names:
        path = root / kind / name / f"{device_id}.json"
        if path.is_file():
            return path
    return root / kind / names[0] / f"{device_id}.json"


def default_calibration_path(robot_id: str) -> Path:
    """Where LeRobot keeps ``<robot_id>.json`` for an SO follower (0.4 name, then 0.3's)."""
    return lerobot_calibration_file("robots", ("so_follower", "so101_follower"), robot_id)


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
    setup: dict[str, int] = field(default_factory=dict)  # register -> value, every servo
    gripper_setup: dict[str, int] = field(default_factory=dict)  # register -> value, gripper
    acceleration: int = 254  # Acceleration register [100 step/s²] written when arming
    # Goal_Velocity register [step/s] per joint written when arming (0 = the servo's full speed)
    velocity: tuple[int, ...] = (0,) * 6
    read_retries: int = 1
    stall_torque: float = STALL_TORQUE  # [N·m] the servos' stall torque at rated_voltage
    rated_voltage: float = RATED_VOLTAGE  # [V]

    def __post_init__(self) -> None:
        for name in ("stall_torque", "rated_voltage"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise InvalidInput(f"{name} must be finite and > 0, got {value!r}")


class SetupWrite(NamedTuple):
    """A register of one servo that differs from the driver's setup."""

    joint: str
    register: str
    present: int
    wanted: int
    eprom: bool


class SetupRefused(BusError):
    """EPROM registers differ while torque is on: writing them would need the arm released."""


class JointReading(NamedTuple):
    position: np.ndarray  # [rad], six joints
    velocity: np.ndarray  # [rad/s]
    torque: np.ndarray  # [N·m] from Present_Load


class Health(NamedTuple):
    temperature: np.ndarray  # [°C]
    voltage: np.ndarray  # [V]
    current: np.ndarray  # [A]
    status: np.ndarray  # ErrorBit flags per servo


LEROBOT_MISSING = (
    "LeRobot's Feetech motor bus is not installed (the real SO-101 needs it; the simulation "
    "does not, so `make demo` leaves it out): run `make setup` in the checkout (the full "
    "set-up: LeRobot, CPU torch and the Feetech SDK into .venv), or in your own environment "
    "`pip install -r requirements/lerobot.txt && pip install --no-deps -r "
    "requirements/lerobot-nodeps.txt`"
)


def require_lerobot() -> None:
    """Raise the error naming the set-up command when LeRobot is absent, without importing it
    (importing it imports torch: seconds)."""
    if importlib.util.find_spec("lerobot") is None:
        raise PhysaiError(LEROBOT_MISSING)


def _lerobot():
    require_lerobot()
    try:
        from lerobot.motors import Motor, MotorCalibration, MotorNormMode
        from lerobot.motors.feetech import FeetechMotorsBus
    except ImportError as exc:  # LeRobot without what it imports (torch, draccus, …)
        raise PhysaiError(f"{LEROBOT_MISSING} ({exc})") from exc
    return Motor, MotorCalibration, MotorNormMode, FeetechMotorsBus


def load_calibration(path: Path) -> dict[str, Any]:
    """LeRobot's calibration file, read as LeRobot reads it (draccus)."""
    _, MotorCalibration, _, _ = _lerobot()
    import draccus  # LeRobot's dependency: after the check that names what to install

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
        require_lerobot()  # a driver without LeRobot stops at once, naming the set-up command
        self.s = settings
        self.offsets = np.asarray(settings.joint_offsets, dtype=float)
        self.directions = np.asarray(settings.joint_directions, dtype=float)
        self.lower = np.asarray(settings.joint_min, dtype=float).copy()
        self.upper = np.asarray(settings.joint_max, dtype=float).copy()
        self.calibration: dict[str, Any] | None = None
        self.bus = None
        self._lock_fd: int | None = None
        self._max_torque: dict[str, int] | None = None
        self.ping_errors: dict[int, int] = {}  # servo id -> error byte its ping answered with
        # [V] each servo's supply as last read (Present_Voltage); the rated one until read
        self.supply = np.full(6, float(settings.rated_voltage))
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

    def stall(self) -> np.ndarray:
        """[N·m] each servo's stall torque at its present supply: ``stall_torque`` ×
        Present_Voltage / ``rated_voltage``. Present_Load and Torque_Limit are 0.1 % of it:
        every N·m to or from the servos goes through here."""
        return self.s.stall_torque * self.supply / self.s.rated_voltage

    def _note_supply(self, voltage: np.ndarray) -> None:
        """Follow the supply read (a zero, a servo that could not measure, keeps the last)."""
        self.supply = np.where(voltage > 0.0, voltage, self.supply)

    def supply_problem(self, voltage: np.ndarray | None = None) -> str:
        """'' when every servo's supply [V] is within VOLTAGE_BAND of the rated voltage, else
        what is wrong and what to set."""
        v = self.supply if voltage is None else np.asarray(voltage, dtype=float)
        rated = self.s.rated_voltage
        low, high = (1.0 - VOLTAGE_BAND) * rated, (1.0 + VOLTAGE_BAND) * rated
        out = [f"{JOINTS[i]} {v[i]:.1f} V" for i in range(6) if not low <= v[i] <= high]
        if not out:
            return ""
        return (
            f"servo supply (Present_Voltage) {', '.join(out)} is outside {low:.1f} to "
            f"{high:.1f} V, the band around rated_voltage {rated:g} V (stall_torque "
            f"{self.s.stall_torque:g} N·m there): set rated_voltage and stall_torque to the "
            "servos' variant (the 7.4 V STS3215: 7.4 V, 1.91 N·m), or fix the supply"
        )

    def read_supply(self) -> np.ndarray:
        """Present_Voltage [V] of every servo as two successive reads agree; the scale of every
        N·m (``stall``) follows it."""
        values = self._read_agreed("Present_Voltage")
        voltage = np.array([values[j] for j in JOINTS], dtype=float) / 10.0
        self._note_supply(voltage)
        return voltage

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

    def open(self) -> None:
        """Open the port and find all six STS3215 servos. Writes nothing to the servos. A servo
        answering with an error bit (overload, …) is found, its error byte in ``ping_errors``:
        what to do about it is the caller's decision."""
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
                bus.set_baudrate(self.s.baudrate)  # the adapter's rate, not a servo register
            found = {i: ping(bus, i, retries=1) for i in IDS}  # one lost reply is no silence
            self.ping_errors = {i: error for i, (_, error) in found.items() if error}
            silent = [i for i, (model, _) in found.items() if model is None]
            if silent:
                raise ServoSilent(
                    f"servo(s) {silent} do not answer on {self.s.port} at {self.s.baudrate} "
                    "bit/s (power off, cable, or a wrong baud rate)",
                    silent,
                )
            wrong = [i for i, (model, _) in found.items() if model != 777]
            if wrong:
                raise ServoSilent(f"servo(s) {wrong} are not STS3215 (model 777)", wrong)
            self.bus = bus
        except BusError:
            self._close(bus)
            raise
        except (OSError, RuntimeError, serial.SerialException, termios.error) as exc:
            self._close(bus)
            raise ServoSilent(f"connect on {self.s.port} failed: {exc}") from exc

    def _read_all(self, register: str) -> dict[str, int]:
        """Raw values of one register on every servo (one sync read)."""
        values = self._guard(
            f"sync read {register}",
            lambda: self.bus.sync_read(register, normalize=False, num_retry=self.s.read_retries),
        )
        return {j: int(values[j]) for j in JOINTS}

    def _read_agreed(self, register: str, tries: int = 4) -> dict[str, int]:
        """One register on every servo as two successive sync reads agree: a desynchronised
        bus hands one read another register's bytes, well formed, and no single read can
        tell. ``BusError`` when no two successive reads of ``tries`` agree."""
        last = self._read_all(register)
        for _ in range(tries - 1):
            values = self._read_all(register)
            if values == last:
                return values
            last = values
        raise BusError(f"{register} reads differently on successive reads ({tries} reads)")

    def calibration_mismatches(self, agreed: bool = False) -> list[str]:
        """How the servos' EPROM calibration differs from the file, one line per register and
        joint (empty: they agree). Reads only; ``agreed``: each register as two reads agree."""
        read = self._read_agreed if agreed else self._read_all
        fields = {"Homing_Offset": "homing_offset", "Min_Position_Limit": "range_min"}
        fields["Max_Position_Limit"] = "range_max"
        out = []
        for register, key in fields.items():
            present = read(register)
            for joint in JOINTS:
                wanted = int(getattr(self.calibration[joint], key))
                if present[joint] != wanted:
                    out.append(
                        f"{joint} {register} is {present[joint]} on the servo, {wanted} in "
                        f"{self.s.calibration_file}"
                    )
        return out

    def torque_enabled(self) -> np.ndarray:
        """Torque_Enable of each servo (bool array, JOINTS order)."""
        values = self._read_all("Torque_Enable")
        return np.array([bool(values[j]) for j in JOINTS])

    def _require_torque_off(self, what: str) -> None:
        on = [j for j, enabled in zip(JOINTS, self.torque_enabled(), strict=True) if enabled]
        if on:
            raise SetupRefused(
                f"{what} needs torque off, but {on} hold torque: release the arm (support it "
                "first) and configure again"
            )

    def write_calibration(self) -> None:
        """Write the file's calibration to the servos' EPROM (an explicit request only)."""
        self._require_torque_off("writing the calibration to the servos' EPROM")
        self._guard("unlock EPROM", lambda: self._write_each("Lock", dict.fromkeys(JOINTS, 0)))
        self._guard("write calibration", lambda: self.bus.write_calibration(self.calibration))

    def setup_differences(self, agreed: bool = False) -> list[SetupWrite]:
        """The setup registers (``BusSettings.setup`` and ``gripper_setup``) whose present
        value differs from the wanted one. Reads only; ``agreed``: each as two reads agree."""
        read = self._read_agreed if agreed else self._read_all
        wanted: dict[str, dict[str, int]] = {}
        for register, value in self.s.setup.items():
            wanted.setdefault(register, {}).update(dict.fromkeys(JOINTS, int(value)))
        for register, value in self.s.gripper_setup.items():
            wanted.setdefault(register, {})["gripper"] = int(value)
        out = []
        for register, per_joint in wanted.items():
            present = read(register)
            eprom = fp.REGISTERS_BY_NAME[register].eprom
            for joint, value in per_joint.items():
                if present[joint] != value:
                    out.append(SetupWrite(joint, register, present[joint], value, eprom))
        return out

    def write_setup(self, writes: Sequence[SetupWrite]) -> None:
        """Write the differing setup registers. EPROM ones only with torque off on every
        servo (``SetupRefused`` otherwise): writing them is never done under load."""
        eprom = [w for w in writes if w.eprom]
        if eprom:
            names = sorted({f"{w.joint}.{w.register}" for w in eprom})
            self._require_torque_off(f"writing EPROM registers {names}")
            self._guard("unlock EPROM", lambda: self._write_each("Lock", dict.fromkeys(JOINTS, 0)))
        for w in writes:
            self._guard(
                f"write {w.register} on {w.joint}",
                lambda w=w: self.bus.write(w.register, w.joint, w.wanted, normalize=False),
            )
        self._max_torque = None

    def _write_each(self, register: str, values: dict[str, int]) -> None:
        for joint, value in values.items():
            self.bus.write(register, joint, value, normalize=False)

    def read_goal(self, tries: int = 4) -> np.ndarray:
        """The servos' present Goal_Position [rad]: what they hold now, as two successive reads
        agree (``BusError`` if none of ``tries`` do): holding a garbled goal throws the arm."""
        last = self._sync_read("Goal_Position")
        for _ in range(tries - 1):
            goal = self._sync_read("Goal_Position")
            if np.allclose(goal, last, atol=1e-6):
                return self.to_rad(goal)
            last = goal
        raise BusError(f"Goal_Position reads differently on successive reads ({tries} reads)")

    def arm_torque_limits(self) -> dict[str, int]:
        """Torque_Limit [0.1 % of stall] each servo is armed with: full torque, but never above
        its protection cap -- the servo's Max_Torque_Limit and, for the gripper, the driver's
        ``gripper_setup`` one (LeRobot's 500). The STS3215 firmware is not known to clamp the
        RAM Torque_Limit to Max_Torque_Limit, so the cap is written, not left to the servo."""
        if self._max_torque is None:  # EPROM: read once per connection
            self._max_torque = self._read_all("Max_Torque_Limit")
        limits = {j: min(1000, int(self._max_torque[j])) for j in JOINTS}
        cap = self.s.gripper_setup.get("Max_Torque_Limit")
        if cap is not None:
            limits["gripper"] = min(limits["gripper"], int(cap))
        return limits

    def arm(self, positions: np.ndarray, gripper_limit: float | None = None) -> np.ndarray:
        """Arm the servos at ``positions`` [rad]: acceleration profile, speed (Goal_Velocity:
        the servo's own profile never runs faster) and full RAM torque limit (each servo's
        protection cap: ``arm_torque_limits``; the gripper's ``gripper_limit`` [N·m] when
        given: a jaw re-armed on the object it squeezes keeps its squeeze), goal =
        ``positions`` (clipped as every goal), then torque on (EPROM locked). Returns the goal
        sent [rad]. The caller checks ``positions`` against the limits."""
        self._guard(
            "write Acceleration", lambda: self._write_all("Acceleration", self.s.acceleration)
        )
        speeds = {j: int(v) for j, v in zip(JOINTS, self.s.velocity, strict=True)}
        self._guard(
            "write Goal_Velocity",
            lambda: self.bus.sync_write("Goal_Velocity", speeds, normalize=False),
        )
        limits = self.arm_torque_limits()
        if gripper_limit is not None:
            limits["gripper"] = min(limits["gripper"], self._torque_counts(5, gripper_limit))
        self._guard(
            "write Torque_Limit",
            lambda: self.bus.sync_write("Torque_Limit", limits, normalize=False),
        )
        sent = self.send_positions(positions)
        for _ in range(3):  # sync writes (no replies to lose), then a read to confirm
            self._guard("enable torque", lambda: self._write_all("Torque_Enable", 1))
            self._guard("lock EPROM", lambda: self._write_all("Lock", 1))
            off = ~self.torque_enabled()
            if not off.any():
                return sent
        raise ServoSilent(f"torque did not come on at {[JOINTS[i] for i in np.flatnonzero(off)]}")

    def _write_all(self, register: str, value: int) -> None:
        self.bus.sync_write(register, dict.fromkeys(JOINTS, value), normalize=False)

    def _close(self, bus) -> None:
        self._max_torque = None
        self.supply = np.full(6, float(self.s.rated_voltage))  # another arm may come
        with contextlib.suppress(Exception):
            bus.port_handler.closePort()
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._lock_fd)
            self._lock_fd = None
        self.bus = None

    def close(self) -> None:
        """Close the port; the servos keep whatever torque and goal they have."""
        if self.bus is not None:
            self._close(self.bus)

    def __enter__(self) -> So101Bus:
        """``with So101Bus(settings) as bus:`` opens the port and closes it on the way out,
        whatever happened inside (the port lock is released for the next user)."""
        self.open()
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

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

    # sync reads per read_state: 1 = Present_Position, Present_Velocity and Present_Load in one
    # read of their contiguous addresses (56-61); 3 = one read each (as before; for benchmarks)
    state_reads = 1

    def read_state(self) -> JointReading:
        if self.state_reads == 1:
            raw = self._sync_read_span(STATE_REGISTERS)
            pos, vel, load = (np.array([raw[r][j] for j in JOINTS], dtype=float) for r in raw)
        else:
            pos = self._sync_read("Present_Position")
            vel = self._sync_read("Present_Velocity")
            load = self._sync_read("Present_Load")
        position = self.to_rad(pos)
        velocity = self.directions * vel * STEP_RAD
        torque = self.directions * load * self.stall() / 1000.0
        return JointReading(position, velocity, torque)

    def _sync_read_span(self, registers: Sequence[str]) -> dict[str, dict[str, float]]:
        """Contiguous registers of every servo in ONE sync read (the Feetech protocol's SYNC
        READ takes a start address and a length; LeRobot's ``sync_read`` reads one named
        register, so its ``_sync_read`` is called with the span and each field taken from
        the SDK's ``GroupSyncRead`` by address). Each field decoded as ``sync_read`` would:
        LeRobot's sign-magnitude decoding, then its normalisation where it applies
        (Present_Position, in DEGREES). Returns register -> joint -> value."""
        bus = self.bus
        regs = [fp.register(r) for r in registers]
        start, end = regs[0].address, regs[-1].address + regs[-1].size
        if any(a.address + a.size != b.address for a, b in itertools.pairwise(regs)):
            raise InvalidInput(f"{list(registers)} are not contiguous")
        ids = [bus.motors[j].id for j in JOINTS]
        what = f"sync read {'+'.join(registers)}"
        self._guard(
            what,
            lambda: bus._sync_read(
                start,
                end - start,
                ids,
                num_retry=self.s.read_retries,
                raise_on_error=True,
                err_msg=f"Failed to {what} on {ids=} after {self.s.read_retries + 1} tries.",
            ),
        )
        # The SDK takes a status packet of the right id as the reply whatever its length: a
        # late reply to an earlier, shorter read (a desynchronised bus) gives fewer bytes, and
        # its getData checks a field's size, not its offset. Such a read failed.
        data = bus.sync_reader.data_dict
        short = [i for i in ids if len(data.get(i) or ()) < end - start]
        if short:
            raise ServoSilent(
                f"{what}: servo(s) {short} answered fewer than {end - start} bytes (a reply "
                "to another request)",
                short,
            )
        out = {}
        for reg in regs:
            raw = {i: bus.sync_reader.getData(i, reg.address, reg.size) for i in ids}
            decoded = bus._decode_sign(reg.name, raw)
            if reg.name in bus.normalized_data:
                decoded = bus._normalize(decoded)
            out[reg.name] = {bus._id_to_name(i): v for i, v in decoded.items()}
        return out

    def read_health(self) -> Health:
        """Temperature, voltage, current, status; the N·m scale (``stall``) follows the
        voltage as two reads agree (``_confirmed_voltage``). The status flags are the caller's
        to confirm (``ServoLoop._latched_flags``)."""
        health = Health(
            temperature=self._sync_read("Present_Temperature"),
            voltage=self._confirmed_voltage(self._sync_read("Present_Voltage") / 10.0),
            current=self._sync_read("Present_Current") * CURRENT_UNIT,
            status=self._sync_read("Status").astype(int),
        )
        self._note_supply(health.voltage)
        return health

    def _confirmed_voltage(self, first: np.ndarray) -> np.ndarray:
        """[V] Each servo's supply from ``first`` (a Present_Voltage read): where it moved from
        the supply in use by more than ``VOLTAGE_AGREE``, a second read must agree with it, or
        the supply in use stays. One garbled read (a desynchronised bus hands this register
        another's byte) would otherwise rescale every N·m -- effort, the gripper's torque
        limit -- and warn of a supply fault that is not there."""
        moved = np.abs(first - self.supply) > VOLTAGE_AGREE
        if not moved.any():
            return first
        second = self._sync_read("Present_Voltage") / 10.0
        agreed = np.abs(second - first) <= VOLTAGE_AGREE
        return np.where(moved, np.where(agreed, second, self.supply), first)

    def silent_ids(self) -> list[int]:
        """Servos that do not answer a ping now (names the culprit of a failed sync read).
        Raises ``PortUnavailable`` when the port itself failed (the caller reconnects)."""
        if self.bus is None:
            return list(IDS)
        silent = []
        for i in IDS:
            try:
                model, _ = self._guard(f"ping servo {i}", lambda i=i: ping(self.bus, i, retries=1))
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
        counts = self._torque_counts(joint, torque)
        # sync write: no status reply, so a servo's latched error flag (an overloaded gripper)
        # cannot make the write look failed -- LeRobot raises on any error bit of a reply
        self._guard(
            "write Torque_Limit",
            lambda: self.bus.sync_write("Torque_Limit", {name: counts}, normalize=False),
        )
        return counts * float(self.stall()[joint]) / 1000.0

    def _torque_counts(self, joint: int, torque: float) -> int:
        """Torque_Limit counts [0.1 % of stall] of ``torque`` [N·m] for ``joint``: at least 1,
        never above its Max_Torque_Limit."""
        if self._max_torque is None:  # EPROM: read once per connection
            self._max_torque = self._read_all("Max_Torque_Limit")
        counts = round(1000.0 * torque / float(self.stall()[joint]))
        return int(min(max(counts, 1), self._max_torque[JOINTS[joint]]))

    def release(self, joints: Sequence[int] = range(6)) -> None:
        """Torque off on the servos of ``joints`` (default every one): the arm goes limp (and
        falls if unsupported). Sync writes, then a read to confirm: it must work on servos
        reporting an error (an overload), whose every reply LeRobot would otherwise take as a
        failed write."""
        names = [JOINTS[j] for j in joints]
        for _ in range(3):
            for register in ("Torque_Enable", "Lock"):  # torque off, then unlock the EPROM
                values = dict.fromkeys(names, 0)
                self._guard(
                    f"write {register} 0",
                    lambda r=register, v=values: self.bus.sync_write(r, v, normalize=False),
                )
            on = self.torque_enabled() & np.isin(np.arange(6), list(joints))
            if not on.any():
                return
        raise ServoSilent(f"torque still on at {[JOINTS[i] for i in np.flatnonzero(on)]}")
