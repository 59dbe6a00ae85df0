"""The three-finger pick over ROS, as users run it: ``ros2 launch physai_ros hand_pick.launch.py``
on a colcon-built install (sim bridge in real time, TF publisher, trajectory node, grasp planner
and hand pick, each its own process), the outcome read from ``/hand_pick/outcome`` by a watcher
in the test process and judged again by a witness there (``support.witness``: the soft
object's pose and the fingers' contact wrenches, as the sim bridge publishes them). The seed's
whole pipeline: plan → pre-grasp through the trajectory node → close to the contacts → force
close → lift."""

from __future__ import annotations

import pytest
from support.witness import JAWS, Witness, shipped
from test_user_paths import Watcher

from physai_ros import interfaces

pytestmark = [pytest.mark.dds, pytest.mark.slow]


def test_ros2_launch_hand_pick_lifts_the_soft_sphere_at_the_planned_forces(
    ros2, ros_context, tmp_path
):
    log = tmp_path / "launch.log"
    witness = Witness(  # before the graph: sees the object at rest
        ros_context, JAWS["hand"], interfaces.SOFT_OBJECT_POSE, interfaces.HAND_PICK_OUTCOME
    )
    ros2("launch", "physai_ros", "hand_pick.launch.py", "object_x:=0.51", "object_y:=-0.01",
         log=log)  # fmt: skip
    outcome = Watcher(ros_context, "/hand_pick/outcome").wait_outcome(420.0)
    assert outcome is not None, log.read_text()[-4000:]
    print("hand pick outcome:", outcome)  # the numbers, for the record (pytest -s)
    assert outcome["outcome"] == "held", f"{outcome['reason']}: {outcome}"
    force, plan = outcome["force"], outcome["plan"]
    assert outcome["fingers_touching"] == 3 and outcome["rise_cm"] >= 4.0, outcome
    assert all(force["within_tolerance"]), force
    tol = force["tolerance"]
    for peak, target in zip(force["peak_while_closing_N"], force["targets_N"], strict=True):
        assert peak <= target * (1.0 + tol), force
    assert plan["success"] and plan["force_targets_N"] == force["targets_N"], plan
    assert outcome["strain_peak"] < outcome["strain_limit"], outcome
    # the outside witness: the object's own pose and the fingers' wrenches after the outcome
    targets = [float(t) for t in force["targets_N"]]
    seen, forces = witness.check_pick(shipped("hand_pick", "min_lift"), targets, tol)
    print(f"witness: object rose {100 * seen.rise:.2f} cm, finger forces {forces}")
    witness.close()
    text = log.read_text()
    # the arm went through the trajectory node (limit-checked, then to the bridge's controller)
    assert "[trajectory" in text and "[hand_pick" in text and "[grasp_planner" in text, text[-3000:]
