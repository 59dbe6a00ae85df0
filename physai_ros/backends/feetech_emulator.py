"""A bus of six Feetech STS3215 servos on a pseudo-terminal, moved by a MuJoCo SO-101.

Why: no arm is attached, yet the hardware path -- LeRobot's ``FeetechMotorsBus`` and the
``scservo_sdk`` under it, unchanged -- must be exercised byte for byte. The emulator opens a
pty, answers PING / READ / WRITE / REG WRITE / ACTION / SYNC READ / SYNC WRITE as the servos
do (``physai_ros.core.feetech_protocol``), keeps one control table per servo, and couples the
table to physics stepped in real time: ``Goal_Position`` and the torque limits drive the
model's position actuators; ``Present_Position/Velocity/Load/Current`` come back from the
simulation, so the gripper's load rises when its jaws squeeze the cube.

Servo model (documented so the driver's tests know what they face):
* encoder: 4096 steps/turn; ``Present_Position = actual - Homing_Offset`` (mod 4096); in
  position mode the goal is clamped to [Min_Position_Limit, Max_Position_Limit] as the
  firmware does; the position loop is MuJoCo's actuator with kp scaled by P_Coefficient/16.
* torque cap = 2.94 N·m × min(Torque_Limit, Max_Torque_Limit)/1000; ``Torque_Enable = 0``
  makes the joint free (cap 0). Re-enabling torque servos to the *stored* goal.
* load = torque / 2.94 N·m in 0.1 % (sign-magnitude, bit 10); current = |torque| / KT.
* overload protection: load above Overload_Torque % for Protection_Time × 10 ms latches
  OVERLOAD (if enabled in Unloading_Condition) and cuts the output to Protective_Torque %;
  over-current likewise with Protection_Current / Over_Current_Protection_Time; over-
  temperature (first-order thermal model) unloads. Latched errors clear when torque is
  re-enabled. The Status register and every status packet's error byte carry the flags.
* timing: a reply leaves after the request's and the reply's byte times at the bus baud rate
  plus Return_Delay_Time × 2 µs (Python's sleep adds ~0.1 ms); Response_Status_Level 0
  suppresses WRITE acknowledgements. A reply that could only leave after the client began its
  next request (the emulator starved of CPU) is dropped, as a real bus would have delivered
  it in time to be flushed by that request.
* power-up: by default the servos hold the initial pose with torque on (a real arm would be
  resting folded; a free arm in the simulation would fall on the cube). ``power_on_torque``
  off gives the real power-up (torque off, goal = present).

Faults for tests: servo ids that do not answer, every n-th reply with a bad checksum, the
client's baud rate (read from the pty's termios) differing from the bus's (no servo hears a
valid packet, as with real framing errors), an error flag forced on a servo
(``EmulatedServo.forced``), and closing / reopening the port (a pulled cable: physics keeps
running, servos keep their last goal).

Pure: numpy/mujoco and the standard library; never rclpy (``nodes/so101_emulator.py`` adds
the motion-capture topic).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import select
import signal
import sys
import termios
import threading
import time
import tty
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np

from physai_ros.core import feetech_protocol as fp
from physai_ros.core.feetech_protocol import ErrorBit, Instruction
from physai_ros.errors import InvalidInput

JOINTS = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper")
IDS = (1, 2, 3, 4, 5, 6)  # LeRobot's SO-101 follower: ids 1..6 in this joint order
STALL_TORQUE = 2.94  # [N·m] STS3215 (12 V) stall torque = the model's actuator forcerange
STALL_CURRENT = 2.7  # [A] STS3215 datasheet stall current; KT = STALL_TORQUE / STALL_CURRENT
IDLE_CURRENT = 0.05  # [A] electronics with torque on
CURRENT_UNIT = 0.0065  # [A] per count of Present_Current / Protection_Current
MODEL_P_GAIN = 16  # the P_Coefficient the model's kp corresponds to (LeRobot's setting)
STEP_RAD = 2.0 * math.pi / fp.STEPS_PER_TURN
MID = 2047  # LeRobot's half-turn homing puts the middle pose here
THERMAL_TIME = 60.0  # [s] winding temperature time constant
THERMAL_RISE = 60.0  # [°C] steady rise at stall current
MOVING_THRESHOLD = 20  # [step/s] Moving = 1 above this speed
# Encoder reading at joint angle 0 of each servo as assembled: arbitrary, so homing offsets
# are not trivially zero (as on a real arm).
ENCODER_AT_ZERO = (1900, 2210, 1750, 2300, 2047, 1500)


def _reg(name: str) -> fp.Register:
    return fp.REGISTERS_BY_NAME[name]


class EmulatedServo:
    """One STS3215: its control table and the firmware's reactions (see module docstring)."""

    def __init__(self, servo_id: int, encoder_at_zero: int, supply_voltage: float = 12.0) -> None:
        self.mem = bytearray(fp.MEMORY_SIZE)
        for reg in fp.STS3215_REGISTERS:
            self.mem[reg.address : reg.address + reg.size] = fp.to_bytes(reg.default, reg.size)
        self.set("ID", servo_id)
        self.set("Present_Voltage", round(supply_voltage * 10))
        self.encoder_at_zero = int(encoder_at_zero)
        self.latched = 0  # protection errors, cleared by re-enabling torque
        self.forced = 0  # errors forced by a test
        self.overload_time = 0.0
        self.overcurrent_time = 0.0
        self.temperature = 25.0
        self.ambient = 25.0
        self.registered: tuple[int, bytes] | None = None  # REG WRITE waiting for ACTION

    # --- table access ----------------------------------------------------------------------
    @property
    def servo_id(self) -> int:
        return self.mem[5]

    def get(self, name: str) -> int:
        reg = _reg(name)
        raw = fp.from_bytes(self.mem[reg.address : reg.address + reg.size])
        return raw if reg.sign_bit is None else fp.from_sign_magnitude(raw, reg.sign_bit)

    def set(self, name: str, value: int) -> None:
        reg = _reg(name)
        raw = value if reg.sign_bit is None else fp.to_sign_magnitude(value, reg.sign_bit)
        self.mem[reg.address : reg.address + reg.size] = fp.to_bytes(raw, reg.size)

    def read(self, address: int, length: int) -> bytes:
        return bytes(self.mem[address : address + length])

    def write(self, address: int, data: bytes) -> None:
        """Apply a WRITE; bytes of read-only registers are ignored, as the firmware does."""
        was_enabled = self.get("Torque_Enable")
        for offset, byte in enumerate(data):
            addr = address + offset
            if addr >= fp.MEMORY_SIZE or self._read_only(addr):
                continue
            self.mem[addr] = byte
        if self.get("Torque_Enable") and not was_enabled:
            self.latched = 0  # re-enabling torque clears latched protection
            self.overload_time = self.overcurrent_time = 0.0

    @staticmethod
    def _read_only(address: int) -> bool:
        for reg in fp.STS3215_REGISTERS:
            if reg.address <= address < reg.address + reg.size:
                return not reg.writable
        return False

    @property
    def error(self) -> int:
        return self.latched | self.forced | self._voltage_error()

    def _voltage_error(self) -> int:
        v = self.get("Present_Voltage")
        return (
            int(ErrorBit.VOLTAGE)
            if not self.get("Min_Voltage_Limit") <= v <= self.get("Max_Voltage_Limit")
            else 0
        )

    # --- position mapping ------------------------------------------------------------------
    def present_steps(self, q: float) -> int:
        actual = round(self.encoder_at_zero + q / STEP_RAD) % fp.STEPS_PER_TURN
        return (actual - self.get("Homing_Offset")) % fp.STEPS_PER_TURN

    def angle_of(self, present: int) -> float:
        """Joint angle [rad] at which ``Present_Position`` would read ``present``."""
        actual = present + self.get("Homing_Offset")
        delta = (actual - self.encoder_at_zero + 2048) % fp.STEPS_PER_TURN - 2048
        return delta * STEP_RAD

    def clamped_goal(self) -> int:
        goal = self.get("Goal_Position")
        low, high = self.get("Min_Position_Limit"), self.get("Max_Position_Limit")
        return min(max(goal, low), high) if low < high else goal

    # --- coupling to physics ---------------------------------------------------------------
    def command(self) -> tuple[float, float, float]:
        """(target angle [rad], torque cap [N·m], P gain scale) for the physics step."""
        if not self.get("Torque_Enable") or self.get("Operating_Mode") != 0:
            return math.nan, 0.0, 1.0
        limit = min(self.get("Torque_Limit"), self.get("Max_Torque_Limit")) / 1000.0
        if self.latched & int(ErrorBit.OVERHEAT):
            limit = 0.0
        elif self.latched & int(ErrorBit.OVERLOAD | ErrorBit.OVERCURRENT):
            limit = min(limit, self.get("Protective_Torque") / 100.0)
        gain = max(self.get("P_Coefficient"), 1) / MODEL_P_GAIN
        return self.angle_of(self.clamped_goal()), STALL_TORQUE * limit, gain

    def sense(self, q: float, qdot: float, torque: float, dt: float) -> None:
        """Update the Present_* registers and protections after a physics step of ``dt`` [s]."""
        self.set("Present_Position", self.present_steps(q))
        speed = round(qdot / STEP_RAD)
        self.set("Present_Velocity", max(-32767, min(32767, speed)))
        load = round(1000.0 * torque / STALL_TORQUE)
        self.set("Present_Load", max(-1023, min(1023, load)))
        enabled = self.get("Torque_Enable")
        current = abs(torque) / (STALL_TORQUE / STALL_CURRENT) + (IDLE_CURRENT if enabled else 0)
        self.set("Present_Current", min(round(current / CURRENT_UNIT), 32767))
        self.set("Moving", int(abs(speed) > MOVING_THRESHOLD))
        target = self.ambient + THERMAL_RISE * (current / STALL_CURRENT) ** 2
        self.temperature += (target - self.temperature) * min(1.0, dt / THERMAL_TIME)
        self.set("Present_Temperature", round(self.temperature))
        enabled_protections = self.get("Unloading_Condition")
        if abs(load) > 10 * self.get("Overload_Torque"):
            self.overload_time += dt
        else:
            self.overload_time = 0.0
        if self.overload_time > 0.01 * self.get("Protection_Time"):
            self.latched |= int(ErrorBit.OVERLOAD) & enabled_protections
        if current > CURRENT_UNIT * self.get("Protection_Current"):
            self.overcurrent_time += dt
        else:
            self.overcurrent_time = 0.0
        if self.overcurrent_time > 0.01 * self.get("Over_Current_Protection_Time"):
            self.latched |= int(ErrorBit.OVERCURRENT) & enabled_protections
        if self.temperature > self.get("Max_Temperature_Limit"):
            self.latched |= int(ErrorBit.OVERHEAT) & enabled_protections
        self.set("Status", self.error)


