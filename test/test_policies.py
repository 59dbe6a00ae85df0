"""The policies the runner drives, without ROS: a trained LeRobot ACT loaded from the folder
``lerobot-train`` saved and stepped chunk by chunk, a dataset episode replayed action by
action, and the way from a policy's action to the streamed targets (blend-in, ranges).

The runner over ROS is test_policy_runner.py.
"""

from __future__ import annotations

import json
import math
import re
import subprocess

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.lerobot_runs import PHYSAI, REPO, record_and_train, train

from physai_ros.core.controllers.streaming import MODES
from physai_ros.core.motion.limits import load_limits
from physai_ros.datasets.features import MOTOR_NAMES, to_lerobot
from physai_ros.datasets.from_ros import jaw_range
from physai_ros.errors import InvalidInput
from physai_ros.policies.base import RunStatistics
from physai_ros.policies.targets import TargetMaker, min_jerk

LIMITS = load_limits("so101")
ORDER = [LIMITS.joint_names.index(m) for m in MOTOR_NAMES]
LOWER, UPPER = LIMITS.position_min[ORDER], LIMITS.position_max[ORDER]
HOME = np.array([0.0, -1.5, 1.4, 1.2, 0.0, 0.2])  # [rad] five arm joints and the jaw


def maker(blend_in: float = 1.0) -> TargetMaker:
    made = TargetMaker(LOWER, UPPER, jaw_range(), blend_in)
    made.begin(HOME)
    return made


def lerobot(q: np.ndarray) -> np.ndarray:
    return to_lerobot(q[:5], q[5], jaw_range()).astype(float)


def camera_observation() -> dict[str, np.ndarray]:
    """The arm at HOME and a grey 64×48 front camera image, as the runner builds them."""
    return {
        "observation.state": lerobot(HOME).astype(np.float32),
        "observation.images.front_cam": np.full((48, 64, 3), 128, np.uint8),
    }


# --- from actions to targets -----------------------------------------------------------------
def test_min_jerk_runs_from_zero_to_one_with_zero_speed_at_both_ends():
    s = np.linspace(0, 1, 1001)
    blend = np.array([min_jerk(v) for v in s])
    assert blend[0] == 0 and blend[-1] == 1 and np.all(np.diff(blend) >= 0)
    slope = np.diff(blend) / np.diff(s)
    assert slope[0] < 1e-3 and slope[-1] < 1e-3 and abs(slope.max() - 1.875) < 1e-2
    assert min_jerk(-1.0) == 0.0 and min_jerk(2.0) == 1.0


def test_the_first_target_is_where_the_arm_is_and_the_policys_after_the_blend():
    goal = HOME + np.array([0.4, 0.3, -0.2, 0.1, 0.5, 0.6])
    made = maker(blend_in=1.0)
    assert np.allclose(made.target(lerobot(goal), 0.0), HOME)
    halfway = made.target(lerobot(goal), 0.5)
    assert np.allclose(halfway, (HOME + goal) / 2, atol=1e-6)  # min-jerk's midpoint is half
    assert np.allclose(made.target(lerobot(goal), 1.0), goal, atol=1e-6)
    assert np.allclose(made.target(lerobot(goal), 7.0), goal, atol=1e-6)
    assert made.clipped == 0
    at_once = maker(blend_in=0.0)
    assert np.allclose(at_once.target(lerobot(goal), 0.0), goal, atol=1e-6)


def test_targets_outside_a_range_are_clipped_and_counted():
    made = maker(blend_in=0.0)
    beyond = lerobot(HOME)
    beyond[1] = math.degrees(UPPER[1]) + 30.0  # shoulder_lift past its range
    beyond[5] = -20.0  # the jaw below 0 %
    target = made.target(beyond, 0.0)
    assert target[1] == UPPER[1] and target[5] == LOWER[5]
    assert made.clipped == 1


@pytest.mark.parametrize(
    "action",
    [[0, 0, 0, 0, 0, math.nan], [0, 0, math.inf, 0, 0, 0], [0, 0, 0, 0, 0]],
)
def test_bad_actions_are_refused(action):
    with pytest.raises(InvalidInput, match="six finite numbers"):
        maker().target(action, 0.0)


