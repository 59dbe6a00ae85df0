"""The Panda pick with franka_ros2's FR3 names, against the Franka-shaped sim standing in for
franka_ros2, as users launch it: ``ros2 launch physai_ros pick.launch.py sim:=true robot:=panda
franka:=fr3 start_pick:=false`` on a colcon-built install, goals on ``/pick``.

A reflex injected while the pick lifts the cube, and again while a place carries it (the sim
bridge's ``franka_fault``, as franka_ros2 v3.4 ends it): the pick ends aborted with the
controller's reason and libfranka's logged text and sends nothing after it (no arm goal, no
gripper goal: the hand keeps squeezing what it holds); the robot stays in error through a
simulation reset (the pick refuses goals meanwhile) until the user asks ``/pick/recover`` with
``ros2 service call``; after each recovery the next goal runs: a Grasp where the cube is not,
judged missed from the hand's width alone, a place, and the last pick, which holds.

Then the graph ``pick.launch.py sim:=false`` starts beside franka_ros2, against the sim bridge
standing in for it: the FR3's (places, reflexes while lifting and carrying, recoveries, a missed
Grasp, everything its arm controller followed inside the FR3's limits) and the Panda's, whose
franka_ros2 v0.1.13 ends on a robot error and is started again by the user.
"""

from __future__ import annotations

import time

import pytest
from action_msgs.msg import GoalStatus
from support.pick_action import BenchClient, Pick, place_goal
from support.processes import call_again_if_lost, ros2_output, ros2_param

from physai_ros.core.motion.limits import load_limits
from physai_ros.experiments.trials.pick_goals import FollowedReference

pytestmark = [pytest.mark.dds, pytest.mark.slow]

CUBE_HALF = 0.015  # [m] the cube's centre resting on the table
GRAPH_UP = 150.0  # [s wall] the launched graph serving /pick, two loaded cores
REFLEX = 'libfranka: Move command aborted: motion aborted by reflex! ["cartesian_reflex"]'
DEACTIVATED = "Current goal cancelled during deactivate transition."
# what the sim bridge logs for each arm and franka_gripper goal it receives
GOAL_LOGS = ("Received new action goal", "request")


class FrankaPickUser(BenchClient):
    """The /pick client, the pick's state, and every line the sim bridge logs (wall time);
    ``cube_topic``: where the simulation's true cube pose comes from."""

    def __init__(self, context, cube_topic: str = "/cube_pose") -> None:
        from rcl_interfaces.msg import Log
        from rclpy.qos import DurabilityPolicy, QoSProfile
        from std_msgs.msg import String

        super().__init__(context, name="franka_pick_user", cube_topic=cube_topic)
        self.state: str | None = None
        self.logs: list[tuple[float, int, str]] = []  # (wall [s], level, text) of sim_bridge
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.node.create_subscription(
            String, "/pick/state", lambda m: setattr(self, "state", m.data), latched
        )
        self.node.create_subscription(Log, "/rosout", self._log, 200)

    def _log(self, msg) -> None:
        if msg.name == "sim_bridge":
            self.logs.append((time.monotonic(), msg.level, msg.msg))

    def spin_until(self, predicate, timeout: float) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end and not predicate():
            self.executor.spin_once(timeout_sec=0.02)
        return bool(predicate())

    def start_pick(self, goal, timeout: float):
        """Send ``goal``, again while the graph is still starting (the pick refuses a goal for
        a frame TF has not brought yet); returns its result future."""
        end = time.monotonic() + timeout
        while True:
            handle = self.wait(self.pick.send_goal_async(goal), 60.0)
            assert handle.accepted
            result = handle.get_result_async()
            self.spin_until(result.done, 1.0)
            if not result.done():
                return result
            answer = result.result().result
            assert answer.outcome == Pick.Result.REJECTED, answer.reason
            assert "unknown TF frame" in answer.reason and time.monotonic() < end, answer.reason

    def in_hand(self) -> bool:
        """The cube off the table (sim truth): the hand carries it."""
        return self.cube is not None and self.cube[1][2] > CUBE_HALF + 0.01

    def reflex_in(self, state: str, goal) -> None:
        """A cartesian reflex once the pick is in ``state`` with the cube in the hand: the pick
        ends aborted with franka_ros2's and libfranka's reasons and sends nothing after it;
        the hand still squeezes the cube, which hangs where the arm stopped."""
        result = self.start_pick(goal, GRAPH_UP)
        assert self.spin_until(lambda: self.state == state, 90.0), self.state
        assert self.spin_until(self.in_hand, 10.0), self.cube
        self.spin_for(0.3)  # the arm moving
        self.set_fault("cartesian_reflex")
        injected = time.monotonic()
        answer = self.wait(result, 30.0)
        r = answer.result
        assert answer.status == GoalStatus.STATUS_ABORTED, r.reason
        assert (r.outcome, r.state) == (Pick.Result.ABORTED, "aborted"), r.reason
        assert DEACTIVATED in r.reason and REFLEX in r.reason, r.reason
        assert "/pick/recover" in r.reason, r.reason
        self.spin_for(2.0)  # anything the pick might still send arrives
        after = [text for at, _, text in self.logs if at > injected]
        assert not [t for t in after if any(g in t for g in GOAL_LOGS)], after
        assert self.cube[0] > injected + 1.0 and self.in_hand(), self.cube

    def set_fault(self, value: str) -> None:
        from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
        from rcl_interfaces.srv import SetParameters

        value_msg = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=value)
        request = SetParameters.Request(
            parameters=[Parameter(name="franka_fault", value=value_msg)]
        )
        assert self.params.wait_for_service(timeout_sec=30.0)
        assert self.wait(self.params.call_async(request), 30.0).results[0].successful


