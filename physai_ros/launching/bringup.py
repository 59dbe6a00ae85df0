"""Start a node graph as separate processes, where launch_ros is absent.

Each node of the graph (``physai_ros.launching.graph``) runs in its own Python process with its
parameters in a ROS parameters file, exactly as ``ros2 launch`` would start it. The bringup
then watches the graph over DDS, prints what it saw, and stops every process it started
(SIGINT first, as ros2 launch does, then SIGTERM/SIGKILL).

``bringup pick`` is a client of the pick's ``/pick`` action: it starts the graph with the pick
left to goals (``start_pick:=false``), sends one goal for the configured cube (its TF frame in
the simulation, its placed position on a real or emulated arm) and prints the goal's typed
result beside the outcome the pick publishes. ``-p start_pick:=true`` keeps the pick at start
instead, watched until its outcome; a computer running a share of a split graph without the
pick node watches for the outcome the other computer's goal brings.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from physai_ros import interfaces
from physai_ros.errors import InvalidInput
from physai_ros.launching.graph import GRAPHS, ROBOTS, NodeSpec, emulator_spec

LINGER = 2.0
"""[s wall] how long a split graph's share (``--only``/``--skip``) runs on after its pick's
outcome came. The other computer may have lost the outcome's datagram on a lossy link: the pick
node's writer repairs it on its next heartbeat (0.1 s, config/fastdds.xml), but only while it
lives. Without this the computer running the pick stopped it at once, and 1 of the lossy-link CI
picks never showed its outcome on the sim bridge's computer (it had seen every state up to
``done``). A whole graph on one computer has no such reader and stops at once."""
EMULATED = ("pick", "teleop")  # graphs --emulated runs on the bus emulator (teleop: two)
PICKS = {  # graph -> (state topic, outcome topic) of the pick it runs, watched to its outcome
    "pick": (interfaces.PICK_STATE, interfaces.PICK_OUTCOME),
    "hand_pick": (interfaces.HAND_PICK_STATE, interfaces.HAND_PICK_OUTCOME),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "graph",
        choices=sorted(GRAPHS),
        help="demo: sim bridge + TF publisher, watched for --duration; pick: the simulated (or "
        "--emulated / real) pick graph, one goal sent to /pick, watched until its typed result "
        "and outcome; hand_pick: the three-finger pick "
        "of a soft object (Barrett-like hand on the simulated Panda), watched until its outcome; "
        "policy: a LeRobot policy (-p policy:=DIR) or a replayed episode (-p policy:=replay "
        "-p dataset:=DIR) streaming to the simulated arm, watched for --duration; teleop: a "
        "leader arm (-p leader_port:=PORT) streaming to the follower, watched for --duration",
    )
    parser.add_argument(
        "--robot", choices=ROBOTS, default=None, help="robot to simulate (default: the graph's)"
    )
    parser.add_argument(
        "--emulated",
        action="store_true",
        help="pick, teleop: the real-arm graph (sim:=false, exactly as its launch file starts "
        "it) with the Feetech bus emulator in place of the arm's serial port (teleop: a second "
        "one as the leader, moved by a scripted hand)",
    )
    parser.add_argument(
        "-p",
        "--param",
        action="append",
        default=[],
        metavar="NAME:=VALUE",
        help="graph argument, e.g. -p cube_mu:=0.5 -p real_time_factor:=0 "
        "(see physai_ros.launching.graph for the names)",
    )
    parser.add_argument(
        "--duration",
        type=float,
        default=None,
        help="demo, trajectory, policy, teleop: how long to watch [s wall time] from the first "
        "joint state (default 5); pick, hand_pick: timeout (default 120)",
    )
    parser.add_argument(
        "--outcome-json",
        type=Path,
        default=None,
        help="pick: also write the pick outcome (the typed result's fields) to this JSON file",
    )
    nodes = parser.add_mutually_exclusive_group()
    nodes.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="NODE",
        help="start only this node of the graph (repeatable): one computer's share of a graph "
        "split across computers, e.g. `--only sim_bridge` here and `--skip sim_bridge` on the "
        "other (same -p arguments on both, ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET)",
    )
    nodes.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="NODE",
        help="start every node of the graph but this one (repeatable); see --only",
    )
    parser.add_argument(
        "--log-dir",
        type=Path,
        default=None,
        help="where each node's stdout/stderr goes (default: a temporary directory)",
    )


def parse_overrides(items: list[str]) -> dict[str, object]:
    """``["cube_mu:=0.5", "sim:=false"]`` → ``{"cube_mu": 0.5, "sim": False}`` (YAML values)."""
    out: dict[str, object] = {}
    for item in items:
        name, sep, value = item.partition(":=")
        if not sep or not name:
            raise InvalidInput(f"graph argument {item!r} is not NAME:=VALUE")
        out[name] = yaml.safe_load(value)
    return out


def select(specs: list[NodeSpec], only: list[str], skip: list[str]) -> list[NodeSpec]:
    """The nodes of ``specs`` this computer starts: those named in ``only`` (all when empty),
    less those in ``skip``. The specs are not changed, so each computer's share of a split graph
    runs with exactly the parameters and remaps it has in the whole graph."""
    names = [s.name for s in specs]
    unknown = sorted((set(only) | set(skip)) - set(names))
    if unknown:
        raise InvalidInput(f"the graph has no node {unknown}; its nodes: {names}")
    chosen = [s for s in specs if (not only or s.name in only) and s.name not in skip]
    if not chosen:
        raise InvalidInput("--skip leaves no node of the graph to start")
    return chosen


def _params_file(spec: NodeSpec, directory: Path) -> Path:
    path = directory / f"{spec.full_name[1:].replace('/', '.')}.params.yaml"
    path.write_text(yaml.safe_dump({spec.full_name: {"ros__parameters": spec.parameters}}))
    return path


def start(specs: list[NodeSpec], log_dir: Path) -> list[subprocess.Popen]:
    """Start one process per node; their output goes to ``log_dir/<name>.log``."""
    procs = []
    for spec in specs:
        env = {**os.environ, **spec.env}
        params = _params_file(spec, log_dir)
        cmd = [
            sys.executable,
            "-m",
            spec.module,
            "--ros-args",
            "-r",
            f"__node:={spec.name}",
            *(["-r", f"__ns:=/{spec.namespace}"] if spec.namespace else []),
            *(arg for src, dst in spec.remaps.items() for arg in ("-r", f"{src}:={dst}")),
            "--params-file",
            str(params),
        ]
        log = open(log_dir / f"{params.name.removesuffix('.params.yaml')}.log", "wb")  # noqa: SIM115 - closed with the process
        procs.append(
            subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env
            )
        )
    return procs


def start_emulated(
    specs: list[NodeSpec], emulators: list[NodeSpec], log_dir: Path, timeout: float = 60.0
) -> list[subprocess.Popen]:
    """Start the bus emulators, wait until their ports and calibration files exist, then the
    real-arm graph ``specs`` (so the driver finds the arm as it would find a plugged-in one)."""
    procs = start(emulators, log_dir)
    deadline = time.monotonic() + timeout
    for proc, emulator in zip(procs, emulators, strict=True):
        link = Path(emulator.parameters["link"])
        calibration = Path(emulator.parameters["calibration_out"])
        while not (link.exists() and calibration.exists()):
            if proc.poll() is not None or time.monotonic() > deadline:
                stop(procs)
                log = (log_dir / f"{emulator.name}.log").read_text(errors="replace")[-2000:]
                raise InvalidInput(f"the bus emulator {emulator.name} did not come up:\n{log}")
            time.sleep(0.05)
    return procs + start(specs, log_dir)


def stop(procs: list[subprocess.Popen], timeout: float = 5.0) -> None:
    """Stop the graph the way ros2 launch does: SIGINT, then SIGTERM, then SIGKILL."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        alive = [p for p in procs if p.poll() is None]
        if not alive:
            return
        for p in alive:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, sig)
        deadline = time.monotonic() + timeout
        for p in alive:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(max(0.0, deadline - time.monotonic()))


