"""Pick node: the lesson-16 pick over ROS, against the sim bridge or the real SO-101 driver.

It runs the same pure ``PickMachine`` as the in-process runner. Inputs: ``joint_states`` (jaw
speed, and the arm's own forward kinematics), ``arm_controller/controller_state`` (where the
arm is held: the first move starts there), the per-jaw contact wrenches
(``jaw_contact/<jaw>``: forces in the simulation, the driver's estimate on a real arm) and,
when something publishes it, the cube's pose from TF (the simulation, a detector, motion
capture). Outputs: each arm phase as a ``FollowJointTrajectory`` goal, the jaw through
``GripperCommand`` (``max_effort`` = the jaw torque cap), the state on ``pick/state`` and the
outcome on ``pick/outcome`` (latched: the action's typed result as ``PickOutcome``).

``close_mode: force`` (docs/force_close.md): on the SO-101 (``force_close: servo``) the close is
the force close of ``physai_ros.core.pick.force_close``, reading the jaw wrenches' magnitudes as the
normal forces; each change of its jaw command (at most every ``force.update_period``) is a new
``GripperCommand`` goal. On the Panda (``force_close: grasp``) it is one franka_gripper ``Grasp``
goal with the target as its force, the close ending on its result. The outcome then says the
target, the squeeze per jaw, whether it is within tolerance and the peak seen while closing. With
``plan.source: planner`` the target is the largest of the ``plan_grasp`` service's force
targets for the object (``physai_ros.core.pick.force_plan``), asked once before the pick moves (an
asynchronous call: the executor never blocks); no plan, or no answer within
``plan.timeout``, ends the pick aborted before it moves.

Where the cube is: a fresh pose from TF when one is published, else ``cube_position`` (the
position the user placed it at, a target, not a measurement). A goal's ``object_frame`` may be
any frame of the TF tree (``/tf`` and ``/tf_static``, chained to the world frame by
``physai_ros.core.frames.tf_buffer``: a marker under the cube, an object seen by the camera); its
pose is as old as the oldest moving link of its chain. Whether it was held is judged by
``physai_ros.core.pick.judge`` from measurements only -- the robot's own (gripper stalled on
the object, lift by forward kinematics) and the cube pose when fresh -- and the outcome names
the witness. A controller that rejects or aborts a goal ends the pick with its reason.

A controller deactivated under the pick (its abort "Current goal cancelled during deactivate
transition.": franka_ros2 after a reflex or another robot error, a controller switch) ends it
at once, with no way back and no jaw goal (the hand keeps squeezing what it holds); on a Franka
(``recovery.error_recovery`` set) the reason names the error libfranka logged, and the user's
``~/recover`` runs franka_hardware's recovery (``physai_ros.nodes._pick_recovery``). The names
on the wire are parameters (``joint_prefix``, ``arm_controller``): franka_ros2's ``fr3_joint1``
on ``fr3_arm_controller`` as well as the model's own. Before a real Franka the arm goals go
through the trajectory node (``arm_action``; each carries its motion's rates, and its feedback
says when it really started), and, the Franka Hand measuring no contact (``jaw_contact``
false), the object is in the hand while the last Grasp's window holds the fingers.

The pick is an action, ``pick`` (``physai_ros_interfaces/action/Pick``: served by
``physai_ros.nodes._pick_server``, shared with the hand pick; this node's goals in
``physai_ros.nodes._pick_goals``, what a goal's fields mean and the typed result in
``physai_ros.nodes._pick_action``, a place's sensing and verdict in
``physai_ros.nodes._pick_place``; the force target in ``physai_ros.nodes._pick_force``): with
``autostart`` (the default) the node picks the configured cube once at start, then serves goals,
one at a time, each a fresh machine from where the arm is. A goal is checked before anything
moves and refused as the result REJECTED with the reason; a cancel cancels the arm controller's
goal (the controller holds the arm) and leaves the jaw as commanded, so a held object stays
squeezed. The outcome is published for every pick, the goals' too. A goal with ``place``
puts the object down at its ``place_pose`` (world frame; the machine's place), sensing support
from the jaws' load (``place_load``: wrenches turned into the world by forward kinematics) and
the arm's stall, on the arm's own goal timeline (``PlaceSensing.arm_time``), and is judged by
the place judges (``physai_ros.core.pick.judge``).

Every arm move of a pick is timed within the joint limits of ``limits_set`` (default: the
robot's default set): give the set the arm controller checks goals against, which refuses
moves timed for a faster one (the SO-101 driver's ``limits_set``; the launch passes it).

A silent robot ends it too: no joint states for ``silence_timeout`` seconds of wall-clock time,
or, under ``use_sim_time``, a clock that stands still that long (the sim bridge died: its clock
stopped, so nothing timed on the node's clock would ever fire). A steady-clock timer watches for
it; the pick then publishes an aborted outcome naming the silence (and ``silence_hint``: what
the robot's driver does when it falls silent) and sends no further goals (the controller, if
alive, holds the arm where its last goal ends; a dead one cannot move it).
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Callable

import mujoco
import numpy as np
from action_msgs.msg import GoalStatus
from control_msgs.action import FollowJointTrajectory, GripperCommand
from control_msgs.msg import JointTrajectoryControllerState
from geometry_msgs.msg import WrenchStamped
from rclpy.action import ActionClient
from rclpy.node import Node
from rclpy.time import Time as RclTime
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectoryPoint

from physai_ros import interfaces
from physai_ros.config import node_tree
from physai_ros.core.controllers.jtc import DEACTIVATED
from physai_ros.core.motion.limits import JointLimits, load_limits
from physai_ros.core.pick.contact import jaws_touch
from physai_ros.core.pick.force_close import ForceCloseParams
from physai_ros.core.pick.force_plan import (
    plan_request,
    plan_source,
)
from physai_ros.core.pick.goal_chain import GoalChain
from physai_ros.core.pick.judge import RobotReading, final_verdict, pose_verdict, robot_verdict
from physai_ros.core.pick.machine import (
    HELD_STATES,
    PickMachine,
    PickSensing,
    arm_ik,
    force_params,
    object_estimate,
    phase_trajectory,
    pick_config,
)
from physai_ros.errors import PhysaiError
from physai_ros.models import load_robot_spec, place_robot
from physai_ros.nodes._common import (
    LATCHED,
    ROBOT_PARAMS,
    declare_robot_params,
    declare_schema,
    flatten,
    load_schema,
    run_node,
    stream_qos,
    unflatten,
)
from physai_ros.nodes._messages import duration_msg, measured_at, seconds
from physai_ros.nodes._pick_action import (
    PickObject,
    result_from_report,
)
from physai_ros.nodes._pick_force import ForceTarget
from physai_ros.nodes._pick_goals import PickGoals
from physai_ros.nodes._pick_place import PlaceSensing, on_arm_timeline
from physai_ros.nodes._pick_recovery import FrankaRecovery, RecoverySettings, RobotErrorLog
from physai_ros.nodes._pick_server import (
    PickPlumbing,
    PickServer,
    PlannerCall,
    silence_watch,
)
from physai_ros.nodes._tf_listener import TfListener
from physai_ros.sim.scene import load_scene_config

FJT = FollowJointTrajectory.Result
PREEMPTED = GoalStatus.STATUS_CANCELED  # our own next phase replaced the goal
ERROR_LOG_BEFORE = 2.0  # [s wall] libfranka's error logged this long before a deactivation is its
ERROR_LOG_WAIT = 0.5  # [s wall] a deactivation's pick waits this long for libfranka's log line
WAITING_LOG_PERIOD = 5.0  # [s wall] a pick not started says this often what it waits for
RATE_STEP = 1e-4  # [s] central differences of the machine's command: a stop's rates (send_phase)
RATE_STEPS = (-RATE_STEP, 0.0, RATE_STEP)


SCHEMA = load_schema("pick")  # config/schema/pick.yaml


def controller_text(error_string: str) -> str:
    """The arm controller's own words in a result's ``error_string``: the trajectory node (in
    front of a real Franka) relays them as its JSON report's ``message``."""
    try:
        report = json.loads(error_string)
    except ValueError:
        return error_string
    return str(report.get("message", error_string)) if isinstance(report, dict) else error_string


