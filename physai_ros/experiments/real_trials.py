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

The last line is ``held_rate = <k/n>``.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import time
from pathlib import Path

from physai_ros.core.stats import wilson

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
    "bag",
]


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
    parser.add_argument("--timeout", type=float, default=90.0, help="[s] per trial")


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
        self.witness = json.loads(msg.data)

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


def run_trial(cube: tuple[float, float], bag: Path, emulated: bool, timeout: float) -> dict:
    """One trial: the pick's report plus, on the emulator, the true outcome."""
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
            emulator = emulator_spec(port, cal, cube_x=cube[0], cube_y=cube[1])
            os.environ.update(specs[0].env)  # this observer discovers as the graph does
            procs = start_emulated(specs, emulator, logs)
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
        }
    return row


def summary(rows: list[dict], cubes: list[tuple[float, float]]) -> list[str]:
    lines = ["| cube (x, y) [m] | held | Wilson 95 % | verdict = truth |", "|---|---|---|---|"]
    total_k = total_n = 0
    for cube in cubes:
        mine = [r for r in rows if (float(r["cube_x"]), float(r["cube_y"])) == cube]
        k, n = sum(r["outcome"] == "held" for r in mine), len(mine)
        total_k, total_n = total_k + k, total_n + n
        agree = [str(r.get("agrees")) for r in mine if r.get("agrees") not in (None, "")]
        agreed = f"{agree.count('True')}/{len(agree)}" if agree else "-"
        if n:
            low, high = wilson(k, n)
            lines.append(f"| {cube} | {k}/{n} | [{low:.2f}, {high:.2f}] | {agreed} |")
    if total_n:
        low, high = wilson(total_k, total_n)
        lines.append(f"| all | {total_k}/{total_n} | [{low:.2f}, {high:.2f}] | |")
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
    out: Path = args.output
    (out / "bags").mkdir(parents=True, exist_ok=True)
    table = out / "trials.csv"
    rows = []
    if table.is_file():
        with table.open() as f:
            rows = list(csv.DictReader(f))
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
            row = run_trial(cube, bag, args.emulated, args.timeout) | {"trial": trial + 1}
            writer.writerow(row)
            f.flush()
            rows.append({k: str(v) for k, v in row.items()})
            tqdm.write(f"cube {cube} trial {trial + 1}: {row['outcome']} ({row['judged_by']})")
    lines = summary(rows, cubes)
    print("\n".join(lines))
    plot(rows, cubes, out / "trials.png")
    print(f"bags: {out / 'bags'}; table: {table}; plot: {out / 'trials.png'}")
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_arguments(p)
    raise SystemExit(run(p.parse_args()))