@dataclass
class Faults:
    """What a test breaks on purpose (all off by default)."""

    mute_ids: set[int] = field(default_factory=set)  # these servos never answer
    corrupt_every: int = 0  # every n-th reply gets a wrong checksum (0 = never)


@dataclass
class BusStats:
    requests: int = 0
    replies: int = 0
    corrupt_requests: int = 0
    corrupted_replies: int = 0
    baud_mismatches: int = 0
    late_steps: int = 0  # times the physics fell > 100 ms behind real time (debt dropped)
    late_replies_dropped: int = 0  # the client had moved on to its next request (see _serve)
    writes: list[bytes] = field(default_factory=list)  # raw instruction packets, if recorded


class So101Physics:
    """The MuJoCo scene behind the servos: six position actuators and a free cube."""

    def __init__(self, scene_kwargs: dict | None = None, initial: Sequence[float] | None = None):
        from physai_ros.models import build_scene

        self.model = build_scene("so101", **(scene_kwargs or {}))
        self.data = mujoco.MjData(self.model)
        m = self.model
        self.qadr = np.array([m.jnt_qposadr[m.joint(j).id] for j in JOINTS])
        self.dadr = np.array([m.jnt_dofadr[m.joint(j).id] for j in JOINTS])
        self.act = np.array([m.actuator(j).id for j in JOINTS])
        self.kp0 = m.actuator_gainprm[self.act, 0].copy()
        self.cube = m.body("cube").id
        q0 = np.zeros(len(JOINTS)) if initial is None else np.asarray(initial, dtype=float)
        self.data.qpos[self.qadr] = q0
        self.data.ctrl[self.act] = q0
        mujoco.mj_forward(m, self.data)
        self.dt = float(m.opt.timestep)

    def apply(self, i: int, target: float, cap: float, gain: float) -> None:
        a = self.act[i]
        free = math.isnan(target)
        cap = 0.0 if free else cap
        self.model.actuator_forcerange[a] = (-cap, cap)
        kp = self.kp0[i] * gain
        self.model.actuator_gainprm[a, 0] = kp
        self.model.actuator_biasprm[a, 1] = -kp
        if not free:
            self.data.ctrl[a] = target

    def step(self) -> None:
        mujoco.mj_step(self.model, self.data)

    def joint(self, i: int) -> tuple[float, float, float]:
        """(angle [rad], speed [rad/s], actuator torque [N·m]) of joint ``i``."""
        d = self.data
        return (
            float(d.qpos[self.qadr[i]]),
            float(d.qvel[self.dadr[i]]),
            float(d.actuator_force[self.act[i]]),
        )

    def cube_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """Cube position [m] and quaternion (w, x, y, z) in the world."""
        return self.data.xpos[self.cube].copy(), self.data.xquat[self.cube].copy()


