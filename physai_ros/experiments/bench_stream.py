"""Benchmark: how the arm moves under a 30 Hz target stream in each streaming mode.

The trajectory lesson leaves one question open: a policy that sends raw targets at 30 Hz sends a
staircase; does interpolating between them reduce the jerk on the arm? Here the same target
streams are followed in each mode (``physai_ros.core.controllers.streaming``) by the arm's own
controller code, on two backends, and the *joints'* motion is measured, not the commands:

* **sim** — the sim bridge's MuJoCo SO-101 (``MujocoSim``, its controllers at 500 Hz), lockstep;
* **emulator** — the servo-bus emulator's STS3215 model (the servos' own acceleration profile
  toward each goal, a P position loop on MuJoCo physics), with the driver's controller at its
  100 Hz bus loop writing Goal_Position, as ``so101_driver`` does.

Streams: the arm's servo targets of scripted picks (``physai record``'s episodes, the actions a
policy trained on them imitates), a human-like leader: minimum-jerk reaches between random
poses (Flash & Hogan 1985) with an 8–12 Hz tremor of 1 mrad, read at 30 Hz with ±3 ms jitter
and the leader's 4096-step encoder, and, with ``--policy`` and ``--dataset``, a trained LeRobot
policy's actions: the policy stepped over a recorded episode's frames, open loop, its action
chunks and their boundaries as the policy runner streams them. Per mode: the peak and RMS joint
acceleration (the change of the joints' velocity over each 2 ms physics step) and jerk (its
change), the tracking lag (the shift of the stream that best matches the joints) and the RMS
error after that shift. A plot shows one joint in the three modes. Last line:
``linear_vs_staircase_rms_jerk``, the sim's scripted picks' RMS joint jerk in the two modes,
measured in this run.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import numpy as np

from physai_ros.core.controllers.streaming import MODES

LAGS = np.arange(0.0, 0.3, 0.002)  # [s] the shifts tried for the tracking lag
JITTER = 0.003  # [s] the leader's read jitter (±)
STEP_RAD = 2 * np.pi / 4096  # the leader's encoder resolution
SETTLE = 0.5  # [s] the arm holds its start before the stream begins (not scored)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--episodes", type=int, default=3, help="scripted picks streamed")
    parser.add_argument("--seed", type=int, default=0, help="seed of the picks and the leader")
    parser.add_argument("--fps", type=float, default=30.0, help="stream rate [Hz]")
    parser.add_argument(
        "--leader-seconds", type=float, default=20.0, help="length of the leader's stream [s]"
    )
    parser.add_argument(
        "--plot", type=Path, default=None, help="write the plot here (PNG); default: none"
    )
    parser.add_argument(
        "--policy",
        type=Path,
        default=None,
        help="a LeRobot policy folder (lerobot-train's pretrained_model): its actions over an "
        "episode of --dataset are streamed too",
    )
    parser.add_argument(
        "--dataset", type=Path, default=None, help="the LeRobot dataset the policy is stepped over"
    )
    parser.add_argument("--repo-id", default="local/so101_pick", help="the dataset's LeRobot id")
    parser.add_argument(
        "--policy-episodes",
        type=int,
        default=1,
        help="episodes of --dataset the policy is stepped over (from episode 0)",
    )


class Stream(NamedTuple):
    """Targets [rad] of the five arm joints, ``(n, 5)``, their arrival times [s], and the rate
    they are sent at [Hz] (the controller's expected stream rate: ``linear`` and ``limited``
    reach each target one period after it arrives)."""

    name: str
    times: np.ndarray
    targets: np.ndarray
    fps: float


class Motion(NamedTuple):
    """The joints' motion at every physics step: times [s], positions [rad], accelerations
    [rad/s²]."""

    times: np.ndarray
    positions: np.ndarray
    accelerations: np.ndarray


def scripted_streams(episodes: int, seed: int, fps: float) -> Iterator[Stream]:
    """The arm's servo targets of ``episodes`` scripted picks, one frame each at ``fps``."""
    from physai_ros.core.pick.machine import load_pick_config
    from physai_ros.datasets.features import from_lerobot
    from physai_ros.datasets.from_ros import jaw_range
    from physai_ros.datasets.randomise import Randomisation, draw
    from physai_ros.datasets.scripted import record_episode

    cfg, jaws = load_pick_config(), jaw_range()
    for i in range(episodes):
        episode, _ = record_episode(draw(Randomisation(), seed, i), cfg, fps)
        arm = np.array([from_lerobot(f.action, jaws)[0] for f in episode.frames])
        yield Stream(f"scripted pick {i}", np.arange(len(arm)) / fps, arm, fps)


