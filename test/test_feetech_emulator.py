"""LeRobot's real FeetechMotorsBus (and the SDK under it, unpatched) against the bus emulator.

The first test runs the emulator as its own process, exactly as a user would
(``python -m physai_ros.robots.so101.emulator.bus``); the fault and safety tests run it in this
process so they can break it and read back every byte written to the bus.
"""

from __future__ import annotations

import json
import re
import sys
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.optional import require

from physai_ros.robots.so101 import protocol as fp
from physai_ros.robots.so101.bus import (
    STALL_TORQUE,
    BusSettings,
    PortUnavailable,
    ServoSilent,
    So101Bus,
    ping,
)
from physai_ros.robots.so101.emulator.bus import (
    JOINTS,
    LEROBOT_GRIPPER,
    FeetechBusEmulator,
    joint_offsets,
    write_calibration,
)
from physai_ros.robots.so101.emulator.servo import STEP_RAD, EmulatedServo

pytestmark = pytest.mark.realtime  # the emulator answers on a pty in wall-clock time

lerobot_motors = require("lerobot.motors")
from lerobot.motors import Motor, MotorCalibration, MotorNormMode  # noqa: E402
from lerobot.motors.feetech import FeetechMotorsBus  # noqa: E402


def until(predicate, timeout: float, period: float = 0.002):
    """Poll ``predicate`` until it returns something truthy (returned) or ``timeout`` [s]
    passes (its last value returned): the emulator answers in its own thread, on a loaded
    machine later than any fixed sleep would allow."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()) and time.monotonic() < deadline:
        time.sleep(period)
    return value


def replies(port, parser: fp.PacketParser, packets: list):
    """Poll a serial port: the packets parsed so far (appended to ``packets``)."""
    packets.extend(parser.feed(port.read(port.in_waiting or 1)))
    return packets


def _bus(port: str, calibration: dict) -> FeetechMotorsBus:
    motors = {j: Motor(i + 1, "sts3215", MotorNormMode.DEGREES) for i, j in enumerate(JOINTS)}
    cal = {j: MotorCalibration(**c) for j, c in calibration.items()}
    return FeetechMotorsBus(port, motors, calibration=cal)


def test_lerobot_bus_round_trip_against_the_emulator_process(spawn, tmp_path):
    link, cal_file = tmp_path / "port", tmp_path / "cal.json"
    proc = spawn(
        "physai_ros.robots.so101.emulator.bus",
        "--link",
        str(link),
        "--calibration-out",
        str(cal_file),
        "--initial",
        *["0"] * 6,
        "--power-on-torque",
        module=True,
    )
    line = proc.stdout.readline()
    assert line.startswith("port: /dev/pts/"), line
    calibration = json.loads(cal_file.read_text())
    bus = _bus(str(link), calibration)
    bus.connect()  # handshake: pings every id, reads model numbers and firmware versions
    try:
        assert bus.is_calibrated  # homing offsets and ranges on the servos = the file's
        assert bus.broadcast_ping() == dict.fromkeys(range(1, 7), 777)
        bus.write("Return_Delay_Time", "elbow_flex", 0)
        assert bus.read("Return_Delay_Time", "elbow_flex") == 0
        start = bus.sync_read("Present_Position")
        # at joint angle 0 LeRobot reads the offset of the middle of the range (gripper: -45°)
        offsets = zip(JOINTS, joint_offsets_of(calibration), strict=True)
        expected = {j: -np.degrees(o) for j, o in offsets}
        for j in JOINTS[:5]:
            assert start[j] == pytest.approx(expected[j], abs=2.0), j  # gravity sag < 2°
        load = bus.sync_read("Present_Load")
        assert load["shoulder_lift"] != 0  # gravity loads the shoulder: Present_Load is live
        bus.sync_write("Goal_Position", {"shoulder_pan": 20.0, "gripper": 10.0})

        def arrived():
            now = bus.sync_read("Present_Position")
            there = abs(now["shoulder_pan"] - 20.0) < 0.5 and abs(now["gripper"] - 10.0) < 0.5
            return now if there else None

        # ≈ 0.5 s of physics; the deadline is wall time, which a starved emulator stretches.
        # The reading that arrived is the one judged: a jaw may swing past its goal and back.
        now = until(arrived, 15.0) or bus.sync_read("Present_Position")
        assert now["shoulder_pan"] == pytest.approx(20.0, abs=0.5)  # physics moved the joint
        assert now["gripper"] == pytest.approx(10.0, abs=0.5)
    finally:
        bus.disconnect(disable_torque=True)


def joint_offsets_of(calibration: dict) -> list[float]:
    """Joint angle at LeRobot's 0° = middle of the model range; gripper 45°, arm 0."""
    return [0.0, 0.0, 0.0, 0.0, 0.0, np.radians(45.0)]