def lerobot_calibration(servos: Sequence[EmulatedServo], model: mujoco.MjModel) -> dict:
    """The calibration LeRobot's ``SOFollower.calibrate()`` would record on this arm, as the
    JSON it writes: homing so that the middle of each joint's range reads 2047, ranges = the
    model's joint ranges in steps (wrist_roll: the full turn 0..4095, as LeRobot sets it)."""
    out = {}
    for name, servo in zip(JOINTS, servos, strict=True):
        low, high = model.jnt_range[model.joint(name).id]
        mid = 0.5 * (low + high)
        actual_mid = round(servo.encoder_at_zero + mid / STEP_RAD) % fp.STEPS_PER_TURN
        homing = actual_mid - MID
        if name == "wrist_roll":
            rmin, rmax = 0, 4095
        else:
            rmin = MID + math.ceil((low - mid) / STEP_RAD)
            rmax = MID + math.floor((high - mid) / STEP_RAD)
        out[name] = {
            "id": servo.servo_id,
            "drive_mode": 0,
            "homing_offset": int(homing),
            "range_min": int(rmin),
            "range_max": int(rmax),
        }
    return out


def joint_offsets(model: mujoco.MjModel) -> list[float]:
    """Joint angle [rad] at LeRobot's 0° (the middle of the calibrated range) per joint."""
    return [float(np.mean(model.jnt_range[model.joint(j).id])) for j in JOINTS]


