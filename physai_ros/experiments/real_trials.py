"""Pick trials a researcher can publish: k/n per cube position with the Wilson interval, every
trial recorded as a rosbag2 bag (MCAP), a CSV, a table and a plot.

``physai trials --cubes 0.22,0.0 0.20,0.02 --per-cube 20``

Every trial is one goal to the pick's ``/pick`` action, all of them in ONE running graph, and
each is judged by the action's typed result (``physai_ros_interfaces/action/Pick``: HELD,
MISSED, DROPPED, ABORTED ... with its reason and witness). The command never judges success
itself: the pick node does, from the robot's own measurements (and a cube pose when a camera
or motion capture publishes one). Between two trials the command opens the jaw (the
``GripperCommand`` of the gripper controller) so the cube can be taken out, and the cube is put
back at the position being tested. Each trial records ``/joint_states``, ``/tf``,
``/tf_static``, ``/jaw_contact/*``, ``/diagnostics``, ``/pick/*``; the table resumes where an
interrupted run stopped.

Real arm: start the graph once with the pick left to goals, ``ros2 launch physai_ros
pick.launch.py sim:=false start_pick:=false``, then run this command beside it: before each
trial it asks the operator to put the cube back and press Enter.

``--emulated`` starts that graph itself (``pick_graph(sim=False, start_pick=False)``, exactly
as the launch file does) with the bus emulator in place of the serial port, and puts the
emulator's cube back before each trial (its ``cube_pos`` parameter, set at run time); the
emulator's true cube pose after the result is recorded beside the pick's verdict as an
independent witness, and the table says how often the two agree.

``--unkind`` makes the emulator as hard as a real arm where it can (``UNKIND``: 2 ms of USB
round trip per transaction, the load register read as the motor's PWM duty, the servos' position
dead band); ``--emulator-param NAME=VALUE`` sets any other of its parameters (checked against
the emulator's declared parameters before anything starts). Each emulated trial also records the
driver's bus loop as the servos see it: its rate [Hz] (the state reads the servos answered per
second over the trial: mean and lowest over one second) and the largest step between two goals
a servo received in a row [rad per cycle], since the graph started -- the command step where it
lands, not where it was computed.

The last line is ``held_rate = <k/n>``.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import math
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import yaml

from physai_ros.core.stats import wilson
from physai_ros.datasets.from_ros import Sources
from physai_ros.errors import InvalidInput
from physai_ros.parameters import load_schema

TOPICS = (
    "/joint_states",
    "/tf",
    "/tf_static",
    "/jaw_contact/fixed_jaw",
    "/jaw_contact/moving_jaw",
    "/diagnostics",
    "/pick/state",
    "/pick/outcome",
    # what the servos were commanded: 'physai convert' makes a dataset's actions of them
    "/arm_controller/controller_state",
    "/gripper_controller/controller_state",
)
STREAMS = tuple(Sources().streams().values())
"""The topics a dataset episode is made of: each trial's bag has them before its goal goes."""
EMULATOR = "/so101_emulator"
WITNESS = f"{EMULATOR}/witness"
PUT_BACK = 0.005  # [m] a cube put back rests this close to its place, out of the jaws
GRAPH_UP = 120.0  # [s wall] the graph's nodes up (fresh processes on a loaded machine)
PRE_ROLL = 0.5  # [s wall] every stream in a trial's bag for this long before its goal goes
FIELDS = [
    "cube_x",
    "cube_y",
    "trial",
    "outcome",
    "judged_by",
    "reason",
    "duration_s",
    "lift_cm",
    "close_s",
    "squeeze_N",
    "true_lift_cm",
    "true_in_jaws",
    "agrees",
    "loop_hz",
    "loop_hz_min",
    "max_step_rad",
    "max_step_joint",
    "max_arm_step_rad",
    "emulator",
    "bag",
]
UNKIND = {"usb_latency_ms": 2.0, "load_model": "duty", "dead_zone": 5}
"""``--unkind``: the emulator as hard as a real SO-101 where it is known to be harder than a
pty -- a USB serial adapter's round trip of 2 ms on every transaction (which sets the bus loop's
rate), Present_Load read as the motor's PWM duty (with the back-EMF of the motion, following the
supply) and a position dead band of 5 steps (a jaw held where it stalled stops squeezing)."""
SET_BY_TRIALS = ("link", "calibration_out", "cube_pos")  # each trial sets these itself


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cubes",
        nargs="+",
        default=["0.22,0.0"],
        metavar="X,Y",
        help="fixed cube positions in the robot base frame [m]",
    )
    parser.add_argument("--per-cube", type=int, default=20, help="trials per cube position")
    parser.add_argument(
        "--output",
        type=Path,
        default=Path("physai_output/trials"),
        help="trials.csv, the bags (bags/<x>_<y>_<n>/), trials.png go here",
    )
    parser.add_argument(
        "--emulated",
        action="store_true",
        help="start the real-arm graph on the bus emulator and run every trial in it",
    )
    parser.add_argument(
        "--unkind",
        action="store_true",
        help="with --emulated: the emulator as hard as a real arm "
        + ", ".join(f"{k}={v}" for k, v in UNKIND.items()),
    )
    parser.add_argument(
        "--emulator-param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="with --emulated: set one of the emulator's parameters (repeatable; after --unkind)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=90.0,
        help="[s] per trial: the goal's time_limit (the pick aborts, the arm goes home)",
    )


