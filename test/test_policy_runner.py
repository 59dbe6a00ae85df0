"""A learned policy on the arm, as users run it: ``physai record`` of scripted picks, LeRobot's
own ``lerobot-train`` of a small ACT, then ``ros2 launch physai_ros policy.launch.py
policy:=<its pretrained_model>`` driving the simulated SO-101 for 5 s at 30 Hz; and a recorded
episode replayed through ``physai bringup policy``.

A listener in this process sees what the runner streams, what the arm and jaw controllers
command (their ``controller_state`` reference) and ``/diagnostics``: the actions reach the arm,
no command leaves the limit set, and the runner publishes its inference timing. The policy is
trained for 20 steps: its actions are not a pick, only actions in the dataset's units; what
matters here is the path from a checkpoint to the servos. The pure parts are test_policies.py.
"""

from __future__ import annotations

import subprocess
import threading
import time

import numpy as np
import pytest
from control_msgs.msg import JointTrajectoryControllerState
from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import JointState
from support.lerobot_runs import PHYSAI, record_and_train

from physai_ros.core.motion.limits import load_limits
from physai_ros.datasets.features import ARM_MOTORS, GRIPPER

pytestmark = [pytest.mark.dds, pytest.mark.slow]

LIMITS = load_limits("so101").select(list(ARM_MOTORS))
RUN = 5.0  # [s sim time] the policy streams for this long
FPS = 30


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """20 scripted picks (the front camera at 64×48) and a small ACT trained 20 steps on them."""
    base = tmp_path_factory.mktemp("policy_runner")
    return record_and_train(base, episodes=20, seed=11, steps=20)