class FeetechBusEmulator:
    """Six servos on a pty, physics stepped in real time in a thread, I/O in another.

    baudrate: the servos' bus rate [bit/s]; link: a stable symlink to the pty (like
    /dev/serial/by-id); calibrated: servos start with the calibration ``lerobot_calibration``
    describes written to their EPROM (else factory defaults); record_writes: keep every
    instruction packet received (for the safety tests).
    """

    def __init__(
        self,
        *,
        baudrate: int = 1_000_000,
        link: str | Path | None = None,
        scene_kwargs: dict | None = None,
        initial: Sequence[float] | None = None,
        calibrated: bool = True,
        power_on_torque: bool = True,
        supply_voltage: float = 12.0,
        record_writes: bool = False,
    ) -> None:
        if baudrate not in fp.BAUDRATES.values():
            raise InvalidInput(f"baudrate {baudrate} not one of {sorted(fp.BAUDRATES.values())}")
        self.physics = So101Physics(scene_kwargs, initial)
        self.servos = [
            EmulatedServo(i, e, supply_voltage) for i, e in zip(IDS, ENCODER_AT_ZERO, strict=True)
        ]
        self.calibration = lerobot_calibration(self.servos, self.physics.model)
        if calibrated:
            for servo, cal in zip(self.servos, self.calibration.values(), strict=True):
                servo.set("Homing_Offset", cal["homing_offset"])
                servo.set("Min_Position_Limit", cal["range_min"])
                servo.set("Max_Position_Limit", cal["range_max"])
        for i, servo in enumerate(self.servos):
            q, _, _ = self.physics.joint(i)
            servo.sense(q, 0.0, 0.0, 0.0)
            servo.set("Goal_Position", servo.get("Present_Position"))
            servo.set("Torque_Enable", int(power_on_torque))
        self.baudrate = baudrate
        self.link = Path(link) if link else None
        self.faults = Faults()
        self.stats = BusStats()
        self.record_writes = record_writes
        self.lock = threading.RLock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._master: int | None = None
        self._slave: int | None = None
        self.port: str | None = None
        self._reply_count = 0
        self.time = 0.0  # [s] simulated time

    # --- life cycle ------------------------------------------------------------------------
    def start(self) -> str:
        """Open the port and start both threads; returns the pty path."""
        self.open_port()
        for target in (self._physics_loop, self._io_loop):
            thread = threading.Thread(target=target, daemon=True, name=target.__name__)
            thread.start()
            self._threads.append(thread)
        return self.port

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=2.0)
        self.close_port()

    def open_port(self) -> str:
        """A fresh pty (plug the cable in); the link, if any, points at it."""
        with self.lock:
            if self._master is not None:
                return self.port
            master, slave = os.openpty()
            tty.setraw(slave)
            self._master, self._slave = master, slave
            self.port = os.ttyname(slave)
            self._parser = fp.PacketParser()
            if self.link:
                tmp = self.link.with_name(self.link.name + ".tmp")
                with contextlib.suppress(FileNotFoundError):
                    tmp.unlink()
                tmp.symlink_to(self.port)
                tmp.replace(self.link)
            return self.port

    def close_port(self) -> None:
        """Close the pty (pull the cable): the client's port fails; physics keeps going."""
        with self.lock:
            for fd in (self._master, self._slave):
                if fd is not None:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            self._master = self._slave = None
            if self.link:
                with contextlib.suppress(FileNotFoundError):
                    self.link.unlink()

    @property
    def connected(self) -> bool:
        return self._master is not None

    # --- physics ---------------------------------------------------------------------------
    def _physics_loop(self) -> None:
        dt = self.physics.dt
        start = time.monotonic()
        steps = 0
        while not self._stop.is_set():
            self.step()
            steps += 1
            ahead = start + steps * dt - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
            elif ahead < -0.1:  # fell behind by more than 100 ms: drop the debt
                self.stats.late_steps += 1
                start, steps = time.monotonic(), 0

    def step(self) -> None:
        """One physics step with the servos' current commands (also usable without threads)."""
        physics = self.physics
        with self.lock:
            for i, servo in enumerate(self.servos):
                physics.apply(i, *servo.command())
        physics.step()
        with self.lock:
            for i, servo in enumerate(self.servos):
                servo.sense(*physics.joint(i), physics.dt)
            self.time += physics.dt

    def cube_pose(self) -> tuple[np.ndarray, np.ndarray]:
        with self.lock:
            return self.physics.cube_pose()

    # --- bus -------------------------------------------------------------------------------
    def _client_baud(self) -> int | None:
        try:
            speed = termios.tcgetattr(self._slave)[5]
        except (termios.error, TypeError, OSError):
            return None
        for rate in fp.BAUDRATES.values():
            if getattr(termios, f"B{rate}", None) == speed:
                return rate
        return None

    def _io_loop(self) -> None:
        while not self._stop.is_set():
            master = self._master
            if master is None:
                time.sleep(0.01)
                continue
            try:
                ready, _, _ = select.select([master], [], [], 0.05)
                if not ready:
                    continue
                data = os.read(master, 4096)
            except OSError:  # port closed under us (cable pulled)
                time.sleep(0.01)
                continue
            received = time.monotonic()
            if self._client_baud() not in (None, self.baudrate):
                self.stats.baud_mismatches += 1
                continue  # framing errors: no servo hears a valid packet
            packets = self._parser.feed(data)
            for i, packet in enumerate(packets):
                self._serve(packet, received, superseded=i + 1 < len(packets))

    def _client_moved_on(self, master: int) -> bool:
        """The client has begun another request (bytes waiting on the port or half a packet
        parsed): it gave up waiting for the reply now due."""
        if self._parser.pending() > 1:  # one byte may be a lone 0xFF kept from garbage
            return True
        try:
            return bool(select.select([master], [], [], 0)[0])
        except (OSError, ValueError):
            return False

    def _serve(self, packet: fp.Packet | fp.Corrupt, received: float, superseded: bool) -> None:
        """Act on one request and send its replies when they are due. A reply the emulator
        can only send after the client has started its next request is dropped: a real servo
        answers within microseconds, so on a real bus that reply would have arrived before the
        client's next transaction and been flushed by it (the SDK clears the port before each
        send). Sent late instead, it would be read as the reply to a later request -- seen
        when the emulator was starved of CPU: another register's bytes read as Status."""
        if isinstance(packet, fp.Corrupt):
            self.stats.corrupt_requests += 1
            return
        self.stats.requests += 1
        if self.record_writes and packet.code in (
            Instruction.WRITE,
            Instruction.SYNC_WRITE,
            Instruction.REG_WRITE,
        ):
            self.stats.writes.append(fp.encode_instruction(*packet))
        with self.lock:
            replies = list(self.handle(packet))
        if not replies:
            return
        byte_time = fp.packet_time(1, self.baudrate)
        due = received + packet.size * byte_time
        out = bytearray()
        for servo, reply in replies:
            due += 2e-6 * servo.get("Return_Delay_Time") + len(reply) * byte_time
            out += reply
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        master = self._master
        if master is None:
            return
        if superseded or self._client_moved_on(master):
            self.stats.late_replies_dropped += len(replies)
            return
        with contextlib.suppress(OSError):
            os.write(master, bytes(out))
        self.stats.replies += len(replies)

    def _servo(self, servo_id: int) -> EmulatedServo | None:
        for servo in self.servos:
            if servo.servo_id == servo_id and servo_id not in self.faults.mute_ids:
                return servo
        return None

    def _targets(self, servo_id: int) -> list[EmulatedServo]:
        if servo_id == fp.BROADCAST_ID:
            return [s for s in self.servos if s.servo_id not in self.faults.mute_ids]
        servo = self._servo(servo_id)
        return [] if servo is None else [servo]

    def _status(self, servo: EmulatedServo, params: bytes = b"") -> tuple[EmulatedServo, bytes]:
        reply = bytearray(fp.encode_status(servo.servo_id, servo.error, params))
        self._reply_count += 1
        every = self.faults.corrupt_every
        if every and self._reply_count % every == 0:
            reply[-1] ^= 0xFF
            self.stats.corrupted_replies += 1
        return servo, bytes(reply)

    def handle(self, packet: fp.Packet) -> Iterable[tuple[EmulatedServo, bytes]]:
        """Execute one instruction; yields (servo, reply packet) in bus order."""
        sid, code, params = packet
        broadcast = sid == fp.BROADCAST_ID
        if code == Instruction.PING:
            for servo in self._targets(sid):
                yield self._status(servo)
        elif code == Instruction.READ and len(params) == 2 and not broadcast:
            for servo in self._targets(sid):
                yield self._status(servo, servo.read(params[0], params[1]))
        elif code in (Instruction.WRITE, Instruction.REG_WRITE) and len(params) >= 2:
            for servo in self._targets(sid):
                if code == Instruction.WRITE:
                    servo.write(params[0], params[1:])
                else:
                    servo.registered = (params[0], bytes(params[1:]))
                if not broadcast and servo.get("Response_Status_Level") >= 1:
                    yield self._status(servo)
        elif code == Instruction.ACTION:
            for servo in self._targets(sid):
                if servo.registered is not None:
                    servo.write(*servo.registered)
                    servo.registered = None
        elif code == Instruction.SYNC_WRITE and broadcast:
            try:
                sync = fp.decode_sync_write(params)
            except InvalidInput:
                return
            for target, data in sync.data.items():
                servo = self._servo(target)
                if servo is not None:
                    servo.write(sync.address, data)
        elif code == Instruction.SYNC_READ and broadcast:
            try:
                sync = fp.decode_sync_read(params)
            except InvalidInput:
                return
            for target in sync.ids:
                servo = self._servo(target)
                if servo is not None:
                    yield self._status(servo, servo.read(sync.address, sync.length))
        self._apply_bus_changes()

    def _apply_bus_changes(self) -> None:
        """A Baud_Rate write takes effect after the reply (here: for the next packet)."""
        rates = {fp.BAUDRATES.get(s.get("Baud_Rate"), 0) for s in self.servos}
        if len(rates) == 1:
            self.baudrate = rates.pop()


