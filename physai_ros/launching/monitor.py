"""Watch a running graph over DDS and summarise what it published.

Used by ``physai bringup`` to show that the nodes talk to each other (joint states in, frame
tree out) and by tests as an independent observer in its own process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class GraphReport:
    """What an observer saw on the standard topics during a watch."""

    duration: float
    joint_states: int = 0
    joint_names: list[str] = field(default_factory=list)
    tf_messages: int = 0
    tf_static_frames: set[str] = field(default_factory=set)
    tf_frames: set[str] = field(default_factory=set)
    clock_messages: int = 0
    last_clock: float = 0.0
    dead: list[str] = field(default_factory=list)
    pick_states: list[str] = field(default_factory=list)
    pick_outcome: dict[str, Any] | None = None
    wait_for_pick: bool = False
    pick_topic: str = "/pick/state"
    goal_sent: bool = False  # a goal went to the /pick action (its result is then awaited)
    pick_result: dict[str, Any] | None = None  # that goal's typed result (``result_dict``)
    recorder: dict[str, Any] | None = None  # the dataset recorder's latest status, if watched
    watch_recorder: bool = False

    @property
    def recorded(self) -> bool:
        """Whether the dataset recorder has written (or left out) an episode."""
        return self.recorder is not None and self.recorder["episodes"] > 0

    @property
    def ok(self) -> bool:
        graph_ok = (
            not self.dead
            and self.joint_states > 0
            and self.tf_messages > 0
            and bool(self.tf_static_frames)
        )
        picked = self.pick_outcome is not None or not self.wait_for_pick
        recorded = self.recorded or not self.watch_recorder
        answered = self.pick_result is not None or not self.goal_sent
        return graph_ok and picked and answered and recorded

    def markdown(self) -> str:
        rate = lambda n: f"{n / self.duration:.1f} /s"  # noqa: E731
        rows = [
            (
                "/joint_states",
                f"{self.joint_states} msgs ({rate(self.joint_states)})",
                ", ".join(self.joint_names),
            ),
            (
                "/tf",
                f"{self.tf_messages} msgs ({rate(self.tf_messages)})",
                ", ".join(sorted(self.tf_frames)),
            ),
            (
                "/tf_static",
                f"{len(self.tf_static_frames)} frames",
                ", ".join(sorted(self.tf_static_frames)),
            ),
            ("/clock", f"{self.clock_messages} msgs", f"sim time {self.last_clock:.3f} s"),
        ]
        lines = ["| topic | received | content |", "|---|---|---|"]
        lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
        if self.wait_for_pick:
            lines.append(
                f"| {self.pick_topic} | {len(self.pick_states)} states | "
                f"{' → '.join(self.pick_states)} |"
            )
        verdict = "graph OK" if self.ok else "graph FAILED"
        if self.dead:
            verdict += f" (exited early: {', '.join(self.dead)})"
        if self.wait_for_pick:
            if self.pick_outcome is None:
                verdict += f" (no pick outcome within {self.duration:.0f} s)"
            else:
                verdict = outcome_line(self.pick_outcome) + "\n" + verdict
        if self.goal_sent:
            if self.pick_result is None:
                verdict += f" (no /pick result within {self.duration:.0f} s)"
            else:
                verdict = result_line(self.pick_result) + "\n" + verdict
        if self.watch_recorder:
            last = (self.recorder or {}).get("last") or "no episode written"
            verdict = f"dataset recorder: {last}\n" + verdict
        return "\n".join([*lines, "", verdict])


def outcome_line(o: dict[str, Any]) -> str:
    """One line of a pick's outcome (``outcome_fields`` of the outcome topic's message): the
    two-jaw pick's, or the three-finger hand pick's (its strain and finger targets)."""
    nan = lambda v, scale=1.0: "-" if v != v else f"{v * scale:.3g}"  # noqa: E731
    forces = ", ".join(f"{f:.2f}" for f in o["jaw_forces"])
    what = "hand pick" if o["strain_peak"] == o["strain_peak"] else "pick"
    line = (
        f"{what} outcome: {o['outcome']} (judged by {o['judged_by'] or '-'}; {o['reason']}) — "
        f"lift {nan(o['lift'], 100.0)} cm, close {nan(o['close_time'])} s, squeeze "
        f"{nan(o['squeeze'])} N, forces [{forces}] N"
    )
    if what == "hand pick":
        targets = ", ".join(f"{t:.2f}" for t in o["jaw_targets"])
        line += f" (targets [{targets}] N), strain {nan(o['strain_peak'])}"
    return line


RESULT_NUMBERS = ("lift", "squeeze", "close_time", "ik_error", "duration")


def result_dict(status: int, result: Any) -> dict[str, Any]:
    """A ``Pick`` action result as plain values: the goal's final status (``succeeded``,
    ``aborted``, ``canceled``), the outcome constant's name (``HELD`` ...), the reason, the
    witness, the state it ended in, the numbers (NaN: not measured) and the jaw forces."""
    from action_msgs.msg import GoalStatus
    from physai_ros_interfaces.action import Pick

    names = {
        getattr(Pick.Result, n): n
        for n in ("HELD", "PLACED", "DROPPED", "MISSED", "ABORTED", "CANCELED", "REJECTED")
    }
    names[Pick.Result.UNJUDGED] = "UNJUDGED"
    statuses = {
        GoalStatus.STATUS_SUCCEEDED: "succeeded",
        GoalStatus.STATUS_ABORTED: "aborted",
        GoalStatus.STATUS_CANCELED: "canceled",
    }
    return {
        "status": statuses.get(status, f"status {status}"),
        "outcome": names.get(result.outcome, f"outcome {result.outcome}"),
        "reason": result.reason,
        "judged_by": result.judged_by,
        "state": result.state,
        **{name: float(getattr(result, name)) for name in RESULT_NUMBERS},
        "jaw_forces": dict(zip(result.jaw_names, map(float, result.jaw_forces), strict=False)),
    }


def result_line(r: dict[str, Any]) -> str:
    """One line of a /pick goal's typed result."""
    nan = lambda v, scale=1.0: "-" if v != v else f"{v * scale:.3g}"  # noqa: E731
    return (
        f"pick result (/pick action): {r['outcome']}, goal {r['status']} (judged by "
        f"{r['judged_by'] or '-'}; {r['reason']}) — lift {nan(r['lift'], 100.0)} cm, close "
        f"{nan(r['close_time'])} s, squeeze {nan(r['squeeze'])} N, {nan(r['duration'])} s"
    )


