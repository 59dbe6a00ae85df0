"""hand_pick: the seed's whole pipeline over ROS with the Barrett-like hand on the simulated
Panda -- plan, pre-grasp through the trajectory node, close to the contacts, force close, lift.

It asks the ``grasp_planner`` node's ``plan_grasp`` service for a grasp of the soft object
(config/hand_pick.yaml ``object``: what the graph also gives the sim bridge), once, before
anything moves, and runs the pure :class:`~physai_ros.core.pick.hand_machine.HandPickMachine`: the
arm's
approach, reach and lift as ``FollowJointTrajectory`` goals to the trajectory node (one timed
point each; it checks them against the Panda's limits and samples them for the arm controller),
the spread and each finger as ``GripperCommand`` goals to their controllers
(``f<k>_controller/gripper_cmd``: position, and ``max_effort`` the finger's torque cap, which
the force close sets), the forces from the fingers' ``jaw_contact/f<k>`` wrenches, the object
from ``soft_object_pose`` and ``soft_object_strain``. State on ``hand_pick/state``, the outcome
(latched, the action's typed result) on ``hand_pick/outcome``: held / crushed / dropped / not
closed / no measurement, or aborted with the reason (no plan, out of reach, a target beyond a
finger's capacity, a finger's force close that failed, an arm move that failed, a silent
robot).

The pick is also the ``/pick`` action (``physai_ros_interfaces/action/Pick``, served as the jaw
pick serves it: ``physai_ros.nodes._pick_server``): with ``autostart`` (the default) the node
picks the soft object once at start, then serves goals, one at a time, each a fresh machine
with the plan asked at start moved onto the goal's object (a TF frame under ``world_frame``,
the graph's ``grasp_object``, or a world position). A goal the hand cannot do is refused before
anything moves (the result REJECTED with the reason): a place (the hand lifts and holds), a cap
close or a single force target (each finger squeezes to its own planned target), an unknown or
stale object, one out of reach. A cancel slows the arm to rest along its path within the
limits and holds it there (``HandPickMachine.cancel``); the fingers keep their command: they
keep squeezing.
Docs: docs/hand_pick.md, docs/force_close.md "The three-finger hand".
"""

from __future__ import annotations

import math
import time

import numpy as np
from action_msgs.msg import GoalStatus
from control_msgs.action import FollowJointTrajectory, GripperCommand
from geometry_msgs.msg import PoseStamped, WrenchStamped
from physai_ros_interfaces.action import Pick
from physai_ros_interfaces.srv import PlanGrasp
from rclpy.action import ActionClient
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64, String
from trajectory_msgs.msg import JointTrajectoryPoint

from physai_ros import interfaces
from physai_ros.core.motion.limits import load_limits
from physai_ros.core.pick.hand_grasp import INNER_JOINTS, HandKinematics, planned_grasp
from physai_ros.core.pick.hand_machine import (
    HandPickConfig,
    HandPickMachine,
    HandSensing,
    hand_verdict,
    plan_request,
)
from physai_ros.errors import PhysaiError
from physai_ros.models import load_robot_spec, place_robot
from physai_ros.models.joints import PANDA_ARM_JOINTS
from physai_ros.nodes._common import (
    LATCHED,
    ROBOT_PARAMS,
    declare_robot_params,
    declare_schema,
    load_schema,
    run_node,
    stream_qos,
    unflatten,
)
from physai_ros.nodes._messages import duration_msg, measured_at
from physai_ros.nodes._pick_action import PickObject, goal_object, hand_result_from_report
from physai_ros.nodes._pick_server import (
    PickPlumbing,
    PickServer,
    PlannerCall,
    silence_watch,
)
from physai_ros.nodes._tf_listener import TfListener