@pytest.fixture(scope="module")
def emulator():
    emu = FeetechBusEmulator(
        record_writes=True, record_goals=True, initial=(0.0,) * 6, power_on_torque=True
    )
    emu.start()
    yield emu
    emu.stop()


def test_wrong_baud_rate_means_no_status_packet(emulator):
    bus = _bus(emulator.port, emulator.calibration)
    bus.connect(handshake=False)
    try:
        bus.set_baudrate(500_000)
        assert bus.ping(1) is None
        assert emulator.stats.baud_mismatches > 0
        bus.set_baudrate(1_000_000)
        assert bus.ping(1, num_retry=3) == 777
    finally:
        bus.port_handler.closePort()


def test_silent_servo_and_corrupt_replies_are_reported(emulator):
    bus = _bus(emulator.port, emulator.calibration)
    bus.connect(handshake=False)
    try:
        emulator.faults.mute_ids = {3}
        with pytest.raises(ConnectionError, match="no status packet"):
            bus.sync_read("Present_Position")
        # retried: on a starved machine one reply can miss the client's packet timeout, while a
        # muted servo stays silent however often it is asked
        assert bus.ping(3, num_retry=3) is None and bus.ping(2, num_retry=3) == 777
        emulator.faults.mute_ids = set()
        emulator.faults.corrupt_every = 1
        with pytest.raises(ConnectionError, match="Incorrect status packet"):
            bus.read("Present_Position", "wrist_flex")
        assert emulator.stats.corrupted_replies > 0
    finally:
        emulator.faults.mute_ids = set()
        emulator.faults.corrupt_every = 0
        bus.port_handler.closePort()


def test_lost_reads_skip_then_lose_then_answer_again(emulator):
    """``lose_reads`` "Torque_Enable 1 2": the next Torque_Enable read is answered, the two
    after it are not (a reply lost on the wire), then reads are answered again; other
    registers are never touched."""
    bus = _bus(emulator.port, emulator.calibration)
    bus.connect(handshake=False)
    try:
        emulator.faults.lose_reads = "Torque_Enable 1 2"
        assert bus.sync_read("Present_Position", normalize=False)
        assert bus.sync_read("Torque_Enable", normalize=False)
        for _ in range(2):
            with pytest.raises(ConnectionError, match="no status packet"):
                bus.sync_read("Torque_Enable", normalize=False)
        assert emulator.faults.lose_reads == ""
        assert bus.sync_read("Torque_Enable", normalize=False)
    finally:
        emulator.faults.lose_reads = ""
        bus.port_handler.closePort()


def test_garble_hands_one_servo_a_raw_value_after_the_named_read(emulator, monkeypatch):
    """``garble`` "Torque_Enable Present_Position 5 2700": a Present_Position read before any
    Torque_Enable read is true; the first after it gives servo 5 (wrist_roll) 2700, once.

    What a reply says is the point here, not how fast it comes: the SDK waits about 34 ms for
    a reply (twice its 16 ms latency timer), and the in-process emulator's thread, sharing the
    GIL with the reader, once answered later on a loaded CI. A late reply cannot be read again
    (the emulator has spent the garble), so the wait is longer instead."""
    monkeypatch.setattr("scservo_sdk.port_handler.LATENCY_TIMER", 100)
    bus = _bus(emulator.port, emulator.calibration)
    bus.connect(handshake=False)
    try:
        emulator.faults.garble = "Torque_Enable Present_Position 5 2700"
        true = bus.sync_read("Present_Position", normalize=False)["wrist_roll"]
        assert true != 2700
        bus.sync_read("Torque_Enable", normalize=False)
        assert bus.sync_read("Present_Position", normalize=False)["wrist_roll"] == 2700
        assert emulator.faults.garble == ""
        assert bus.sync_read("Present_Position", normalize=False)["wrist_roll"] == true
    finally:
        emulator.faults.garble = ""
        bus.port_handler.closePort()


def test_a_span_read_meets_the_faults_named_for_a_register_within_it(emulator):
    """One sync read of addresses 56-61 (Present_Position, Present_Velocity, Present_Load) is a
    read of each: ``garble`` naming Present_Load garbles those two bytes of servo 5's reply
    only, ``lose_reads`` naming Present_Velocity loses the span read's replies."""
    bus = _bus(emulator.port, emulator.calibration)
    bus.connect(handshake=False)
    ids = list(range(1, 7))
    load = fp.register("Present_Load").address
    try:
        emulator.faults.garble = "Torque_Enable Present_Load 5 1234"
        bus.sync_read("Torque_Enable", normalize=False)
        bus._sync_read(56, 6, ids)
        assert bus.sync_reader.getData(5, load, 2) == 1234
        assert emulator.faults.garble == ""
        emulator.faults.lose_reads = "Present_Velocity 0 1"
        with pytest.raises(ConnectionError, match="no status packet"):
            bus._sync_read(56, 6, ids)
        assert emulator.faults.lose_reads == ""
    finally:
        emulator.faults.garble = emulator.faults.lose_reads = ""
        bus.port_handler.closePort()


