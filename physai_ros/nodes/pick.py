"""Pick node: the lesson-16 pick over ROS, against the sim bridge or a real SO-101 driver.

It runs the same pure ``PickMachine`` as the in-process runner. Inputs: ``/joint_states``
(jaw speed), the per-jaw contact wrenches (``/jaw_contact/<jaw>``) and the cube's pose from
``/tf``. Outputs: each arm phase as a ``FollowJointTrajectory`` goal, the jaw through
``GripperCommand`` (``max_effort`` = the jaw torque cap), its state on ``/pick/state`` and the
measured outcome (lift, squeeze, close time) on ``/pick/outcome`` (latched JSON). The close
state ends on the sensed contact and stillness, never on a timer alone.
"""

from __future__ import annotations

import json
import math

import numpy as np
import rclpy
from builtin_interfaces.msg import Duration
from control_msgs.action import FollowJointTrajectory, GripperCommand
from geometry_msgs.msg import WrenchStamped
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.action import ActionClient
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage
from trajectory_msgs.msg import JointTrajectoryPoint

from physai_ros import interfaces
from physai_ros.core.grasp import pick_outcome
from physai_ros.core.pick import (
    PickMachine,
    PickSensing,
    arm_ik,
    load_pick_config,
    phase_trajectory,
)
from physai_ros.errors import PhysaiError
from physai_ros.models import load_robot_spec, load_scene_config, place_robot
from physai_ros.nodes._common import declare_robot_params

LATCHED = QoSProfile(
    depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE
)


def duration_msg(seconds: float) -> Duration:
    sec = math.floor(seconds)
    return Duration(sec=int(sec), nanosec=round((seconds - sec) * 1e9))