SCHEMA = load_schema("hand_pick")  # config/schema/hand_pick.yaml
FINGERS = ("F1", "F2", "F3")  # the fingers' names in the outcome, the feedback and the result
PLANNED_CLOSES = (Pick.Goal.CLOSE_CONFIGURED, Pick.Goal.CLOSE_PLANNED)
HAND_CLOSES = (
    "the hand closes each finger to its own planned force target (close 0 configured or 3 planned)"
)
REFUSED_CLOSES = {
    Pick.Goal.CLOSE_CAP: f"close cap refused: {HAND_CLOSES}; a cap close squeezes the soft "
    "object with every finger's full torque",
    Pick.Goal.CLOSE_FORCE: f"close force refused: {HAND_CLOSES}; one force_target for all "
    "three fingers would not balance the planned grasp",
}


class HandPickNode(PickPlumbing, Node):
    def __init__(self) -> None:
        super().__init__("hand_pick")
        robot, model_path, base_pos, base_yaw = declare_robot_params(self, SCHEMA)
        if robot != "panda_barrett":
            raise SystemExit(f"hand_pick: the hand pick runs robot panda_barrett, not {robot!r}")
        p = declare_schema(self, SCHEMA.without(*ROBOT_PARAMS))
        tree = unflatten(p)
        spec = load_robot_spec(robot, model_path)
        place_robot(spec, base_pos, base_yaw)
        self.kin = HandKinematics(spec.compile(), {"tol": 1e-5, "rot_tol": 1e-4, "max_iters": 300})
        self.limits = load_limits("panda").select(PANDA_ARM_JOINTS)  # the arm moves' timing
        try:
            self.cfg = HandPickConfig.from_tree(tree, self.kin.finger_limits)
            self.request = plan_request(tree["object"], tree["plan"])
        except PhysaiError as exc:
            raise SystemExit(f"hand_pick: {exc}") from exc
        self.p, names = p, tree["names"]
        self.joints: dict[str, tuple[float, float]] = {}
        self.joints_stamp = -math.inf
        self.contacts = list(names["contacts"])
        self.forces = dict.fromkeys(self.contacts, 0.0)
        self.force_stamp = dict.fromkeys(self.contacts, -math.inf)
        self.object: tuple[np.ndarray, float] | None = None  # (centre of mass [m], stamp [s])
        self.strain, self.strain_peak = math.nan, 0.0
        self.create_subscription(
            JointState, interfaces.JOINT_STATES, self.on_joints, stream_qos(10)
        )
        for name in self.contacts:
            self.create_subscription(
                WrenchStamped,
                f"{interfaces.JAW_CONTACT_PREFIX}/{name}",
                lambda m, n=name: self.on_wrench(n, m),
                stream_qos(10),
            )
        self.create_subscription(PoseStamped, names["object_pose"], self.on_object, stream_qos(10))
        self.create_subscription(Float64, names["object_strain"], self.on_strain, stream_qos(10))
        self.arm = ActionClient(self, FollowJointTrajectory, names["trajectory_action"])
        self.finger_names = list(names["fingers"])
        self.hand = {
            n: ActionClient(self, GripperCommand, interfaces.under(n, interfaces.GRIPPER_COMMAND))
            for n in [*self.finger_names, names["spread"]]
        }
        self.spread_name = names["spread"]
        self.sent: dict[str, tuple[float, float]] = {}
        self.in_flight = dict.fromkeys(self.hand, 0)
        self.plan: dict | None = None
        self.grasp = None  # (PlannedGrasp, levers [m]): the plan, for every pick
        self.plan_fault: str | None = None  # why there is no plan
        self.machine: HandPickMachine | None = None
        self.move_sent, self.move_result = 0, None
        self.peak = np.zeros(3)
        self.rise_from = math.nan
        self.state_said = ""
        self.world, self.max_age = p["world_frame"], float(p["max_age"])
        self.tf = TfListener(self, self.world)  # every TF link seen, chained on lookup
        self.target: PickObject | None = None  # a goal's object; None: the soft object's pose
        self.pending = bool(p["autostart"])  # a pick to start once ready
        self.pub_state = self.create_publisher(String, interfaces.HAND_PICK_STATE, LATCHED)
        self.server = PickServer(
            self,
            self.running,
            self.check_goal,
            self.begin_goal,
            lambda report, duration: hand_result_from_report(report, FINGERS, duration),
            interfaces.HAND_PICK_OUTCOME,
            "hand pick",
        )
        self.planner = PlannerCall(
            self,
            names["plan_service"],
            self.request,
            float(p["plan.timeout"]),
            self.on_plan,
            self.plan_failed,
        )
        self.quiet = silence_watch(self, p["silence_timeout"], self.watch)
        self.create_timer(1.0 / p["control_rate"], self.tick)
        self.get_logger().info(
            f"hand pick of a {tree['object']['shape']} ({self.request['size']} m, "
            f"{self.request['mass']} kg, E {self.request['young']:g} Pa): asking "
            f"{names['plan_service']} for a grasp"
        )

    # --- sensing -----------------------------------------------------------------------------
    def on_wrench(self, name: str, msg: WrenchStamped) -> None:
        f = msg.wrench.force
        self.forces[name] = math.sqrt(f.x * f.x + f.y * f.y + f.z * f.z)
        self.force_stamp[name] = measured_at(msg.header.stamp, self.now())

    def on_object(self, msg: PoseStamped) -> None:
        p = msg.pose.position
        self.object = (np.array([p.x, p.y, p.z]), measured_at(msg.header.stamp, self.now()))

    def on_strain(self, msg: Float64) -> None:
        self.strain = float(msg.data)
        if self.machine is not None and self.machine.state in ("close", "lift", "hold"):
            self.strain_peak = max(self.strain_peak, self.strain)

    def object_now(self, now: float) -> tuple[np.ndarray, float] | None:
        """Where the pick's object is and when it was measured: a goal's TF frame, a goal's
        position (fresh by definition: where the user says it lies), else the soft object."""
        if self.target is None:
            return self.object
        if self.target.frame is not None:
            return self.frame_pose(self.target.frame)
        return self.target.position, now

    def judged(self) -> tuple[np.ndarray, float] | None:
        """The object pose the verdict reads: the goal's TF frame, else the soft object's."""
        if self.target is not None and self.target.frame is not None:
            return self.frame_pose(self.target.frame)
        return self.object

    def frame_pose(self, frame: str) -> tuple[np.ndarray, float] | None:
        """A TF frame's world position [m] and stamp [s], None without a chain to it."""
        pose = self.tf.pose(frame)
        return None if pose is None else (pose[0], pose[2])

    def sensed(self, now: float) -> HandSensing:
        q = [self.joints.get(j, (math.nan, 0.0)) for j in INNER_JOINTS]
        target = self.object_now(now)
        return HandSensing(
            fingers=np.array([v[0] for v in q]),
            speeds=np.array([v[1] for v in q]),
            forces=np.array([self.forces[c] for c in self.contacts]),
            acked=tuple(self.in_flight[n] == 0 for n in self.finger_names),
            object_pos=None if target is None else target[0],
            object_stamp=None if target is None else target[1],
            move=self.move_result,
        )

    def missing(self) -> list[str]:
        """What the pick waits for before it starts."""
        out = [f"joint states of {j}" for j in PANDA_ARM_JOINTS if j not in self.joints][:1]
        if self.object is None:
            out.append("the object's pose")
        out += [f"the action server {n}" for n, c in self.hand.items() if not c.server_is_ready()]
        if not self.arm.server_is_ready():
            out.append("the trajectory node's action")
        if self.now() == 0.0:
            out.append(f"the clock ({interfaces.CLOCK})")
        return out

    # --- the plan ----------------------------------------------------------------------------
    def plan_failed(self, asked: bool) -> None:
        """No plan by ``plan.timeout``: every pick ends aborted before it moves."""
        why = "no plan in time" if asked else "no plan_grasp service"
        self.no_plan(f"{why} within {self.p['plan.timeout']:g} s")

    def no_plan(self, reason: str) -> None:
        self.plan_fault = reason
        self.get_logger().error(f"no grasp plan: {reason}")
        if self.machine is not None:
            self.machine.plan_failed(self.now(), reason)

    def on_plan(self, answer: PlanGrasp.Response) -> None:
        self.plan = {
            "success": answer.success,
            "message": answer.message,
            "force_targets_N": [round(v, 4) for v in answer.force_targets],
            "basis": answer.force_target_basis,
            "simulated_squeeze_N": [round(v, 4) for v in answer.simulated_squeeze],
            "request": self.request,
        }
        if not answer.success:
            self.no_plan(f"grasp planner: {answer.message}")
            return
        try:
            o = answer.object_pose.position
            grasp = planned_grasp(
                answer.joint_names,
                answer.joint_positions,
                answer.force_targets,
                [[c.x, c.y, c.z] for c in answer.contacts],
                [[n.x, n.y, n.z] for n in answer.normals],
                [o.x, o.y, o.z],
            )
            levers = self.kin.levers(grasp)
        except PhysaiError as exc:
            self.no_plan(f"unusable plan: {exc}")
            return
        self.plan["levers_m"] = [round(float(v), 5) for v in levers]
        self.get_logger().info(
            f"planned: force targets {self.plan['force_targets_N']} N per finger "
            f"({answer.force_target_basis}), levers {self.plan['levers_m']} m; {answer.message}"
        )
        self.grasp = (grasp, levers)
        if self.machine is not None:
            self.machine.planned(self.now(), grasp, levers)
        elif not self.pending:  # idle: goals can come (clients wait for this latched state)
            self.publish_state("ready", self.now())

    # --- the pick action -----------------------------------------------------------------------
    def check_goal(self, goal: Pick.Goal, now: float) -> PickObject | str:
        """The goal's object, or why the hand refuses the goal (before anything moves; busy and
        a bad time limit are ``PickServer``'s): a place, a close other than the planned one,
        an unknown or stale object, no plan, an object the arm cannot reach with the grasp."""
        if goal.place:
            return "place refused: the hand lifts and holds the object (send place false)"
        if goal.close not in PLANNED_CLOSES:
            known = f"close {goal.close} unknown: 0 configured, 1 cap, 2 force, 3 planned"
            return REFUSED_CLOSES.get(goal.close, known)
        target = goal_object(goal, self.world, self.tf.buffer, now, self.max_age)
        if isinstance(target, str):
            return target
        if self.plan_fault is not None:
            return f"no grasp plan: {self.plan_fault}"
        if self.grasp is None:
            return "the grasp plan has not come from the grasp planner yet"
        at = target.position
        if target.frame is not None:  # (looked up a moment ago: it chains to the world)
            at = self.tf.buffer.lookup(target.frame).position
        try:
            self.kin.poses(self.grasp[0], at, self.cfg.approach_distance, self.cfg.lift_height)
        except PhysaiError as exc:
            return f"out of reach: {exc}"
        return target

    def begin_goal(self, target: PickObject, now: float) -> None:
        """A goal accepted: pick its object as soon as the next tick finds everything ready."""
        self.target, self.pending = target, True
        self.get_logger().info(f"pick goal accepted: {target.describe()}")

    def cancel_pick(self, now: float) -> None:
        """The client canceled: the machine slows the arm to rest along its path within the
        limits (``HandPickMachine.cancel``, sent as one more arm move) and keeps the fingers'
        command (a held object stays squeezed); the goal ends CANCELED, with the state the
        pick stopped in and what the fingers hold, once the arm is at rest (``tick``)."""
        self.pending = False
        machine = self.machine
        if machine is None:
            report = {"outcome": "canceled", "reason": "canceled before it started"}
            self.server.end(report | {"state": "waiting"}, now)
            return
        if machine.finished or machine.state == "cancel":
            return
        self.get_logger().info(f"pick canceled in state {machine.state}: slowing to rest")
        machine.cancel(now)
        self.publish_state(machine.state, now)
        self.send_commands()

    def feedback(self, elapsed: float) -> Pick.Feedback:
        """The state, each finger's force now and how far the object rose since the close."""
        pose = self.judged()
        rise = 0.0
        if pose is not None and math.isfinite(self.rise_from):
            rise = float(pose[0][2]) - self.rise_from
        return Pick.Feedback(
            state=self.machine.state,
            jaw_names=list(FINGERS),
            jaw_forces=[float(self.forces[c]) for c in self.contacts],
            lift=rise,
            elapsed=float(elapsed),
        )

    # --- acting ------------------------------------------------------------------------------
    def tick(self) -> None:
        now = self.now()
        self.planner.poll()
        if self.server.cancel_requested:
            self.cancel_pick(now)
        if self.machine is None:
            if self.pending and not self.missing():
                self.start_pick(now)
            return
        machine = self.machine
        if machine.state != self.state_said:  # changed in a callback (the plan came, or failed)
            self.publish_state(machine.state, now)
        if self.server.over(now) and machine.state not in ("abort", "cancel"):
            machine.abort(now, f"time limit {self.server.time_limit:g} s reached")
        if machine.finished:
            self.finish(now, canceled=machine.state == "canceled")
            return
        before = machine.state
        sensed = self.sensed(now)
        machine.update(now, sensed)
        if before == "close":
            self.peak = np.maximum(self.peak, sensed.forces)
        pose = self.judged()
        if before == "close" and machine.state == "lift" and pose is not None:
            self.rise_from = float(pose[0][2])
        if machine.state != before:
            self.publish_state(machine.state, now)
        self.send_commands()
        if machine.finished:
            self.finish(now, canceled=machine.state == "canceled")
        else:
            self.server.feedback(now, self.feedback)

    def start_pick(self, now: float) -> None:
        """A fresh machine from where the arm is, with the plan (when it has come) on it and
        every per-pick reading reset."""
        self.pending = False
        home = np.array([self.joints[j][0] for j in PANDA_ARM_JOINTS])

        def poses(grasp, at):
            return self.kin.poses(grasp, at, self.cfg.approach_distance, self.cfg.lift_height)

        self.machine = machine = HandPickMachine(self.cfg, poses, home, now, limits=self.limits)
        self.sent, self.peak, self.rise_from = {}, np.zeros(3), math.nan
        self.strain_peak = 0.0
        self.move_sent, self.move_result = 0, None
        self.server.started(now)
        self.publish_state("plan", now)
        if self.grasp is not None:
            machine.planned(now, *self.grasp)
        elif self.plan_fault is not None:
            machine.plan_failed(now, self.plan_fault)

    def publish_state(self, state: str, now: float) -> None:
        self.state_said = state
        self.pub_state.publish(String(data=state))
        self.get_logger().info(f"state {state} at t = {now:.3f} s")

    def send_commands(self) -> None:
        machine = self.machine
        move = machine.arm_move
        if move is not None and move.id != self.move_sent:
            self.move_sent = move.id
            self.send_move(move.id, move.q, move.duration)
        if machine.state in ("plan", "settle", "aborted"):
            return
        commands = dict(zip(self.finger_names, machine.finger_commands(), strict=True))
        commands[self.spread_name] = machine.spread_command()
        for name, command in commands.items():
            if self.sent.get(name) != command:
                self.sent[name] = command
                self.send_finger(name, *command)

    def send_move(self, move_id: int, q: np.ndarray, duration: float) -> None:
        goal = FollowJointTrajectory.Goal()
        goal.trajectory.joint_names = list(PANDA_ARM_JOINTS)
        goal.trajectory.points = [
            JointTrajectoryPoint(
                positions=q.tolist(),
                velocities=[0.0] * len(q),
                accelerations=[0.0] * len(q),
                time_from_start=duration_msg(duration),
            )
        ]

        machine = self.machine  # a move of an earlier pick answers nothing of this one

        def result(future) -> None:
            answer = future.result()
            ok = answer.status == GoalStatus.STATUS_SUCCEEDED
            if self.machine is not machine:
                return
            self.move_result = (
                move_id,
                ok,
                answer.result.error_string or f"status {answer.status}",
            )

        def responded(future) -> None:
            handle = future.result()
            if self.machine is not machine:
                return
            if not handle.accepted:
                self.move_result = (move_id, False, "the trajectory node rejected the goal")
                return
            handle.get_result_async().add_done_callback(result)

        self.arm.send_goal_async(goal).add_done_callback(responded)

    def send_finger(self, name: str, position: float, effort: float) -> None:
        goal = GripperCommand.Goal()
        goal.command.position, goal.command.max_effort = float(position), float(effort)
        self.in_flight[name] += 1

        def answered(future) -> None:
            self.in_flight[name] -= 1
            if not future.result().accepted and self.machine is not None:
                self.machine.abort(self.now(), f"{name} rejected the finger goal")

        self.hand[name].send_goal_async(goal).add_done_callback(answered)

    def watch(self) -> None:
        """The steady-clock watchdog: the planner's deadline, a silent robot."""
        self.planner.poll()
        machine = self.machine
        if machine is None or machine.finished:
            return
        if machine.state == "plan":
            return
        silent = self.quiet.check(self.now(), time.monotonic())
        if silent is not None:
            reason, silent_for = silent
            self.get_logger().error(f"{reason}; the pick ends here and sends no more goals")
            machine.abort_reason = reason
            machine.state = "aborted"
            self.finish(self.now(), stale_by=silent_for)

    def finish(self, now: float, stale_by: float = 0.0, canceled: bool = False) -> None:
        """Judge (from the object's pose and the fingers' forces), publish the outcome and end
        the goal with it; ready for the next pick. ``canceled``: the verdict says what the
        fingers hold where it stopped."""
        m, p, pose = self.machine, self.p, self.judged()
        forces = np.array([self.forces[c] for c in self.contacts])
        stamps = [self.joints_stamp, *self.force_stamp.values()]
        stamps.append(pose[1] if pose is not None else -math.inf)
        age = max(now - s for s in stamps) + stale_by
        rise = float(pose[0][2]) - self.rise_from if pose is not None else math.nan
        touching = int(np.sum(forces > self.cfg.fingers["touch"]))
        verdict = hand_verdict(
            m.closed, rise, touching, self.strain_peak, age,
            min_lift=p["min_lift"], strain_limit=p["strain_limit"], max_age=p["max_age"],
        )  # fmt: skip
        targets = None if m.grasp is None else m.grasp.targets
        tol = self.cfg.fingers["tolerance"]
        outcome = "aborted" if m.state == "aborted" else verdict.outcome
        reason = m.abort_reason if m.state == "aborted" else verdict.reason
        if canceled:
            where = m.canceled_in or m.state
            outcome, reason = "canceled", f"canceled in {where}; {verdict.outcome}: {reason}"
        capacity = self.cfg.fingers["cap"] / m.levers if m.grasp is not None else None
        report = {
            "outcome": outcome,
            "reason": reason,
            "verdict": verdict.outcome,
            "verdict_reason": verdict.reason,
            "judged_by": "object pose",
            "state": (m.canceled_in or m.state) if canceled else m.state,
            "abort_reason": m.abort_reason,
            "rise_cm": None if math.isnan(rise) else round(rise * 100.0, 3),
            "fingers_touching": touching,
            "strain_peak": round(self.strain_peak, 4),
            "strain_limit": p["strain_limit"],
            "close_s": None if math.isnan(m.close_s) else round(m.close_s, 3),
            "force": {
                "targets_N": None if targets is None else [round(v, 4) for v in targets],
                "capacity_N": None if capacity is None else [round(v, 4) for v in capacity],
                "final_N": [round(v, 4) for v in forces],
                "tolerance": tol,
                "within_tolerance": None
                if targets is None
                else [bool(abs(f - t) <= tol * t) for f, t in zip(forces, targets, strict=True)],
                "peak_while_closing_N": [round(v, 4) for v in self.peak],
                "efforts_Nm": [round(c.effort, 5) for c in m.closes] or None,
            },
            "ik_error_mm": None if m.poses is None else round(m.poses.error * 1e3, 4),
            "plan": self.plan,
            "time_s": round(now, 3),
        }
        self.pub_state.publish(String(data="canceled" if canceled else m.state))
        self.server.finish(report, now)
        self.machine, self.target, self.state_said = None, None, ""


def main(args: list[str] | None = None) -> None:
    run_node(HandPickNode, args)


if __name__ == "__main__":
    main()