def test_usb_latency_delays_every_transaction(emulator):
    """``usb_latency``: each transaction's reply comes that much later (a USB serial adapter's
    round trip); physics is not held up meanwhile."""
    bus = _bus(emulator.port, emulator.calibration)
    bus.connect(handshake=False)
    try:
        emulator.usb_latency = 0.004
        sim0, t0 = emulator.time, time.monotonic()
        for _ in range(10):
            bus.sync_read("Present_Position", normalize=False)
        took = time.monotonic() - t0
        assert took >= 10 * 0.004, took
        assert emulator.time > sim0  # physics was not blocked
    finally:
        emulator.usb_latency = 0.0
        bus.port_handler.closePort()


@pytest.mark.parametrize("clears", [True, False])
def test_a_latched_protection_clears_on_torque_enable_only_if_so_configured(clears):
    """``protections_clear_on_enable`` True: torque 0 -> 1 clears a latched OVERLOAD (as
    before); False: it stays latched through the re-enable, and only a power cycle clears it."""
    servo = EmulatedServo(1, 2047, protections_clear_on_enable=clears)
    servo.latched = int(fp.ErrorBit.OVERLOAD)
    enable = fp.register("Torque_Enable").address
    servo.write(enable, b"\x00")
    servo.write(enable, b"\x01")
    assert bool(servo.error & int(fp.ErrorBit.OVERLOAD)) is not clears
    servo.power_cycle(2047)
    assert servo.error & int(fp.ErrorBit.OVERLOAD) == 0


def test_overload_flag_reaches_lerobot_and_the_status_register(emulator):
    bus = _bus(emulator.port, emulator.calibration)
    bus.connect(handshake=False)
    try:
        emulator.servos[5].forced = int(fp.ErrorBit.OVERLOAD)
        with pytest.raises(RuntimeError, match="Overload"):
            bus.read("Present_Load", "gripper")
        # one physics step copies the flags into Status
        overload = int(fp.ErrorBit.OVERLOAD)
        assert until(lambda: bus.sync_read("Status")["gripper"] & overload, 2.0, 0.01)
    finally:
        emulator.servos[5].forced = 0
        bus.port_handler.closePort()


def test_an_overloaded_servo_answers_its_ping_with_the_error_byte(emulator):
    """A latched protection does not silence a servo: its ping is answered, the error byte set.
    LeRobot's ``ping`` returns None for that as for silence; the driver's ``ping`` keeps the
    model number and the error apart, so an overloaded servo is never reported missing."""
    bus = _bus(emulator.port, emulator.calibration)
    bus.connect(handshake=False)
    try:
        emulator.servos[2].forced = int(fp.ErrorBit.OVERLOAD)
        # (retries: on a starved machine the emulator's reply may come too late)
        assert bus.ping(3, num_retry=3) is None  # LeRobot: as if the servo were missing
        assert ping(bus, 3, retries=3) == (777, int(fp.ErrorBit.OVERLOAD))
        assert ping(bus, 2, retries=3) == (777, 0)
        emulator.faults.mute_ids = {3}
        assert ping(bus, 3) == (None, 0)
    finally:
        emulator.servos[2].forced = 0
        emulator.faults.mute_ids = set()
        bus.port_handler.closePort()


def test_a_reply_the_client_stopped_waiting_for_is_never_sent(emulator):
    """Two requests sent back to back (the client gave up on the first, as the SDK does after
    its timeout): only the second is answered. A late first reply would be read as the second's
    -- the desync that made another register's bytes read as Status on a starved machine."""
    import serial

    port = serial.Serial(emulator.port, 1_000_000, timeout=0.01)
    try:
        port.write(fp.encode_instruction(1, fp.Instruction.PING))
        parser, first = fp.PacketParser(), []  # alone on the bus: answered
        until(lambda: replies(port, parser, first), 2.0)
        assert [p.servo_id for p in first] == [1]
        dropped = emulator.stats.late_replies_dropped
        position, status = (fp.REGISTERS_BY_NAME[n] for n in ("Present_Position", "Status"))
        port.write(
            fp.encode_instruction(2, fp.Instruction.READ, [position.address, position.size])
            + fp.encode_instruction(2, fp.Instruction.READ, [status.address, status.size])
        )
        parser, answered = fp.PacketParser(), []
        # both requests handled: the first dropped, the second answered (after the drop)
        assert until(lambda: emulator.stats.late_replies_dropped > dropped, 2.0)
        until(lambda: replies(port, parser, answered), 2.0)
        replies(port, parser, answered)  # anything sent after it
        assert len(answered) == 1 and len(answered[0].params) == 1  # the Status read's byte
        assert emulator.stats.late_replies_dropped == dropped + 1
    finally:
        port.close()