class PickNode(PickPlumbing, ForceTarget, PickGoals, PlaceSensing, Node):
    def __init__(self) -> None:
        super().__init__("pick")
        robot, model_path, base_pos, base_yaw = declare_robot_params(self, SCHEMA)
        self.robot = robot
        try:
            # the robot's defaults: config/pick.yaml's <robot>.overrides (robot_tree)
            section = node_tree("pick.yaml").get(robot)
            overrides = section.get("overrides", {}) if isinstance(section, dict) else {}
            p = declare_schema(self, SCHEMA.without(*ROBOT_PARAMS), flatten(overrides))
            self.cfg = pick_config(unflatten(p), robot)
            # the force close's parameters with this node's cap, for goals asking for it
            self.force_base: ForceCloseParams = force_params(unflatten(p), robot)
            self.plan_src = plan_source(unflatten(p))
            planning = self.plan_src.planned and self.cfg.force is not None
            self.plan_fields = (
                plan_request(self.plan_src, load_scene_config(), p["cube_size"])
                if planning
                else None
            )
        except PhysaiError as exc:
            raise SystemExit(f"pick: {exc}") from exc
        self.cap, self.world = p["jaw_torque_cap"], p["world_frame"]
        self.frame_prefix = p["frame_prefix"]
        self.cube_frame = self.frame_prefix + p["cube_frame"]
        self.target, self.cube_size, self.max_age = p["cube_position"], p["cube_size"], p["max_age"]
        self.silence_timeout = float(p["silence_timeout"])
        self.silence_hint = p["silence_hint"]
        ros = self.cfg.ros
        rob = self.cfg.robot
        model_arm, model_jaw = list(rob["arm_joints"]), str(rob["jaw_joint"])
        # the joints as named on the wire (franka_ros2's fr3_joint1 ...); the model's below
        prefix = p["joint_prefix"]
        self.arm_joints = [prefix + name for name in model_arm]
        self.jaw_joint = prefix + model_jaw
        self.jaws = tuple(rob["jaws"])
        if len(self.jaws) != 2:
            raise SystemExit(f"pick: {robot}.jaws must name two jaws, got {list(self.jaws)}")
        spec = load_robot_spec(robot, model_path)
        place_robot(spec, base_pos, base_yaw)
        model = spec.compile()
        self.ik = arm_ik(model, self.cfg)  # the world frame is TF's "world"
        self.fk_model, self.fk_data = model, mujoco.MjData(model)
        self.fk_site = model.site(str(rob["site"])).id
        self.fk_qadr = [model.jnt_qposadr[model.joint(j).id] for j in model_arm]
        self.fk_jaw_qadr = int(model.jnt_qposadr[model.joint(model_jaw).id])
        # every arm move is timed within the set the controller checks goals against
        # (limits_set; '' = the file's default): an unknown set stops the node here
        self.limits: JointLimits | None = None
        self.limits_fault: str | None = None
        limits_of = p["limits_robot"] or robot
        try:
            self.limits = load_limits(limits_of, p["limits_set"] or None)
        except (PhysaiError, OSError) as exc:
            if p["limits_set"] or p["limits_robot"]:  # asked for by name, and not there
                raise SystemExit(
                    f"pick: limits_set {p['limits_set']!r} (limits_robot {limits_of!r}): {exc}"
                ) from exc
            self.limits_fault = f"no joint limits to time a place by: {exc}"
        self.place_load = bool(p["place_load"])
        self.jaw_contact = bool(p["jaw_contact"])
        # the least squeeze the gripper sets: the SO-101 jaw's dry friction lives in the model
        # (what the sim steps, what the driver's calibration halves), the Franka Hand's floor
        # in its data; a target below it is raised (planned) or refused (servo, parameter)
        self.jaw_friction = float(
            model.dof_frictionloss[model.jnt_dofadr[model.joint(model_jaw).id]]
        )
        if self.cfg.force is not None:  # the force close's effort ceiling allows for it
            force = dataclasses.replace(self.cfg.force, friction=self.jaw_friction)
            self.cfg = dataclasses.replace(self.cfg, force=force)
        self.force_base = dataclasses.replace(self.force_base, friction=self.jaw_friction)
        self.raised: dict | None = None  # {from_N, to_N, why}: the target raised to the floor

        self.joints: dict[str, tuple[float, float]] = {}
        self.joints_stamp = -math.inf  # [s] when the last joint state was measured
        self.jaw_force = dict.fromkeys(self.jaws, 0.0)
        self.jaw_stamp = dict.fromkeys(self.jaws, -math.inf)
        # each jaw's contact force [N] in its wrench frame, and that frame (a body of the model)
        self.jaw_wrench: dict[str, tuple[np.ndarray, str]] = {}
        self.place: np.ndarray | None = None  # the running pick's place target (world) [m]
        self.shift = 0.0  # [s] the arm runs the current state's goal this long after the machine
        self.released: np.ndarray | None = None  # [m] gripper site when the jaw began to open
        self.tf = TfListener(self, self.world)  # every TF link seen, chained on lookup
        fixed = np.asarray(self.target, dtype=float) if self.target[2] >= 0.0 else None
        self.object = PickObject(self.cube_frame, fixed)  # what the running pick picks
        self.pending = bool(p["autostart"])  # a pick to start once ready (autostart or a goal)
        self.arm_handle = None  # the arm goal running on the controller (cancelled on cancel)
        self.machine: PickMachine | None = None
        self.squeeze = math.nan
        self.site_at_grip = math.nan  # [m] gripper-site height when the close ended
        self.jaw_sent: tuple[float, float] | None = None  # the force close's last jaw goal
        self.jaw_start = math.nan  # [s] when the close's first jaw goal starts
        self.peak_force = 0.0  # [N] largest jaw force seen while closing
        self.jaw_in_flight = 0  # jaw goals sent (or due) that the controller has not answered
        self.reference: np.ndarray | None = None  # where the arm controller holds the arm
        self.arm_action = p["arm_action"] or interfaces.under(
            p["arm_controller"], interfaces.FOLLOW_JOINT_TRAJECTORY
        )
        # every goal carries its motion's rates where the trajectory node stands before the
        # controller: it takes a sampled motion whole only so, and re-times bare positions
        self.rates = bool(p["arm_action"])
        self.controller_state = interfaces.under(p["arm_controller"], interfaces.CONTROLLER_STATE)
        self.create_subscription(
            JointTrajectoryControllerState,
            self.controller_state,
            self.on_controller,
            stream_qos(10),
        )
        self.create_subscription(
            JointState, interfaces.JOINT_STATES, self.on_joints, stream_qos(10)
        )
        for jaw in self.jaws:
            self.create_subscription(
                WrenchStamped,
                f"{interfaces.JAW_CONTACT_PREFIX}/{jaw}",
                lambda m, j=jaw: self.on_wrench(j, m),
                stream_qos(10),
            )
        self.arm = ActionClient(self, FollowJointTrajectory, self.arm_action)
        self.gripper_action = str(rob["gripper_action"])
        self.gripper = ActionClient(self, GripperCommand, self.gripper_action)
        self.grasp_client = None  # franka_gripper's Grasp, for force_close grasp only
        self.grasp_result: tuple[bool, str] | None = None  # (success, error) once it came
        self.grasp_width = math.nan  # [m] between the fingers when the Grasp's result came
        if self.cfg.grasping:
            try:
                from franka_msgs.action import Grasp
            except ImportError as exc:
                raise SystemExit(f"pick: force_close grasp needs franka_msgs ({exc})") from exc
            self.grasp_client = ActionClient(self, Grasp, str(rob["grasp_action"]))
        self.pub_state = self.create_publisher(String, interfaces.PICK_STATE, LATCHED)
        self.server = PickServer(
            self,
            self.running,
            self.check_goal,
            self.begin_goal,
            lambda report, duration: result_from_report(report, self.jaws, duration),
            interfaces.PICK_OUTCOME,
            "pick",
        )
        self.timer = self.create_timer(1.0 / ros["control_rate"], self.tick)
        self.lead = float(ros["command_lead"])  # [s] see config/pick.yaml
        # arm goals start where the last one really ends (and chain_gap after it)
        self.chain = GoalChain(self.lead, float(ros["chain_gap"]))
        self.jaw_delay = self.lead  # [s] after the close state began, the jaw was commanded
        self.stop_lead = float(ros["stop_lead"])  # [s] a place's stop on support, see pick.yaml
        self.report_at: float | None = None  # [s] the machine is done; report once the arm is
        self.phase = 0  # counts the goals sent, so a stale goal's reply is recognised
        self.arm_phase = 0  # the phase of the last arm goal: it is in charge until replaced
        self.trouble: str | None = None  # a controller's rejection or abort, acted on at tick
        self.deactivated_at: float | None = None  # [s, steady] the arm controller was, mid-pick
        self.stopped_by: str | None = None  # that deactivation, until the controller runs again
        self.error_log: RobotErrorLog | None = None  # libfranka's errors, on a Franka
        self.recovery: FrankaRecovery | None = None
        if p["recovery.error_recovery"]:
            self.error_log = RobotErrorLog(self)
            self.recovery = FrankaRecovery(
                self,
                RecoverySettings.from_parameters(p, p["arm_controller"]),
                busy=lambda: f"a pick is {state}" if (state := self.running()) else "",
            )
        self.quiet = silence_watch(self, self.silence_timeout, self.watch_silence)
        self.waiting_logged = time.monotonic()  # [s, steady] what a pick not started waits for
        self.plan: dict | None = None  # the planner's answer, for the outcome
        self.refused: str | None = None
        if self.plan_fields is not None:  # the target comes later: ask, then check capacity
            self.planner = PlannerCall(
                self,
                interfaces.PLAN_GRASP,
                self.plan_fields,
                self.plan_src.timeout,
                self.on_plan,
                self.plan_failed,
            )
            self.get_logger().info(f"asking {interfaces.PLAN_GRASP} for the force target")
            self.ask_planner()
        elif self.cfg.force is not None:
            self.raise_to_hand_floor()
            self.check_capacity()
        if self.plan_src.planned and self.cfg.force is None:
            self.get_logger().warning(
                "plan.source planner sets force.target: close_mode cap ignores it"
            )
        self.configured = self.cfg  # the node's own close (a goal may ask for another)
        if self.refused is None and self.pending:
            self.get_logger().info("waiting for joint states, the cube and the controllers")

    # --- sensing -------------------------------------------------------------------------
    def on_controller(self, msg: JointTrajectoryControllerState) -> None:
        if list(msg.joint_names) == self.arm_joints and len(msg.reference.positions) == len(
            self.arm_joints
        ):
            self.reference = np.array(msg.reference.positions)
            self.stopped_by = None  # an active controller publishes its state

    def on_wrench(self, jaw: str, msg: WrenchStamped) -> None:
        f = msg.wrench.force
        self.jaw_force[jaw] = math.sqrt(f.x * f.x + f.y * f.y + f.z * f.z)
        self.jaw_wrench[jaw] = (np.array([f.x, f.y, f.z]), msg.header.frame_id)
        self.jaw_stamp[jaw] = measured_at(msg.header.stamp, self.now())

    def object_pose(self) -> tuple[np.ndarray, np.ndarray, float] | None:
        """The object's world pose from TF (``TfListener.pose``), None without a frame."""
        return self.tf.pose(self.object.frame)

    @property
    def cube(self) -> tuple[np.ndarray, float] | None:
        """The object's last measured pose (position [m], stamp [s]), if it has a TF frame."""
        pose = self.object_pose()
        return None if pose is None else (pose[0], pose[2])

    def cube_target(self, now: float) -> tuple[np.ndarray, float] | None:
        """The cube position to plan for and when it was measured (``object_estimate``)."""
        gripped = self.machine is not None and self.machine.past_close
        return object_estimate(self.cube, self.object.position, now, self.max_age, gripped)

    def both_touch(self) -> bool:
        """The object between both jaws: from the jaws' wrenches, or, on a hand that measures
        none (``jaw_contact`` false), ``in_grasp_window``."""
        if not self.jaw_contact:
            return self.in_grasp_window()
        return jaws_touch((self.jaw_force[j] for j in self.jaws), self.cfg.ros["touch_force"])

    def reading_ages(self, now: float) -> list[float]:
        """How old the readings the judges use are [s]: the joint states, and the jaws'
        wrenches where the robot publishes them (a Franka Hand's width is a joint state)."""
        wrenches = self.jaws if self.jaw_contact else ()
        return [now - self.joints_stamp, *(now - self.jaw_stamp[j] for j in wrenches)]

    def in_grasp_window(self) -> bool:
        """The last Grasp succeeded and the fingers are still inside its window about the
        object's width, as libfranka judges a grasp: an object that slips out lets the
        squeezing fingers close past it, an open hand is wider."""
        if not (self.grasp_result and self.grasp_result[0]) or self.jaw_joint not in self.joints:
            return False
        width = 2.0 * self.joints[self.jaw_joint][0]  # twice one finger's opening
        grasp = self.cfg.grasp
        inner, outer = float(grasp["epsilon_inner"]), float(grasp["epsilon_outer"])
        return self.cube_size - inner <= width <= self.cube_size + outer

    def sensed(self, now: float) -> PickSensing:
        cube = self.cube_target(now)
        jaw, jaw_speed = self.joints.get(self.jaw_joint, (math.nan, 0.0))
        return PickSensing(
            both_touch=self.both_touch(),
            jaw_speed=jaw_speed,
            cube_pos=None if cube is None else cube[0],
            cube_stamp=None if cube is None else cube[1],
            jaw=jaw,
            jaw_forces=(self.jaw_force[self.jaws[0]], self.jaw_force[self.jaws[1]]),
            jaw_acked=self.jaw_in_flight == 0,
            grasp=self.grasp_result,
            load=self.jaw_load(),
            arm=self.arm_positions() if self.arm_measured() else None,
        )

    def arm_measured(self) -> bool:
        return all(j in self.joints for j in self.arm_joints)

    def arm_positions(self) -> np.ndarray:
        return np.array([self.joints[j][0] for j in self.arm_joints])

    def site_height(self) -> float:
        """Gripper-site height [m] in the world from the measured arm joints (forward
        kinematics of the same model the IK uses)."""
        return float(self.site_position()[2])

    def site_position(self) -> np.ndarray:
        """Gripper-site position [m] in the world from the measured arm joints."""
        self.fk_data.qpos[self.fk_qadr] = self.arm_positions()
        mujoco.mj_kinematics(self.fk_model, self.fk_data)
        return self.fk_data.site_xpos[self.fk_site].copy()

    # --- acting --------------------------------------------------------------------------
    def missing(self, now: float) -> list[str]:
        """What the pick still waits for before it starts; nothing: ready."""
        out = []
        absent = [n for n in [*self.arm_joints, self.jaw_joint] if n not in self.joints]
        if absent:
            out.append(f"joint states of {absent}")
        if self.reference is None:
            out.append(f"the arm controller's state ({self.controller_state})")
        cube = self.cube_target(now)  # fresh: a graph still starting up may lag behind
        if cube is None:
            out.append(f"the cube's pose ({self.object.describe()})")
        elif now - cube[1] > self.max_age:
            out.append(f"a fresh cube pose (the last is {now - cube[1]:.2f} s old)")
        servers = [
            (self.arm, self.arm_action),
            (self.gripper, self.gripper_action),
        ]
        if self.grasp_client is not None:
            servers.append((self.grasp_client, self.cfg.robot["grasp_action"]))
        out += [
            f"the action server {name}" for client, name in servers if not client.server_is_ready()
        ]
        if now == 0.0:  # under use_sim_time: no /clock yet (and the node's timers stand still)
            out.append(f"the clock ({interfaces.CLOCK})")
        return out

    def ready(self, now: float) -> bool:
        return not self.missing(now)

    def send_phase(self, now: float, start: float, rates: bool = False) -> None:
        """The current state's arm motion sampled from ``now``, stamped to start at ``start``
        (``GoalChain``: command_lead ahead, or where the previous goal really ends), so phases
        join where the previous one ended even when a goal reached the controller late.

        ``rates``: the points carry the motion's velocities and accelerations too, for a goal
        that replaces a running one mid-move (the stop of a cancel). The controller joins it
        from where its reference is along a quintic through both ends, which continues a
        min-jerk move exactly; with positions alone it joins along a straight line whose
        velocity jumps at both ends (over ROS, up to 63 rad/s² against the SO-101's 38.96)."""
        times, q = phase_trajectory(self.machine, now, self.cfg.ros["trajectory_dt"])
        if times.size == 0:
            return
        goal = FollowJointTrajectory.Goal()
        goal.trajectory.header.stamp = RclTime(nanoseconds=round(start * 1e9)).to_msg()
        goal.trajectory.joint_names = self.arm_joints
        goal.trajectory.points = [
            JointTrajectoryPoint(positions=row.tolist(), time_from_start=duration_msg(t))
            for t, row in zip(times, q, strict=True)
        ]
        if rates:
            for point, t in zip(goal.trajectory.points, times, strict=True):
                before, at, after = (self.machine.command(now + t + d).arm for d in RATE_STEPS)
                point.velocities = ((after - before) / (2.0 * RATE_STEP)).tolist()
                point.accelerations = ((after - 2.0 * at + before) / RATE_STEP**2).tolist()
            last = goal.trajectory.points[-1]  # at rest: exactly, as the controller requires
            last.velocities = last.accelerations = [0.0] * len(self.arm_joints)
        what = f"{self.machine.state} arm goal"
        self.chain.sent(self.phase, start, float(times[-1]), sent_at=now)
        self.arm_phase = self.phase
        phase = self.phase
        sent = self.arm.send_goal_async(goal, lambda msg: self.on_arm_feedback(phase, msg.feedback))
        self._watch(sent, what, self._arm_done, chained=True)

    def on_arm_feedback(self, phase: int, feedback) -> None:
        """When the arm goal of ``phase`` really started, where its feedback says so (the
        trajectory node before a real Franka sets ``desired.time_from_start``; a controller
        that leaves it 0 says nothing): a goal that started later than its stamp (the relay
        waited for the goal before it, on a busy computer) puts the arm that much further
        behind the machine, and the state it runs follows the arm, not the stamp."""
        into = seconds(feedback.desired.time_from_start)
        if into <= 0.0:
            return
        late = self.chain.started(phase, seconds(feedback.header.stamp) - into)
        if late > 1e-3 and phase == self.phase and self.machine is not None:
            self.shift += late
            self.get_logger().info(
                f"the {self.machine.state} arm goal started {late:.3f} s after its stamp; "
                "the pick follows the arm"
            )

    def send_jaw(self, position: float, effort: float, delay: float) -> None:
        """Command the jaw ``delay`` [s] from now (now if ≤ 0), when the arm's phase starts.
        Until the controller has answered, the goal counts in ``jaw_in_flight``."""
        goal = GripperCommand.Goal()
        goal.command.position, goal.command.max_effort = float(position), float(effort)
        self.jaw_in_flight += 1

        def answered(_future) -> None:
            self.jaw_in_flight -= 1

        def send() -> None:
            future = self.gripper.send_goal_async(goal)
            future.add_done_callback(answered)
            self._watch(future, "gripper goal", None)

        self._after(delay, send)

    def send_grasp(self, delay: float) -> None:
        """The Grasp close: one franka_gripper Grasp goal, ``delay`` [s] from now, squeezing
        with the target; its result, (success, error), is the close's end (``PickSensing.
        grasp``). The width is the object's size, the epsilons the grasp section's."""
        from franka_msgs.action import Grasp

        goal = Grasp.Goal(width=float(self.cube_size), force=float(self.cfg.force.target))
        goal.speed = float(self.cfg.grasp["speed"])
        goal.epsilon.inner = float(self.cfg.grasp["epsilon_inner"])
        goal.epsilon.outer = float(self.cfg.grasp["epsilon_outer"])

        def result(future, _what: str, _phase: int) -> None:
            answer = future.result().result
            self.grasp_result = (bool(answer.success), str(answer.error))
            if self.jaw_joint in self.joints:  # the hand's width is twice one finger's opening
                self.grasp_width = 2.0 * self.joints[self.jaw_joint][0]

        self._after(
            delay,
            lambda: self._watch(self.grasp_client.send_goal_async(goal), "grasp goal", result),
        )

    def _after(self, delay: float, send: Callable[[], None]) -> None:
        """Call ``send`` ``delay`` [s] from now (now if ≤ 0), on a one-shot timer."""
        if delay <= 0.0:
            send()
            return

        def later() -> None:
            self.destroy_timer(timer)
            send()

        timer = self.create_timer(delay, later)

    def follow_force_close(self, now: float) -> None:
        """Send the force close's jaw command when it changed (from when its first goal
        starts: a later goal must not overtake the delayed first one)."""
        cmd = self.machine.command(now)
        if (cmd.jaw, cmd.effort) != self.jaw_sent:
            self.jaw_sent = (cmd.jaw, cmd.effort)
            self.send_jaw(cmd.jaw, cmd.effort, self.jaw_start - now)

    def _watch(self, future, what: str, on_result, chained: bool = False) -> None:
        """Note a rejected goal (and, for the arm, an aborted one) as trouble for the next
        tick: the pick then aborts with the controller's reason instead of waiting blind.
        ``chained``: an arm goal of the chain (``GoalChain``), told when its acceptance is seen;
        its reply counts until a newer arm goal replaces it, also in states that send none
        (the down goal still moves the arm while the jaw closes)."""
        phase = self.phase

        def responded(f) -> None:
            handle = f.result()
            if handle.accepted and chained:  # it started by now at the latest
                self.chain.accepted(phase, self.now())
                if phase == self.arm_phase:
                    self.arm_handle = handle  # a cancel of the pick cancels it
            if not handle.accepted:
                if phase == (self.arm_phase if chained else self.phase):
                    self.trouble = f"the controller rejected the {what}"
                return
            if on_result is not None:
                handle.get_result_async().add_done_callback(lambda r: on_result(r, what, phase))

        future.add_done_callback(responded)

    def _arm_done(self, future, what: str, phase: int) -> None:
        response = future.result()
        result = response.result
        if response.status == GoalStatus.STATUS_SUCCEEDED or response.status == PREEMPTED:
            return
        if phase != self.arm_phase or self.machine is None:
            return
        text = controller_text(result.error_string)
        trouble = f"{what} ended with error {result.error_code}: {text}"
        if result.error_code == FJT.INVALID_GOAL and text.startswith(DEACTIVATED):
            # before the report, even once the machine is done: the robot is not as reported
            if not self.machine.finished or self.report_at is not None:
                self.trouble, self.deactivated_at = trouble, time.monotonic()
        elif not self.machine.finished:
            self.trouble = trouble

    def enter(self, state: str, now: float, shift: float | None = None, lead: float = 0.0) -> None:
        """Send what the machine's new ``state`` commands: its arm phase as one goal (and the
        jaw, in the states that move it).

        ``shift`` [s]: the state was entered on the running goal's own timeline, that much
        behind the machine's clock (a place's states, see ``tick``): its goal
        is stamped to start now, replacing the running goal at once, where the arm really is
        on it. ``lead`` [s]: the state was entered that far ahead of where the arm is on the
        running goal (a stop of the descent): its goal is stamped that far ahead, so it
        reaches the controller before it starts, and carries its rates, so the controller
        joins it smoothly mid-move."""
        self.phase += 1
        self.pub_state.publish(String(data=state))
        self.get_logger().info(f"state {state} at t = {now:.3f} s")
        real = self.now()
        if shift is not None:  # sampled on the machine's clock, started now (+ lead)
            self.chain.forget()
            # a state that starts once the last goal has ended waits for a relay as a chained
            # goal does (chain_gap); the arm then runs that much further behind the machine
            wait = 0.0 if lead > 0.0 else self.chain.gap
            now, start = real - shift + lead, real + lead + wait
        else:
            now = real  # the stamps below are from this instant
            if state == "abort":  # the controller holds the arm: start from there, now
                self.chain.forget()
            start = self.chain.start(now)
        self.shift = start - now  # the arm runs this state's goal this far behind the machine
        late = self.chain.late(real)
        if shift is None and start > now + self.lead + 1e-3 and late > 1e-3:
            self.get_logger().warning(
                f"{state}: the previous arm goal reached the controller {late:.3f} s late; "
                f"this phase starts {start - now - self.lead:.3f} s later to join where it ends"
            )
        if state == "close" and self.machine.force_close is not None:
            self.jaw_delay, self.jaw_start, self.jaw_sent = start - now, start, None
            self.follow_force_close(now)
        elif state == "close" and self.cfg.grasping:
            self.jaw_delay = start - now
            self.send_grasp(self.jaw_delay)
        elif state == "close":
            self.jaw_delay = start - now
            self.send_jaw(self.cfg.jaw_closed, self.cap, self.jaw_delay)
        elif state == "abort":  # a jaw that may hold the object keeps its goal (the machine)
            if abs(self.machine.command(now).jaw - self.cfg.jaw_open) < 1e-9:
                self.send_jaw(self.cfg.jaw_open, self.cap, start - real)
        elif state in ("home", "settle"):
            self.send_jaw(self.cfg.jaw_open, self.cap, start - real)
        elif state == "open":  # after the stop and the relief of the press, as the machine
            opens_at = self.machine.durations["open"] - self.cfg.place.open
            delay = start + (self.machine.t_state + opens_at - now) - real
            self.send_jaw(self.cfg.jaw_open, self.cap, delay)
            self._after(delay, self.note_release)
        self.send_phase(now, start, rates=lead > 0.0 or self.rates)

    def tick(self) -> None:
        if self.planning():
            return
        now = self.now()
        if self.server.cancel_requested:
            self.cancel_pick(now)
        if self.machine is not None and self.deactivated_at is not None:
            self.end_deactivated(now)
            return
        if self.machine is None:
            if not self.pending or not self.ready(now):
                return
            self.start_pick(now)
            return
        machine = self.machine
        self.send_feedback(now)
        if machine.finished:  # report once the arm has done what it was sent (the chain's end)
            if self.report_at is not None and now >= self.report_at:
                self.report_at = None
                self.finish(now, canceled=machine.state == "canceled")
            return
        over = self.server.over(now)
        if over and self.trouble is None and machine.state not in ("abort", "cancel"):
            self.trouble = f"time limit {self.server.time_limit:g} s reached"
        if self.trouble is not None:
            trouble, self.trouble = self.trouble, None
            self.get_logger().error(trouble)
            if machine.state == "cancel":  # the stop failed: the controller holds the arm
                machine.abort_reason = trouble
                machine.state = "canceled"
                self.finish(now, canceled=True)
                return
            if machine.state == "abort":  # even the way back failed: stop here
                machine.abort_reason = f"{machine.abort_reason}; {trouble}"
                machine.state = "aborted"
                self.finish(now)
                return
            machine.abort(now, trouble, start=self.reference)  # where the controller holds it
            self.enter("abort", now)
            return
        before = machine.state
        on_arm_time = on_arm_timeline(machine)
        at = self.arm_time(machine, now) if on_arm_time else now
        if at is None:  # the arm is not there yet (see arm_time)
            return
        # the joint state's instant on the machine's clock (the arm runs ``now - at`` behind)
        sensed = self.sensed(now)._replace(arm_stamp=self.joints_stamp - (now - at))
        # lowering is decided stop_lead ahead of where the arm is: support ends it with a stop
        # that must join the running descent before the arm gets there, and soon, since until
        # then the arm goes on pressing the object into the table
        lead = self.stop_lead if before == "lower" else 0.0
        state = machine.update(at + lead, sensed)
        if before == "close":
            self.peak_force = max(self.peak_force, *self.jaw_force.values())
        squeezing = state == "close" or (machine.closed and state in HELD_STATES)
        if before == state and squeezing and machine.force_close is not None:
            self.follow_force_close(now)  # (entering close sends its first goal)
        if before == "close" and state != "close":
            self.squeeze = sum(self.jaw_force.values())
            self.site_at_grip = self.site_height()
        if state != before:
            if machine.finished:
                self.report_at = max(now, self.chain.end(now))
            else:
                self.enter(state, at + lead, shift=self.shift if on_arm_time else None, lead=lead)

    def end_deactivated(self, now: float) -> None:
        """The arm controller was deactivated under the pick (a robot error: franka_ros2 then
        deactivates it; a controller switch): no goal may follow, not even the way back, and the
        robot stays as it was left. The pick ends with the controller's reason and the error
        libfranka logged, when there is one (it may come just after the abort)."""
        logged = ""
        if self.error_log is not None:
            logged = self.error_log.since(self.deactivated_at - ERROR_LOG_BEFORE)
            if not logged and time.monotonic() < self.deactivated_at + ERROR_LOG_WAIT:
                return
        trouble, self.trouble, self.deactivated_at = self.trouble, None, None
        reason = f"{trouble} (the arm controller was deactivated: no goal follows it)"
        if logged:
            reason += f"; {logged}"
        self.stopped_by = logged or trouble
        if self.recovery is not None:
            reason += f"; once the cause is cleared, {self.get_fully_qualified_name()}/recover"
        self.get_logger().error(reason)
        machine = self.machine
        machine.abort_reason = (
            reason if machine.abort_reason is None else f"{machine.abort_reason}; {reason}"
        )
        machine.state = "aborted"
        self.finish(now)

    def watch_silence(self) -> None:
        """End a running pick whose robot has gone silent (see the module docstring)."""
        self.ask_planner()
        machine = self.machine
        if machine is None:  # not started: say what it waits for, every WAITING_LOG_PERIOD
            wall = time.monotonic()
            if not self.pending:
                return  # idle: no pick to start
            if wall >= self.waiting_logged + WAITING_LOG_PERIOD:
                self.waiting_logged = wall
                waiting = self.missing(self.now())
                if waiting:
                    self.get_logger().warning("waiting for " + "; ".join(waiting))
            return
        if machine.finished and self.report_at is None:
            return  # already reported
        silent = self.quiet.check(self.now(), time.monotonic())
        if silent is None:
            return
        reason, silent_for = silent
        if self.silence_hint:
            reason = f"{reason}; {self.silence_hint}"
        self.get_logger().error(f"{reason}; the pick ends here and sends no more goals")
        self.report_at = None
        if not machine.finished:
            machine.state = "aborted"
        machine.abort_reason = (
            reason if machine.abort_reason is None else f"{machine.abort_reason}; {reason}"
        )
        self.finish(self.now(), stale_by=silent_for)

    def finish(self, now: float, stale_by: float = 0.0, canceled: bool = False) -> None:
        """Judge and publish the outcome, and end the goal with it. ``stale_by`` [s, wall]:
        how long the robot has been silent; every measurement is that much older than the
        node's clock says (a stopped sim clock makes the last readings look fresh), so none of
        them judges a silent pick. ``canceled``: the client canceled it; the judge's verdict
        still says what the jaws hold where it stopped."""
        m, cfg = self.machine, self.cfg
        touch = self.both_touch()
        reading = None
        if all(n in self.joints for n in [*self.arm_joints, self.jaw_joint]):
            jaw, jaw_speed = self.joints[self.jaw_joint]
            lift = self.site_height() - self.site_at_grip if m.closed else math.nan
            ages = [age + stale_by for age in self.reading_ages(now)]
            reading = RobotReading(lift if m.closed else 0.0, jaw, jaw_speed, touch, max(ages))
        robot = robot_verdict(
            reading,
            closed=m.closed,
            jaw_closed=cfg.jaw_closed,
            empty_margin=cfg.empty_margin,
            still_speed=cfg.still_speed,
            min_lift=cfg.min_lift,
            max_age=self.max_age,
        )
        pose = None
        if self.cube is not None:
            bottom = float(self.cube[0][2] - self.cube_size / 2.0)
            pose = pose_verdict(
                bottom,
                now - self.cube[1] + stale_by,
                touch,
                closed=m.closed,
                min_lift=cfg.min_lift,
                max_age=self.max_age,
                source=f"TF frame {self.cube_frame!r}",
            )
        final, judge = final_verdict(robot, pose)
        if pose is not None and robot.outcome != pose.outcome:
            self.get_logger().warning(
                f"witnesses disagree: robot says {robot.outcome} ({robot.reason}), "
                f"cube pose says {pose.outcome} ({pose.reason})"
            )
        place = None
        if m.place is not None and not canceled:  # a place is judged by the place's judges
            place = self.judge_place(now, stale_by)
            judge, reason = place["judged_by"], place["reason"]
            final = final._replace(outcome=place["outcome"], lift=math.nan)
        outcome = final.outcome if m.state != "aborted" else "aborted"
        reason = final.reason if place is None else reason
        missed = self.grasp_missed()
        if missed and m.state == "aborted" and not canceled:  # the hand's own verdict
            outcome, judge, reason = "not closed", "robot", f"{missed} ({m.abort_reason})"
        if canceled:  # held or dropped are verdicts on a finished lift: say what the jaws hold
            jaws = "is in both jaws" if final.in_jaws else "is not in both jaws"
            where = m.canceled_in or m.state
            outcome, reason = "canceled", f"canceled in {where}; the object {jaws}: {reason}"
        report = {
            "outcome": outcome,
            "judged_by": judge,
            "reason": reason,
            "state": (m.canceled_in or m.state) if canceled else m.state,
            "abort_reason": m.abort_reason,
            "lift_cm": None if math.isnan(final.lift) else round(final.lift * 100.0, 3),
            "robot": robot.as_dict(),
            "cube_pose": None if pose is None else pose.as_dict(),
            # the jaw started jaw_delay after the close state did
            "close_s": None if math.isnan(m.close_s) else round(m.close_s - self.jaw_delay, 4),
            "squeeze_N": None if math.isnan(self.squeeze) else round(self.squeeze, 3),
            "jaw_forces_N": [round(self.jaw_force[j], 3) for j in self.jaws],
            "ik_error_mm": None if math.isnan(m.ik_error) else round(m.ik_error * 1e3, 4),
            "time_s": round(now, 3),
            "close_mode": cfg.close_mode,
            "force": self.force_report() if cfg.close_mode == "force" else None,
            "place": place,
        }
        self.pub_state.publish(String(data="canceled" if canceled else m.state))
        self.end_goal(report, now, judged=True)
        self.machine, self.report_at = None, None  # ready for the next goal

    def grasp_missed(self) -> str:
        """Why nothing is in the hand, by its own measurement: a Grasp that failed with the
        fingers closer than the object's width less ``grasp.epsilon_inner`` closed past it (a
        real Franka has no other witness); '' when that is not so."""
        if self.grasp_result is None or self.grasp_result[0] or math.isnan(self.grasp_width):
            return ""
        least = self.cube_size - float(self.cfg.grasp["epsilon_inner"])
        if self.grasp_width >= least:
            return ""
        return (
            f"the Grasp closed the fingers to {self.grasp_width * 1e3:.1f} mm, narrower than "
            f"the object's {self.cube_size * 1e3:.1f} mm less epsilon_inner "
            f"({least * 1e3:.1f} mm): nothing is in the hand"
        )

    def start_pick(self, now: float) -> None:
        """A fresh machine from where the controller holds the arm (inside its ranges), with
        every per-pick reading reset."""
        self.pending = False
        self.squeeze = self.site_at_grip = self.jaw_start = math.nan
        self.jaw_sent, self.trouble, self.grasp_result = None, None, None
        self.grasp_width = math.nan
        self.deactivated_at = None
        self.peak_force, self.jaw_delay = 0.0, self.lead
        self.arm_handle = None
        self.released, self.shift = None, 0.0
        self.chain.forget()
        self.server.started(now)
        home = np.asarray(self.cfg.robot["home"], dtype=float)
        self.machine = PickMachine(
            self.cfg,
            self.ik,
            home,
            t0=now,
            start=self.reference,
            place=self.place,
            limits=self.limits,
        )
        self.enter(self.machine.state, now)


def main(args: list[str] | None = None) -> None:
    run_node(PickNode, args)


if __name__ == "__main__":
    main()
