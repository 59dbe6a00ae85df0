"""End to end: the real-arm pick graph (``pick.launch.py sim:=false``, the same nodes and
parameters) with the bus emulator in place of the serial port, run by ``physai trials
--emulated`` as a researcher would; the emulator's true cube pose is the independent witness.

Issue 11's bar is ≥ 18 of 20 held, each verdict matching the truth (``physai trials
--emulated --per-cube 20``, numbers in the note); this test runs 2 to keep CI short, and reads
the recorded bags back with readers the project did not write (rosbags, mcap).
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require
from so101_bench import Bench
from so101_force_bench import force_pick

require("lerobot.motors")
pytestmark = [pytest.mark.slow, pytest.mark.dds]
SOFT = (0.22, 0.08)  # [m] base frame: the soft cube's place (config/scene.yaml soft_pos)
RIGID = (0.15, -0.12)  # [m] base frame: the rigid cube, out of the way (so101_force_bench)
RECORDED = (
    "/joint_states",
    "/tf",
    "/tf_static",
    "/jaw_contact/fixed_jaw",
    "/jaw_contact/moving_jaw",
    "/diagnostics",
    "/pick/state",
    "/pick/outcome",
)


def test_trials_on_the_launched_graph_hold_agree_with_the_truth_and_record_bags(
    tmp_path, ros_domain
):
    out = tmp_path / "trials"
    cmd = [sys.executable, "-m", "physai_ros.cli", "trials", "--emulated", "--per-cube", "2"]
    result = subprocess.run(
        [*cmd, "--output", str(out), "--timeout", "90"],
        capture_output=True,
        text=True,
        timeout=400,
        env=dict(os.environ),
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rows = list(csv.DictReader((out / "trials.csv").open()))
    assert len(rows) == 2
    for row in rows:
        # judged by the robot's own measurements (no camera), and the truth agrees
        assert row["outcome"] == "held" and row["judged_by"] == "robot", row
        assert row["agrees"] == "True", row
        assert float(row["true_lift_cm"]) >= 4.0 and row["true_in_jaws"] == "True"
        assert abs(float(row["lift_cm"]) - float(row["true_lift_cm"])) < 1.0  # FK vs truth
    assert "held_rate = 1.000" in result.stdout
    assert (out / "trials.png").stat().st_size > 1000

    bag = Path(rows[0]["bag"])
    from rosbags.highlevel import AnyReader

    with AnyReader([bag]) as reader:
        counts = {c.topic: c.msgcount for c in reader.connections}
        for topic in RECORDED:
            assert counts.get(topic, 0) > 0, (topic, counts)
        assert counts["/joint_states"] > 300  # 100 Hz over the pick
        outcome = [
            reader.deserialize(raw, c.msgtype).data
            for c, _, raw in reader.messages()
            if c.topic == "/pick/outcome"
        ]
        assert '"outcome": "held"' in outcome[-1]
    from mcap.reader import make_reader

    (mcap_file,) = bag.glob("*.mcap")
    with mcap_file.open("rb") as stream:
        summary = make_reader(stream).get_summary()
        topics = {ch.topic for ch in summary.channels.values()}
        schemas = {s.name: s.encoding for s in summary.schemas.values()}
    assert set(RECORDED) <= topics
    assert schemas["tf2_msgs/msg/TFMessage"] == "ros2msg"  # Foxglove decodes from these


def test_a_published_cube_pose_is_used_and_named(tmp_path, ros_domain):
    """With motion capture (the emulator's true pose on cube_pose) the pick plans from it
    and the outcome is judged by it -- and the robot's own verdict is reported beside."""
    bench = Bench(tmp_path, ros_domain, pick=True, emulator={"mocap": True})
    try:
        assert bench.wait(lambda: bench.outcome is not None, 120.0), bench.log("pick")
        outcome = bench.outcome
        assert outcome["outcome"] == "held" and outcome["judged_by"] == "cube_pose", outcome
        assert outcome["robot"]["outcome"] == "held"
        assert outcome["cube_pose"]["lift_cm"] >= 4.0
    finally:
        bench.close()


def test_a_force_pick_holds_the_soft_cube_within_a_quarter_of_its_target(tmp_path, ros_domain):
    """Issue 14 on the SO-101 (one representative run; ``test/so101_force_bench.py`` runs ten):
    the emulator with the sim bridge's soft cube (``soft_object: cube``, 30 g, E 5·10⁴ Pa) and
    the real-arm graph whose pick (``force_pick``) squeezes it to 2 N per jaw, measured by the
    driver's servo-load estimate. Held (robot and truth: lifted ≥ 4 cm, in both jaws), the
    estimate and the emulator's true force within issue 14's 25 % of the target (bench: −2 to
    +3 % and −10 to −19 %: the stalled jaw's gear friction holds more than the half the driver
    subtracts), the strain under 0.12 (bench: 0.074 to 0.082; a 0.3 N·m cap-based close strains
    it 0.14).

    Its own graph, not an extension of the mocap one: the soft cube doubles the cost of an
    emulator step (0.72–0.95 against 0.39–0.55 ms of its 2 ms), and under load the rigid pick
    beside it then failed on a lagging arm."""
    target = 2.0  # [N] per jaw: above the jaw's friction floor (0.7 N at the lever)
    bench = Bench(
        tmp_path,
        ros_domain,
        pick=True,
        cube=SOFT,
        emulator={"cube_pos": list(RIGID), "soft_object": "cube"},
        pick_spec=lambda port, cal: force_pick(port, cal, SOFT, target, 1.5),
    )
    try:
        assert bench.wait(lambda: bench.outcome is not None, 120.0), bench.log("pick")
        outcome = bench.outcome
        # the truth when the outcome was sent (the client may still be reading older records)
        assert bench.wait(lambda: bool(bench.truth_since(outcome["time_s"])), 10.0)
        truth = bench.truth_since(outcome["time_s"])[0]["soft"]
        assert outcome["outcome"] == "held" and outcome["judged_by"] == "robot", outcome
        force = outcome["force"]
        assert force["squeeze_per_jaw_N"] == pytest.approx(target, rel=0.25), force
        assert truth["pos"][2] - 0.015 >= 0.04 and truth["in_jaws"], truth
        assert 0.5 * sum(truth["jaw_force"]) == pytest.approx(target, rel=0.25), truth
        assert truth["strain"] < 0.12, truth
    finally:
        bench.close()
