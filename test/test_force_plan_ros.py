"""``plan.source: planner`` over ROS, as users run it: ``ros2 run physai_ros grasp_planner`` and
``ros2 run physai_ros pick`` (separate processes, no robot: everything here is decided before
the pick moves). Three picks share the planner: one whose object is too wide for the SO-101's
jaws (the planner's reason ends it), one whose planned target is used and then found beyond a
reduced jaw cap (the capacity check runs on the planned target, after the plan was raised to
the jaw's least controllable squeeze), and one pointed at a service nobody serves."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import rclpy
from physai_ros_interfaces.msg import PickOutcome
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile

from physai_ros.core.pick.machine import load_pick_tree
from physai_ros.nodes._pick_outcome import outcome_fields

pytestmark = [pytest.mark.dds, pytest.mark.slow]

CAP = 0.005  # [N m] a cap whose capacity (0.070 N per jaw) is below any plan of the 30 g cube
# the rigid cube's plan (its friction floor, 0.19 N per jaw) is raised to the SO-101 jaw's least
# controllable squeeze, 2.414 N; the default 3 N contact force lies above that band
CONTACT = {"force": "{contact: 1.5}"}
LEAST = 0.052 / (2 * 0.0718 * 0.15)  # [N] model frictionloss / (2 lever tolerance): 2.414 N


def params(path: Path, **extra: str) -> Path:
    """A user's params file: the force close, its target from the planner, plus ``extra``."""
    lines = ["/**:", "  ros__parameters:", "    close_mode: force", "    plan:"]
    lines += ["      source: planner", f"      timeout: {extra.pop('timeout', '60.0')}"]
    lines += [f"      {k}: {v}" for k, v in extra.pop("plan", {}).items()]
    lines += [f"    {k}: {v}" for k, v in extra.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_pick_takes_its_force_target_from_the_planner_or_aborts_with_its_reason(
    ros2, ros_context, tmp_path
):
    ros2("run", "physai_ros", "grasp_planner", log=tmp_path / "planner.log")
    picks = {
        "wide": (params(tmp_path / "wide.yaml", cube_size="0.2", plan={"spacing": 0.02}), []),
        "capped": (params(tmp_path / "capped.yaml", jaw_torque_cap=str(CAP), **CONTACT), []),
        "alone": (params(tmp_path / "alone.yaml", timeout="2.0"), ["-r", "plan_grasp:=/none"]),
    }
    for ns, (path, remap) in picks.items():
        remap = remap or ["-r", "plan_grasp:=/plan_grasp"]
        args = ("--ros-args", "-r", f"__ns:=/{ns}", *remap, "--params-file", str(path))
        ros2("run", "physai_ros", "pick", *args, log=tmp_path / f"{ns}.log")

    node = rclpy.create_node("plan_force_watcher", context=ros_context)
    outcomes: dict[str, dict] = {}
    latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    for ns in picks:
        node.create_subscription(
            PickOutcome,
            f"/{ns}/pick/outcome",
            lambda m, n=ns: outcomes.update({n: outcome_fields(m)}),
            latched,
        )
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    end = time.monotonic() + 90.0
    while len(outcomes) < len(picks) and time.monotonic() < end:
        executor.spin_once(timeout_sec=0.1)
    logs = {n: (tmp_path / f"{n}.log").read_text()[-1500:] for n in [*picks, "planner"]}
    assert set(outcomes) == set(picks), "\n".join(f"--- {n}:\n{t}" for n, t in logs.items())

    wide = outcomes["wide"]
    assert wide["outcome"] == "aborted" and not wide["witnesses"], wide  # nothing moved
    assert wide["reason"].startswith("grasp planner: no antipodal pair"), wide
    assert "so101's opening" in wide["reason"], wide

    capped = outcomes["capped"]
    assert capped["outcome"] == "aborted" and not capped["witnesses"], capped
    # the log's plan: both jaws' targets and the basis, the largest target (rounded to 0.1 mN)
    # below the jaw's least controllable squeeze raised to it, from what, to what and why
    planned = re.search(
        r"planned force targets \[([^]]*)\] N \((simulated|friction floor); simulated squeeze "
        r"\[([^]]*)\] N\): squeezing with ([\d.]+) N per jaw \(raised from ([\d.]+) N: "
        r"below the jaw's least controllable squeeze 2\.414 N",
        (tmp_path / "capped.log").read_text(),
    )
    assert planned, logs["capped"]
    targets = [float(v) for v in planned.group(1).split(",")]
    assert len(targets) == 2 and len(planned.group(3).split(",")) == 2, planned.group(0)
    raised_from, raised_to = float(planned.group(5)), float(planned.group(4))
    assert raised_from == pytest.approx(max(targets), abs=1e-4), planned.group(0)
    assert raised_from < 1.0 and raised_to == pytest.approx(LEAST, abs=1e-4), planned.group(0)
    assert capped["force_target"] == pytest.approx(LEAST, abs=1e-9), capped
    assert capped["force_source"] == "planner", capped
    assert f"force target {capped['force_target']:.3f} N" in capped["reason"], capped
    assert capped["force_capacity"] == pytest.approx(
        CAP / load_pick_tree()["so101"]["jaw_lever"], abs=1e-3
    ), capped
    print("planned pick outcome:", capped)  # the numbers, for the record (pytest -s)

    alone = outcomes["alone"]
    assert alone["outcome"] == "aborted" and alone["reason"] == "no plan_grasp service", alone
    node.destroy_node()
