"""Discovery probe for the two-host tests: publish one topic and report, after a while, the
``/probe_*`` topics (or those under ``--watch``) this process discovered (one JSON list on stdout).

    python topic_probe.py NAME SECONDS [--profile] [--watch PREFIX]

``--profile`` applies the package's Fast DDS profile (``config/fastdds.xml``), as every
physai_ros node does; without it the process is a plain rclpy node, as a ROS tool is.
"""

from __future__ import annotations

import argparse
import json
import time

import rclpy
from std_msgs.msg import String

from physai_ros.qos import use_dds_profile


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", help="this probe's topic is /probe_NAME")
    parser.add_argument("seconds", type=float, help="how long to publish and listen [s]")
    parser.add_argument("--profile", action="store_true", help="use config/fastdds.xml")
    parser.add_argument("--watch", default="/probe_", help="report topics starting with this")
    args = parser.parse_args()
    if args.profile:
        use_dds_profile()
    rclpy.init()
    node = rclpy.create_node(f"probe_{args.name}")
    own = f"/probe_{args.name}"
    publisher = node.create_publisher(String, own, 10)
    seen: set[str] = set()
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.1)
        publisher.publish(String(data=args.name))
        seen |= {t for t, _ in node.get_topic_names_and_types() if t.startswith(args.watch)}
    print(json.dumps(sorted(seen - {own})), flush=True)
    node.destroy_node()
    rclpy.shutdown()


if __name__ == "__main__":
    main()
