"""DDS peer: publishes JointState messages carrying a nonce, for a subscriber in another process.

Usage: python joint_state_talker.py NONCE COUNT
"""

import sys

import rclpy
from sensor_msgs.msg import JointState

from physai_ros.models.joints import SO101_JOINTS

NAMES = list(SO101_JOINTS)


def main() -> None:
    nonce, count = float(sys.argv[1]), int(sys.argv[2])
    rclpy.init()
    node = rclpy.create_node("joint_state_talker")
    pub = node.create_publisher(JointState, "/joint_states", 10)
    sent = 0

    def tick() -> None:
        nonlocal sent
        if pub.get_subscription_count() == 0 or sent >= count:
            return
        msg = JointState()
        msg.header.stamp = node.get_clock().now().to_msg()
        msg.name = NAMES
        msg.position = [nonce + i + 0.001 * sent for i in range(len(NAMES))]
        msg.velocity = [0.0] * len(NAMES)
        msg.effort = [float(sent)] * len(NAMES)
        pub.publish(msg)
        sent += 1

    node.create_timer(0.02, tick)
    while rclpy.ok() and sent < count:
        rclpy.spin_once(node, timeout_sec=0.1)
    # Give the last messages time to leave before the participant goes away.
    end = node.get_clock().now().nanoseconds + 500_000_000
    while node.get_clock().now().nanoseconds < end:
        rclpy.spin_once(node, timeout_sec=0.05)
    node.destroy_node()
    rclpy.shutdown()


if __name__ == "__main__":
    main()