def test_a_run_needs_the_measured_pose_first_and_bad_settings_are_refused():
    with pytest.raises(InvalidInput, match="measured pose first"):
        TargetMaker(LOWER, UPPER, jaw_range(), 1.0).target(lerobot(HOME), 0.0)
    with pytest.raises(InvalidInput, match="blend_in"):
        TargetMaker(LOWER, UPPER, jaw_range(), -1.0)
    with pytest.raises(InvalidInput, match="six finite angles"):
        TargetMaker(LOWER, UPPER, jaw_range(), 1.0).begin([0.0, math.nan, 0, 0, 0, 0])


@settings(max_examples=300, deadline=None)
@given(
    start=st.lists(st.floats(0.0, 1.0), min_size=6, max_size=6),
    action=st.lists(st.floats(-1e4, 1e4), min_size=6, max_size=6),
    elapsed=st.floats(0.0, 5.0),
    blend_in=st.floats(0.0, 3.0),
)
def test_targets_never_leave_the_ranges(start, action, elapsed, blend_in):
    """From any pose inside the ranges, any finite action, at any time of the blend: inside."""
    made = TargetMaker(LOWER, UPPER, jaw_range(), blend_in)
    made.begin(LOWER + np.asarray(start) * (UPPER - LOWER))
    target = made.target(action, elapsed)
    assert np.all(target >= LOWER) and np.all(target <= UPPER)


def test_run_statistics_summarise_the_recent_steps():
    stats = RunStatistics(window=4)
    for seconds in (0.08, 0.001, 0.001, 0.002, 0.001):
        stats.add(seconds)
    stats.dropped, stats.stale = 3, 1
    summary = stats.summary()
    assert summary["steps"] == 5 and summary["dropped_frames"] == 3 and summary["stale_frames"] == 1
    assert summary["inference_max_ms"] == pytest.approx(2.0)  # 80 ms left the window
    assert summary["inference_last_ms"] == pytest.approx(1.0)
    assert RunStatistics().summary()["inference_mean_ms"] == 0.0


# --- LeRobot's policies ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Two recorded picks with the front camera (64×48) and a small ACT trained 5 steps."""
    return record_and_train(tmp_path_factory.mktemp("policy"), episodes=2, seed=3, steps=5)


@pytest.mark.slow
def test_act_loads_from_its_folder_and_computes_one_chunk_per_ten_steps(trained):
    from physai_ros.policies.lerobot_policy import LeRobotPolicy

    _, folder = trained
    policy = LeRobotPolicy(folder)
    assert policy.image_features == ("observation.images.front_cam",)
    assert policy.image_shapes == {"observation.images.front_cam": (3, 48, 64)}
    assert policy.needs_state and policy.fps is None and "act" in policy.description
    observation = camera_observation()
    depths, actions = [], []
    for _ in range(20):
        actions.append(policy.step(observation))
        depths.append(policy.queue_depth)
    assert depths == [9, 8, 7, 6, 5, 4, 3, 2, 1, 0] * 2  # one inference per chunk of 10
    actions = np.array(actions)
    assert actions.shape == (20, 6) and np.all(np.isfinite(actions))
    assert np.allclose(actions[:10], actions[10:], atol=1e-5)  # same observation, same chunk
    policy.reset()
    assert policy.queue_depth == 0


@pytest.mark.slow
def test_diffusion_loads_from_its_folder_and_steps(trained, tmp_path):
    """A small Diffusion policy trained 2 steps on the same picks: loaded the same way, its
    observation history and action queue kept by LeRobot (8 actions per inference)."""
    from physai_ros.policies.lerobot_policy import LeRobotPolicy

    dataset, _ = trained
    policy = LeRobotPolicy(train(dataset, tmp_path / "diffusion", "diffusion", steps=2))
    assert policy.image_features == ("observation.images.front_cam",)
    assert "diffusion" in policy.description
    observation = camera_observation()
    depths, actions = [], []
    for _ in range(9):
        actions.append(policy.step(observation))
        depths.append(policy.queue_depth)
    assert depths == [7, 6, 5, 4, 3, 2, 1, 0, 7], depths
    assert np.array(actions).shape == (9, 6) and np.all(np.isfinite(actions))


