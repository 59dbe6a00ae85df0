"""DDS peer: latches a TFMessage on /tf_static (transient local) and streams one on /tf.

The subscriber in the test joins after the static message was sent; it still receives it only
if durability is transient-local on both sides, as tf2 requires.
Usage: python tf_static_talker.py NONCE SECONDS
"""

import sys
import time

import rclpy
from geometry_msgs.msg import TransformStamped
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from tf2_msgs.msg import TFMessage


def transform(parent: str, child: str, x: float) -> TransformStamped:
    t = TransformStamped()
    t.header.frame_id = parent
    t.child_frame_id = child
    t.transform.translation.x = x
    t.transform.rotation.w = 1.0
    return t


def main() -> None:
    nonce, seconds = float(sys.argv[1]), float(sys.argv[2])
    rclpy.init()
    node = rclpy.create_node("tf_static_talker")
    static_qos = QoSProfile(
        depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE
    )
    static_pub = node.create_publisher(TFMessage, "/tf_static", static_qos)
    tf_pub = node.create_publisher(TFMessage, "/tf", 10)
    static_pub.publish(
        TFMessage(transforms=[transform("world", "base", nonce), transform("base", "cam", 2.0)])
    )
    print("static sent", flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        tf_pub.publish(TFMessage(transforms=[transform("base", "link1", nonce + 1.0)]))
        rclpy.spin_once(node, timeout_sec=0.05)
    node.destroy_node()
    rclpy.shutdown()


if __name__ == "__main__":
    main()
