"""The pick as an action (``/pick``, ``physai_ros_interfaces/action/Pick``), used as users use
it: the shipped launch file on a colcon-built install (``ros2 launch physai_ros pick.launch.py
sim:=true``: one pick at start, then goals), goals from ROS 2's own ``ros2 action send_goal``
and from a Python action client in this process, the cube put back between goals by the sim
bridge's ``/sim/reset``.

What a result says is checked against the simulation's own truth where it matters (the cube's
pose and the jaws' contact forces from the sim bridge), not only against the node's verdict.
"""

from __future__ import annotations

import json
import math
import re
import shlex
import threading
import time

import pytest
import rclpy
from action_msgs.msg import GoalStatus
from geometry_msgs.msg import PoseStamped, WrenchStamped
from rclpy.action import ActionClient
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger
from support.optional import require
from support.paths import REPO_ROOT, shipped
from support.processes import ros2_output

Pick = require("physai_ros_interfaces.action").Pick

pytestmark = [pytest.mark.dds, pytest.mark.slow]

JAWS = ("fixed_jaw", "moving_jaw")
ARM = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll")
MIN_LIFT = shipped("pick", "min_lift")  # [m] the pick's own threshold for "held"
TOUCH = shipped("pick", "ros", "touch_force")  # [N] a jaw touches the object above this
GRAPH_UP = 150.0  # [s wall] the launch's graph up and the start's pick judged, 2 loaded cores
GOAL_TIMEOUT = 90.0  # [s wall] one pick goal, sent to its result


class Client:
    """The test's node: the /pick action client, the /sim/reset client, the start's outcome,
    and the sim bridge's truth (the cube's pose, each jaw's contact force, the joints)."""

    def __init__(self, context) -> None:
        self.node = node = rclpy.create_node("pick_action_client", context=context)
        self.pick = ActionClient(node, Pick, "/pick")
        self.reset_client = node.create_client(Trigger, "/sim/reset")
        self.outcome: dict | None = None
        self.cube: list[tuple[float, float, float]] = []  # (wall [s], x [m], z [m])
        # the latest cube pose: (wall [s], centre (x, y, z) [m], quaternion (w, x, y, z))
        self.cube_pose: tuple[float, tuple[float, ...], tuple[float, ...]] | None = None
        self.forces = dict.fromkeys(JAWS, (0.0, 0.0))  # jaw: (wall [s], force [N]), latest
        self.joints: dict[str, float] = {}
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        node.create_subscription(String, "/pick/outcome", self._outcome, latched)
        node.create_subscription(PoseStamped, "/cube_pose", self._cube, 10)
        node.create_subscription(JointState, "/joint_states", self._joints, 10)
        for jaw in JAWS:
            node.create_subscription(
                WrenchStamped, f"/jaw_contact/{jaw}", lambda m, j=jaw: self._force(j, m), 10
            )
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(node)
        self.lock = threading.Lock()

    def _outcome(self, msg: String) -> None:
        self.outcome = json.loads(msg.data)

    def _cube(self, msg: PoseStamped) -> None:
        p, q = msg.pose.position, msg.pose.orientation
        self.cube.append((time.monotonic(), p.x, p.z))
        self.cube_pose = (time.monotonic(), (p.x, p.y, p.z), (q.w, q.x, q.y, q.z))

    def _joints(self, msg: JointState) -> None:
        self.joints.update(zip(msg.name, msg.position, strict=False))

    def _force(self, jaw: str, msg: WrenchStamped) -> None:
        f = msg.wrench.force
        self.forces[jaw] = (time.monotonic(), math.sqrt(f.x**2 + f.y**2 + f.z**2))

    def spin_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.05)

    def wait(self, future, timeout: float):
        self.executor.spin_until_future_complete(future, timeout_sec=timeout)
        assert future.done(), f"no answer within {timeout} s"
        return future.result()

    def start_outcome(self) -> dict:
        end = time.monotonic() + GRAPH_UP
        while self.outcome is None and time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.1)
        assert self.outcome is not None, "the start's pick published no outcome"
        return self.outcome

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

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()


