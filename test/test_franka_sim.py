"""Code written for a real Franka, run against the simulated Panda: a separate client process
over real DDS that knows only franka_ros2's names and types -- the arm controller's
FollowJointTrajectory, franka_gripper's Homing/Move/Grasp and GripperCommand, joints named
panda_joint1..7 (FR3: fr3_...). The bridge runs at real_time_factor 5."""

from __future__ import annotations

import time

import numpy as np
import pytest
from test_mujoco_sim import panda_grasp_configurations
from test_sim_bridge import trajectory_goal

from physai_ros.models.joints import PANDA_ARM_JOINTS

pytestmark = pytest.mark.dds

DISCOVERY_TIMEOUT = 30.0  # [s wall] bridge start-up (MuJoCo compile) + Fast DDS discovery
CUBE = 0.03  # [m]
REFLEX_TEXT = 'libfranka: Move command aborted: motion aborted by reflex! ["cartesian_reflex"]'


class FrankaClient:
    """A franka_ros2 user's node: absolute names, as on a real robot with arm_id ``arm``."""

    def __init__(self, context, arm: str, gripper: str) -> None:
        import rclpy
        from control_msgs.action import FollowJointTrajectory, GripperCommand
        from franka_msgs.action import Grasp, Homing, Move
        from rclpy.action import ActionClient
        from sensor_msgs.msg import JointState

        self.node = rclpy.create_node("franka_user", context=context)
        self.executor = rclpy.executors.SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.arm = ActionClient(
            self.node, FollowJointTrajectory, f"/{arm}_arm_controller/follow_joint_trajectory"
        )
        self.homing = ActionClient(self.node, Homing, f"/{gripper}/homing")
        self.move = ActionClient(self.node, Move, f"/{gripper}/move")
        self.grasp = ActionClient(self.node, Grasp, f"/{gripper}/grasp")
        self.gripper_action = ActionClient(self.node, GripperCommand, f"/{gripper}/gripper_action")
        self.states: dict[str, JointState] = {}
        for topic in ("/joint_states", f"/{gripper}/joint_states"):
            self.node.create_subscription(
                JointState, topic, lambda m, t=topic: self.states.__setitem__(t, m), 10
            )
        self.clients = (self.arm, self.homing, self.move, self.grasp, self.gripper_action)

    def spin_until(self, predicate, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not predicate():
            self.executor.spin_once(timeout_sec=0.02)
        return bool(predicate())

    def wait_ready(self, bridge) -> None:
        def ready() -> bool:
            return all(c.server_is_ready() for c in self.clients) and "/joint_states" in self.states

        if not self.spin_until(ready, DISCOVERY_TIMEOUT):
            out = bridge.stdout.read() if bridge.poll() is not None else "(still running)"
            pytest.fail(f"sim bridge not ready within {DISCOVERY_TIMEOUT} s; it said: {out}")

    def call(self, client, goal, timeout: float = 20.0):
        """Send, and wait for the result: (accepted, status, result)."""
        sent = client.send_goal_async(goal)
        assert self.spin_until(sent.done, 10.0), "no goal response"
        handle = sent.result()
        if not handle.accepted:
            return False, None, None
        done = handle.get_result_async()
        assert self.spin_until(done.done, timeout), "no result"
        return True, done.result().status, done.result().result

    def positions(self, names) -> np.ndarray:
        """Joint positions now: the joint states queued so far are taken in first."""
        self.spin_until(lambda: False, 0.3)
        msg = self.states["/joint_states"]
        index = {n: i for i, n in enumerate(msg.name)}
        return np.array([msg.position[index[n]] for n in names])

    def close(self) -> None:
        self.executor.remove_node(self.node)
        self.node.destroy_node()


def _params(assignments: list[str]) -> list[str]:
    return [arg for a in assignments for arg in ("-p", a)]


def start_bridge(spawn, profile: str):
    args = _params(["robot:=panda", f"franka_profile:={profile}", "real_time_factor:=5.0"])
    return spawn("physai_ros.nodes.sim_bridge", "--ros-args", *args, module=True)


def grasp_goal(width: float, force: float, epsilon: float = 0.005, speed: float = 0.1):
    from franka_msgs.action import Grasp

    goal = Grasp.Goal(width=width, speed=speed, force=force)
    goal.epsilon.inner = goal.epsilon.outer = epsilon
    return goal


def test_code_written_for_a_real_panda_runs_on_the_simulated_one(ros_context, spawn):
    from action_msgs.msg import GoalStatus
    from control_msgs.action import FollowJointTrajectory, GripperCommand
    from franka_msgs.action import Homing, Move
    from std_srvs.srv import Trigger
    from tf2_msgs.msg import TFMessage

    from physai_ros.sim.mujoco_sim import MujocoSim

    bridge = start_bridge(spawn, "panda")
    tf_args = ["robot:=panda", "joint_prefix:=panda_", "use_sim_time:=true"]
    spawn("physai_ros.nodes.tf_publisher", "--ros-args", *_params(tf_args), module=True)
    pre, down = panda_grasp_configurations(MujocoSim("panda"))  # IK here, on the same scene
    user = FrankaClient(ros_context, "panda", "panda_gripper")
    moving: set[str] = set()  # frames on /tf: the TF publisher reads the prefixed joint states
    user.node.create_subscription(
        TFMessage, "/tf", lambda m: moving.update(t.child_frame_id for t in m.transforms), 10
    )
    try:
        user.wait_ready(bridge)
        assert user.spin_until(lambda: {"link7", "left_finger"} <= moving, 20.0), moving
        joints = [f"panda_joint{i}" for i in range(1, 8)]
        assert user.states["/joint_states"].name == [
            *joints,
            "panda_finger_joint1",
            "panda_finger_joint2",
        ]
        SUCCEEDED, ABORTED = GoalStatus.STATUS_SUCCEEDED, GoalStatus.STATUS_ABORTED

        # names that are not the Panda's under franka_ros2 are refused, and nothing moves
        home = user.positions(joints)
        bare = list(PANDA_ARM_JOINTS)
        for names in (bare, [f"fr3_joint{i}" for i in range(1, 8)]):
            accepted, _, _ = user.call(user.arm, trajectory_goal(names, [(1.0, home)]))
            assert not accepted, names

        # homing, then down over the cube with panda_ names
        assert user.call(user.homing, Homing.Goal())[1:] == (SUCCEEDED, Homing.Result(success=True))
        _, status, result = user.call(user.arm, trajectory_goal(joints, [(1.0, pre), (2.0, down)]))
        assert status == SUCCEEDED and result.error_code == FollowJointTrajectory.Result.SUCCESSFUL
        np.testing.assert_allclose(user.positions(joints), down, atol=0.01)

        # grasp the 3 cm cube with 40 N: success; the fingers stay on it
        _, status, result = user.call(user.grasp, grasp_goal(CUBE, 40.0))
        assert (status, result.success, result.error) == (SUCCEEDED, True, "")
        fingers = user.positions(["panda_finger_joint1", "panda_finger_joint2"])
        assert 2.0 * fingers.mean() == pytest.approx(CUBE, abs=0.005)
        assert user.spin_until(lambda: "/panda_gripper/joint_states" in user.states, 5.0)

        # open, then a grasp of the wrong width fails: success false, the reason in error
        assert user.call(user.move, Move.Goal(width=0.07, speed=0.1))[1] == SUCCEEDED
        _, status, result = user.call(user.grasp, grasp_goal(0.05, 40.0))
        assert (status, result.success) == (ABORTED, False) and "outside" in result.error

        # a force the hand does not have fails before anything moves
        _, status, result = user.call(user.grasp, grasp_goal(CUBE, 500.0))
        assert status == ABORTED and "Command failed" in result.error

        # franka_gripper's GripperCommand: position per finger, result position the width
        goal = GripperCommand.Goal()
        goal.command.position = 0.035
        _, status, result = user.call(user.gripper_action, goal)
        assert status == SUCCEEDED and result.reached_goal
        assert result.position == pytest.approx(0.07, abs=0.005)

        # a slow move, cancelled: CANCELED, not a success; another, stopped by the service
        slow = Move.Goal(width=0.04, speed=0.005)
        sent = user.move.send_goal_async(slow)
        assert user.spin_until(sent.done, 10.0) and sent.result().accepted
        user.spin_until(lambda: False, 0.3)
        cancelled = sent.result().cancel_goal_async()
        done = sent.result().get_result_async()
        assert user.spin_until(lambda: cancelled.done() and done.done(), 10.0)
        assert done.result().status == GoalStatus.STATUS_CANCELED
        assert not done.result().result.success
        sent = user.move.send_goal_async(slow)
        assert user.spin_until(sent.done, 10.0) and sent.result().accepted
        stop = user.node.create_client(Trigger, "/panda_gripper/stop")
        assert stop.wait_for_service(timeout_sec=10.0)
        reply = stop.call_async(Trigger.Request())
        done = sent.result().get_result_async()
        assert user.spin_until(lambda: reply.done() and done.done(), 10.0)
        assert reply.result().success and done.result().status == ABORTED
        assert "stop service" in done.result().result.error
    finally:
        user.close()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["robot:=so101", "franka_profile:=panda"], "need robot panda"),
        (["robot:=panda", "franka_profile:=ur5"], "unknown franka profile 'ur5'"),
        (["robot:=panda", "arm_controller_name:=9lives"], "is not a ROS name"),
        (["robot:=panda", "joint_prefix:=panda joint"], "may hold only"),
        (["robot:=panda", "stand_in:=true"], "stand_in stands in for a real Franka"),
        (
            ["robot:=panda", "franka_profile:=fr3", "stand_in:=true", "real_time_factor:=5.0"],
            "real_time_factor 1",
        ),
    ],
)
def test_bridge_refuses_franka_settings_it_cannot_serve(spawn, ros_domain, args, says):
    bridge = spawn("physai_ros.nodes.sim_bridge", "--ros-args", *_params(args), module=True)
    out, _ = bridge.communicate(timeout=60)
    assert bridge.returncode != 0 and says in out, out