UNSEEN = ("unknown TF frame", "stale pose: TF frame")
"""The starts of a /pick refusal's reason that say the pick node has not seen the goal's frame
(yet, or lately): a graph coming up, not a wrong goal."""

RECORDER_WRITES = 120.0
"""[s wall] how long the dataset recorder may take to write an episode after its pick's result:
its first imports LeRobot and torch, then the frames are encoded."""

STARTUP = 30.0
"""[s wall] how long a watched graph may take to publish its first joint state. Its nodes are
fresh Python processes importing rclpy and MuJoCo: seconds each on a loaded two-core machine,
where a 3 s watch counted from their start used to end before the first message came."""


def watch_graph(
    duration: float,
    procs: list[subprocess.Popen] | None = None,
    pick: tuple[str, str] | None = None,
    startup: float = STARTUP,
    goal: Any = None,
    recorder: str | None = None,
) -> GraphReport:
    """Subscribe to the standard topics for ``duration`` seconds of wall time from the first
    joint state (waiting up to ``startup`` seconds for it), or, with ``pick`` (its state and
    outcome topics), until the pick publishes its outcome (``duration`` is then a timeout
    from the start). ``goal``: a ``Pick`` goal sent to the ``/pick`` action as soon as its
    server is there, as any client would; the watch then also waits for its typed result
    (``GraphReport.pick_result``). ``recorder``: the dataset recorder's status topic: the goal
    waits until it receives every stream (a pick that began before is not recorded), and the
    watch until it has written the episode."""
    import rclpy
    from physai_ros_interfaces.action import Pick
    from physai_ros_interfaces.msg import PickOutcome
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState
    from std_msgs.msg import String
    from tf2_msgs.msg import TFMessage

    from physai_ros import interfaces
    from physai_ros.nodes._pick_outcome import outcome_fields
    from physai_ros.qos import stream_qos

    wait_for_pick = pick is not None
    state_topic, outcome_topic = pick or (interfaces.PICK_STATE, interfaces.PICK_OUTCOME)
    report = GraphReport(
        duration=duration, wait_for_pick=wait_for_pick, pick_topic="/" + state_topic
    )

    def on_joint_state(msg: JointState) -> None:
        report.joint_states += 1
        report.joint_names = list(msg.name)

    def on_tf(msg: TFMessage) -> None:
        report.tf_messages += 1
        report.tf_frames.update(t.child_frame_id for t in msg.transforms)

    def on_tf_static(msg: TFMessage) -> None:
        report.tf_static_frames.update(t.child_frame_id for t in msg.transforms)

    def on_clock(msg: Clock) -> None:
        report.clock_messages += 1
        report.last_clock = msg.clock.sec + msg.clock.nanosec * 1e-9

    def on_pick_state(msg: String) -> None:
        if not report.pick_states or report.pick_states[-1] != msg.data:
            report.pick_states.append(msg.data)

    def on_pick_outcome(msg: PickOutcome) -> None:
        report.pick_outcome = outcome_fields(msg)

    def on_recorder(msg: String) -> None:
        report.recorder = json.loads(msg.data)

    static_qos = QoSProfile(
        depth=1,
        durability=DurabilityPolicy.TRANSIENT_LOCAL,
        reliability=ReliabilityPolicy.RELIABLE,
    )
    context = rclpy.Context()
    rclpy.init(args=sys.argv[:1], context=context)  # the command's own arguments are not ROS's
    try:
        node = rclpy.create_node("physai_graph_monitor", context=context)
        node.create_subscription(
            JointState, interfaces.JOINT_STATES, on_joint_state, stream_qos(10)
        )
        node.create_subscription(TFMessage, interfaces.TF, on_tf, stream_qos(100))
        node.create_subscription(TFMessage, interfaces.TF_STATIC, on_tf_static, static_qos)
        node.create_subscription(Clock, interfaces.CLOCK, on_clock, stream_qos(10))
        node.create_subscription(String, state_topic, on_pick_state, static_qos)
        node.create_subscription(PickOutcome, outcome_topic, on_pick_outcome, static_qos)
        if recorder is not None:
            report.watch_recorder = True
            node.create_subscription(String, recorder, on_recorder, static_qos)
        executor = rclpy.executors.SingleThreadedExecutor(context=context)
        executor.add_node(node)
        sent = result = None  # the goal's send and result futures
        resend = 0.0  # [s, monotonic] the goal is (re)sent from then on
        if goal is not None:
            from rclpy.action import ActionClient

            client = ActionClient(node, Pick, "/" + interfaces.PICK_ACTION)
        start = time.monotonic()
        waiting = not wait_for_pick  # for the first joint state, then for duration from it
        deadline = start + (startup if waiting else duration)
        while time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
            if waiting and report.joint_states:
                waiting, start = False, time.monotonic()
                deadline = start + duration
            # a goal naming a TF frame goes once the frame is on /tf (the pick node refuses a
            # frame it has not seen); one refused for that is sent again a second later
            due = goal is not None and sent is None and time.monotonic() >= resend
            due = due and (not goal.object_frame or goal.object_frame in report.tf_frames)
            due = due and (recorder is None or bool(report.recorder and report.recorder["ready"]))
            if due and client.server_is_ready():
                sent, report.goal_sent = client.send_goal_async(goal), True
            if sent is not None and result is None and sent.done():
                handle = sent.result()
                if not handle.accepted:  # the node checks goals itself: refusal is a result
                    break
                result = handle.get_result_async()
            if result is not None and result.done() and report.pick_result is None:
                answer = result.result()
                if (
                    answer.result.outcome == Pick.Result.REJECTED
                    and answer.result.reason.startswith(UNSEEN)
                ):
                    sent = result = None
                    resend = time.monotonic() + 1.0
                    continue
                report.pick_result = result_dict(answer.status, answer.result)
                # its outcome comes on the outcome topic too; a goal refused has none; the
                # recorder writes the episode after it (LeRobot's first import, the encoding)
                now = time.monotonic()
                deadline = now + RECORDER_WRITES if recorder else min(deadline, now + 1.0)
            for p in procs or []:
                if p.poll() is not None:
                    report.dead.append(" ".join(p.args[2:3]))
            answered = goal is None or report.pick_result is not None
            recorded = recorder is None or report.recorded
            if report.dead or (
                wait_for_pick and report.pick_outcome is not None and answered and recorded
            ):
                break
        report.duration = max(time.monotonic() - start, 1e-3)
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)
    return report
