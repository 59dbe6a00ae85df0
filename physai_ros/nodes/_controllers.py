"""The ROS side of the shared controller layer (not a node itself).

``ControllerServers`` puts a ``JointTrajectoryController`` and one or more
``GripperActionController`` (``physai_ros.core.controllers``) behind the interfaces
ros2_controllers gives them:
``arm_controller/follow_joint_trajectory`` (FollowJointTrajectory), ``arm_controller/
joint_trajectory`` (the topic), ``arm_controller/controller_state``
(JointTrajectoryControllerState) and ``gripper_controller/gripper_cmd`` (GripperCommand), with
their parameters (``arm_controller.*``, ``gripper_controller.*``, names as ros2_controllers').
A hand with several driven joints has one gripper controller per joint, each served under its
own name (the Barrett hand's ``f1_controller/gripper_cmd`` …, parameters ``f1_controller.*``).
The sim bridge and the SO-101 driver both use it; their loops call the controllers' ``update``
under ``lock`` and hand what ended to ``deliver``. The controller names and the joint names on
the wire are the adapter's (``arm_name``, ``gripper_name``, ``names``: franka_ros2's
``panda_arm_controller`` with ``panda_joint1``...); the controllers keep the model's names.

Threading: the node spins a single-threaded executor. Action execute callbacks are coroutines
that await a future per goal, completed by ``deliver`` from whichever thread ended the goal
(the backend loop, or a callback) followed by a wake-up of the executor.
"""

from __future__ import annotations

import dataclasses
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
from control_msgs.action import FollowJointTrajectory, GripperCommand
from control_msgs.msg import JointTrajectoryControllerState
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rcl_interfaces.msg import SetParametersResult
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from physai_ros import interfaces
from physai_ros.core.controllers.gac import GacParams, GripperActionController, GripperEnd
from physai_ros.core.controllers.jtc import (
    PREEMPTED,
    GoalEnd,
    GoalTolerances,
    JointTrajectoryController,
    JtcParams,
    Rejected,
    TrajectoryMsg,
)
from physai_ros.core.controllers.streaming import StreamSettings
from physai_ros.core.frames.joint_names import JointPrefix
from physai_ros.core.motion.joint_trajectory import JointTolerance, TrajectoryPoint
from physai_ros.errors import InvalidInput
from physai_ros.nodes._common import Schema, declare_schema
from physai_ros.nodes._messages import seconds, stamp

FJT = FollowJointTrajectory.Result
CONTROLLER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*")
# The parameters ``ControllerServers`` applies while running (on the next goal, as
# ros2_controllers'); their descriptions, ranges and defaults: the node's config/schema file.
JTC_LIVE = (
    "allow_partial_joints_goal",
    "allow_nonzero_velocity_at_trajectory_end",
    "cmd_timeout",
    "start_tolerance",
    "constraints.stopped_velocity_tolerance",
    "constraints.goal_time",
    "constraints.blocked_error",
    "constraints.blocked_speed",
    "constraints.blocked_time",
)
GAC_LIVE = (
    "goal_tolerance",
    "allow_stalling",
    "stall_velocity_threshold",
    "stall_timeout",
    "max_effort",
    "max_speed",
)


def without_controllers(schema: Schema) -> Schema:
    """``schema`` less what ``declare_jtc`` and ``declare_gac`` declare (the node declares the
    rest: its own ``arm_controller.action_monitor_rate`` ...)."""
    owned = {f"arm_controller.{name}" for name in (*JTC_LIVE, "interpolate_from_desired_state")}
    return schema.without(
        "gripper_controller", "arm_controller.constraints.__map_joints", "arm_controller.stream",
        *owned,
    )  # fmt: skip


def finish_goal(handle, status: str) -> None:
    """Put an action goal in its terminal state. rclpy has no public server-side cancel, so a
    goal the controller cancels by itself (preempted gripper goal) goes through CANCELING."""
    if not handle.is_active:
        return
    if status == "succeeded":
        handle.succeed()
    elif status == "canceled":
        if not handle.is_cancel_requested:
            handle._update_state(_rclpy.GoalEvent.CANCEL_GOAL)  # see the docstring
        handle.canceled()
    else:
        handle.abort()


