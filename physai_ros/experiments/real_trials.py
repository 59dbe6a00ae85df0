"""Pick trials a researcher can publish: k/n per cube position with the Wilson interval, every
trial recorded as a rosbag2 bag (MCAP), a CSV, a table and a plot.

``physai trials --cubes 0.22,0.0 0.20,0.02 --per-cube 20``

Real arm: start the real-arm graph (``ros2 launch physai_ros pick.launch.py sim:=false``) once
per trial, with the cube placed at the position being tested; this command records the trial
(``/joint_states``, ``/tf``, ``/tf_static``, ``/jaw_contact/*``, ``/diagnostics``, ``/pick/*``)
and the outcome the pick node reports, trial by trial, so an interrupted session resumes where
it stopped. It never judges success itself: the pick node does, from the robot's own
measurements (and a cube pose when a camera or motion capture publishes one), and names the
witness. Re-placing the cube between trials is the operator's job.

``--emulated`` runs every trial itself: the bus emulator in place of the serial port and the
real-arm graph exactly as the launch file starts it (``physai_ros.launching.graph.pick_graph``); the
emulator's true cube pose is recorded beside the pick's verdict as an independent witness,
and the table says how often the two agree.

``--unkind`` makes the emulator as hard as a real arm where it can (``UNKIND``: 2 ms of USB
round trip per transaction, the load register read as the motor's PWM duty, the servos' position
dead band); ``--emulator-param NAME=VALUE`` sets any other of its parameters (checked against
the emulator's declared parameters before anything starts). Each emulated trial also records the
driver's bus loop as the servos see it: its rate [Hz] (the state reads the servos answered per
second: mean and lowest over one second) and the largest step between two goals a servo
received in a row [rad per cycle] -- the command step where it lands, not where it was computed.

The last line is ``held_rate = <k/n>``.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import math
import os
import time
from pathlib import Path
from typing import Any

import yaml

from physai_ros.core.stats import wilson
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
)
WITNESS = "/so101_emulator/witness"
FIELDS = [
    "cube_x",
    "cube_y",
    "trial",
    "outcome",
    "judged_by",
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
    parser.add_argument("--emulated", action="store_true", help="run each trial on the emulator")
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
    parser.add_argument("--timeout", type=float, default=90.0, help="[s] per trial")


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


class TrialClient:
    """The observer of one trial: records the bag and waits for the pick's outcome (and, on
    the emulator, its true state)."""

    def __init__(self, bag: Path, emulated: bool) -> None:
        import rclpy
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from std_msgs.msg import String

        from physai_ros.recording.bags import BagRecorder

        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        topics = (*TOPICS, WITNESS) if emulated else TOPICS
        self.recorder = BagRecorder(self.context, bag, topics)
        node = self.node = rclpy.create_node("physai_trials", context=self.context)
        self.outcome: dict | None = None
        self.witness: dict | None = None
        self.witnessed: list[dict] = []  # the bus loop's numbers of every record
        latched = QoSProfile(
            depth=1,
            durability=DurabilityPolicy.TRANSIENT_LOCAL,
            reliability=ReliabilityPolicy.RELIABLE,
        )
        node.create_subscription(String, "/pick/outcome", self._on_outcome, latched)
        node.create_subscription(String, WITNESS, self._on_witness, 10)
        from rclpy.executors import SingleThreadedExecutor

        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(node)
        self.executor.add_node(self.recorder.node)

    def _on_outcome(self, msg) -> None:
        self.outcome = json.loads(msg.data)

    def _on_witness(self, msg) -> None:
        self.witness = record = json.loads(msg.data)
        keep = ("stamp", "state_reads", "max_goal_step", "joints")
        self.witnessed.append({k: record[k] for k in keep if k in record})

    def wait(self, timeout: float, linger: float = 0.5) -> dict | None:
        """The outcome (None after ``timeout`` [s]); keeps recording ``linger`` s after it."""
        deadline = time.monotonic() + timeout
        while self.outcome is None and time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.05)
        end = time.monotonic() + linger
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.05)
        return self.outcome

    def close(self) -> dict[str, int]:
        import rclpy

        counts = self.recorder.close()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)
        return counts


def run_trial(
    cube: tuple[float, float],
    bag: Path,
    emulated: bool,
    timeout: float,
    emulator: dict[str, Any] | None = None,
) -> dict:
    """One trial: the pick's report plus, on the emulator, the true outcome and the bus loop
    as the servos saw it (``bus_loop``); ``emulator``: the emulator's parameters
    (``emulator_params``)."""
    emulator = emulator or {}
    client = TrialClient(bag, emulated)
    procs = []
    try:
        if emulated:
            from physai_ros.launching.bringup import start_emulated
            from physai_ros.launching.graph import emulator_spec, pick_graph

            logs = bag.with_name(bag.name + "_logs")  # the nodes' logs beside the bag
            logs.mkdir(parents=True, exist_ok=True)
            port, cal = str(logs / "port"), str(logs / "cal.json")
            specs = pick_graph(
                sim=False, port=port, calibration_file=cal, cube_x=cube[0], cube_y=cube[1]
            )
            spec = emulator_spec(port, cal, cube_x=cube[0], cube_y=cube[1], **emulator)
            os.environ.update(specs[0].env)  # this observer discovers as the graph does
            procs = start_emulated(specs, spec, logs)
        report = client.wait(timeout) or {"outcome": "no outcome (timeout)"}
        truth = client.witness
    finally:
        if procs:
            from physai_ros.launching.bringup import stop

            stop(procs)
        counts = client.close()
    row = {
        "cube_x": cube[0],
        "cube_y": cube[1],
        "outcome": report["outcome"],
        "judged_by": report.get("judged_by"),
        "lift_cm": report.get("lift_cm"),
        "close_s": report.get("close_s"),
        "squeeze_N": report.get("squeeze_N"),
        "bag": str(bag),
        "messages": counts,
    }
    if truth is not None:
        true_lift = truth["cube_pos"][2] - 0.015  # cube bottom above the table [m]
        held = true_lift >= 0.04 and truth["cube_in_jaws"]
        row |= {
            "true_lift_cm": round(true_lift * 100.0, 3),
            "true_in_jaws": truth["cube_in_jaws"],
            "agrees": held == (report["outcome"] == "held"),
            "emulator": " ".join(f"{k}={v}" for k, v in emulator.items()),
        }
        row |= bus_loop(client.witnessed)
    return row


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


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

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
    with table.open("a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        if new_file:
            writer.writeheader()
        for cube, trial in tqdm(todo, desc="trials", unit="pick", disable=not todo):
            bag = out / "bags" / f"{cube[0]:.3f}_{cube[1]:.3f}_{trial + 1:03d}"
            with contextlib.suppress(FileNotFoundError):
                if bag.exists() and not (bag / "metadata.yaml").exists():
                    import shutil

                    shutil.rmtree(bag)  # a trial interrupted half-way: record it again
            if not args.emulated:
                tqdm.write(f"cube {cube}, trial {trial + 1}/{args.per_cube}: start the pick")
            row = run_trial(cube, bag, args.emulated, args.timeout, emulator)
            row |= {"trial": trial + 1}
            writer.writerow(row)
            f.flush()
            rows.append({k: str(v) for k, v in row.items()})
            loop = (
                f"; bus loop {row['loop_hz']} Hz (lowest {row['loop_hz_min']}), largest goal "
                f"step {row['max_step_rad']} rad ({row['max_step_joint']}; arm joints "
                f"{row['max_arm_step_rad']} rad)"
                if "loop_hz" in row
                else ""
            )
            tqdm.write(
                f"cube {cube} trial {trial + 1}: {row['outcome']} ({row['judged_by']}){loop}"
            )
    lines = summary(rows, cubes)
    print("\n".join(lines))
    plot(rows, cubes, out / "trials.png")
    print(f"bags: {out / 'bags'}; table: {table}; plot: {out / 'trials.png'}")
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_arguments(p)
    raise SystemExit(run(p.parse_args()))
