"""A bus of six Feetech STS3215 servos on a pseudo-terminal, moved by a MuJoCo SO-101.

Why: no arm is attached, yet the hardware path -- LeRobot's ``FeetechMotorsBus`` and the
``scservo_sdk`` under it, unchanged -- must be exercised byte for byte. The emulator opens a
pty, answers PING / READ / WRITE / REG WRITE / ACTION / SYNC READ / SYNC WRITE as the servos
do (``physai_ros.robots.so101.protocol``), keeps one control table per servo
(``physai_ros.robots.so101.emulator.servo``: what the firmware does, EPROM and Lock included) and
couples the tables to physics stepped in real time (``physai_ros.robots.so101.emulator.physics``).

Power-up, as a real arm: servos with torque off, goal = present position, the arm resting in
its folded pose (settled under gravity before the port opens), the EPROM as LeRobot left it
(calibrated homing offsets and ranges, ``SOFollower.configure()``'s registers). Options give
a holding arm (``power_on_torque``), factory EPROM, a calibration that differs from the file
(``homing_error``), and joint stops beyond the calibrated range (``mechanical_margin``) so an
arm can rest outside the limits.

Timing: a reply leaves after the request's and the reply's byte times at the bus baud rate
plus Return_Delay_Time × 2 µs (Python's sleep adds ~0.1 ms), plus ``usb_latency_ms``: a USB
serial adapter's round trip per transaction (a CH340 or an FTDI at its default latency timer:
1-4 ms; 0 = none, a pty's own); Response_Status_Level 0 suppresses WRITE acknowledgements.
A reply that could only leave after the client began its next request (the emulator starved
of CPU) is dropped, as a real bus would have delivered it in time to be flushed by that
request.

Faults a test injects at run time (the adversary): servo ids that do not answer, every n-th
reply with a bad checksum, the client's baud rate (read from the pty's termios) differing from
the bus's (no servo hears a valid packet, as with real framing errors), an error flag forced on
a servo, an overload latched on servos, a failed encoder on servos, power lost and restored
(servos silent and limp, the arm falls; then they come back reset: torque off, RAM at
defaults), the cable pulled and plugged back (the pty closes / a new one opens behind the same
link; physics runs on), a USB adapter that stops taking bytes (the client's write blocks),
and a box obstacle moved into the arm's way. ``witness()`` reports what
really happened (true joint angles, cube pose, EPROM writes) for tests to compare with what the
driver says.

Pure: numpy/mujoco and the standard library; never rclpy (``nodes/so101_emulator.py`` adds
the ROS side).
"""

from __future__ import annotations

import argparse
import contextlib
import heapq
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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import mujoco
import numpy as np

from physai_ros.errors import InvalidInput
from physai_ros.robots.so101 import protocol as fp
from physai_ros.robots.so101.emulator.hand import HandMotion
from physai_ros.robots.so101.emulator.physics import JOINTS, REST_POSE, So101Physics, SoftState
from physai_ros.robots.so101.emulator.servo import STALL_TORQUE, STEP_RAD, EmulatedServo
from physai_ros.robots.so101.protocol import ErrorBit, Instruction

IDS = (1, 2, 3, 4, 5, 6)  # LeRobot's SO-101 follower: ids 1..6 in this joint order
MID = 2047  # LeRobot's half-turn homing puts the middle pose here
# Encoder reading at joint angle 0 of each servo as assembled: arbitrary, so homing offsets
# are not trivially zero (as on a real arm).
ENCODER_AT_ZERO = (1900, 2210, 1750, 2300, 2047, 1500)
OTHER_ARM_HOMING = 40  # [steps] ≈ 3.5°: how far another arm's homing offsets lie from this one's
SETTLE_TIME = 3.0  # [s] torque-off physics before the port opens: the arm comes to rest
LEROBOT_CONFIGURE = {
    # lerobot/robots/so_follower/so_follower.py SOFollower.configure() (LeRobot 0.4.4) and
    # FeetechMotorsBus.configure_motors(): what a calibrated arm's EPROM holds.
    "Return_Delay_Time": 0,
    "Operating_Mode": 0,
    "P_Coefficient": 16,
    "I_Coefficient": 0,
    "D_Coefficient": 32,
}
LEROBOT_GRIPPER = {"Max_Torque_Limit": 500, "Protection_Current": 250, "Overload_Torque": 25}


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


