"""``close_mode: force`` over ROS, as users run it: ``ros2 launch physai_ros pick.launch.py
sim:=true params_file:=…`` (separate processes, the sim bridge in real time) and ``ros2 run
physai_ros pick --ros-args --params-file …``; the outcome read from ``/pick/outcome`` by a
watcher in the test process, and judged again by a witness there (``support.witness``): the
cube's pose and the jaws' contact wrenches as the sim bridge publishes them.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from support.witness import JAWS, Witness, shipped
from test_user_paths import Watcher

from physai_ros.nodes._pick_outcome import verdict_of

pytestmark = [pytest.mark.dds, pytest.mark.slow]

TOLERANCE = 0.15  # the issue's: final squeeze within 15 % of the target


def force_params(path: Path, target: float, node: str = "pick") -> Path:
    """A user's params file: ``close_mode: force`` and ``force.target`` for ``node``."""
    path.write_text(
        f"{node}:\n  ros__parameters:\n    close_mode: force\n    force:\n      target: {target}\n"
    )
    return path


def test_force_close_holds_at_its_target_and_refuses_one_beyond_the_cap(
    ros2, ros_context, tmp_path
):
    """Two users at once (one test: they share its wall time, CI's budget is tight).

    ``ros2 launch … sim:=true params_file:=…``, target 8 N per jaw (a fifth of the 40.9 N the
    cap gives): held (the robot's verdict and a fresh cube pose agree), the final squeeze per
    jaw within 15 %, never above the band while closing; the witness agrees: the cube rose at
    least min_lift and each jaw's contact force is within 15 % of the target, both fresh after
    the outcome. The bridge runs at its shipped real_time_factor 1 (the witness's stamps).

    ``ros2 run physai_ros pick --ros-args --params-file …`` in namespace ``/bad``, target 45 N,
    above the 2.94 N m / 0.0718 m = 40.9 N the cap can apply: that pick says so as soon as it
    starts (aborted, the reason naming the capacity), before any robot could be commanded (none
    answers in its namespace): its close never ran."""
    target, log, bad_log = 8.0, tmp_path / "log", tmp_path / "bad.log"
    bad = force_params(tmp_path / "bad.yaml", 45.0, node="/bad/pick")
    ros2("run", "physai_ros", "pick", "--ros-args", "-r", "__ns:=/bad", "--params-file", str(bad),
         log=bad_log)  # fmt: skip
    params = force_params(tmp_path / "force.yaml", target)
    witness = Witness(ros_context, JAWS["so101"])  # before the graph: sees the cube at rest
    ros2("launch", "physai_ros", "pick.launch.py", "sim:=true", f"params_file:={params}", log=log)

    refused = Watcher(ros_context, "/bad/pick/outcome").wait_outcome(60.0)
    assert refused is not None, bad_log.read_text()[-3000:]
    assert refused["outcome"] == "aborted" and refused["state"] == "aborted", refused
    assert "above what the gripper can apply" in refused["reason"], refused
    assert "40.947 N" in refused["reason"], refused
    assert refused["close_phase"] == "" and refused["peak_while_closing"] == 0.0, refused
    assert math.isnan(refused["squeeze_per_jaw"]), refused

    outcome = Watcher(ros_context).wait_outcome(120.0)
    assert outcome is not None, log.read_text()[-3000:]
    why = f"{outcome['reason']}: {outcome}"  # the reason first: pytest cuts long dicts
    assert outcome["outcome"] == "held" and verdict_of(outcome, "robot")["outcome"] == "held", why
    # the cube's own pose agrees, unless it was stale at the end (then it judges nothing: on a
    # machine at load 13 on 2 cores the bridge's TF came 0.5 s late once in four runs)
    pose = verdict_of(outcome, "cube_pose")
    assert pose["outcome"] == "held" or "stale" in pose["reason"], outcome
    assert outcome["close_mode"] == "force" and outcome["close_phase"] == "done", outcome
    print("force close outcome:", outcome)  # the numbers, for the record (pytest -s)
    assert outcome["force_within_tolerance"], outcome
    assert abs(outcome["squeeze_per_jaw"] - target) <= TOLERANCE * target, outcome
    assert outcome["peak_while_closing"] <= target * (1.0 + TOLERANCE), outcome
    # far below the cap-based close's 79.7 N (lesson 16) in both jaws together
    assert sum(outcome["jaw_forces"]) < 2.0 * target * (1.0 + TOLERANCE), outcome
    # the outside witness: the sim's own cube pose and jaw wrenches, fresh after the outcome
    seen, forces = witness.check_pick(shipped("pick", "min_lift"), target, TOLERANCE)
    print(f"witness: cube rose {100 * seen.rise:.2f} cm, jaw forces {forces}")
    assert 0.2 < witness.sim_rate() < 1.15, witness.sim_rate()  # real time, as shipped
    witness.close()
