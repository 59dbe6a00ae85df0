"""SO-101 driver: a real arm through LeRobot's Feetech bus, behind the sim bridge's interfaces.

``/joint_states`` (radians from LeRobot's calibrated degrees, gripper included; effort = servo
load [N·m]), ``FollowJointTrajectory`` for the arm (interpolated at the bus loop rate) and the
``JointTrajectory`` topic (with a watchdog), ``GripperCommand`` (max_effort = the gripper
servo's torque limit, capped by LeRobot's protection), per-jaw contact estimated from the
gripper servo on ``/jaw_contact/<jaw>``, servo health on ``/diagnostics``, and the services
``~/torque_off`` (e-stop) and ``~/hold``. The bus runs in its own thread (``ServoLoop`` in
``physai_ros.backends.so101_loop``); this node only translates messages.
"""

from __future__ import annotations

import threading
import time

import rclpy
import yaml
from control_msgs.action import FollowJointTrajectory, GripperCommand
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import WrenchStamped
from rcl_interfaces.msg import ParameterDescriptor
from rclpy._rclpy_pybind11 import RCLError
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from physai_ros import interfaces
from physai_ros.backends.so101_config import bus_settings, flatten_config, loop_settings
from physai_ros.backends.so101_lerobot import JOINTS, BusError, So101Bus
from physai_ros.backends.so101_loop import ServoLoop, servo_reports
from physai_ros.core.joint_trajectory import Tolerances
from physai_ros.core.joint_trajectory import merge_tolerances as merge
from physai_ros.errors import PhysaiError
from physai_ros.nodes._messages import tolerance_entries, trajectory_points
from physai_ros.paths import config_path

FJT = FollowJointTrajectory.Result
DIAGNOSTIC_LEVELS = {
    "ok": DiagnosticStatus.OK,
    "warn": DiagnosticStatus.WARN,
    "error": DiagnosticStatus.ERROR,
    "stale": DiagnosticStatus.STALE,
}