def trajectory_msg(traj: JointTrajectory) -> TrajectoryMsg:
    """A JointTrajectory message as the controller's plain values."""
    points = [
        TrajectoryPoint(seconds(p.time_from_start), p.positions, p.velocities, p.accelerations)
        for p in traj.points
    ]
    has_effort = any(len(p.effort) for p in traj.points)
    return TrajectoryMsg(list(traj.joint_names), points, seconds(traj.header.stamp), has_effort)


def goal_tolerances(goal, names: JointPrefix) -> GoalTolerances:
    """A goal's tolerances, their joints named as the model names them."""

    def entries(items) -> list[JointTolerance]:
        model = names.to_model([t.name for t in items])
        return [
            JointTolerance(n, t.position, t.velocity, t.acceleration)
            for n, t in zip(model, items, strict=True)
        ]

    return GoalTolerances(
        entries(goal.path_tolerance),
        entries(goal.goal_tolerance),
        seconds(goal.goal_time_tolerance),
    )


def declare_jtc(node: Node, schema: Schema, params: JtcParams) -> JtcParams:
    """Declare the controller's own ``arm_controller.*`` of ``schema`` (upstream names; the
    live ones, ``interpolate_from_desired_state`` and the per-joint
    ``constraints.<joint>.{trajectory,goal}``) with ``params``' values as defaults; returns the
    parameters as declared (overrides applied)."""
    pre = "arm_controller."
    now = {
        "allow_partial_joints_goal": params.allow_partial_joints_goal,
        "allow_nonzero_velocity_at_trajectory_end": params.allow_nonzero_velocity_at_trajectory_end,
        "cmd_timeout": params.cmd_timeout,
        "start_tolerance": params.start_tolerance,
        "constraints.stopped_velocity_tolerance": params.stopped_velocity_tolerance,
        "constraints.goal_time": params.goal_time,
        "constraints.blocked_error": params.blocked_error,
        "constraints.blocked_speed": params.blocked_speed,
        "constraints.blocked_time": params.blocked_time,
        "interpolate_from_desired_state": params.interpolate_from_desired_state,
        **{f"stream.{k}": v for k, v in dataclasses.asdict(params.stream).items()},
    }
    for j, joint in enumerate(params.joints):
        now[f"constraints.{joint}.trajectory"] = float(params.trajectory[j])
        now[f"constraints.{joint}.goal"] = float(params.goal[j])
    group = schema.mapped("joints", params.joints).only(*(pre + name for name in now))
    v = declare_schema(node, group, {pre + name: value for name, value in now.items()})
    return dataclasses.replace(
        params,
        trajectory=np.array([v[f"{pre}constraints.{j}.trajectory"] for j in params.joints]),
        goal=np.array([v[f"{pre}constraints.{j}.goal"] for j in params.joints]),
        interpolate_from_desired_state=v[pre + "interpolate_from_desired_state"],
        stream=StreamSettings(
            **{k: v[f"{pre}stream.{k}"] for k in dataclasses.asdict(params.stream)}
        ),
        **{name.removeprefix("constraints."): v[pre + name] for name in JTC_LIVE},
    )


class GripperSlot(NamedTuple):
    """A gripper controller as served: its action is ``<name>/gripper_cmd``, its live
    parameters ``<params>.*`` (franka_ros2's controller names keep ``gripper_controller.*``, so
    one params file serves every profile)."""

    name: str
    params: str
    controller: GripperActionController


