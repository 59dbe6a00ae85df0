"""The pure parts of dataset recording: the draw of episodes, LeRobot's units, the frame clock.

The end-to-end recording (``physai record``, LeRobot loading and training) is test_record.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from physai_ros.core.pick.machine import load_pick_config
from physai_ros.datasets.features import STATE_NAMES, dataset_features, from_lerobot, to_lerobot
from physai_ros.datasets.randomise import Randomisation, draw, parse_range
from physai_ros.datasets.scripted import RecordingWorld, frame_timestep, scene_for
from physai_ros.errors import InvalidInput
from physai_ros.sim.lockstep_pick import run_lockstep_pick
from physai_ros.sim.rigid_cube import RigidCubeWorld

JAW = (-0.174533, 1.7453292)  # [rad] the SO-101 jaw's range in the model


def test_an_episode_is_the_same_whatever_ran_before_it():
    """Episode i of a seed is drawn from its own generator: the same alone, after others, on
    another worker; another seed or index gives another scene."""
    r = Randomisation(yaw=(-10, 10), mass=(0.02, 0.05), colours=True, camera_jitter=0.01)
    in_order = [draw(r, 7, i) for i in range(6)]
    assert [draw(r, 7, i) for i in reversed(range(6))][::-1] == in_order
    assert draw(r, 7, 3) == in_order[3]
    assert draw(r, 8, 3) != in_order[3]
    assert len({e.cube_xy for e in in_order}) == 6
    for e in in_order:
        assert r.x[0] <= e.cube_xy[0] <= r.x[1] and r.y[0] <= e.cube_xy[1] <= r.y[1]
        assert -10 <= e.yaw_deg <= 10 and 0.02 <= e.mass <= 0.05
        assert all(abs(v) <= 0.01 for v in e.camera_offset)


def test_asking_for_colours_changes_nothing_else():
    plain, coloured = Randomisation(), Randomisation(colours=True)
    a, b = draw(plain, 0, 4), draw(coloured, 0, 4)
    assert a.rgba is None and b.rgba is not None
    assert a.cube_xy == b.cube_xy and a.light == b.light


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"x": (0.24, 0.20)}, "lo 0.24 above hi 0.2"),
        ({"mass": (0.0, 0.1)}, "mass must be positive"),
        ({"mu": (math.nan, 1.0)}, "not a finite range"),
        ({"camera_jitter": -0.01}, "cannot be negative"),
    ],
)
def test_a_bad_randomisation_is_refused(kwargs, words):
    with pytest.raises(InvalidInput, match=words):
        Randomisation(**kwargs)


def test_ranges_parse_as_users_write_them():
    assert parse_range("0.2,0.24") == (0.2, 0.24)
    assert parse_range("0.03") == (0.03, 0.03)
    for bad in ("a,b", "1,2,3", ""):
        with pytest.raises(InvalidInput):
            parse_range(bad)


@given(
    st.lists(st.floats(-3.0, 3.0), min_size=5, max_size=5),
    st.floats(JAW[0], JAW[1]),
)
def test_lerobot_units_round_trip(arm, jaw):
    values = to_lerobot(arm, jaw, JAW)
    assert values.dtype == np.float32 and values.shape == (len(STATE_NAMES),)
    assert 0.0 <= values[-1] <= 100.0
    back_arm, back_jaw = from_lerobot(values, JAW)
    np.testing.assert_allclose(back_arm, arm, atol=1e-6)  # float32 of degrees
    assert back_jaw == pytest.approx(jaw, abs=1e-6)


def test_lerobot_names_and_degrees():
    assert STATE_NAMES == (
        "shoulder_pan.pos", "shoulder_lift.pos", "elbow_flex.pos", "wrist_flex.pos",
        "wrist_roll.pos", "gripper.pos",
    )  # fmt: skip
    values = to_lerobot([math.pi / 2, 0, 0, 0, -math.pi], JAW[1], JAW)
    assert values[0] == pytest.approx(90.0) and values[4] == pytest.approx(-180.0)
    assert values[5] == pytest.approx(100.0)
    features = dataset_features(["front_cam"], 48, 64)
    assert features["observation.images.front_cam"] == {
        "dtype": "video", "shape": (48, 64, 3), "names": ["height", "width", "channels"],
    }  # fmt: skip
    assert features["action"]["names"] == list(STATE_NAMES)
    assert dataset_features([], 48, 64, use_videos=False).keys() == {
        "observation.state", "action", "next.success",
    }  # fmt: skip


@pytest.mark.parametrize("fps", [10, 15, 20, 25, 30, 50, 60])
def test_a_frame_is_a_whole_number_of_steps_no_longer_than_the_scene_s(fps):
    step, steps = frame_timestep(0.002, fps)
    assert step <= 0.002 + 1e-15 and steps * step == pytest.approx(1.0 / fps, rel=1e-12)
    assert frame_timestep(0.002, fps)[0] > 0.002 * steps / (steps + 1)  # the largest such step
    with pytest.raises(ValueError):
        frame_timestep(0.002, 0)


def test_each_frame_holds_the_command_of_its_own_instant():
    """A frame's action is the servo target the script commanded at the frame's instant: the
    one the step after the frame acted on, not the one a step later. Checked against the
    targets the rigid-cube world logs at every step (``data.ctrl``), run separately."""
    cfg = load_pick_config()
    setup = draw(Randomisation(), 0, 2)
    model, steps = scene_for(setup, 30)
    recorder = RecordingWorld(model, setup, cfg, steps, None)
    run_lockstep_pick(recorder, cfg, recorder.home)
    ctrl: list[np.ndarray] = []
    logged = RigidCubeWorld(model, (*setup.cube_xy, setup.size / 2), cfg, ctrl)
    run_lockstep_pick(logged, cfg, logged.home)
    arm, jaw = logged.arm_act, logged.jaw_act
    expected = [to_lerobot(c[arm], c[jaw], recorder.jaw_range) for c in ctrl[::steps]]
    actions = [f.action for f in recorder.frames]
    assert len(actions) == len(expected) == math.ceil(len(ctrl) / steps)
    np.testing.assert_array_equal(np.array(actions), np.array(expected))
    later = [to_lerobot(c[arm], c[jaw], recorder.jaw_range) for c in ctrl[1::steps]]
    differs = [not np.array_equal(a, b) for a, b in zip(actions, later, strict=False)]
    assert sum(differs) > len(actions) // 2, "the test cannot tell a later sample apart"
    # the state is the joints at the frame's instant: the first is the arm at home
    np.testing.assert_allclose(recorder.frames[0].state[:5], np.degrees(recorder.home), atol=1e-4)