class So101Driver(Node):
    def __init__(self) -> None:
        super().__init__("so101_driver")
        with config_path("so101_driver.yaml").open() as f:
            cfg = yaml.safe_load(f)
        with config_path("limits_so101.yaml").open() as f:
            limits = yaml.safe_load(f)
        self.frames = cfg["jaw"]["frames"]
        p = {}
        for name, default in flatten_config(cfg).items():
            if isinstance(default, list):
                default = [float(v) for v in default]
            desc = ParameterDescriptor(
                description=f"see config/so101_driver.yaml: {name}",
                read_only=name not in ("fault_policy", "grasp.relax"),
            )
            p[name] = self.declare_parameter(name, default, desc).value
        self.p = p
        try:
            bus = So101Bus(bus_settings(p, cfg, limits))
            self.loop = ServoLoop(bus, loop_settings(p), self._log)
        except PhysaiError as exc:
            raise SystemExit(f"so101_driver: {exc}") from exc
        group = ReentrantCallbackGroup()
        self.pub_js = self.create_publisher(JointState, interfaces.JOINT_STATES, 10)
        self.pub_jaw = {
            jaw: self.create_publisher(WrenchStamped, f"{interfaces.JAW_CONTACT_PREFIX}/{jaw}", 10)
            for jaw in self.frames
        }
        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_subscription(
            JointTrajectory, interfaces.JOINT_TRAJECTORY, self.on_topic, 10, callback_group=group
        )
        ActionServer(
            self,
            FollowJointTrajectory,
            interfaces.FOLLOW_JOINT_TRAJECTORY,
            self.execute_arm,
            goal_callback=self.check_arm,
            cancel_callback=lambda _: CancelResponse.ACCEPT,
            callback_group=group,
        )
        ActionServer(
            self,
            GripperCommand,
            interfaces.GRIPPER_COMMAND,
            self.execute_gripper,
            goal_callback=self.check_gripper,
            cancel_callback=lambda _: CancelResponse.ACCEPT,
            callback_group=group,
        )
        self.create_service(Trigger, "~/torque_off", self.on_torque_off, callback_group=group)
        self.create_service(Trigger, "~/hold", self.on_hold, callback_group=group)
        self.create_timer(1.0 / p["diagnostics_rate"], self.publish_diagnostics)
        self.snapshot = None
        self.running = True
        self.thread = threading.Thread(target=self.bus_thread, daemon=True)
        self.thread.start()
        self.get_logger().info(f"driving the SO-101 on {p['port']} at {p['loop_rate']} Hz")

    def _log(self, level: str, message: str) -> None:
        # one call site per severity: rclpy refuses a severity change at one call site
        logger = self.get_logger()
        if level == "error":
            logger.error(message)
        elif level == "warn":
            logger.warning(message)
        else:
            logger.info(message)

    def now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    # --- the bus thread --------------------------------------------------------------------
    def bus_thread(self) -> None:
        period = 1.0 / self.p["loop_rate"]
        next_t = time.monotonic()
        while self.running and rclpy.ok(context=self.context):
            snap = self.loop.cycle(time.monotonic())
            self.snapshot = snap
            try:
                self.publish(snap)
            except RCLError:  # the context went down under us (shutdown)
                return
            next_t += period
            delay = next_t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                next_t = time.monotonic()

    def publish(self, snap) -> None:
        stamp = self.get_clock().now().to_msg()
        if snap.reading is not None:
            r = snap.reading
            js = JointState(
                name=list(JOINTS),
                position=r.position.tolist(),
                velocity=r.velocity.tolist(),
                effort=r.torque.tolist(),
            )
            js.header.stamp = stamp
            self.pub_js.publish(js)
        for jaw, frame in self.frames.items():
            msg = WrenchStamped()
            msg.header.stamp, msg.header.frame_id = stamp, frame
            # squeeze along the jaw's closing axis: fixed jaw pushes +z, moving jaw -z
            msg.wrench.force.z = snap.jaw.normal_n * (1.0 if jaw == "fixed_jaw" else -1.0)
            self.pub_jaw[jaw].publish(msg)

    def publish_diagnostics(self) -> None:
        snap = self.snapshot
        if snap is None:
            return
        array = DiagnosticArray()
        array.header.stamp = self.get_clock().now().to_msg()
        for report in servo_reports(snap):
            status = DiagnosticStatus(
                name=f"so101/servo {report.servo_id} ({report.joint})",
                hardware_id=f"sts3215 id {report.servo_id}",
                level=DIAGNOSTIC_LEVELS[report.level],
                message=report.message,
            )
            status.values = [KeyValue(key=k, value=f"{v:.4g}") for k, v in report.values.items()]
            array.status.append(status)
        self.pub_diag.publish(array)

    # --- arm -------------------------------------------------------------------------------
    def check_arm(self, goal) -> GoalResponse:
        try:
            self.loop.plan(goal.trajectory.joint_names, trajectory_points(goal.trajectory))
            self._tolerances(goal)
        except PhysaiError as exc:
            self.get_logger().error(f"trajectory goal rejected: {exc}")
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def _tolerances(self, goal) -> Tolerances:
        return merge(self.loop.s.tolerances, self.loop.ranges, *tolerance_entries(goal))

    def execute_arm(self, handle) -> FollowJointTrajectory.Result:
        goal = handle.request
        try:
            traj = self.loop.plan(goal.trajectory.joint_names, trajectory_points(goal.trajectory))
            token = self.loop.start_trajectory(traj, time.monotonic(), self._tolerances(goal))
        except PhysaiError as exc:
            handle.abort()
            return FJT(error_code=FJT.INVALID_GOAL, error_string=str(exc))
        wait = threading.Event()
        while True:
            if handle.is_cancel_requested:
                self.loop.cancel_trajectory(token)
                handle.canceled()
                return FJT(error_code=FJT.SUCCESSFUL, error_string="cancelled")
            outcome = self.loop.trajectory_outcome(token)
            if outcome.state != "running":
                break
            wait.wait(0.02)
        if outcome.state == "succeeded":
            handle.succeed()
            return FJT(error_code=FJT.SUCCESSFUL, error_string=outcome.message)
        handle.abort()
        code = (
            FJT.PATH_TOLERANCE_VIOLATED
            if "reference" in outcome.message
            else (FJT.GOAL_TOLERANCE_VIOLATED if "goal" in outcome.message else FJT.INVALID_GOAL)
        )
        return FJT(error_code=code, error_string=outcome.message)

    def on_topic(self, msg: JointTrajectory) -> None:
        now = time.monotonic()
        try:
            traj = self.loop.plan(msg.joint_names, trajectory_points(msg))
        except PhysaiError as exc:
            self.get_logger().error(f"{interfaces.JOINT_TRAJECTORY} message dropped: {exc}")
            return
        self.loop.start_trajectory(traj, now, self.loop.s.tolerances, watchdog=True)

    # --- gripper ---------------------------------------------------------------------------
    def check_gripper(self, goal) -> GoalResponse:
        try:
            self.loop.check_gripper_goal(goal.command.position, goal.command.max_effort)
        except PhysaiError as exc:
            self.get_logger().error(f"gripper goal rejected: {exc}")
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def execute_gripper(self, handle) -> GripperCommand.Result:
        cmd = handle.request.command
        try:
            position = self.loop.check_gripper_goal(cmd.position, cmd.max_effort)
        except PhysaiError as exc:
            handle.abort()
            self.get_logger().error(f"gripper goal aborted: {exc}")
            return GripperCommand.Result()
        token = self.loop.start_gripper(position, cmd.max_effort, time.monotonic())
        wait = threading.Event()
        while True:
            if handle.is_cancel_requested:
                self.loop.cancel_gripper(token)
                handle.canceled()
                break
            outcome = self.loop.gripper_outcome(token)
            if outcome.state != "running":
                (handle.succeed if outcome.state == "succeeded" else handle.abort)()
                break
            wait.wait(0.02)
        snap = self.snapshot
        result = GripperCommand.Result()
        if snap is not None and snap.reading is not None:
            result.position = float(snap.reading.position[5])
            result.effort = float(snap.reading.torque[5])
        result.stalled = outcome.message == "stalled"
        result.reached_goal = outcome.message == "reached_goal"
        return result

    # --- services --------------------------------------------------------------------------
    def on_torque_off(self, _request, response: Trigger.Response) -> Trigger.Response:
        response.message = self.loop.estop()
        response.success = True
        self.get_logger().warning(f"e-stop: {response.message}")
        return response

    def on_hold(self, _request, response: Trigger.Response) -> Trigger.Response:
        try:
            response.message = self.loop.hold()
            response.success = True
        except BusError as exc:
            response.success, response.message = False, f"hold failed: {exc}"
        return response

    def destroy_node(self) -> None:
        self.running = False
        self.thread.join(timeout=1.0)
        self.loop.bus.disconnect(disable_torque=False)
        super().destroy_node()


def main(args: list[str] | None = None) -> None:
    try:
        with rclpy.init(args=args):
            node = So101Driver()
            executor = MultiThreadedExecutor()
            executor.add_node(node)
            try:
                executor.spin()
            finally:
                node.destroy_node()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass


if __name__ == "__main__":
    main()
