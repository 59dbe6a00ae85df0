"""A node's view of the TF tree: every link from ``/tf`` and ``/tf_static`` kept in a pure
``TfBuffer`` and chained to the world frame on lookup.

Why here and not tf2_ros: tf2_ros is not in the pip-installed ROS wheels. Both pick nodes (jaw
and hand) look their goal's object up through this one listener, so "any frame the TF tree
knows" means the same for both.
"""

from __future__ import annotations

import numpy as np
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from tf2_msgs.msg import TFMessage

from physai_ros import interfaces
from physai_ros.core.frames.tf_buffer import FrameLookupError, TfBuffer
from physai_ros.errors import InvalidInput
from physai_ros.nodes._common import stream_qos
from physai_ros.nodes._messages import measured_at
from physai_ros.nodes._pick_server import node_now

STATIC_QOS = QoSProfile(  # tf2's: every publisher's latched links, however many
    depth=100,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
    reliability=ReliabilityPolicy.RELIABLE,
)


class TfListener:
    """Subscribes ``node`` to ``/tf`` and ``/tf_static``; ``buffer`` holds the tree."""

    def __init__(self, node: Node, world: str) -> None:
        self.node = node
        self.buffer = TfBuffer(world)
        node.create_subscription(TFMessage, interfaces.TF, self.on_tf, stream_qos(100))
        node.create_subscription(
            TFMessage, interfaces.TF_STATIC, lambda m: self.on_tf(m, static=True), STATIC_QOS
        )

    def on_tf(self, msg: TFMessage, static: bool = False) -> None:
        """Keep the latest link of every frame. A link that is not a transform (NaN, a zero
        rotation) is skipped, said once."""
        now = node_now(self.node)
        for t in msg.transforms:
            p, r = t.transform.translation, t.transform.rotation
            try:
                self.buffer.set(
                    t.header.frame_id,
                    t.child_frame_id,
                    (p.x, p.y, p.z),
                    (r.w, r.x, r.y, r.z),
                    measured_at(t.header.stamp, now),
                    static,
                )
            except InvalidInput as exc:
                self.node.get_logger().warning(f"TF link skipped: {exc}", once=True)

    def pose(self, frame: str | None) -> tuple[np.ndarray, np.ndarray, float] | None:
        """``frame``'s world pose: position [m], orientation (w, x, y, z) and stamp [s] (a
        chain of static links is measured now); None without a frame or a chain to it."""
        if frame is None:
            return None
        try:
            found = self.buffer.lookup(frame)
        except FrameLookupError:
            return None
        stamp = node_now(self.node) if found.stamp is None else found.stamp
        return found.position, found.quat, stamp