def leader_stream(seconds: float, seed: int, fps: float, start: np.ndarray) -> Stream:
    """A human-like leader arm read at ``fps``: the hand's reaches (``HandMotion``) within
    0.6 rad of ``start``, read with jitter and the leader's encoder steps."""
    from physai_ros.robots.so101.emulator.hand import HandMotion

    rng = np.random.default_rng([seed, 1])
    t = np.arange(0.0, seconds, 1.0 / fps) + rng.uniform(-JITTER, JITTER, int(seconds * fps))
    t[0] = 0.0
    q = HandMotion(rng, start, seconds).at(t)
    q = np.round(q / STEP_RAD) * STEP_RAD
    return Stream("human-like leader", t, q, fps)


def policy_stream(folder: Path, root: Path, repo_id: str, episode: int) -> Stream:
    """The actions of the LeRobot policy in ``folder`` stepped over episode ``episode`` of the
    dataset at ``root``, at its frame rate, made into targets as the policy runner makes them
    (blended in from the episode's first pose over the runner's default ``blend_in``, clipped
    into the ranges). Open loop: each observation is the recording's frame, not the followed
    arm's, so the stream is the policy's output along a demonstration, chunk boundaries
    included (where LeRobot users see an ACT's jumps)."""
    from physai_ros.core.motion.limits import load_limits
    from physai_ros.datasets.features import MOTOR_NAMES, from_lerobot
    from physai_ros.datasets.from_ros import jaw_range
    from physai_ros.datasets.lerobot_io import load_dataset
    from physai_ros.errors import InvalidInput
    from physai_ros.parameters import load_schema
    from physai_ros.policies.lerobot_policy import STATE, LeRobotPolicy
    from physai_ros.policies.targets import TargetMaker

    if not (Path(root) / "meta" / "info.json").is_file():
        raise InvalidInput(f"{root} is not a LeRobot dataset (no meta/info.json)")
    policy = LeRobotPolicy(Path(folder))
    dataset = load_dataset(Path(root), repo_id)
    episodes = np.asarray(dataset.hf_dataset.with_format("numpy")["episode_index"])
    frames = np.flatnonzero(episodes == episode)
    if not frames.size:
        raise InvalidInput(f"{root} has no episode {episode}")
    missing = [k for k in (*policy.image_features, STATE) if k not in dataset.features]
    if missing:
        raise InvalidInput(f"{root} lacks {missing}: the policy's inputs and the arm's pose")
    limits = load_limits("so101")
    order = [limits.joint_names.index(motor) for motor in MOTOR_NAMES]
    maker = TargetMaker(
        limits.position_min[order],
        limits.position_max[order],
        jaw_range(),
        load_schema("policy_runner").defaults()["blend_in"],
    )
    policy.reset()
    arm = []
    for index in frames:
        frame = dataset[int(index)]
        if not arm:  # the arm is where the episode began
            maker.begin(np.append(*from_lerobot(frame[STATE].numpy(), jaw_range())))
        observation = {key: image_hwc(frame[key]) for key in policy.image_features}
        if policy.needs_state:
            observation[STATE] = frame[STATE].numpy()
        arm.append(maker.target(policy.step(observation), len(arm) / dataset.fps)[:5])
    kind = policy.description.split()[1]  # "LeRobot act policy from ..."
    return Stream(
        f"{kind} policy, episode {episode}",
        np.arange(len(arm)) / dataset.fps,
        np.array(arm),
        float(dataset.fps),
    )


def image_hwc(tensor) -> np.ndarray:
    """A LeRobot dataset's image (CHW float in [0, 1]) as a camera frame (HWC uint8), what the
    policy runner hands the policy."""
    return (tensor.numpy().transpose(1, 2, 0) * 255.0).round().astype(np.uint8)


def run_sim(stream: Stream, mode: str) -> Motion:
    """The stream followed by the sim bridge's simulated arm (its controllers, in lockstep)."""
    from physai_ros.core.controllers.streaming import StreamSettings
    from physai_ros.core.motion.limits import load_limits
    from physai_ros.sim.mujoco_sim import MujocoSim

    sim = MujocoSim("so101", cube_pos=(0.3, 0.15))  # the cube out of the arm's way
    arm = sim.arm  # at home, where the scripted picks start (else the first target is refused)
    limits = load_limits("so101").select(sim.arm_joints)
    arm.p = dataclasses.replace(
        arm.p, limits=limits, stream=StreamSettings(mode=mode, rate=stream.fps)
    )
    sim.advance(SETTLE)
    start, out, k = sim.time, [], 0
    while sim.time - start < stream.times[-1] + 0.5:
        while k < len(stream.times) and stream.times[k] <= sim.time - start:
            arm.stream(sim.time, sim.arm_joints, stream.targets[k])
            k += 1
        sim.step(1)
        state = sim.arm_state()
        out.append((sim.time - start, state.q.copy(), state.qd.copy()))
    return motion(out)


