"""End to end: the real-arm pick graph (``pick.launch.py sim:=false``, the same nodes and
parameters) with the bus emulator in place of the serial port, run by ``physai trials
--emulated`` as a researcher would: every trial a goal to ``/pick`` in one graph, judged by the
action's typed result; the emulator's true cube pose is the independent witness.

The judged bar is at least 9 of 10 held in one graph, each verdict matching the truth
(``physai trials --emulated --per-cube 10``, numbers in docs/real_so101.md); this test runs 3
to keep CI short, and reads the recorded bags back with readers the project did not write
(rosbags, mcap).
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from physai_ros_interfaces.action import Pick
from support.emulated_so101 import Bench
from support.optional import require

from physai_ros.nodes._pick_outcome import verdict_of

require("lerobot.motors")
pytestmark = [pytest.mark.slow, pytest.mark.dds]
RECORDED = (
    "/joint_states",
    "/tf",
    "/tf_static",
    "/jaw_contact/fixed_jaw",
    "/jaw_contact/moving_jaw",
    "/diagnostics",
    "/pick/state",
    "/pick/outcome",
    "/arm_controller/controller_state",
    "/gripper_controller/controller_state",
)


def test_three_goals_in_one_launched_graph_hold_agree_with_the_truth_and_record_bags(
    tmp_path, ros_domain
):
    """Three trials, one graph: the emulator and each node started once, three goals
    accepted by the one pick node, each HELD by its typed result and truly held (the cube put
    back on the table before each, which the command checks on the witness)."""
    out = tmp_path / "trials"
    cmd = [sys.executable, "-m", "physai_ros.cli", "trials", "--emulated", "--per-cube", "3"]
    result = subprocess.run(
        [*cmd, "--output", str(out), "--timeout", "90"],
        capture_output=True,
        text=True,
        timeout=500,
        env=dict(os.environ),
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rows = list(csv.DictReader((out / "trials.csv").open()))
    assert len(rows) == 3
    logs = out / "logs"
    assert (logs / "pick.log").read_text().count("pick goal accepted") == 3
    assert (logs / "so101_emulator.log").read_text().count("emulated SO-101 bus on") == 1
    assert (logs / "so101_emulator.log").read_text().count("cube put back at") == 3
    for row in rows:
        # judged by the robot's own measurements (no camera), and the truth agrees
        assert row["outcome"] == "held" and row["judged_by"] == "robot", row
        assert row["reason"].startswith("gripper stalled on the object"), row
        assert row["agrees"] == "True", row
        assert float(row["true_lift_cm"]) >= 4.0 and row["true_in_jaws"] == "True"
        assert abs(float(row["lift_cm"]) - float(row["true_lift_cm"])) < 1.0  # FK vs truth
        # the bus loop as the servos saw it: cycling, and no goal step beyond the speed bound
        # (4.71 rad/s for at most max_step_time 0.05 s: 0.236 rad)
        assert float(row["loop_hz"]) > 20.0 and float(row["loop_hz_min"]) > 0.0, row
        assert 0.0 < float(row["max_step_rad"]) < 0.24, row
        assert float(row["max_arm_step_rad"]) <= float(row["max_step_rad"]), row
    assert "held_rate = 1.000" in result.stdout
    assert "bus loop [Hz]" in result.stdout and "largest goal step" in result.stdout
    assert (out / "trials.png").stat().st_size > 1000

    bag = Path(rows[0]["bag"])
    from rosbags.highlevel import AnyReader

    with AnyReader([bag]) as reader:
        counts = {c.topic: c.msgcount for c in reader.connections}
        for topic in RECORDED:
            assert counts.get(topic, 0) > 0, (topic, counts)
        assert counts["/joint_states"] > 300  # 100 Hz over the pick
        outcome = [  # the typed outcome, decoded from the bag's own schema
            reader.deserialize(raw, c.msgtype)
            for c, _, raw in reader.messages()
            if c.topic == "/pick/outcome"
        ]
        assert outcome[-1].outcome == Pick.Result.HELD, outcome[-1]
    from mcap.reader import make_reader

    (mcap_file,) = bag.glob("*.mcap")
    with mcap_file.open("rb") as stream:
        summary = make_reader(stream).get_summary()
        topics = {ch.topic for ch in summary.channels.values()}
        schemas = {s.name: s.encoding for s in summary.schemas.values()}
    assert set(RECORDED) <= topics
    assert schemas["tf2_msgs/msg/TFMessage"] == "ros2msg"  # Foxglove decodes from these

    # the trials' bags carry what the servos were commanded: they convert to a LeRobot dataset,
    # one episode per held pick, each action the reference published at or before its frame
    bags = [row["bag"] for row in rows]
    dataset = tmp_path / "dataset"
    converted = subprocess.run(
        # a 0.3 s gap limit: on a loaded 2-core machine the driver's bus loop is starved for
        # up to ~150 ms at a time, and an episode with a longer gap is (rightly) left out
        [sys.executable, "-m", "physai_ros.cli", "convert", *bags, "--output", str(dataset),
         "--max-gap", "0.3"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert converted.returncode == 0, converted.stdout + converted.stderr
    assert "episodes = 3" in converted.stdout, converted.stdout
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    episodes = LeRobotDataset("physai/so101_pick_ros", root=dataset)
    assert episodes.num_episodes == 3
    action = np.asarray(episodes.hf_dataset.with_format("numpy")["action"])
    assert np.ptp(action[:, 1]) > 10.0  # the shoulder lift's command moved tens of degrees


def test_a_published_cube_pose_is_used_and_named(tmp_path, ros_domain):
    """With motion capture (the emulator's true pose on cube_pose) the pick plans from it
    and the outcome is judged by it -- and the robot's own verdict is reported beside.

    A starved machine can leave the mocap frame older than the judge's 0.5 s when the pick
    ends; the pick then rightly says "no measurement" for that witness and the robot judges.
    That run tests nothing about a published pose, so the scenario runs again (at most three
    times); any other verdict fails at once."""
    for attempt in range(3):
        bench = Bench(tmp_path / f"run{attempt}", ros_domain, pick=True, emulator={"mocap": True})
        try:
            done = bench.wait(lambda b=bench: b.outcome is not None, 120.0)
            assert done, bench.log("pick")
            outcome = bench.outcome
        finally:
            bench.close()
        pose = verdict_of(outcome, "cube_pose")
        if pose["outcome"] == "no measurement" and "stale" in pose["reason"]:
            continue  # the mocap frame starved, not a verdict
        assert outcome["outcome"] == "held" and outcome["judged_by"] == "cube_pose", outcome
        assert verdict_of(outcome, "robot")["outcome"] == "held"
        assert pose["lift"] >= 0.04
        return
    pytest.fail(f"the mocap frame was stale at the end of all three picks: {outcome}")


@pytest.mark.parametrize("close_mode", ["force", "cap"])
def test_a_reversed_load_sign_sees_no_contact_and_never_says_held(tmp_path, ros_domain, close_mode):
    """The emulator as hard as a real servo (``load_model: duty``) and its Present_Load sign
    reversed: the jaw force the driver estimates never rises, so the close sees no contact.
    It must fail safe: ``force`` aborts on its timeout naming why, never squeezing past the
    contact effort; ``cap`` squeezes only at its fixed cap and lifts anyway after its timeout --
    the truth judges, and the robot's verdict is never a false "held"."""
    from physai_ros.launching.graph import pick_graph

    def pick_spec(port: str, cal: str):
        spec = pick_graph(sim=False, port=port, calibration_file=cal)[-1]
        spec.parameters["close_mode"] = close_mode
        return spec

    emulator = {"load_model": "duty", "load_sign": -1, "mocap": False}
    bench = Bench(tmp_path, ros_domain, pick=True, emulator=emulator, pick_spec=pick_spec)
    try:
        assert bench.wait(lambda: bench.outcome is not None, 150.0), bench.log("pick")
        outcome = bench.outcome
        truth = bench.truth()
        print(close_mode, "outcome:", outcome, "true cube in jaws:", truth["cube_in_jaws"])
        jaw = [max(r["jaw_normal"]) for r in bench.witness if r.get("jaw_normal")]
        touching = [f for f in jaw if f > 0.1]  # while the jaws truly touch the cube
        sustained = float(np.percentile(touching, 90)) if touching else 0.0
        print(close_mode, "true jaw force [N]: peak", max(jaw, default=None), "p90", sustained)
        robot = verdict_of(outcome, "robot") or {}
        assert outcome["outcome"] != "held" or truth["cube_in_jaws"], outcome  # no false held
        if close_mode == "force":
            assert outcome["outcome"] == "aborted", outcome
            assert "never touched" in outcome["reason"], outcome
            # never squeezed harder: the effort stayed the contact effort (3 N x 0.0718 m), and
            # the true force, beyond the jaw's impact on the cube, stayed below the target band
            assert outcome["close_effort"] <= 3.0 * 0.0718 + 1e-3, outcome
            assert sustained < 8.0 * (1.0 - 0.15), sustained
        else:
            assert robot.get("outcome") != "held" or truth["cube_in_jaws"], outcome
    finally:
        bench.close()


def cube_goal(position) -> Pick.Goal:
    """The goal ``ros2 action send_goal /pick`` sends for a cube placed at ``position`` (world
    [m]): an object_pose with a zero stamp ("it is there now"), lift and hold."""
    goal = Pick.Goal()
    goal.object_pose.header.frame_id = "world"
    p = goal.object_pose.pose.position
    p.x, p.y, p.z = (float(v) for v in position)
    return goal


def test_the_pick_times_its_moves_for_the_drivers_first_use_limits(tmp_path, ros_domain):
    """``limits_set:=first_use`` (the launch argument): the driver checks every goal against
    the half-speed set, and the pick, given the same set, times its moves within it -- the
    controller refuses none, the goal's result is HELD and the emulator's truth agrees (the
    cube truly lifted and in both jaws)."""
    graph = {"limits_set": "first_use", "start_pick": False}
    bench = Bench(tmp_path, ros_domain, pick=True, graph=graph)
    try:
        pick = bench.specs[-1].parameters
        assert pick["limits_set"] == bench.specs[0].parameters["limits_set"] == "first_use"
        result = bench.pick(cube_goal(pick["cube_position"]))
        truth = bench.truth()
        assert result.outcome == Pick.Result.HELD, (result.reason, bench.log("pick")[-3000:])
        assert truth["cube_in_jaws"] and truth["cube_pos"][2] - 0.015 >= 0.04, truth
        assert "goal rejected" not in bench.log(), bench.log()[-3000:]
    finally:
        bench.close()


def test_an_unknown_limit_set_is_refused_before_anything_starts(tmp_path, ros_domain):
    """A limit set the limits file has not: the graph refuses it naming the sets, and the pick
    node started on its own with it exits at start saying why."""
    from physai_ros.errors import InvalidInput
    from physai_ros.launching.graph import pick_graph

    with pytest.raises(InvalidInput, match=r"unknown limit set 'fast'.*first_use"):
        pick_graph(sim=False, limits_set="fast")
    cmd = [sys.executable, "-m", "physai_ros.nodes.pick", "--ros-args", "-p", "limits_set:=fast"]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "limits_set 'fast'" in result.stderr + result.stdout, result.stderr[-2000:]


def test_a_real_arm_told_only_where_the_cube_is_places_it_within_1_cm(tmp_path, ros_domain):
    """The real-arm graph without a camera, a goal that names where the cube is and where to
    put it (``ros2 action send_goal /pick`` with an object_pose and a place_pose): the pick
    lowers until the servos say the cube touches the table, opens and retreats. PLACED by its
    result, and the emulator's truth has the cube on the table within 1 cm of the place, out of
    the jaws."""
    bench = Bench(tmp_path, ros_domain, pick=True, graph={"start_pick": False})
    try:
        goal = cube_goal(bench.specs[-1].parameters["cube_position"])
        goal.place = True
        goal.place_pose.header.frame_id = "world"
        place = np.array([0.20, 0.02, 0.015])  # [m] world: 2 cm nearer, 2 cm aside
        p = goal.place_pose.pose.position
        p.x, p.y, p.z = (float(v) for v in place)
        result = bench.pick(goal)
        truth = bench.truth()
        off = np.linalg.norm(np.asarray(truth["cube_pos"]) - place)
        print(f"placed: {result.reason}; the emulator's truth {off * 100:.2f} cm from the place")
        assert result.outcome == Pick.Result.PLACED, (result.reason, bench.log("pick")[-3000:])
        assert off < 0.01, truth
        assert not truth["cube_in_jaws"], truth
    finally:
        bench.close()