def readme_command(start: str) -> list[str]:
    """The README's command line that begins with ``start``, as ``ros2``'s arguments: the test
    runs what the README tells users to run."""
    for line in (REPO_ROOT / "README.md").read_text().splitlines():
        if line.startswith(start):
            return shlex.split(line)[1:]
    raise AssertionError(f"README.md has no line starting {start!r}")


def launch_graph(ros2, tmp_path, context) -> Client:
    """The shipped launch, as a user starts it, and this test's client, created first so it
    sees the cube at rest."""
    client = Client(context)
    ros2("launch", "physai_ros", "pick.launch.py", "sim:=true", log=tmp_path / "launch.log")
    return client


def test_ros2_action_send_goal_picks_after_the_start_pick(ros2, ros_context, tmp_path):
    """After the start's pick, the cube reset by ``ros2 service call /sim/reset``, one goal
    from ``ros2 action send_goal`` (the README's line): the typed result says HELD, lifted at
    least min_lift, and the goal SUCCEEDED."""
    client = launch_graph(ros2, tmp_path, ros_context)
    try:
        start = client.start_outcome()
        assert start["outcome"] == "held", start
        ros2_output(ros2("service", "call", "/sim/reset", "std_srvs/srv/Trigger"))
        client.spin_for(1.0)
        out = ros2_output(ros2(*readme_command("ros2 action send_goal")), timeout=GOAL_TIMEOUT)
    finally:
        client.close()
    print(out)
    assert "Result:" in out, out
    out = out.split("Result:", 1)[1]  # (the feedback lines before it have a lift too)
    outcome = re.search(r"^\s*outcome: (\d+)$", out, re.MULTILINE)
    lift = re.search(r"^\s*lift: ([-0-9.eE+]+)$", out, re.MULTILINE)
    assert outcome and lift, out
    assert int(outcome.group(1)) == Pick.Result.HELD, out
    assert float(lift.group(1)) >= MIN_LIFT, out
    assert "SUCCEEDED" in out, out


def set_param(ros2, node: str, name: str, value: str, timeout: float = 60.0) -> None:
    """``ros2 param set``, again while the command line's discovery has not found the node
    yet ("Node not found": a fresh ``ros2`` process, or its daemon, may not have seen a node
    the test's own client already talks to)."""
    end = time.monotonic() + timeout
    while True:
        out = ros2("param", "set", node, name, value).communicate(timeout=60)[0]
        if "Node not found" not in out or time.monotonic() > end:
            break
        time.sleep(1.0)
    assert "Set parameter successful" in out, out


