"""Feetech STS/SMS serial protocol ("protocol 0"): packets, checksums and the STS3215 registers.

Why a module of our own: the bus emulator must answer exactly what a real STS3215 answers, and
the safety tests must decode every byte the driver puts on the wire -- neither may borrow the
SDK's code, or a bug in it would be checked against itself. Pure Python (no serial port, no
rclpy).

Wire format (half-duplex TTL, 8N1, little-endian words)::

    instruction  FF FF  id  len  instr  params...  checksum     len = len(params) + 2
    status       FF FF  id  len  error  params...  checksum     len = len(params) + 2
    checksum     = ~(id + len + instr|error + sum(params)) & 0xFF

Broadcast id 0xFE: nobody answers, except SYNC READ (each listed servo answers in turn) and
PING (every servo answers). Sign-magnitude fields (Present_Load bit 10, positions and speeds
bit 15, Homing_Offset bit 11) are registers' data, see ``Register.sign_bit``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum, IntFlag
from typing import NamedTuple

from physai_ros.errors import InvalidInput

HEADER = b"\xff\xff"
BROADCAST_ID = 0xFE
MAX_ID = 0xFC
BITS_PER_BYTE = 10  # 8N1: start bit + 8 data bits + stop bit
STEPS_PER_TURN = 4096  # STS3215 magnetic encoder, 12 bit


class Instruction(IntEnum):
    PING = 0x01
    READ = 0x02
    WRITE = 0x03
    REG_WRITE = 0x04
    ACTION = 0x05
    SYNC_READ = 0x82
    SYNC_WRITE = 0x83


class ErrorBit(IntFlag):
    """Error byte of a status packet (and the Status register 65 of an STS servo)."""

    VOLTAGE = 0x01
    ENCODER = 0x02  # magnetic encoder (angle sensor)
    OVERHEAT = 0x04
    OVERCURRENT = 0x08
    OVERLOAD = 0x20


def checksum(body: bytes | Sequence[int]) -> int:
    """``~sum & 0xFF`` over id, length, instruction/error and parameters."""
    return ~sum(body) & 0xFF


def _packet(servo_id: int, code: int, params: bytes | Sequence[int]) -> bytes:
    params = bytes(params)
    if not 0 <= servo_id <= BROADCAST_ID:
        raise InvalidInput(f"servo id {servo_id} outside 0..{BROADCAST_ID}")
    if len(params) > 250 - 6:
        raise InvalidInput(f"packet of {len(params)} parameter bytes is too long (max 244)")
    body = bytes((servo_id, len(params) + 2, code)) + params
    return HEADER + body + bytes((checksum(body),))


def encode_instruction(
    servo_id: int, instruction: int, params: bytes | Sequence[int] = b""
) -> bytes:
    """An instruction packet, byte for byte as ``scservo_sdk`` builds it."""
    return _packet(servo_id, int(instruction), params)


def encode_status(servo_id: int, error: int, params: bytes | Sequence[int] = b"") -> bytes:
    """A servo's status (reply) packet."""
    return _packet(servo_id, int(error) & 0x7F, params)


def packet_time(n_bytes: int, baudrate: int) -> float:
    """Seconds that ``n_bytes`` occupy the wire at ``baudrate`` [bit/s] (8N1)."""
    return n_bytes * BITS_PER_BYTE / float(baudrate)


class Packet(NamedTuple):
    """A decoded packet: ``code`` is the instruction (requests) or error byte (status)."""

    servo_id: int
    code: int
    params: bytes

    @property
    def size(self) -> int:
        """Bytes on the wire."""
        return len(self.params) + 6


class Corrupt(NamedTuple):
    """A framed packet whose checksum does not match (dropped, as a servo drops it)."""

    servo_id: int
    raw: bytes


class PacketParser:
    """Incremental decoder of a byte stream into packets (either direction).

    Resynchronises on the next ``FF FF`` after garbage, as the SDK and the servos do; packets
    with a bad checksum come out as ``Corrupt`` so a caller can count them.
    """

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[Packet | Corrupt]:
        self._buffer += data
        out: list[Packet | Corrupt] = []
        buf = self._buffer
        while True:
            start = buf.find(HEADER)
            if start < 0:
                # keep a trailing 0xFF: it may be the first half of a header
                del buf[: max(0, len(buf) - 1)]
                return out
            if start:
                del buf[:start]
            # FF FF FF ...: skip extra 0xFF bytes before the id (an id is never 0xFF)
            while len(buf) > 2 and buf[2] == 0xFF:
                del buf[0]
            if len(buf) < 4:
                return out
            length = buf[3]
            if length < 2:
                del buf[:2]
                continue
            total = length + 4
            if len(buf) < total:
                return out
            raw = bytes(buf[:total])
            del buf[:total]
            body = raw[2:-1]
            if checksum(body) != raw[-1]:
                out.append(Corrupt(raw[2], raw))
                continue
            out.append(Packet(raw[2], raw[4], raw[5:-1]))

    def pending(self) -> int:
        """Bytes received but not yet part of a whole packet."""
        return len(self._buffer)