def test_a_reflex_ends_the_fr3_pick_and_only_a_requested_recovery_brings_the_robot_back(
    ros2, ros_context, tmp_path
):
    log = tmp_path / "launch.log"
    user = FrankaPickUser(ros_context)
    ros2("launch", "physai_ros", "pick.launch.py", "sim:=true", "robot:=panda", "franka:=fr3",
         "start_pick:=false", log=log)  # fmt: skip
    try:
        assert user.pick.wait_for_server(timeout_sec=GRAPH_UP), log.read_text()[-3000:]
        user.reflex_in("lift", Pick.Goal(object_frame="cube"))

        # a simulation reset moves the robot home; the robot stays in error
        call_again_if_lost(ros2, "/sim/reset", "std_srvs/srv/Trigger")
        out = ros2_param(ros2, "get", "/sim_bridge", "franka_fault")
        assert "String value is: cartesian_reflex" in out, out
        # and the pick refuses goals before anything moves until its controller runs again
        handle = user.wait(user.pick.send_goal_async(Pick.Goal(object_frame="cube")), 60.0)
        r = user.wait(handle.get_result_async(), 30.0).result
        assert r.outcome == Pick.Result.REJECTED and "/pick/recover" in r.reason, r.reason

        # the user's recovery; a Grasp where the cube is not is missed, by the hand's width
        recover(ros2)
        empty = Pick.Goal()
        empty.object_pose.header.frame_id = "world"
        empty.object_pose.pose.position.x, empty.object_pose.pose.position.y = 0.5, 0.15
        empty.object_pose.pose.position.z = CUBE_HALF
        answer = user.wait(user.start_pick(empty, 30.0), 120.0)
        r = answer.result
        assert (r.outcome, r.judged_by) == (Pick.Result.MISSED, "robot"), r.reason
        assert "nothing is in the hand" in r.reason and "grasp failed" in r.reason, r.reason
        # a place, and a reflex while it carries the cube
        user.reflex_in("carry", place_goal(0.5, 0.15, CUBE_HALF))
        # recovered again (and the cube back on the table): a pick holds
        recover(ros2)
        call_again_if_lost(ros2, "/sim/reset", "std_srvs/srv/Trigger")
        user.spin_for(1.0)
        answer = user.wait(user.start_pick(Pick.Goal(object_frame="cube"), 30.0), 120.0)
        assert answer.status == GoalStatus.STATUS_SUCCEEDED, answer.result.reason
        assert answer.result.outcome == Pick.Result.HELD, answer.result.reason
    finally:
        user.node.destroy_node()


