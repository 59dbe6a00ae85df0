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
(latched JSON) on ``hand_pick/outcome``: held / crushed / dropped / not closed / no
measurement, or aborted with the reason (no plan, out of reach, a target beyond a finger's
capacity, a finger's force close that failed, an arm move that failed, a silent robot).
Docs: docs/force_close.md "The three-finger hand".
"""

from __future__ import annotations

import json
import math
import time

import numpy as np
from action_msgs.msg import GoalStatus
from control_msgs.action import FollowJointTrajectory, GripperCommand
from geometry_msgs.msg import PoseStamped, WrenchStamped
from physai_ros_interfaces.srv import PlanGrasp
from rclpy.action import ActionClient
from rclpy.clock import Clock, ClockType
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
from physai_ros.core.pick.silence import SilenceWatch
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

SCHEMA = load_schema("hand_pick")  # config/schema/hand_pick.yaml


class HandPickNode(Node):
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
        self.planner = self.create_client(PlanGrasp, names["plan_service"])
        self.plan_future = None
        self.plan: dict | None = None
        self.plan_deadline = time.monotonic() + float(p["plan.timeout"])
        self.machine: HandPickMachine | None = None
        self.move_sent, self.move_result = 0, None
        self.peak = np.zeros(3)
        self.rise_from = math.nan
        self.reported = False
        self.state_said = ""
        self.pub_state = self.create_publisher(String, interfaces.HAND_PICK_STATE, LATCHED)
        self.pub_outcome = self.create_publisher(String, interfaces.HAND_PICK_OUTCOME, LATCHED)
        sim_time = bool(self.get_parameter("use_sim_time").value)
        self.quiet = SilenceWatch(p["silence_timeout"], self.now(), time.monotonic(), sim_time)
        self.create_timer(1.0 / p["control_rate"], self.tick)
        self.create_timer(0.1, self.watch, clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.get_logger().info(
            f"hand pick of a {tree['object']['shape']} ({self.request['size']} m, "
            f"{self.request['mass']} kg, E {self.request['young']:g} Pa): asking "
            f"{names['plan_service']} for a grasp"
        )

    # --- sensing -----------------------------------------------------------------------------
    def now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def on_joints(self, msg: JointState) -> None:
        self.quiet.heard(time.monotonic())
        velocity = list(msg.velocity) or [0.0] * len(msg.name)
        for name, q, v in zip(msg.name, msg.position, velocity, strict=False):
            self.joints[name] = (q, v)
        self.joints_stamp = measured_at(msg.header.stamp, self.now())

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

    def sensed(self) -> HandSensing:
        q = [self.joints.get(j, (math.nan, 0.0)) for j in INNER_JOINTS]
        return HandSensing(
            fingers=np.array([v[0] for v in q]),
            speeds=np.array([v[1] for v in q]),
            forces=np.array([self.forces[c] for c in self.contacts]),
            acked=tuple(self.in_flight[n] == 0 for n in self.finger_names),
            object_pos=None if self.object is None else self.object[0],
            object_stamp=None if self.object is None else self.object[1],
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
    def ask_planner(self) -> None:
        if self.plan_future is None and self.planner.service_is_ready():
            request = PlanGrasp.Request()
            for name, value in self.request.items():
                setattr(request, name, value)
            self.plan_future = self.planner.call_async(request)
            self.plan_future.add_done_callback(self.on_plan)
        elif time.monotonic() > self.plan_deadline and self.machine.state == "plan":
            why = "no plan_grasp service" if self.plan_future is None else "no plan in time"
            self.machine.plan_failed(self.now(), f"{why} within {self.p['plan.timeout']:g} s")

    def on_plan(self, future) -> None:
        machine = self.machine
        if machine.state != "plan":
            return
        answer = future.result()
        self.plan = {
            "success": answer.success,
            "message": answer.message,
            "force_targets_N": [round(v, 4) for v in answer.force_targets],
            "basis": answer.force_target_basis,
            "simulated_squeeze_N": [round(v, 4) for v in answer.simulated_squeeze],
            "request": self.request,
        }
        if not answer.success:
            machine.plan_failed(self.now(), f"grasp planner: {answer.message}")
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
            machine.plan_failed(self.now(), f"unusable plan: {exc}")
            return
        self.plan["levers_m"] = [round(float(v), 5) for v in levers]
        self.get_logger().info(
            f"planned: force targets {self.plan['force_targets_N']} N per finger "
            f"({answer.force_target_basis}), levers {self.plan['levers_m']} m; {answer.message}"
        )
        machine.planned(self.now(), grasp, levers)

    # --- acting ------------------------------------------------------------------------------
    def tick(self) -> None:
        now = self.now()
        if self.machine is None:
            if self.missing():
                return
            home = np.array([self.joints[j][0] for j in PANDA_ARM_JOINTS])

            def poses(grasp, at):
                return self.kin.poses(grasp, at, self.cfg.approach_distance, self.cfg.lift_height)

            self.machine = HandPickMachine(self.cfg, poses, home, now, limits=self.limits)
            self.publish_state("plan", now)
            self.ask_planner()
            return
        machine = self.machine
        if machine.state != self.state_said:  # changed in a callback (the plan came, or failed)
            self.publish_state(machine.state, now)
        if machine.finished:
            self.finish(now)
            return
        before = machine.state
        sensed = self.sensed()
        machine.update(now, sensed)
        if before == "close":
            self.peak = np.maximum(self.peak, sensed.forces)
        if before == "close" and machine.state == "lift" and self.object is not None:
            self.rise_from = float(self.object[0][2])
        if machine.state != before:
            self.publish_state(machine.state, now)
        self.send_commands()
        if machine.finished:
            self.finish(now)

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

        def result(future) -> None:
            answer = future.result()
            ok = answer.status == GoalStatus.STATUS_SUCCEEDED
            self.move_result = (
                move_id,
                ok,
                answer.result.error_string or f"status {answer.status}",
            )

        def responded(future) -> None:
            handle = future.result()
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
        machine = self.machine
        if machine is None or machine.finished:
            return
        if machine.state == "plan":
            self.ask_planner()
            return
        silent = self.quiet.check(self.now(), time.monotonic())
        if silent is not None:
            reason, silent_for = silent
            self.get_logger().error(f"{reason}; the pick ends here and sends no more goals")
            machine.abort_reason = reason
            machine.state = "aborted"
            self.finish(self.now(), stale_by=silent_for)

    def finish(self, now: float, stale_by: float = 0.0) -> None:
        """Judge (from the object's pose and the fingers' forces) and publish the outcome."""
        if self.reported:
            return
        self.reported = True
        m, p = self.machine, self.p
        forces = np.array([self.forces[c] for c in self.contacts])
        stamps = [self.joints_stamp, *self.force_stamp.values()]
        stamps.append(self.object[1] if self.object is not None else -math.inf)
        age = max(now - s for s in stamps) + stale_by
        rise = float(self.object[0][2]) - self.rise_from if self.object is not None else math.nan
        touching = int(np.sum(forces > self.cfg.fingers["touch"]))
        verdict = hand_verdict(
            m.closed, rise, touching, self.strain_peak, age,
            min_lift=p["min_lift"], strain_limit=p["strain_limit"], max_age=p["max_age"],
        )  # fmt: skip
        targets = None if m.grasp is None else m.grasp.targets
        tol = self.cfg.fingers["tolerance"]
        report = {
            "outcome": "aborted" if m.state == "aborted" else verdict.outcome,
            "reason": m.abort_reason if m.state == "aborted" else verdict.reason,
            "verdict": verdict.outcome,
            "judged_by": "object pose",
            "state": m.state,
            "abort_reason": m.abort_reason,
            "rise_cm": None if math.isnan(rise) else round(rise * 100.0, 3),
            "fingers_touching": touching,
            "strain_peak": round(self.strain_peak, 4),
            "strain_limit": p["strain_limit"],
            "close_s": None if math.isnan(m.close_s) else round(m.close_s, 3),
            "force": {
                "targets_N": None if targets is None else [round(v, 4) for v in targets],
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
        self.pub_state.publish(String(data=m.state))
        self.pub_outcome.publish(String(data=json.dumps(report)))
        self.get_logger().info(f"hand pick finished: {json.dumps(report)}")


def main(args: list[str] | None = None) -> None:
    run_node(HandPickNode, args)


if __name__ == "__main__":
    main()
