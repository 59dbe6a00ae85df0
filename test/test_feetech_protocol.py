"""The Feetech protocol module: known packets, the stream parser, values, the register table."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from physai_ros.errors import InvalidInput
from physai_ros.robots.so101 import protocol as fp


def test_known_packets_from_the_servo_manual():
    # PING id 1 and READ id 1, 2 bytes at 56 (Present_Position), as in Feetech's manual
    assert fp.encode_instruction(1, fp.Instruction.PING) == bytes.fromhex("ffff010201fb")
    assert fp.encode_instruction(1, fp.Instruction.READ, [56, 2]) == bytes.fromhex(
        "ffff0104023802be"
    )
    assert fp.encode_status(1, 0) == bytes.fromhex("ffff010200fc")


def test_parser_resynchronises_and_reports_bad_checksums():
    good = fp.encode_status(3, int(fp.ErrorBit.OVERLOAD), b"\x10\x20")
    bad = bytearray(fp.encode_status(4, 0, b"\x01"))
    bad[-1] ^= 0x55
    stream = b"\x00\x13\xff" + good + bytes(bad) + good
    parser = fp.PacketParser()
    out = []
    for i in range(0, len(stream), 3):  # arrives in pieces, as from a serial port
        out += parser.feed(stream[i : i + 3])
    assert out[0] == fp.Packet(3, 0x20, b"\x10\x20")
    assert isinstance(out[1], fp.Corrupt) and out[1].servo_id == 4
    assert out[2] == out[0]
    assert parser.pending() == 0


@given(st.integers(-1023, 1023))
def test_present_load_is_sign_magnitude_with_bit_10(value):
    raw = fp.to_sign_magnitude(value, 10)
    assert raw < 2048 and (raw >> 10 & 1) == (value < 0)
    assert fp.from_sign_magnitude(raw, 10) == value


def test_sign_magnitude_rejects_what_does_not_fit():
    with pytest.raises(InvalidInput):
        fp.to_sign_magnitude(1024, 10)


@given(
    st.integers(0, 120),
    st.sampled_from([1, 2, 4]),
    st.dictionaries(st.integers(0, 252), st.integers(0, 2**32 - 1), min_size=1, max_size=10),
)
def test_sync_write_round_trip(address, size, values):
    data = {i: fp.to_bytes(v % (1 << (8 * size)), size) for i, v in values.items()}
    packet = fp.encode_sync_write(address, size, data)
    (decoded,) = fp.PacketParser().feed(packet)
    assert decoded.servo_id == fp.BROADCAST_ID and decoded.code == fp.Instruction.SYNC_WRITE
    assert fp.decode_sync_write(decoded.params) == fp.SyncWrite(address, size, data)


def test_writes_to_names_every_whole_register():
    regs = dict(fp.writes_to(40, bytes([1, 254, 0x10, 0x08])))
    names = {r.name: v for r, v in regs.items()}
    assert names == {"Torque_Enable": 1, "Acceleration": 254, "Goal_Position": 0x0810}


def test_register_table_matches_lerobots_addresses():
    """The emulator's own table must put every field where LeRobot reads and writes it."""
    from lerobot.motors.feetech.tables import (
        MODEL_NUMBER_TABLE,
        STS_SMS_SERIES_CONTROL_TABLE,
        STS_SMS_SERIES_ENCODINGS_TABLE,
    )

    for reg in fp.STS3215_REGISTERS:
        assert STS_SMS_SERIES_CONTROL_TABLE[reg.name] == (reg.address, reg.size), reg.name
        if reg.name in STS_SMS_SERIES_ENCODINGS_TABLE:
            assert reg.sign_bit == STS_SMS_SERIES_ENCODINGS_TABLE[reg.name], reg.name
    assert fp.register("Model_Number").default == MODEL_NUMBER_TABLE["sts3215"]
    assert fp.packet_time(10, 1_000_000) == pytest.approx(100e-6)