def test_action_client_goals_rejections_and_cancel(ros2, ros_context, tmp_path):
    """One graph, a Python action client: a goal sent while the start's pick runs is refused
    (busy); an unknown frame is refused with the reason and nothing moves; the cube reset to
    another place (the bridge's cube_x), a goal picks and holds it there (feedback on the way);
    a second goal canceled during lift ends
    CANCELED in lift with the cube still squeezed in the jaws (the sim bridge's truth); a goal
    past its time limit aborts, saying so."""
    client = launch_graph(ros2, tmp_path, ros_context)
    try:
        # busy: the start's pick is running (or waiting to start) when the server is up
        status, result, _ = client.send(Pick.Goal(object_frame="cube"))
        assert result.outcome == Pick.Result.REJECTED, result
        assert "one goal at a time" in result.reason, result
        assert status == GoalStatus.STATUS_ABORTED
        assert client.start_outcome()["outcome"] == "held"

        # an unknown frame: refused with the reason, the arm not moved
        client.reset()
        before = client.arm()
        status, result, _ = client.send(Pick.Goal(object_frame="no_such_object"))
        assert result.outcome == Pick.Result.REJECTED, result
        assert "unknown TF frame 'no_such_object'" in result.reason, result
        assert "cube" in result.reason  # the frames it knows, named
        client.spin_for(1.0)
        moved = max(abs(a - b) for a, b in zip(client.arm(), before, strict=True))
        assert moved < 1e-3, f"the arm moved {moved:.4f} rad for a rejected goal"

        # the cube put elsewhere for the next goal: the bridge's cube_x, then a reset
        set_param(ros2, "/sim_bridge", "cube_x", "0.2")
        client.reset()
        x, _ = client.cube_xz(time.monotonic() - 0.5)
        assert abs(x - 0.2) < 0.002, f"the reset put the cube at x = {x:.4f} m, not 0.2 m"

        # a goal: held, lifted, with feedback on the way
        states: list[str] = []
        status, result, _ = client.send(
            Pick.Goal(object_frame="cube", time_limit=60.0),
            on_feedback=lambda f: states.append(f.feedback.state),
        )
        assert result.outcome == Pick.Result.HELD, result
        assert status == GoalStatus.STATUS_SUCCEEDED
        assert result.lift >= MIN_LIFT and result.state == "done", result
        assert list(result.jaw_names) == list(JAWS) and min(result.jaw_forces) > TOUCH
        assert result.squeeze > 0.0 and result.duration > 0.0, result
        assert {"pre", "down", "close", "lift"} <= set(states), states

        # a second goal, canceled during lift: the arm stops, the jaw keeps the cube
        client.reset()
        _, rest_z = client.cube_xz(time.monotonic() - 0.5)
        canceled: list[float] = []

        def cancel_in_lift(feedback) -> None:
            f = feedback.feedback
            if f.state == "lift" and f.lift >= 0.01 and not canceled:
                canceled.append(time.monotonic())
                handles[0].cancel_goal_async()

        handles: list = []
        goal_future = client.pick.send_goal_async(
            Pick.Goal(object_frame="cube"), feedback_callback=cancel_in_lift
        )
        handles.append(client.wait(goal_future, 30.0))
        answer = client.wait(handles[0].get_result_async(), GOAL_TIMEOUT)
        result = answer.result
        assert canceled, "no lift feedback came to cancel on"
        assert answer.status == GoalStatus.STATUS_CANCELED, answer.status
        assert result.outcome == Pick.Result.CANCELED and result.state == "lift", result
        assert "the object is in both jaws" in result.reason, result
        client.spin_for(2.0)  # the arm held where it stopped; a dropped cube would be down
        _, z = client.cube_xz(canceled[0] + 1.5)
        assert z - rest_z > 0.005, f"the cube is at {z:.4f} m, rest {rest_z:.4f} m: dropped"
        for jaw, (wall, force) in client.forces.items():
            assert wall > canceled[0] + 1.5 and force > TOUCH, (jaw, force)

        # a goal past its time limit aborts (the arm goes home) and says why
        client.reset()
        status, result, _ = client.send(Pick.Goal(object_frame="cube", time_limit=1.0))
        assert status == GoalStatus.STATUS_ABORTED
        assert result.outcome == Pick.Result.ABORTED, result
        assert result.reason == "time limit 1 s reached" and result.state == "aborted", result
        assert result.duration >= 1.0, result
    finally:
        client.close()


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


CUBE_HALF = 0.015  # [m] half the sim's cube: its centre's height resting on the table
CUBE_X0 = 0.22  # [m] the sim bridge's cube_x at start (the SO-101 scene's cube)
# place centres [m] inside the reachable square (docs/pick.md, PLACE_SQUARE), and the cube's x
# for the reset before each (the bridge's cube_x): different picks, different places
PLACES = ((0.19, 0.02, 0.22), (0.215, -0.02, 0.22), (0.18, -0.01, 0.2))


def test_place_goals_put_the_cube_down_where_asked(ros2, ros_context, tmp_path):
    """On the launched graph, after the start's pick: bad place poses (below the table, out
    of reach, another frame) are refused with the reason and the arm does not move; then
    the cube, reset each time, is picked and placed at three positions: each goal ends PLACED
    (SUCCEEDED), judged by the cube's pose, and the sim bridge's own cube pose says it rests
    within 1 cm of the place pose, tilted less than 10 degrees, no jaw touching it."""
    client = launch_graph(ros2, tmp_path, ros_context)
    try:
        assert client.start_outcome()["outcome"] == "held"
        client.reset()
        before = client.arm()
        refused = {
            "below the table top": place_goal(0.2, 0.0, -0.02),
            "out of reach": place_goal(0.45, 0.0, CUBE_HALF),
            "in frame 'camera'": place_goal(0.2, 0.0, CUBE_HALF, frame="camera"),
        }
        for why, goal in refused.items():
            status, result, _ = client.send(goal)
            assert result.outcome == Pick.Result.REJECTED, result
            assert status == GoalStatus.STATUS_ABORTED
            assert why in result.reason, (why, result.reason)
            print(f"refused: {result.reason}")
        client.spin_for(1.0)
        moved = max(abs(a - b) for a, b in zip(client.arm(), before, strict=True))
        assert moved < 1e-3, f"the arm moved {moved:.4f} rad for a rejected goal"

        # both signals are read; whichever comes first ends the lowering (on a loaded machine
        # the stall may come first every time: a CI run saw stall, stall, stall)
        place_all(client, ros2, {"load", "stall"}, CUBE_X0)
    finally:
        client.close()


