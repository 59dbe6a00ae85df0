"""franka_gripper's ROS interface on the simulated Panda hand (not a node itself).

What franka_ros2's ``franka_gripper_node`` serves, under its namespace (``panda_gripper`` in the
Panda's franka_ros2 v0.1.13, ``franka_gripper`` from v2.0): the actions ``homing``, ``move``,
``grasp`` (franka_msgs) and ``gripper_action`` (control_msgs GripperCommand), the service
``stop`` (std_srvs Trigger) and the topic ``joint_states`` (both fingers at half the width).
Each command becomes a goal of the bridge's one gripper controller (``physai_ros.core.
franka_hand``), so a franka_gripper goal and a ``gripper_controller/gripper_cmd`` goal preempt
each other as two goals of one controller do. As in franka_gripper every goal is accepted, and
one the hand cannot do ends at once, aborted, with ``success`` false and the reason in ``error``;
nothing moves.

Goals end through ``ControllerServers.deliver`` (which hands every end to ``deliver`` here).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import NamedTuple

from control_msgs.action import GripperCommand
from franka_msgs.action import Grasp, Homing, Move
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

from physai_ros.core.controllers.gac import GripperActionController, GripperEnd
from physai_ros.core.controllers.jtc import Rejected
from physai_ros.nodes._controllers import ControllerServers, finish_goal
from physai_ros.robots.franka.hand import CommandFailed, FrankaHand, HandGoal

ACTIONS = {  # action: (name under the namespace, franka_gripper's name for the task)
    Homing: ("homing", "Homing"),
    Move: ("move", "Moving"),
    Grasp: ("grasp", "Grasping"),
    GripperCommand: ("gripper_action", "GripperCommand"),
}
OF_REQUEST = {action.Goal: action for action in ACTIONS}


class Settings(NamedTuple):
    """franka_gripper_node's parameters: default_speed [m/s] and default_inner/outer [m] (of
    GripperCommand goals), state_rate and feedback_rate [Hz]."""

    default_speed: float
    default_inner: float
    default_outer: float
    state_rate: float
    feedback_rate: float


class Pending(NamedTuple):
    """A goal on its way: its future gets (success, error); goal None = ended on arrival."""

    handle: object
    future: object
    goal: HandGoal | None


class FrankaGripperServers:
    """The four actions, the stop service and the joint states of one simulated Franka Hand.

    gripper, lock, now: the bridge's gripper controller, the lock around it, its clock [s];
    servers: the bridge's ControllerServers (their ``deliver`` ends every goal); namespace:
    where franka_gripper's names go; finger_names: the two finger joints as published;
    ros_stamp: loop time → header stamp.
    """

    def __init__(
        self,
        node: Node,
        gripper: GripperActionController,
        lock: threading.RLock,
        now: Callable[[], float],
        servers: ControllerServers,
        hand: FrankaHand,
        settings: Settings,
        namespace: str,
        finger_names: Sequence[str],
        ros_stamp: Callable[[float], object],
    ) -> None:
        self.node, self.gripper, self.lock, self.now = node, gripper, lock, now
        self.servers, self.hand, self.settings = servers, hand, settings
        self.finger_names, self.ros_stamp = list(finger_names), ros_stamp
        self.log = node.get_logger()
        self.goals: dict[bytes, Pending] = {}
        for action, (name, task) in ACTIONS.items():
            ActionServer(
                node,
                action,
                f"{namespace}/{name}",
                self._execute,
                goal_callback=lambda _goal, task=task: self._received(task),
                handle_accepted_callback=self._accept,
                cancel_callback=self._cancel,
            )
        node.create_service(Trigger, f"{namespace}/stop", self._stop)
        self.pub_state = node.create_publisher(JointState, f"{namespace}/joint_states", 1)
        node.create_timer(1.0 / settings.state_rate, self._publish_state)
        node.create_timer(1.0 / settings.feedback_rate, self._feedback)
        servers.also_deliver.append(self.deliver)

    # --- goals -------------------------------------------------------------------------
    def _received(self, task: str) -> GoalResponse:
        self.log.info(f"Received {task} request")
        return GoalResponse.ACCEPT

    def _hand_goal(self, request) -> HandGoal | None:
        """The request as a hand goal (None: a GripperCommand already there); raises
        ``CommandFailed``."""
        hand, s = self.hand, self.settings
        if isinstance(request, Homing.Goal):
            return hand.homing(s.default_speed)
        if isinstance(request, Move.Goal):
            return hand.move(request.width, request.speed)
        if isinstance(request, Grasp.Goal):
            eps = request.epsilon
            return hand.grasp(request.width, request.speed, request.force, eps.inner, eps.outer)
        command = request.command
        width = 2.0 * self.gripper.position
        return hand.gripper_command(
            command.position,
            command.max_effort,
            width,
            s.default_speed,
            s.default_inner,
            s.default_outer,
        )

    def _accept(self, handle) -> None:
        key = bytes(handle.goal_id.uuid)
        future = self.node.executor.create_future()
        ends: list[GripperEnd] = []
        with self.lock:
            try:
                goal = self._hand_goal(handle.request)
                if goal is not None:
                    self.gripper.check(goal.position, goal.effort, goal.max_speed)
            except (CommandFailed, Rejected) as exc:  # nothing moves
                future.set_result((False, str(exc)))
                goal = None
            else:
                if goal is None:  # a GripperCommand to where the hand is: done
                    future.set_result((True, ""))
                else:
                    ends = self.gripper.accept(
                        key, goal.position, goal.effort, self.now(), goal.max_speed
                    )
            self.goals[key] = Pending(handle, future, goal)
        for warning in goal.warnings if goal is not None else ():
            self.log.warning(warning)
        handle.execute()
        self.servers.deliver(ends)

    @staticmethod
    def _task(handle) -> str:
        return ACTIONS[OF_REQUEST[type(handle.request)]][1]

    def _cancel(self, handle) -> CancelResponse:
        self.log.info(f"Received request to handleCancel {self._task(handle)}")
        with self.lock:
            ends = self.gripper.cancel(bytes(handle.goal_id.uuid))
        self.servers.deliver(ends)
        return CancelResponse.ACCEPT

    def deliver(self, ends: Sequence[object]) -> None:
        """Judge and complete the goals of ours among ``ends`` (any thread)."""
        for end in ends:
            pending = self.goals.get(end.goal_id) if isinstance(end, GripperEnd) else None
            if pending is None or pending.goal is None or pending.future.done():
                continue
            pending.future.set_result(FrankaHand.judge(pending.goal, end))

    async def _execute(self, handle):
        key = bytes(handle.goal_id.uuid)
        success, error = await self.goals[key].future
        self.goals.pop(key, None)
        task = self._task(handle)
        if success:
            self.log.info(f"Gripper {task} succeeded")
        else:
            self.log.error(f"Gripper {task} failed: {error}")
        finish_goal(
            handle,
            "succeeded" if success else "canceled" if handle.is_cancel_requested else "aborted",
        )
        action = OF_REQUEST[type(handle.request)]
        if action is GripperCommand:  # franka_gripper's: the whole width, effort 0
            width = 2.0 * self.gripper.position
            return GripperCommand.Result(position=width, effort=0.0, reached_goal=success)
        return action.Result(success=success, error=error)

    # --- stop, feedback, state ------------------------------------------------------------
    def _stop(self, _request, response):
        with self.lock:
            ends = self.gripper.stop("stopped by the stop service")
        self.servers.deliver(ends)
        response.success, response.message = True, ""
        self.log.info("Gripper stopped")
        return response

    def _feedback(self) -> None:
        with self.lock:
            pending = self.goals.get(self.gripper.goal_id)
            width = 2.0 * self.gripper.position
        if pending is None:
            return
        action = OF_REQUEST[type(pending.handle.request)]
        if action is GripperCommand:
            feedback = GripperCommand.Feedback(position=width, effort=0.0)
        else:
            feedback = action.Feedback(current_width=width)
        pending.handle.publish_feedback(feedback)

    def _publish_state(self) -> None:
        with self.lock:
            half = self.gripper.position
            stamp = self.ros_stamp(self.now())
        msg = JointState(name=self.finger_names, position=[half, half])
        msg.velocity, msg.effort = [0.0, 0.0], [0.0, 0.0]
        msg.header.stamp = stamp
        self.pub_state.publish(msg)


def franka_settings(values: dict) -> Settings:
    """``Settings`` from the sim bridge's ``franka_hand.*`` parameter values."""
    pre = "franka_hand."
    return Settings(
        default_speed=values[pre + "default_speed"],
        default_inner=values[pre + "default_grasp_epsilon.inner"],
        default_outer=values[pre + "default_grasp_epsilon.outer"],
        state_rate=values[pre + "state_publish_rate"],
        feedback_rate=values[pre + "feedback_publish_rate"],
    )


def serve_simulated_hand(
    node: Node,
    sim,
    lock: threading.RLock,
    servers: ControllerServers,
    settings: Settings,
    namespace: str,
    finger_names: Sequence[str],
    ros_stamp: Callable[[float], object],
) -> FrankaGripperServers:
    """franka_gripper on a ``MujocoSim`` Panda: the hand's data from config/sim_robots.yaml,
    its width from the model's finger range, its force from the finger actuator."""
    from physai_ros.config import load_sim_config
    from physai_ros.robots.franka.hand import HandSpec

    cfg = load_sim_config()["robots"][sim.robot]["franka_hand"]
    spec = HandSpec.from_config(cfg, max_width=2.0 * sim.gripper_range[1])
    hand = FrankaHand(spec, sim.gripper_force_per_effort)
    return FrankaGripperServers(
        node,
        sim.gripper,
        lock,
        lambda: sim.time,
        servers,
        hand,
        settings,
        namespace,
        finger_names,
        ros_stamp,
    )
