"""What every pick node does around its machine, in one place: the jaw pick (``nodes/pick.py``)
and the three-finger hand pick (``nodes/hand_pick.py``) both serve ``/pick``
(``physai_ros_interfaces/action/Pick``), ask the grasp planner once with a deadline, watch for a
silent robot on the steady clock and publish their outcome (the action's typed result, latched, for
every pick: the one at start without a goal too).

Why shared: these are the parts a user relies on being the same whichever gripper picks -- one
goal at a time, a refusal as the result REJECTED with its reason (an action server's own
rejection carries none), a cancel accepted only for the goal being served, feedback at most
every ``FEEDBACK_PERIOD``, a planner that never answers ending the pick instead of hanging it.
What a goal means and how a report becomes the typed result stay each node's own.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from typing import Any

from physai_ros_interfaces.action import Pick
from physai_ros_interfaces.msg import PickOutcome
from physai_ros_interfaces.srv import PlanGrasp
from rclpy.action import ActionServer, CancelResponse
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.task import Future
from rclpy.time import Time
from sensor_msgs.msg import JointState

from physai_ros import interfaces
from physai_ros.core.pick.silence import SilenceWatch
from physai_ros.nodes._common import LATCHED
from physai_ros.nodes._messages import measured_at
from physai_ros.nodes._pick_action import BUSY, refusal
from physai_ros.nodes._pick_outcome import as_outcome

FEEDBACK_PERIOD = 0.1  # [s] between two feedback messages of a goal (node clock)
WATCH_PERIOD = 0.1  # [s, steady] how often the silence watchdog looks
SUCCEEDED = frozenset({"held", "placed"})  # the outcomes that end a goal SUCCEEDED


def node_now(node: Node) -> float:
    """The node's clock [s] (the sim's under ``use_sim_time``)."""
    return node.get_clock().now().nanoseconds * 1e-9


class PickServer:
    """The ``/pick`` action of a pick node: one goal at a time, checked before anything moves.

    ``running()``: the state of the node's pick when one runs or waits to start (a goal is
    then refused: busy), else None; ``check(goal, now)``: what the node makes of the goal, or
    why it refuses it; ``begin(checked, now)``: the node starts (or queues) the pick;
    ``to_result(report, duration)``: the typed result of an outcome report. The node ends a
    judged pick with ``finish``, which publishes the result on ``outcome_topic`` (latched) and
    ends the goal being served, if any, with it; ``what`` names the pick in the log.
    """

    def __init__(
        self,
        node: Node,
        running: Callable[[], str | None],
        check: Callable[[Pick.Goal, float], Any],
        begin: Callable[[Any, float], None],
        to_result: Callable[[dict, float], Pick.Result],
        outcome_topic: str,
        what: str,
    ) -> None:
        self.node, self.running, self.check = node, running, check
        self.begin, self.to_result, self.what = begin, to_result, what
        self.outcome = node.create_publisher(PickOutcome, outcome_topic, LATCHED)
        self.goal = None  # the goal being served (None: a start pick without a goal, or idle)
        self.done: Future | None = None  # its result, awaited by the execute callback
        self.t0 = math.nan  # [s] when the goal was accepted (or the start pick began)
        self.time_limit = math.inf  # [s] the goal's, from its acceptance
        self.feedback_at = -math.inf  # [s] the last feedback sent
        self.action = ActionServer(
            node,
            Pick,
            interfaces.PICK_ACTION,
            execute_callback=self.execute,
            cancel_callback=self.on_cancel,
        )

    async def execute(self, handle) -> Pick.Result:
        """Check the goal; a refusal ends it at once (ABORTED, the result REJECTED with the
        reason); else the node begins the pick and the result comes with ``end``."""
        now = node_now(self.node)
        checked = self.refusal(handle.request) or self.check(handle.request, now)
        if isinstance(checked, str):
            self.node.get_logger().warning(f"pick goal rejected: {checked}")
            handle.abort()
            return self.to_result(refusal(checked), 0.0)
        limit = float(handle.request.time_limit)
        self.goal, self.t0 = handle, now
        self.time_limit = limit if limit > 0.0 else math.inf
        self.done = Future()
        self.begin(checked, now)
        return await self.done

    def refusal(self, goal: Pick.Goal) -> str | None:
        """Why any pick node refuses the goal whatever it asks: a pick runs, a bad time limit."""
        state = self.running()
        if self.goal is not None or state is not None:
            return BUSY.format(state=state or "waiting to start")
        limit = float(goal.time_limit)
        if not (math.isfinite(limit) and limit >= 0.0):
            return f"time_limit must be >= 0 [s] (0 = none), got {limit!r}"
        return None

    def on_cancel(self, handle) -> CancelResponse:
        """Accept a cancel of the goal being served; the node's next tick ends the pick."""
        return CancelResponse.ACCEPT if handle is self.goal else CancelResponse.REJECT

    @property
    def cancel_requested(self) -> bool:
        return self.goal is not None and self.goal.is_cancel_requested

    def started(self, now: float) -> None:
        """A pick starts now: a start pick (no goal) is timed from here; feedback restarts."""
        if self.goal is None:
            self.t0 = now
        self.feedback_at = -math.inf

    def over(self, now: float) -> bool:
        """Whether the goal's time limit has passed."""
        return now - self.t0 > self.time_limit

    def feedback(self, now: float, make: Callable[[float], Pick.Feedback]) -> None:
        """Publish ``make(elapsed)`` for the goal being served, every ``FEEDBACK_PERIOD``."""
        if self.goal is None or now - self.feedback_at < FEEDBACK_PERIOD:
            return
        self.feedback_at = now
        self.goal.publish_feedback(make(now - self.t0))

    def finish(self, report: dict, now: float) -> None:
        """A pick judged: its typed result (stamped ``now``, node clock) on the outcome topic
        (as ``PickOutcome``, the result's fields), the whole ``report`` in the log, and the goal
        being served (if any) ended with it."""
        result = self.to_result(report, now - self.t0)
        result.stamp = Time(nanoseconds=round(now * 1e9)).to_msg()
        self.outcome.publish(as_outcome(result))
        self.node.get_logger().info(f"{self.what} finished: {json.dumps(report)}")
        self._end(report["outcome"], result)

    def end(self, report: dict, now: float) -> None:
        """End the goal being served (if any) with ``report`` without an outcome on the topic:
        a goal canceled before its pick started, which no pick's outcome belongs to."""
        self._end(report["outcome"], self.to_result(report, now - self.t0))

    def _end(self, outcome: str, result: Pick.Result) -> None:
        """SUCCEEDED when it held or placed, CANCELED when canceled, ABORTED otherwise."""
        handle, done = self.goal, self.done
        if handle is None or done is None:
            return
        if outcome == "canceled":
            handle.canceled()
        elif outcome in SUCCEEDED:
            handle.succeed()
        else:
            handle.abort()
        self.goal, self.done, self.time_limit = None, None, math.inf
        done.set_result(result)