def test_fr3_profile_serves_fr3_names_and_limits(ros_context, spawn):
    """FR3 in sim: the Panda model under fr3_ names, franka_gripper's v2+ namespace, and the
    FR3's ranges (joint 6 may not go below 0.5445 rad, which the Panda's could)."""
    from action_msgs.msg import GoalStatus
    from franka_msgs.action import Move

    bridge = start_bridge(spawn, "fr3")
    user = FrankaClient(ros_context, "fr3", "franka_gripper")
    try:
        user.wait_ready(bridge)
        joints = [f"fr3_joint{i}" for i in range(1, 8)]
        home = user.positions(joints)
        low = home.copy()
        low[5] = 0.3  # inside the Panda's joint 6 range, outside the FR3's
        assert not user.call(user.arm, trajectory_goal(joints, [(2.0, low)]))[0]
        target = home + np.array([0.2, -0.1, 0.1, 0.2, 0.1, 0.2, 0.3])
        _, status, result = user.call(user.arm, trajectory_goal(joints, [(1.5, target)]))
        assert status == GoalStatus.STATUS_SUCCEEDED, result.error_string
        np.testing.assert_allclose(user.positions(joints), target, atol=0.01)
        _, status, result = user.call(user.move, Move.Goal(width=0.02, speed=0.05))
        assert status == GoalStatus.STATUS_SUCCEEDED and result.success
        width = 2.0 * user.positions(["fr3_finger_joint1"])[0]
        assert width == pytest.approx(0.02, abs=0.005)
    finally:
        user.close()