def parse_garble(spec: str) -> tuple[str, str, int, int]:
    """("Max_Position_Limit", "Present_Position", 5, 0) from "Max_Position_Limit
    Present_Position 5 0" (see ``Faults.garble``)."""
    try:
        after, target, sid, raw = spec.split()
        fp.register(after), fp.register(target)
        return after, target, int(sid), int(raw)
    except ValueError as exc:
        raise InvalidInput(f"garble must be 'AFTER TARGET ID RAW', got {spec!r}") from exc


def parse_lose_reads(spec: str) -> tuple[str, int, int]:
    """("Torque_Enable", 1, 2) from "Torque_Enable 1 2" (see ``Faults.lose_reads``)."""
    try:
        name, skip, count = spec.split()
        fp.register(name)
        return name, int(skip), int(count)
    except ValueError as exc:
        raise InvalidInput(f"lose_reads must be 'REGISTER SKIP COUNT', got {spec!r}") from exc


@dataclass
class Faults:
    """What a test breaks on purpose (all off by default)."""

    mute_ids: set[int] = field(default_factory=set)  # these servos never answer
    corrupt_every: int = 0  # every n-th reply gets a wrong checksum (0 = never)
    # every n-th sync-read reply carries zeros for data, well formed (a desynchronised bus
    # hands one register's reply to the read of another: the checksum cannot tell)
    wrong_data_every: int = 0
    # the cable is pulled as the next read of this register arrives ('' = never; once): a
    # pull that lands in whichever transfer the driver makes, not only in its state read
    pull_at_read: str = ""
    # A read of REGISTER (below) is any READ or SYNC READ whose span covers it: one read of
    # 56-61 is a read of Present_Position, Present_Velocity and Present_Load alike.
    # replies lost on the wire: "REGISTER SKIP COUNT" = of the next reads of REGISTER, SKIP
    # are answered, then COUNT go unanswered ('' = never; once)
    lose_reads: str = ""
    # one servo's value garbled: "AFTER TARGET ID RAW" = after the next read of AFTER, the next
    # sync read of TARGET hands servo ID the raw value RAW, well formed ('' = never; once)
    garble: str = ""
    garble_armed: bool = False  # AFTER was read: the next read of TARGET is garbled
    # a starved bus: the replies to every n-th read (READ or SYNC READ) come stall_ms [ms]
    # late (0 = never); a stall longer than the client's timeout loses the reply
    stall_every: int = 0
    stall_ms: float = 0.0


class GoalRecord(NamedTuple):
    """A Goal_Position as one servo received it: received [s, time.monotonic()] when its
    packet was read off the pty, servo id, the goal [step] and its joint angle [rad]."""

    received: float
    servo_id: int
    steps: int
    angle: float


@dataclass
class BusStats:
    requests: int = 0
    replies: int = 0
    corrupt_requests: int = 0
    corrupted_replies: int = 0
    wrong_data_replies: int = 0
    baud_mismatches: int = 0
    late_steps: int = 0  # times the physics fell > 100 ms behind real time (debt dropped)
    late_replies_dropped: int = 0  # the client had moved on to its next request (see _serve)
    writes: list[bytes] = field(default_factory=list)  # raw instruction packets, if recorded
    goals: list[GoalRecord] = field(default_factory=list)  # goals as received, if recorded
    stalled_reads: int = 0  # reads whose replies faults.stall_every delayed
    # The driver's bus loop as the servos see it (always kept, a few numbers): every cycle
    # reads the state once, so the reads of Present_Position count its cycles; and each
    # servo's largest step between two goals it received in a row [rad] -- the command step
    # measured where it lands, whatever the driver believes it sent.
    state_reads: int = 0
    max_goal_step: list[float] = field(default_factory=lambda: [0.0] * 6)


