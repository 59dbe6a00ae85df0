"""The frame clock of datasets recorded over ROS (``datasets.timeline``, ``datasets.from_ros``):
each frame takes every stream's latest sample at or before its time, never a later one; a gap
beyond the limit drops the episode with the reason. The live graph's test is
test_dataset_recorder.py."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from physai_ros.datasets.features import ARM_MOTORS, GRIPPER, from_lerobot
from physai_ros.datasets.from_ros import (
    ACTION,
    ARM_REFERENCE,
    GRIPPER_REFERENCE,
    JOINT_STATES,
    RosEpisode,
    Sources,
    Timeline,
    camera_name,
    image_array,
    jaw_range,
    make_frames,
    pick_episode,
)
from physai_ros.datasets.timeline import NS, Dropped, Samples, frame_times, resample
from physai_ros.errors import InvalidInput

MS = 1_000_000


def stamp(ns: int) -> SimpleNamespace:
    return SimpleNamespace(sec=ns // NS, nanosec=ns % NS)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 2 * NS), min_size=1, max_size=40),
    st.integers(0, NS),
    st.integers(1, 60),
)
def test_a_frame_takes_the_latest_sample_at_or_before_it_never_a_later_one(stamps, start, fps):
    samples = Samples("s")
    for k, t in enumerate(stamps):  # any arrival order
        samples.add(t, k)
    end = start + NS
    if min(stamps) > start:
        with pytest.raises(Dropped, match="no sample at or before the first frame"):
            resample({"s": samples}, start, end, fps, max_gap=10 * NS)
        return
    at = resample({"s": samples}, start, end, fps, max_gap=10 * NS)
    ordered = sorted(stamps)
    for t, chosen in zip(at.times, at.stamps["s"], strict=True):
        assert chosen <= t
        assert chosen == max(s for s in ordered if s <= t)  # nothing later is ≤ t


def test_the_frame_clock_starts_on_the_first_stamp_and_keeps_whole_nanoseconds():
    times = frame_times(5 * NS, 6 * NS, 30)
    assert times[0] == 5 * NS and len(times) == 31 and times[-1] == 6 * NS
    assert np.all(np.diff(times) > 0) and np.all(np.abs(np.diff(times) - NS / 30) < 1)
    with pytest.raises(Dropped, match="ends before it starts"):
        frame_times(2, 1, 30)


def test_a_silent_stream_drops_the_episode_saying_which_and_how_long():
    quick, slow = Samples("joint_states"), Samples("front_cam")
    for k in range(100):
        quick.add(k * 10 * MS, k)
    for t in (0, 33 * MS, 400 * MS):  # a 367 ms hole
        slow.add(t, t)
    with pytest.raises(Dropped, match=r"front_cam: \d+ ms without a sample .* \(limit 100 ms\)"):
        resample({"joint_states": quick, "front_cam": slow}, 0, 900 * MS, 30, 100 * MS)


def test_forgetting_keeps_the_sample_a_later_frame_still_takes():
    samples = Samples("s")
    for t in (0, 10, 20, 30):
        samples.add(t, t)
    samples.forget_before(25)
    assert samples.stamps == [20, 30]  # 20 is the latest at or before 25


def image(encoding: str, pixels: np.ndarray, pad: int = 0) -> SimpleNamespace:
    h, w, _ = pixels.shape
    rows = np.zeros((h, w * 3 + pad), np.uint8)
    rows[:, : w * 3] = pixels.reshape(h, w * 3)
    return SimpleNamespace(
        encoding=encoding, height=h, width=w, step=w * 3 + pad, data=rows.tobytes()
    )


def test_images_decode_rgb_and_bgr_with_row_padding_and_refuse_other_encodings():
    pixels = np.random.default_rng(0).integers(0, 255, (4, 5, 3), dtype=np.uint8)
    assert np.array_equal(image_array(image("rgb8", pixels, pad=3)), pixels)
    assert np.array_equal(image_array(image("bgr8", pixels[..., ::-1])), pixels)
    with pytest.raises(Dropped, match="image encoding 'mono8'"):
        image_array(image("mono8", pixels))


def test_cameras_are_named_by_their_topics_and_never_twice():
    assert camera_name("/front_cam/image_raw") == "front_cam"
    assert camera_name("left/wrist/image") == "left_wrist"
    with pytest.raises(InvalidInput, match="twice"):
        _ = Sources(images=("/a/image_raw", "/a/image")).cameras


def outcome(code: int, end: int, duration: float) -> SimpleNamespace:
    constants = dict(HELD=1, PLACED=2, DROPPED=3, MISSED=4, ABORTED=5, CANCELED=6, REJECTED=7)
    return SimpleNamespace(
        outcome=code, stamp=stamp(end), duration=duration, reason="why", **constants
    )


def test_a_pick_outcome_is_an_episode_from_its_acceptance_to_its_end():
    held = pick_episode(outcome(1, 12 * NS, 4.5))
    assert (held.start, held.end, held.success, held.outcome) == (
        int(7.5 * NS),
        12 * NS,
        True,
        "held",
    )
    assert pick_episode(outcome(2, 12 * NS, 1.0)).success
    dropped = pick_episode(outcome(3, 12 * NS, 1.0))
    assert not dropped.success and dropped.outcome == "dropped"
    assert pick_episode(outcome(7, 12 * NS, 0.0)) is None  # refused: nothing moved
    assert pick_episode(outcome(1, 12 * NS, float("nan"))) is None


def joint_msg(t: int, names, positions, kind: str) -> SimpleNamespace:
    header = SimpleNamespace(stamp=stamp(t))
    if kind == "state":
        return SimpleNamespace(header=header, name=list(names), position=list(positions))
    return SimpleNamespace(
        header=header,
        joint_names=list(names),
        reference=SimpleNamespace(positions=list(positions)),
    )


def test_each_frames_action_is_the_reference_at_or_before_it_in_lerobot_units():
    """A reference that changes every 20 ms: each 30 fps frame's action is the one published
    last at or before the frame, converted to degrees and percent, and back within float32."""
    timeline = Timeline(Sources())
    jaw = jaw_range()
    arm = list(ARM_MOTORS)
    for k in range(60):
        t = k * 20 * MS
        q = 0.01 * k + np.arange(6) * 0.1
        timeline.add(JOINT_STATES, joint_msg(t, [*arm, GRIPPER], q, "state"))
        timeline.add(ARM_REFERENCE, joint_msg(t, arm, q[:5] + 0.5, "reference"))
        timeline.add(GRIPPER_REFERENCE, joint_msg(t, [GRIPPER], [q[5] + 0.5], "reference"))
    episode = RosEpisode(start=100 * MS, end=1000 * MS, success=True, outcome="held")
    make_frames(timeline, episode, 30, 100 * MS, jaw)
    assert len(episode.frames) == 28
    for k, frame in enumerate(episode.frames):
        t = 100 * MS + k * NS // 30
        source = episode.sources[ARM_REFERENCE][k]
        assert source == (t // (20 * MS)) * 20 * MS <= t
        q = 0.01 * (source // (20 * MS)) + np.arange(6) * 0.1
        arm_rad, jaw_rad = from_lerobot(frame.action, jaw)
        assert np.allclose(arm_rad, q[:5] + 0.5, atol=1e-6)
        assert abs(jaw_rad - (q[5] + 0.5)) < 1e-6


def test_with_an_action_topic_each_frames_action_is_that_pose_not_the_references():
    """Teleoperation: the action is the leader's pose (a JointState topic), the latest at or
    before each frame; the controllers' references are not subscribed at all."""
    sources = Sources(action="/leader/joint_states")
    assert set(sources.streams()) == {JOINT_STATES, ACTION}
    timeline = Timeline(sources)
    jaw, names = jaw_range(), [*ARM_MOTORS, GRIPPER]
    for k in range(40):
        t = k * 33 * MS
        timeline.add(JOINT_STATES, joint_msg(t, names, np.zeros(6), "state"))
        leader = 0.02 * k + np.arange(6) * 0.1
        timeline.add(ACTION, joint_msg(t + 5 * MS, names[::-1], leader[::-1], "state"))
    episode = RosEpisode(start=100 * MS, end=1000 * MS, success=True, outcome="success")
    make_frames(timeline, episode, 30, 100 * MS, jaw)
    for k, frame in enumerate(episode.frames):
        source = episode.sources[ACTION][k]
        assert source <= 100 * MS + k * NS // 30
        leader = 0.02 * ((source - 5 * MS) // (33 * MS)) + np.arange(6) * 0.1
        arm_rad, jaw_rad = from_lerobot(frame.action, jaw)
        assert np.allclose([*arm_rad, jaw_rad], leader, atol=1e-6)


def test_a_reference_without_a_joint_drops_the_episode():
    timeline = Timeline(Sources())
    for t in (0, 50 * MS):
        timeline.add(JOINT_STATES, joint_msg(t, [*ARM_MOTORS, GRIPPER], [0.0] * 6, "state"))
        timeline.add(ARM_REFERENCE, joint_msg(t, ARM_MOTORS[:4], [0.0] * 4, "reference"))
        timeline.add(GRIPPER_REFERENCE, joint_msg(t, [GRIPPER], [0.0], "reference"))
    episode = RosEpisode(start=0, end=50 * MS, success=True, outcome="held")
    with pytest.raises(Dropped, match=r"arm_reference at 0.000 s has no \['wrist_roll'\]"):
        make_frames(timeline, episode, 30, 100 * MS, jaw_range())


def test_an_episode_counts_only_once_every_stream_was_heard():
    timeline = Timeline(Sources())
    state = joint_msg(100, [*ARM_MOTORS, GRIPPER], [0.0] * 6, "state")
    timeline.add(JOINT_STATES, state)
    timeline.add(ARM_REFERENCE, joint_msg(200, ARM_MOTORS, [0.0] * 5, "reference"))
    assert not timeline.heard_all_by(1000)  # the gripper's reference not yet
    timeline.add(GRIPPER_REFERENCE, joint_msg(300, [GRIPPER], [0.0], "reference"))
    assert timeline.heard_all_by(300) and not timeline.heard_all_by(299)
    timeline.forget_before(10_000)  # forgetting samples does not forget when they were heard
    assert timeline.heard_all_by(300) and timeline.snapshot().heard_all_by(300)