@pytest.mark.parametrize(
    ("args", "says", "ends_as_franka_ros2"),
    [
        (["franka_profile:=panda", "franka_fault:=cartesian_reflex"], REFLEX_TEXT, True),
        (["franka_profile:=panda", "franka_fault:=reflex"], "is not one of", False),
        (["franka_fault:=cartesian_reflex"], "needs franka_profile panda or fr3", False),
    ],
)
def test_a_panda_that_starts_in_error_ends_as_franka_ros2_v0113_does(
    spawn, ros_domain, args, says, ends_as_franka_ros2
):
    """franka_ros2 v0.1.13 lets libfranka's exception end ros2_control_node: under the Panda
    profile a robot error ends the bridge with C++'s words and SIGABRT (the first read of a
    Panda in error); an unknown error or no Franka profile is refused with the reason."""
    import signal

    bridge = spawn(
        "physai_ros.nodes.sim_bridge", "--ros-args", *_params(["robot:=panda", *args]),
        module=True,
    )  # fmt: skip
    out, _ = bridge.communicate(timeout=60)
    assert says in out, out
    if ends_as_franka_ros2:
        assert "terminate called after throwing an instance of" in out, out
        assert bridge.returncode == -signal.SIGABRT, (bridge.returncode, out)
    else:
        assert bridge.returncode not in (0, -signal.SIGABRT), (bridge.returncode, out)


