"""``physai bringup <graph>`` from the command line, once per graph, as a user types it.

Each run starts the graph's node processes, watches them over DDS and stops them; its exit status
says whether the graph worked (every node alive, joint states, /tf and /tf_static seen, and for a
pick its outcome), and its printed report is what the user reads. The non-pick graphs are
watched for a short ``--duration``; the picks run to their outcome. ``bringup pick`` (simulated)
runs ten times in test_pick_ros.py.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from physai_ros.core.pick.grip import OUTCOMES

pytestmark = pytest.mark.dds

VERDICTS = (*OUTCOMES, "aborted")  # a pick's judged outcome, or the pick machine's abort


def bringup(tmp_path: Path, *args: str, timeout: float = 150) -> str:
    """``physai bringup <args>``; its stdout, after asserting exit status 0 (node logs on
    failure)."""
    logs = tmp_path / "logs"
    cmd = [sys.executable, "-m", "physai_ros.cli", "bringup", *args, "--log-dir", str(logs)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    out = result.stdout
    if result.returncode != 0:
        tails = "".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-1500:]}" for p in logs.glob("*.log")
        )
        pytest.fail(f"exit {result.returncode}\n{out[-3000:]}\n{result.stderr[-2000:]}\n{tails}")
    assert out.strip().splitlines()[-1] == "graph OK", out
    return out


def row(out: str, topic: str) -> tuple[str, str]:
    """(received, content) of ``topic``'s row in the printed report."""
    found = re.search(rf"^\| {re.escape(topic)} \| (.*?) \| (.*?) \|$", out, re.M)
    assert found is not None, f"no {topic} row in\n{out}"
    return found.group(1), found.group(2)


def count(received: str) -> int:
    return int(received.split()[0])


def test_demo(ros_domain, tmp_path):
    out = bringup(tmp_path, "demo", "--duration", "3")
    assert "starting 2 nodes: sim_bridge, tf_publisher" in out, out
    received, joints = row(out, "/joint_states")
    assert count(received) > 0 and joints.startswith("shoulder_pan, shoulder_lift"), joints
    received, frames = row(out, "/tf")
    assert count(received) > 0 and "gripper" in frames.split(", "), frames
    assert "base" in row(out, "/tf_static")[1].split(", ")
    assert count(row(out, "/clock")[0]) > 0


def test_trajectory(ros_domain, tmp_path):
    out = bringup(tmp_path, "trajectory", "--duration", "3")
    assert "starting 3 nodes: sim_bridge, tf_publisher, trajectory" in out, out
    received, joints = row(out, "/joint_states")
    assert count(received) > 0 and joints.startswith("joint1, joint2"), joints  # the Panda
    assert "link7" in row(out, "/tf")[1].split(", ")


def _pick_outcome(out: str, tmp_path: Path, prefix: str) -> dict:
    line = re.search(rf"^{prefix} outcome: ({'|'.join(VERDICTS)}) ", out, re.M)
    assert line is not None, out
    outcome = json.loads((tmp_path / "outcome.json").read_text())
    assert outcome["outcome"] == line.group(1) and outcome["outcome"] in VERDICTS, outcome
    return outcome


@pytest.mark.slow
def test_hand_pick(ros_domain, tmp_path):
    out = bringup(tmp_path, "hand_pick", "--outcome-json", str(tmp_path / "outcome.json"))
    assert "trajectory, grasp_planner, hand_pick" in out, out
    states = row(out, "/hand_pick/state")[1].split(" → ")
    assert states[0] == "plan" and states[-1] in ("done", "aborted"), states
    _pick_outcome(out, tmp_path, "hand pick")


@pytest.mark.slow
def test_pick_emulated(ros_domain, tmp_path):
    """The real-arm graph (so101_driver on the Feetech bus emulator's pty), no simulator, with
    the dataset recorder: the pick goal waits until the recorder receives every stream, and the
    watch until it has written the pick as a LeRobot episode (a held pick) or left it out."""
    pytest.importorskip("lerobot.motors")
    dataset = tmp_path / "dataset"
    out = bringup(
        tmp_path, "pick", "--emulated", "--outcome-json", str(tmp_path / "outcome.json"),
        "-p", f"record:={dataset}", timeout=300,
    )  # fmt: skip
    assert "starting 4 nodes: so101_driver, tf_publisher, pick, dataset_recorder" in out, out
    states = row(out, "/pick/state")[1].split(" → ")
    assert states[-1] in ("done", "aborted"), states
    outcome = _pick_outcome(out, tmp_path, "pick")
    assert outcome["judged_by"] == "robot"  # no simulator: the driver's own sensing judges
    # the pick came as a goal to /pick: its typed result says the same as the outcome topic
    result = re.search(r"^pick result \(/pick action\): ([A-Z]+), goal (\w+)", out, re.M)
    assert result is not None, out
    assert result.group(1).lower() == outcome["outcome"], (result.group(0), outcome)
    assert result.group(2) == ("succeeded" if outcome["outcome"] == "held" else "aborted"), out
    if outcome["outcome"] != "held":
        assert f"dataset recorder: left out: {outcome['outcome']}" in out, out
        return
    assert "dataset recorder: episode 0: held" in out, out
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    episodes = LeRobotDataset("physai/so101_pick_ros", root=dataset)
    assert episodes.num_episodes == 1 and episodes.meta.robot_type == "so101_follower"
    table = episodes.hf_dataset.with_format("numpy")
    success = np.asarray(table["next.success"]).ravel()
    assert success[-1] and not success[:-1].any()
    # the arm moved on the real-arm graph too: the commanded shoulder lift spans tens of degrees
    action = np.asarray(table["action"])
    assert np.ptp(action[:, 1]) > 10.0, np.ptp(action, axis=0)
