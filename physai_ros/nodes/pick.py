"""Pick node: the lesson-16 pick over ROS, against the sim bridge or the real SO-101 driver.

It runs the same pure ``PickMachine`` as the in-process runner. Inputs: ``joint_states`` (jaw
speed, and the arm's own forward kinematics), ``arm_controller/controller_state`` (where the
arm is held: the first move starts there), the per-jaw contact wrenches
(``jaw_contact/<jaw>``: forces in the simulation, the driver's estimate on a real arm) and,
when something publishes it, the cube's pose from TF (the simulation, a detector, motion
capture). Outputs: each arm phase as a ``FollowJointTrajectory`` goal, the jaw through
``GripperCommand`` (``max_effort`` = the jaw torque cap), the state on ``pick/state`` and the
outcome on ``pick/outcome`` (latched JSON).

``close_mode: force`` (docs/force_close.md): on the SO-101 (``force_close: servo``) the close is
the force close of ``physai_ros.core.pick.force_close``, reading the jaw wrenches' magnitudes as the
normal forces; each change of its jaw command (at most every ``force.update_period``) is a new
``GripperCommand`` goal. On the Panda (``force_close: grasp``) it is one franka_gripper ``Grasp``
goal with the target as its force, the close ending on its result. The outcome gains a ``force``
section (target, final squeeze per jaw, within tolerance, the peak seen while closing). With
``plan.source: planner`` the target is the largest of the ``plan_grasp`` service's force
targets for the object (``physai_ros.core.pick.force_plan``), asked once before the pick moves (an
asynchronous call: the executor never blocks); no plan, or no answer within
``plan.timeout``, ends the pick aborted before it moves.

Where the cube is: a fresh pose from TF when one is published, else ``cube_position`` (the
position the user placed it at, a target, not a measurement). Whether it was held is judged by
``physai_ros.core.pick.judge`` from measurements only -- the robot's own (gripper stalled on
the object, lift by forward kinematics) and the cube pose when fresh -- and the outcome names
the witness. A controller that rejects or aborts a goal ends the pick with its reason.

The pick is an action, ``pick`` (``physai_ros_interfaces/action/Pick``; the goal checks and
the typed result in ``physai_ros.nodes._pick_action``): with ``autostart`` (the default) the node
picks the configured cube once at start, then serves goals, one at a time, each a fresh machine
from where the arm is. A goal is checked before anything moves and refused as the result
REJECTED with the reason; a cancel cancels the arm controller's goal (the controller holds the
arm) and leaves the jaw as commanded, so a held object stays squeezed. The outcome JSON is
published for every pick, the goals' too. A goal with ``place`` puts the object down at its
``place_pose`` (world frame; the machine's place), sensing support from the jaws' load
(``place_load``: wrenches turned into the world by forward kinematics) and the arm's stall,
on the arm's own goal timeline (see ``tick``), and is
judged by the place judges (``physai_ros.core.pick.judge``).

Every arm move of a pick is timed within the joint limits of ``limits_set`` (default: the
robot's default set): give the set the arm controller checks goals against, which refuses
moves timed for a faster one (the SO-101 driver's ``limits_set``; the launch passes it).

A silent robot ends it too: no joint states for ``silence_timeout`` seconds of wall-clock time,
or, under ``use_sim_time``, a clock that stands still that long (the sim bridge died: its clock
stopped, so nothing timed on the node's clock would ever fire). A steady-clock timer watches for
it; the pick then publishes an aborted outcome naming the silence and sends no further goals
(the controller, if alive, holds the arm where its last goal ends; a dead one cannot move it).
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
from physai_ros_interfaces.action import Pick
from physai_ros_interfaces.srv import PlanGrasp
from rclpy.action import ActionClient, ActionServer, CancelResponse
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.task import Future
from rclpy.time import Time as RclTime
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage
from trajectory_msgs.msg import JointTrajectoryPoint

from physai_ros import interfaces
from physai_ros.config import node_tree
from physai_ros.core.motion.limits import JointLimits, load_limits
from physai_ros.core.pick.contact import jaws_touch
from physai_ros.core.pick.force_close import ForceCloseParams, capacity_fault
from physai_ros.core.pick.force_plan import (
    NO_SERVICE,
    JawFloor,
    plan_request,
    plan_source,
    planned_params,
)
from physai_ros.core.pick.goal_chain import GoalChain
from physai_ros.core.pick.judge import (
    PlaceVerdict,
    RobotPlaceReading,
    RobotReading,
    final_place_verdict,
    final_verdict,
    place_pose_verdict,
    place_robot_verdict,
    pose_verdict,
    robot_verdict,
)
from physai_ros.core.pick.machine import (
    HELD_STATES,
    PickConfig,
    PickMachine,
    PickSensing,
    arm_ik,
    force_params,
    phase_trajectory,
    pick_config,
)
from physai_ros.core.pick.silence import SilenceWatch
from physai_ros.errors import InvalidInput, PhysaiError
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
from physai_ros.nodes._messages import duration_msg, measured_at
from physai_ros.nodes._pick_action import (
    BUSY,
    PickObject,
    goal_config,
    goal_object,
    goal_place,
    rejected,
    result_from_report,
)
from physai_ros.robots.franka.hand import HandFloor
from physai_ros.sim.scene import load_scene_config

FJT = FollowJointTrajectory.Result
PREEMPTED = GoalStatus.STATUS_CANCELED  # our own next phase replaced the goal
WAITING_LOG_PERIOD = 5.0  # [s wall] a pick not started says this often what it waits for
FEEDBACK_PERIOD = 0.1  # [s] between two feedback messages of a goal (node clock)
ARM_TIMED = ("lift", "carry", "descend", "lower", "open", "retreat")  # a place's, see tick
JOIN_TIME = 0.1  # [s] lowering to place is sensed from then at the latest (see PickNode.joined)


SCHEMA = load_schema("pick")  # config/schema/pick.yaml


class PickNode(Node):
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
        ros = self.cfg.ros
        rob = self.cfg.robot
        self.arm_joints = list(rob["arm_joints"])
        self.jaw_joint = str(rob["jaw_joint"])
        self.jaws = tuple(rob["jaws"])
        if len(self.jaws) != 2:
            raise SystemExit(f"pick: {robot}.jaws must name two jaws, got {list(self.jaws)}")
        spec = load_robot_spec(robot, model_path)
        place_robot(spec, base_pos, base_yaw)
        model = spec.compile()
        self.ik = arm_ik(model, self.cfg)  # the world frame is TF's "world"
        self.fk_model, self.fk_data = model, mujoco.MjData(model)
        self.fk_site = model.site(str(rob["site"])).id
        self.fk_qadr = [model.jnt_qposadr[model.joint(j).id] for j in self.arm_joints]
        self.fk_jaw_qadr = int(model.jnt_qposadr[model.joint(self.jaw_joint).id])
        # every arm move is timed within the set the controller checks goals against
        # (limits_set; '' = the file's default): an unknown set stops the node here
        self.limits: JointLimits | None = None
        self.limits_fault: str | None = None
        try:
            self.limits = load_limits(robot, p["limits_set"] or None)
        except (PhysaiError, OSError) as exc:
            if p["limits_set"]:  # a set asked for by name that is not there
                raise SystemExit(f"pick: limits_set {p['limits_set']!r}: {exc}") from exc
            self.limits_fault = f"no joint limits to time a place by: {exc}"
        self.place_load = bool(p["place_load"])
        # the least squeeze the gripper sets: the SO-101 jaw's dry friction lives in the model
        # (what the sim steps, what the driver's calibration halves), the Franka Hand's floor
        # in its data; a target below it is raised (planned) or refused (servo, parameter)
        self.jaw_friction = float(
            model.dof_frictionloss[model.jnt_dofadr[model.joint(self.jaw_joint).id]]
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
        # the latest pose [m] and its stamp [s] of every TF frame seen as a child of the world
        self.frames: dict[str, tuple[np.ndarray, float]] = {}
        self.rotations: dict[str, np.ndarray] = {}  # their orientations (w, x, y, z)
        fixed = np.asarray(self.target, dtype=float) if self.target[2] >= 0.0 else None
        self.object = PickObject(self.cube_frame, fixed)  # what the running pick picks
        self.pending = bool(p["autostart"])  # a pick to start once ready (autostart or a goal)
        self.goal = None  # the /pick goal being served (None: the autostart pick, or idle)
        self.goal_done: Future | None = None  # its result, awaited by the execute callback
        self.goal_t0 = math.nan  # [s] when the goal was accepted
        self.time_limit = math.inf  # [s] the goal's, from its acceptance
        self.feedback_at = -math.inf  # [s] the last feedback sent
        self.arm_handle = None  # the arm goal running on the controller (cancelled on cancel)
        self.machine: PickMachine | None = None
        self.squeeze = math.nan
        self.site_at_grip = math.nan  # [m] gripper-site height when the close ended
        self.jaw_sent: tuple[float, float] | None = None  # the force close's last jaw goal
        self.jaw_start = math.nan  # [s] when the close's first jaw goal starts
        self.peak_force = 0.0  # [N] largest jaw force seen while closing
        self.jaw_in_flight = 0  # jaw goals sent (or due) that the controller has not answered
        self.reference: np.ndarray | None = None  # where the arm controller holds the arm
        self.create_subscription(
            JointTrajectoryControllerState,
            interfaces.CONTROLLER_STATE,
            self.on_controller,
            stream_qos(10),
        )
        self.create_subscription(
            JointState, interfaces.JOINT_STATES, self.on_joints, stream_qos(10)
        )
        self.create_subscription(TFMessage, interfaces.TF, self.on_tf, stream_qos(100))
        for jaw in self.jaws:
            self.create_subscription(
                WrenchStamped,
                f"{interfaces.JAW_CONTACT_PREFIX}/{jaw}",
                lambda m, j=jaw: self.on_wrench(j, m),
                stream_qos(10),
            )
        self.arm = ActionClient(self, FollowJointTrajectory, interfaces.FOLLOW_JOINT_TRAJECTORY)
        self.gripper_action = str(rob["gripper_action"])
        self.gripper = ActionClient(self, GripperCommand, self.gripper_action)
        self.grasp_client = None  # franka_gripper's Grasp, for force_close grasp only
        self.grasp_result: tuple[bool, str] | None = None  # (success, error) once it came
        if self.cfg.grasping:
            try:
                from franka_msgs.action import Grasp
            except ImportError as exc:
                raise SystemExit(f"pick: force_close grasp needs franka_msgs ({exc})") from exc
            self.grasp_client = ActionClient(self, Grasp, str(rob["grasp_action"]))
        self.pub_state = self.create_publisher(String, interfaces.PICK_STATE, LATCHED)
        self.pub_outcome = self.create_publisher(String, interfaces.PICK_OUTCOME, LATCHED)
        self.server = ActionServer(
            self,
            Pick,
            interfaces.PICK_ACTION,
            execute_callback=self.execute,
            cancel_callback=self.on_cancel,
        )
        self.timer = self.create_timer(1.0 / ros["control_rate"], self.tick)
        self.lead = float(ros["command_lead"])  # [s] see config/pick.yaml
        self.chain = GoalChain(self.lead)  # arm goals start where the last one really ends
        self.jaw_delay = self.lead  # [s] after the close state began, the jaw was commanded
        self.report_at: float | None = None  # [s] the machine is done; report once the arm is
        self.phase = 0  # counts the goals sent, so a stale goal's reply is recognised
        self.arm_phase = 0  # the phase of the last arm goal: it is in charge until replaced
        self.trouble: str | None = None  # a controller's rejection or abort, acted on at tick
        # the silence watchdog, on the steady clock (a stopped sim clock stops the node's timers)
        sim_time = bool(self.get_parameter("use_sim_time").value)
        self.quiet = SilenceWatch(self.silence_timeout, self.now(), time.monotonic(), sim_time)
        self.waiting_logged = time.monotonic()  # [s, steady] what a pick not started waits for
        self.watchdog = self.create_timer(
            0.1, self.watch_silence, clock=Clock(clock_type=ClockType.STEADY_TIME)
        )
        self.plan: dict | None = None  # the planner's answer, for the outcome
        self.refused: str | None = None
        if self.plan_fields is not None:  # the target comes later: ask, then check capacity
            self.planner = self.create_client(PlanGrasp, interfaces.PLAN_GRASP)
            self.plan_future = None
            self.plan_deadline = time.monotonic() + self.plan_src.timeout
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

    def floor(self) -> JawFloor | HandFloor:
        """The least squeeze the gripper sets (see ``__init__``), whatever the close of the
        running pick (a goal may ask for a force close of a node configured for the cap)."""
        if self.cfg.robot.get("force_close") == "grasp":  # the hand's data, one place
            from physai_ros.config import load_sim_config  # (config/sim_robots.yaml)

            hand = load_sim_config()["robots"][self.robot]["franka_hand"]
            return HandFloor(float(hand["min_force"]))
        p = self.cfg.force or self.force_base
        return JawFloor(self.jaw_friction, p.lever, p.tolerance)

    def raise_to_hand_floor(self) -> None:
        """A Franka Hand squeezes with at least its floor whatever it is told: a parameter
        target below it is raised, and the log and the outcome say so."""
        p, floor = self.cfg.force, self.floor()
        if not self.cfg.grasping or p.target >= floor.force:
            return
        self.raised = {"from_N": p.target, "to_N": floor.force, "why": floor.why}
        self.cfg = dataclasses.replace(self.cfg, force=dataclasses.replace(p, target=floor.force))
        self.get_logger().warning(
            f"force.target {p.target:g} N {floor.why}: squeezing with {floor.force:g} N"
        )

    def check_capacity(self) -> None:
        """Refuse a target beyond the cap, or a contact force the jaw's friction swallows,
        before anything moves: say so, send nothing."""
        p = self.cfg.force
        self.refused = capacity_fault(p) or self.floor().contact_fault(p.contact)
        if self.refused is not None:
            self.refuse(self.refused)

    # --- the force target from the planner ----------------------------------------------
    def planning(self) -> bool:
        """Whether the pick still waits for its planned force target."""
        return self.plan_fields is not None and self.plan is None and self.refused is None

    def ask_planner(self) -> None:
        """Send the plan request once the service is there; abort on the deadline (run from
        the steady-clock watchdog too: it ticks without a sim clock)."""
        if not self.planning():
            return
        if time.monotonic() > self.plan_deadline:
            why = (
                NO_SERVICE
                if self.plan_future is None
                else f"plan_grasp gave no answer within {self.plan_src.timeout:.1f} s"
            )
            self.refused = why
            self.refuse(why)
            return
        if self.plan_future is None and self.planner.service_is_ready():
            request = PlanGrasp.Request()
            for name, value in self.plan_fields.items():
                setattr(request, name, value)
            self.plan_future = self.planner.call_async(request)
            self.plan_future.add_done_callback(self.on_plan)

    def on_plan(self, future) -> None:
        if not self.planning():  # answered after the deadline: the pick already ended
            return
        answer = future.result()
        self.plan = {
            "force_targets_N": [round(v, 4) for v in answer.force_targets],
            "basis": answer.force_target_basis,
            "simulated_squeeze_N": [round(v, 4) for v in answer.simulated_squeeze],
            "message": answer.message,
            "request": self.plan_fields,
            "raised": None,  # {from_N, to_N, why}: the plan was below the jaw's least squeeze
        }
        try:
            targets = list(answer.force_targets)
            p = self.cfg.force
            force, raised = planned_params(p, answer.success, answer.message, targets, self.floor())
        except InvalidInput as exc:
            self.refused = str(exc)
            self.refuse(self.refused)
            return
        self.plan["raised"] = self.raised = raised
        self.cfg = self.configured = dataclasses.replace(self.configured, force=force)
        raise_note = (
            "" if raised is None else f" (raised from {raised['from_N']} N: {raised['why']})"
        )
        self.get_logger().info(
            f"planned force targets {self.plan['force_targets_N']} N "
            f"({self.plan['basis']}; simulated squeeze {self.plan['simulated_squeeze_N']} N): "
            f"squeezing with {force.target:.4f} N per jaw{raise_note}"
        )
        self.check_capacity()

    # --- sensing -------------------------------------------------------------------------
    def on_joints(self, msg: JointState) -> None:
        self.quiet.heard(time.monotonic())
        velocity = list(msg.velocity) or [0.0] * len(msg.name)
        for name, q, v in zip(msg.name, msg.position, velocity, strict=False):
            self.joints[name] = (q, v)
        self.joints_stamp = measured_at(msg.header.stamp, self.now())

    def on_controller(self, msg: JointTrajectoryControllerState) -> None:
        if list(msg.joint_names) == self.arm_joints and len(msg.reference.positions) == len(
            self.arm_joints
        ):
            self.reference = np.array(msg.reference.positions)

    def on_wrench(self, jaw: str, msg: WrenchStamped) -> None:
        f = msg.wrench.force
        self.jaw_force[jaw] = math.sqrt(f.x * f.x + f.y * f.y + f.z * f.z)
        self.jaw_wrench[jaw] = (np.array([f.x, f.y, f.z]), msg.header.frame_id)
        self.jaw_stamp[jaw] = measured_at(msg.header.stamp, self.now())

    def on_tf(self, msg: TFMessage) -> None:
        """Keep the latest pose of every frame published as a child of the world frame: the
        object a goal names is looked up here (tf2_ros is not in the pip-installed ROS, so the
        frames are read from /tf; an object must be published relative to the world frame)."""
        for t in msg.transforms:
            if t.header.frame_id == self.world:
                p = t.transform.translation
                stamp = measured_at(t.header.stamp, self.now())
                self.frames[t.child_frame_id] = (np.array([p.x, p.y, p.z]), stamp)
                r = t.transform.rotation
                self.rotations[t.child_frame_id] = np.array([r.w, r.x, r.y, r.z])

    @property
    def cube(self) -> tuple[np.ndarray, float] | None:
        """The object's last measured pose (position [m], stamp [s]), if it has a TF frame."""
        return None if self.object.frame is None else self.frames.get(self.object.frame)

    def cube_target(self, now: float) -> tuple[np.ndarray, float] | None:
        """The cube position to plan for and when it was measured: a fresh TF pose, else the
        given position (fresh by definition: it is where the user put the cube)."""
        cube = self.cube
        if cube is not None and now - cube[1] <= self.max_age:
            return cube
        if self.object.position is not None:
            return self.object.position, now
        return cube

    def both_touch(self) -> bool:
        return jaws_touch((self.jaw_force[j] for j in self.jaws), self.cfg.ros["touch_force"])

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

    def joined(self, machine: PickMachine, at: float) -> bool:
        """Whether the arm controller has joined the lower goal: its reference is where the
        machine commands at ``at`` (on the goal's timeline), or ``JOIN_TIME`` has passed.

        Why: a goal that reaches the controller before its stamp replaces the running one,
        and the controller blends to the new goal's first point; the arm then still moves
        towards it, and the lowering's stall signal, which starts from the arm's lag at its
        first reading, would read that blend as a stall."""
        if at - machine.t_state >= JOIN_TIME or self.reference is None:
            return True
        gap = np.abs(machine.command(at).arm - self.reference)
        return float(np.max(gap)) <= 0.5 * self.cfg.place.stall_lag

    def arm_measured(self) -> bool:
        return all(j in self.joints for j in self.arm_joints)

    def jaw_load(self) -> float:
        """The vertical force [N] the jaws carry (up on the object), for a place's lowering:
        each jaw's wrench turned from its jaw frame into the world by forward kinematics of
        the measured joints. NaN without ``place_load`` (a wrench that is only the grip's
        normal force says nothing about the load), or a wrench frame the model lacks."""
        if not self.place_load or self.jaw_joint not in self.joints or not self.arm_measured():
            return math.nan
        if any(jaw not in self.jaw_wrench for jaw in self.jaws):
            return math.nan
        self.fk_data.qpos[self.fk_qadr] = self.arm_positions()
        self.fk_data.qpos[self.fk_jaw_qadr] = self.joints[self.jaw_joint][0]
        mujoco.mj_kinematics(self.fk_model, self.fk_data)
        load = 0.0
        for jaw in self.jaws:
            force, frame = self.jaw_wrench[jaw]
            body = mujoco.mj_name2id(self.fk_model, mujoco.mjtObj.mjOBJ_BODY, frame)
            if body < 0:
                return math.nan
            on_jaw = self.fk_data.xmat[body].reshape(3, 3) @ force  # world frame
            load -= float(on_jaw[2])  # the object pushes the jaw down as much as it is held up
        return load

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

    def note_release(self) -> None:
        """Where the gripper site is as the jaw begins to open: the robot's own witness of
        where it set the object down."""
        if self.arm_measured():
            self.released = self.site_position()

    # --- acting --------------------------------------------------------------------------
    def now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def missing(self, now: float) -> list[str]:
        """What the pick still waits for before it starts; nothing: ready."""
        out = []
        absent = [n for n in [*self.arm_joints, self.jaw_joint] if n not in self.joints]
        if absent:
            out.append(f"joint states of {absent}")
        if self.reference is None:
            out.append(f"the arm controller's state ({interfaces.CONTROLLER_STATE})")
        cube = self.cube_target(now)  # fresh: a graph still starting up may lag behind
        if cube is None:
            out.append(f"the cube's pose ({self.object.describe()})")
        elif now - cube[1] > self.max_age:
            out.append(f"a fresh cube pose (the last is {now - cube[1]:.2f} s old)")
        servers = [
            (self.arm, interfaces.FOLLOW_JOINT_TRAJECTORY),
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

    def send_phase(self, now: float, start: float) -> None:
        """The current state's arm motion sampled from ``now``, stamped to start at ``start``
        (``GoalChain``: command_lead ahead, or where the previous goal really ends), so phases
        join where the previous one ended even when a goal reached the controller late."""
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
        what = f"{self.machine.state} arm goal"
        self.chain.sent(self.phase, start, float(times[-1]), sent_at=now)
        self.arm_phase = self.phase
        self._watch(self.arm.send_goal_async(goal), what, self._arm_done, chained=True)

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
        if phase == self.arm_phase and self.machine is not None and not self.machine.finished:
            self.trouble = f"{what} ended with error {result.error_code}: {result.error_string}"

    def enter(self, state: str, now: float, shift: float | None = None) -> None:
        """Send what the machine's new ``state`` commands: its arm phase as one goal (and the
        jaw, in the states that move it).

        ``shift`` [s]: the state was entered on the running goal's own timeline, that much
        behind the machine's clock (a place's states, see ``tick``): its goal
        is stamped to start now, replacing the running goal at once, where the arm really is
        on it."""
        self.phase += 1
        self.pub_state.publish(String(data=state))
        self.get_logger().info(f"state {state} at t = {now:.3f} s")
        real = self.now()
        if shift is not None:  # sampled on the machine's clock, started now
            self.chain.forget()
            now, start = real - shift, real
        else:
            now = real  # the stamps below are from this instant
            if state == "abort":  # the controller holds the arm: start from there, now
                self.chain.forget()
            start = self.chain.start(now)
        self.shift = start - now  # the arm runs this state's goal this far behind the machine
        if shift is None and start > now + self.lead + 1e-3:
            self.get_logger().warning(
                f"{state}: the previous arm goal reached the controller late; this phase "
                f"starts {start - now - self.lead:.3f} s later to join where it ends"
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
        self.send_phase(now, start)

    def tick(self) -> None:
        if self.planning():
            return
        now = self.now()
        if self.goal is not None and self.goal.is_cancel_requested:
            self.cancel_pick(now)
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
        over = now - self.goal_t0 > self.time_limit
        if over and self.trouble is None and machine.state not in ("abort", "cancel"):
            self.trouble = f"time limit {self.time_limit:g} s reached"
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
        # A place senses on the arm's own timeline: the arm runs a state's goal ``shift``
        # behind the machine's clock (command_lead, or where the previous goal really ended).
        # The end of lift measures where the object sits in the jaws (the arm must be at the
        # lift pose, not half way up); the lower goal starts when the descend goal has ended
        # (sent earlier, it would replace the descend goal and the controller's blend would
        # shake the load the lowering starts from); lowering compares the measured arm with
        # what it was commanded at that instant, and a support ends the descent where the arm
        # really is. Each place state ends when the arm has done it, so the feedback's state
        # is the arm's (open, the jaw opening, would otherwise show for a fraction of its time).
        at = now
        on_arm_time = machine.place is not None and before in ARM_TIMED
        if on_arm_time:
            at = now - self.shift
            if at < machine.t_state:  # the arm is still on the previous state's goal
                return
            if before == "lower" and not self.joined(machine, at):
                return
        state = machine.update(at, self.sensed(now))
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
                self.enter(state, at, shift=self.shift if on_arm_time else None)

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
            ages = [now - self.joints_stamp, *(now - self.jaw_stamp[j] for j in self.jaws)]
            ages = [age + stale_by for age in ages]
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
        self.pub_outcome.publish(String(data=json.dumps(report)))
        self.get_logger().info(f"pick finished: {json.dumps(report)}")
        self.end_goal(report, now)
        self.machine, self.report_at = None, None  # ready for the next goal

    def judge_place(self, now: float, stale_by: float) -> dict:
        """The place's verdict and its numbers for the outcome: from the object's fresh pose
        (its centre within 1 cm of the target and upright, no jaw on it), else from the robot
        (where its site was as the jaw opened, support sensed, no jaw contact now).
        ``stale_by`` as in ``finish``."""
        m = self.machine
        target = m.place.position
        touch = self.cfg.ros["touch_force"]
        jaw_touch = any(self.jaw_force[j] > touch for j in self.jaws)
        reading = None
        if self.released is not None:  # its age: the readings of now (the jaws after the
            # retreat); the release point is a reading of its own instant, kept
            ages = [now - self.joints_stamp, *(now - self.jaw_stamp[j] for j in self.jaws)]
            age = max(ages) + stale_by
            reading = RobotPlaceReading(self.released, m.support_by is not None, jaw_touch, age)
        robot = place_robot_verdict(
            reading, target, grip_offset=self.cfg.offsets["down"], max_age=self.max_age
        )
        pose = None
        cube, frame = self.cube, self.object.frame
        if cube is not None and frame in self.rotations:
            pose = place_pose_verdict(
                cube[0],
                self.rotations[frame],
                now - cube[1] + stale_by,
                target,
                jaw_clear=not jaw_touch,
                max_age=self.max_age,
                source=f"TF frame {frame!r}",
            )
        final, judge = final_place_verdict(robot, pose)

        def cm(value: float) -> float | None:
            return None if math.isnan(value) else round(value * 100.0, 3)

        return {
            "outcome": final.outcome,
            "judged_by": judge,
            "reason": final.reason,
            "target_m": [round(float(v), 4) for v in target],
            "error_cm": cm(final.error),
            "tilt_deg": None if math.isnan(final.tilt) else round(math.degrees(final.tilt), 2),
            "support_by": m.support_by,
            "robot": _verdict(robot),
            "cube_pose": None if pose is None else _verdict(pose),
        }

    def refuse(self, reason: str) -> None:
        """Publish an aborted outcome at once for a pick that cannot be done as configured
        (the force target beyond the cap): the robot is never commanded, nothing measured."""
        report = dict.fromkeys(
            ("judged_by", "lift_cm", "robot", "cube_pose", "close_s", "squeeze_N", "ik_error_mm")
        )
        report.update(
            outcome="aborted",
            reason=reason,
            state="aborted",
            abort_reason=reason,
            jaw_forces_N=None,
            time_s=round(self.now(), 3),
            close_mode=self.cfg.close_mode,
            force=self.force_report(),
        )
        self.get_logger().error(f"{reason}; the pick does not start")
        self.pub_state.publish(String(data="aborted"))
        self.pub_outcome.publish(String(data=json.dumps(report)))
        self.pending = False  # the start's pick; goals are still served, each checked

    # --- the pick action -----------------------------------------------------------------
    async def execute(self, handle) -> Pick.Result:
        """Serve one goal: check it before anything moves (a refusal is the result REJECTED
        with the reason: an action server's own rejection carries none), then run a fresh
        machine from where the arm is and return the judged outcome when the pick ends."""
        now = self.now()
        checked = self.check_goal(handle.request, now)
        if isinstance(checked, str):
            self.get_logger().warning(f"pick goal rejected: {checked}")
            handle.abort()
            return rejected(checked, self.jaws)
        self.object, self.cfg, self.place = checked
        self.goal, self.goal_t0 = handle, now
        limit = float(handle.request.time_limit)
        self.time_limit = limit if limit > 0.0 else math.inf
        self.goal_done = Future()
        self.pending = True
        where = "" if self.place is None else f", place at {np.round(self.place, 4).tolist()} m"
        self.get_logger().info(f"pick goal accepted: {self.object.describe()}{where}")
        return await self.goal_done

    def check_goal(
        self, goal: Pick.Goal, now: float
    ) -> tuple[PickObject, PickConfig, np.ndarray | None] | str:
        """The goal's object, configuration and place position (None: lift and hold), or why
        it is refused: busy, an unknown or stale object, a close the gripper cannot do, a time
        limit below zero, an object the arm cannot reach, a place position in another frame,
        not finite, below the table or out of reach (the machine's own checks)."""
        if self.goal is not None or self.machine is not None or self.pending:
            state = "waiting to start" if self.machine is None else self.machine.state
            return BUSY.format(state=state)
        place = goal_place(goal, self.world)
        if isinstance(place, str):
            return place
        limit = float(goal.time_limit)
        if not (math.isfinite(limit) and limit >= 0.0):
            return f"time_limit must be >= 0 [s] (0 = none), got {limit!r}"
        target = goal_object(goal, self.world, self.frames, now, self.max_age)
        if isinstance(target, str):
            return target
        if goal.close == Pick.Goal.CLOSE_CONFIGURED and self.refused is not None:
            return self.refused
        if goal.close == Pick.Goal.CLOSE_CONFIGURED and self.planning():
            return "the planned force target has not come from the grasp planner yet"
        planned = self.configured if self.plan is not None else None
        cfg = goal_config(
            goal, self.configured, self.force_base, planned, self.floor().contact_fault
        )
        if isinstance(cfg, str):
            return cfg
        position = target.position if target.frame is None else self.frames[target.frame][0]
        home = np.asarray(cfg.robot["home"], dtype=float)
        for name in ("pre", "down", "lift"):  # as the machine will solve them, from home
            point = position + np.array([0.0, 0.0, cfg.offsets[name]])
            result = self.ik(point, home)
            if not result.converged:
                return (
                    f"out of reach: no arm pose puts the gripper at the {name} point "
                    f"{np.round(point, 4).tolist()} m (IK error {result.error * 1e3:.1f} mm)"
                )
        if place is not None:
            if self.limits is None:
                return str(self.limits_fault)
            try:  # the machine refuses a place it cannot do, before anything moves
                PickMachine(cfg, self.ik, home, t0=now, place=place, limits=self.limits)
            except InvalidInput as exc:
                return f"place_pose refused: {exc}"
        return target, cfg, place

    def on_cancel(self, handle) -> CancelResponse:
        """Accept a cancel of the goal being served; the next tick ends the pick there."""
        return CancelResponse.ACCEPT if handle is self.goal else CancelResponse.REJECT

    def start_pick(self, now: float) -> None:
        """A fresh machine from where the controller holds the arm (inside its ranges), with
        every per-pick reading reset."""
        self.pending = False
        self.squeeze = self.site_at_grip = self.jaw_start = math.nan
        self.jaw_sent, self.trouble, self.grasp_result = None, None, None
        self.peak_force, self.jaw_delay = 0.0, self.lead
        self.arm_handle, self.feedback_at = None, -math.inf
        self.released, self.shift = None, 0.0
        self.chain.forget()
        if self.goal is None:
            self.goal_t0 = now
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

    def cancel_pick(self, now: float) -> None:
        """The client canceled: the machine slows the arm to rest along its path within the
        limits (``PickMachine.cancel``), sent as one more arm goal that joins the running one
        where the arm is on it (``GoalChain.lag``); the jaw is left as commanded (a held
        object stays squeezed). The goal ends CANCELED, with the state the pick stopped in,
        once the arm is at rest (``tick``)."""
        self.pending = False
        machine = self.machine
        if machine is None:  # not started yet
            self.end_goal(
                {"outcome": "canceled", "reason": "canceled before it started", "state": "waiting"},
                now,
            )
            return
        if machine.state in ("cancel", "canceled"):
            return
        self.get_logger().info(f"pick canceled in state {machine.state}: slowing to rest")
        lag = self.chain.lag(now)
        at = now  # the machine's clock: a place's states run on the arm's own timeline (tick)
        if machine.place is not None and machine.state in ARM_TIMED:
            at = max(now - self.shift, machine.t_state)
        machine.cancel(at)
        self.phase += 1
        self.pub_state.publish(String(data=machine.state))
        self.send_phase(at, at + lag)
        if machine.finished:
            self.report_at = max(now, self.chain.end(now))

    def end_goal(self, report: dict, now: float) -> None:
        """End the goal being served (if any) with the outcome ``report``."""
        handle, done = self.goal, self.goal_done
        if handle is None or done is None:
            return
        result = result_from_report(report, self.jaws, now - self.goal_t0)
        if report["outcome"] == "canceled":
            handle.canceled()
        elif report["outcome"] in ("held", "placed"):
            handle.succeed()
        else:
            handle.abort()
        self.goal, self.goal_done, self.time_limit = None, None, math.inf
        self.cfg, self.place = self.configured, None
        done.set_result(result)

    def send_feedback(self, now: float) -> None:
        """The state, the jaw forces and the lift since the close, every FEEDBACK_PERIOD."""
        if self.goal is None or now - self.feedback_at < FEEDBACK_PERIOD:
            return
        self.feedback_at = now
        lift = 0.0
        if self.machine.closed and self.arm_joints[0] in self.joints:
            lift = self.site_height() - self.site_at_grip
        self.goal.publish_feedback(
            Pick.Feedback(
                state=self.machine.state,
                jaw_names=list(self.jaws),
                jaw_forces=[float(self.jaw_force[j]) for j in self.jaws],
                lift=float(lift),
                elapsed=float(now - self.goal_t0),
            )
        )

    def force_report(self) -> dict:
        """The force close's numbers for the outcome: target and band, the squeeze per jaw
        (mean of the two jaws) measured now (None before a pick started) and when the close
        ended, whether the final one is within tolerance, the last effort commanded and the
        peak jaw force while closing."""
        p = self.cfg.force
        close = None if self.machine is None else self.machine.force_close
        final = 0.5 * sum(self.jaw_force.values()) if self.machine is not None else math.nan
        at_close = self.squeeze / 2.0
        return {
            "target_N": p.target,
            "tolerance": p.tolerance,
            "capacity_N": round(p.capacity, 3),
            "squeeze_per_jaw_N": None if math.isnan(final) else round(final, 3),
            "within_tolerance": p.band[0] <= final <= p.band[1],
            "squeeze_at_close_end_N": None if math.isnan(at_close) else round(at_close, 3),
            "peak_while_closing_N": round(self.peak_force, 3),
            "effort_Nm": None if close is None else round(close.effort, 4),
            "phase": None if close is None else close.phase,
            "source": self.plan_src.source,
            "raised": self.raised,
            "plan": self.plan,
        }


def _verdict(verdict: PlaceVerdict) -> dict:
    """A place verdict for the outcome JSON (NaN, not JSON, as null), in cm and degrees."""
    error, tilt = verdict.error, verdict.tilt
    return {
        "outcome": verdict.outcome,
        "error_cm": None if math.isnan(error) else round(error * 100.0, 3),
        "tilt_deg": None if math.isnan(tilt) else round(math.degrees(tilt), 2),
        "reason": verdict.reason,
    }


def main(args: list[str] | None = None) -> None:
    run_node(PickNode, args)


if __name__ == "__main__":
    main()
