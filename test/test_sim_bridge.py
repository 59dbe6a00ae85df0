"""The sim bridge as other nodes see it: a separate process over real DDS, driven through the
standard ros2_control interfaces (FollowJointTrajectory, GripperCommand, /joint_states, /clock,
per-jaw wrenches). The bridge runs at real_time_factor 5 to keep the tests short."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from physai_ros import interfaces as names
from physai_ros.models.joints import PANDA_ARM_JOINTS, SO101_ARM_JOINTS

pytestmark = pytest.mark.dds

DISCOVERY_TIMEOUT = 30.0  # [s wall] bridge start-up (MuJoCo compile) + Fast DDS discovery
GOAL_TOL = 0.02  # [rad] final joint error accepted (the bridge's own goal tolerance, SO-101)
JAW_OPEN, JAW_CLOSED = 0.85, -0.17453  # [rad] config/pick.yaml


class Client:
    """A test-side node: action clients, latest joint state / jaw wrenches, /clock samples."""

    def __init__(self, context) -> None:
        import rclpy
        from control_msgs.action import FollowJointTrajectory, GripperCommand
        from geometry_msgs.msg import WrenchStamped
        from rclpy.action import ActionClient
        from rosgraph_msgs.msg import Clock
        from sensor_msgs.msg import JointState

        self.context = context
        self.node = rclpy.create_node("sim_bridge_test_client", context=context)
        self.executor = rclpy.executors.SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.arm = ActionClient(self.node, FollowJointTrajectory, names.FOLLOW_JOINT_TRAJECTORY)
        self.gripper = ActionClient(self.node, GripperCommand, names.GRIPPER_COMMAND)
        self.joint_state: JointState | None = None
        self.clock: list[float] = []
        self.wrench: dict[str, WrenchStamped] = {}
        self.node.create_subscription(JointState, names.JOINT_STATES, self._on_state, 10)
        self.node.create_subscription(
            Clock,
            names.CLOCK,
            lambda m: self.clock.append(m.clock.sec + m.clock.nanosec * 1e-9),
            10,
        )
        for jaw in ("fixed_jaw", "moving_jaw"):
            self.node.create_subscription(
                WrenchStamped,
                f"{names.JAW_CONTACT_PREFIX}/{jaw}",
                lambda m, jaw=jaw: self.wrench.__setitem__(jaw, m),
                10,
            )

    def _on_state(self, msg) -> None:
        self.joint_state = msg

    def spin_until(self, predicate, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not predicate():
            self.executor.spin_once(timeout_sec=0.02)
        return bool(predicate())

    def wait_ready(self, bridge) -> None:
        ready = self.spin_until(
            lambda: (
                self.arm.server_is_ready()
                and self.gripper.server_is_ready()
                and self.joint_state is not None
            ),
            DISCOVERY_TIMEOUT,
        )
        if not ready:
            out = bridge.stdout.read() if bridge.poll() is not None else "(still running)"
            pytest.fail(f"sim bridge not ready within {DISCOVERY_TIMEOUT} s; it said: {out}")

    def positions(self, joints) -> np.ndarray:
        index = {n: i for i, n in enumerate(self.joint_state.name)}
        return np.array([self.joint_state.position[index[j]] for j in joints])

    def send(self, client, goal, timeout: float = 10.0):
        future = client.send_goal_async(goal)
        assert self.spin_until(future.done, timeout), "no goal response"
        return future.result()

    def result(self, handle, timeout: float = 30.0):
        future = handle.get_result_async()
        assert self.spin_until(future.done, timeout), "no result"
        return future.result()

    def close(self) -> None:
        self.executor.remove_node(self.node)
        self.node.destroy_node()


def trajectory_goal(joints, points, velocities=None):
    """FollowJointTrajectory goal from [(time [s], positions)]."""
    from builtin_interfaces.msg import Duration
    from control_msgs.action import FollowJointTrajectory
    from trajectory_msgs.msg import JointTrajectoryPoint

    goal = FollowJointTrajectory.Goal()
    goal.trajectory.joint_names = list(joints)
    for i, (t, q) in enumerate(points):
        point = JointTrajectoryPoint(positions=[float(x) for x in q])
        if velocities is not None:
            point.velocities = [float(x) for x in velocities[i]]
        sec = int(t)
        point.time_from_start = Duration(sec=sec, nanosec=round((t - sec) * 1e9))
        goal.trajectory.points.append(point)
    return goal


def gripper_goal(position: float, max_effort: float = 0.0):
    from control_msgs.action import GripperCommand

    goal = GripperCommand.Goal()
    goal.command.position = position
    goal.command.max_effort = max_effort
    return goal


def start_bridge(spawn, robot: str, rtf: float = 5.0):
    return spawn(
        "physai_ros.nodes.sim_bridge",
        "--ros-args",
        "-p",
        f"robot:={robot}",
        "-p",
        f"real_time_factor:={rtf}",
        module=True,
    )


def test_so101_trajectory_gripper_rejections_and_clock(ros_context, spawn):
    from action_msgs.msg import GoalStatus
    from control_msgs.action import FollowJointTrajectory

    from physai_ros.core.motion.kinematics import solve_ik
    from physai_ros.sim.mujoco_sim import MujocoSim

    bridge = start_bridge(spawn, "so101")
    client = Client(ros_context)
    client.wait_ready(bridge)
    arm = SO101_ARM_JOINTS

    # /clock advances in sim time, 5x faster than the wall clock. Over 2 s of wall time, so a
    # client that takes the first message late (a loaded machine) errs by a tenth at most.
    client.clock.clear()
    wall = time.monotonic()
    assert client.spin_until(
        lambda: len(client.clock) >= 2 and client.clock[-1] > client.clock[0] + 10.0, 20.0
    )
    rate = (client.clock[-1] - client.clock[0]) / (time.monotonic() - wall)
    assert 2.0 < rate < 6.0, rate  # ~5 (a loaded machine may run slower)

    # malformed goals are rejected and the arm holds
    before = client.positions(arm)
    bad_goals = {
        "unknown joint": trajectory_goal((*arm[:4], "elbow"), [(1.0, [0.1] * 5)]),
        "NaN": trajectory_goal(arm, [(1.0, [0.1, math.nan, 0, 0, 0])]),
        "backwards time": trajectory_goal(arm, [(2.0, [0.1] * 5), (1.0, [0.2] * 5)]),
        "out of range": trajectory_goal(arm, [(1.0, [0.0, 0.0, 2.5, 0.0, 0.0])]),
        "missing joint": trajectory_goal(arm[:4], [(1.0, [0.1] * 4)]),
    }
    for label, goal in bad_goals.items():
        assert not client.send(client.arm, goal).accepted, label
    stamp = client.joint_state.header.stamp
    client.spin_until(lambda: client.joint_state.header.stamp.sec > stamp.sec + 1, 5.0)
    np.testing.assert_allclose(client.positions(arm), before, atol=1e-3)

    # a multi-point trajectory (cubic: positions + velocities) ends within tolerance
    wave = np.array([0.4, -0.5, 0.6, -0.4, 0.8])
    points = [(1.0, wave), (2.0, -0.5 * wave), (3.0, 0.25 * wave)]
    goal = trajectory_goal(arm, points, velocities=[0.3 * wave, -0.2 * wave, np.zeros(5)])
    handle = client.send(client.arm, goal)
    assert handle.accepted
    response = client.result(handle)
    assert response.status == GoalStatus.STATUS_SUCCEEDED
    assert response.result.error_code == FollowJointTrajectory.Result.SUCCESSFUL
    client.spin_until(lambda: False, 0.3)
    np.testing.assert_allclose(client.positions(arm), 0.25 * wave, atol=GOAL_TOL)

    # preemption: a second goal replaces a long first one, which ends ABORTED ("preempted")
    slow = client.send(client.arm, trajectory_goal(arm, [(20.0, [0.5, 0.0, 0.0, 0.0, 0.0])]))
    assert slow.accepted
    client.spin_until(lambda: False, 0.5)
    fast = client.send(client.arm, trajectory_goal(arm, [(1.0, [-0.3, 0.1, 0.2, 0.0, 0.0])]))
    assert fast.accepted
    first = client.result(slow)
    assert first.status == GoalStatus.STATUS_ABORTED and "preempted" in first.result.error_string
    assert client.result(fast).status == GoalStatus.STATUS_SUCCEEDED
    client.spin_until(lambda: False, 0.3)
    np.testing.assert_allclose(client.positions(arm), [-0.3, 0.1, 0.2, 0.0, 0.0], atol=GOAL_TOL)

    # cancel: the arm stops where it is and holds
    long_goal = client.send(client.arm, trajectory_goal(arm, [(20.0, [0.6, 0.0, 0.0, 0.0, 0.0])]))
    client.spin_until(lambda: False, 0.5)
    cancel = long_goal.cancel_goal_async()
    assert client.spin_until(cancel.done, 5.0)
    assert client.result(long_goal).status == GoalStatus.STATUS_CANCELED
    client.spin_until(lambda: False, 0.3)
    held = client.positions(arm)
    client.spin_until(lambda: False, 0.5)
    np.testing.assert_allclose(client.positions(arm), held, atol=2e-3)
    assert -0.3 < held[0] < 0.6  # stopped on the way

    # the JointTrajectory topic replaces the current trajectory; /sim/reset brings the arm home
    from std_srvs.srv import Trigger
    from trajectory_msgs.msg import JointTrajectory

    topic = client.node.create_publisher(JointTrajectory, names.JOINT_TRAJECTORY, 10)
    assert client.spin_until(lambda: topic.get_subscription_count() > 0, 10.0)
    topic.publish(trajectory_goal(arm, [(0.5, [0.2, 0.1, 0.1, 0.1, 0.1])]).trajectory)
    target = np.array([0.2, 0.1, 0.1, 0.1, 0.1])
    assert client.spin_until(
        lambda: np.abs(client.positions(arm) - target).max() < GOAL_TOL, 10.0
    ), client.positions(arm)
    reset = client.node.create_client(Trigger, names.SIM_RESET)
    assert reset.wait_for_service(timeout_sec=10.0)
    reply = reset.call_async(Trigger.Request())
    assert client.spin_until(reply.done, 10.0) and reply.result().success
    assert client.spin_until(lambda: np.abs(client.positions(arm)).max() < GOAL_TOL, 10.0)

    # grasp: open, move over the cube and down (IK in this process on the same scene), close
    sim = MujocoSim("so101")
    cube, _ = sim.cube_pose()
    x_axis, z_axis = np.array([0.0, 0.0, -1.0]), np.array([0.0, 1.0, 0.0])
    quat = np.empty(4)
    import mujoco

    mujoco.mju_mat2Quat(quat, np.column_stack([x_axis, np.cross(z_axis, x_axis), z_axis]).ravel())
    site, q0 = "gripperframe", np.zeros(5)
    pre = solve_ik(sim.model, sim.data, site, cube + np.array([0, 0, 0.055]), arm, q0, quat)
    down = solve_ik(sim.model, sim.data, site, cube - np.array([0, 0, 0.004]), arm, pre.q, quat)
    assert pre.converged and down.converged

    opened = client.result(client.send(client.gripper, gripper_goal(JAW_OPEN)))
    assert opened.status == GoalStatus.STATUS_SUCCEEDED and opened.result.reached_goal
    moved = client.result(
        client.send(client.arm, trajectory_goal(arm, [(2.0, pre.q), (3.0, down.q)]))
    )
    assert moved.status == GoalStatus.STATUS_SUCCEEDED, moved.result.error_string
    closed = client.result(client.send(client.gripper, gripper_goal(JAW_CLOSED, 2.94)))
    assert closed.status == GoalStatus.STATUS_SUCCEEDED
    assert closed.result.stalled and not closed.result.reached_goal
    assert closed.result.position > JAW_CLOSED + 0.1  # the cube stopped the jaw
    assert abs(closed.result.effort) == pytest.approx(2.94, rel=1e-3)
    client.wrench.clear()
    assert client.spin_until(lambda: len(client.wrench) == 2, 5.0)
    for jaw, msg in client.wrench.items():
        f = msg.wrench.force
        assert math.hypot(f.x, f.y, f.z) > 5.0, (jaw, f)  # both jaws squeeze the cube
    client.close()


def test_panda_follows_a_multi_point_trajectory(ros_context, spawn):
    from action_msgs.msg import GoalStatus

    bridge = start_bridge(spawn, "panda")
    client = Client(ros_context)
    client.wait_ready(bridge)
    arm = list(PANDA_ARM_JOINTS)
    home = client.positions(arm)
    delta = np.array([0.6, 0.4, -0.4, 0.5, 0.5, -0.4, 0.6])
    points = [(1.0, home + 0.5 * delta), (2.0, home + delta), (3.0, home - 0.3 * delta)]
    handle = client.send(client.arm, trajectory_goal(arm, points))
    assert handle.accepted
    response = client.result(handle)
    assert response.status == GoalStatus.STATUS_SUCCEEDED, response.result.error_string
    client.spin_until(lambda: False, 0.3)
    np.testing.assert_allclose(client.positions(arm), home - 0.3 * delta, atol=0.01)
    client.close()


def test_client_dying_mid_goal_leaves_the_arm_holding_its_last_target(ros_context, spawn):
    """Killed with SIGKILL (no cancel sent), the client's goal still ends at its last point and
    the arm holds there."""
    import os
    import signal

    from support.paths import PEERS

    bridge = start_bridge(spawn, "so101", rtf=1.0)
    client = Client(ros_context)
    try:
        client.wait_ready(bridge)
        arm = list(SO101_ARM_JOINTS)
        target = [0.3, -0.2, 0.25, 0.15, -0.3]
        peer = spawn(
            str(PEERS / "trajectory_client_dies.py"),
            names.FOLLOW_JOINT_TRAJECTORY,
            ",".join(arm),
            ",".join(map(str, target)),
            "2.0",
        )
        assert peer.stdout.readline().strip() == "accepted"
        os.killpg(peer.pid, signal.SIGKILL)  # mid-goal: the trajectory lasts 2 s of sim time
        peer.wait()
        client.spin_until(lambda: False, 0.3)
        moving = client.positions(arm)
        assert not np.allclose(moving, target, atol=GOAL_TOL), "killed before the goal ended"
        assert client.spin_until(
            lambda: np.allclose(client.positions(arm), target, atol=GOAL_TOL), 20.0
        ), f"arm at {client.positions(arm)}, target {target}"
        client.spin_until(lambda: False, 1.0)  # and it stays there
        np.testing.assert_allclose(client.positions(arm), target, atol=GOAL_TOL)
    finally:
        client.close()


def test_free_running_bridge_sends_every_stream_in_sim_time_order(ros_context, spawn):
    """real_time_factor 0 sends in bursts: what arrives is still in order, on the 100 Hz
    sim-time grid, joint states stamped on the same grid, and goals still run to the end."""
    from action_msgs.msg import GoalStatus
    from sensor_msgs.msg import JointState

    bridge = start_bridge(spawn, "so101", rtf=0.0)
    client = Client(ros_context)
    client.wait_ready(bridge)
    stamps: list[float] = []
    client.node.create_subscription(
        JointState,
        names.JOINT_STATES,
        lambda m: stamps.append(m.header.stamp.sec + m.header.stamp.nanosec * 1e-9),
        1000,
    )
    client.clock.clear()
    wall = time.monotonic()
    assert client.spin_until(lambda: len(stamps) > 200 and len(client.clock) > 200, 20.0)
    rate = (client.clock[-1] - client.clock[0]) / (time.monotonic() - wall)
    assert rate > 5.0, f"free-running bridge advanced only {rate:.1f} sim s per wall s"
    for series in (client.clock, stamps):
        steps = np.diff(series)
        assert np.all(steps > 0), "a stamp went backwards or repeated"
        ticks = steps / 0.01  # default /clock and /joint_states rate: 100 Hz sim time
        np.testing.assert_allclose(ticks, np.round(ticks), atol=1e-6)
        # on the grid from sim time 0, the first tick included (it once went out a step late)
        grid = np.asarray(series) / 0.01
        np.testing.assert_allclose(grid, np.round(grid), atol=1e-6)
    arm = list(SO101_ARM_JOINTS)
    target = client.positions(arm) + 0.2
    handle = client.send(client.arm, trajectory_goal(arm, [(1.0, target)]))
    assert handle.accepted
    response = client.result(handle)
    assert response.status == GoalStatus.STATUS_SUCCEEDED, response.result.error_string
    client.spin_until(lambda: False, 0.2)
    np.testing.assert_allclose(client.positions(arm), target, atol=GOAL_TOL)
    client.close()