def declare_gac(
    node: Node, schema: Schema, params: GacParams, prefix: str = "gripper_controller"
) -> GacParams:
    """Declare ``<prefix>.*`` as ``schema``'s ``gripper_controller.*`` with ``params``' values
    as defaults (a hand's ``f1_controller.*`` are described as ``gripper_controller.*``)."""
    group = schema.renamed("gripper_controller", prefix)
    names = [f"{prefix}.{name}" for name in GAC_LIVE]
    defaults = {f"{prefix}.{name}": getattr(params, name) for name in GAC_LIVE}
    values = declare_schema(node, group.only(*names), defaults)
    return dataclasses.replace(params, **{n: values[f"{prefix}.{n}"] for n in GAC_LIVE})


class ControllerServers:
    """Action servers, topic and state publisher of one arm and its gripper controllers.

    grippers: the gripper controllers as served (``GripperSlot``; a two-jaw gripper has one,
    ``gripper`` is the first); now: the backend's loop clock [s] (sim time in the bridge,
    monotonic in the driver); to_loop_time: a message stamp [s, ROS time] on that clock;
    ros_stamp: loop time → a ``builtin_interfaces/Time`` for outgoing headers; arm_name: the
    arm controller's name, under which its action and topics are served
    (``<arm_name>/follow_joint_trajectory`` ...); names: joint names on the wire (default: the
    model's); arrival_delay: an arm goal is taken this long [s] after it arrives (the sim
    bridge's adversary ``arm_goal_delay``). Raises ``InvalidInput`` for a controller name ROS
    cannot use.
    """

    def __init__(
        self,
        node: Node,
        arm: JointTrajectoryController,
        grippers: Sequence[GripperSlot],
        lock: threading.RLock,
        now: Callable[[], float],
        to_loop_time: Callable[[float], float],
        ros_stamp: Callable[[float], object],
        monitor_rate: float,
        state_rate: float,
        arm_name: str = interfaces.ARM_CONTROLLER,
        names: JointPrefix | None = None,
        tighten_only: bool = False,
        state_from_loop: bool = False,
        arrival_delay: float = 0.0,
    ) -> None:
        if not grippers:
            raise InvalidInput("ControllerServers needs at least one gripper controller")
        for name in (arm_name, *(slot.name for slot in grippers)):
            if not CONTROLLER_NAME.fullmatch(name):
                raise InvalidInput(
                    f"controller name {name!r} is not a ROS name (letters, digits, '_', and '/' "
                    "between parts; not starting with a digit)"
                )
        self.node, self.arm, self.lock = node, arm, lock
        # tighten_only (a real arm): per-joint path and goal tolerances may only be lowered at
        # run time, never raised above their values at start nor switched off (0)
        self.ceiling = (arm.p.trajectory.copy(), arm.p.goal.copy()) if tighten_only else None
        self.grippers = tuple(grippers)
        self.gripper = self.grippers[0].controller
        self.now, self.to_loop_time, self.ros_stamp = now, to_loop_time, ros_stamp
        joints = (*arm.p.joints, *(slot.controller.p.joint for slot in self.grippers))
        self.names = names or JointPrefix("", joints)
        self.topic = interfaces.under(arm_name, interfaces.JOINT_TRAJECTORY)
        self.log = node.get_logger()
        self.goals: dict[bytes, tuple[object, object]] = {}  # uuid -> (handle, future)
        # more action servers on these controllers (the franka_gripper actions): they get every
        # end too, since a goal of one can end a goal of another (a new gripper goal preempts)
        self.also_deliver: list[Callable[[Sequence[GoalEnd | GripperEnd]], None]] = []
        self.arrival_delay = arrival_delay
        ActionServer(
            node,
            FollowJointTrajectory,
            interfaces.under(arm_name, interfaces.FOLLOW_JOINT_TRAJECTORY),
            self._execute,
            goal_callback=self._check_arm,
            handle_accepted_callback=self._accept_arm,
            cancel_callback=self._cancel_arm,
        )
        for slot in self.grippers:
            grip = slot.controller
            ActionServer(
                node,
                GripperCommand,
                interfaces.under(slot.name, interfaces.GRIPPER_COMMAND),
                self._execute,
                goal_callback=lambda goal, g=grip: self._check_gripper(g, goal),
                handle_accepted_callback=lambda handle, g=grip: self._accept_gripper(g, handle),
                cancel_callback=lambda handle, g=grip: self._cancel_gripper(g, handle),
            )
        node.create_subscription(JointTrajectory, self.topic, self._on_topic, 10)
        self.stream_topic = interfaces.under(arm_name, interfaces.STREAM)
        node.create_subscription(  # best effort matches every publisher, as a stream wants
            JointState, self.stream_topic, self._on_stream, qos_profile_sensor_data
        )
        self.pub_state = node.create_publisher(
            JointTrajectoryControllerState,
            interfaces.under(arm_name, interfaces.CONTROLLER_STATE),
            10,
        )
        self.pub_gripper_states = [
            node.create_publisher(
                JointTrajectoryControllerState,
                interfaces.under(slot.name, interfaces.GRIPPER_STATE),
                10,
            )
            for slot in self.grippers
        ]
        # the stream's state on /diagnostics as it changes (and once a second while a stream
        # is there): a streaming client learns the arm held and why (a policy runner blends in
        # again from the held pose), an operator sees it beside the hardware's reports
        self.pub_diagnostics = node.create_publisher(DiagnosticArray, interfaces.DIAGNOSTICS, 10)
        self.stream_status = interfaces.under(arm_name, interfaces.STREAM)
        self.stream_said: tuple[tuple[str, str], float] = (("inactive", ""), -float("inf"))
        node.create_timer(1.0 / monitor_rate, self._feedback)
        self.state_period, self.state_at = 1.0 / state_rate, -float("inf")
        self.state_from_loop = state_from_loop
        if not state_from_loop:  # else the backend's loop calls publish_state each cycle
            node.create_timer(self.state_period, self.publish_state)
        node.add_on_set_parameters_callback(self._on_parameters)

    # --- delivery ----------------------------------------------------------------------------
    def deliver(self, ends: Sequence[GoalEnd | GripperEnd]) -> None:
        """Complete the futures of goals that ended (any thread); logs failures."""
        if not ends:
            return
        for end in ends:
            entry = self.goals.get(end.goal_id)
            if entry is None or entry[1].done():
                continue
            text = self.names.text(end.error_string if isinstance(end, GoalEnd) else end.message)
            if end.status == "aborted" and text != PREEMPTED:
                self.log.warning(f"goal aborted: {text}")
            else:
                self.log.info(f"goal {end.status}: {text}")
            entry[1].set_result(end)
        for deliver in self.also_deliver:
            deliver(ends)
        self.node.executor.wake()
        self.flush_warnings()

    def flush_warnings(self) -> None:
        while self.arm.warnings:
            self.log.warning(self.names.text(self.arm.warnings.pop(0)))

    async def _execute(self, handle):
        key = bytes(handle.goal_id.uuid)
        entry = self.goals.get(key)
        end = await entry[1] if entry is not None else None
        self.goals.pop(key, None)
        if end is None:  # never registered: cannot happen unless accepted elsewhere
            handle.abort()
            return self._empty_result(handle)
        finish_goal(handle, end.status)
        if isinstance(end, GoalEnd):
            return FJT(error_code=end.error_code, error_string=self.names.text(end.error_string))
        return GripperCommand.Result(
            position=end.position,
            effort=end.effort,
            stalled=end.stalled,
            reached_goal=end.reached_goal,
        )

    @staticmethod
    def _empty_result(handle):
        if isinstance(handle.request, FollowJointTrajectory.Goal):
            return FJT(error_code=FJT.INVALID_GOAL, error_string="goal lost")
        return GripperCommand.Result()

    def _register(self, handle) -> bytes:
        key = bytes(handle.goal_id.uuid)
        self.goals[key] = (handle, self.node.executor.create_future())
        return key

    # --- arm -----------------------------------------------------------------------------
    def _check_arm(self, goal) -> GoalResponse:
        self.log.info("Received new action goal")
        if self.arrival_delay > 0.0:
            time.sleep(self.arrival_delay)
        try:
            with self.lock:
                self.arm.prepare(self._trajectory(self._timed(goal.trajectory)), self.now())
        except Rejected as exc:
            self.log.error(f"goal rejected: {self.names.text(str(exc))}")
            return GoalResponse.REJECT
        self.log.info("Accepted new action goal")
        return GoalResponse.ACCEPT

    def _trajectory(self, traj: JointTrajectory) -> TrajectoryMsg:
        """The message as the controller's plain values, its joints named as the model's."""
        msg = trajectory_msg(traj)
        return msg._replace(joint_names=self.names.to_model(msg.joint_names))

    def _timed(self, traj: JointTrajectory) -> JointTrajectory:
        """The stamp moved onto the loop clock (0 stays 0: "now")."""
        t = seconds(traj.header.stamp)
        if t != 0.0:
            traj.header.stamp = stamp(self.to_loop_time(t))
        return traj

    def _accept_arm(self, handle) -> None:
        key = self._register(handle)
        with self.lock:
            now = self.now()
            try:
                prepared = self.arm.prepare(self._trajectory(handle.request.trajectory), now)
            except Rejected as exc:  # the state changed since the goal was checked
                ends = self.arm.stop(str(exc))
                ends.append(GoalEnd(key, "aborted", FJT.INVALID_GOAL, str(exc)))
            else:
                tolerances = goal_tolerances(handle.request, self.names)
                ends = self.arm.accept(key, prepared, tolerances)
        handle.execute()
        self.deliver(ends)

    def _cancel_arm(self, handle) -> CancelResponse:
        self.log.info("Got request to cancel goal")
        with self.lock:
            ends = self.arm.cancel(bytes(handle.goal_id.uuid))
        self.deliver(ends)
        return CancelResponse.ACCEPT

    def _on_topic(self, msg: JointTrajectory) -> None:
        with self.lock:
            try:
                self.arm.follow(self.arm.prepare(self._trajectory(self._timed(msg)), self.now()))
            except Rejected as exc:
                self.log.error(f"{self.topic} message ignored: {self.names.text(str(exc))}")

    def _on_stream(self, msg: JointState) -> None:
        """A streamed target: every arm joint's position [rad], on the wire's names, and
        optionally a gripper joint's (a leader's or a policy's jaw). Its time is when it
        arrived (the loop clock), not its stamp: the deadman judges arrivals. A jaw's target
        becomes its gripper controller's set-point (the controller's default effort, its
        speed limit), replacing a running gripper goal; a stream that stops leaves the jaw at
        its last target, squeezing what it holds."""
        names = self.names.to_model(list(msg.name))
        jaws = {slot.controller.p.joint: slot.controller for slot in self.grippers}
        arm = [i for i, name in enumerate(names) if name not in jaws]
        ends: list[GripperEnd] = []
        with self.lock:
            try:
                if len(msg.position) != len(names):
                    raise Rejected(
                        f"stream target refused: {len(msg.position)} positions for "
                        f"{len(names)} names"
                    )
                grips = [
                    (jaws[n], float(msg.position[i])) for i, n in enumerate(names) if n in jaws
                ]
                for grip, position in grips:  # every jaw checked before anything moves
                    grip.check(position, grip.p.max_effort)
                if arm:
                    self.arm.stream(
                        self.now(), [names[i] for i in arm], [msg.position[i] for i in arm]
                    )
                for grip, position in grips:
                    if position != grip.target or grip.goal_id is not None:
                        ends += grip.accept(None, position, grip.p.max_effort, self.now())
            except Rejected as exc:
                self.log.error(
                    f"{self.stream_topic}: {self.names.text(str(exc))}", throttle_duration_sec=1.0
                )
        self.deliver(ends)

    def _say_stream_state(self) -> None:
        """``<arm controller>/stream`` on /diagnostics: following, stopping or held, and why
        (WARN once a stream stopped), when it changes and once a second while not inactive."""
        with self.lock:
            state = self.arm.stream_state
        said, at = self.stream_said
        now = time.monotonic()
        if state == said and (state[0] == "inactive" or now - at < 1.0):
            return
        self.stream_said = state, now
        name, why = state
        level = DiagnosticStatus.WARN if why.startswith("stream stopped") else DiagnosticStatus.OK
        status = DiagnosticStatus(
            level=level,
            name=self.stream_status,
            message=f"{name}: {why}" if why else name,
            hardware_id=self.node.get_name(),
        )
        msg = DiagnosticArray(status=[status])
        msg.header.stamp = self.node.get_clock().now().to_msg()
        self.pub_diagnostics.publish(msg)

    def _feedback(self) -> None:
        self.flush_warnings()  # a stream that stopped says so without a goal ending
        self._say_stream_state()
        with self.lock:
            arm = self.arm
            entry = self.goals.get(arm.goal_id) if arm.goal_id is not None else None
            if entry is not None:
                fb = FollowJointTrajectory.Feedback(joint_names=self.names.to_wire(arm.p.joints))
                fb.header.stamp = self.ros_stamp(arm.time)
                err = arm.error()
                fb.desired = JointTrajectoryPoint(
                    positions=arm.ref[0].tolist(),
                    velocities=arm.ref[1].tolist(),
                    accelerations=arm.ref[2].tolist(),
                )
                fb.actual = JointTrajectoryPoint(
                    positions=arm.q.tolist(), velocities=arm.qd.tolist()
                )
                fb.error = JointTrajectoryPoint(
                    positions=err[0].tolist(), velocities=err[1].tolist()
                )
                fb.index = arm.segment_index()
                entry[0].publish_feedback(fb)
            for slot in self.grippers:
                grip = slot.controller
                entry = self.goals.get(grip.goal_id) if grip.goal_id is not None else None
                if entry is not None:
                    entry[0].publish_feedback(
                        GripperCommand.Feedback(position=grip.position, effort=grip.effort)
                    )

    def publish_state(self) -> None:
        """The arm's and each gripper's ``controller_state``, each stamped with its controller's
        last update: its ``reference`` is what that update commanded, so a recorder pairs a
        command with the time it was sent. From a timer, or (``state_from_loop``) from the
        backend's loop right after each cycle's command, at most at ``state_rate`` of the loop's
        clock (``now``; a clock set back, as by a simulation reset, starts the count again): a
        timer starved by the executor would leave gaps in which commands were sent unseen."""
        if self.state_from_loop:
            now = self.now()
            if self.state_at <= now < self.state_at + 0.999 * self.state_period:
                return
            self.state_at = now
        out = []
        with self.lock:
            arm = self.arm
            if arm.active:
                msg = JointTrajectoryControllerState(joint_names=self.names.to_wire(arm.p.joints))
                msg.header.stamp = self.ros_stamp(arm.time)
                err = arm.error()
                msg.reference = JointTrajectoryPoint(
                    positions=arm.ref[0].tolist(),
                    velocities=arm.ref[1].tolist(),
                    accelerations=arm.ref[2].tolist(),
                )
                msg.feedback = JointTrajectoryPoint(
                    positions=arm.q.tolist(), velocities=arm.qd.tolist()
                )
                msg.error = JointTrajectoryPoint(
                    positions=err[0].tolist(), velocities=err[1].tolist()
                )
                msg.output = JointTrajectoryPoint(positions=arm.ref[0].tolist())
                msg.speed_scaling_factor = 1.0
                out.append((self.pub_state, msg))
            for slot, pub in zip(self.grippers, self.pub_gripper_states, strict=True):
                grip = slot.controller
                if not grip.active:
                    continue
                msg = JointTrajectoryControllerState(joint_names=self.names.to_wire([grip.p.joint]))
                msg.header.stamp = self.ros_stamp(grip.updated)
                msg.reference = JointTrajectoryPoint(positions=[grip.setpoint])
                msg.feedback = JointTrajectoryPoint(
                    positions=[grip.position], velocities=[grip.velocity]
                )
                msg.error = JointTrajectoryPoint(positions=[grip.setpoint - grip.position])
                msg.output = JointTrajectoryPoint(positions=[grip.setpoint])
                msg.speed_scaling_factor = 1.0
                out.append((pub, msg))
        for pub, msg in out:
            pub.publish(msg)

    # --- gripper -------------------------------------------------------------------------
    def _check_gripper(self, gripper: GripperActionController, goal) -> GoalResponse:
        try:
            with self.lock:
                gripper.check(goal.command.position, goal.command.max_effort)
        except Rejected as exc:
            self.log.error(f"gripper goal rejected: {self.names.text(str(exc))}")
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def _accept_gripper(self, gripper: GripperActionController, handle) -> None:
        key = self._register(handle)
        command = handle.request.command
        with self.lock:
            try:
                gripper.check(command.position, command.max_effort)
            except Rejected as exc:
                position = gripper.position
                ends = [GripperEnd(key, "aborted", position, 0.0, False, False, str(exc))]
            else:
                ends = gripper.accept(key, command.position, command.max_effort, self.now())
        handle.execute()
        self.deliver(ends)

    def _cancel_gripper(self, gripper: GripperActionController, handle) -> CancelResponse:
        with self.lock:
            ends = gripper.cancel(bytes(handle.goal_id.uuid))
        self.deliver(ends)
        return CancelResponse.ACCEPT

    # --- parameters ----------------------------------------------------------------------
    def _on_parameters(self, params) -> SetParametersResult:
        """Live controller parameters take effect on the next goal (as ros2_controllers');
        an invalid value is refused with the reason."""
        arm_changes, constraint = {}, {}
        grip_changes: dict[int, dict] = {}  # slot index -> changes
        prefixes = {slot.params + ".": i for i, slot in enumerate(self.grippers)}
        for param in params:
            name = param.name
            head, _, key = name.partition(".")
            if name.startswith("arm_controller.constraints.") and name.count(".") == 3:
                _, _, joint, kind = name.split(".")
                constraint[(joint, kind)] = param.value
            elif name.startswith("arm_controller.") and name[15:] in JTC_LIVE:
                key = name[15:].replace("constraints.", "")
                arm_changes[key] = param.value
            elif head + "." in prefixes and key in GAC_LIVE:
                grip_changes.setdefault(prefixes[head + "."], {})[key] = param.value
        if not (arm_changes or grip_changes or constraint):
            return SetParametersResult(successful=True)
        with self.lock:
            try:
                p = self.arm.p
                trajectory, goal = p.trajectory.copy(), p.goal.copy()
                for (joint, kind), value in constraint.items():
                    if joint not in p.joints or kind not in ("trajectory", "goal"):
                        continue
                    j = p.joints.index(joint)
                    if self.ceiling is not None:
                        top = self.ceiling[0 if kind == "trajectory" else 1][j]
                        lowered = value > 0.0 and (top <= 0.0 or value <= top)  # 0 = off
                        if not (lowered or value == top):
                            return SetParametersResult(
                                successful=False,
                                reason=(
                                    f"{joint}'s {kind} tolerance is a safety setting of the real "
                                    f"arm: at run time it may only be lowered (0 < value <= "
                                    f"{top:g} rad, its value at start); set it higher at start "
                                    "(params file or -p)"
                                ),
                            )
                    (trajectory if kind == "trajectory" else goal)[j] = value
                new_arm = dataclasses.replace(p, trajectory=trajectory, goal=goal, **arm_changes)
                new_grips = {
                    i: dataclasses.replace(self.grippers[i].controller.p, **changes)
                    for i, changes in grip_changes.items()
                }
            except (ValueError, TypeError) as exc:
                return SetParametersResult(successful=False, reason=str(exc))
            self.arm.p = new_arm
            for i, new in new_grips.items():
                self.grippers[i].controller.p = new
        return SetParametersResult(successful=True)