def test_the_emulator_node_warns_when_it_falls_behind(spawn, tmp_path, ros_domain):
    """The ROS node (own process) says so in its log when replies had to be dropped, so a
    timed-out read in the driver's log is not mistaken for a bus fault."""
    import os
    import select
    import signal

    import serial

    link = tmp_path / "port"
    proc = spawn(
        "physai_ros.nodes.so101_emulator", "--ros-args", "-p", f"link:={link}", module=True
    )
    assert until(link.exists, 30.0, 0.05), "the emulator node made no port"
    port = serial.Serial(str(link), 1_000_000, timeout=0.01)
    try:
        status = fp.REGISTERS_BY_NAME["Status"]
        read = fp.encode_instruction(1, fp.Instruction.READ, [status.address, status.size])
        port.write(read + read + read)  # two requests given up on, as after two timeouts
        parser, answered = fp.PacketParser(), []
        assert until(lambda: replies(port, parser, answered), 2.0)
        assert len(answered) == 1
    finally:
        port.close()
    # the node reports once a second; summed, in case the report's second ended between the
    # two drops. Its output is read as it comes until both are reported (or 10 s pass).
    pattern = r"fell behind real time in the last second: (\d+) late replies"
    out, fd = bytearray(), proc.stdout.fileno()

    def reported() -> bool:
        if select.select([fd], [], [], 0)[0]:
            out.extend(os.read(fd, 65536))
        return sum(int(n) for n in re.findall(pattern, out.decode(errors="replace"))) >= 2

    until(reported, 10.0, 0.05)
    os.killpg(proc.pid, signal.SIGINT)
    proc.wait(10)
    text = out.decode(errors="replace")
    assert sum(int(n) for n in re.findall(pattern, text)) == 2, text


@pytest.fixture(scope="module")
def so101_bus(emulator, tmp_path_factory):
    cal = tmp_path_factory.mktemp("cal") / "cal.json"
    write_calibration(cal, emulator.calibration)
    m = emulator.physics.model
    lo = np.array([m.jnt_range[m.joint(j).id][0] for j in JOINTS])
    hi = np.array([m.jnt_range[m.joint(j).id][1] for j in JOINTS])
    bus = So101Bus(BusSettings(emulator.port, cal, lo, hi, joint_offsets=tuple(joint_offsets(m))))
    bus.open()
    bus.arm(bus.read_state().position)
    yield bus, lo, hi
    bus.close()


angles = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e3, max_value=1e3)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(angles, min_size=6, max_size=6))
def test_no_goal_outside_the_limits_ever_reaches_the_bus(so101_bus, emulator, goal):
    """Whatever the caller asks, every Goal_Position byte on the wire decodes (with our own
    protocol module) to a step inside the calibrated range and an angle inside the joint limits."""
    bus, lo, hi = so101_bus
    emulator.stats.writes.clear()
    sent = bus.send_positions(np.array(goal))
    assert np.all(sent >= lo - 1e-9) and np.all(sent <= hi + 1e-9)
    # The emulator thread reads the pty asynchronously: wait for the write to arrive (on a
    # loaded machine a fixed few-ms sleep is not enough).
    deadline = time.monotonic() + 2.0
    packets: list = []
    while not packets and time.monotonic() < deadline:
        time.sleep(0.002)
        packets = [p for raw in list(emulator.stats.writes) for p in fp.PacketParser().feed(raw)]
    assert packets, "the goal never reached the bus"
    for packet in packets:
        sync = fp.decode_sync_write(packet.params)
        for servo_id, data in sync.data.items():
            for reg, raw in fp.writes_to(sync.address, data):
                if reg.name != "Goal_Position":
                    continue
                steps = fp.from_sign_magnitude(raw, 15)
                servo = emulator.servos[servo_id - 1]
                cal = emulator.calibration[JOINTS[servo_id - 1]]
                assert cal["range_min"] <= steps <= cal["range_max"], (servo_id, steps)
                angle = servo.angle_of(steps)
                assert lo[servo_id - 1] - 1e-3 <= angle <= hi[servo_id - 1] + 1e-3


