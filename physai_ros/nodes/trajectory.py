"""trajectory: goals in, limit-checked timed trajectories out to a FollowJointTrajectory controller.

Takes ``JointTrajectory`` on ``~/goal`` and ``FollowJointTrajectory`` on
``~/follow_joint_trajectory`` (untimed waypoints: the planner picks the time; timed: the times
are checked), times them from the current ``/joint_states`` with the configured shape inside the
robot's limits (lesson 13, ``physai_ros.core.motion.goal_timing``), and forwards the sampled
trajectory to the controller (the sim bridge, or franka_ros2's joint_trajectory_controller). A
goal stamped to start at or after the running goal's end (a chain of moves, as the pick sends
them) waits for it and starts from where it ended; any other replaces it at once. Feedback and
results are relayed, cancels forwarded; a bad goal is rejected with the joint and
the limit named and nothing reaches the controller. The tracking error (reference vs
``/joint_states``) is reported on ``~/result`` (JSON) and in the action result. A robot that
falls silent mid-goal (no ``/joint_states`` for ``state_timeout`` of wall time: its driver or
the sim bridge died) aborts the goal at once, naming the silence.

A stamped goal starts at its stamp (or as soon as it can reach the controller); a goal queued
behind one that the controller aborted (a Franka's reflex) ends with that goal's result. A
sampled goal (rates at every point) that replaces the running one mid-move, as the pick's stop
on sensed support does, is planned and checked from where the controller's reference will be
as it arrives, across the join, and sent without canceling the running goal (the controller
replaces it). The feedback relayed carries ``desired.time_from_start``, how far into the goal
the controller is, so that its sender learns when the goal really started.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from builtin_interfaces.msg import Duration, Time
from control_msgs.action import FollowJointTrajectory
from rcl_interfaces.msg import SetParametersResult
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.task import Future
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from physai_ros import interfaces
from physai_ros.core.motion.goal_timing import (
    GoalPoint,
    GoalPolicy,
    Join,
    TrajectoryPlanner,
    limits_path,
)
from physai_ros.core.motion.limits import load_limits
from physai_ros.core.motion.planned import PlannedTrajectory
from physai_ros.core.motion.tracking import TrackingMonitor, outcome_report
from physai_ros.errors import PhysaiError
from physai_ros.nodes._common import LATCHED, declare_schema, load_schema, run_node, stream_qos
from physai_ros.nodes._messages import duration_msg

FJT = FollowJointTrajectory
QUEUE_SLACK = 0.05
"""[s] a goal stamped to start this little before the running goal ends still queues behind it
(it was meant to start where that one ends, on a clock a little off the node's)."""
START_TRANSIT = 0.03
"""[s] a goal stamped by its sender starts at its stamp if that is at least this far ahead (its
way to the controller on one computer), else this long from now: a chain of moves (the pick's)
then runs on the controller when its sender planned it. A goal that joins the running motion
starts from where that motion is then."""
JOIN_ATTEMPTS = 3  # plans of a joining goal before it is given up (``_plan_in_time``)
JOIN_PLANNING = 0.04  # [s] planned time to plan a joining goal (two checked plans, ~10 ms each)
CHAIN_BREAKS = ("aborted", "timeout")
"""How a goal may end that ends the goals queued behind it too, with its own result (its status,
the controller's message and error code): each was to start where it ended (a Franka's reflex
aborts the running goal; the pick's next phase, already queued, learns why)."""
STATES_STOPPED = 0.2
"""[s wall] after a goal's result, joint states that have not come for this long have stopped
(a Franka's broadcaster deactivated by a robot error): the result is relayed without them, at
once, and its sender learns why the goal ended before it takes the robot for silent."""
POLICY_PARAMS = ("shape", "duration", "sample_period", "start_tolerance", "first_point")
SCHEMA = load_schema("trajectory")  # config/schema/trajectory.yaml


def seconds(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


@dataclass
class Run:
    """One goal on its way through the controller (the execute thread owns it)."""

    planned: PlannedTrajectory
    monitor: TrackingMonitor
    preempted: threading.Event = field(default_factory=threading.Event)
    downstream: object = None
    joined: bool = False  # the goal replacing it joins it mid-move: it is not canceled


@dataclass
class Ticket:
    """An accepted goal, from its acceptance until it has ended: where its arm ends (``goal``,
    joint name → position [rad], as checked on arrival) and when at the earliest (``end`` [s,
    node clock]), so that a goal chained behind it can be checked and queued before it runs."""

    number: int
    goal: dict[str, float]
    end: float
    after: Ticket | None = None  # the goal it waits for
    joins: Run | None = None  # the running motion it replaces mid-move, joined from its state
    done: threading.Event = field(default_factory=threading.Event)
    overtaken: bool = False  # a newer goal replaced it before it started
    report: dict | None = None  # how it ended (``outcome_report``), once it has


class TrajectoryNode(Node):
    def __init__(self) -> None:
        super().__init__("trajectory")
        robot = declare_schema(self, SCHEMA.only("robot"))["robot"]
        robots = declare_schema(self, SCHEMA.under("robots"))  # a params file may change them
        joints = {name.split(".")[1]: value for name, value in robots.items()}
        if robot not in joints:
            raise SystemExit(f"trajectory: unknown robot {robot!r}; choose {list(joints)}")
        rest = SCHEMA.without("robot", "robots")
        self.cfg = v = {"robot": robot} | declare_schema(self, rest, {"joints": joints[robot]})
        try:
            path = limits_path(robot, v["limits_file"])
            limits = load_limits(robot, v["limits_set"] or None, path)
            policy = GoalPolicy(**{name: v[name] for name in POLICY_PARAMS})
            self.planner = TrajectoryPlanner(limits, v["joints"], policy, v["joint_prefix"])
        except PhysaiError as exc:
            raise SystemExit(f"trajectory: {exc}") from exc
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.lock = threading.Lock()
        self.run: Run | None = None
        self.last: Ticket | None = None  # the goal accepted last: a newer one overtakes it
        self.taken: dict[bytes, Ticket | str] = {}  # accepted goals by id (or why they failed)
        # each goal accepted: what its check found (the goal it waits for or joins, its plan)
        self.checked: dict[int, tuple[Ticket | None, Run | None, PlannedTrajectory]] = {}
        self.state: dict[str, tuple[float, float]] = {}  # name -> (position, velocity)
        self.state_wall = 0.0
        self.state_stamp = 0.0
        self.group = group = ReentrantCallbackGroup()
        self.action = v["controller_action"]
        self.client = ActionClient(self, FJT, self.action, callback_group=group)
        self.server: ActionServer | None = None  # served from the first joint state on
        # 2 s of joint states at 100 Hz: when the executor falls behind (a loaded machine), the
        # states measured during a move wait instead of being dropped; they carry their stamps.
        self.create_subscription(
            JointState, interfaces.JOINT_STATES, self._on_state, stream_qos(200)
        )
        self.create_subscription(
            JointTrajectory, "~/goal", self._on_topic, 10, callback_group=group
        )
        self.pub_result = self.create_publisher(String, "~/result", LATCHED)
        self.get_logger().info(
            f"{robot}: joints {list(self.planner.joint_names)}, limits "
            f"{self.planner.limits.set_name!r}, {policy} -> {self.action}"
        )

    def _on_set_parameters(self, params) -> SetParametersResult:
        """Runtime changes (``ros2 param set``): the policy is validated as a whole first."""
        changed = {p.name: p.value for p in params if p.name in self.cfg}
        fields = {k: getattr(self.planner.policy, k) for k in POLICY_PARAMS}
        fields |= {k: v for k, v in changed.items() if k in POLICY_PARAMS}
        try:
            policy = GoalPolicy(**fields)
        except PhysaiError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        self.planner.policy = policy
        self.cfg.update(changed)
        if changed:
            self.get_logger().info(f"parameters now {changed}; goal policy {policy}")
        return SetParametersResult(successful=True)

    # ------------------------------------------------------------------ inputs
    def _serve(self) -> None:
        """Offer the action once the arm's state is known: a client that waits for the server
        (the pick does) then never sends a goal that can only be refused for want of it."""
        self.server = ActionServer(
            self,
            FJT,
            "~/follow_joint_trajectory",
            self._execute,
            goal_callback=self._check_goal,
            handle_accepted_callback=self._accept,
            cancel_callback=lambda _handle: CancelResponse.ACCEPT,
            callback_group=self.group,
        )

    def _on_state(self, msg: JointState) -> None:
        vel = list(msg.velocity) if len(msg.velocity) == len(msg.name) else [0.0] * len(msg.name)
        self.state = {n: (q, v) for n, q, v in zip(msg.name, msg.position, vel, strict=False)}
        self.state_wall = time.monotonic()
        self.state_stamp = seconds(msg.header.stamp) or self.get_clock().now().nanoseconds * 1e-9
        run = self.run
        if run is not None:
            run.monitor.update(self.state_stamp, msg.name, msg.position)
        if self.server is None and all(n in self.state for n in self.planner.joint_names):
            self._serve()

    def _plan(
        self, traj: JointTrajectory, after: Ticket | None = None, joins: Run | None = None
    ) -> PlannedTrajectory:
        """``traj`` planned from the current state, or from where the goal ``after`` ends (a
        queued goal, checked on arrival: it is planned again once that one has ended), or from
        the running motion ``joins`` where it would start now (``_join``)."""
        join = self._join(traj, joins, JOIN_PLANNING)[0] if joins is not None else None
        return self._plan_join(traj, after, join, arriving_late=False)

    def _plan_join(
        self,
        traj: JointTrajectory,
        after: Ticket | None,
        join: Join | None,
        arriving_late: bool = True,
    ) -> PlannedTrajectory:
        """``_plan`` with the join given; ``arriving_late``: a join is checked for a goal that
        reaches the controller a little later too (the plan it is sent with)."""
        if time.monotonic() - self.state_wall > self.cfg["state_timeout"]:
            raise PhysaiError(
                self._hinted(f"no current /joint_states (none in {self.cfg['state_timeout']} s)")
            )
        points = [
            GoalPoint(seconds(p.time_from_start), p.positions, p.velocities, p.accelerations)
            for p in traj.points
        ]
        current = {n: q for n, (q, _) in self.state.items()}
        if after is not None:
            current |= after.goal
        planned = self.planner.plan(traj.joint_names, points, current, join)
        if join is not None and arriving_late:  # arriving later (by the transit) too
            late = min(START_TRANSIT, join.lead) / 2.0
            later = join._replace(at=join.at + late, lead=join.lead - late)
            self.planner.plan(traj.joint_names, points, current, later)
        return planned

    def _plan_in_time(
        self, traj: JointTrajectory, run: Run
    ) -> tuple[PlannedTrajectory, Join, float]:
        """``traj`` planned to join ``run``, from where it will be when the goal reaches the
        controller: a plan that took so long that its stamp is (nearly) past is made again,
        allowing twice the time it took (a busy computer), since a goal arriving after its
        stamp is started from another state than the one it was checked from."""
        margin = JOIN_PLANNING
        for _ in range(JOIN_ATTEMPTS):
            began = time.monotonic()
            join, start, send = self._join(traj, run, margin)
            planned = self._plan_join(traj, None, join)
            wait = send - self.get_clock().now().nanoseconds * 1e-9
            if wait >= 0.0:  # sent as planned: it arrives where the join was checked from
                threading.Event().wait(wait)
                return planned, join, start
            margin = 2.0 * (time.monotonic() - began)
        raise PhysaiError(
            f"could not plan the join of the running motion in time ({JOIN_ATTEMPTS} attempts, "
            f"the last allowing {margin:.3f} s): the computer is too busy"
        )

    def _joining(self, traj: JointTrajectory) -> Run | None:
        """The running motion ``traj`` replaces mid-move, if it is a sampled motion (every
        point with velocities and accelerations, as the pick's stop on sensed support) that
        starts while the running one still moves: joint_trajectory_controller then joins it
        from its reference there, and it is planned and checked from that state, not from
        rest (nor does it wait for the arm to stop, or cancel the running goal first)."""
        run = self.run
        sampled = all(len(p.velocities) and len(p.accelerations) for p in traj.points)
        if run is None or run.downstream is None or not sampled or not traj.points:
            return None
        at = self._join(traj, run)[0].at
        return run if 0.0 < at < run.planned.duration else None

    def _join(
        self, traj: JointTrajectory, run: Run, margin: float = 0.0
    ) -> tuple[Join, float, float]:
        """How ``traj`` joins ``run`` if sent ``margin`` [s] from now (the time to plan it),
        its stamp (its own, or ``START_TRANSIT`` after the send if that is later) and when it
        is sent [s, node clock]: the controller joins it from where the running motion is as
        the goal arrives, and reaches its first point at the stamp plus that point's time, as
        it would have with the goal sent to it directly (the join as long as the sender
        allowed)."""
        send = self.get_clock().now().nanoseconds * 1e-9 + margin
        start = max(seconds(traj.header.stamp), send + START_TRANSIT)
        at = send - run.monitor.start_time
        return Join(run.planned.reference, at, start - send), start, send

    def _queued_behind(self, traj: JointTrajectory) -> Ticket | None:
        """The goal ``traj`` waits for: the last one accepted, while it has not ended, if it
        ends at or before ``traj``'s stamp (a goal chained to start where it ends, as the pick
        sends its phases); else ``None``: ``traj`` replaces it now."""
        stamp = seconds(traj.header.stamp)
        with self.lock:
            last = self.last
        if stamp > 0.0 and last is not None and not last.done.is_set():
            return last if stamp >= last.end - QUEUE_SLACK else None
        return None

    def _reject(self, source: str, exc: Exception) -> None:
        self.get_logger().error(f"rejected {source} goal, nothing sent: {exc}")
        self._publish(outcome_report("rejected", str(exc), source=source))

    def _check_goal(self, request) -> GoalResponse:
        traj = request.trajectory
        try:
            after = self._queued_behind(traj)
            joins = None if after else self._joining(traj)
            planned = self._plan(traj, after, joins)
        except PhysaiError as exc:
            self._reject("action", exc)
            return GoalResponse.REJECT
        self.checked[id(traj)] = (after, joins, planned)  # for ``_take``, a moment later
        return GoalResponse.ACCEPT

    def _take(self, traj: JointTrajectory) -> Ticket:
        """A goal accepted: its ticket, queued behind the goal it waits for, or (none) the
        running goal preempted now. Its goal and earliest end are estimated from the plan
        made on arrival (from where the goal before it ends, if queued)."""
        checked = self.checked.pop(id(traj), None)
        if checked is None:  # a topic goal: not checked as an action goal is
            after = self._queued_behind(traj)
            joins = None if after else self._joining(traj)
            checked = (after, joins, self._plan(traj, after, joins))
        after, joins, planned = checked
        now = self.get_clock().now().nanoseconds * 1e-9
        begins = max(seconds(traj.header.stamp), after.end if after else now)
        with self.lock:
            number = self.last.number + 1 if self.last else 1
            goal = dict(zip(planned.joint_names, planned.goal, strict=True))
            if after is None:  # it replaces the running goal and any waiting behind it
                waiting = self.last
                while waiting is not None and not waiting.done.is_set():
                    waiting.overtaken, waiting = True, waiting.after
                if self.run is not None:
                    self.run.joined = self.run is joins
                    self.run.preempted.set()
            self.last = Ticket(number, goal, begins + planned.duration, after, joins)
            return self.last

    def _accept(self, handle) -> None:
        """Take an accepted goal. One the state has since made impossible (the arm moved on
        since the check a moment ago) still executes, to end aborted at once with the reason:
        an accepted goal cannot be aborted before it executes."""
        key = bytes(handle.goal_id.uuid)
        try:
            self.taken[key] = self._take(handle.request.trajectory)
        except PhysaiError as exc:
            self._reject("action", exc)
            self.taken[key] = str(exc)
        handle.execute()

    def _on_topic(self, msg: JointTrajectory) -> None:
        try:
            self._plan(msg, self._queued_behind(msg))
        except PhysaiError as exc:
            self._reject("topic", exc)
            return
        self._in_thread(self._drive, msg, None, None, self._take(msg))

    async def _execute(self, handle) -> FJT.Result:
        ticket = self.taken.pop(bytes(handle.goal_id.uuid))
        if isinstance(ticket, str):  # it could not be taken (``_accept``)
            return self._finish(handle, outcome_report("aborted", ticket, source="action"))
        request = handle.request
        return await self._in_thread(self._drive, request.trajectory, request, handle, ticket)

    def _in_thread(self, work: Callable[..., FJT.Result], *args: object) -> Future:
        """Run a goal's blocking work (``_drive``) in a thread of its own; the returned future is
        done when it is. The executor stays single-threaded and free for the joint states and
        the controller's responses: rclpy's multi-threaded executor spends most of a core just
        receiving 100 Hz /joint_states and /clock, and on a loaded machine fell seconds behind
        until its subscription overflowed (measured: 0.7 s of states lost during a move)."""
        executor = self.executor
        done = executor.create_future()

        def target() -> None:
            try:
                done.set_result(work(*args))
            except Exception as exc:  # handed to whoever awaits the goal
                self.get_logger().error(f"goal failed: {exc!r}")
                done.set_exception(exc)
            executor.wake()  # the awaiting task is polled when the executor wakes

        threading.Thread(target=target, name="trajectory-goal", daemon=True).start()
        return done

    # ------------------------------------------------------------------ execution
    def _drive(self, traj: JointTrajectory, request, handle, ticket: Ticket) -> FJT.Result:
        """The goal of ``ticket``, from the end of the one it waits for: its ticket is done
        when this returns, whatever the outcome."""
        try:
            result = self._drive_after(traj, request, handle, ticket)
            ticket.report = json.loads(result.error_string)
            return result
        finally:
            ticket.done.set()

    def _drive_after(self, traj: JointTrajectory, request, handle, ticket: Ticket) -> FJT.Result:
        """Wait for the goal it queues behind to end, re-plan from the state now, send, relay,
        watch; returns the user's result."""
        source = "topic" if handle is None else "action"
        if ticket.after is not None:
            while not ticket.after.done.wait(0.01):
                if handle is not None and handle.is_cancel_requested:
                    return self._finish(handle, outcome_report("canceled", "before it started"))
            if ticket.overtaken:
                text = "replaced by a newer goal before it started"
                return self._finish(handle, outcome_report("preempted", text, source=source))
            before = ticket.after.report or {}
            if before.get("status") in CHAIN_BREAKS:  # it was to start where that one ended
                code = before.get("controller_error_code")
                report = outcome_report(
                    before["status"], before["message"], source=source, controller_error_code=code
                )
                return self._finish(handle, report)
        join, start = None, 0.0
        if ticket.joins is None:
            self._wait_for_rest()
        try:
            if ticket.joins is None:
                planned = self._plan_join(traj, None, None)
            else:
                planned, join, start = self._plan_in_time(traj, ticket.joins)
        except PhysaiError as exc:
            return self._finish(handle, outcome_report("aborted", str(exc), source=source))
        if not self.client.wait_for_server(timeout_sec=self.cfg["server_timeout"]):
            msg = f"controller action {self.action} not available"
            return self._finish(handle, outcome_report("aborted", msg, planned, source=source))
        lead = join.lead if join is not None else 0.0  # the controller joins over it itself
        goal = FJT.Goal(trajectory=self._message(planned, lead))
        if request is not None:
            goal.path_tolerance, goal.goal_tolerance = (
                request.path_tolerance,
                request.goal_tolerance,
            )
            goal.goal_time_tolerance = request.goal_time_tolerance
        if join is None:
            now = max(self.get_clock().now().nanoseconds * 1e-9, self.state_stamp)
            stamp = seconds(traj.header.stamp)
            # unstamped: start_delay from now; stamped: then, or as soon as it can get there
            start = (
                max(now + START_TRANSIT, stamp) if stamp > 0.0 else now + self.cfg["start_delay"]
            )
        goal.trajectory.header.stamp = Time(sec=int(start), nanosec=int(start % 1 * 1e9))
        run = Run(planned, TrackingMonitor(planned, start - lead))
        with self.lock:
            self.run = run
        late = start - seconds(traj.header.stamp)
        after = f", {late:.3f} s after its stamp" if seconds(traj.header.stamp) else ""
        joined = " (joins the running motion)" if join is not None else ""
        self.get_logger().info(
            f"sending {planned.describe(self.planner.limits)}; starts in "
            f"{start - self.get_clock().now().nanoseconds * 1e-9:.3f} s{after}{joined}"
        )
        relay = (lambda f: self._relay(handle, run, f.feedback)) if handle is not None else None
        sent = self._wait(self.client.send_goal_async(goal, relay))
        answered = self.get_clock().now().nanoseconds * 1e-9
        if (
            sent is not None
            and not sent.accepted
            and join is None
            and answered > start + planned.duration
        ):
            # It may have reached the controller after its end (the first goal to a controller
            # just discovered, a starved computer), which must reject a stamped goal ending in
            # the past: from where the arm still is, it is sent once more, to start on arrival.
            self.get_logger().warning(
                f"the controller rejected the goal and answered {answered - start:.3f} s after "
                "its stamp, past its end: sent again, unstamped, to start on arrival"
            )
            goal.trajectory.header.stamp = Time()
            start = answered
            run.monitor = TrackingMonitor(planned, start)
            sent = self._wait(self.client.send_goal_async(goal, relay))
        if sent is None or not sent.accepted:
            msg = (
                "the controller rejected the trajectory (see its log)"
                if sent is not None
                else f"the controller did not answer within {self.cfg['server_timeout']} s"
            )
            return self._finish(handle, outcome_report("aborted", msg, planned, source=source), run)
        run.downstream = sent
        accepted = self.get_clock().now().nanoseconds * 1e-9
        if accepted > start:
            # The controller received the goal after its stamp and started it on arrival (as
            # joint_trajectory_controller does), some time up to now: the report fits it.
            run.monitor.started_by(accepted)
        result = self._watch(run, handle, sent.get_result_async())
        return self._finish(handle, result, run)

    def _relay(self, handle, run: Run, feedback) -> None:
        """The controller's feedback, passed on with ``desired.time_from_start`` set to how far
        into the goal it is (from when the goal started on the controller): a sender whose
        goal started later than its stamp (this node waits for the goal before it, a busy
        computer) learns when its motion really runs."""
        at = seconds(feedback.header.stamp) or self.get_clock().now().nanoseconds * 1e-9
        into = at - run.monitor.start_time
        if into > 0.0:
            feedback.desired.time_from_start = duration_msg(into)
        handle.publish_feedback(feedback)

    def _watch(self, run: Run, handle, future) -> dict:
        period, last_log = 1.0 / self.cfg["monitor_rate"], time.monotonic()
        # On the node's clock, as the trajectory's times are: under use_sim_time a simulation
        # slower than real time takes longer in wall time, and is no later for it (a 1.5 s lift
        # took 5 s of wall time at load 4 and timed out while the controller succeeded); a
        # robot that stops altogether is caught by state_timeout, on the wall clock.
        deadline = run.monitor.start_time + run.planned.duration + self.cfg["result_margin"]
        status = "aborted"
        while not future.done():
            silent = time.monotonic() - self.state_wall
            if handle is not None and handle.is_cancel_requested:
                status = "canceled"
            elif run.preempted.is_set():
                status = "preempted"
            elif silent > self.cfg["state_timeout"]:
                return self._abandon(run, handle, silent)
            elif self.get_clock().now().nanoseconds * 1e-9 > deadline:
                status = "timeout"
            if status != "aborted":
                if not (status == "preempted" and run.joined):  # a join replaces it there
                    self._wait(run.downstream.cancel_goal_async())
                self._wait(future, self.cfg["result_margin"])
                break
            if time.monotonic() - last_log > self.cfg["progress_period"]:
                last_log = time.monotonic()
                t = self.get_clock().now().nanoseconds * 1e-9 - run.monitor.start_time
                self.get_logger().info(
                    f"progress {min(max(t / run.planned.duration, 0), 1):.0%} "
                    f"(t = {t:.2f} / {run.planned.duration:.2f} s), max tracking error so far "
                    f"{run.monitor.max_error.max():.4f} rad"
                )
            threading.Event().wait(period)
        res = future.result().result if future.done() else None
        code = res.error_code if res is not None else None
        if status == "aborted" and code == FJT.Result.SUCCESSFUL:
            status = "succeeded"
        # The report needs the joint states measured up to the result: those stamped after it
        # arrived and, for a success, one at the goal (a lagging node's clock can be behind the
        # controller's; the arm at its goal cannot lie about the move being over).
        arrived, wall = self.get_clock().now().nanoseconds * 1e-9, time.monotonic()
        tolerance = self.cfg["arrival_tolerance"] if status == "succeeded" else math.inf
        while (
            (self.state_stamp < arrived or not run.monitor.reached(tolerance))
            and time.monotonic() - wall < self.cfg["tracking_wait"]
            and time.monotonic() - self.state_wall < STATES_STOPPED
        ):
            threading.Event().wait(0.005)
        text = res.error_string if res is not None else "no result from the controller"
        return outcome_report(
            status,
            text,
            run.planned,
            run.monitor,
            source="topic" if handle is None else "action",
            controller_error_code=code,
        )

    def _hinted(self, silence: str) -> str:
        """A silent robot's message with what its driver does then (``silence_hint``)."""
        hint = self.cfg["silence_hint"]
        return f"{silence}; {hint}" if hint else silence

    def _abandon(self, run: Run, handle, silent: float) -> dict:
        """The robot fell silent mid-goal (no /joint_states for ``state_timeout`` of wall
        time: its driver or the sim bridge died, and with the bridge the sim clock stopped, so
        nothing timed on the node's clock would end the wait). The goal ends aborted now, not
        after the trajectory's end plus ``result_margin``; the controller is asked to cancel
        without waiting for its answer (a live one holds the arm where it is, a dead one
        cannot move it), and no tracking report waits for states that will not come."""
        run.downstream.cancel_goal_async()
        text = self._hinted(
            f"robot silent: no /joint_states for {silent:.1f} s (wall clock) mid-goal; the "
            "controller was asked to cancel, its result is not awaited"
        )
        self.get_logger().error(text)
        source = "topic" if handle is None else "action"
        return outcome_report("aborted", text, run.planned, run.monitor, source=source)

    def _finish(self, handle, report: dict, run: Run | None = None) -> FJT.Result:
        with self.lock:
            if run is not None and self.run is run:
                self.run = None
        self._publish(report)
        status, track = report["status"], report.get("tracking", {})
        text = (
            f"goal {status}: {report['message']}; tracking max "
            f"{track.get('max_error_deg', 'n/a')}°, final {track.get('final_error_deg', 'n/a')}°"
        )
        if status == "succeeded":  # rclpy: one severity per logging call site
            self.get_logger().info(text)
        else:
            self.get_logger().warning(text)
        code = report.get("controller_error_code")
        result = FJT.Result(
            error_code=FJT.Result.INVALID_GOAL if code is None else code,
            error_string=json.dumps(report),
        )
        if handle is not None:
            if status == "succeeded":
                handle.succeed()
            elif status == "canceled":
                handle.canceled()
            else:
                handle.abort()
        return result

    def _publish(self, report: dict) -> None:
        self.pub_result.publish(String(data=json.dumps(report)))

    def _message(self, planned: PlannedTrajectory, lead: float = 0.0) -> JointTrajectory:
        """The samples as the controller gets them; a join's (``lead`` [s]: its plan starts
        that long before the stamp, at the join) from the stamp on, since the controller makes
        the join itself, from where it is to the first of them."""
        msg = JointTrajectory(joint_names=list(planned.joint_names))
        for t, q, qd, qdd in zip(
            planned.times, planned.positions, planned.velocities, planned.accelerations, strict=True
        ):
            if t <= lead + 1e-9:
                continue
            sec, nanosec = divmod(round(float(t - lead) * 1e9), 1_000_000_000)
            msg.points.append(
                JointTrajectoryPoint(
                    positions=q.tolist(),
                    velocities=qd.tolist(),
                    accelerations=qdd.tolist(),
                    time_from_start=Duration(sec=sec, nanosec=nanosec),
                )
            )
        return msg

    def _wait_for_rest(self) -> None:
        deadline = time.monotonic() + self.cfg["settle_timeout"]
        while time.monotonic() < deadline:
            moving = [abs(self.state.get(n, (0.0, 0.0))[1]) for n in self.planner.joint_names]
            if max(moving) < self.cfg["rest_velocity"]:
                return
            threading.Event().wait(0.01)

    def _wait(self, future, timeout: float | None = None):
        done = threading.Event()
        future.add_done_callback(lambda _f: done.set())
        done.wait(self.cfg["server_timeout"] if timeout is None else timeout)
        return future.result() if future.done() else None


def main(args: list[str] | None = None) -> None:
    run_node(TrajectoryNode, args)


if __name__ == "__main__":
    main()