class PickNode(Node):
    def __init__(self) -> None:
        super().__init__("pick")
        robot, model_path, base_pos, base_yaw = declare_robot_params(self)
        try:
            self.cfg = load_pick_config(robot=robot)
        except PhysaiError as exc:
            raise SystemExit(f"pick: {exc}") from exc
        ros = self.cfg.ros
        self.cap = self.declare_parameter(
            "jaw_torque_cap",
            ros["jaw_torque_cap"],
            ParameterDescriptor(description="GripperCommand max_effort while closing [N m]"),
        ).value
        self.cube_frame = self.declare_parameter(
            "cube_frame", "cube", ParameterDescriptor(description="TF frame of the object")
        ).value
        self.fixed_cube = self.declare_parameter(
            "cube_position",
            [0.0, 0.0, -1.0],
            ParameterDescriptor(
                read_only=True,
                description="cube centre in the world [m] when nothing measures it (a real arm "
                "without motion capture); z < 0 = take the pose from TF",
            ),
        ).value
        self.cube_size = self.declare_parameter(
            "cube_size",
            float(load_scene_config()["cube"]["size"]),
            ParameterDescriptor(description="object edge [m], for its bottom height"),
        ).value
        rob = self.cfg.robot
        self.arm_joints = list(rob["arm_joints"])
        self.jaw_joint = str(rob["jaw_joint"])
        self.jaws = ("fixed_jaw", "moving_jaw")
        spec = load_robot_spec(robot, model_path)
        place_robot(spec, base_pos, base_yaw)
        self.ik = arm_ik(spec.compile(), self.cfg)  # the world frame is TF's "world"

        self.joints: dict[str, tuple[float, float]] = {}
        self.jaw_force = dict.fromkeys(self.jaws, 0.0)
        self.cube: tuple[np.ndarray, float] | None = None  # (position [m], stamp [s])
        self.machine: PickMachine | None = None
        self.squeeze = math.nan
        self.create_subscription(JointState, interfaces.JOINT_STATES, self.on_joints, 10)
        self.create_subscription(TFMessage, interfaces.TF, self.on_tf, 100)
        for jaw in self.jaws:
            self.create_subscription(
                WrenchStamped,
                f"{interfaces.JAW_CONTACT_PREFIX}/{jaw}",
                lambda m, j=jaw: self.on_wrench(j, m),
                10,
            )
        self.arm = ActionClient(self, FollowJointTrajectory, interfaces.FOLLOW_JOINT_TRAJECTORY)
        self.gripper = ActionClient(self, GripperCommand, interfaces.GRIPPER_COMMAND)
        self.pub_state = self.create_publisher(String, interfaces.PICK_STATE, LATCHED)
        self.pub_outcome = self.create_publisher(String, interfaces.PICK_OUTCOME, LATCHED)
        self.timer = self.create_timer(1.0 / ros["control_rate"], self.tick)
        self.get_logger().info("waiting for joint states, the cube pose and the controllers")

    # --- sensing -------------------------------------------------------------------------
    def on_joints(self, msg: JointState) -> None:
        velocity = list(msg.velocity) or [0.0] * len(msg.name)
        for name, q, v in zip(msg.name, msg.position, velocity, strict=False):
            self.joints[name] = (q, v)

    def on_wrench(self, jaw: str, msg: WrenchStamped) -> None:
        f = msg.wrench.force
        self.jaw_force[jaw] = math.sqrt(f.x * f.x + f.y * f.y + f.z * f.z)

    def on_tf(self, msg: TFMessage) -> None:
        for t in msg.transforms:
            if t.child_frame_id == self.cube_frame and t.header.frame_id == "world":
                p = t.transform.translation
                stamp = t.header.stamp.sec + t.header.stamp.nanosec * 1e-9
                self.cube = (np.array([p.x, p.y, p.z]), stamp)

    def known_cube(self) -> None:
        """A given cube position stands in for a measurement, fresh at every tick."""
        if self.fixed_cube[2] >= 0.0:
            self.cube = (np.asarray(self.fixed_cube, dtype=float), self.now())

    def sensed(self) -> PickSensing:
        touch = self.cfg.ros["touch_force"]
        return PickSensing(
            both_touch=all(self.jaw_force[j] > touch for j in self.jaws),
            jaw_speed=self.joints.get(self.jaw_joint, (0.0, 0.0))[1],
            cube_pos=None if self.cube is None else self.cube[0],
            cube_stamp=None if self.cube is None else self.cube[1],
        )

    # --- acting --------------------------------------------------------------------------
    def now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def ready(self) -> bool:
        have_joints = all(n in self.joints for n in [*self.arm_joints, self.jaw_joint])
        return (
            have_joints
            and self.cube is not None
            and self.arm.server_is_ready()
            and self.gripper.server_is_ready()
        )

    def send_phase(self, now: float) -> None:
        times, q = phase_trajectory(self.machine, now, self.cfg.ros["trajectory_dt"])
        if times.size == 0:
            return
        goal = FollowJointTrajectory.Goal()
        goal.trajectory.joint_names = self.arm_joints
        goal.trajectory.points = [
            JointTrajectoryPoint(positions=row.tolist(), time_from_start=duration_msg(t))
            for t, row in zip(times, q, strict=True)
        ]
        self.arm.send_goal_async(goal)

    def send_jaw(self, position: float, effort: float) -> None:
        goal = GripperCommand.Goal()
        goal.command.position, goal.command.max_effort = float(position), float(effort)
        self.gripper.send_goal_async(goal)

    def enter(self, state: str, now: float) -> None:
        self.pub_state.publish(String(data=state))
        self.get_logger().info(f"state {state} at t = {now:.3f} s")
        if state == "close":
            self.send_jaw(self.cfg.jaw_closed, self.cap)
        elif state in ("settle", "abort"):
            self.send_jaw(self.cfg.jaw_open, self.cap)
        self.send_phase(now)

    def tick(self) -> None:
        now = self.now()
        self.known_cube()
        if self.machine is None:
            if not self.ready():
                return
            home = np.asarray(self.cfg.robot["home"], dtype=float)
            self.machine = PickMachine(self.cfg, self.ik, home, t0=now)
            self.start = self.cube[0].copy()
            self.enter("settle", now)
            return
        if self.machine.finished:
            return
        sensed = self.sensed()
        before = self.machine.state
        state = self.machine.update(now, sensed)
        if before == "close" and state != "close":
            self.squeeze = sum(self.jaw_force.values())
        if state != before:
            if self.machine.finished:
                self.finish(now)
            else:
                self.enter(state, now)

    def finish(self, now: float) -> None:
        m = self.machine
        lift = float(self.cube[0][2] - self.cube_size / 2.0) if self.cube else math.nan
        touch = self.cfg.ros["touch_force"]
        both = all(self.jaw_force[j] > touch for j in self.jaws)
        outcome = pick_outcome(lift, both, m.closed, self.cfg.min_lift)
        report = {
            "outcome": str(outcome),
            "state": m.state,
            "abort_reason": m.abort_reason,
            "lift_cm": round(lift * 100.0, 3),
            "close_s": None if math.isnan(m.close_s) else round(m.close_s, 4),
            "squeeze_N": None if math.isnan(self.squeeze) else round(self.squeeze, 3),
            "jaw_forces_N": [round(self.jaw_force[j], 3) for j in self.jaws],
            "ik_error_mm": None if math.isnan(m.ik_error) else round(m.ik_error * 1e3, 4),
            "sim_time_s": round(now, 3),
        }
        self.pub_state.publish(String(data=m.state))
        self.pub_outcome.publish(String(data=json.dumps(report)))
        self.get_logger().info(f"pick finished: {json.dumps(report)}")


def main(args: list[str] | None = None) -> None:
    try:
        with rclpy.init(args=args):
            rclpy.spin(PickNode())
    except (KeyboardInterrupt, ExternalShutdownException):
        pass


if __name__ == "__main__":
    main()