# --- command line ------------------------------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--baudrate", type=int, default=1_000_000, help="bus rate [bit/s]")
    parser.add_argument(
        "--link", type=Path, default=None, help="symlink that always points at the current pty"
    )
    parser.add_argument(
        "--calibration-out",
        type=Path,
        default=None,
        help="write the LeRobot calibration JSON of the emulated arm here (as lerobot-calibrate)",
    )
    parser.add_argument(
        "--cube-pos", type=float, nargs=2, default=None, metavar=("X", "Y"), help="[m] base frame"
    )
    parser.add_argument("--uncalibrated", action="store_true", help="factory EPROM (no homing)")
    parser.add_argument(
        "--no-power-on-torque", action="store_true", help="start with torque off, as a real arm"
    )
    parser.add_argument(
        "--mute-ids", type=int, nargs="*", default=[], help="servos that are silent"
    )
    parser.add_argument("--corrupt-every", type=int, default=0, help="bad checksum every n replies")


def write_calibration(path: Path, calibration: dict) -> None:
    """Write a calibration file in LeRobot's format (draccus dump of MotorCalibration)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(calibration, indent=4))


def emulator_from_args(args: argparse.Namespace) -> FeetechBusEmulator:
    scene = {} if args.cube_pos is None else {"cube_pos": list(args.cube_pos)}
    emulator = FeetechBusEmulator(
        baudrate=args.baudrate,
        link=args.link,
        scene_kwargs=scene,
        calibrated=not args.uncalibrated,
        power_on_torque=not args.no_power_on_torque,
    )
    emulator.faults.mute_ids = set(args.mute_ids)
    emulator.faults.corrupt_every = args.corrupt_every
    if args.calibration_out:
        write_calibration(args.calibration_out, emulator.calibration)
    return emulator


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m physai_ros.backends.feetech_emulator",
        description="Six Feetech STS3215 servos of an SO-101 on a pseudo-terminal, backed by "
        "MuJoCo physics in real time. Prints the port path; stop with Ctrl-C.",
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    emulator = emulator_from_args(args)
    port = emulator.start()
    print(f"port: {port}" + (f" (link {args.link})" if args.link else ""), flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.wait(0.2):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        emulator.stop()
    stats = emulator.stats
    print(
        f"served {stats.requests} requests; dropped {stats.late_replies_dropped} late replies, "
        f"physics > 100 ms behind {stats.late_steps} times",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
