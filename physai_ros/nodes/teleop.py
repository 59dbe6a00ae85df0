"""Teleoperation: a leader SO-101 driving the follower through the arm's streaming path.

At ``fps`` (60 Hz, the default of LeRobot's ``lerobot-teleoperate``) it reads the leader
through LeRobot's own leader class (``physai_ros.robots.so101.leader``: the bus is only read,
never written, and a leader whose servos hold another calibration than its file is refused),
publishes the leader's pose on
``leader/joint_states`` (the follower's joint names, radians: what the dataset recorder records
as the action, as LeRobot records the leader's reading), and streams it, arm and jaw, on
``arm_controller/stream``, where the follower's controller follows it inside its limits in the
mode it is set to (docs/streaming.md).

The follower never jumps to the leader: the first target is where the follower is, blended
into the leader's pose over ``blend_in`` (minimum jerk), and again from where it holds whenever
the controller reports on ``/diagnostics`` that the stream stopped and it holds. A leader pose
outside a joint's range is clipped into it (counted). Follower joint states older than
``max_input_age`` skip the frame. A failed read (each is tried twice) streams the last target
again, so the follower waits where the leader was last seen; ``max_read_failures`` failed reads
in a row (a pulled cable, a leader without power) stop teleoperation: the stream's deadman
brings the follower to a hold, with the reason on ``/diagnostics`` (ERROR) and in the log.

``/diagnostics`` (``teleop``, once a second): the leader's read time (last, mean, p95, max),
frames streamed, read failures, stale frames, clipped targets, restarts.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.node import Node
from sensor_msgs.msg import JointState

from physai_ros import interfaces
from physai_ros.core.motion.limits import load_limits
from physai_ros.datasets.features import MOTOR_NAMES, from_lerobot
from physai_ros.datasets.from_ros import jaw_range
from physai_ros.errors import InvalidInput, PhysaiError
from physai_ros.nodes._common import declare_schema, load_schema, run_node
from physai_ros.nodes._messages import seconds
from physai_ros.nodes._stream_client import HoldWatch, measured_pose, status_message
from physai_ros.policies.base import RunStatistics
from physai_ros.policies.targets import TargetMaker
from physai_ros.robots.so101.leader import LeaderArm, default_leader_calibration

SCHEMA = load_schema("teleop")  # config/schema/teleop.yaml


class Teleop(Node):
    def __init__(self) -> None:
        super().__init__("teleop")
        p = declare_schema(self, SCHEMA)
        log = self.get_logger()
        calibration = Path(
            p["leader_calibration_file"] or default_leader_calibration(p["leader_id"])
        ).expanduser()
        try:
            limits = load_limits("so101")
            order = [limits.joint_names.index(m) for m in MOTOR_NAMES]
            self.maker = TargetMaker(
                limits.position_min[order], limits.position_max[order], jaw_range(), p["blend_in"]
            )
            self.leader = LeaderArm(p["leader_port"], calibration)
            self.leader.open()
        except (InvalidInput, PhysaiError) as exc:
            raise SystemExit(f"teleop: {exc}") from exc
        self.fps, self.max_age = p["fps"], p["max_input_age"]
        self.max_failures, self.failures = p["max_read_failures"], 0
        self.lock = threading.Lock()
        self.follower: JointState | None = None
        self.create_subscription(JointState, p["joint_states_topic"], self._keep, 10)
        self.pub = self.create_publisher(JointState, p["stream_topic"], 10)
        self.pub_leader = self.create_publisher(JointState, p["leader_topic"], 10)
        self.pub_diag = self.create_publisher(DiagnosticArray, interfaces.DIAGNOSTICS, 10)
        self.state = "waiting for the follower's joint states"
        self.holds = HoldWatch(self, p["stream_topic"], lambda: self.state == "following")
        self.stats = RunStatistics(label="read")
        self.blend_at = 0.0  # [s, node clock] the latest blend-in's start
        self.read_failures = 0  # all of them, for /diagnostics
        self.last: JointState | None = None  # the latest target streamed
        self.create_timer(1.0 / self.fps, self._tick)
        self.create_timer(1.0 / p["diagnostics_rate"], self._diagnose)
        log.info(
            f"leader SO-101 on {p['leader_port']} ({calibration}); streaming it at "
            f"{self.fps:g} Hz on '{p['stream_topic']}', its pose on '{p['leader_topic']}'"
        )

    def _keep(self, msg: JointState) -> None:
        with self.lock:
            self.follower = msg

    def _now(self) -> float:
        return seconds(self.get_clock().now().to_msg())

    def _tick(self) -> None:
        """One frame: read the leader, publish its pose, stream the target."""
        if self.state == "stopped":
            return
        log = self.get_logger()
        begin = time.perf_counter()
        try:
            action = self.leader.read()
        except PhysaiError as exc:
            self.failures += 1
            self.read_failures += 1
            self.stats.dropped += 1
            if self.failures >= self.max_failures:
                self.state = "stopped"
                log.error(
                    f"{self.failures} leader reads failed in a row ({exc}): teleoperation stops "
                    "and the follower holds (restart the node once the leader is back)"
                )
                return
            log.warning(f"leader read failed: {exc}", throttle_duration_sec=1.0)
            if self.last is not None:  # the follower waits where the leader was last seen
                self.last.header.stamp = self.get_clock().now().to_msg()
                self.pub.publish(self.last)
            return
        self.stats.add(time.perf_counter() - begin)
        self.failures = 0
        stamp = self.get_clock().now().to_msg()
        now = seconds(stamp)
        arm, jaw = from_lerobot(action, self.maker.jaw_range)
        pose = JointState(name=list(MOTOR_NAMES), position=[*arm.tolist(), jaw])
        pose.header.stamp = stamp
        self.pub_leader.publish(pose)
        with self.lock:
            follower = self.follower
        if follower is None:
            return
        age = now - seconds(follower.header.stamp)
        if age > self.max_age:
            self.stats.stale += 1
            self.stats.dropped += 1
            log.warning(
                f"frame skipped: the follower's joint states are {1e3 * age:.0f} ms old "
                f"(max_input_age {1e3 * self.max_age:.0f} ms)",
                throttle_duration_sec=1.0,
            )
            return
        try:
            measured = measured_pose(follower)
            if self.maker.start is None:
                self.maker.begin(measured)
                self.state, self.blend_at = "following", now
                log.info("following the leader: the first target is where the follower is")
            elif (held := self.holds.take()) is not None:
                self.maker.begin(measured)
                self.blend_at = now
                log.warning(f"the follower holds ({held}); blending in again from there")
            target = self.maker.target(action, now - self.blend_at)
        except InvalidInput as exc:
            log.error(f"frame skipped: {exc}", throttle_duration_sec=1.0)
            self.stats.dropped += 1
            return
        out = JointState(name=list(MOTOR_NAMES), position=target.tolist())
        out.header.stamp = stamp
        self.pub.publish(out)
        self.last = out

    def _diagnose(self) -> None:
        summary = self.stats.summary()
        summary["read_failures"] = float(self.read_failures)
        summary["clipped_targets"] = float(self.maker.clipped)
        summary["restarts"] = float(self.holds.restarts)
        level = DiagnosticStatus.ERROR if self.state == "stopped" else DiagnosticStatus.OK
        message = f"{self.state}; leader on {self.leader.port}"
        self.pub_diag.publish(
            status_message(self, "teleop", level, message, "so101_leader", summary)
        )

    def close(self) -> None:
        self.leader.close()


def main(args=None) -> None:
    run_node(Teleop, args, cleanup=lambda node: node.close())


if __name__ == "__main__":
    main()
