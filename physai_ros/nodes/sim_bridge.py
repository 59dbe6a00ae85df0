"""sim_bridge: the MuJoCo robot behind ros2_control's interfaces, so every other node (pick,
trajectory, users' tools) runs unchanged on the simulation and on hardware.

Publishes /clock, /joint_states, /cube_pose, /jaw_contact/<jaw>, /contact_markers and
/arm_controller/tracking_error at configured SIM-time rates; serves FollowJointTrajectory,
GripperCommand and /sim/reset; takes JointTrajectory on the controller's topic. Physics runs in
its own thread paced by ``real_time_factor``; the maths lives in physai_ros.backends.mujoco_sim
and physai_ros.core.joint_trajectory.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field

import rclpy
from control_msgs.action import FollowJointTrajectory, GripperCommand
from geometry_msgs.msg import PoseStamped, WrenchStamped
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from visualization_msgs.msg import MarkerArray

from physai_ros import interfaces as names
from physai_ros.backends.mujoco_sim import MujocoSim, load_sim_config
from physai_ros.core.joint_trajectory import (
    TrajectoryPoint,
    check_goal,
    merge_tolerances,
)
from physai_ros.errors import PhysaiError
from physai_ros.models import load_scene_config
from physai_ros.nodes._common import declare_param
from physai_ros.nodes._messages import (
    PatchedMessage,
    contact_markers,
    seconds,
    stamp,
    tolerance_entries,
)

FJT = FollowJointTrajectory.Result
MAX_STAMP_AHEAD = 10.0  # [s] a goal stamped further ahead of sim time has a clock mismatch
QUIET = ("succeeded", "canceled", "preempted")
# ros2_control's joint_trajectory_controller reports canceled and preempted goals as SUCCESSFUL
# (the goal status says CANCELED/ABORTED); other aborts (reset, replaced, diverged) as INVALID_GOAL.
ERROR_CODES = {
    "succeeded": FJT.SUCCESSFUL,
    "canceled": FJT.SUCCESSFUL,
    "preempted": FJT.SUCCESSFUL,
    "path_tolerance_violated": FJT.PATH_TOLERANCE_VIOLATED,
    "goal_tolerance_violated": FJT.GOAL_TOLERANCE_VIOLATED,
}
STREAMS = ("clock", "joint_states", "tracking_error", "cube_pose", "contacts", "markers")


@dataclass
class Goal:
    """An accepted goal; the physics thread decides its outcome, the execute callback reports."""

    handle: object
    trajectory: object = None
    tolerances: object = None
    done: threading.Event = field(default_factory=threading.Event)
    outcome: str = ""
    message: str = ""

    def finish(self, outcome: str, message: str) -> None:
        if not self.done.is_set():
            self.outcome, self.message = outcome, message
            self.done.set()


class SimBridge(Node):
    def __init__(self) -> None:
        super().__init__("sim_bridge")
        cfg, scene = load_sim_config(), load_scene_config()
        robot = declare_param(
            self, "robot", "so101", "robot to simulate: so101 | panda", read_only=True
        )
        model_path = declare_param(
            self,
            "model_path",
            "",
            "MJCF file or Menagerie folder; empty = embedded",
            read_only=True,
        )
        rtf = declare_param(
            self,
            "real_time_factor",
            float(cfg["real_time_factor"]),
            "sim seconds per wall second; 0 = as fast as possible",
            (0.0, 1000.0),
        )
        self.max_publish_delay = declare_param(
            self,
            "max_publish_delay",
            float(cfg["max_publish_delay"]),
            "longest a stamped message waits to be sent in a burst when running faster than "
            "real time [s wall]; 0 = send every tick",
            (0.0, 0.1),
            read_only=True,
        )
        self.rates = {
            s: declare_param(
                self,
                f"{s}_rate",
                float(cfg["rates"][s]),
                f"/{s} rate [Hz sim time]; 0 = off",
                (0.0, 1000.0),
                read_only=True,
            )
            for s in STREAMS
        }
        cube = scene["cube"]
        cube_xy = scene["robots"].get(robot, scene["robots"]["so101"])["cube_pos"]
        x = declare_param(
            self, "cube_x", float(cube_xy[0]), "cube centre x, base frame [m]", read_only=True
        )
        y = declare_param(
            self, "cube_y", float(cube_xy[1]), "cube centre y, base frame [m]", read_only=True
        )
        size = declare_param(
            self, "cube_size", float(cube["size"]), "cube edge [m]", (1e-3, 0.2), True
        )
        mass = declare_param(
            self, "cube_mass", float(cube["mass"]), "cube mass [kg]", (1e-4, 10.0), True
        )
        mu = declare_param(
            self, "cube_mu", float(cube["mu"]), "cube sliding friction [-]", (1e-4, 5.0), True
        )
        cap = declare_param(
            self,
            "jaw_torque_cap",
            0.0,
            "gripper force cap [N m SO-101 | N Panda]; 0 = model's own",
            (0.0, 1000.0),
            read_only=True,
        )
        viewer = declare_param(
            self, "viewer", False, "open MuJoCo's passive viewer if a display exists"
        )
        self.sim = MujocoSim(
            robot,
            model_path=model_path or None,
            cube_pos=(x, y),
            cube_size=size,
            cube_mass=mass,
            cube_mu=mu,
            jaw_torque_cap=cap or None,
        )
        self.rtf = rtf
        self.monitor_period = 1.0 / float(cfg["action_monitor_rate"])
        self.marker_cfg = cfg["markers"]
        self.lock = threading.RLock()
        self.arm_goal: Goal | None = None
        self.grip_goal: Goal | None = None
        self.instabilities = 0

        depth = int(cfg["history_depth"])
        self.pub = {
            "clock": self.create_publisher(Clock, names.CLOCK, depth),
            "joint_states": self.create_publisher(JointState, names.JOINT_STATES, depth),
            "tracking_error": self.create_publisher(JointState, names.TRACKING_ERROR, depth),
            "cube_pose": self.create_publisher(PoseStamped, names.CUBE_POSE, depth),
            "markers": self.create_publisher(MarkerArray, names.CONTACT_MARKERS, 10),
        }
        self.jaw_pub = {
            jaw: self.create_publisher(WrenchStamped, f"{names.JAW_CONTACT_PREFIX}/{jaw}", depth)
            for jaw in self.sim.jaw_names
        }
        group = ReentrantCallbackGroup()
        ActionServer(
            self,
            FollowJointTrajectory,
            names.FOLLOW_JOINT_TRAJECTORY,
            self._execute_arm,
            goal_callback=self._check_arm_goal,
            handle_accepted_callback=self._accept_arm,
            cancel_callback=self._cancel_arm,
            callback_group=group,
        )
        ActionServer(
            self,
            GripperCommand,
            names.GRIPPER_COMMAND,
            self._execute_gripper,
            goal_callback=self._check_gripper_goal,
            handle_accepted_callback=self._accept_gripper,
            cancel_callback=self._cancel_gripper,
            callback_group=group,
        )
        self.create_subscription(
            JointTrajectory, names.JOINT_TRAJECTORY, self._on_trajectory, 10, callback_group=group
        )
        self.create_service(Trigger, names.SIM_RESET, self._on_reset, callback_group=group)
        self.viewer = self._open_viewer() if viewer else None
        self.now = self.sim.time
        self.outbox: list[tuple[object, object]] = []  # (publisher, bytes | message), in order
        self._make_messages()
        self.running = True
        self.thread = threading.Thread(target=self._physics_loop, name="physics", daemon=True)
        self.thread.start()
        self.get_logger().info(
            f"simulating {robot} ({self.sim.model.nq} qpos, dt {self.sim.dt * 1e3:g} ms) at "
            f"real_time_factor {rtf:g}; arm joints {list(self.sim.arm_joints)}"
        )

    def _open_viewer(self):
        if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            self.get_logger().warning(
                "viewer requested but no display is available; running headless"
            )
            return None
        import mujoco.viewer

        return mujoco.viewer.launch_passive(self.sim.model, self.sim.data)

    # ------------------------------------------------------------------ physics thread
    def _physics_loop(self) -> None:
        """Step to the next due stream, stamp what is due, then send: before sleeping to keep
        the real-time factor, or once the oldest stamped message has waited
        ``max_publish_delay`` wall seconds. Paced runs therefore send every tick at once, and a
        free-running one sends bursts, which costs DDS far less than one send per tick."""
        sim, log = self.sim, self.get_logger()
        periods = {s: 1.0 / r for s, r in self.rates.items() if r > 0}
        due = dict.fromkeys(periods, sim.time)
        wall0, sim0, behind_logged, last_view = time.monotonic(), sim.time, False, 0.0
        oldest = 0.0  # [s wall] when the oldest message in the outbox was stamped
        while self.running:
            with self.lock:
                step = min(due.values(), default=sim.time + 0.01) - sim.time
                if step > 1e-9:  # streams due now (the first tick) go out at this very time
                    sim.advance(step)
                now = self.now = sim.time
                if sim.instabilities != self.instabilities:
                    self.instabilities = sim.instabilities
                    log.error(sim.last_instability)
                    self._finish_all("aborted", sim.last_instability)
                self._monitor_goals(now)
                if not self.outbox:
                    oldest = time.monotonic()
                try:
                    for stream, t in due.items():
                        if t <= now + 1e-9:
                            self.emit[stream]()
                            due[stream] = max(t + periods[stream], now)
                except Exception as exc:  # shutting down: the publishers' context is gone
                    if rclpy.ok(context=self.context):
                        raise
                    log.debug(f"stopping the physics loop after shutdown: {exc}")
                    return
                if self.viewer is not None and time.monotonic() - last_view > 1 / 30:
                    self.viewer.sync()
                    last_view = time.monotonic()
            wall = time.monotonic()
            ahead = wall0 + (sim.time - sim0) / self.rtf - wall if self.rtf > 0 else -1.0
            if self.outbox and (ahead > 0 or wall - oldest >= self.max_publish_delay):
                if not self._flush():
                    return
                if ahead > 0:
                    ahead = wall0 + (sim.time - sim0) / self.rtf - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
            elif self.rtf > 0 and ahead < -0.2:
                if not behind_logged:
                    log.warning(f"cannot keep real_time_factor {self.rtf:g}; running slower")
                    behind_logged = True
                wall0, sim0 = time.monotonic(), sim.time
        self._flush()

    def _flush(self) -> bool:
        """Send the outbox in order; False once the context is gone (shutting down)."""
        try:
            for publisher, data in self.outbox:
                publisher.publish(data)
        except Exception as exc:
            if rclpy.ok(context=self.context):
                raise
            self.get_logger().debug(f"publish after shutdown: {exc}")
            return False
        finally:
            self.outbox.clear()
        return True

    def _make_messages(self) -> None:
        """Fixed-layout messages for the periodic streams: the physics loop only writes numbers
        into their serialised bytes (see ``PatchedMessage``)."""
        sim, n, m = self.sim, len(self.sim.state_names), len(self.sim.arm_joints)
        self.out_clock = PatchedMessage(self.pub["clock"], Clock(), {})
        self.out_joints = PatchedMessage(
            self.pub["joint_states"],
            JointState(name=list(sim.state_names)),
            {"position": n, "velocity": n, "effort": n},
        )
        self.out_error = PatchedMessage(
            self.pub["tracking_error"],
            JointState(name=list(sim.arm_joints)),
            {"position": m, "velocity": m},
        )
        self.out_cube = PatchedMessage(self.pub["cube_pose"], PoseStamped(), {"pose": 7}, "world")
        self.out_jaw = {
            jaw: PatchedMessage(
                self.jaw_pub[jaw], WrenchStamped(), {"wrench": 6}, sim.jaw_body_names[jaw]
            )
            for jaw in sim.jaw_names
        }
        self.emit = {
            "clock": self._pub_clock,
            "joint_states": self._pub_joints,
            "tracking_error": self._pub_error,
            "cube_pose": self._pub_cube,
            "contacts": self._pub_contacts,
            "markers": self._pub_markers,
        }

    def _send(self, out: PatchedMessage) -> None:
        self.outbox.append((out.publisher, out.stamped(self.now)))

    def _pub_clock(self) -> None:
        self._send(self.out_clock)

    def _pub_joints(self) -> None:
        slots = self.out_joints.slots
        self.sim.joint_state_into(slots["position"], slots["velocity"], slots["effort"])
        self._send(self.out_joints)

    def _pub_error(self) -> None:
        out = self.out_error
        self.sim.tracking_error_into(out.slots["position"], out.slots["velocity"])
        self._send(out)

    def _pub_cube(self) -> None:
        pose = self.out_cube.slots["pose"]
        pose[:3], quat = self.sim.cube_pose()
        pose[3:6], pose[6] = quat[1:], quat[0]  # ROS quaternions are (x, y, z, w)
        self._send(self.out_cube)

    def _pub_contacts(self) -> None:
        for jaw, wrench in self.sim.jaw_wrenches().items():
            out = self.out_jaw[jaw]
            out.slots["wrench"][:3], out.slots["wrench"][3:] = wrench.force, wrench.torque
            self._send(out)

    def _pub_markers(self) -> None:
        if self.pub["markers"].get_subscription_count():  # RViz only: skip the work otherwise
            markers = contact_markers(self.sim.contact_points(), self.marker_cfg, stamp(self.now))
            self.outbox.append((self.pub["markers"], markers))

    def _monitor_goals(self, now: float) -> None:
        goal, sim = self.arm_goal, self.sim
        if goal is not None and not goal.done.is_set():
            t = sim.trajectory_time()
            state = sim.arm_state()
            result = check_goal(
                t, goal.trajectory, sim.reference()[0], state.q, state.qd, goal.tolerances
            )
            if result.outcome != "running":
                if result.outcome == "path_tolerance_violated":
                    sim.hold()
                goal.finish(result.outcome, result.message)
        goal = self.grip_goal
        if goal is not None and not goal.done.is_set():
            status, settings = sim.gripper_status(), sim.gripper
            if status.reached_goal:
                goal.finish("succeeded", f"reached {status.position:.4f}")
            elif status.stalled:
                ok = "succeeded" if settings.allow_stalling else "aborted"
                goal.finish(ok, f"stalled at {status.position:.4f}, effort {status.effort:.3f}")
            elif sim.gripper_elapsed() > settings.timeout:
                goal.finish("aborted", f"not reached within {settings.timeout:g} s")

    def _finish_all(self, outcome: str, message: str) -> None:
        for goal in (self.arm_goal, self.grip_goal):
            if goal is not None:
                goal.finish(outcome, message)

    # ------------------------------------------------------------------ arm interface
    def _plan(self, traj: JointTrajectory):
        points = [
            TrajectoryPoint(seconds(p.time_from_start), p.positions, p.velocities, p.accelerations)
            for p in traj.points
        ]
        start = seconds(traj.header.stamp)
        if start > self.sim.time + MAX_STAMP_AHEAD:
            raise PhysaiError(
                f"header.stamp {start:.3f} s is {start - self.sim.time:.1f} s ahead of sim time "
                "(a wall-clock stamp? use sim time or leave it zero)"
            )
        return self.sim.plan(traj.joint_names, points), (start or None)

    def _tolerances(self, request):
        return merge_tolerances(
            self.sim.default_tolerances, self.sim.ranges, *tolerance_entries(request)
        )

    def _check_arm_goal(self, request) -> GoalResponse:
        try:
            with self.lock:
                self._plan(request.trajectory)
                self._tolerances(request)
        except PhysaiError as exc:
            self.get_logger().warning(f"rejected trajectory goal: {exc}")
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def _accept_arm(self, handle) -> None:
        goal = Goal(handle)
        with self.lock:
            if self.arm_goal is not None:
                self.arm_goal.finish("preempted", "preempted by a new goal")
            try:
                goal.trajectory, start = self._plan(handle.request.trajectory)
                goal.tolerances = self._tolerances(handle.request)
                self.sim.follow(goal.trajectory, start)
            except PhysaiError as exc:
                goal.finish("invalid", str(exc))
            self.arm_goal = goal
        handle.execute()

    def _cancel_arm(self, handle) -> CancelResponse:
        with self.lock:
            goal = self.arm_goal
            if goal is not None and goal.handle is handle and not goal.done.is_set():
                self.sim.hold()
                goal.finish("canceled", "canceled; holding the current position")
        return CancelResponse.ACCEPT

    def _execute_arm(self, handle):
        goal = self.arm_goal if self.arm_goal and self.arm_goal.handle is handle else None
        while goal is not None and not goal.done.wait(self.monitor_period):
            with self.lock:
                fb = self._arm_feedback()
            handle.publish_feedback(fb)
        outcome, message = (goal.outcome, goal.message) if goal else ("preempted", "superseded")
        log = self.get_logger().info if outcome in QUIET else self.get_logger().warning
        log(f"trajectory goal {outcome}: {message}")
        self._end(handle, outcome)
        return FJT(error_code=ERROR_CODES.get(outcome, FJT.INVALID_GOAL), error_string=message)

    def _arm_feedback(self):
        sim, state, ref = self.sim, self.sim.arm_state(), self.sim.reference()
        fb = FollowJointTrajectory.Feedback(joint_names=list(sim.arm_joints))
        fb.header.stamp = stamp(sim.time)
        fb.desired = JointTrajectoryPoint(
            positions=ref[0].tolist(), velocities=ref[1].tolist(), accelerations=ref[2].tolist()
        )
        fb.actual = JointTrajectoryPoint(
            positions=state.q.tolist(), velocities=state.qd.tolist(), effort=state.effort.tolist()
        )
        fb.error = JointTrajectoryPoint(
            positions=(ref[0] - state.q).tolist(), velocities=(ref[1] - state.qd).tolist()
        )
        return fb

    def _end(self, handle, outcome: str) -> None:
        """Put the goal in its terminal state (cancel: after rclpy marks it CANCELING)."""
        if not handle.is_active:
            return
        if outcome == "succeeded":
            handle.succeed()
            return
        if outcome == "canceled":
            deadline = time.monotonic() + 1.0
            while not handle.is_cancel_requested and time.monotonic() < deadline:
                time.sleep(0.005)  # the cancel callback returned; its state change is imminent
            if handle.is_cancel_requested:
                handle.canceled()
                return
        handle.abort()

    def _on_trajectory(self, msg: JointTrajectory) -> None:
        with self.lock:
            if not msg.points:
                self.sim.hold()
                self._finish_all_arm("aborted", "stopped by an empty trajectory on the topic")
                return
            try:
                traj, start = self._plan(msg)
            except PhysaiError as exc:
                self.get_logger().warning(f"ignored trajectory on {names.JOINT_TRAJECTORY}: {exc}")
                return
            self._finish_all_arm("aborted", f"replaced by a trajectory on {names.JOINT_TRAJECTORY}")
            self.sim.follow(traj, start)

    def _finish_all_arm(self, outcome: str, message: str) -> None:
        if self.arm_goal is not None:
            self.arm_goal.finish(outcome, message)

    # ------------------------------------------------------------------ gripper interface
    def _check_gripper_goal(self, request) -> GoalResponse:
        try:
            self.sim.check_gripper_goal(request.command.position, request.command.max_effort)
        except PhysaiError as exc:
            self.get_logger().warning(f"rejected gripper goal: {exc}")
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def _accept_gripper(self, handle) -> None:
        goal = Goal(handle)
        with self.lock:
            if self.grip_goal is not None:
                self.grip_goal.finish("preempted", "preempted by a new gripper goal")
            command = handle.request.command
            self.sim.gripper_command(command.position, command.max_effort)
            self.grip_goal = goal
        handle.execute()

    def _cancel_gripper(self, handle) -> CancelResponse:
        with self.lock:
            goal = self.grip_goal
            if goal is not None and goal.handle is handle and not goal.done.is_set():
                self.sim.gripper_stop()
                goal.finish("canceled", "canceled; jaw holds where it is")
        return CancelResponse.ACCEPT

    def _execute_gripper(self, handle):
        goal = self.grip_goal if self.grip_goal and self.grip_goal.handle is handle else None
        while goal is not None and not goal.done.wait(self.monitor_period):
            with self.lock:
                status = self.sim.gripper_status()
            handle.publish_feedback(
                GripperCommand.Feedback(
                    position=status.position,
                    effort=status.effort,
                    stalled=status.stalled,
                    reached_goal=status.reached_goal,
                )
            )
        with self.lock:
            status = self.sim.gripper_status()
        outcome = goal.outcome if goal else "preempted"
        self.get_logger().info(f"gripper goal {outcome}: {goal.message if goal else ''}")
        self._end(handle, outcome)
        return GripperCommand.Result(
            position=status.position,
            effort=status.effort,
            stalled=status.stalled,
            reached_goal=status.reached_goal,
        )

    # ------------------------------------------------------------------ reset
    def _on_reset(self, _request, response):
        with self.lock:
            self.sim.reset()
            self._finish_all("aborted", "simulation reset")
        response.success, response.message = True, f"reset at sim time {self.sim.time:.3f} s"
        self.get_logger().info(response.message)
        return response

    def stop(self) -> None:
        self.running = False
        self.thread.join(timeout=2.0)
        if self.viewer is not None:
            self.viewer.close()


def main(args=None) -> None:
    try:
        with rclpy.init(args=args):
            node = SimBridge()
            executor = MultiThreadedExecutor(num_threads=4)
            executor.add_node(node)
            try:
                executor.spin()
            finally:
                node.stop()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass


if __name__ == "__main__":
    main()