def test_a_reflex_on_the_simulated_fr3_ends_and_recovers_as_franka_ros2_does(
    ros_context, spawn, ros2
):
    """A cartesian reflex injected mid-move: the goal aborts with joint_trajectory_controller's
    deactivation text, libfranka's text is logged at ERROR, the arm stops where it is, goals are
    refused and /joint_states repeats the arm's last state (franka_ros2's joint_state_publisher
    beside a deactivated broadcaster; the fingers live) until the user recovers in
    franka_hardware's documented order (ErrorRecovery, hardware active, controllers activated)
    with ROS 2's own tools; the gripper carries on meanwhile. Then a move succeeds."""
    from action_msgs.msg import GoalStatus
    from control_msgs.action import FollowJointTrajectory
    from franka_msgs.action import Move
    from rcl_interfaces.msg import Log
    from rclpy.parameter import Parameter
    from rclpy.parameter_client import AsyncParameterClient
    from support.processes import ros2_output, ros2_param

    bridge = start_bridge(spawn, "fr3")
    user = FrankaClient(ros_context, "fr3", "franka_gripper")
    errors: list[str] = []
    user.node.create_subscription(
        Log, "/rosout", lambda m: errors.append(m.msg) if m.level >= Log.ERROR else None, 100
    )
    joints = [f"fr3_joint{i}" for i in range(1, 8)]
    try:
        user.wait_ready(bridge)
        home = user.positions(joints)
        target = home + np.array([0.6, -0.3, 0.3, 0.4, 0.3, 0.4, 0.6])
        # 10 s of motion take 2 s (the bridge runs 5x real time); the reflex comes mid-move
        sent = user.arm.send_goal_async(trajectory_goal(joints, [(10.0, target)]))
        assert user.spin_until(sent.done, 10.0) and sent.result().accepted
        done = sent.result().get_result_async()
        assert user.spin_until(lambda: np.abs(user.positions(joints) - home).max() > 0.05, 10.0)
        parameters = AsyncParameterClient(user.node, "/sim_bridge")
        assert parameters.wait_for_services(10.0)
        reply = parameters.set_parameters([Parameter("franka_fault", value="cartesian_reflex")])
        assert user.spin_until(reply.done, 10.0) and reply.result().results[0].successful
        assert user.spin_until(done.done, 10.0)
        assert done.result().status == GoalStatus.STATUS_ABORTED
        result = done.result().result
        assert result.error_code == FollowJointTrajectory.Result.INVALID_GOAL
        assert result.error_string == "Current goal cancelled during deactivate transition."
        reflex = 'libfranka: Move command aborted: motion aborted by reflex! ["cartesian_reflex"]'
        assert user.spin_until(lambda: reflex in errors, 5.0), errors
        stopped = user.states["/joint_states"]
        stopped_at = np.array(stopped.position[:7])
        assert np.abs(stopped_at - target).max() > 0.2  # it did not get there

        # in error: /joint_states repeats the arm's last state, arm goals refused, clearing
        # the parameter refused
        user.spin_until(lambda: False, 1.0)
        repeated = user.states["/joint_states"]
        assert repeated is not stopped  # still published
        assert list(repeated.position[:7]) == list(stopped.position[:7])
        assert list(repeated.velocity[:7]) == list(stopped.velocity[:7])
        assert not user.call(user.arm, trajectory_goal(joints, [(1.0, home)]))[0]
        out = ros2_param(ros2, "set", "/sim_bridge", "franka_fault", "''")
        assert "Setting parameter failed" in out and "error_recovery" in out, out
        # franka_gripper is another connection: it carries on, and /joint_states shows it
        _, status, _ = user.call(user.move, Move.Goal(width=0.03, speed=0.1))
        assert status == GoalStatus.STATUS_SUCCEEDED
        user.spin_until(lambda: False, 0.3)
        width = 2.0 * user.positions(["fr3_finger_joint1"])[0]
        assert width == pytest.approx(0.03, abs=0.005)
        assert list(user.states["/joint_states"].position[:7]) == list(stopped.position[:7])

        # recovery, as franka_hardware's documentation gives it
        out = ros2_output(
            ros2(
                "action", "send_goal", "/action_server/error_recovery",
                "franka_msgs/action/ErrorRecovery", "{}",
            )
        )  # fmt: skip
        assert "SUCCEEDED" in out, out
        out = ros2_param(ros2, "get", "/sim_bridge", "franka_fault")
        assert 'String value is: ""' in out or "String value is: \n" in out, out
        switch = (
            "/controller_manager/switch_controller",
            "controller_manager_msgs/srv/SwitchController",
            "{activate_controllers: [fr3_arm_controller, joint_state_broadcaster], strictness: 2}",
        )
        out = ros2_output(ros2("service", "call", *switch))
        assert "ok=False" in out and "set it active first" in out, out  # hardware first
        out = ros2_output(
            ros2(
                "service", "call", "/controller_manager/set_hardware_component_state",
                "controller_manager_msgs/srv/SetHardwareComponentState",
                "{name: FrankaHardwareInterface, target_state: {id: 3, label: active}}",
            )
        )  # fmt: skip
        assert "ok=True" in out, out
        out = ros2_output(ros2("service", "call", *switch))
        assert "ok=True" in out, out
        assert user.spin_until(  # the broadcaster's live state again (the arm holds still)
            lambda: list(user.states["/joint_states"].velocity[:7]) != list(stopped.velocity[:7]),
            5.0,
        )
        # nothing moved the arm while it was in error: it holds where it stopped
        np.testing.assert_allclose(user.positions(joints), stopped_at, atol=0.02)
        _, status, result = user.call(user.arm, trajectory_goal(joints, [(3.0, home)]))
        assert status == GoalStatus.STATUS_SUCCEEDED, result.error_string
        np.testing.assert_allclose(user.positions(joints), home, atol=0.01)
    finally:
        user.close()