def test_read_state_reads_position_velocity_and_load_in_one_sync_read(so101_bus, emulator):
    """``read_state``: ONE sync read of addresses 56-61 per call, each field decoded as
    LeRobot decodes its own register (sign-magnitude, DEGREES): the same reading as three
    sync reads of the named registers, on a still arm under gravity (a live load)."""
    bus, _, _ = so101_bus
    assert until(lambda: np.all(np.abs(emulator.witness().velocities) < 0.02), 5.0, 0.05)
    requests = emulator.stats.requests
    one = bus.read_state()
    assert emulator.stats.requests - requests == 1
    bus.state_reads = 3
    try:
        three = bus.read_state()
    finally:
        bus.state_reads = 1
    assert emulator.stats.requests - requests == 4
    # the readings are a few ms apart, of an arm come to rest, whose servos holding still
    # dither their load by a few tenths (CI saw wrist_roll at -0.54 then -0.21): the medians of
    # five pairs compare the decoding alone
    ones, threes = [one], [three]
    for _ in range(4):
        ones.append(bus.read_state())
        bus.state_reads = 3
        try:
            threes.append(bus.read_state())
        finally:
            bus.state_reads = 1
    for field, atol in (("position", 0.02), ("velocity", 0.5), ("torque", 0.3)):
        median_one = np.median([getattr(r, field) for r in ones], axis=0)
        median_three = np.median([getattr(r, field) for r in threes], axis=0)
        np.testing.assert_allclose(median_one, median_three, atol=atol, err_msg=field)
    assert np.any(one.torque != 0.0)  # gravity loads the arm: the load field is live


def test_the_servos_count_state_reads_and_keep_the_largest_goal_step(so101_bus, emulator):
    """What ``physai trials`` reports of the driver's bus loop, measured on the servo side:
    each state read (one per driver cycle) counts once, a read of other registers not; each
    servo keeps the largest step between two goals it received in a row [rad], whatever the
    sender believes it sent."""
    bus, lo, hi = so101_bus
    reads = emulator.stats.state_reads
    bus.read_state()
    bus.read_health()  # temperature, voltage, current, status: no state read
    assert emulator.stats.state_reads - reads == 1
    start = np.clip(np.zeros(6), lo, hi)
    bus.send_positions(start)
    elbow = emulator.servos[2]

    def arrived() -> bool:  # the first goal received before the step is measured
        return abs(elbow.angle_of(elbow.get("Goal_Position")) - start[2]) <= STEP_RAD

    assert until(arrived, 2.0)
    emulator.stats.max_goal_step[:] = [0.0] * 6
    step = np.array([0.0, 0.0, 0.12, 0.0, 0.0, 0.0])
    bus.send_positions(np.clip(start + step, lo, hi))
    bus.send_positions(np.clip(start + step + step / 2, lo, hi))
    assert until(lambda: emulator.stats.max_goal_step[2] > 0.1, 2.0), emulator.stats
    largest = emulator.stats.max_goal_step
    assert abs(largest[2] - 0.12) <= 2 * STEP_RAD, largest  # whole steps on the wire
    assert max(largest[:2] + largest[3:]) <= STEP_RAD, largest  # unchanged goals: no step


def test_a_short_reply_to_the_state_read_is_a_failed_read(so101_bus, monkeypatch):
    """A status packet of the right servo but too few bytes for 56-61 (the late reply to an
    earlier 2-byte read, which the SDK takes as this one's) fails the state read as a lost
    reply would (``ServoSilent`` naming the servo), never an IndexError in the bus loop."""
    bus, _, _ = so101_bus
    real = bus.bus._sync_read

    def short_reply(*args, **kwargs):
        result = real(*args, **kwargs)
        bus.bus.sync_reader.data_dict[5] = [0x10, 0x08]
        return result

    monkeypatch.setattr(bus.bus, "_sync_read", short_reply)
    with pytest.raises(ServoSilent, match=r"servo\(s\) \[5\] answered fewer than 6 bytes"):
        bus.read_state()


def test_stalled_replies_come_late_and_goals_are_logged_as_received(so101_bus, emulator):
    """``faults.stall_every``/``stall_ms``: every n-th read's replies come that late (a
    starved bus); ``record_goals``: each servo's Goal_Position, as received, with its time."""
    bus, lo, hi = so101_bus
    emulator.faults.stall_every, emulator.faults.stall_ms = 1, 15.0
    try:
        t0 = time.monotonic()
        bus.read_state()  # one sync read (position, velocity, load), stalled
        took = time.monotonic() - t0
    finally:
        emulator.faults.stall_every = 0
    assert took >= 0.015, took
    emulator.stats.goals.clear()
    before = time.monotonic()
    goal = np.clip(np.array([0.1, -0.2, 0.3, -0.1, 0.2, 0.5]), lo, hi)
    sent = bus.send_positions(goal)
    assert until(lambda: len(emulator.stats.goals) >= 6, 2.0), emulator.stats.goals
    got = {g.servo_id: g for g in emulator.stats.goals}
    assert sorted(got) == [1, 2, 3, 4, 5, 6]
    for i, sid in enumerate(range(1, 7)):
        assert got[sid].received >= before
        assert abs(got[sid].angle - sent[i]) < 1e-3, (sid, got[sid], sent[i])  # < a step


