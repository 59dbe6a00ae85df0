"""Record ROS topics into a rosbag2 bag with MCAP storage, written with ``rosbags``.

Why not ``ros2 bag record``: it is not installable here and not on a pip-only install. The
bag this writes is the standard one -- ``metadata.yaml`` plus an ``.mcap`` file with the
messages' CDR bytes exactly as they crossed DDS and their ROS 2 message definitions as MCAP
schemas -- so ``ros2 bag info``/``ros2 bag play``, Foxglove and any MCAP reader open it.

Messages are taken serialised (``raw=True``): nothing is converted in Python on the way to
disk. The types come from the ROS graph; their definitions from rosbags' Kilted type store, and
for a type it does not know (the pick's ``physai_ros_interfaces/msg/PickOutcome``) from the
installed interface package's own ``.msg`` files.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

from physai_ros.errors import InvalidInput

LATCHED_TOPICS = ("/tf_static", "/pick/outcome", "/pick/state", "/robot_description")


class BagRecorder:
    """Record ``topics`` (absolute names) from the ROS graph of ``context`` into ``path``.

    Topics are subscribed once they appear in the graph (``poll`` every ``discovery``
    seconds), so the recorder may start before the nodes it records. ``close()`` finishes the
    bag; ``counts`` says how many messages each topic got.
    """

    def __init__(
        self, context, path: str | Path, topics: Sequence[str], discovery: float = 0.2
    ) -> None:
        import rclpy
        from rosbags.rosbag2 import StoragePlugin, Writer
        from rosbags.typesys import Stores, get_typestore

        self.path = Path(path)
        if self.path.exists():
            raise InvalidInput(f"bag {self.path} exists already; choose a new directory")
        self.typestore = get_typestore(Stores.ROS2_KILTED)
        self.writer = Writer(self.path, version=9, storage_plugin=StoragePlugin.MCAP)
        self.writer.open()
        self.node = rclpy.create_node("physai_bag_recorder", context=context)
        self.wanted = list(topics)
        self.connections: dict[str, object] = {}
        self.counts: dict[str, int] = dict.fromkeys(self.wanted, 0)
        self.skipped: dict[str, str] = {}  # topic -> why it is not recorded
        self.lock = threading.Lock()
        self.node.create_timer(discovery, self.poll)
        self.poll()

    def poll(self) -> None:
        """Subscribe to wanted topics that have appeared in the graph."""
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

        graph = dict(self.node.get_topic_names_and_types())
        for topic in self.wanted:
            if topic in self.connections or topic in self.skipped or topic not in graph:
                continue
            ros_type = graph[topic][0]  # "pkg/msg/Name"
            if ros_type not in self.typestore.types:
                why = _register(self.typestore, ros_type)
                if why is not None:
                    self.skipped[topic] = why
                    continue
            latched = topic in LATCHED_TOPICS
            qos = QoSProfile(
                depth=100,
                reliability=ReliabilityPolicy.RELIABLE,
                durability=DurabilityPolicy.TRANSIENT_LOCAL
                if latched
                else DurabilityPolicy.VOLATILE,
            )
            with self.lock:
                self.connections[topic] = self.writer.add_connection(
                    topic,
                    ros_type,
                    typestore=self.typestore,
                    offered_qos_profiles=self._qos(latched),
                )
            msg_class = _message_class(ros_type)
            self.node.create_subscription(
                msg_class, topic, lambda data, t=topic: self._write(t, data), qos, raw=True
            )

    @staticmethod
    def _qos(latched: bool) -> list:
        """The offered QoS written into metadata.yaml: ``ros2 bag play`` re-offers it, so a
        latched topic (``/tf_static``) is latched again on playback."""
        from rosbags.rosbag2.metadata import (
            Qos,
            QosDurability,
            QosHistory,
            QosLiveliness,
            QosReliability,
            QosTime,
        )

        zero = QosTime(sec=0, nsec=0)
        durability = QosDurability.TRANSIENT_LOCAL if latched else QosDurability.VOLATILE
        return [
            Qos(
                history=QosHistory.KEEP_LAST,
                depth=100,
                reliability=QosReliability.RELIABLE,
                durability=durability,
                deadline=zero,
                lifespan=zero,
                liveliness=QosLiveliness.AUTOMATIC,
                liveliness_lease_duration=zero,
                avoid_ros_namespace_conventions=False,
            )
        ]

    def _write(self, topic: str, data: bytes) -> None:
        stamp = time.time_ns()
        with self.lock:
            if self.writer is None:
                return
            self.writer.write(self.connections[topic], stamp, data)
            self.counts[topic] += 1

    def close(self) -> dict[str, int]:
        """Finish the bag (its metadata.yaml is written now); returns the message counts."""
        with self.lock:
            if self.writer is not None:
                self.writer.close()
                self.writer = None
        self.node.destroy_node()
        return dict(self.counts)


def _message_class(ros_type: str):
    """The rclpy message class of ``pkg/msg/Name``."""
    import importlib

    package, _, name = ros_type.split("/")
    return getattr(importlib.import_module(f"{package}.msg"), name)


def _register(typestore, ros_type: str) -> str | None:
    """Teach ``typestore`` ``ros_type`` (``pkg/msg/Name``) from its installed package's own
    message files (all of them: what the type may refer to). None when it worked, else why
    not."""
    from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
    from rosbags.typesys import get_types_from_msg

    package = ros_type.split("/")[0]
    try:
        share = Path(get_package_share_directory(package))
    except PackageNotFoundError:
        return f"type {ros_type}: no installed package {package!r} defines it"
    types = {}
    for msg in sorted((share / "msg").glob("*.msg")):
        types.update(get_types_from_msg(msg.read_text(), f"{package}/msg/{msg.stem}"))
    typestore.register(types)
    return None if ros_type in typestore.types else f"type {ros_type}: not in {share / 'msg'}"