class Listener:
    """What the graph streams and commands, and /diagnostics, seen from this process."""

    def __init__(self, context) -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        self.node = rclpy.create_node("policy_listener", context=context)
        self.lock = threading.Lock()
        self.targets: list[dict[str, float]] = []
        self.arm: list[JointTrajectoryControllerState] = []
        self.jaw: list[float] = []
        self.status: dict[str, tuple[str, dict[str, str]]] = {}
        self.node.create_subscription(JointState, "/arm_controller/stream", self._target, 100)
        self.node.create_subscription(
            JointTrajectoryControllerState, "/arm_controller/controller_state", self._arm, 100
        )
        self.node.create_subscription(
            JointTrajectoryControllerState, "/gripper_controller/controller_state", self._jaw, 100
        )
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._diagnostics, 50)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self) -> None:
        while not self.stopped.is_set():
            self.executor.spin_once(timeout_sec=0.1)

    def _target(self, msg: JointState) -> None:
        with self.lock:
            self.targets.append(dict(zip(msg.name, msg.position, strict=True)))

    def _arm(self, msg: JointTrajectoryControllerState) -> None:
        with self.lock:
            self.arm.append(msg)

    def _jaw(self, msg: JointTrajectoryControllerState) -> None:
        with self.lock:
            self.jaw.append(msg.reference.positions[0])

    def _diagnostics(self, msg: DiagnosticArray) -> None:
        with self.lock:
            for status in msg.status:
                values = {kv.key: kv.value for kv in status.values}
                self.status[status.name] = (status.message, values)

    def wait_for(self, name: str, start: str, timeout: float) -> dict[str, str]:
        """The values of the first ``name`` status whose message starts with ``start``."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self.lock:
                message, values = self.status.get(name, ("", {}))
            if message.startswith(start):
                return values
            time.sleep(0.2)
        raise AssertionError(f"no {name} status '{start}…' in {timeout:g} s: {message!r}")

    def close(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=10)
        self.executor.shutdown()
        self.node.destroy_node()


def test_a_trained_act_drives_the_simulated_arm_inside_its_limits(
    trained, ros2, ros_context, tmp_path
):
    _, policy = trained
    listener = Listener(ros_context)
    log = tmp_path / "launch.log"
    ros2("launch", "physai_ros", "policy.launch.py", f"policy:={policy}", f"duration:={RUN}",
         log=log)  # fmt: skip
    try:
        timing = listener.wait_for("policy_runner", "finished", 180.0)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{log.read_text()[-4000:]}") from None
    time.sleep(1.0)  # the arm brakes to a hold after the last target
    with listener.lock:
        targets, arm, jaw = list(listener.targets), list(listener.arm), list(listener.jaw)
    listener.close()

    # the runner streamed for its 5 s at 30 Hz (a frame whose target was late is counted)
    steps, dropped = float(timing["steps"]), float(timing["dropped_frames"])
    assert len(targets) >= 0.8 * RUN * FPS, (len(targets), timing)
    assert steps >= len(targets) and dropped <= 0.2 * RUN * FPS, timing
    # inference timing is published: one ACT inference per chunk of 10, queued actions between
    assert 0.0 < float(timing["inference_mean_ms"]) <= float(timing["inference_max_ms"]), timing
    assert 0 <= float(timing["queue_depth"]) <= 9, timing

    # the actions reached the arm: its reference ends where the stream ended (one frame of
    # linear interpolation and the braking after it), having moved to get there
    names = list(arm[-1].joint_names)
    last = np.array([targets[-1][n] for n in names])
    reference = np.array([m.reference.positions for m in arm])
    moved = np.abs(reference - reference[0]).max()
    assert moved > 0.05, f"the arm moved {moved:.3f} rad"
    assert np.abs(reference[-1] - last).max() < 0.15, (reference[-1], last)
    assert abs(jaw[-1] - targets[-1][GRIPPER]) < 0.05, (jaw[-1], targets[-1][GRIPPER])

    # no command left the limit set: position range, velocity, acceleration
    order = [names.index(n) for n in LIMITS.joint_names]
    q = reference[:, order]
    qd = np.array([m.reference.velocities for m in arm])[:, order]
    qdd = np.array([m.reference.accelerations for m in arm])[:, order]
    assert np.all(q >= LIMITS.position_min - 1e-9) and np.all(q <= LIMITS.position_max + 1e-9)
    assert np.all(np.abs(qd) <= LIMITS.velocity * (1 + 1e-9)), np.abs(qd).max(axis=0)
    assert np.all(np.abs(qdd) <= LIMITS.acceleration * (1 + 1e-9)), np.abs(qdd).max(axis=0)
    print(
        f"{len(targets)} targets, arm moved {moved:.2f} rad; inference "
        f"{timing['inference_mean_ms']} ms mean, {timing['inference_max_ms']} ms max; "
        f"dropped {timing['dropped_frames']}, restarts {timing['restarts']}"
    )


def test_a_recorded_episode_replays_through_bringup(trained, ros_domain, tmp_path):
    """``physai bringup policy -p policy:=replay``: the episode's actions are streamed in
    limited mode to their end, then the runner stops and the arm holds."""
    dataset, _ = trained
    logs = tmp_path / "logs"
    result = subprocess.run(
        [PHYSAI, "bringup", "policy", "-p", "policy:=replay", "-p", f"dataset:={dataset}",
         "-p", "episode:=2", "-p", "mode:=limited", "--duration", "40", "--log-dir", str(logs)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    runner = (logs / "policy_runner.log").read_text()
    assert "replay of episode 2" in runner and "at 30 fps" in runner, runner
    assert "finished (the policy has no more actions)" in runner, runner
    assert "stream target refused" not in (logs / "sim_bridge.log").read_text()


def test_replayed_picks_hold_the_cube_again_over_ros(tmp_path, ros_domain):
    """``physai bench policy-replay`` in its smallest form: two freshly recorded picks, each
    replayed through the policy runner in limited mode with the cube where it was recorded,
    judged by the cube (10 replays are the bench's, docs/policies.md)."""
    result = subprocess.run(
        [PHYSAI, "bench", "policy-replay", "--episodes", "2", "--mode", "limited", "--domain",
         str(ros_domain), "--keep", str(tmp_path / "logs")],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert "replayed_held = 2/2" in result.stdout, result.stdout + result.stderr[-3000:]