def test_missing_and_busy_ports_are_named(so101_bus, emulator, tmp_path):
    """Before any byte is sent: an unplugged adapter and a port another process holds (here the
    module's bus, which has it locked) each give a PortUnavailable naming the port."""
    _, lo, hi = so101_bus
    cal = tmp_path / "cal.json"
    write_calibration(cal, emulator.calibration)
    missing = tmp_path / "ttyACM9"
    with pytest.raises(PortUnavailable, match=f"{missing}.*does not exist"):
        So101Bus(BusSettings(str(missing), cal, lo, hi)).open()
    with pytest.raises(PortUnavailable, match="busy"):
        So101Bus(BusSettings(emulator.port, cal, lo, hi)).open()


def test_a_pulled_cable_is_a_lost_port_on_every_call_and_plugging_back_reconnects(tmp_path):
    """Pulled mid-use, the port fails inside the Feetech SDK's transactions (an OS error, or
    pyserial's termios.error on the flush), which leave the SDK's port marked busy: every call
    must still name the lost port (never "Port is in use!" or a silent servo, which would keep
    the driver on a dead port instead of reconnecting), and the same settings reconnect once
    the cable is back -- with nothing written, so the arm holds exactly where it was."""
    emu = FeetechBusEmulator(link=tmp_path / "ttyACM0", initial=(0.0,) * 6, power_on_torque=True)
    emu.start()
    try:
        cal = tmp_path / "cal.json"
        write_calibration(cal, emu.calibration)
        m = emu.physics.model
        lo = np.array([m.jnt_range[m.joint(j).id][0] for j in JOINTS])
        hi = np.array([m.jnt_range[m.joint(j).id][1] for j in JOINTS])
        settings = BusSettings(str(emu.link), cal, lo, hi, joint_offsets=tuple(joint_offsets(m)))
        bus = So101Bus(settings)
        bus.open()
        # the held arm settles in its gravity sag: until two reads 50 ms apart agree
        previous = [bus.read_state().position]

        def settled() -> bool:
            time.sleep(0.05)
            now = bus.read_state().position
            still = float(np.max(np.abs(now - previous[0]))) < 1e-3
            previous[0] = now
            return still

        assert until(settled, 5.0)
        before = bus.read_state().position
        emu.close_port()
        for call in (bus.silent_ids, bus.read_state, bus.silent_ids, bus.read_state):
            with pytest.raises(PortUnavailable, match="failed"):
                call()
            assert not bus.bus.port_handler.is_using
        bus.close()
        emu.open_port()
        bus.open()
        np.testing.assert_allclose(bus.read_state().position, before, atol=0.01)
        bus.close()
    finally:
        emu.stop()


# --- the adversary's features -----------------------------------------------------------------
def test_power_up_is_limp_at_rest_and_eprom_is_as_lerobot_left_it():
    """As a real arm: torque off, goal = present position, the arm resting folded on its
    shoulder stop; EPROM calibrated and configured, nothing written yet."""
    emu = FeetechBusEmulator()
    w = emu.witness()
    assert not any(w.torque_enabled) and w.eprom_writes == 0
    assert w.positions[1] == pytest.approx(-1.7453, abs=0.005)  # on the shoulder_lift stop
    for servo in emu.servos:
        assert servo.get("Goal_Position") == servo.get("Present_Position")
        assert servo.get("P_Coefficient") == 16 and servo.get("Return_Delay_Time") == 0
    for _ in range(250):  # 0.5 s more: it stays put (at rest, not falling)
        emu.step()
    np.testing.assert_allclose(emu.witness().positions, w.positions, atol=0.01)
    assert emu.servos[5].get("Max_Torque_Limit") == 500


def test_eprom_writes_persist_only_unlocked_and_are_counted():
    """Lock = 1 write-protects the EPROM: the value takes effect but a power cycle brings back
    the persisted one; with Lock = 0 it persists and counts as an EPROM write."""
    emu = FeetechBusEmulator()
    servo = emu.servos[0]
    address = fp.REGISTERS_BY_NAME["P_Coefficient"].address
    servo.write(fp.REGISTERS_BY_NAME["Lock"].address, bytes([1]))
    servo.write(address, bytes([40]))
    assert servo.get("P_Coefficient") == 40 and servo.eprom_writes == 0
    servo.power_cycle(servo.get("Present_Position"))
    assert servo.get("P_Coefficient") == 16  # not persisted
    servo.write(fp.REGISTERS_BY_NAME["Lock"].address, bytes([0]))
    servo.write(address, bytes([40]))
    servo.power_cycle(servo.get("Present_Position"))
    assert servo.get("P_Coefficient") == 40 and servo.eprom_writes == 1
    ram = fp.REGISTERS_BY_NAME["Goal_Position"].address
    servo.write(ram, fp.to_bytes(100, 2))
    assert servo.eprom_writes == 1  # RAM writes never count