class PlannerCall:
    """One ``plan_grasp`` call: sent once the service is there, given up at its deadline
    [s, steady clock, from construction]. ``poll`` from a timer (the steady-clock watchdog
    too: it runs without a sim clock); ``answered(response)`` or ``failed(asked)`` is called
    once (``asked``: the request went out but no answer came)."""

    def __init__(
        self,
        node: Node,
        service: str,
        fields: dict,
        timeout: float,
        answered: Callable[[PlanGrasp.Response], None],
        failed: Callable[[bool], None],
    ) -> None:
        self.client = node.create_client(PlanGrasp, service)
        self.fields, self.timeout = fields, float(timeout)
        self.answered, self.failed = answered, failed
        self.deadline = time.monotonic() + self.timeout
        self.future: Future | None = None
        self.settled = False  # answered or given up

    def poll(self) -> None:
        if self.settled:
            return
        if time.monotonic() > self.deadline:
            self.settled = True
            self.failed(self.future is not None)
            return
        if self.future is None and self.client.service_is_ready():
            request = PlanGrasp.Request()
            for name, value in self.fields.items():
                setattr(request, name, value)
            self.future = self.client.call_async(request)
            self.future.add_done_callback(self._on_answer)

    def _on_answer(self, future: Future) -> None:
        if self.settled:  # answered after the deadline: the pick already ended
            return
        self.settled = True
        self.answered(future.result())


def silence_watch(node: Node, timeout: float, watch: Callable[[], None]) -> SilenceWatch:
    """The silent-robot watch (``SilenceWatch``) and its timer on the steady clock: a stopped
    sim clock stops every timer on the node's clock, so ``watch`` runs on this one."""
    sim_time = bool(node.get_parameter("use_sim_time").value)
    quiet = SilenceWatch(timeout, node_now(node), time.monotonic(), sim_time)
    node.create_timer(WATCH_PERIOD, watch, clock=Clock(clock_type=ClockType.STEADY_TIME))
    return quiet


class PickPlumbing:
    """What a pick node mixing this in shares: its clock, the joint states it keeps (each
    joint's position and velocity, when they were measured; every message tells the silence
    watch the robot is alive) and whether a pick runs. The node sets ``joints``,
    ``joints_stamp``, ``quiet``, ``machine`` (the running pick's, None when idle) and
    ``pending`` (a pick waits to start)."""

    joints: dict[str, tuple[float, float]]
    joints_stamp: float
    quiet: SilenceWatch
    machine: Any
    pending: bool

    def running(self) -> str | None:
        """The state of the pick that runs or waits to start (``PickServer``: busy), or None."""
        if self.machine is not None:
            return self.machine.state
        return "waiting to start" if self.pending else None

    def now(self) -> float:
        return node_now(self)

    def on_joints(self, msg: JointState) -> None:
        self.quiet.heard(time.monotonic())
        velocity = list(msg.velocity) or [0.0] * len(msg.name)
        for name, q, v in zip(msg.name, msg.position, velocity, strict=False):
            self.joints[name] = (q, v)
        self.joints_stamp = measured_at(msg.header.stamp, self.now())