def emulator_params(unkind: bool, items: list[str]) -> dict[str, Any]:
    """The emulator's parameters a run sets: ``UNKIND`` if ``unkind``, then each ``NAME=VALUE``
    of ``items``, checked against the emulator's declared parameters (name, type, range) so a
    typo stops the run before its first trial, not as a node that dies in each."""
    schema = load_schema("so101_emulator")
    out: dict[str, Any] = dict(UNKIND) if unkind else {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise InvalidInput(f"--emulator-param {item!r} is not NAME=VALUE")
        if name in SET_BY_TRIALS:
            raise InvalidInput(f"--emulator-param {name}: set by each trial itself")
        spec = schema.get(name)
        if spec is None:
            names = ", ".join(n for n in schema if n not in SET_BY_TRIALS)
            raise InvalidInput(f"--emulator-param: the emulator has no parameter {name!r}; {names}")
        raw = text if spec.type == "string" else yaml.safe_load(text)
        value = spec.coerce(raw)  # InvalidInput naming the parameter and its type
        if spec.bounds is not None and not spec.bounds[0] <= value <= spec.bounds[1]:
            raise InvalidInput(
                f"--emulator-param {name}={text}: outside [{spec.bounds[0]}, {spec.bounds[1]}] "
                f"({spec.description})"
            )
        out[name] = value
    return out


def bus_loop(witness: list[dict]) -> dict[str, Any]:
    """The driver's bus loop as the servos saw it over a trial's witness records: ``loop_hz``,
    the state reads per second from the first read on (one per cycle), ``loop_hz_min``, the
    lowest over one second, ``max_step_rad`` / ``max_step_joint``, the largest step between
    two goals a servo received in a row [rad] and its joint, and ``max_arm_step_rad``, the
    largest of the five arm joints' (the gripper's goals step by design, as far as the speed
    bound lets them). Empty when the emulator published none of these (no records, or no read
    yet)."""
    reads = [(w["stamp"], w["state_reads"]) for w in witness if w.get("state_reads")]
    if len(reads) < 2 or reads[-1][0] - reads[0][0] <= 0.0:
        return {}
    (t0, n0), (t1, n1) = reads[0], reads[-1]
    lowest, j = math.inf, 0
    for i, (ta, na) in enumerate(reads):
        j = max(j, i)
        while j < len(reads) and reads[j][0] - ta < 1.0:
            j += 1
        if j == len(reads):
            break
        tb, nb = reads[j]
        lowest = min(lowest, (nb - na) / (tb - ta))
    steps = witness[-1]["max_goal_step"]
    worst = max(range(len(steps)), key=lambda k: steps[k])
    return {
        "loop_hz": round((n1 - n0) / (t1 - t0), 1),
        "loop_hz_min": round(lowest, 1) if math.isfinite(lowest) else None,
        "max_step_rad": round(steps[worst], 4),
        "max_step_joint": witness[-1]["joints"][worst],
        "max_arm_step_rad": round(max(steps[:5]), 4),
    }


class TrialsClient:
    """The trials' one client of the one graph: the ``/pick`` action (a goal per trial), the
    jaw's ``GripperCommand`` (opened after each trial, so the cube can be taken out), on the
    emulator its ``cube_pos`` parameter (the cube put back) and its witness (the truth), and
    each trial's bag recorder."""

    def __init__(self, emulated: bool) -> None:
        import rclpy
        from control_msgs.action import GripperCommand
        from physai_ros_interfaces.action import Pick
        from rcl_interfaces.srv import SetParameters
        from rclpy.action import ActionClient
        from rclpy.executors import SingleThreadedExecutor
        from std_msgs.msg import String

        from physai_ros import interfaces

        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.emulated = emulated
        node = self.node = rclpy.create_node("physai_trials", context=self.context)
        self.pick = ActionClient(node, Pick, "/" + interfaces.PICK_ACTION)
        self.gripper = ActionClient(node, GripperCommand, "/" + interfaces.GRIPPER_COMMAND)
        self.emulator = node.create_client(SetParameters, EMULATOR + "/set_parameters")
        self.witness: dict | None = None
        self.witnessed: list[dict] = []  # the bus loop's numbers of every record of a trial
        node.create_subscription(String, WITNESS, self._on_witness, 10)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(node)
        self.recorder = None

    def _on_witness(self, msg) -> None:
        self.witness = record = json.loads(msg.data)
        keep = ("stamp", "state_reads", "max_goal_step", "joints")
        self.witnessed.append({k: record[k] for k in keep if k in record})

    def spin_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.05)

    def answer(self, future, timeout: float, what: str):
        self.executor.spin_until_future_complete(future, timeout_sec=timeout)
        if not future.done():
            raise TimeoutError(f"no answer from {what} within {timeout:g} s")
        return future.result()

    def record(self, bag: Path) -> None:
        """Start recording a trial's bag (``TOPICS``, and the witness on the emulator), and
        wait until the streams a dataset is made of have reached it, and ``PRE_ROLL`` more: a
        pick that began before its bag held every stream could not be converted (``physai
        convert``), and one that began just as the first samples came would depend on a few
        milliseconds between the nodes' clocks."""
        from physai_ros.recording.bags import BagRecorder

        topics = (*TOPICS, WITNESS) if self.emulated else TOPICS
        self.recorder = BagRecorder(self.context, bag, topics)
        self.executor.add_node(self.recorder.node)
        self.witnessed = []
        end = time.monotonic() + GRAPH_UP
        while any(self.recorder.counts[t] == 0 for t in STREAMS) and time.monotonic() < end:
            self.spin_for(0.05)
        self.spin_for(PRE_ROLL)

    def stop_recording(self) -> dict[str, int]:
        recorder, self.recorder = self.recorder, None
        if recorder is None:
            return {}
        self.executor.remove_node(recorder.node)
        return recorder.close()

    def put_cube(self, cube: tuple[float, float]) -> None:
        """The emulator's cube back on the table at ``cube`` (its ``cube_pos``, base frame
        [m]), then a second of its physics for the cube to settle and the witness to follow."""
        from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
        from rcl_interfaces.srv import SetParameters

        if not self.emulator.wait_for_service(timeout_sec=GRAPH_UP):
            raise TimeoutError(f"no {EMULATOR}/set_parameters service")
        value = ParameterValue(
            type=ParameterType.PARAMETER_DOUBLE_ARRAY, double_array_value=[*map(float, cube)]
        )
        request = SetParameters.Request(parameters=[Parameter(name="cube_pos", value=value)])
        result = self.answer(self.emulator.call_async(request), 30.0, EMULATOR).results[0]
        if not result.successful:
            raise InvalidInput(f"the emulator refused the cube position {cube}: {result.reason}")
        self.spin_for(1.0)
        # the truth a trial is judged against starts from a cube truly on the table there
        from physai_ros.sim.scene import placed_cube_world

        truth = self.truth_after(time.time())
        want = placed_cube_world("so101", cube)
        if truth is None:
            raise TimeoutError(f"no witness from {EMULATOR} after putting the cube back")
        off = max(abs(a - b) for a, b in zip(truth["cube_pos"], want, strict=True))
        if off > PUT_BACK or truth["cube_in_jaws"]:
            raise RuntimeError(
                f"the emulator's cube is not back on the table: at {truth['cube_pos']} m "
                f"(wanted {want.tolist()}), in the jaws: {truth['cube_in_jaws']}"
            )

    def open_jaw(self) -> None:
        """Open the jaw (config/pick.yaml's ``jaw_open`` at the jaw's cap), letting go of what
        it holds: a trial leaves the cube in the jaws."""
        from control_msgs.action import GripperCommand

        from physai_ros import interfaces
        from physai_ros.config import node_tree

        tree = node_tree("pick.yaml")
        goal = GripperCommand.Goal()
        goal.command.position = float(tree["jaw_open"])
        goal.command.max_effort = float(tree["jaw_torque_cap"])
        if not self.gripper.wait_for_server(timeout_sec=GRAPH_UP):
            raise TimeoutError(f"no /{interfaces.GRIPPER_COMMAND} action server")
        handle = self.answer(self.gripper.send_goal_async(goal), 30.0, "the gripper")
        if handle.accepted:
            self.answer(handle.get_result_async(), 30.0, "the gripper")

    def send(self, cube: tuple[float, float], timeout: float):
        """One goal to ``/pick`` for the cube resting at ``cube`` (base frame [m]): its
        ``object_pose`` in the world with a zero stamp ("it is there now"), lift and hold,
        aborting after ``timeout`` [s]; its typed result."""
        from physai_ros_interfaces.action import Pick

        from physai_ros.sim.scene import placed_cube_world

        goal = Pick.Goal(time_limit=float(timeout))
        goal.object_pose.header.frame_id = "world"
        p = goal.object_pose.pose.position
        p.x, p.y, p.z = (float(v) for v in placed_cube_world("so101", cube))
        if not self.pick.wait_for_server(timeout_sec=GRAPH_UP):
            raise TimeoutError("no /pick action server: is the pick graph running?")
        handle = self.answer(self.pick.send_goal_async(goal), 30.0, "/pick")
        if not handle.accepted:
            raise RuntimeError("/pick refused the goal")
        return self.answer(handle.get_result_async(), timeout + 30.0, "/pick").result

    def truth_after(self, t: float, timeout: float = 5.0) -> dict | None:
        """The emulator's first witness record stamped after ``t`` [s, system clock]."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.witness is not None and self.witness["stamp"] > t:
                return self.witness
            self.executor.spin_once(timeout_sec=0.05)
        return None

    def close(self) -> None:
        import rclpy

        self.stop_recording()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


def _nan_none(value: float, scale: float = 1.0) -> float | None:
    return None if math.isnan(value) else round(value * scale, 4)


def run_trial(
    client: TrialsClient,
    cube: tuple[float, float],
    bag: Path,
    timeout: float,
    emulator: dict[str, Any] | None = None,
) -> dict:
    """One trial in the running graph: the cube put back (the emulator's ``cube_pos``, or the
    operator), its bag recorded, one goal to ``/pick``, judged by the typed result; on the
    emulator also its truth (the witness after the result) and the bus loop as the servos saw
    it (``bus_loop``); the jaw opened at the end. ``emulator``: its parameters, for the row."""
    if client.emulated:
        client.put_cube(cube)
    from physai_ros.nodes._pick_outcome import outcome_name

    client.record(bag)
    began = time.monotonic()
    try:
        result = client.send(cube, timeout)
        row = {
            "outcome": outcome_name(result.outcome),
            "judged_by": result.judged_by or None,
            "reason": result.reason,
            "lift_cm": _nan_none(result.lift, 100.0),
            "close_s": _nan_none(result.close_time),
            "squeeze_N": _nan_none(result.squeeze),
        }
    except (TimeoutError, RuntimeError) as exc:
        row = {"outcome": "no result", "judged_by": None, "reason": str(exc)}
    ended = time.time()
    truth = client.truth_after(ended) if client.emulated else None
    client.spin_for(0.5)  # the bag's last half second
    row |= {"cube_x": cube[0], "cube_y": cube[1], "duration_s": round(time.monotonic() - began, 1)}
    if truth is not None:
        true_lift = truth["cube_pos"][2] - 0.015  # cube bottom above the table [m]
        held = true_lift >= 0.04 and truth["cube_in_jaws"]
        row |= {
            "true_lift_cm": round(true_lift * 100.0, 3),
            "true_in_jaws": truth["cube_in_jaws"],
            "agrees": held == (row["outcome"] == "held"),
            "emulator": " ".join(f"{k}={v}" for k, v in (emulator or {}).items()),
        }
        row |= bus_loop(client.witnessed)
    row |= {"bag": str(bag), "messages": client.stop_recording()}
    client.open_jaw()
    return row


def start_emulated_graph(
    cube: tuple[float, float], logs: Path, emulator: dict[str, Any]
) -> list[subprocess.Popen]:
    """The bus emulator and the real-arm graph as ``pick.launch.py sim:=false
    start_pick:=false`` starts it (``pick_graph``), the cube at ``cube``; the nodes' logs in
    ``logs``."""
    from physai_ros.launching.bringup import start_emulated
    from physai_ros.launching.graph import emulated_pick_graph

    logs.mkdir(parents=True, exist_ok=True)
    specs, spec = emulated_pick_graph(logs, cube, start_pick=False)
    spec.parameters.update(emulator)
    os.environ.update(specs[0].env)  # this client discovers as the graph does
    return start_emulated(specs, [spec], logs)


def _numbers(rows: list[dict], field: str) -> list[float]:
    """``field`` of ``rows`` as numbers, skipping trials without it (the real arm's, or a
    CSV row written before the field existed)."""
    return [float(r[field]) for r in rows if r.get(field) not in (None, "", "None")]


def _loop_cells(rows: list[dict]) -> str:
    """The bus loop's cells: mean rate (lowest one-second rate), largest goal step (of the
    arm joints)."""
    fields = ("loop_hz", "loop_hz_min", "max_step_rad", "max_arm_step_rad")
    rate, lowest, step, arm = (_numbers(rows, f) for f in fields)
    cell = f"{sum(rate) / len(rate):.0f}" if rate else "-"
    if lowest:
        cell += f" ({min(lowest):.0f})"
    steps = f"{max(step):.3f}" if step else "-"
    if arm:
        steps += f" ({max(arm):.3f})"
    return f"{cell} | {steps}"


def summary(rows: list[dict], cubes: list[tuple[float, float]]) -> list[str]:
    lines = [
        "| cube (x, y) [m] | held | Wilson 95 % | verdict = truth | bus loop [Hz] mean "
        "(lowest 1 s) | largest goal step [rad/cycle] (arm joints) |",
        "|---|---|---|---|---|---|",
    ]
    total_k = total_n = 0
    for cube in cubes:
        mine = [r for r in rows if (float(r["cube_x"]), float(r["cube_y"])) == cube]
        k, n = sum(r["outcome"] == "held" for r in mine), len(mine)
        total_k, total_n = total_k + k, total_n + n
        agree = [str(r.get("agrees")) for r in mine if r.get("agrees") not in (None, "")]
        agreed = f"{agree.count('True')}/{len(agree)}" if agree else "-"
        if n:
            low, high = wilson(k, n)
            lines.append(
                f"| {cube} | {k}/{n} | [{low:.2f}, {high:.2f}] | {agreed} | {_loop_cells(mine)} |"
            )
    if total_n:
        low, high = wilson(total_k, total_n)
        lines.append(
            f"| all | {total_k}/{total_n} | [{low:.2f}, {high:.2f}] | | {_loop_cells(rows)} |"
        )
    lines.append(f"held_rate = {total_k / max(total_n, 1):.3f}")
    return lines


def plot(rows: list[dict], cubes: list[tuple[float, float]], path: Path) -> None:
    """Held fraction per cube position with its Wilson 95 % interval."""
    import matplotlib.pyplot as plt

    labels, rates, lows, highs = [], [], [], []
    for cube in cubes:
        mine = [r for r in rows if (float(r["cube_x"]), float(r["cube_y"])) == cube]
        if not mine:
            continue
        k, n = sum(r["outcome"] == "held" for r in mine), len(mine)
        low, high = wilson(k, n)
        labels.append(f"({cube[0]:.3f}, {cube[1]:.3f})\nn = {n}")
        rates.append(k / n)
        lows.append(k / n - low)
        highs.append(high - k / n)
    fig, ax = plt.subplots(figsize=(max(4.0, 1.6 * len(labels)), 3.5))
    ax.bar(range(len(labels)), rates, yerr=[lows, highs], capsize=6, color="#4a7ab5")
    ax.set_xticks(range(len(labels)), labels)
    ax.set_ylim(0.0, 1.05)
    ax.set_ylabel("held (Wilson 95 %)")
    ax.set_title("SO-101 pick trials: fraction held per cube position")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _check_alive(procs: list[subprocess.Popen], logs: Path) -> None:
    """Stop the run when a node of the emulated graph has exited (its log's tail says why):
    every later goal would only time out."""
    for proc in procs:
        if proc.poll() is not None:
            name = proc.args[2].rsplit(".", 1)[-1]
            tail = (logs / f"{name}.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{name} exited ({proc.returncode}):\n{tail}")


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from physai_ros.launching.bringup import stop
    from physai_ros.launching.graph import discovery_env

    cubes = [tuple(float(v) for v in c.split(",")) for c in args.cubes]
    if (args.unkind or args.emulator_param) and not args.emulated:
        raise InvalidInput("--unkind and --emulator-param set the emulator: add --emulated")
    emulator = emulator_params(args.unkind, args.emulator_param)
    out: Path = args.output
    (out / "bags").mkdir(parents=True, exist_ok=True)
    table = out / "trials.csv"
    rows = []
    if table.is_file():
        with table.open() as f:
            reader = csv.DictReader(f)
            rows, header = list(reader), reader.fieldnames or []
        if header != FIELDS:  # written by an older version: rewritten with today's columns
            with table.open("w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
                writer.writeheader()
                writer.writerows(rows)
    new_file = not table.is_file()
    todo = []
    for cube in cubes:
        done = sum(1 for r in rows if (float(r["cube_x"]), float(r["cube_y"])) == cube)
        todo += [(cube, trial) for trial in range(done, args.per_cube)]
    procs: list[subprocess.Popen] = []
    client = None
    logs = out / "logs"  # the emulated graph's node logs
    try:
        if todo and args.emulated:
            procs = start_emulated_graph(todo[0][0], logs, emulator)
        elif todo:  # the operator's graph: reachable from this computer (its discovery)
            for name, value in discovery_env("localhost").items():
                os.environ.setdefault(name, value)
        if todo:
            client = TrialsClient(args.emulated)
        with table.open("a", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
            if new_file:
                writer.writeheader()
            for cube, trial in tqdm(todo, desc="trials", unit="pick", disable=not todo):
                bag = out / "bags" / f"{cube[0]:.3f}_{cube[1]:.3f}_{trial + 1:03d}"
                with contextlib.suppress(FileNotFoundError):
                    if bag.exists():
                        import shutil

                        shutil.rmtree(bag)  # a trial interrupted half-way: record it again
                _check_alive(procs, logs)
                if not args.emulated:
                    input(
                        f"cube {cube}, trial {trial + 1}/{args.per_cube}: put the cube at "
                        f"x={cube[0]}, y={cube[1]} m (base frame), then press Enter "
                    )
                row = run_trial(client, cube, bag, args.timeout, emulator)
                row |= {"trial": trial + 1}
                writer.writerow(row)
                f.flush()
                rows.append({k: str(v) for k, v in row.items()})
                loop = (
                    f"; bus loop {row['loop_hz']} Hz (lowest {row['loop_hz_min']}), largest "
                    f"goal step {row['max_step_rad']} rad ({row['max_step_joint']}; arm joints "
                    f"{row['max_arm_step_rad']} rad)"
                    if "loop_hz" in row
                    else ""
                )
                truth = f", truth agrees: {row['agrees']}" if "agrees" in row else ""
                tqdm.write(
                    f"cube {cube} trial {trial + 1}: {row['outcome']} ({row['judged_by']}; "
                    f"{row['duration_s']} s){truth}{loop}"
                )
    finally:
        if client is not None:
            client.close()
        stop(procs)
    lines = summary(rows, cubes)
    print("\n".join(lines))
    plot(rows, cubes, out / "trials.png")
    print(f"bags: {out / 'bags'}; table: {table}; plot: {out / 'trials.png'}")
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_arguments(p)
    raise SystemExit(run(p.parse_args()))
