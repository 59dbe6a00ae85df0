"""The sim bridge with a soft object, as other nodes see it (a separate process over DDS): the
soft cube's pose (its centre of mass) and strain arrive on their topics, at the position the
parameters gave, resting; a bad shape stops the bridge with the reason."""

from __future__ import annotations

import math
import time

import pytest

from physai_ros import interfaces as names

pytestmark = pytest.mark.dds

DISCOVERY_TIMEOUT = 30.0  # [s wall] bridge start-up (MuJoCo compile) + Fast DDS discovery
SIZE = 0.03  # [m] config/scene.yaml soft.size
X, Y = 0.2, -0.1  # [m] base frame = world (the SO-101's base is at the origin)


def test_soft_cube_pose_and_strain_are_published(ros_context, spawn):
    import rclpy
    from geometry_msgs.msg import PoseStamped
    from std_msgs.msg import Float64

    bridge = spawn(
        "physai_ros.nodes.sim_bridge",
        "--ros-args",
        *("-p", "soft_object:=cube", "-p", f"soft_x:={X}", "-p", f"soft_y:={Y}"),
        *("-p", "soft_object_rate:=50.0"),
        module=True,
    )
    node = rclpy.create_node("soft_object_test_client", context=ros_context)
    executor = rclpy.executors.SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    poses: list[PoseStamped] = []
    strains: list[float] = []
    node.create_subscription(PoseStamped, names.SOFT_OBJECT_POSE, poses.append, 10)
    node.create_subscription(
        Float64, names.SOFT_OBJECT_STRAIN, lambda m: strains.append(m.data), 10
    )
    deadline = time.monotonic() + DISCOVERY_TIMEOUT
    # 1 s of sim time: the cube has settled on the table
    while time.monotonic() < deadline and not (
        poses and poses[-1].header.stamp.sec >= 1 and strains
    ):
        executor.spin_once(timeout_sec=0.05)
    executor.remove_node(node)
    node.destroy_node()
    if not poses:
        out = bridge.stdout.read() if bridge.poll() is not None else "(still running)"
        pytest.fail(f"no soft_object_pose within {DISCOVERY_TIMEOUT} s; the bridge said: {out}")
    pose = poses[-1]
    assert pose.header.frame_id == "world" and pose.header.stamp.sec >= 1
    p, q = pose.pose.position, pose.pose.orientation
    assert abs(p.x - X) < 1e-3 and abs(p.y - Y) < 1e-3  # [m] where the parameters put it
    assert abs(p.z - SIZE / 2) < 1e-3  # [m] resting: contact and elastic sag under 1 mm
    assert abs(q.w) > math.cos(math.radians(0.5))  # upright within 1° (2 acos w)
    assert all(math.isfinite(v) for v in strains) and 0.0 < strains[-1] < 0.03  # own weight


def test_unknown_soft_shape_stops_the_bridge_with_the_reason(ros_domain, spawn):
    bridge = spawn(
        "physai_ros.nodes.sim_bridge", "--ros-args", "-p", "soft_object:=torus", module=True
    )
    out, _ = bridge.communicate(timeout=DISCOVERY_TIMEOUT)
    assert bridge.returncode != 0
    assert "unknown soft object shape 'torus'; valid choices" in out
