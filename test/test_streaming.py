"""The streaming controller's core: every mode stays inside the limits whatever a stream does,
a stopped stream brakes to a hold in a stated time, and a stream never makes the arm jump."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from physai_ros.core.controllers.streaming import MODES, StreamFollower, StreamSettings
from physai_ros.core.motion.limits import RTOL, load_limits
from physai_ros.errors import InvalidInput

ARM = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll")
LIMITS = load_limits("so101").select(ARM)
DT = 0.002  # [s] the sim bridge's control period
HOME = np.array([0.0, -0.5, 0.5, 0.3, 0.0])


def follower(mode: str, rate: float = 30.0) -> StreamFollower:
    stream = StreamFollower(LIMITS, StreamSettings(mode=mode, rate=rate))
    stream.start(0.0, HOME)
    return stream


def run(stream: StreamFollower, targets: dict[int, np.ndarray], cycles: int) -> np.ndarray:
    """Commanded positions of ``cycles`` control cycles, ``targets`` arriving by cycle."""
    out = []
    for k in range(1, cycles + 1):
        if k in targets:
            with contextlib.suppress(InvalidInput):  # refused: the stream goes on
                stream.target(k * DT, targets[k])
        out.append(stream.update(k * DT).position)
    return np.array(out)


def assert_inside_limits(positions: np.ndarray, start: np.ndarray) -> None:
    """The commands as a servo receives them: range, and velocity and acceleration as finite
    differences at the control period (the rule lesson 13 judges a stream by)."""
    p = np.vstack([start, start, positions])  # at rest before the first cycle
    assert np.all(p >= LIMITS.position_min - 1e-12) and np.all(p <= LIMITS.position_max + 1e-12)
    v = np.diff(p, axis=0) / DT
    a = np.diff(v, axis=0) / DT
    assert np.abs(v).max(initial=0) <= LIMITS.velocity.max() * (1 + RTOL) + 1e-9
    assert np.all(np.abs(v) <= LIMITS.velocity * (1 + 1e-6) + 1e-9)
    assert np.all(np.abs(a) <= LIMITS.acceleration * (1 + 1e-6) + 1e-6)


@st.composite
def streams(draw) -> tuple[float, dict[int, np.ndarray], int]:
    """A target stream at 10–60 Hz with jitter, gaps and jumps (anywhere in the range, also at
    its ends), starting near the held pose."""
    rate = draw(st.floats(10.0, 60.0))
    period = round(1.0 / rate / DT)
    n = draw(st.integers(2, 30))
    targets, k, x = {}, 1, HOME.copy()
    for _ in range(n):
        kind = draw(st.sampled_from(["step", "step", "jump", "edge", "gap"]))
        if kind == "step":
            x = np.clip(x + draw(st.floats(-0.1, 0.1)), LIMITS.position_min, LIMITS.position_max)
        elif kind == "jump":
            u = np.array(draw(st.lists(st.floats(0, 1), min_size=5, max_size=5)))
            x = LIMITS.position_min + u * (LIMITS.position_max - LIMITS.position_min)
        elif kind == "edge":
            x = np.where(
                np.array(draw(st.lists(st.booleans(), min_size=5, max_size=5))),
                LIMITS.position_max, LIMITS.position_min,
            )  # fmt: skip
        else:
            k += period * draw(st.integers(1, 10))
        targets[k] = x.copy()
        k += max(1, period + draw(st.integers(-period // 3, period // 3)))
    return rate, targets, k + 400


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=40, deadline=None)
@given(stream=streams())
def test_every_mode_stays_inside_the_limits_whatever_the_stream(mode, stream):
    rate, targets, cycles = stream
    assert_inside_limits(run(follower(mode, rate), targets, cycles), HOME)


@pytest.mark.parametrize("mode", MODES)
def test_a_smooth_stream_is_followed_to_its_end(mode):
    """A 30 Hz sine on every joint: the command ends where the stream ended (the limited mode
    carries the stream's motion on for one frame and then brakes under its jerk limit: within
    two frames' motion past it), and in between it stays within two and a half frames' motion
    of the stream."""
    stream = follower(mode)
    period = round(1 / 30 / DT)
    times = np.arange(1, 60) * period
    targets = {int(k): HOME + 0.3 * np.sin(2 * np.pi * 0.5 * k * DT) for k in times}
    positions = run(stream, targets, int(times[-1]) + 300)
    assert_inside_limits(positions, HOME)
    speed = 0.3 * 2 * np.pi * 0.5  # [rad/s] the sine's peak
    past = 2 * speed / 30 if mode == "limited" else 1e-9
    assert np.abs(positions[-1] - targets[int(times[-1])]).max() <= past
    lag = np.abs(positions[int(times[30]) - 1] - targets[int(times[30])]).max()
    assert lag <= 2.5 * speed / 30


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("speed", [0.5, 1.5])
def test_a_stopped_stream_brakes_to_a_hold_within_100_ms(mode, speed):
    """A stream moving every joint at ``speed`` [rad/s] stops: the arm holds within 100 ms of
    the expected next target, says why, and does not move again."""
    stream = follower(mode)
    period = round(1 / 30 / DT)
    last = 30 * period
    targets = {k: HOME + speed * k * DT for k in range(period, last + 1, period)}
    positions = run(stream, targets, last + 1000)
    assert_inside_limits(positions, HOME)
    expected_next = last + period
    still = np.flatnonzero(np.any(np.diff(positions, axis=0) != 0, axis=1)).max() + 2
    assert (still - expected_next) * DT <= 0.100, f"held {(still - expected_next) * DT:.3f} s late"
    assert stream.state == "held"
    assert "stream stopped" in stream.reason and "holding" in stream.reason
    assert np.all(positions[still:] == positions[still])


@pytest.mark.parametrize("mode", MODES)
def test_a_stream_far_from_the_arm_is_refused_and_changes_nothing(mode):
    stream = follower(mode)
    before = stream.update(DT)
    with pytest.raises(InvalidInput, match="from the held pose"):
        stream.target(2 * DT, HOME + np.array([0, 0, 0.5, 0, 0]))
    assert stream.state == "held"
    np.testing.assert_array_equal(stream.update(3 * DT).position, before.position)
    stream.target(4 * DT, HOME + 0.1)  # near: followed
    assert stream.state == "following"


def test_a_resumed_stream_must_start_at_the_held_pose():
    stream = follower("limited")
    period = round(1 / 30 / DT)
    targets = {k: HOME + 0.01 * k * DT for k in range(period, 10 * period + 1, period)}
    run(stream, targets, 10 * period + 200)
    assert stream.state == "held"
    held = stream.update(10 * period * DT + 1.0).position
    with pytest.raises(InvalidInput, match="from the held pose"):
        stream.target(10 * period * DT + 1.01, held + 0.3)
    stream.target(10 * period * DT + 1.02, held + 0.05)
    assert stream.state == "following"


@pytest.mark.parametrize(
    "target, message",
    [
        ([0.0, np.nan, 0.0, 0.0, 0.0], "not finite"),
        ([0.0, np.inf, 0.0, 0.0, 0.0], "not finite"),
        ([0.0, 0.0, 0.0, 0.0], "4 values for 5 joints"),
        ([0.0, -0.5, 0.5, 0.3, 3.0], r"outside the position range on \['wrist_roll'\]"),
    ],
)
def test_bad_targets_are_refused_and_change_nothing(target, message):
    stream = follower("limited")
    stream.target(DT, HOME + 0.05)
    first = stream.update(2 * DT)
    with pytest.raises(InvalidInput, match=message):
        stream.target(3 * DT, target)
    reference = follower("limited")
    reference.target(DT, HOME + 0.05)
    reference.update(2 * DT)
    assert stream.state == "following"
    np.testing.assert_array_equal(stream.update(4 * DT).position, reference.update(4 * DT).position)
    assert first.position.shape == (5,)


def test_an_inactive_controller_takes_no_target():
    stream = StreamFollower(LIMITS, StreamSettings())
    with pytest.raises(InvalidInput, match="not active"):
        stream.target(0.0, HOME)
    with pytest.raises(InvalidInput, match="not active"):
        stream.update(0.0)


@pytest.mark.parametrize(
    "options",
    [
        {"mode": "spline"},
        {"rate": 5.0},
        {"rate": float("nan")},
        {"grace": -0.01},
        {"resume_tolerance": 0.0},
        {"jerk_ramp": float("inf")},
    ],
)
def test_bad_settings_are_refused(options):
    with pytest.raises(InvalidInput):
        StreamSettings(**options)


def test_limited_mode_is_jerk_limited_and_the_staircase_is_not():
    """The modes' difference the lesson asks about, as a law: on the same 30 Hz stream the
    limited mode's jerk stays within a_max / jerk_ramp, the staircase's does not."""
    period = round(1 / 30 / DT)
    times = np.arange(1, 30) * period
    targets = {int(k): HOME + 0.3 * np.sin(2 * np.pi * 0.5 * k * DT) for k in times}
    jerks = {}
    for mode in ("staircase", "limited"):
        p = np.vstack([HOME, HOME, HOME, run(follower(mode), targets, int(times[-1]) + 200)])
        jerks[mode] = np.abs(np.diff(p, n=3, axis=0) / DT**3).max()
    bound = LIMITS.acceleration.max() / StreamSettings().jerk_ramp
    assert jerks["limited"] <= bound * 1.01
    assert jerks["staircase"] > 10 * bound


# --- the stream inside the arm's controller: one arm, one owner at a time --------------------


def streaming_arm(stop_mode: str = "decelerate"):
    """The SO-101 arm's trajectory controller at rest at HOME, with its limits."""
    from support.jtc import make_arm

    return make_arm(q=HOME, stop_mode=stop_mode)


def test_the_arm_follows_a_stream_and_refuses_trajectories_meanwhile():
    from support.jtc import msg, pt, rejection

    arm = streaming_arm()
    for k in range(1, 30):
        if k % 3 == 1:  # 33 Hz, the names in any order
            arm.stream(k * 0.01, list(reversed(ARM)), list(reversed(HOME + 0.05)))
        arm.update(k * 0.01, arm.ref[0], arm.ref[1])
    np.testing.assert_allclose(arm.ref[0], HOME + 0.05, atol=1e-6)
    assert arm.streaming
    assert "target stream" in rejection(arm, msg([pt(1.0, HOME)], names=ARM), 0.3)
    for k in range(30, 60):  # the stream stops: the arm holds, says why, takes goals again
        arm.update(k * 0.01, arm.ref[0], arm.ref[1])
    assert not arm.streaming and arm.stream_state[0] == "held"
    assert any("stream stopped" in w for w in arm.warnings)
    arm.prepare(msg([pt(1.0, HOME)], names=ARM), 0.6)


def test_a_stream_is_refused_while_a_trajectory_runs():
    from support.jtc import msg, pt, send

    arm = streaming_arm()
    send(arm, msg([pt(1.0, HOME + 0.2)], names=ARM), 0.0, "g")
    with pytest.raises(InvalidInput, match="following a trajectory"):
        arm.stream(0.1, ARM, HOME)


@pytest.mark.parametrize(
    "names, message",
    [(ARM[:4], "must name every joint once"), ((*ARM[:4], "gripper"), "must name every joint")],
)
def test_a_stream_target_must_name_every_joint(names, message):
    arm = streaming_arm()
    with pytest.raises(InvalidInput, match=message):
        arm.stream(0.01, names, HOME[: len(names)])
    assert not arm.streaming


def test_a_stop_while_streaming_ramps_the_stream_to_rest_within_the_limits():
    """A stop (a fault, a stop request) while a stream moves the arm: the reference ramps to
    rest from the stream's motion (stop_mode decelerate), and the stream is over: its next
    target starts anew from the held pose."""
    arm = streaming_arm()
    dt = 0.002
    for k in range(1, 200):
        if k % 17 == 1:
            arm.stream(k * dt, ARM, HOME + 1.0 * k * dt)
        arm.update(k * dt, arm.ref[0], arm.ref[1])
    assert np.all(arm.ref[1] > 0.5)
    arm.stop("stop requested")
    assert arm.stopping and not arm.streaming
    refs = []
    for k in range(200, 400):
        arm.update(k * dt, arm.ref[0], arm.ref[1])
        refs.append(arm.ref[0].copy())
    refs = np.array(refs)
    assert not arm.stopping and not np.any(arm.ref[1])
    a = np.diff(refs, n=2, axis=0) / dt**2
    assert np.abs(a).max() <= LIMITS.acceleration.max() * 1.01
    with pytest.raises(InvalidInput, match="from the held pose"):
        arm.stream(0.9, ARM, HOME)  # where the stream was going, not where the arm is


def test_a_deactivated_arm_takes_no_stream_and_commands_nothing_after():
    arm = streaming_arm(stop_mode="hold_measured")
    arm.stream(0.01, ARM, HOME + 0.05)
    arm.update(0.02, HOME, np.zeros(5))
    arm.deactivate("lifecycle")
    held = arm.ref[0].copy()
    arm.update(0.03, HOME, np.zeros(5))
    np.testing.assert_array_equal(arm.ref[0], held)
    with pytest.raises(InvalidInput, match="not running"):
        arm.stream(0.04, ARM, HOME)


def test_two_targets_in_one_cycle_the_newer_counts_and_a_clock_going_back_is_refused():
    """A loop clock that has not moved between two arrivals (the sim's steps in a burst): the
    newer target replaces the older; an arrival before the last one is a clock error."""
    stream = follower("linear")
    stream.target(0.01, HOME + 0.01)
    stream.target(0.01, HOME + 0.02)
    assert stream.state == "following"
    for k in range(6, 200):
        stream.update(k * DT)
        if k % 16 == 0:
            stream.target(k * DT, HOME + 0.02)
    np.testing.assert_allclose(stream.update(0.4).position, HOME + 0.02, atol=1e-9)
    with pytest.raises(InvalidInput, match="clock went back"):
        stream.target(0.1, HOME + 0.02)
