"""The /pick action's test client and the launched pick graph it talks to, shared by the
action's tests: the shipped launch (``pick.launch.py sim:=true``) on a colcon-built install, a
Python action client, and the sim bridge's truth (the cube's pose, the jaws' contact forces, the
joints and the arm controller's reference, recorded with their sim-time stamps)."""

from __future__ import annotations

import math
import shlex
import time

import numpy as np
from control_msgs.msg import JointTrajectoryControllerState
from geometry_msgs.msg import PoseStamped, WrenchStamped
from rclpy.qos import DurabilityPolicy, QoSProfile
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger

from support.optional import require
from support.paths import REPO_ROOT, shipped

Pick = require("physai_ros_interfaces.action").Pick
BenchClient = require("physai_ros.experiments.trials.pick_goals").Client

JAWS = ("fixed_jaw", "moving_jaw")
ARM = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll")
MIN_LIFT = shipped("pick", "min_lift")  # [m] the pick's own threshold for "held"
TOUCH = shipped("pick", "ros", "touch_force")  # [N] a jaw touches the object above this
GRAPH_UP = 150.0  # [s wall] the launch's graph up and the start's pick judged, 2 loaded cores
GOAL_TIMEOUT = 90.0  # [s wall] one pick goal, sent to its result
CUBE_HALF = 0.015  # [m] half the sim's cube: its centre's height resting on the table
CUBE_X0 = 0.22  # [m] the sim bridge's cube_x at start (the SO-101 scene's cube)


class Client(BenchClient):
    """The test's node: the bench's (the /pick action client, /sim/reset, the start's outcome)
    with the pick's state, and the sim bridge's truth (the cube's pose, each jaw's contact
    force, the joints). While ``recording``, every arm joint state (sim-time stamp [s],
    positions [rad], velocities [rad/s]) and every arm controller reference (stamp [s],
    positions [rad]) is kept."""

    def __init__(self, context) -> None:
        super().__init__(context, name="pick_action_client")
        node = self.node
        self.state: str | None = None  # the pick's state, as it enters each (pick/state)
        self.cube: list[tuple[float, float, float]] = []  # (wall [s], x [m], z [m])
        # the latest cube pose: (wall [s], centre (x, y, z) [m], quaternion (w, x, y, z))
        self.cube_pose: tuple[float, tuple[float, ...], tuple[float, ...]] | None = None
        self.forces = dict.fromkeys(JAWS, (0.0, 0.0))  # jaw: (wall [s], force [N]), latest
        self.joints: dict[str, float] = {}
        self.recording = False
        self.measured: list[tuple[float, np.ndarray, np.ndarray]] = []
        self.reference: list[tuple[float, np.ndarray]] = []
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        node.create_subscription(String, "/pick/state", self._state_entered, latched)
        node.create_subscription(JointState, "/joint_states", self._joints, 100)
        node.create_subscription(
            JointTrajectoryControllerState, "/arm_controller/controller_state", self._state, 100
        )
        for jaw in JAWS:
            node.create_subscription(
                WrenchStamped, f"/jaw_contact/{jaw}", lambda m, j=jaw: self._force(j, m), 10
            )

    def _state_entered(self, msg: String) -> None:
        self.state = msg.data

    def _cube(self, msg: PoseStamped) -> None:
        p, q = msg.pose.position, msg.pose.orientation
        self.cube.append((time.monotonic(), p.x, p.z))
        self.cube_pose = (time.monotonic(), (p.x, p.y, p.z), (q.w, q.x, q.y, q.z))

    def _joints(self, msg: JointState) -> None:
        self.joints.update(zip(msg.name, msg.position, strict=False))
        if self.recording and msg.velocity:
            index = [list(msg.name).index(j) for j in ARM]
            stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
            q, qd = np.asarray(msg.position)[index], np.asarray(msg.velocity)[index]
            self.measured.append((stamp, q, qd))

    def _state(self, msg: JointTrajectoryControllerState) -> None:
        if self.recording and tuple(msg.joint_names) == ARM:
            stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
            self.reference.append((stamp, np.asarray(msg.reference.positions)))

    def record(self) -> None:
        """Start a fresh recording of the arm's joint states and controller references."""
        self.measured, self.reference, self.recording = [], [], True

    def _force(self, jaw: str, msg: WrenchStamped) -> None:
        f = msg.wrench.force
        self.forces[jaw] = (time.monotonic(), math.sqrt(f.x**2 + f.y**2 + f.z**2))

    def reset(self) -> None:
        """Robot home and the cube back where it started; then a second of fresh poses."""
        assert self.reset_client.wait_for_service(timeout_sec=30.0)
        assert self.wait(self.reset_client.call_async(Trigger.Request()), 30.0).success
        self.spin_for(1.0)

    def send(self, goal, on_feedback=None, timeout: float = GOAL_TIMEOUT):
        """Send ``goal``; returns (status, result, the goal handle)."""
        assert self.pick.wait_for_server(timeout_sec=30.0), "no /pick action server"
        handle = self.wait(self.pick.send_goal_async(goal, feedback_callback=on_feedback), 30.0)
        assert handle.accepted
        answer = self.wait(handle.get_result_async(), timeout)
        return answer.status, answer.result, handle

    def arm(self) -> list[float]:
        return [self.joints[j] for j in ARM]

    def cube_xz(self, since: float) -> tuple[float, float]:
        """The cube's latest x and height [m] (world), from a pose received after ``since``."""
        fresh = [(x, z) for wall, x, z in self.cube if wall > since]
        assert fresh, "no fresh cube pose from the sim bridge"
        return fresh[-1]


def readme_block(containing: str) -> list[list[str]]:
    """The ``ros2`` command lines of the README's fenced block that has a line starting with
    ``containing``, in order, each as ``ros2``'s arguments: the test runs what the README tells
    users to run."""
    lines = (REPO_ROOT / "README.md").read_text().splitlines()
    at = next((i for i, line in enumerate(lines) if line.startswith(containing)), None)
    assert at is not None, f"README.md has no line starting {containing!r}"
    first = max(i for i in range(at) if lines[i].startswith("```")) + 1
    last = min(i for i in range(at, len(lines)) if lines[i].startswith("```"))
    return [shlex.split(line)[1:] for line in lines[first:last] if line.startswith("ros2 ")]


def launch_graph(ros2, tmp_path, context) -> Client:
    """The shipped launch, as a user starts it, and this test's client, created first so it
    sees the cube at rest."""
    client = Client(context)
    ros2("launch", "physai_ros", "pick.launch.py", "sim:=true", log=tmp_path / "launch.log")
    return client


def place_goal(x: float, y: float, z: float, frame: str = "world") -> Pick.Goal:
    """A goal to pick the sim's cube and place it with its centre at (x, y, z) [m] in
    ``frame``."""
    goal = Pick.Goal(object_frame="cube", place=True, time_limit=60.0)
    goal.place_pose.header.frame_id = frame
    goal.place_pose.pose.position.x, goal.place_pose.pose.position.y = x, y
    goal.place_pose.pose.position.z = z
    goal.place_pose.pose.orientation.w = 1.0
    return goal


def tilt_deg(quat_wxyz: tuple[float, ...]) -> float:
    """Angle [deg] between the cube's z axis and the vertical."""
    _, x, y, _ = quat_wxyz
    return math.degrees(math.acos(max(-1.0, min(1.0, 1.0 - 2.0 * (x * x + y * y)))))