class SyncWrite(NamedTuple):
    address: int
    length: int
    data: dict[int, bytes]  # servo id -> ``length`` bytes


def decode_sync_write(params: bytes) -> SyncWrite:
    """Split a SYNC WRITE's parameters (start, length, then id + data per servo)."""
    if len(params) < 2:
        raise InvalidInput("SYNC WRITE needs a start address and a data length")
    address, length = params[0], params[1]
    chunk = length + 1
    rest = params[2:]
    if length == 0 or len(rest) % chunk:
        raise InvalidInput(f"SYNC WRITE of {len(rest)} bytes is not a multiple of {chunk}")
    data = {rest[i]: bytes(rest[i + 1 : i + chunk]) for i in range(0, len(rest), chunk)}
    return SyncWrite(address, length, data)


def encode_sync_write(address: int, length: int, data: Mapping[int, bytes]) -> bytes:
    params = bytearray((address, length))
    for servo_id, value in data.items():
        if len(value) != length:
            raise InvalidInput(f"servo {servo_id}: {len(value)} data bytes, expected {length}")
        params += bytes((servo_id,)) + bytes(value)
    return encode_instruction(BROADCAST_ID, Instruction.SYNC_WRITE, params)


class SyncRead(NamedTuple):
    address: int
    length: int
    ids: tuple[int, ...]


def decode_sync_read(params: bytes) -> SyncRead:
    if len(params) < 3:
        raise InvalidInput("SYNC READ needs a start address, a data length and at least one id")
    return SyncRead(params[0], params[1], tuple(params[2:]))


# --- values -------------------------------------------------------------------------------------
def to_sign_magnitude(value: int, sign_bit: int) -> int:
    """Encode ``value`` with its sign in bit ``sign_bit`` (Feetech's convention)."""
    magnitude = abs(int(value))
    if magnitude >= 1 << sign_bit:
        raise InvalidInput(f"|{value}| does not fit below sign bit {sign_bit}")
    return magnitude | ((1 << sign_bit) if value < 0 else 0)


def from_sign_magnitude(raw: int, sign_bit: int) -> int:
    magnitude = raw & ((1 << sign_bit) - 1)
    return -magnitude if raw >> sign_bit & 1 else magnitude


def to_bytes(value: int, size: int) -> bytes:
    return int(value).to_bytes(size, "little", signed=False)


def from_bytes(data: bytes | Sequence[int]) -> int:
    return int.from_bytes(bytes(data), "little", signed=False)


# --- the STS3215 control table ------------------------------------------------------------------
@dataclass(frozen=True)
class Register:
    """One field of the control table.

    address, size [bytes]; default: value at power-up (raw, already sign-encoded);
    writable: False for read-only fields; eprom: kept across power cycles on a real servo;
    sign_bit: bit that carries the sign (sign-magnitude), or None; unit: what one count is.
    """

    name: str
    address: int
    size: int
    default: int = 0
    writable: bool = True
    eprom: bool = False
    sign_bit: int | None = None
    unit: str = ""


def _r(name, address, size, default=0, writable=True, eprom=False, sign_bit=None, unit=""):
    return Register(name, address, size, default, writable, eprom, sign_bit, unit)


