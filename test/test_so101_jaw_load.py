"""The SO-101 driver's jaw force (gripper servo load -> N per jaw, config/so101_driver.yaml
``jaw.moment_arm`` and ``jaw.friction_torque``) against the emulator's true contact forces.

Through the real-arm graph's driver process (``support.emulated_so101.Bench``) and the bytes of the
emulated bus: the load arrives quantized as ``Present_Load`` (0.1 % of 2.94 N·m = 0.04 N per
jaw) and the emulated gripper has the model's gear friction (0.052 N·m) and damping. Issue 14
judges the SO-101's force-controlled squeeze within 25 % of target; the estimate must be well
inside that (measured here: +1 % to +7 % at 0.3 to 0.66 N·m; in-process, +1 % to +4 %, see
``python -m physai_ros.robots.so101.jaw_lever``).
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from action_msgs.msg import GoalStatus
from control_msgs.action import FollowJointTrajectory, GripperCommand
from geometry_msgs.msg import WrenchStamped
from support.emulated_so101 import ARM, Bench, duration
from support.optional import require
from trajectory_msgs.msg import JointTrajectoryPoint

from physai_ros import interfaces
from physai_ros.core.pick.machine import load_pick_config
from physai_ros.robots.so101.emulator.physics import So101Physics
from physai_ros.robots.so101.jaw_lever import grasp_pose

pytestmark = pytest.mark.dds
require("lerobot.motors")

CAPS = (0.3, 0.45, 0.66)  # [N·m] GripperCommand max_effort; 0.66 = the driver's ceiling
TOLERANCE = 0.10  # estimate vs truth, relative; the judged bar is 0.25
WINDOW = 0.5  # [s] averaged after the grip settles


def send_min_jerk(bench: Bench, target: np.ndarray, seconds: float, points: int = 20):
    """A min-jerk move from the present arm pose (as the pick's phases): no velocity step at
    the start that a P servo under gravity would trail far enough to be judged blocked."""
    start = bench.arm_position()
    goal = FollowJointTrajectory.Goal()
    goal.trajectory.joint_names = ARM
    for k in range(1, points + 1):
        u = k / points
        s = u**3 * (10.0 - 15.0 * u + 6.0 * u**2)
        q = start + s * (np.asarray(target) - start)
        goal.trajectory.points.append(
            JointTrajectoryPoint(positions=q.tolist(), time_from_start=duration(u * seconds))
        )
    assert bench.arm.wait_for_server(timeout_sec=20.0)
    return bench.result(bench.arm.send_goal_async(goal))


def test_jaw_force_estimate_matches_the_emulator_truth_at_three_caps(tmp_path, ros_domain):
    cfg = load_pick_config()
    physics = So101Physics({"cube_pos": [0.22, 0.0]})  # the emulator's scene: the grasp IK
    pre, down = grasp_pose(physics, "pre"), grasp_pose(physics, "down")
    bench = Bench(tmp_path, ros_domain, driver={"reconnect_period": 0.3})  # autostart retries
    lock, estimates = threading.Lock(), []

    def on_jaw(msg: WrenchStamped) -> None:
        with lock:
            estimates.append((time.time(), -msg.wrench.force.z))  # moving jaw pushes -z

    topic = f"{interfaces.JAW_CONTACT_PREFIX}/moving_jaw"
    bench.node.create_subscription(WrenchStamped, topic, on_jaw, 50)

    def grip(position: float, effort: float) -> None:
        goal = GripperCommand.Goal()
        goal.command.position, goal.command.max_effort = position, effort
        assert bench.gripper.wait_for_server(timeout_sec=20.0)
        handle = bench.result(bench.gripper.send_goal_async(goal))
        assert handle.accepted
        bench.result(handle.get_result_async(), 10.0)

    try:
        # the driver imports LeRobot (torch): on a busy machine it answers late
        assert bench.get_state.wait_for_service(timeout_sec=90.0), bench.log()
        bench.wait_active()
        grip(cfg.jaw_open, CAPS[-1])
        # the pick's path and pace (min-jerk): home from the folded rest, above the cube, down
        for target, seconds in ((np.zeros(5), 2.0), (pre, 1.5), (down, 1.0)):
            result = bench.arm_result(send_min_jerk(bench, target, seconds))
            assert result.status == GoalStatus.STATUS_SUCCEEDED, result.result.error_string
        rows = []
        for cap in CAPS:  # rising squeeze, as a force-controlled close raises it
            grip(cfg.jaw_closed, cap)
            time.sleep(0.4)
            t0 = time.time()
            time.sleep(WINDOW)
            with lock:
                estimate = [n for t, n in estimates if t >= t0]
            truth = np.array([r["jaw_normal"] for r in bench.truth_since(t0)])
            assert estimate and len(truth), bench.log()[-2000:]
            rows.append((cap, float(np.mean(estimate)), *truth.mean(axis=0)))
        print("cap [N m], estimate, true fixed, true moving [N]:", np.round(rows, 3).tolist())
        for cap, estimate, fixed, moving in rows:
            assert min(fixed, moving) > 0.0, (cap, fixed, moving)  # in both jaws
            truth = 0.5 * (fixed + moving)
            assert abs(estimate / truth - 1.0) < TOLERANCE, (cap, estimate, fixed, moving)
        squeeze = [r[1] for r in rows]
        assert squeeze == sorted(squeeze)  # a higher cap: a harder squeeze, seen by both
    finally:
        bench.close()
