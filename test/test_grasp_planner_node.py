"""The grasp planner as users run it: ``ros2 run physai_ros grasp_planner`` on a colcon-built
install, called with ``ros2 service call`` (a box for the Panda: a grasp and where the box was,
and the same request again answered from the planner's cache; a box too wide for the SO-101's
jaws: no grasp, with the reason), the plan drawn as TF frames and markers."""

from __future__ import annotations

import time

import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile
from support.processes import ros2_output
from tf2_msgs.msg import TFMessage
from visualization_msgs.msg import MarkerArray

pytestmark = [pytest.mark.dds, pytest.mark.slow]

SERVICE = ("service", "call", "/plan_grasp", "physai_ros_interfaces/srv/PlanGrasp")
MATERIAL = "young: 50000.0, poisson: 0.3, mu: 0.6, mass: 0.05, cells: 4"


def test_ros2_service_call_plans_and_refuses_with_the_reason(ros2, ros_context, tmp_path):
    ros2("run", "physai_ros", "grasp_planner", log=tmp_path / "planner.log")
    node = rclpy.create_node("planner_watcher", context=ros_context)
    latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    seen: dict[str, object] = {}
    node.create_subscription(
        MarkerArray, "/grasp_planner/markers", lambda m: seen.update(m=m), latched
    )
    node.create_subscription(TFMessage, "/tf_static", lambda m: seen.update(tf=m), latched)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)

    box = f"{{shape: box, size: 0.04, spacing: 0.0044, hand: panda, {MATERIAL}}}"
    out = ros2_output(ros2(*SERVICE, box), timeout=180)
    assert "success=True" in out, out + (tmp_path / "planner.log").read_text()[-2000:]
    assert "force_target_basis='friction floor'" in out, out
    assert "joint_names=['joint1', 'joint2'" in out, out
    # the 4 cm box's centre of mass, resting on the table in front of the Panda: the pre-grasp
    # is for the object there, unrotated
    where = (
        "object_pose=geometry_msgs.msg.Pose("
        "position=geometry_msgs.msg.Point(x=0.5, y=0.0, z=0.02), "
        "orientation=geometry_msgs.msg.Quaternion(x=0.0, y=0.0, z=0.0, w=1.0))"
    )
    assert where in out, out

    end = time.monotonic() + 10.0
    while not ("m" in seen and "tf" in seen) and time.monotonic() < end:
        executor.spin_once(timeout_sec=0.1)
    frames = sorted(t.child_frame_id for t in seen["tf"].transforms)
    assert frames == ["grasp_object/contact_0", "grasp_object/contact_1"], frames
    kinds = [m.type for m in seen["m"].markers[1:]]  # after the DELETEALL
    assert kinds == [2, 0, 2, 0], kinds  # a sphere and an arrow per contact

    again = ros2_output(ros2(*SERVICE, box), timeout=60)  # the same request: the cache
    assert again.split("response:")[-1] == out.split("response:")[-1], again
    log = (tmp_path / "planner.log").read_text()
    assert log.count("planning: box") == 1 and "from the cache" in log, log[-2000:]

    wide = f"{{shape: box, size: 0.2, spacing: 0.01, hand: so101, {MATERIAL}}}"
    out = ros2_output(ros2(*SERVICE, wide), timeout=180)
    assert "success=False" in out and "opening" in out, out
    poisson = MATERIAL.replace("poisson: 0.3", "poisson: 0.7")
    bad = f"{{shape: box, size: 0.04, spacing: 0.0044, hand: panda, {poisson}}}"
    out = ros2_output(ros2(*SERVICE, bad), timeout=60)
    assert "success=False" in out and "Poisson" in out, out
    node.destroy_node()