# Addresses as LeRobot's lerobot/motors/feetech/tables.py (STS_SMS_SERIES_CONTROL_TABLE) has
# them; defaults from Feetech's STS3215 memory table (12 V version).
STS3215_REGISTERS: tuple[Register, ...] = (
    _r("Firmware_Major_Version", 0, 1, 3, writable=False, eprom=True),
    _r("Firmware_Minor_Version", 1, 1, 9, writable=False, eprom=True),
    _r("Model_Number", 3, 2, 777, writable=False, eprom=True),
    _r("ID", 5, 1, 1, eprom=True),
    _r("Baud_Rate", 6, 1, 0, eprom=True, unit="index: 0=1M 1=500k 2=250k 3=128k 4=115.2k ..."),
    _r("Return_Delay_Time", 7, 1, 250, eprom=True, unit="2 µs"),
    _r("Response_Status_Level", 8, 1, 1, eprom=True, unit="0: only READ/PING answer"),
    _r("Min_Position_Limit", 9, 2, 0, eprom=True, unit="step"),
    _r("Max_Position_Limit", 11, 2, 4095, eprom=True, unit="step"),
    _r("Max_Temperature_Limit", 13, 1, 70, eprom=True, unit="°C"),
    _r("Max_Voltage_Limit", 14, 1, 140, eprom=True, unit="0.1 V"),
    _r("Min_Voltage_Limit", 15, 1, 40, eprom=True, unit="0.1 V"),
    _r("Max_Torque_Limit", 16, 2, 1000, eprom=True, unit="0.1 % of stall torque"),
    _r("Phase", 18, 1, 12, eprom=True),
    _r("Unloading_Condition", 19, 1, 44, eprom=True, unit="ErrorBit mask of protections"),
    _r("LED_Alarm_Condition", 20, 1, 47, eprom=True),
    _r("P_Coefficient", 21, 1, 32, eprom=True),
    _r("D_Coefficient", 22, 1, 32, eprom=True),
    _r("I_Coefficient", 23, 1, 0, eprom=True),
    _r("Minimum_Startup_Force", 24, 2, 16, eprom=True, unit="0.1 %"),
    _r("CW_Dead_Zone", 26, 1, 1, eprom=True, unit="step"),
    _r("CCW_Dead_Zone", 27, 1, 1, eprom=True, unit="step"),
    _r("Protection_Current", 28, 2, 500, eprom=True, unit="6.5 mA"),
    _r("Angular_Resolution", 30, 1, 1, eprom=True),
    _r("Homing_Offset", 31, 2, 0, eprom=True, sign_bit=11, unit="step"),
    _r("Operating_Mode", 33, 1, 0, eprom=True, unit="0 position, 1 speed, 2 PWM, 3 step"),
    _r("Protective_Torque", 34, 1, 20, eprom=True, unit="% output after overload"),
    _r("Protection_Time", 35, 1, 200, eprom=True, unit="10 ms above Overload_Torque"),
    _r("Overload_Torque", 36, 1, 80, eprom=True, unit="% load that starts Protection_Time"),
    _r("Velocity_closed_loop_P_proportional_coefficient", 37, 1, 10, eprom=True),
    _r("Over_Current_Protection_Time", 38, 1, 200, eprom=True, unit="10 ms"),
    _r("Velocity_closed_loop_I_integral_coefficient", 39, 1, 200, eprom=True),
    _r("Torque_Enable", 40, 1, 0, unit="0 off, 1 on"),
    _r("Acceleration", 41, 1, 0, unit="100 step/s²"),
    _r("Goal_Position", 42, 2, 0, sign_bit=15, unit="step"),
    _r("Goal_Time", 44, 2, 0, unit="ms"),
    _r("Goal_Velocity", 46, 2, 0, sign_bit=15, unit="step/s"),
    _r("Torque_Limit", 48, 2, 1000, unit="0.1 % of stall torque"),
    _r("Lock", 55, 1, 0, unit="1 = EPROM write-protected"),
    _r("Present_Position", 56, 2, 0, writable=False, sign_bit=15, unit="step"),
    _r("Present_Velocity", 58, 2, 0, writable=False, sign_bit=15, unit="step/s"),
    _r("Present_Load", 60, 2, 0, writable=False, sign_bit=10, unit="0.1 % of stall torque"),
    _r("Present_Voltage", 62, 1, 120, writable=False, unit="0.1 V"),
    _r("Present_Temperature", 63, 1, 25, writable=False, unit="°C"),
    _r("Status", 65, 1, 0, writable=False, unit="ErrorBit flags"),
    _r("Moving", 66, 1, 0, writable=False),
    _r("Present_Current", 69, 2, 0, writable=False, unit="6.5 mA"),
)
REGISTERS_BY_NAME: dict[str, Register] = {r.name: r for r in STS3215_REGISTERS}
MEMORY_SIZE = 256


def register(name: str) -> Register:
    try:
        return REGISTERS_BY_NAME[name]
    except KeyError:
        raise InvalidInput(
            f"unknown STS3215 register {name!r}; valid: {sorted(REGISTERS_BY_NAME)}"
        ) from None


def register_at(address: int) -> Register | None:
    """The register that starts at ``address`` (None inside a field or a gap)."""
    for reg in STS3215_REGISTERS:
        if reg.address == address:
            return reg
    return None


def writes_to(address: int, data: bytes) -> Iterable[tuple[Register, int]]:
    """(register, raw value) for every whole register a write of ``data`` at ``address``
    covers -- how a decoded WRITE or SYNC WRITE is read back in the safety tests."""
    end = address + len(data)
    for reg in STS3215_REGISTERS:
        if reg.address >= address and reg.address + reg.size <= end:
            offset = reg.address - address
            yield reg, from_bytes(data[offset : offset + reg.size])


BAUDRATES: dict[int, int] = {
    0: 1_000_000,
    1: 500_000,
    2: 250_000,
    3: 128_000,
    4: 115_200,
    5: 57_600,
    6: 38_400,
    7: 19_200,
}
"""Baud_Rate register index -> bit/s (LeRobot's STS_SMS_SERIES_BAUDRATE_TABLE)."""
