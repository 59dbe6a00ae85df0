"""The crash table: SIGKILL one node of the simulated pick graph at each pick state, see what the
rest of the graph does, restart the node and check that it rejoins.

The graph is ``pick_graph(sim=True)``, the nodes ``pick.launch.py sim:=true`` starts, each in a
process of its own with the product's parameters (``physai_ros.launching.bringup.start``). A
client node in this process watches what a user's tools would: ``pick/state``,
``pick/outcome``, the joint states and the cube's pose from the sim bridge. For each node and
state (one fresh graph per cell):

1. wait for the state on ``pick/state``, SIGKILL the node, watch for ``WINDOW`` seconds: the
   outcome (and how long after the kill it came), the states entered, whether the arm still
   moves at the end and where the cube is;
2. let a pick still running finish (its final outcome);
3. start the node again; a fresh subscriber must receive the latched ``/tf_static`` and
   ``robot_description``; then the pick is run again -- after ``sim/reset`` and with a new pick
   node, except when the pick node itself was killed: its restart is the re-run, from wherever
   the crash left the arm and the cube -- and its outcome is the restarted graph's proof (the
   controllers accept its goals, TF and the clock flow).

The trajectory graph (``trajectory_sim.launch.py``: sim bridge, TF, trajectory node; the pick
graph has no trajectory node) gets the same treatment with the trajectory node killed idle and
mid-goal.

Run it (≈ 30 s a cell)::

    physai bench crash                       # every cell
    physai bench crash --nodes tf_publisher --states close hold
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from physai_ros.errors import InvalidInput
from physai_ros.experiments.trials.spinning import wait
from physai_ros.launching.graph import pick_graph, trajectory_graph
from physai_ros.launching.process_graph import Graph

NODES = ("sim_bridge", "tf_publisher", "pick")
STATES = ("settle", "pre", "down", "close", "lift", "hold")
WINDOW = 2.0  # [s wall] watched after the kill: what happens within 1 s, and a margin
STILL = 0.01  # [rad/s] an arm joint slower than this at the window's end is held still


@dataclass
class Cell:
    """One killed node at one state: what followed and whether the graph recovered."""

    node: str
    state: str
    reached: bool = False
    outcome: str = ""  # what happened within WINDOW of the kill
    outcome_s: float | None = None  # [s wall] kill → outcome on pick/outcome
    after: list[str] = field(default_factory=list)  # states entered after the kill
    arm_speed: float | None = None  # [rad/s] at the window's end (None: no joint states)
    cube_z: tuple[float | None, float | None] = (None, None)  # [m] at the kill, window's end
    final: str = ""  # the killed pick's final outcome, if it ran on
    latched: dict[str, float | None] = field(default_factory=dict)
    rerun: str = ""  # the re-run pick's outcome after the restart
    rerun_s: float | None = None

    def row(self) -> str:
        if not self.reached:
            return f"| {self.node} | {self.state} | state never reached | | | | |"
        speed = "-" if self.arm_speed is None else f"{self.arm_speed:.3f}"
        z0, z1 = (("-" if z is None else f"{100 * z:.1f}") for z in self.cube_z)
        ms = "-" if self.outcome_s is None else f"{self.outcome_s:.2f}"
        latched = " / ".join("no" if v is None else f"{v:.1f}" for v in self.latched.values())
        rerun = f"{self.rerun} ({self.rerun_s:.0f} s)" if self.rerun_s is not None else self.rerun
        after = " → ".join(self.after) or "-"
        return (
            f"| {self.node} | {self.state} | {self.outcome} | {ms} | {after} | {speed} | "
            f"{z0} → {z1} | {self.final or '-'} | {latched} | {rerun} |"
        )


HEADER = (
    "| killed | at | within the window | kill → outcome [s] | states after | "
    "arm speed at end [rad/s] | cube z [cm] | final | rejoin: tf_static / description [s] "
    "| re-run pick |\n|---|---|---|---|---|---|---|---|---|---|"
)


def describe(outcome: dict) -> str:
    """A pick's outcome (``outcome_fields``) in a table cell."""
    if outcome["outcome"] == "aborted":
        return f"aborted: {outcome['reason']}"
    return f"{outcome['outcome']} (judged by {outcome['judged_by']})"