def place_all(client: Client, ros2, support_by: set[str], cube_x0: float) -> list[str]:
    """Reset the cube (at each PLACES' cube_x; the bridge starts with ``cube_x0``) and place it
    at each of PLACES: PLACED and SUCCEEDED, judged by the cube's pose, the support sensed by
    one of ``support_by``, and the sim bridge's own cube pose within 1 cm of the place pose,
    upright, no jaw touching it. Returns which signal sensed each support."""
    signals = []
    for x, y, cube_x in PLACES:
        if cube_x != cube_x0:
            ros2_output(ros2("param", "set", "/sim_bridge", "cube_x", str(cube_x)))
            cube_x0 = cube_x
        client.reset()
        states: list[str] = []
        status, result, _ = client.send(
            place_goal(x, y, CUBE_HALF),
            on_feedback=lambda f, seen=states: seen.append(f.feedback.state),
        )
        assert result.outcome == Pick.Result.PLACED, result
        assert status == GoalStatus.STATUS_SUCCEEDED
        assert result.state == "placed" and result.judged_by == "cube_pose", result
        # (lower can end within one feedback period: its support shows in the outcome)
        assert {"carry", "descend", "open", "retreat"} <= set(states), states
        done = time.monotonic()
        client.spin_for(1.0)
        place = client.outcome["place"]  # this goal's outcome JSON (latched, came by now)
        assert place["target_m"] == [x, y, CUBE_HALF], place
        assert place["support_by"] in support_by, place
        signals.append(place["support_by"])
        wall, centre, quat = client.cube_pose
        assert wall > done + 0.5, "no fresh cube pose from the sim bridge"
        error = math.dist(centre, (x, y, CUBE_HALF))
        tilt = tilt_deg(quat)
        print(f"place ({x}, {y}) by {signals[-1]}: truth {error * 100:.2f} cm, tilt {tilt:.2f} deg")
        print(f"  result: {result.reason}")
        assert error <= 0.01, f"the cube rests {error * 100:.2f} cm from ({x}, {y})"
        assert tilt < 10.0, f"the cube is tilted {tilt:.1f} deg"
        for jaw, (_, force) in client.forces.items():
            assert force <= TOUCH, f"{jaw} still touches the cube: {force:.3f} N"
    return signals


def test_place_by_the_arms_stall_alone(ros2, ros_context, tmp_path):
    """The nodes run one by one (``ros2 run``), the pick with ``place_load`` false, as on a
    robot whose jaw wrenches are only the grip's squeeze: the support is sensed by the arm's
    stall, and the cube still rests within 1 cm of each place pose, upright."""
    client = Client(ros_context)
    sim = ("--ros-args", "-p", "use_sim_time:=true")
    ros2("run", "physai_ros", "sim_bridge", log=tmp_path / "sim_bridge.log")
    ros2("run", "physai_ros", "tf_publisher", *sim, log=tmp_path / "tf_publisher.log")
    ros2(
        "run",
        "physai_ros",
        "pick",
        *sim,
        "-p",
        "place_load:=false",
        "-p",
        "autostart:=false",
        log=tmp_path / "pick.log",
    )
    try:
        assert client.pick.wait_for_server(timeout_sec=GRAPH_UP), "no /pick action server"
        assert client.reset_client.wait_for_service(timeout_sec=GRAPH_UP), "no sim bridge"
        place_all(client, ros2, {"stall"}, CUBE_X0)
    finally:
        client.close()
