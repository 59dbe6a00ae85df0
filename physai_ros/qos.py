"""The package's DDS settings: the QoS of latched topics and of state streams, and the Fast DDS
profile every process uses. One place for nodes, the graph monitor, benchmarks and tests.
"""

from __future__ import annotations

import os

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from physai_ros.paths import config_path

LATCHED = QoSProfile(
    depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE
)
"""A latched topic's QoS (``/tf_static``, ``robot_description``, a pick's state and outcome): a
node that joins later still gets the last sample."""


def stream_qos(depth: int) -> QoSProfile:
    """The subscription QoS of a state stream (joint states, /tf, poses, wrenches): best
    effort, so a sample lost on the link is simply superseded by the next one. A reliable
    reader delivers in order: one lost sample holds back every later one until the writer
    repairs it (Fast DDS: on its next heartbeat), and the newest state arrives a second or more
    late -- the stale cube pose of a lossy link (docs/qos.md). The publishers stay
    reliable, so ROS's tools (RViz, robot_state_publisher, ``ros2 topic echo``), which
    subscribe reliable, keep receiving; a reliable writer serves a best-effort reader without
    repairs. ``depth``: samples queued while the executor is busy."""
    return QoSProfile(
        depth=depth, reliability=ReliabilityPolicy.BEST_EFFORT, durability=DurabilityPolicy.VOLATILE
    )


DDS_PROFILE = "fastdds.xml"
"""The Fast DDS settings of every node (``config/fastdds.xml``: repairs of lost reliable samples
within 0.1 s instead of Fast DDS's 3 s heartbeat; docs/qos.md)."""


def use_dds_profile() -> None:
    """Point Fast DDS at the package's profile, before the first participant exists, unless
    the user chose a profile file of their own (which then wins, as ROS users expect)."""
    if any(
        k in os.environ for k in ("FASTDDS_DEFAULT_PROFILES_FILE", "FASTRTPS_DEFAULT_PROFILES_FILE")
    ):
        return
    os.environ["FASTDDS_DEFAULT_PROFILES_FILE"] = str(config_path(DDS_PROFILE))