def recover(ros2) -> None:
    """``/pick/recover`` as a user calls it; the robot error is then cleared."""
    out = ros2_output(ros2("service", "call", "/pick/recover", "std_srvs/srv/Trigger"))
    assert "success=True" in out, out
    out = ros2_param(ros2, "get", "/sim_bridge", "franka_fault")
    assert "String value is" in out and "cartesian_reflex" not in out, out


STAND_IN = ("run", "physai_ros", "sim_bridge", "--ros-args", "-p", "robot:=panda",
            "-p", "franka_profile:=fr3", "-p", "stand_in:=true")  # fmt: skip
CUBE = (0.5, 0.0, CUBE_HALF)  # [m] world: where the stand-in's cube starts (config/scene.yaml)


def located(x: float, y: float, z: float = CUBE_HALF, place: tuple | None = None):
    """A goal that says where the cube is (world [m]), as on a real robot (no cube frame), and
    with ``place`` where to put it."""
    goal = place_goal(*place) if place is not None else Pick.Goal()
    goal.object_frame = ""
    goal.object_pose.header.frame_id = "world"
    at = goal.object_pose.pose.position
    at.x, at.y, at.z = x, y, z
    return goal


def test_the_real_fr3_graph_picks_and_places_through_the_trajectory_node_and_ends_on_reflexes(
    ros2, ros_context, tmp_path
):
    """The graph ``pick.launch.py sim:=false robot:=panda franka:=fr3`` starts beside franka_ros2
    (the trajectory node, the TF publisher and the pick), against the sim bridge standing in
    for a real FR3 (``stand_in``: wall-time stamps, no cube pose, no jaw wrenches): a place
    judged by the robot alone and by the simulation's truth, a reflex while lifting (aborted
    with both reasons, nothing sent after it), the user's recovery, a Grasp where nothing is
    (MISSED from the hand's width), a reflex while a place carries the cube, the recovery
    again, and a last place; everything the arm controller followed
    inside the FR3's velocity, acceleration and jerk limits."""
    import numpy as np

    log = tmp_path / "launch.log"
    user = FrankaPickUser(ros_context, cube_topic="/sim_bridge/true_cube_pose")
    witness = FollowedReference(user.node, "fr3_arm_controller")
    ros2("launch", "physai_ros", "pick.launch.py", "sim:=false", "robot:=panda", "franka:=fr3",
         "start_pick:=false", log=log)  # fmt: skip
    ros2(*STAND_IN, log=tmp_path / "stand_in.log")
    try:
        assert user.pick.wait_for_server(timeout_sec=GRAPH_UP), log.read_text()[-3000:]

        def placed(x: float, y: float, place: tuple) -> None:
            answer = user.wait(user.start_pick(located(x, y, place=place), GRAPH_UP), 120.0)
            r = answer.result
            assert answer.status == GoalStatus.STATUS_SUCCEEDED, r.reason
            assert r.outcome == Pick.Result.PLACED, r.reason
            assert r.judged_by == "robot", r.judged_by  # a real Franka's own witness
            user.spin_for(1.0)
            error = float(np.linalg.norm(user.cube[1] - np.array(place)))
            assert error <= 0.01, f"the cube rests {error * 100:.2f} cm from the place"

        placed(CUBE[0], CUBE[1], (0.5, 0.06, CUBE_HALF))
        user.reflex_in("lift", located(0.5, 0.06))
        recover(ros2)
        answer = user.wait(user.start_pick(located(0.5, 0.15), 30.0), 120.0)
        r = answer.result
        assert (r.outcome, r.judged_by) == (Pick.Result.MISSED, "robot"), r.reason
        assert "grasp failed" in r.reason, r.reason
        # the cube back where it started (the simulation's reset), a reflex while a place
        # carries it, the user's recovery, the cube back again, and a last place
        call_again_if_lost(ros2, "/sim/reset", "std_srvs/srv/Trigger")
        user.spin_for(3.0)
        user.reflex_in("carry", located(CUBE[0], CUBE[1], place=(0.5, 0.15, CUBE_HALF)))
        recover(ros2)
        call_again_if_lost(ros2, "/sim/reset", "std_srvs/srv/Trigger")
        user.spin_for(3.0)
        placed(CUBE[0], CUBE[1], (0.46, -0.05, CUBE_HALF))
        use = witness.use(load_limits("fr3"))  # what the FR3's arm controller followed
        assert all(share <= 1.0 + 1e-6 for share in use.values()), use
        assert len(witness.samples) > 1000, len(witness.samples)
    finally:
        user.node.destroy_node()