def run_emulator(stream: Stream, mode: str, loop_rate: float = 100.0) -> Motion:
    """The stream followed by the SO-101 driver's controller at its bus loop rate, writing
    Goal_Position to the emulated STS3215 servos (their own acceleration profile and position
    loop on MuJoCo physics)."""
    from physai_ros.core.controllers.jtc import JointTrajectoryController, JtcParams
    from physai_ros.core.controllers.streaming import StreamSettings
    from physai_ros.core.motion.limits import load_limits
    from physai_ros.models.joints import SO101_ARM_JOINTS
    from physai_ros.robots.so101.config import acceleration_register, goal_velocity
    from physai_ros.robots.so101.emulator.bus import FeetechBusEmulator

    start_pose = np.append(stream.targets[0], 0.3)
    bus = FeetechBusEmulator(
        power_on_torque=True, initial=start_pose, scene_kwargs={"cube_pos": (0.3, 0.15)}
    )
    limits = load_limits("so101").select(SO101_ARM_JOINTS)
    arm = JointTrajectoryController(
        JtcParams(
            joints=SO101_ARM_JOINTS, lower=limits.position_min, upper=limits.position_max,
            trajectory=np.zeros(5), goal=np.zeros(5), limits=limits, limit_period=1 / loop_rate,
            stream=StreamSettings(mode=mode, rate=stream.fps),
        )
    )  # fmt: skip
    physics, dt = bus.physics, bus.physics.dt
    every = max(1, round(1.0 / loop_rate / dt))
    # the registers the driver writes when it arms the servos (its acceleration profile and
    # speed, from the limit set), as So101Bus.arm does
    speeds = goal_velocity(load_limits("so101"))
    for servo, speed in zip(bus.servos, speeds, strict=True):
        servo.set("Acceleration", acceleration_register(limits))
        servo.set("Goal_Velocity", int(speed))
    for _ in range(round(SETTLE / dt)):
        bus.step()
    arm.activate(0.0, physics.positions()[:5], np.zeros(5))
    out, k, step, clock = [], 0, 0, 0.0
    while clock < stream.times[-1] + 0.5:
        if step % every == 0:
            while k < len(stream.times) and stream.times[k] <= clock:
                arm.stream(clock, SO101_ARM_JOINTS, stream.targets[k])
                k += 1
            arm.update(clock, physics.positions()[:5], physics.velocities()[:5])
            for servo, goal in zip(bus.servos[:5], arm.ref[0], strict=True):
                servo.set("Goal_Position", servo.present_steps(goal))
        bus.step()
        step, clock = step + 1, (step + 1) * dt
        out.append((clock, physics.positions()[:5], physics.velocities()[:5]))
    return motion(out)


def motion(samples: list) -> Motion:
    """(time, positions, velocities) at every physics step as a ``Motion``: the acceleration
    of each step is its change of velocity over the step (what the integrator applied)."""
    times, positions, velocities = (np.array(x) for x in zip(*samples, strict=True))
    accelerations = (
        np.diff(velocities, axis=0, prepend=velocities[:1])
        / np.diff(times, prepend=times[0] - (times[1] - times[0]))[:, None]
    )
    return Motion(times, positions, accelerations)


class Scores(NamedTuple):
    peak_acc: float  # [rad/s²] largest over joints and steps
    rms_acc: float
    peak_jerk: float  # [rad/s³]
    rms_jerk: float
    lag: float  # [s]
    rms_error: float  # [rad] after the lag