class Witness(NamedTuple):
    """What really happens on the emulated bench, for tests to hold the driver to.

    time: simulated time [s]; positions [rad], velocities [rad/s]: true joint state (JOINTS
    order); cube_pos [m], cube_quat (w, x, y, z): the cube in the world; gripper_site [m]: the
    world position between the jaw tips; cube_in_jaws: the cube touches both jaws;
    jaw_normal: (fixed, moving) jaw's true normal force on the cube [N] (MuJoCo's contacts);
    torque_enabled: Torque_Enable per servo; powered: the servos have power; eprom_writes:
    write instructions persisted to any servo's EPROM since power-up of the emulator; soft: the
    soft object's truth (``SoftState``: centre of mass, strain, in both jaws, each jaw's true
    net contact force on it), None in a scene without one; torques: each joint's true actuator
    torque [N·m] (what the driver's effort should read).
    """

    time: float
    positions: np.ndarray
    velocities: np.ndarray
    cube_pos: np.ndarray
    cube_quat: np.ndarray
    gripper_site: np.ndarray
    cube_in_jaws: bool
    jaw_normal: tuple[float, float]
    torque_enabled: tuple[bool, ...]
    powered: bool
    eprom_writes: int
    soft: SoftState | None = None
    torques: tuple[float, ...] = ()