def test_power_loss_drops_the_arm_and_the_servos_come_back_reset():
    emu = FeetechBusEmulator(initial=(0.0,) * 6, power_on_torque=True)  # arm stretched out
    for _ in range(250):
        emu.step()
    held = emu.witness()
    assert all(held.torque_enabled)
    emu.power_off()
    assert emu._targets(fp.BROADCAST_ID) == [] and emu._servo(1) is None  # all silent
    for _ in range(500):
        emu.step()
    fallen = emu.witness()
    assert fallen.gripper_site[2] < held.gripper_site[2] - 0.1  # the arm fell (> 10 cm)
    emu.power_on()
    back = emu.witness()
    assert not any(back.torque_enabled)  # reset: limp, goal = where it lies now
    for servo in emu.servos:
        assert servo.get("Goal_Position") == servo.get("Present_Position")
        assert servo.get("Acceleration") == 0 and servo.get("Lock") == 0


def test_acceleration_register_shapes_the_motion():
    """With Acceleration = a [100 step/s²] the joint's speed rises no faster than a allows;
    with 0 the set-point jumps to the goal (the servo's maximum)."""
    peaks = {}
    for register in (0, 30):
        emu = FeetechBusEmulator(initial=(0.0,) * 6, power_on_torque=True)
        pan = emu.servos[0]
        pan.set("Acceleration", register)
        pan.set("Goal_Position", pan.present_steps(1.0))
        speeds = []
        for _ in range(100):  # 0.2 s
            emu.step()
            speeds.append(abs(emu.witness().velocities[0]))
        peaks[register] = max(speeds)
        if register:
            accel = register * 100 * 2 * np.pi / 4096  # [rad/s²]
            assert max(speeds) <= accel * 0.2 * 1.2  # at most a·t (+20 % servo overshoot)
    assert peaks[0] > 2 * peaks[30]


def test_obstacle_blocks_the_arm():
    from physai_ros.robots.so101.emulator.physics import So101Physics

    emu = FeetechBusEmulator(initial=(0.0,) * 6, power_on_torque=True)
    on_the_way = So101Physics(initial=(0.4, 0, 0, 0, 0, 0)).gripper_site()  # pan 0.4 rad
    emu.place_obstacle(on_the_way, 0.02)
    pan = emu.servos[0]
    pan.set("Goal_Position", pan.present_steps(0.8))  # swing the arm into it
    for _ in range(500):
        emu.step()
    assert emu.witness().positions[0] < 0.4  # stopped well short of 0.8 rad
    emu.place_obstacle(None)
    for _ in range(500):
        emu.step()
    assert emu.witness().positions[0] == pytest.approx(0.8, abs=0.05)


def test_homing_error_is_a_calibration_mismatch_and_margin_widens_the_stops():
    emu = FeetechBusEmulator(homing_error={"elbow_flex": 40}, mechanical_margin=0.2)
    cal = emu.calibration["elbow_flex"]["homing_offset"]
    assert emu.servos[2].get("Homing_Offset") == cal + 40
    _, high = emu.physics.model.jnt_range[emu.physics.model.joint("elbow_flex").id]
    assert high == pytest.approx(1.69 + 0.2)
    with pytest.raises(ValueError, match="unknown joints"):
        FeetechBusEmulator(homing_error={"elbow": 1})


@pytest.mark.parametrize("configured", [True, False], ids=["lerobot-eprom", "factory-eprom"])
def test_arming_never_gives_the_gripper_more_torque_than_its_protection_cap(tmp_path, configured):
    """The STS3215 firmware is not known to clamp the RAM Torque_Limit to the EPROM
    Max_Torque_Limit: with an emulator that does not, arming must itself keep the gripper at or
    under LeRobot's 50 % cap (whether the servo's EPROM holds it yet or only the driver's
    set-up does), and the other servos at full torque."""
    emu = FeetechBusEmulator(
        initial=(0.0,) * 6, power_on_torque=True, configured=configured, clamp_torque_limit=False
    )
    emu.start()
    try:
        cal = tmp_path / "cal.json"
        write_calibration(cal, emu.calibration)
        m = emu.physics.model
        lo = np.array([m.jnt_range[m.joint(j).id][0] for j in JOINTS])
        hi = np.array([m.jnt_range[m.joint(j).id][1] for j in JOINTS])
        settings = BusSettings(
            emu.port,
            cal,
            lo,
            hi,
            joint_offsets=tuple(joint_offsets(m)),
            gripper_setup=dict(LEROBOT_GRIPPER),
        )
        with So101Bus(settings) as bus:
            bus.arm(bus.read_state().position)
            with emu.lock:
                limits = [s.get("Torque_Limit") for s in emu.servos]
                gripper = emu.servos[JOINTS.index("gripper")]
                _, cap, _ = gripper.command(emu.physics.joint(5)[0], 0.0)
        assert limits[:5] == [1000] * 5
        assert limits[5] <= LEROBOT_GRIPPER["Max_Torque_Limit"], limits
        assert cap <= STALL_TORQUE * LEROBOT_GRIPPER["Max_Torque_Limit"] / 1000 + 1e-9
    finally:
        emu.stop()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