def pick_cell(node: str, state: str, context, domain: int, logs: Path) -> Cell:
    """One cell of the pick table (see the module docstring)."""
    from physai_ros.experiments.trials.observers import (
        START_TIMEOUT,
        Observer,
        latched_rejoin,
        start_pick_observed,
    )

    cell = Cell(node, state)
    seen = Observer(context)
    graph = Graph(pick_graph(sim=True), logs, domain, held_back=("pick",))
    try:
        if not start_pick_observed(graph, seen) or not wait(
            lambda: seen.entered(state), START_TIMEOUT
        ):
            return cell
        cell.reached = True
        graph.kill(node)
        killed = time.monotonic()
        cube0 = seen.cube[1] if seen.cube else None
        time.sleep(WINDOW)
        with seen.lock:
            cell.after = [s for t, s in seen.states if t > killed]
            outcome = seen.outcome
        cell.arm_speed = seen.arm_speed(killed + WINDOW - 0.5)
        cube1 = seen.cube[1] if seen.cube and seen.cube[0] > killed + WINDOW - 0.5 else None
        cell.cube_z = (cube0, cube1)
        if outcome is not None:
            cell.outcome, cell.outcome_s = describe(outcome[1]), outcome[0] - killed
        elif cell.after:
            cell.outcome = "runs on"
        else:
            cell.outcome = "no outcome; arm " + (
                "silent" if cell.arm_speed is None else
                "still" if cell.arm_speed < STILL else "moving"
            )  # fmt: skip
        if node != "pick":  # a pick that runs on: its final outcome
            wait(lambda: seen.outcome is not None, 30.0)
            cell.final = describe(seen.outcome[1]) if seen.outcome else "none within 30 s (hang)"
            if seen.outcome and cell.outcome_s is None:
                cell.outcome_s = seen.outcome[0] - killed
        graph.restart(node)
        if node == "sim_bridge":  # the fresh sim clock: its first messages before the probe
            wait(lambda: seen.arm_speed(time.monotonic() - 0.2) is not None, 60.0)
        cell.latched = latched_rejoin(context, 60.0 if node == "tf_publisher" else 15.0)
        seen.forget()
        if node != "pick":
            if node != "sim_bridge" and not seen.call_reset():
                cell.rerun = "sim/reset not answered"
                return cell
            graph.restart("pick")
        began = time.monotonic()
        if wait(lambda: seen.outcome is not None, 90.0):
            cell.rerun, cell.rerun_s = describe(seen.outcome[1]), time.monotonic() - began
        else:
            cell.rerun = "no outcome within 90 s"
        return cell
    finally:
        seen.close()
        graph.close()


TRAJECTORY_CELLS = (("trajectory", "idle"), ("trajectory", "moving"), ("sim_bridge", "moving"))
"""The trajectory graph's cells: (killed node, phase). ``moving``: 0.3 s into a 2 s goal sent to
the trajectory node (forwarded to the sim bridge's arm controller)."""