class FeetechBusEmulator:
    """Six servos on a pty, physics stepped in real time in a thread, I/O in another.

    baudrate: the servos' bus rate [bit/s]; link: a stable symlink to the pty (like
    /dev/serial/by-id); scene_kwargs: ``build_scene`` arguments (cube_pos, soft, …); initial: joint
    angles [rad] at power-up (default the folded rest pose); calibrated: the servos' EPROM
    holds the calibration ``lerobot_calibration`` describes (else factory homing and ranges);
    configured: the EPROM holds ``SOFollower.configure()``'s registers (else factory values);
    power_on_torque: the servos hold ``initial`` with torque on (else, as a real arm, torque is
    off and the arm settles for ``SETTLE_TIME`` before the port opens); homing_error: joint →
    steps added to that servo's homing offset, a calibration that differs from the file;
    mechanical_margin [rad]: joint stops this far beyond the calibrated ranges; record_writes:
    keep every instruction packet received (for the safety tests); clamp_torque_limit: the
    firmware caps Torque_Limit at Max_Torque_Limit (False: Torque_Limit alone sets the output,
    which a real STS3215 may do as far as known); dead_zone [step]: each servo's
    CW_Dead_Zone and CCW_Dead_Zone hold this and its position loop applies no torque within
    it (``EmulatedServo``'s dead band); 0 = no dead band modelled (the registers ignored);
    record_goals: log every Goal_Position each servo receives, with its receive time
    (``stats.goals``, for the speed tests); supply_voltage [V], rated_voltage [V],
    stall_torque [N·m] (at rated_voltage), load_model (ideal | duty), load_sign (±1): each
    servo's supply, variant and load register (``EmulatedServo``); usb_latency_ms [ms]: every
    transaction's replies come this much later, the round trip of a USB serial adapter (sent
    by ``_wire_loop``, as a stalled reply: physics and the receiving of requests go on);
    protections_clear_on_enable: a torque 0 → 1 clears a latched OVERLOAD / OVERCURRENT /
    OVERHEAT (False: only a power cycle does, ``EmulatedServo``); hand: a leader arm, its
    joints put where this hand (``HandMotion``, on the emulator's clock) moves them, whatever
    its servos are told (a real leader's torque is off; no dynamics are simulated); trace: keep
    every physics step's (``time.monotonic()``, true angles) in ``trace`` and every goal
    received (``record_goals``), for measuring a latency against another process on this
    machine.
    """

    def __init__(
        self,
        *,
        baudrate: int = 1_000_000,
        link: str | Path | None = None,
        scene_kwargs: dict | None = None,
        initial: Sequence[float] | None = REST_POSE,
        calibrated: bool = True,
        configured: bool = True,
        power_on_torque: bool = False,
        homing_error: Mapping[str, int] | None = None,
        mechanical_margin: float = 0.0,
        supply_voltage: float = 12.0,
        record_writes: bool = False,
        clamp_torque_limit: bool = True,
        dead_zone: int = 0,
        record_goals: bool = False,
        rated_voltage: float = 12.0,
        stall_torque: float = STALL_TORQUE,
        load_model: str = "ideal",
        load_sign: int = 1,
        usb_latency_ms: float = 0.0,
        protections_clear_on_enable: bool = True,
        hand: HandMotion | None = None,
        trace: bool = False,
    ) -> None:
        if not 0 <= dead_zone <= 255:
            raise InvalidInput(f"dead_zone must be 0 to 255 steps, got {dead_zone!r}")
        if not 0.0 <= usb_latency_ms <= 100.0:
            raise InvalidInput(f"usb_latency_ms must be 0 to 100 ms, got {usb_latency_ms!r}")
        if baudrate not in fp.BAUDRATES.values():
            raise InvalidInput(f"baudrate {baudrate} not one of {sorted(fp.BAUDRATES.values())}")
        unknown = sorted(set(homing_error or {}) - set(JOINTS))
        if unknown:
            raise InvalidInput(f"homing_error names unknown joints {unknown}; valid: {JOINTS}")
        self.physics = So101Physics(scene_kwargs, initial, mechanical_margin)
        self.servos = [
            EmulatedServo(
                i,
                e,
                supply_voltage,
                clamp_torque_limit,
                dead_zone > 0,
                rated_voltage,
                stall_torque,
                load_model,
                load_sign,
                protections_clear_on_enable,
            )
            for i, e in zip(IDS, ENCODER_AT_ZERO, strict=True)
        ]
        if dead_zone > 0:
            for servo in self.servos:
                servo.set("CW_Dead_Zone", dead_zone)
                servo.set("CCW_Dead_Zone", dead_zone)
        self.calibration = lerobot_calibration(self.servos, self.physics.model)
        if calibrated:
            errors = homing_error or {}
            for joint, servo in zip(JOINTS, self.servos, strict=True):
                cal = self.calibration[joint]
                error = int(errors.get(joint, 0))
                servo.set("Homing_Offset", cal["homing_offset"] + error)
                servo.set("Min_Position_Limit", cal["range_min"])
                servo.set("Max_Position_Limit", cal["range_max"])
        if configured:
            for joint, servo in zip(JOINTS, self.servos, strict=True):
                for name, value in LEROBOT_CONFIGURE.items():
                    servo.set(name, value)
                if joint == "gripper":
                    for name, value in LEROBOT_GRIPPER.items():
                        servo.set(name, value)
        if not power_on_torque:  # a real arm at power-up: limp, it comes to rest on its stops
            for i in range(len(self.servos)):
                self.physics.apply(i, math.nan, 0.0, 1.0)
            for _ in range(round(SETTLE_TIME / self.physics.dt)):
                self.physics.step()
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
        self.other_arm = False  # the port reaches another arm (``swap_arm``)
        self.record_goals = record_goals
        self._last_goal = [math.nan] * len(self.servos)  # [rad] each servo's last goal received
        self.usb_latency = usb_latency_ms / 1000.0  # [s] added to every reply
        self._received = 0.0  # [s] when the packet being handled was read off the pty
        self._reads = 0  # counts reads, for faults.stall_every
        self._served = 0  # counts requests: a stalled reply is sent only if none came since
        self.powered = True
        self.lock = threading.RLock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        # replies due later (stalled, or behind the USB adapter's round trip): a heap of
        # (due [s, monotonic], served count at the request, packet bytes, replies in it)
        self._outbox: list[tuple[float, int, bytes, int]] = []
        self._outbox_changed = threading.Condition()
        self._master: int | None = None
        self._slave: int | None = None
        self.port: str | None = None
        self._reply_count = 0
        self._sync_reads = 0  # counts sync reads, for faults.wrong_data_every
        self.time = 0.0  # [s] simulated time
        self.hand = hand
        # (time.monotonic(), true joint angles) of every physics step, if traced: with the goals
        # (record_goals) the truth a latency across processes on this machine is measured on
        self.trace: list[tuple[float, np.ndarray]] | None = [] if trace else None
        if trace:
            self.record_goals = True

    # --- life cycle ------------------------------------------------------------------------
    def start(self) -> str:
        """Open the port and start both threads; returns the pty path."""
        self.open_port()
        for target in (self._physics_loop, self._io_loop, self._wire_loop):
            thread = threading.Thread(target=target, daemon=True, name=target.__name__)
            thread.start()
            self._threads.append(thread)
        return self.port

    def stop(self) -> None:
        self._stop.set()
        with self._outbox_changed:
            self._outbox_changed.notify()
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
        physics, dt = self.physics, self.physics.dt
        with self.lock:  # held through the step: witness() reads contacts of the same data
            if self.hand is not None:  # a leader: the hand moves it, whatever the servos do
                q = self.hand.at(self.time + dt)
                physics.place_joints(q, (q - physics.positions()) / dt, dt)
            else:
                for i, servo in enumerate(self.servos):
                    if self.powered:
                        physics.apply(i, *servo.command(physics.joint(i)[0], dt))
                    else:
                        physics.apply(i, math.nan, 0.0, 1.0)
                physics.step()
            for i, servo in enumerate(self.servos):
                servo.sense(*physics.joint(i), dt)
            self.time += dt
            if self.trace is not None:
                self.trace.append((time.monotonic(), physics.positions()))

    def cube_pose(self) -> tuple[np.ndarray, np.ndarray]:
        with self.lock:
            return self.physics.cube_pose()

    def witness(self) -> Witness:
        """The true state of the bench now (see ``Witness``)."""
        with self.lock:
            p = self.physics
            cube_pos, cube_quat = p.cube_pose()
            return Witness(
                time=self.time,
                positions=p.positions(),
                velocities=p.velocities(),
                cube_pos=cube_pos,
                cube_quat=cube_quat,
                gripper_site=p.gripper_site(),
                cube_in_jaws=p.cube_in_jaws(),
                jaw_normal=p.jaw_normal(),
                torque_enabled=tuple(bool(s.get("Torque_Enable")) for s in self.servos),
                powered=self.powered,
                eprom_writes=sum(s.eprom_writes for s in self.servos),
                soft=p.soft_state(),
                torques=tuple(p.joint(i)[2] for i in range(len(self.servos))),
            )

    # --- faults ----------------------------------------------------------------------------
    def power_off(self) -> None:
        """The servos' supply fails: they stop answering and go limp (the arm falls)."""
        with self.lock:
            self.powered = False

    def power_on(self) -> None:
        """The supply returns: every servo boots with its EPROM and RAM defaults (torque off,
        goal = present position) and answers again."""
        with self.lock:
            if self.powered:
                return
            for i, servo in enumerate(self.servos):
                servo.power_cycle(servo.present_steps(self.physics.joint(i)[0]))
            self.powered = True

    def set_supply(self, volts: float) -> None:
        """The supply changes (sags): every servo's Present_Voltage and stall torque follow."""
        if not 0.0 < volts < 25.5:
            raise InvalidInput(f"supply_voltage must be in (0, 25.5) V, got {volts!r}")
        with self.lock:
            for servo in self.servos:
                servo.set_supply(volts)

    def force_overload(self, ids: Iterable[int]) -> None:
        """Latch OVERLOAD on servos ``ids`` as their firmware would after a long overload:
        their output drops to Protective_Torque until torque is switched on again."""
        chosen = set(ids)
        with self.lock:
            for servo in self.servos:
                if servo.servo_id in chosen:
                    servo.latched |= int(ErrorBit.OVERLOAD)

    def force_encoder_error(self, ids: Iterable[int]) -> None:
        """Servos ``ids`` report a failed magnetic encoder (ENCODER in their status and every
        reply) until called again without them: a sensor fault, which torque does not clear."""
        chosen = set(ids)
        bit = int(ErrorBit.ENCODER)
        with self.lock:
            for servo in self.servos:
                if servo.servo_id in chosen:
                    servo.forced |= bit
                else:
                    servo.forced &= ~bit

    def swap_arm(self, other: bool) -> None:
        """``other``: the port now reaches another SO-101 (a second follower re-plugged into
        this adapter): its servos answer to the same ids and model number, but each was
        calibrated on its own arm, so its homing offset differs by ``OTHER_ARM_HOMING`` steps.
        False: this arm again. The EPROM changes as a real swap would; physics is unchanged."""
        with self.lock:
            if other == self.other_arm:
                return
            shift = OTHER_ARM_HOMING if other else -OTHER_ARM_HOMING
            for servo in self.servos:  # the other arm holds where it is: its goal moves along
                servo.set("Homing_Offset", servo.get("Homing_Offset") + shift)
                goal = (servo.get("Goal_Position") - shift) % fp.STEPS_PER_TURN
                servo.set("Goal_Position", goal)
            self.other_arm = other

    def hang_adapter(self, hung: bool) -> None:
        """``hung``: the USB serial adapter stops taking bytes (its driver's output is stopped:
        ``tcflow(TCOOFF)`` on the port's side), so the client's next write blocks inside its
        transfer -- a bus thread alive but stuck, holding whatever lock it holds; False lets the
        bytes through again (written late: a real hung adapter may lose them too). A new port
        (a re-plug) is never hung."""
        with self.lock:
            if self._slave is not None:
                with contextlib.suppress(OSError, termios.error):
                    termios.tcflow(self._slave, termios.TCOOFF if hung else termios.TCOON)

    def put_cube(self, centre: Sequence[float]) -> None:
        """Put the cube back on the table, centre at ``centre`` (world [m]), at rest."""
        with self.lock:
            self.physics.put_cube(centre)

    def place_obstacle(self, centre: Sequence[float] | None, half_size: float = 0.02) -> None:
        """Put a box (half edge [m]) at ``centre`` (world [m]); None removes it."""
        with self.lock:
            self.physics.place_obstacle(centre, half_size)

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
        self._served += 1
        if isinstance(packet, fp.Corrupt):
            self.stats.corrupt_requests += 1
            return
        self.stats.requests += 1
        if self._pull_here(packet) or self._lose_here(packet):
            return
        if self.record_writes and packet.code in (
            Instruction.WRITE,
            Instruction.SYNC_WRITE,
            Instruction.REG_WRITE,
        ):
            self.stats.writes.append(fp.encode_instruction(*packet))
        with self.lock:
            self._received = received
            replies = list(self.handle(packet))
        if not replies:
            return
        byte_time = fp.packet_time(1, self.baudrate)
        due = received + packet.size * byte_time
        out = bytearray()
        for servo, reply in replies:
            due += 2e-6 * servo.get("Return_Delay_Time") + len(reply) * byte_time
            out += reply
        late = self._stall(packet) + self.usb_latency
        if late:  # sent by _wire_loop: this thread goes on receiving (and stamping) packets
            with self._outbox_changed:
                heapq.heappush(self._outbox, (due + late, self._served, bytes(out), len(replies)))
                self._outbox_changed.notify()
            return
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

    def _wire_loop(self) -> None:
        """Send each delayed reply when it is due (one long-lived thread: a thread started
        per reply was itself late by tens of ms on a loaded machine, past the client's
        timeout)."""
        while not self._stop.is_set():
            with self._outbox_changed:
                if not self._outbox:
                    self._outbox_changed.wait(0.1)
                    continue
                wait = self._outbox[0][0] - time.monotonic()
                if wait > 0:
                    self._outbox_changed.wait(wait)
                    continue
                _, seq, out, count = heapq.heappop(self._outbox)
            self._send_late(out, count, seq)

    def _send_late(self, out: bytes, count: int, seq: int) -> None:
        """Send a stalled or USB-delayed reply (the one place for delayed replies), unless
        the client has sent anything since its request (it
        gave up waiting: the reply would be read as another request's)."""
        master = self._master
        if master is None:
            return
        if self._served != seq or self._client_moved_on(master):
            self.stats.late_replies_dropped += count
            return
        with contextlib.suppress(OSError):
            os.write(master, out)
        self.stats.replies += count

    @staticmethod
    def _covers(packet: fp.Packet, name: str) -> bool:
        """``packet`` is a READ or SYNC READ whose span covers the whole register ``name``:
        a read of that register alone, or of several contiguous ones with it among them
        (Present_Position, Present_Velocity and Present_Load in one read of 56-61)."""
        _, code, params = packet  # a READ's and a SYNC READ's first bytes: address, length
        if code not in (Instruction.READ, Instruction.SYNC_READ) or len(params) < 2:
            return False
        reg = fp.register(name)
        return params[0] <= reg.address and reg.address + reg.size <= params[0] + params[1]

    def _pull_here(self, packet: fp.Packet) -> bool:
        """Pull the cable if ``packet`` reads the register ``faults.pull_at_read`` names."""
        name = self.faults.pull_at_read
        if not name or not self._covers(packet, name):
            return False
        self.faults.pull_at_read = ""
        self.close_port()
        return True

    def _lose_here(self, packet: fp.Packet) -> bool:
        """Lose the replies to ``packet`` if ``faults.lose_reads`` says so (see ``Faults``)."""
        spec = self.faults.lose_reads
        if not spec:
            return False
        name, skip, count = parse_lose_reads(spec)
        if not self._covers(packet, name):
            return False
        if skip > 0:
            self.faults.lose_reads = f"{name} {skip - 1} {count}"
            return False
        self.faults.lose_reads = f"{name} 0 {count - 1}" if count > 1 else ""
        return True

    def _stall(self, packet: fp.Packet) -> float:
        """Extra delay [s] of the replies to ``packet``: ``faults.stall_ms`` on every
        ``faults.stall_every``-th read (see ``Faults``), else 0."""
        every = self.faults.stall_every
        if not every or packet.code not in (Instruction.READ, Instruction.SYNC_READ):
            return 0.0
        self._reads += 1
        if self._reads % every:
            return 0.0
        self.stats.stalled_reads += 1
        return max(self.faults.stall_ms, 0.0) / 1000.0

    def _record_goal(self, servo: EmulatedServo, address: int, size: int) -> None:
        """Note the servo's Goal_Position if a write of ``size`` bytes at ``address`` set it:
        its step from the goal received before (``stats.max_goal_step``) and, with
        ``record_goals``, the goal itself."""
        goal = fp.register("Goal_Position")
        if not address <= goal.address < address + size:
            return
        steps = servo.get("Goal_Position")
        angle = servo.angle_of(steps)
        index = IDS.index(servo.servo_id)
        last = self._last_goal[index]
        if not math.isnan(last):
            step = abs(angle - last)
            self.stats.max_goal_step[index] = max(self.stats.max_goal_step[index], step)
        self._last_goal[index] = angle
        if self.record_goals:
            self.stats.goals.append(GoalRecord(self._received, servo.servo_id, steps, angle))

    def _garbled(self, packet: fp.Packet) -> tuple[int, int, int, int] | None:
        """(servo id, raw value, its offset in the reply's data, its size) if this sync read
        is the one ``faults.garble`` names (see ``Faults``; a read of a span garbles the
        target's bytes within it), else None; arms the fault on a read of its AFTER register."""
        if not self.faults.garble:
            return None
        after, target, sid, raw = parse_garble(self.faults.garble)
        if self.faults.garble_armed and self._covers(packet, target):
            self.faults.garble, self.faults.garble_armed = "", False
            reg = fp.register(target)
            return sid, raw, reg.address - packet.params[0], reg.size
        if self._covers(packet, after):
            self.faults.garble_armed = True
        return None

    def _servo(self, servo_id: int) -> EmulatedServo | None:
        if not self.powered:
            return None
        for servo in self.servos:
            if servo.servo_id == servo_id and servo_id not in self.faults.mute_ids:
                return servo
        return None

    def _targets(self, servo_id: int) -> list[EmulatedServo]:
        if servo_id == fp.BROADCAST_ID:
            if not self.powered:
                return []
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
        if self._covers(packet, "Present_Position"):  # (a READ or SYNC READ of the state)
            self.stats.state_reads += 1
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
                    self._record_goal(servo, params[0], len(params) - 1)
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
                    self._record_goal(servo, sync.address, len(data))
        elif code == Instruction.SYNC_READ and broadcast:
            try:
                sync = fp.decode_sync_read(params)
            except InvalidInput:
                return
            self._sync_reads += 1
            every = self.faults.wrong_data_every
            wrong = bool(every) and self._sync_reads % every == 0
            garbled = self._garbled(packet)
            for target in sync.ids:
                servo = self._servo(target)
                if servo is not None:
                    data = bytes(sync.length) if wrong else servo.read(sync.address, sync.length)
                    if garbled is not None and target == garbled[0]:
                        _, raw, at, size = garbled
                        data = data[:at] + raw.to_bytes(size, "little") + data[at + size :]
                    yield self._status(servo, data)
            self.stats.wrong_data_replies += wrong
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
    parser.add_argument(
        "--initial",
        type=float,
        nargs=6,
        default=list(REST_POSE),
        metavar="RAD",
        help="joint angles at power-up [rad] (default: the folded rest pose)",
    )
    parser.add_argument("--uncalibrated", action="store_true", help="factory homing and ranges")
    parser.add_argument(
        "--factory-eprom", action="store_true", help="servo registers not configured by LeRobot"
    )
    parser.add_argument(
        "--power-on-torque",
        action="store_true",
        help="servos hold the initial pose with torque on (a real arm powers up limp)",
    )
    parser.add_argument(
        "--homing-error",
        nargs=2,
        action="append",
        default=[],
        metavar=("JOINT", "STEPS"),
        help="this servo's homing offset differs from the calibration file by STEPS",
    )
    parser.add_argument(
        "--mechanical-margin",
        type=float,
        default=0.0,
        help="joint stops this far beyond the calibrated ranges [rad]",
    )
    parser.add_argument(
        "--mute-ids", type=int, nargs="*", default=[], help="servos that are silent"
    )
    parser.add_argument("--corrupt-every", type=int, default=0, help="bad checksum every n replies")


def write_calibration(path: Path, calibration: dict) -> None:
    """Write a calibration file in LeRobot's format (draccus dump of MotorCalibration)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(calibration, indent=4))
    tmp.replace(path)  # whole or absent: a driver starting now never reads half a file


def emulator_from_args(args: argparse.Namespace) -> FeetechBusEmulator:
    scene = {} if args.cube_pos is None else {"cube_pos": list(args.cube_pos)}
    emulator = FeetechBusEmulator(
        baudrate=args.baudrate,
        link=args.link,
        scene_kwargs=scene,
        initial=args.initial,
        calibrated=not args.uncalibrated,
        configured=not args.factory_eprom,
        power_on_torque=args.power_on_torque,
        homing_error={joint: int(steps) for joint, steps in args.homing_error},
        mechanical_margin=args.mechanical_margin,
    )
    emulator.faults.mute_ids = set(args.mute_ids)
    emulator.faults.corrupt_every = args.corrupt_every
    if args.calibration_out:
        write_calibration(args.calibration_out, emulator.calibration)
    return emulator


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m physai_ros.robots.so101.emulator.bus",
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
