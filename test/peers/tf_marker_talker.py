"""DDS peer: latches frames below the sim's cube on /tf_static (transient local), as a marker
or a detector would publish them, and stays up so late joiners get them.

``marker``: 5 cm along the cube's x, turned 90 degrees about z; ``marker_back``: the inverse
of that below ``marker`` (so world ← marker_back is world ← cube again, three links deep);
``far``: 30 cm along the cube's x (out of the arm's reach).
Usage: python tf_marker_talker.py SECONDS
"""

import math
import sys
import time

import rclpy
from geometry_msgs.msg import TransformStamped
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from tf2_msgs.msg import TFMessage

HALF = math.sqrt(0.5)  # cos and sin of 45 degrees: a quarter turn's quaternion


def link(parent: str, child: str, xyz: tuple, wz: tuple) -> TransformStamped:
    t = TransformStamped()
    t.header.frame_id, t.child_frame_id = parent, child
    t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = xyz
    t.transform.rotation.w, t.transform.rotation.z = wz
    return t


def main() -> None:
    seconds = float(sys.argv[1])
    rclpy.init()
    node = rclpy.create_node("tf_marker_talker")
    qos = QoSProfile(
        depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE
    )
    pub = node.create_publisher(TFMessage, "/tf_static", qos)
    pub.publish(
        TFMessage(
            transforms=[
                link("cube", "marker", (0.05, 0.0, 0.0), (HALF, HALF)),
                link("marker", "marker_back", (0.0, 0.05, 0.0), (HALF, -HALF)),
                link("cube", "far", (0.3, 0.0, 0.0), (1.0, 0.0)),
            ]
        )
    )
    print("static frames sent", flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.1)
    node.destroy_node()
    rclpy.shutdown()


if __name__ == "__main__":
    main()
