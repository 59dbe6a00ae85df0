"""One emulated Feetech STS3215 servo: its control table and its firmware's reactions.

The bus emulator (``physai_ros.robots.so101.emulator.bus``) holds six of these and couples
them to MuJoCo physics. What the firmware does, as modelled here (so the driver's tests know
what they face):

* encoder: 4096 steps/turn; ``Present_Position = actual - Homing_Offset`` (mod 4096); in
  position mode the goal is clamped to [Min_Position_Limit, Max_Position_Limit].
* motion profile: with ``Acceleration`` > 0 (unit 100 step/s²) the servo's set-point moves
  towards the goal with at most that acceleration and at most ``Goal_Velocity`` (0 = the
  no-load speed, 4.71 rad/s); ``Acceleration`` = 0 jumps to the goal. The physics position loop
  (MuJoCo's actuator, kp scaled by P_Coefficient/16) follows the set-point.
* dead band (opt-in, ``dead_zone``): the firmware's position loop acts only on the error
  beyond ``CW_Dead_Zone`` / ``CCW_Dead_Zone`` steps (EPROM 26 / 27; error = set-point -
  present below / above zero; the P term on the error less the band, so the torque has no
  step at the band's edge): inside it the servo applies no torque, so a servo told to go
  where it already is lets a load (a squeezed object's contact, gravity) push it back to the
  band's edge. Off, the registers are ignored and every step of error is acted on. Why a
  band: LeRobot's arms at P_Coefficient 16 settle at different places by approach direction
  (reported on its issue tracker); its width on a real STS3215 is not measured here.
* torque cap = the stall torque (at the supply) × min(Torque_Limit, Max_Torque_Limit)/1000;
  ``Torque_Enable = 0`` makes the joint free (cap 0). With ``clamp_torque_limit`` False the
  cap is Torque_Limit alone: no source found says the STS3215 firmware clamps the RAM
  Torque_Limit to the EPROM Max_Torque_Limit, so a driver must not rely on it (the tests run
  both ways). Re-enabling torque servos from the present position to the *stored* goal.
* supply: the stall torque is a DC motor's, proportional to the supply: ``stall_torque`` ×
  supply / ``rated_voltage`` (the servo variant: 2.94 N·m at 12 V, the STS3215 C018/C047 of the
  SO-101 follower; the 7.4 V STS3215 is rated 19.5 kg·cm = 1.91 N·m at 7.4 V, DFRobot's /
  Waveshare's ST3215 listing of the 1:345 servo). Present_Voltage reads the supply.
* load (``load_model``): ``ideal`` = torque / the present stall torque in 0.1 %
  (sign-magnitude, bit 10); ``duty`` = the PWM duty the firmware drives the motor with,
  (torque / stall_torque × rated_voltage + k_e·ω) / supply, k_e = rated_voltage / the
  no-load speed (back-EMF): at rest the two agree, while moving ``duty`` reads the motion as
  well, and both depend on the supply. ``load_sign`` -1 reverses the register's sign (a
  firmware or a wiring that reports the other way). current = |torque| / KT.
* protections: load above Overload_Torque % for Protection_Time × 10 ms latches OVERLOAD (if
  enabled in Unloading_Condition) and cuts the output to Protective_Torque %; over-current
  likewise; over-temperature (first-order thermal model) unloads. Latched errors clear when
  torque is switched on again (0 → 1) -- or, with ``protections_clear_on_enable`` False,
  only by a power cycle (the harder case a driver must survive, since which a real STS3215
  firmware does is not documented). Sources: Feetech's STS memory table (addresses 19
  Unloading_Condition, 34 Protective_Torque "output torque after entering overload
  protection", 35 Protection_Time, 36 Overload_Torque, 65 Status: bit 0 voltage, 1 magnetic
  encoder, 2 temperature, 3 current, 5 load), wiki.aifitlab.com/feetech-servo-motor-docs/
  feetech-sts-servo-memory-table-analysis and wiki.juxitech.com's copy; the clearing by a
  torque re-enable is as modelled here, not found in those pages.
* a servo under a latched protection still answers every instruction, PING included: the
  FT-SCS response frame carries the servo's state in its error byte (wiki.juxitech.com
  "Feetech SCS Communication Protocol"), and LeRobot's ``broadcast_ping`` reports "Some motors
  found returned an error status" from real arms (huggingface/lerobot#2387: a servo answering
  its ping with "Input voltage error").
* EPROM: every field of the EPROM area keeps a persisted copy. A write always changes the live
  table; it is persisted (and counted in ``eprom_writes``) only while ``Lock`` is 0, as on the
  STS series, where ``Lock`` = 1 write-protects the EPROM. A power cycle restores the EPROM
  area from the persisted copy and every RAM field to its power-up default (torque off, goal =
  present position).

Pure: numpy/math only.
"""

