"""Recorded picks replayed through the policy runner over ROS: do a dataset's actions, streamed
at 30 Hz to the simulated arm in real time, pick the cube again?

Records ``--episodes`` scripted picks (``physai record``: cube positions randomised from
``--seed``, no cameras), or takes a recording (``--dataset``). Then starts the graph
``ros2 launch physai_ros policy.launch.py policy:=replay mode:=…`` starts (``policy_graph``:
the sim bridge paced at real time, the TF publisher, each a process of its own) and, for each
episode, puts the cube where the episode's cube was (the sim bridge's ``cube_x``/``cube_y``,
then ``/sim/reset``), starts the policy runner on that episode (its own process, as the launch
starts it), waits for it to finish, and judges by the simulation's truth: held = the cube lifted
at least the pick's ``min_lift`` a second after the last action. The table gives held replays
of the episodes that held when recorded, with the Wilson 95 % interval::

    physai bench policy-replay --episodes 10 --mode limited
    physai bench policy-replay --dataset picks --episodes 3 --mode staircase --keep /tmp/replay
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from physai_ros.errors import InvalidInput
from physai_ros.experiments.trials.force_runs import wilson
from physai_ros.experiments.trials.pick_goals import Client
from physai_ros.launching.graph import policy_graph

MODES = ("staircase", "linear", "limited")
REPLAY_TIMEOUT = 120.0  # [s wall] one runner: its start (LeRobot's import) and the episode


@dataclass
class Replay:
    """One episode: where its cube was [m], what the recording says, what the replay did."""

    episode: int
    cube_x: float
    cube_y: float
    recorded: str
    held: bool = False
    lift_cm: float = math.nan
    note: str = ""


class ReplayClient(Client):
    """The pick-goals bench's client (the cube's truth, the sim bridge's reset), also reading
    the policy runner's status on /diagnostics."""

    def __init__(self, context) -> None:
        super().__init__(context, name="policy_replay_bench")
        from diagnostic_msgs.msg import DiagnosticArray

        from physai_ros import interfaces

        self.runner: tuple[float, str] | None = None  # (wall, message) of the latest status
        self.node.create_subscription(
            DiagnosticArray, interfaces.DIAGNOSTICS, self._diagnostics, 10
        )

    def _diagnostics(self, msg) -> None:
        for status in msg.status:
            if status.name == "policy_runner":
                self.runner = (time.monotonic(), status.message)

    def wait_finished(self, since: float, timeout: float) -> str:
        """The runner's first status after ``since`` [wall] that is not 'running' or
        'waiting'; '' if none came within ``timeout``."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.1)
            if self.runner and self.runner[0] > since:
                message = self.runner[1]
                if message.startswith(("finished", "failed")):
                    return message
        return ""


def table(rows: list[Replay], mode: str) -> str:
    held_before = [r for r in rows if r.recorded == "held"]
    k, n = sum(r.held for r in held_before), len(held_before)
    lo, hi = wilson(k, n) if n else (math.nan, math.nan)
    lines = [
        "| mode | episodes | held when recorded | held again (replayed over ROS) |",
        "|---|---|---|---|",
        f"| {mode} | {len(rows)} | {n} | **{k}/{n}** [{lo:.2f}, {hi:.2f}] |",
        "",
        "| episode | cube x, y m | recorded | replayed | lift cm | note |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.episode} | {r.cube_x:.4f}, {r.cube_y:.4f} | {r.recorded} | "
            f"{'held' if r.held else 'not held'} | {r.lift_cm:.2f} | {r.note} |"
        )
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--episodes", type=int, default=10, help="episodes replayed")
    parser.add_argument(
        "--dataset",
        type=Path,
        default=None,
        help="a folder written by 'physai record' with cameras or without (default: record "
        "--episodes fresh picks, cube positions randomised)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of a fresh recording")
    parser.add_argument("--repo-id", default="local/so101_pick", help="the dataset's LeRobot id")
    parser.add_argument(
        "--mode", choices=MODES, default="limited", help="the arm controller's stream mode"
    )
    parser.add_argument("--domain", type=int, default=84, help="ROS_DOMAIN_ID of the graph")
    parser.add_argument("--keep", type=Path, default=None, help="keep the node logs here")


def _check_scene(randomisation) -> None:
    """Refuse a recording whose cubes the simulated graph cannot rebuild: the bench moves the
    sim bridge's cube; its size, mass, friction and yaw stay the graph's."""
    from physai_ros.datasets.randomise import Randomisation

    fixed = Randomisation()
    differs = [
        name
        for name in ("yaw", "size", "mass", "mu")
        if tuple(getattr(randomisation, name)) != tuple(getattr(fixed, name))
    ]
    if differs:
        raise InvalidInput(
            f"the recording randomised the cube's {differs}: the replay over ROS puts the "
            "simulated cube where each episode's was, and keeps its size, mass, friction and yaw"
        )


def _record(root: Path, episodes: int, seed: int) -> None:
    import subprocess

    physai = str(Path(sys.executable).parent / "physai")
    result = subprocess.run(
        [physai, "record", "--output", str(root), "--episodes", str(episodes), "--seed",
         str(seed), "--cameras", "", "--no-progress"],
        capture_output=True, text=True,
    )  # fmt: skip
    if result.returncode != 0:
        raise RuntimeError(f"physai record failed:\n{result.stderr[-2000:]}")


def run(args: argparse.Namespace) -> int:
    if args.episodes < 1:
        raise InvalidInput(f"--episodes must be at least 1, got {args.episodes}")
    import rclpy
    from tqdm import tqdm

    from physai_ros.config import node_tree
    from physai_ros.datasets.episodes import randomisation_of
    from physai_ros.datasets.randomise import draw
    from physai_ros.datasets.record import load_state
    from physai_ros.launching.bringup import start, stop

    min_lift = float(node_tree("pick.yaml")["min_lift"])
    os.environ["ROS_DOMAIN_ID"] = str(args.domain)
    load = os.getloadavg()
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {load[0]:.1f}, "
          f"{os.cpu_count()} cores; {args.episodes} replays in {args.mode} mode",
          file=sys.stderr)  # fmt: skip
    rows: list[Replay] = []
    with tempfile.TemporaryDirectory(prefix="policy-replay-") as tmp:
        base = args.keep or Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        dataset = args.dataset
        if dataset is None:
            dataset = base / "picks"
            _record(dataset, args.episodes, args.seed)
        state = load_state(dataset)
        settings = state["settings"]
        entries = state["episodes"][: args.episodes]
        if len(entries) < args.episodes:
            raise InvalidInput(f"{dataset} holds {len(entries)} episodes, not {args.episodes}")
        randomisation = randomisation_of(settings)
        _check_scene(randomisation)
        robot, tf, runner = policy_graph(
            policy="replay", dataset=str(dataset), mode=args.mode, repo_id=args.repo_id
        )
        os.environ.update(robot.env)  # this client discovers as the graph does
        context = rclpy.Context()
        rclpy.init(context=context)
        client = ReplayClient(context)
        procs = start([robot, tf], base)
        try:
            for entry in tqdm(entries, unit="episode"):
                setup = draw(randomisation, settings["seed"], entry["draw"])
                row = Replay(entry["episode_index"], *setup.cube_xy, entry["outcome"])
                client.put_cube(*setup.cube_xy)
                rest = client.cube[1].copy() if client.cube is not None else np.full(3, math.nan)
                spec = replace(runner, parameters={**runner.parameters, "episode": row.episode})
                logs = base / f"episode_{row.episode}"
                logs.mkdir(exist_ok=True)
                began = time.monotonic()
                replayer = start([spec], logs)
                try:
                    said = client.wait_finished(began, REPLAY_TIMEOUT)
                finally:
                    stop(replayer)
                client.spin_for(1.0)  # whatever the jaw holds, or let go of, comes to rest
                if not said.startswith("finished"):
                    row.note = said or f"the runner did not finish in {REPLAY_TIMEOUT:g} s"
                elif client.cube is None or client.cube[0] < time.monotonic() - 0.5:
                    row.note = "no fresh cube pose from the sim bridge: judged not held"
                else:
                    row.lift_cm = 100.0 * float(client.cube[1][2] - rest[2])
                    row.held = row.lift_cm >= 100.0 * min_lift
                rows.append(row)
                verdict = "held" if row.held else "not held"
                tqdm.write(
                    f"episode {row.episode}: {row.recorded} → {verdict} ({row.lift_cm:.2f} cm)"
                )
        finally:
            client.close()
            stop(procs)
            rclpy.shutdown(context=context)
    print(table(rows, args.mode))
    held_before = [r for r in rows if r.recorded == "held"]
    print(f"\nload {load[0]:.1f} at start, {os.getloadavg()[0]:.1f} at end")
    print(f"replayed_held = {sum(r.held for r in held_before)}/{len(held_before)}")
    return 0
