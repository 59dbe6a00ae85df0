"""What a user's tools see of a running graph, from a client node in the bench's (or a test's)
process: the pick's states, outcome, joint states and cube (``Observer``), the trajectory node as
its action client (``TrajectoryClient``), and how soon a fresh subscriber gets the latched
topics."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import rclpy
from control_msgs.action import FollowJointTrajectory
from geometry_msgs.msg import PoseStamped
from physai_ros_interfaces.msg import PickOutcome
from rclpy.action import ActionClient
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger
from tf2_msgs.msg import TFMessage
from trajectory_msgs.msg import JointTrajectoryPoint

from physai_ros import interfaces
from physai_ros.experiments.trials.spinning import Spinning, wait
from physai_ros.launching.process_graph import Graph
from physai_ros.models.joints import SO101_ARM_JOINTS
from physai_ros.nodes._pick_outcome import outcome_fields
from physai_ros.qos import LATCHED, stream_qos

ARM = SO101_ARM_JOINTS
START_TIMEOUT = 120.0  # [s wall] graph start-up + the pick up to the state (loaded machine)


class Observer:
    """What a user's tools see of the pick graph, spun on a thread of its own."""

    def __init__(self, context, name: str = "crash_observer") -> None:
        self.context = context
        self.node = node = rclpy.create_node(name, context=context)
        self.lock = threading.Lock()
        self.states: list[tuple[float, str]] = []  # (wall, state)
        self.outcome: tuple[float, dict] | None = None  # (wall, outcome_fields of the result)
        self.joints: list[tuple[float, dict[str, float]]] = []  # (wall, arm joint speeds)
        self.cube: tuple[float, float] | None = None  # (wall, cube centre z [m])
        self.state_sub = node.create_subscription(
            String, interfaces.PICK_STATE, self._state, LATCHED
        )
        node.create_subscription(PickOutcome, interfaces.PICK_OUTCOME, self._outcome, LATCHED)
        node.create_subscription(JointState, interfaces.JOINT_STATES, self._joints, stream_qos(50))
        node.create_subscription(PoseStamped, interfaces.CUBE_POSE, self._cube, stream_qos(10))
        self.reset = node.create_client(Trigger, interfaces.SIM_RESET)
        self.spinning = Spinning(context, node)

    def close(self) -> None:
        self.spinning.close()

    def _state(self, msg: String) -> None:
        with self.lock:
            self.states.append((time.monotonic(), msg.data))

    def _outcome(self, msg: PickOutcome) -> None:
        with self.lock:
            self.outcome = (time.monotonic(), outcome_fields(msg))

    def _joints(self, msg: JointState) -> None:
        speeds = dict(zip(msg.name, msg.velocity, strict=False))
        with self.lock:
            self.joints.append((time.monotonic(), {j: speeds.get(j, 0.0) for j in ARM}))

    def _cube(self, msg: PoseStamped) -> None:
        with self.lock:
            self.cube = (time.monotonic(), msg.pose.position.z)

    def state(self) -> str | None:
        with self.lock:
            return self.states[-1][1] if self.states else None

    def entered(self, *states: str) -> bool:
        """Whether any of ``states`` has been received since the last ``forget`` (the history,
        not the latest: a poll can fall between two short states)."""
        with self.lock:
            return any(s in states for _t, s in self.states)

    def robot_seen(self) -> bool:
        """Joint states and the cube's pose received: the sim bridge runs and this observer's
        subscriptions are matched."""
        with self.lock:
            return bool(self.joints) and self.cube is not None

    def pick_connected(self) -> bool:
        """This observer's ``pick/state`` subscription has matched the pick's publisher."""
        return self.state_sub.get_publisher_count() > 0

    def forget(self) -> None:
        """Drop what was seen (a new pick starts)."""
        with self.lock:
            self.states, self.outcome = [], None

    def arm_speed(self, since: float) -> float | None:
        """Largest arm joint speed [rad/s] in the joint states received since ``since``."""
        with self.lock:
            recent = [max(abs(v) for v in s.values()) for t, s in self.joints if t >= since]
        return max(recent) if recent else None

    def call_reset(self, timeout: float = 20.0) -> bool:
        if not self.reset.wait_for_service(timeout_sec=timeout):
            return False
        future = self.reset.call_async(Trigger.Request())
        return wait(future.done, timeout) and future.result().success


def start_pick_observed(graph: Graph, seen: Observer, timeout: float = START_TIMEOUT) -> bool:
    """Start the held-back pick once ``seen`` receives the robot, and wait until it has matched
    the pick's state publisher: every state from then on reaches it (the short ``pre``, 1.2 s,
    was missed on a quiet machine when the observer matched after the pick had started)."""
    if not wait(seen.robot_seen, timeout):
        return False
    graph.start("pick")
    return wait(seen.pick_connected, timeout)


def latched_rejoin(context, timeout: float = 15.0) -> dict[str, float | None]:
    """Seconds until a fresh subscriber receives ``/tf_static`` and ``robot_description``
    (None: not within ``timeout``)."""
    node = rclpy.create_node("crash_rejoin_probe", context=context)
    got: dict[str, float | None] = {"tf_static": None, "robot_description": None}
    t0 = time.monotonic()

    def seen(key: str) -> Callable:
        return lambda _msg: got.__setitem__(key, got[key] or time.monotonic() - t0)

    node.create_subscription(TFMessage, interfaces.TF_STATIC, seen("tf_static"), LATCHED)
    node.create_subscription(
        String, interfaces.ROBOT_DESCRIPTION, seen("robot_description"), LATCHED
    )
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    while None in got.values() and time.monotonic() - t0 < timeout:
        executor.spin_once(timeout_sec=0.05)
    executor.remove_node(node)
    node.destroy_node()
    return got


class TrajectoryClient:
    """A user's client of the trajectory node (``/trajectory/follow_joint_trajectory``) that
    also watches the arm's joint speeds, spun on a thread of its own."""

    def __init__(self, context, joints: list[str]) -> None:
        self.joints = joints
        self.node = rclpy.create_node("crash_trajectory_client", context=context)
        self.client = ActionClient(
            self.node, FollowJointTrajectory, "/trajectory/follow_joint_trajectory"
        )
        self.speeds: list[tuple[float, float]] = []  # (wall, largest joint speed [rad/s])
        self.node.create_subscription(
            JointState,
            interfaces.JOINT_STATES,
            lambda m: self.speeds.append((time.monotonic(), max(abs(v) for v in m.velocity))),
            stream_qos(50),
        )
        self.spinning = Spinning(context, self.node)

    def close(self) -> None:
        self.spinning.close()

    def speed(self, since: float) -> float | None:
        recent = [v for t, v in self.speeds if t >= since]
        return max(recent) if recent else None

    def send(self, q: list[float], seconds: int = 2, timeout: float = 60.0):
        """A one-point goal to ``q`` [rad] in ``seconds``: its handle once accepted, None if not
        within ``timeout``. A node just started rejects goals until its first joint states, and
        a request sent before it discovered this client is lost unanswered (a killed server
        lingers in discovery, so ``wait_for_server`` says ready): resent after 3 s without an
        answer."""
        goal = FollowJointTrajectory.Goal()
        goal.trajectory.joint_names = self.joints
        point = JointTrajectoryPoint(positions=[float(v) for v in q])
        point.time_from_start.sec = seconds
        goal.trajectory.points = [point]
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if not self.client.wait_for_server(timeout_sec=max(0.1, end - time.monotonic())):
                return None
            future = self.client.send_goal_async(goal)
            if wait(future.done, 3.0) and future.result().accepted:
                return future.result()
            time.sleep(0.5)
        return None
