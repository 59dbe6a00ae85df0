"""``close_mode: force`` over ROS, as users run it: ``ros2 launch physai_ros pick.launch.py
sim:=true params_file:=…`` (separate processes, the sim bridge in real time) and ``ros2 run
physai_ros pick --ros-args --params-file …``; the outcome read from ``/pick/outcome`` by a
watcher in the test process.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_user_paths import Watcher

pytestmark = [pytest.mark.dds, pytest.mark.slow]

TOLERANCE = 0.15  # the issue's: final squeeze within 15 % of the target


def force_params(tmp_path: Path, target: float) -> Path:
    params = tmp_path / "force.yaml"
    params.write_text(
        f"pick:\n  ros__parameters:\n    close_mode: force\n    force:\n      target: {target}\n"
    )
    return params


def test_force_close_holds_the_rigid_cube_at_its_target(ros2, ros_context, tmp_path):
    """Target 8 N per jaw (a fifth of the 39.8 N the cap gives): held (the robot's verdict and
    a fresh cube pose agree), the final squeeze per jaw within 15 %, never above the band
    while closing."""
    target = 8.0
    params, log = force_params(tmp_path, target), tmp_path / "log"
    ros2("launch", "physai_ros", "pick.launch.py", "sim:=true", f"params_file:={params}", log=log)
    outcome = Watcher(ros_context).wait_outcome(120.0)
    assert outcome is not None, log.read_text()[-3000:]
    force = outcome["force"]
    why = f"{outcome['abort_reason']}: {outcome}"  # the reason first: pytest cuts long dicts
    assert outcome["outcome"] == "held" and outcome["robot"]["outcome"] == "held", why
    # the cube's own pose agrees, unless it was stale at the end (then it judges nothing: on a
    # machine at load 13 on 2 cores the bridge's TF came 0.5 s late once in four runs)
    pose = outcome["cube_pose"]
    assert pose["outcome"] == "held" or "stale" in pose["reason"], outcome
    assert outcome["close_mode"] == "force" and force["phase"] == "done", outcome
    print("force close outcome:", outcome)  # the numbers, for the record (pytest -s)
    assert force["within_tolerance"], force
    assert abs(force["squeeze_per_jaw_N"] - target) <= TOLERANCE * target, force
    assert force["peak_while_closing_N"] <= target * (1.0 + TOLERANCE), force
    # far below the cap-based close's 79.7 N (lesson 16) in both jaws together
    assert sum(outcome["jaw_forces_N"]) < 2.0 * target * (1.0 + TOLERANCE), outcome


def test_force_target_beyond_the_cap_aborts_naming_it(ros2, ros_context, tmp_path):
    """Target 45 N per jaw, above the 2.94 N m / 0.0738 m = 39.8 N the cap can apply: the pick
    node says so as soon as it starts (aborted, the reason naming the capacity), before any
    robot is there to command (``ros2 run`` of the pick alone): its close never ran."""
    params, log = force_params(tmp_path, 45.0), tmp_path / "log"
    ros2("run", "physai_ros", "pick", "--ros-args", "--params-file", str(params), log=log)
    outcome = Watcher(ros_context).wait_outcome(60.0)
    assert outcome is not None, log.read_text()[-3000:]
    assert outcome["outcome"] == "aborted" and outcome["state"] == "aborted", outcome
    assert "above what the gripper can apply" in outcome["abort_reason"], outcome
    assert "39.837 N" in outcome["abort_reason"], outcome
    force = outcome["force"]
    assert force["phase"] is None and force["peak_while_closing_N"] == 0.0, outcome
    assert force["squeeze_per_jaw_N"] is None and not force["within_tolerance"], outcome