def test_a_folder_that_is_not_a_pretrained_policy_gets_a_clear_error(tmp_path):
    from physai_ros.policies.lerobot_policy import LeRobotPolicy

    with pytest.raises(InvalidInput, match="does not exist"):
        LeRobotPolicy(tmp_path / "nothing")
    with pytest.raises(InvalidInput, match="pretrained_model"):
        LeRobotPolicy(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"type": "no_such_policy"}))
    with pytest.raises(InvalidInput, match="no policy type 'no_such_policy'"):
        LeRobotPolicy(tmp_path)


@pytest.mark.slow
def test_replay_gives_the_episodes_actions_in_order_then_none(trained):
    from physai_ros.datasets.lerobot_io import load_dataset
    from physai_ros.policies.replay import ReplayPolicy

    dataset, _ = trained
    table = load_dataset(dataset, REPO).hf_dataset.with_format("numpy")
    recorded = np.asarray(table["action"])[np.asarray(table["episode_index"]) == 1]
    replay = ReplayPolicy(dataset, REPO, 1)
    assert replay.fps == 30 and replay.queue_depth == len(recorded)
    got = [replay.step({}) for _ in range(len(recorded))]
    assert np.array_equal(np.array(got), recorded) and replay.step({}) is None
    replay.reset()
    assert np.array_equal(replay.step({}), recorded[0])
    with pytest.raises(InvalidInput, match="no episode 7"):
        ReplayPolicy(dataset, REPO, 7)
    with pytest.raises(InvalidInput, match="not a LeRobot dataset"):
        ReplayPolicy(dataset / "meta", REPO, 0)


@pytest.mark.slow
def test_bench_stream_streams_a_policys_output_over_a_recorded_episode(trained, tmp_path):
    """`physai bench stream --policy --dataset`: the policy stepped over each frame of the
    episode (its observations the recording's) is one more stream, a row per backend and mode;
    the inputs are checked before anything runs."""
    from physai_ros.datasets.lerobot_io import load_dataset
    from physai_ros.experiments.bench_stream import policy_stream

    dataset, folder = trained
    table = load_dataset(dataset, REPO).hf_dataset.with_format("numpy")
    frames = int(np.sum(np.asarray(table["episode_index"]) == 1))
    stream = policy_stream(folder, dataset, REPO, 1)
    assert stream.name == "act policy, episode 1" and stream.targets.shape == (frames, 5)
    assert np.allclose(np.diff(stream.times), 1 / 30) and np.all(np.isfinite(stream.targets))
    with pytest.raises(InvalidInput, match="no episode 9"):
        policy_stream(folder, dataset, REPO, 9)
    with pytest.raises(InvalidInput, match="not a LeRobot dataset"):
        policy_stream(folder, dataset / "meta", REPO, 0)

    bench = [PHYSAI, "bench", "stream", "--episodes", "1", "--leader-seconds", "2"]
    plot = ["--plot", str(tmp_path / "s.png")]
    result = subprocess.run(
        [*bench, "--policy", str(folder), "--dataset", str(dataset), *plot],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    out = result.stdout
    assert result.returncode == 0, out + result.stderr[-3000:]
    rows = re.findall(r"^\| (sim|emulator) \| act policy, episode 0 \| (\w+) \|", out, re.M)
    assert sorted(rows) == sorted((b, m) for b in ("sim", "emulator") for m in MODES), out
    assert re.search(r"sim, policy: RMS jerk limited / staircase = \d+\.\d+", out), out
    assert (tmp_path / "s.png").stat().st_size > 10_000  # the scripted pick
    assert (tmp_path / "s_policy.png").stat().st_size > 10_000
    alone = subprocess.run([*bench, "--policy", str(folder)], capture_output=True, text=True)
    assert alone.returncode != 0 and "--policy and --dataset together" in alone.stderr