def score(stream: Stream, motion: Motion) -> Scores:
    """The joints' acceleration and jerk, and how they track the stream."""
    dt = np.diff(motion.times).mean()
    acc = motion.accelerations[1:]  # the first has no step before it
    jerk = np.diff(acc, axis=0) / dt
    inside = (motion.times >= stream.times[0]) & (motion.times <= stream.times[-1])

    def error(lag: float) -> float:
        t = motion.times[inside] - lag
        wanted = np.column_stack(
            [np.interp(t, stream.times, stream.targets[:, j]) for j in range(5)]
        )
        return float(np.sqrt(np.mean((motion.positions[inside] - wanted) ** 2)))

    errors = [error(lag) for lag in LAGS]
    best = int(np.argmin(errors))
    return Scores(
        float(np.abs(acc).max()), float(np.sqrt(np.mean(acc**2))),
        float(np.abs(jerk).max()), float(np.sqrt(np.mean(jerk**2))),
        float(LAGS[best]), errors[best],
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from physai_ros.errors import InvalidInput

    if args.episodes < 1 or not 10.0 <= args.fps <= 60.0 or args.leader_seconds <= 1.0:
        raise InvalidInput("give --episodes ≥ 1, --fps in [10, 60] and --leader-seconds > 1")
    if (args.policy is None) != (args.dataset is None) or args.policy_episodes < 1:
        raise InvalidInput("give --policy and --dataset together, and --policy-episodes ≥ 1")
    streams = list(scripted_streams(args.episodes, args.seed, args.fps))
    streams.append(leader_stream(args.leader_seconds, args.seed, args.fps, streams[0].targets[0]))
    if args.policy is not None:
        streams += [
            policy_stream(args.policy, args.dataset, args.repo_id, episode)
            for episode in range(args.policy_episodes)
        ]
    first_policy = streams[args.episodes + 1] if args.policy is not None else None
    runners = {"sim": run_sim, "emulator": run_emulator}
    rows, kept = [], {}
    for backend, runner in runners.items():
        for stream in streams:
            for mode in MODES:
                motion = runner(stream, mode)
                rows.append((backend, stream.name, mode, score(stream, motion)))
                if stream is streams[0] or stream is first_policy:
                    kept[(stream.name, backend, mode)] = motion
    policies = f", {args.policy_episodes} episodes of {args.policy}" if args.policy else ""
    print(
        f"SO-101 arm, {args.fps:g} Hz streams: {args.episodes} scripted picks, "
        f"{args.leader_seconds:g} s of a human-like leader{policies}; joints' motion at every "
        "2 ms step\n"
    )
    print(
        "| backend | stream | mode | peak acc [rad/s²] | RMS acc | peak jerk [rad/s³] | "
        "RMS jerk | lag [ms] | RMS error [mrad] |\n|---|---|---|---|---|---|---|---|---|"
    )
    for backend, name, mode, s in rows:
        print(
            f"| {backend} | {name} | {mode} | {s.peak_acc:.1f} | {s.rms_acc:.2f} | "
            f"{s.peak_jerk:.0f} | {s.rms_jerk:.1f} | {s.lag * 1e3:.0f} | {s.rms_error * 1e3:.1f} |"
        )
    if args.plot is not None:
        plot(kept, streams[0], args.plot)
        print(f"\nplot: {args.plot}")
        if first_policy is not None:
            path = args.plot.with_name(f"{args.plot.stem}_policy{args.plot.suffix}")
            plot(kept, first_policy, path)
            print(f"plot: {path}")

    def mean_rms_jerk(backend: str, mode: str, streams: str = "scripted pick") -> float:
        values = [s.rms_jerk for b, n, m, s in rows if b == backend and m == mode and streams in n]
        return float(np.mean(values))

    print()
    for backend in runners:
        for mode in ("linear", "limited"):
            ratio = mean_rms_jerk(backend, mode) / mean_rms_jerk(backend, "staircase")
            print(f"{backend}, scripted picks: RMS jerk {mode} / staircase = {ratio:.3f}")
            if args.policy is not None:
                ratio = mean_rms_jerk(backend, mode, "policy") / mean_rms_jerk(
                    backend, "staircase", "policy"
                )
                print(f"{backend}, policy: RMS jerk {mode} / staircase = {ratio:.3f}")
    ratio = mean_rms_jerk("sim", "linear") / mean_rms_jerk("sim", "staircase")
    print(f"linear_vs_staircase_rms_jerk = {ratio:.3f}")
    return 0


def plot(motions: dict, stream: Stream, path: Path) -> None:
    """Joint 2 (shoulder_lift) of ``stream`` in each mode: position and acceleration, on both
    backends (``motions`` by stream name, backend and mode)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 6), sharex=True)
    for column, backend in enumerate(("sim", "emulator")):
        top, bottom = axes[0, column], axes[1, column]
        top.step(
            stream.times, stream.targets[:, 1], where="post", color="k", lw=0.8, label="targets"
        )
        for mode in MODES:
            m = motions[(stream.name, backend, mode)]
            top.plot(m.times, m.positions[:, 1], lw=1, label=mode)
            bottom.plot(m.times, m.accelerations[:, 1], lw=0.6, label=mode)
        top.set_title(f"{backend}: shoulder_lift, {stream.name}")
        top.set_ylabel("position [rad]")
        bottom.set_ylabel("acceleration [rad/s²]")
        bottom.set_xlabel("time [s]")
        top.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
