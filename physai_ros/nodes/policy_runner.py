"""Policy runner: a LeRobot policy (or a recorded episode) driving the SO-101 through the
arm's streaming path.

At the policy's frame rate it builds the observation LeRobot's robot classes would give, from
ROS topics and with the dataset's feature names (``observation.state`` from the joint states,
``observation.images.<camera>`` from the image topics, each camera named by its topic), steps
the policy (``physai_ros.policies``: one inference per action chunk, queued actions between),
and streams the action's targets, arm and jaw, on ``arm_controller/stream``, where the arm's
controller follows them inside its limits in the mode it is set to (docs/streaming.md).

It never makes the arm jump: the first target is where the arm is, blended into the policy's
over ``blend_in``; targets outside a joint's range are clipped (and counted). An input older
than ``max_input_age`` skips the frame (counted as stale): no action is sent from old data, and
if inputs stay stale the stream's deadman brings the arm to a hold. Targets are computed up to
``lead`` frames ahead (from the newest inputs then), so the stream stays on time while an
inference runs; a target not ready at its frame is a dropped frame (counted). When the arm
controller says on ``/diagnostics`` that it stopped following and holds
(``arm_controller/stream``: a target came late), the runner blends in again from where the arm
holds (counted as a restart), since the controller refuses a resumed stream far from its held
pose. When the policy ends (a replay's last action) or ``duration`` has passed, the runner
stops streaming and the arm holds.

``/diagnostics`` (``policy_runner``, once a second): inference time per step (last, mean, p95,
max), the policy's action queue depth, the frames computed ahead, steps, dropped and stale
frames, clipped targets, restarts.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Image, JointState

from physai_ros import interfaces
from physai_ros.core.motion.limits import load_limits
from physai_ros.datasets.features import IMAGE_PREFIX, MOTOR_NAMES, TASK, to_lerobot
from physai_ros.datasets.from_ros import camera_name, image_array, jaw_range
from physai_ros.datasets.timeline import Dropped
from physai_ros.errors import InvalidInput
from physai_ros.nodes._common import declare_schema, load_schema, run_node
from physai_ros.nodes._messages import seconds
from physai_ros.nodes._stream_client import HoldWatch, measured_pose, status_message
from physai_ros.policies.base import Policy, RunStatistics
from physai_ros.policies.targets import TargetMaker

SCHEMA = load_schema("policy_runner")  # config/schema/policy_runner.yaml
DEFAULT_FPS = 30.0  # [Hz] LeRobot's default for the SO-101 where the policy does not say
STATE = "observation.state"


def load_policy(p: dict) -> Policy:
    """The policy the parameters name: ``replay`` of a dataset episode, or a pretrained folder."""
    if p["policy"] == "replay":
        from physai_ros.policies.replay import ReplayPolicy

        if not p["dataset"]:
            raise InvalidInput("policy 'replay' needs 'dataset', the LeRobot dataset folder")
        return ReplayPolicy(Path(p["dataset"]), p["repo_id"], p["episode"])
    if not p["policy"]:
        raise InvalidInput(
            "set 'policy': a LeRobot pretrained_model folder, or 'replay' (with 'dataset')"
        )
    from physai_ros.policies.lerobot_policy import LeRobotPolicy

    return LeRobotPolicy(Path(p["policy"]), p["device"], p["task"])


class PolicyRunner(Node):
    def __init__(self) -> None:
        super().__init__("policy_runner")
        p = declare_schema(self, SCHEMA, {"task": TASK})
        log = self.get_logger()
        topics = tuple(t.strip() for t in p["image_topics"].split(",") if t.strip())
        try:
            self.policy = load_policy(p)
            self.cameras = {IMAGE_PREFIX + camera_name(t): t for t in topics}
            missing = sorted(set(self.policy.image_features) - set(self.cameras))
            if missing:
                raise InvalidInput(
                    f"the policy needs {missing}: name their image topics in 'image_topics' "
                    f"(a topic's camera is its name: front_cam/image_raw -> front_cam); "
                    f"given {list(topics)}"
                )
            limits = load_limits("so101")
            order = [limits.joint_names.index(m) for m in MOTOR_NAMES]
            self.maker = TargetMaker(
                limits.position_min[order], limits.position_max[order], jaw_range(), p["blend_in"]
            )
        except InvalidInput as exc:
            raise SystemExit(f"policy_runner: {exc}") from exc
        self.fps = p["fps"] or self.policy.fps or DEFAULT_FPS
        if not 10.0 <= self.fps <= 60.0:
            raise SystemExit(f"policy_runner: fps {self.fps:g} outside the stream's 10–60 Hz")
        self.duration, self.max_age = p["duration"], p["max_input_age"]
        self.shapes = getattr(self.policy, "image_shapes", {})  # CHW the policy was trained on
        self.lock = threading.Lock()
        self.latest: dict[str, object] = {}  # stream -> newest message
        self.create_subscription(
            JointState, p["joint_states_topic"], lambda m: self._keep(STATE, m), 10
        )
        for key, topic in self.cameras.items():
            if key in self.policy.image_features:
                self.create_subscription(
                    Image, topic, lambda m, k=key: self._keep(k, m), qos_profile_sensor_data
                )
        self.pub = self.create_publisher(JointState, p["stream_topic"], 10)
        self.holds = HoldWatch(self, p["stream_topic"], lambda: self.state == "running")
        self.pub_diag = self.create_publisher(DiagnosticArray, interfaces.DIAGNOSTICS, 10)
        self.stats = RunStatistics()
        self.worker = ThreadPoolExecutor(1, thread_name_prefix="policy_step")
        self.busy = False
        self.ready: deque[JointState] = deque()  # computed frames' targets, oldest first
        self.lead, self.period, self.next_at = p["lead"], 1.0 / self.fps, 0.0
        self.started: float | None = None  # [s, node clock] the run's first step
        self.blend_at = 0.0  # [s, node clock] the latest blend-in's start
        self.state = "waiting for inputs"
        self.create_timer(1.0 / self.fps, self._tick)
        self.create_timer(1.0 / p["diagnostics_rate"], self._diagnose)
        log.info(
            f"{self.policy.description}; streaming at {self.fps:g} Hz on '{p['stream_topic']}' "
            f"once {STATE} and {list(self.policy.image_features)} arrive"
        )

    def _keep(self, stream: str, msg) -> None:
        with self.lock:
            self.latest[stream] = msg

    # --- the frame clock ---------------------------------------------------------------------
    def _tick(self) -> None:
        """One frame: send the target computed for it, and have the worker top the queue of
        computed frames up to ``lead``. Computing ahead keeps the stream on time while an
        inference (a new action chunk) runs; a target not ready at its frame is a dropped
        frame, not a late one."""
        if self.state in ("finished", "failed"):
            return
        now = self._now()
        if self.ready:
            self.pub.publish(self.ready.popleft())
        elif self.started is not None:
            self.stats.dropped += 1
            self.next_at = max(self.next_at, now + self.period)  # computed frames catch up
        if self.started is not None and self.duration and now - self.started >= self.duration:
            self._finish(f"ran its {self.duration:g} s")
            return
        if not self.busy:
            self.busy = True
            self.worker.submit(self._fill)

    def _now(self) -> float:
        return seconds(self.get_clock().now().to_msg())

    def _fill(self) -> None:
        """In the worker thread: compute frames until ``lead`` are ready (or one cannot be)."""
        try:
            while self.state not in ("finished", "failed") and len(self.ready) < self.lead:
                if not self._step():
                    break
        except Exception as exc:  # in a thread: nobody else would see it
            self.state = "failed"
            self.get_logger().error(
                f"the policy failed, streaming stops and the arm holds: {exc!r}"
            )
            raise
        finally:
            self.busy = False

    def _step(self) -> bool:
        """The next frame's target from the newest inputs: the observation, the policy's
        action, the target at the frame's time. False when none can be made now."""
        log, now = self.get_logger(), self._now()
        with self.lock:
            inputs = dict(self.latest)
        needed = [STATE, *self.policy.image_features]
        if any(k not in inputs for k in needed):
            return False  # still waiting for a first message of each
        ages = {k: now - seconds(inputs[k].header.stamp) for k in needed}
        stale = {k: a for k, a in ages.items() if a > self.max_age}
        if stale:  # no action from old data: a frame will be dropped
            self.stats.stale += 1
            log.warning(
                "frame skipped, stale input: "
                + ", ".join(f"{k} {1e3 * a:.0f} ms old" for k, a in stale.items())
                + f" (max_input_age {1e3 * self.max_age:.0f} ms)",
                throttle_duration_sec=1.0,
            )
            return False
        if self.started is None:
            self.started, self.next_at = now, now + self.period
        when = self.next_at
        try:
            measured = measured_pose(inputs[STATE])
            if self.maker.start is None:
                self.maker.begin(measured)
                self.policy.reset()
                self.state, self.blend_at = "running", when
                log.info("running: the first target is where the arm is")
            elif (held := self.holds.take()) is not None:
                self.maker.begin(measured)
                self.blend_at = when
                log.warning(f"the arm holds ({held}); blending in again from there")
                self.ready.clear()  # computed from the old blend: far from the held pose
            observation = {STATE: to_lerobot(measured[:5], measured[5], self.maker.jaw_range)}
            for key in self.policy.image_features:
                observation[key] = self._image(key, inputs[key])
            begin = time.perf_counter()
            action = self.policy.step(observation)
            self.stats.add(time.perf_counter() - begin)
            if action is None:
                self._finish("the policy has no more actions")
                return False
            target = self.maker.target(action, when - self.blend_at)
        except (InvalidInput, Dropped) as exc:  # a frame will be dropped
            log.error(f"frame skipped: {exc}", throttle_duration_sec=1.0)
            return False
        self.ready.append(
            JointState(
                header=inputs[STATE].header, name=list(MOTOR_NAMES), position=target.tolist()
            )
        )
        self.next_at = when + self.period
        return True

    def _image(self, key: str, msg: Image) -> np.ndarray:
        pixels = image_array(msg)
        wanted = self.shapes.get(key)
        if wanted is not None and tuple(wanted) != (3, *pixels.shape[:2]):
            raise InvalidInput(
                f"{key} is {pixels.shape[1]}x{pixels.shape[0]} px; the policy was trained on "
                f"{wanted[2]}x{wanted[1]}: publish that size"
            )
        return pixels

    def _finish(self, why: str) -> None:
        self.state = "finished"
        self.get_logger().info(
            f"finished ({why}) after {self.stats.steps} steps: streaming stops and the arm "
            "holds (the stream's deadman)"
        )

    # --- diagnostics -------------------------------------------------------------------------
    def _diagnose(self) -> None:
        summary = self.stats.summary()
        summary["queue_depth"] = float(self.policy.queue_depth)
        summary["frames_ahead"] = float(len(self.ready))
        summary["clipped_targets"] = float(self.maker.clipped)
        summary["restarts"] = float(self.holds.restarts)
        level = DiagnosticStatus.ERROR if self.state == "failed" else DiagnosticStatus.OK
        if self.state == "running" and summary["inference_p95_ms"] > 1e3 / self.fps:
            level = DiagnosticStatus.WARN
        message = f"{self.state}; {self.policy.description}"
        self.pub_diag.publish(
            status_message(self, "policy_runner", level, message, "so101", summary)
        )

    def close(self) -> None:
        self.worker.shutdown(wait=True)


def main(args=None) -> None:
    run_node(PolicyRunner, args, cleanup=lambda node: node.close())


if __name__ == "__main__":
    main()