def test_standing_in_for_a_real_fr3_the_bridge_speaks_wall_time_and_measures_what_it_does(
    ros_context, spawn
):
    """``stand_in``: the bridge plays a real FR3 for a graph on wall time: its joint states and
    controller state are stamped with the wall clock, a goal stamped on the wall clock starts
    then, and it publishes nothing a real Franka does not (no /clock, no /cube_pose, no jaw
    wrenches); the cube's truth is a witness on ~/true_cube_pose."""
    import rclpy
    from action_msgs.msg import GoalStatus
    from geometry_msgs.msg import PoseStamped

    args = _params(["robot:=panda", "franka_profile:=fr3", "stand_in:=true"])
    bridge = spawn("physai_ros.nodes.sim_bridge", "--ros-args", *args, module=True)
    user = FrankaClient(ros_context, "fr3", "franka_gripper")
    truth: list[PoseStamped] = []
    user.node.create_subscription(PoseStamped, "/sim_bridge/true_cube_pose", truth.append, 10)
    try:
        user.wait_ready(bridge)
        user.spin_until(lambda: bool(truth), 5.0)
        stamp = user.states["/joint_states"].header.stamp
        assert abs(stamp.sec + stamp.nanosec * 1e-9 - time.time()) < 0.5, stamp
        assert truth and truth[-1].pose.position.z == pytest.approx(CUBE / 2, abs=1e-3)
        topics = {name for name, _ in user.node.get_topic_names_and_types()}
        assert not topics & {"/clock", "/cube_pose"}, topics
        assert not [t for t in topics if t.startswith("/jaw_contact")], topics
        joints = [f"fr3_joint{i}" for i in range(1, 8)]
        home = user.positions(joints)
        goal = trajectory_goal(joints, [(1.0, home + 0.1)])
        start = time.time() + 1.0  # a wall-clock stamp: it starts then, not now
        goal.trajectory.header.stamp = rclpy.time.Time(seconds=start).to_msg()
        accepted, status, result = user.call(user.arm, goal)
        assert accepted and status == GoalStatus.STATUS_SUCCEEDED, result.error_string
        assert time.time() >= start + 1.0 - 0.05  # it ran from the stamp for its second
        np.testing.assert_allclose(user.positions(joints), home + 0.1, atol=0.01)
    finally:
        user.close()