from __future__ import annotations

import math

from physai_ros.errors import InvalidInput
from physai_ros.robots.so101 import protocol as fp
from physai_ros.robots.so101.protocol import ErrorBit

STALL_TORQUE = 2.94  # [N·m] STS3215 (12 V) stall torque = the model's actuator forcerange
STALL_CURRENT = 2.7  # [A] STS3215 datasheet stall current; KT = STALL_TORQUE / STALL_CURRENT
IDLE_CURRENT = 0.05  # [A] electronics with torque on
CURRENT_UNIT = 0.0065  # [A] per count of Present_Current / Protection_Current
MODEL_P_GAIN = 16  # the P_Coefficient the model's kp corresponds to (LeRobot's setting)
NO_LOAD_SPEED = 4.71  # [rad/s] STS3215 datasheet: 0.222 s/60° at 12 V
STEP_RAD = 2.0 * math.pi / fp.STEPS_PER_TURN
THERMAL_TIME = 60.0  # [s] winding temperature time constant
THERMAL_RISE = 60.0  # [°C] steady rise at stall current
MOVING_THRESHOLD = 20  # [step/s] Moving = 1 above this speed
LOAD_MODELS = ("ideal", "duty")
EPROM_END = fp.REGISTERS_BY_NAME["Torque_Enable"].address  # EPROM area: addresses below this


# name -> (first byte, end byte, sign bit): looked up once (the physics reads registers at
# 500 Hz for six servos)
_LAYOUT = {r.name: (r.address, r.address + r.size, r.sign_bit) for r in fp.STS3215_REGISTERS}


def _read_only(address: int) -> bool:
    for reg in fp.STS3215_REGISTERS:
        if reg.address <= address < reg.address + reg.size:
            return not reg.writable
    return False