def pick_goal(pick: NodeSpec) -> Any:
    """The ``Pick`` goal for the cube the pick node ``pick`` is configured with: its TF frame
    where something publishes it (the simulation), else where it was placed (a real arm's
    ``cube_position``, world [m], a zero stamp: "it is there now"); lift and hold."""
    from physai_ros_interfaces.action import Pick

    goal = Pick.Goal()
    position = pick.parameters.get("cube_position")
    if position is None:
        goal.object_frame = "cube"
        return goal
    goal.object_pose.header.frame_id = "world"
    p = goal.object_pose.pose.position
    p.x, p.y, p.z = (float(v) for v in position)
    return goal


def run(args: argparse.Namespace) -> int:
    from physai_ros.launching.monitor import watch_graph

    kwargs = parse_overrides(args.param)
    graph = GRAPHS[args.graph]
    if args.emulated:
        if args.graph not in EMULATED:
            raise InvalidInput(f"--emulated applies to the {' and '.join(EMULATED)} graphs only")
        kwargs["sim"] = False
    valid = [name for name in inspect.signature(graph).parameters if name != "robot"]
    unknown = sorted(set(kwargs) - set(valid))
    if unknown:
        raise InvalidInput(f"graph {args.graph!r} has no argument {unknown}; valid: {valid}")
    wait_for_pick = args.graph in PICKS
    if args.graph == "pick":
        kwargs.setdefault("start_pick", False)  # the pick comes as a goal to /pick
    duration = args.duration or (120.0 if wait_for_pick else 5.0)
    with tempfile.TemporaryDirectory(prefix="physai-bringup-") as tmp:
        log_dir = args.log_dir or Path(tmp)
        log_dir.mkdir(parents=True, exist_ok=True)
        if args.emulated:  # the emulators' port symlinks and calibrations live with the logs
            kwargs.setdefault("port", str(log_dir / "so101_port"))
            kwargs.setdefault("calibration_file", str(log_dir / "so101_calibration.json"))
            if args.graph == "teleop":
                kwargs.setdefault("leader_port", str(log_dir / "leader_port"))
                kwargs.setdefault("leader_calibration_file", str(log_dir / "leader.json"))
        robot = {} if args.robot is None else {"robot": args.robot}
        everything = graph(**robot, **kwargs)
        specs = select(everything, args.only, args.skip)
        goal = None
        if args.graph == "pick" and not kwargs["start_pick"]:
            picks = [s for s in specs if s.name == "pick"]  # this computer's share has it
            goal = pick_goal(picks[0]) if picks else None
        print(f"starting {len(specs)} nodes: {', '.join(s.name for s in specs)} (logs: {log_dir})")
        # SIGTERM (a service manager, `timeout`) stops the graph too, as ros2 launch does: its
        # default would end this process alone and leave the nodes running
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
        if args.emulated:
            os.environ.update(specs[0].env)  # this observer discovers as the graph does
            cube = {k: kwargs[k] for k in ("cube_x", "cube_y") if k in kwargs}
            emulators = [emulator_spec(kwargs["port"], kwargs["calibration_file"], **cube)]
            if args.graph == "teleop":  # a leader moved by a scripted hand, torque off
                leader = (kwargs["leader_port"], kwargs["leader_calibration_file"])
                emulators.append(emulator_spec(*leader, name="so101_leader", leader=True))
            procs = start_emulated(specs, emulators, log_dir)
        else:
            procs = start(specs, log_dir)
        try:
            recorder = next(
                (f"/{s.name}/status" for s in specs if s.name == "dataset_recorder"), None
            )
            report = watch_graph(
                duration, procs, pick=PICKS.get(args.graph), goal=goal, recorder=recorder
            )
            if report.pick_outcome is not None and len(specs) < len(everything):
                time.sleep(LINGER)  # the outcome reaches the other computers' subscribers too
        finally:
            stop(procs)
        print(report.markdown())
        if args.outcome_json is not None and report.pick_outcome is not None:
            args.outcome_json.write_text(json.dumps(report.pick_outcome, indent=2))
        if not report.ok:
            for spec in specs:
                tail = (log_dir / f"{spec.name}.log").read_text(errors="replace")[-2000:]
                print(f"--- {spec.name} log (tail) ---\n{tail}", file=sys.stderr)
        return 0 if report.ok else 1
