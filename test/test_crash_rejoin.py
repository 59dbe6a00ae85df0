"""Crashed nodes, the representative run in CI (the whole table: ``physai bench crash``,
docs/faults.md): on the simulated pick graph, the TF publisher
SIGKILLed mid-pick, then the pick node SIGKILLed mid-close, both started again; and the
trajectory node's controller killed under a running goal.
"""

from __future__ import annotations

import json
import re
import time

import pytest
import rclpy

from physai_ros.experiments.trials.observers import (
    Observer,
    TrajectoryClient,
    latched_rejoin,
    start_pick_observed,
)
from physai_ros.experiments.trials.spinning import wait
from physai_ros.launching.graph import pick_graph, trajectory_graph
from physai_ros.launching.process_graph import Graph

pytestmark = [pytest.mark.dds, pytest.mark.slow]

STILL = 0.01  # [rad/s] "holds": no arm joint faster than this once the last goal has ended
SETTLED = 0.003  # [m] the cube within this of where it rested: neither lifted nor knocked


def test_tf_publisher_and_pick_killed_mid_pick_the_arm_holds_and_both_rejoin(tmp_path, ros_domain):
    """The TF publisher killed in ``pre``: the pick, which planned from the cube's pose at the
    end of settle, runs on into ``close``. The pick killed 0.6 s into close (the jaw has been
    commanded shut, the arm holds at the down pose): nobody reports an outcome, and within 1 s
    the arm is still -- the controller holds the last goal's end, no motion anyone did not
    command -- and the cube sits where it was. Both restarted: a fresh subscriber receives the
    latched /tf_static and robot_description, and the restarted pick, starting from wherever the
    arm is held, picks the cube again and holds it (judged by its pose on TF)."""
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=ros_domain)
    seen = Observer(context)
    graph = Graph(pick_graph(sim=True), tmp_path, ros_domain, held_back=("pick",))
    log = lambda: (tmp_path / "pick.log").read_text(errors="replace")[-3000:]  # noqa: E731
    try:
        # the observer is connected before the pick starts, and reads the state history
        assert start_pick_observed(graph, seen), log()
        assert wait(lambda: seen.entered("pre"), 120.0), (seen.states, log())
        graph.kill("tf_publisher")
        assert wait(lambda: seen.entered("close"), 5.0), (seen.states, log())
        time.sleep(0.6)
        resting = seen.cube[1]
        graph.kill("pick")
        killed = time.monotonic()
        time.sleep(1.0)
        assert seen.outcome is None
        speed = seen.arm_speed(killed + 0.5)
        assert speed is not None and speed < STILL, speed
        assert seen.cube[0] > killed + 0.5 and abs(seen.cube[1] - resting) < SETTLED, seen.cube

        seen.forget()
        graph.restart("tf_publisher")
        graph.restart("pick")
        latched = latched_rejoin(context, 60.0)
        assert None not in latched.values(), latched
        assert wait(lambda: seen.outcome is not None, 90.0), log()
        outcome = seen.outcome[1]
        assert outcome["outcome"] == "held" and outcome["judged_by"] == "cube_pose", outcome
        # it started where the arm was held: its first state, from its own log (the observer
        # may match the restarted publisher after that state has passed)
        entered = re.findall(r"state (\w+) at t =", graph.log("pick"))
        assert entered[:1] == ["home"], entered
    finally:
        seen.close()
        graph.close()
        rclpy.try_shutdown(context=context)


def test_sim_bridge_killed_mid_goal_the_trajectory_node_aborts_the_goal_naming_the_silence(
    tmp_path, ros_domain
):
    """The trajectory graph's controller (the sim bridge) killed 0.3 s into a 2 s goal: the
    trajectory node's client gets an aborted result naming the silent robot within
    ``state_timeout`` (1 s) + 0.5 s, not after the move's end + ``result_margin`` + the cancel's
    ``server_timeout`` (16.8 s before the fix: nothing answers, and the stopped sim clock ends
    nothing)."""
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=ros_domain)
    specs = [s for s in trajectory_graph("so101", sim=True) if s.name != "tf_publisher"]
    graph = Graph(specs, tmp_path, ros_domain)
    user = TrajectoryClient(context, ["shoulder_pan"])
    log = lambda: (tmp_path / "trajectory.log").read_text(errors="replace")[-3000:]  # noqa: E731
    try:
        handle = user.send([0.5], seconds=2)
        assert handle is not None, log()
        result = handle.get_result_async()
        answered: list[float] = []
        result.add_done_callback(lambda _f: answered.append(time.monotonic()))
        time.sleep(0.3)
        graph.kill("sim_bridge")
        killed = time.monotonic()
        assert wait(result.done, 5.0), log()
        report = json.loads(result.result().result.error_string)
        assert report["status"] == "aborted", report
        assert report["message"].startswith("robot silent: no /joint_states for"), report
        assert answered[0] - killed < 1.5, f"aborted {answered[0] - killed:.2f} s after the kill"
    finally:
        user.close()
        graph.close()
        rclpy.try_shutdown(context=context)


def test_a_pick_that_cannot_start_says_what_it_waits_for(ros_domain, monkeypatch):
    """A pick whose graph lost a node before it started (the restarted TF publisher's cube pose
    not through, no sim bridge, no /clock) waits, and every WAITING_LOG_PERIOD (wall clock,
    also when no sim clock runs) logs what is missing, each named."""
    from physai_ros.nodes import pick as pick_node

    context = rclpy.Context()
    rclpy.init(
        context=context, domain_id=ros_domain, args=["--ros-args", "-p", "use_sim_time:=true"]
    )
    monkeypatch.setattr(pick_node.Node, "__init__", _in(context))
    node = pick_node.PickNode()
    try:
        warnings: list[str] = []
        monkeypatch.setattr(node, "get_logger", lambda: _Log(warnings))
        node.watch_silence()
        assert warnings == []  # not before the period has passed
        node.waiting_logged -= pick_node.WAITING_LOG_PERIOD
        node.watch_silence()
        assert len(warnings) == 1, warnings
        for what in (
            "joint states of ['shoulder_pan'",
            "the arm controller's state (arm_controller/controller_state)",
            "the cube's pose (TF frame 'cube')",
            "the action server arm_controller/follow_joint_trajectory",
            "the action server gripper_controller/gripper_cmd",
            "the clock (/clock)",
        ):
            assert what in warnings[0], warnings[0]
        node.watch_silence()
        assert len(warnings) == 1  # once a period, not at the watchdog's 10 Hz
    finally:
        node.destroy_node()
        rclpy.try_shutdown(context=context)


def _in(context):
    """rclpy's Node.__init__ on ``context`` (PickNode passes none)."""
    init = rclpy.node.Node.__init__

    def patched(self, name, **kwargs):
        init(self, name, context=context, **kwargs)

    return patched


class _Log:
    def __init__(self, warnings: list[str]) -> None:
        self.warnings = warnings

    def warning(self, text: str) -> None:
        self.warnings.append(text)