class EmulatedServo:
    """One STS3215: its control table and the firmware's reactions (see module docstring)."""

    def __init__(
        self,
        servo_id: int,
        encoder_at_zero: int,
        supply_voltage: float = 12.0,
        clamp_torque_limit: bool = True,
        dead_zone: bool = False,
        rated_voltage: float = 12.0,
        stall_torque: float = STALL_TORQUE,
        load_model: str = "ideal",
        load_sign: int = 1,
        protections_clear_on_enable: bool = True,
    ) -> None:
        if load_model not in LOAD_MODELS:
            raise InvalidInput(f"load_model must be one of {LOAD_MODELS}, got {load_model!r}")
        if load_sign not in (1, -1):
            raise InvalidInput(f"load_sign must be 1 or -1, got {load_sign!r}")
        if not (rated_voltage > 0.0 and stall_torque > 0.0):
            raise InvalidInput("rated_voltage and stall_torque must be > 0")
        self.rated_voltage, self.rated_stall = float(rated_voltage), float(stall_torque)
        self.load_model, self.load_sign = load_model, int(load_sign)
        self.clamp_torque_limit = clamp_torque_limit
        # False: a latched protection survives a torque 0 → 1; only power_cycle clears it
        self.protections_clear_on_enable = protections_clear_on_enable
        self.dead_zone = dead_zone  # model CW/CCW_Dead_Zone (see the module docstring)
        self.mem = bytearray(fp.MEMORY_SIZE)
        for reg in fp.STS3215_REGISTERS:
            self.mem[reg.address : reg.address + reg.size] = fp.to_bytes(reg.default, reg.size)
        self.set("ID", servo_id)
        self.set("Present_Voltage", round(supply_voltage * 10))
        self.persisted = bytes(self.mem[:EPROM_END])
        self.encoder_at_zero = int(encoder_at_zero)
        self.latched = 0  # protection errors, cleared by re-enabling torque (or power only)
        self.forced = 0  # errors forced by a test
        self.overload_time = 0.0
        self.overcurrent_time = 0.0
        self.temperature = 25.0
        self.ambient = 25.0
        self.eprom_writes = 0  # write instructions that changed the persisted EPROM
        self.setpoint: float | None = None  # [rad] profile set-point (None: torque off)
        self.setpoint_speed = 0.0  # [rad/s]
        self.registered: tuple[int, bytes] | None = None  # REG WRITE waiting for ACTION

    # --- table access ----------------------------------------------------------------------
    @property
    def servo_id(self) -> int:
        return self.mem[5]

    def get(self, name: str) -> int:
        start, end, sign = _LAYOUT[name]
        raw = int.from_bytes(self.mem[start:end], "little")
        return raw if sign is None else fp.from_sign_magnitude(raw, sign)

    def set(self, name: str, value: int) -> None:
        """Set a field as the factory or a test would (bypasses Lock; persists EPROM fields)."""
        start, end, sign = _LAYOUT[name]
        raw = value if sign is None else fp.to_sign_magnitude(value, sign)
        self.mem[start:end] = int(raw).to_bytes(end - start, "little")
        if start < EPROM_END:
            self.persisted = bytes(self.mem[:EPROM_END])

    def read(self, address: int, length: int) -> bytes:
        return bytes(self.mem[address : address + length])

    def write(self, address: int, data: bytes) -> None:
        """Apply a WRITE from the bus; read-only bytes are ignored, as the firmware does."""
        was_enabled = self.get("Torque_Enable")
        eprom = False
        for offset, byte in enumerate(data):
            addr = address + offset
            if addr >= fp.MEMORY_SIZE or _read_only(addr):
                continue
            self.mem[addr] = byte
            eprom |= addr < EPROM_END
        if eprom and not self.get("Lock"):
            self.persisted = bytes(self.mem[:EPROM_END])
            self.eprom_writes += 1
        if self.get("Torque_Enable") and not was_enabled and self.protections_clear_on_enable:
            self.latched = 0  # re-enabling torque clears latched protection
            self.overload_time = self.overcurrent_time = 0.0

    def power_cycle(self, present: int) -> None:
        """Power comes back: EPROM from its persisted copy, RAM at its power-up defaults,
        torque off, goal = the present position ``present`` [step]."""
        for reg in fp.STS3215_REGISTERS:
            if reg.address >= EPROM_END:
                self.mem[reg.address : reg.address + reg.size] = fp.to_bytes(reg.default, reg.size)
        self.mem[:EPROM_END] = self.persisted
        self.set("Present_Position", present)
        self.set("Goal_Position", present)
        self.latched = 0
        self.overload_time = self.overcurrent_time = 0.0
        self.setpoint, self.setpoint_speed = None, 0.0
        self.registered = None

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

    @property
    def supply(self) -> float:
        """[V] the supply (what Present_Voltage reads)."""
        return self.get("Present_Voltage") / 10.0

    def set_supply(self, volts: float) -> None:
        self.set("Present_Voltage", max(0, min(255, round(volts * 10))))

    @property
    def stall(self) -> float:
        """[N·m] stall torque at the present supply (a DC motor's: proportional to it)."""
        return self.rated_stall * self.supply / self.rated_voltage

    def load_counts(self, torque: float, qdot: float) -> int:
        """Present_Load [0.1 %] for ``torque`` [N·m] at ``qdot`` [rad/s] (``load_model``)."""
        if self.load_model == "duty":
            k_e = self.rated_voltage / NO_LOAD_SPEED  # [V·s/rad] back-EMF at the output
            drive = torque / self.rated_stall * self.rated_voltage + k_e * qdot
            duty = drive / max(self.supply, 0.1)
        else:
            duty = torque / max(self.stall, 1e-9)
        return self.load_sign * max(-1023, min(1023, round(1000.0 * duty)))

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
    def command(self, q: float, dt: float) -> tuple[float, float, float]:
        """(set-point angle [rad], torque cap [N·m], P gain scale) for the next physics step
        of ``dt`` [s], the joint being at ``q`` [rad]; the set-point is NaN when torque is off."""
        if not self.get("Torque_Enable") or self.get("Operating_Mode") != 0:
            self.setpoint, self.setpoint_speed = None, 0.0
            return math.nan, 0.0, 1.0
        limit = self.get("Torque_Limit") / 1000.0
        if self.clamp_torque_limit:
            limit = min(limit, self.get("Max_Torque_Limit") / 1000.0)
        if self.latched & int(ErrorBit.OVERHEAT):
            limit = 0.0
        elif self.latched & int(ErrorBit.OVERLOAD | ErrorBit.OVERCURRENT):
            limit = min(limit, self.get("Protective_Torque") / 100.0)
        gain = max(self.get("P_Coefficient"), 1) / MODEL_P_GAIN
        target = self._profile(q, dt)
        if self.dead_zone:
            error = (target - q) / STEP_RAD  # [step]
            band = self.get("CCW_Dead_Zone" if error > 0 else "CW_Dead_Zone")
            # inside the band no torque (the P term is zero); beyond it, P on the error
            # beyond the band: the torque rises from zero at its edge, with no step there (a
            # step would make a holding joint chatter in and out of the band)
            beyond = math.copysign(max(abs(error) - band, 0.0), error)
            target = q + beyond * STEP_RAD
        return target, self.stall * limit, gain

    def _profile(self, q: float, dt: float) -> float:
        """Advance the set-point towards the goal with the servo's acceleration profile."""
        target = self.angle_of(self.clamped_goal())
        if self.setpoint is None:  # torque just came on: start from where the joint is
            self.setpoint, self.setpoint_speed = q, 0.0
        acc = self.get("Acceleration") * 100 * STEP_RAD
        if acc <= 0.0:
            self.setpoint, self.setpoint_speed = target, 0.0
            return target
        goal_speed = abs(self.get("Goal_Velocity")) * STEP_RAD
        vmax = goal_speed if goal_speed > 0 else NO_LOAD_SPEED
        error = target - self.setpoint
        # fastest speed from which the set-point can still stop at the target
        wanted = math.copysign(min(vmax, math.sqrt(2.0 * acc * abs(error))), error)
        change = max(-acc * dt, min(acc * dt, wanted - self.setpoint_speed))
        self.setpoint_speed += change
        step = self.setpoint_speed * dt
        if abs(step) >= abs(error) and step * error >= 0:
            self.setpoint, self.setpoint_speed = target, 0.0
        else:
            self.setpoint += step
        return self.setpoint

    def sense(self, q: float, qdot: float, torque: float, dt: float) -> None:
        """Update the Present_* registers and protections after a physics step of ``dt`` [s]."""
        self.set("Present_Position", self.present_steps(q))
        speed = round(qdot / STEP_RAD)
        self.set("Present_Velocity", max(-32767, min(32767, speed)))
        load = self.load_counts(torque, qdot)
        self.set("Present_Load", load)
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