def test_dead_zone_inside_it_a_servo_applies_no_torque():
    """With ``dead_zone`` the CW/CCW_Dead_Zone registers hold it and the position loop acts only
    beyond it; without, the registers are ignored (every step of error is acted on)."""
    for dead_zone, inside in ((0, False), (5, True)):
        emu = FeetechBusEmulator(initial=(0.0,) * 6, power_on_torque=True, dead_zone=dead_zone)
        servo = emu.servos[2]
        if dead_zone:
            assert servo.get("CW_Dead_Zone") == servo.get("CCW_Dead_Zone") == dead_zone
        goal = servo.get("Present_Position")
        servo.set("Goal_Position", goal)
        q = servo.angle_of(goal)
        for steps in (-4, 4):  # within the band of 5 either side: no P term
            target, cap, _ = servo.command(q + steps * STEP_RAD, 0.002)
            assert cap > 0.0
            assert (target == pytest.approx(q + steps * STEP_RAD)) is inside
        target, _, _ = servo.command(q + 7 * STEP_RAD, 0.002)  # beyond it: pulled back
        # (with the band, by the error beyond it: 2 steps)
        assert target == pytest.approx(q + (5 if inside else 0) * STEP_RAD)


def test_dead_zone_relaxes_a_squeeze_held_at_the_stall_angle():
    """A jaw stalled on the cube and then told to go where it is: without a dead band the
    stiff position loop keeps the contact compressed; with one, the squeeze relaxes."""
    from physai_ros.robots.so101.emulator.physics import So101Physics
    from physai_ros.robots.so101.jaw_lever import grasp_pose

    down = grasp_pose(So101Physics({"cube_pos": [0.22, 0.0]}), "down")
    kept = {}
    for dead_zone in (0, 5):
        emu = FeetechBusEmulator(initial=[*down, 0.85], power_on_torque=True, dead_zone=dead_zone)
        jaw = emu.servos[5]

        def run(seconds: float, emu=emu) -> None:
            for _ in range(round(seconds / emu.physics.dt)):
                emu.step()

        jaw.set("Torque_Limit", 225)  # 0.66 N·m
        jaw.set("Goal_Position", jaw.present_steps(-0.17453))  # closed: stalls on the cube
        run(1.0)
        before = float(np.mean(emu.witness().jaw_normal))
        jaw.set("Goal_Position", jaw.get("Present_Position"))
        run(1.0)
        kept[dead_zone] = float(np.mean(emu.witness().jaw_normal)) / before
        assert emu.witness().cube_in_jaws
    assert kept[0] > 0.9, kept
    assert kept[5] < 0.75, kept


def test_stall_torque_follows_the_supply_and_the_load_models_read_it():
    """A DC motor's stall torque is proportional to its supply: the torque cap and the
    ``ideal`` load both scale with it. ``duty`` reads the PWM duty: the same as ``ideal`` at
    rest, the back-EMF added while moving, the supply in the divisor; ``load_sign`` -1
    reverses the register."""
    from physai_ros.errors import InvalidInput
    from physai_ros.robots.so101.emulator.servo import NO_LOAD_SPEED, EmulatedServo

    def servo(supply=12.0, **kw):
        s = EmulatedServo(3, 2048, supply, **kw)
        s.set("Torque_Enable", 1)
        s.set("Torque_Limit", 1000)
        s.set("Max_Torque_Limit", 1000)
        return s

    assert servo().command(0.0, 0.002)[1] == pytest.approx(2.94)
    assert servo(10.0).command(0.0, 0.002)[1] == pytest.approx(2.94 * 10.0 / 12.0)
    weak = servo(7.4, rated_voltage=7.4, stall_torque=1.91)
    assert weak.command(0.0, 0.002)[1] == pytest.approx(1.91)
    assert servo().load_counts(1.47, 0.0) == 500
    assert servo(10.0).load_counts(1.47, 0.0) == 600  # 1.47 / (2.94 × 10/12)
    duty = servo(10.0, load_model="duty")
    assert duty.load_counts(1.47, 0.0) == 600  # at rest: as ideal
    moving = duty.load_counts(0.735, 0.5 * NO_LOAD_SPEED)  # 3 V drive + 6 V of back-EMF
    assert moving == 900
    assert duty.load_counts(0.0, -0.5 * NO_LOAD_SPEED) == -600  # no torque, still reads
    assert servo(load_sign=-1).load_counts(1.47, 0.0) == -500
    with pytest.raises(InvalidInput):
        servo(load_sign=0)
    with pytest.raises(InvalidInput):
        servo(load_model="pwm")
    emu = FeetechBusEmulator(initial=(0.0,) * 6, power_on_torque=True)
    emu.set_supply(10.0)
    assert {s.get("Present_Voltage") for s in emu.servos} == {100}
    assert len(emu.witness().torques) == 6