PANDA_STAND_IN = ("run", "physai_ros", "sim_bridge", "--ros-args", "-p", "robot:=panda",
                  "-p", "franka_profile:=panda", "-p", "stand_in:=true")  # fmt: skip
TERMINATE = "terminate called after throwing an instance of 'franka::ControlException'"


def test_the_real_panda_graph_ends_a_pick_franka_ros2_ended_and_places_once_it_runs_again(
    ros2, ros_context, tmp_path
):
    """The graph ``pick.launch.py sim:=false robot:=panda franka:=panda`` beside the stand-in
    for franka_ros2 v0.1.13, which ends on a robot error (libfranka's exception on stderr, the
    process aborted, as ros2_control_node and with it franka_ros2's launch): a reflex while
    lifting ends the pick aborted, naming the silence and what franka_ros2 did; the graph
    stays up and sends nothing to the robot the user starts again until a new goal, which
    places."""
    from physai_ros.robots.franka.names import PANDA_SILENCE_HINT

    log = tmp_path / "launch.log"
    user = FrankaPickUser(ros_context, cube_topic="/sim_bridge/true_cube_pose")
    ros2("launch", "physai_ros", "pick.launch.py", "sim:=false", "robot:=panda", "franka:=panda",
         "start_pick:=false", log=log)  # fmt: skip
    first = tmp_path / "stand_in.log"
    ros2(*PANDA_STAND_IN, log=first)
    try:
        assert user.pick.wait_for_server(timeout_sec=GRAPH_UP), log.read_text()[-3000:]
        result = user.start_pick(located(CUBE[0], CUBE[1], place=(0.5, 0.06, CUBE_HALF)), 90.0)
        assert user.spin_until(lambda: user.state == "lift", 90.0), user.state
        assert user.spin_until(user.in_hand, 10.0), user.cube
        user.spin_for(0.3)  # the arm moving
        user.set_fault("cartesian_reflex")
        answer = user.wait(result, 30.0)
        r = answer.result
        assert answer.status == GoalStatus.STATUS_ABORTED, r.reason
        assert (r.outcome, r.state) == (Pick.Result.ABORTED, "aborted"), r.reason
        assert "robot silent" in r.reason or "no current /joint_states" in r.reason, r.reason
        assert PANDA_SILENCE_HINT in r.reason, r.reason
        ended = first.read_text()
        assert TERMINATE in ended and REFLEX in ended, ended[-2000:]
        # the user starts franka_ros2 again (a fresh simulation: the arm at home, the cube back)
        again = tmp_path / "stand_in_again.log"
        ros2(*PANDA_STAND_IN, log=again)
        restarted = time.monotonic()
        assert user.spin_until(lambda: user.cube[0] > restarted, 60.0), again.read_text()[-2000:]
        user.spin_for(3.0)  # anything the graph might still send arrives
        received = [line for line in again.read_text().splitlines() if "Received" in line]
        assert not received, received
        answer = user.wait(
            user.start_pick(located(*CUBE, place=(0.5, 0.06, CUBE_HALF)), 60.0), 120.0
        )
        r = answer.result
        assert (answer.status, r.outcome) == (GoalStatus.STATUS_SUCCEEDED, Pick.Result.PLACED), (
            r.reason
        )
    finally:
        user.node.destroy_node()