def trajectory_cell(killed: str, phase: str, context, domain: int, logs: Path) -> Cell:
    """One cell of the trajectory graph (``TRAJECTORY_CELLS``)."""
    from physai_ros.experiments.trials.observers import (
        START_TIMEOUT,
        TrajectoryClient,
        latched_rejoin,
    )

    cell = Cell(f"{killed} (trajectory graph)", phase)
    graph = Graph(trajectory_graph("panda", sim=True), logs, domain)
    user = TrajectoryClient(context, ["joint1", "joint2", "joint4"])
    speeds, send = user.speeds, user.send
    try:
        if not wait(lambda: speeds, START_TIMEOUT):
            return cell
        cell.reached = True
        handle, result_time = None, []
        if phase == "moving":
            handle = send([0.6, 0.3, -2.0])
            if handle is None:
                cell.reached = False
                return cell
            result = handle.get_result_async()
            result.add_done_callback(lambda _f: result_time.append(time.monotonic()))
            time.sleep(0.3)
        graph.kill(killed)
        stamp = time.monotonic()
        # the 2 s goal the controller still runs when the trajectory node dies: watched to its end
        window = WINDOW + (1.5 if killed == "trajectory" and handle is not None else 0.0)
        time.sleep(window)
        cell.arm_speed = user.speed(stamp + window - 0.5)
        if handle is None:
            cell.outcome = "nothing moves" if (cell.arm_speed or 0.0) < STILL else "arm moves"
        else:
            if killed != "trajectory":  # its server lives: it must answer
                wait(result.done, 30.0)
            if result.done():
                report = json.loads(result.result().result.error_string)
                cell.outcome = f"client: {report['status']}: {report['message']}"
                cell.outcome_s = result_time[0] - stamp if result_time else None
            else:
                cell.outcome = "client: no result (the server died with its goal)"
            if killed == "trajectory":
                moved = [v for t, v in speeds if t > stamp]
                cell.outcome += (
                    "; the controller runs the forwarded trajectory to its end, then holds"
                    if moved and max(moved) > STILL and cell.arm_speed is not None
                    and cell.arm_speed < STILL else "; arm speed after the kill "
                    f"{max(moved) if moved else float('nan'):.3f} rad/s"
                )  # fmt: skip
        graph.restart(killed)
        if killed == "sim_bridge":
            wait(lambda: speeds[-1][0] > time.monotonic() - 0.2, 60.0)
        cell.latched = latched_rejoin(context)
        began = time.monotonic()
        handle = send([0.2, 0.1, -2.2])
        if handle is None:
            cell.rerun = "goal not accepted after the restart"
            return cell
        result = handle.get_result_async()
        ok = wait(result.done, 60.0)
        code = result.result().result.error_code if ok else None
        cell.rerun = "goal succeeded" if code == 0 else f"goal ended with code {code}"
        cell.rerun_s = time.monotonic() - began
        return cell
    finally:
        user.close()
        graph.close()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", nargs="+", default=[*NODES, "trajectory"])
    parser.add_argument("--states", nargs="+", default=list(STATES), help="pick states")
    parser.add_argument("--domain", type=int, default=78, help="ROS_DOMAIN_ID of the graphs")
    parser.add_argument("--keep", type=Path, default=None, help="keep the node logs here")


def run(args: argparse.Namespace) -> int:
    unknown = sorted(set(args.nodes) - {*NODES, "trajectory"}) + sorted(
        set(args.states) - set(STATES)
    )
    if unknown:
        raise InvalidInput(f"unknown {unknown}; nodes {[*NODES, 'trajectory']}, states {STATES}")
    import rclpy

    os.environ["ROS_DOMAIN_ID"] = str(args.domain)
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=args.domain)
    cells = [(n, s) for n in args.nodes if n != "trajectory" for s in args.states]
    if "trajectory" in args.nodes:
        cells += [(f"trajectory:{k}", phase) for k, phase in TRAJECTORY_CELLS]
    rows = []
    with tempfile.TemporaryDirectory(prefix="physai-crash-") as tmp:
        root = args.keep or Path(tmp)
        for i, (node, state) in enumerate(cells, 1):
            logs = root / f"{node}-{state}"
            logs.mkdir(parents=True, exist_ok=True)
            began = time.monotonic()
            print(f"[{i}/{len(cells)}] SIGKILL {node} at {state} ...", flush=True)
            if node.startswith("trajectory:"):
                cell = trajectory_cell(node.split(":")[1], state, context, args.domain, logs)
            else:
                cell = pick_cell(node, state, context, args.domain, logs)
            print(
                f"    {cell.outcome or 'state not reached'} "
                f"({'-' if cell.outcome_s is None else f'{cell.outcome_s:.2f} s'}); "
                f"re-run: {cell.rerun} [{time.monotonic() - began:.0f} s]",
                flush=True,
            )
            rows.append(cell.row())
    rclpy.try_shutdown(context=context)
    print(HEADER)
    print("\n".join(rows))
    return 0
