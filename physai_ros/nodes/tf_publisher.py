"""TF publisher: ``/joint_states`` in, the robot's frame tree out on ``/tf`` and ``/tf_static``.

A robot_state_publisher for the package's own models, computed from the same MJCF the
simulation steps (``physai_ros.core.frames.robot_tf``), so RViz shows exactly what MuJoCo simulates.
Moving links go on ``/tf`` stamped with the joint state's header stamp (sim time under
``use_sim_time``); the world→base placement, fixed mounts, sites, cameras and optical frames go
once on ``/tf_static`` (transient local). Objects (the cube) become frames when their pose is
published. Bad joint states are logged and dropped; the last good TF stays. Joint names may
carry a prefix (``joint_prefix``: franka_ros2's ``panda_joint1``); frame names are the model's.
"""

from __future__ import annotations

import math

import numpy as np
from geometry_msgs.msg import PoseStamped, TransformStamped
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from physai_ros import interfaces
from physai_ros.core.frames.joint_names import JointPrefix
from physai_ros.core.frames.robot_tf import Edge, load_robot_tf
from physai_ros.core.frames.spatial import mats_to_quats
from physai_ros.errors import PhysaiError
from physai_ros.nodes._common import (
    LATCHED,
    ROBOT_PARAMS,
    declare_robot_params,
    declare_schema,
    load_schema,
    run_node,
    stream_qos,
)


def to_msgs(edges: list[Edge], stamp, prefix: str = "", world: str = "world"):
    """TransformStamped messages of ``edges`` (rotations converted in one batch); every frame
    but the shared ``world`` gets ``prefix`` (two robots in one tree: ``left/``, ``right/``)."""
    if not edges:
        return []
    quats = mats_to_quats(np.array([e.T[:3, :3] for e in edges]))
    out = []
    for edge, (w, x, y, z) in zip(edges, quats.tolist(), strict=True):
        msg = TransformStamped()
        msg.header.stamp = stamp
        msg.header.frame_id = edge.parent if edge.parent == world else prefix + edge.parent
        msg.child_frame_id = prefix + edge.child
        t = msg.transform.translation
        t.x, t.y, t.z = edge.T[:3, 3].tolist()
        r = msg.transform.rotation
        r.w, r.x, r.y, r.z = w, x, y, z
        out.append(msg)
    return out


SCHEMA = load_schema("tf_publisher")  # config/schema/tf_publisher.yaml


class TfPublisher(Node):
    def __init__(self) -> None:
        super().__init__("tf_publisher")
        robot, model_path, base_pos, base_yaw = declare_robot_params(self, SCHEMA)
        p = declare_schema(self, SCHEMA.without(*ROBOT_PARAMS))
        self.world, self.prefix = p["world_frame"], p["frame_prefix"]
        topics, frames = p["object_topics"], p["object_frames"]
        prefix = p["joint_prefix"]
        try:
            self.tf = load_robot_tf(robot, model_path, base_pos, base_yaw, self.world)
        except PhysaiError as exc:
            raise SystemExit(f"tf_publisher: cannot load the {robot} model: {exc}") from exc
        try:
            self.names = JointPrefix(prefix, self.tf.joint_names)
        except PhysaiError as exc:
            raise SystemExit(f"tf_publisher: {exc}") from exc
        self.pub_tf = self.create_publisher(TFMessage, interfaces.TF, 100)
        self.pub_static = self.create_publisher(TFMessage, interfaces.TF_STATIC, LATCHED)
        self.pub_description = self.create_publisher(String, interfaces.ROBOT_DESCRIPTION, LATCHED)
        self._publish_description(robot, model_path)
        stamp = self.get_clock().now().to_msg()
        static = to_msgs(self.tf.static_edges(), stamp, self.prefix, self.world)
        self.pub_static.publish(TFMessage(transforms=static))
        self.create_subscription(
            JointState, interfaces.JOINT_STATES, self.on_joint_state, stream_qos(10)
        )
        if len(topics) != len(frames):
            raise SystemExit("tf_publisher: object_topics and object_frames differ in length")
        for topic, frame in zip(topics, frames, strict=True):
            self.create_subscription(
                PoseStamped, topic, lambda m, f=frame: self.on_object(m, f), stream_qos(10)
            )
        self._last_error = ""
        self.get_logger().info(
            f"{robot}: {len(self.tf.frame_names)} frames, joints {list(self.tf.joint_names)}"
        )

    def _publish_description(self, robot: str, model_path: str | None) -> None:
        from physai_ros.export.urdf import generate_urdf

        self.pub_description.publish(String(data=generate_urdf(robot, model_path)))

    def on_joint_state(self, msg: JointState) -> None:
        try:
            self.tf.update(self.names.to_model(msg.name), msg.position)
        except PhysaiError as exc:
            text = f"joint state dropped, last good TF kept: {self.names.text(str(exc))}"
            if text != self._last_error:  # once per distinct problem, not at 100 Hz
                self.get_logger().error(text)
                self._last_error = text
            return
        if not self.tf.complete:
            return
        stamp = msg.header.stamp
        moving = to_msgs(self.tf.dynamic_edges(), stamp, self.prefix, self.world)
        self.pub_tf.publish(TFMessage(transforms=moving))

    def on_object(self, msg: PoseStamped, frame: str) -> None:
        p, q = msg.pose.position, msg.pose.orientation
        values = (p.x, p.y, p.z, q.w, q.x, q.y, q.z)
        if not all(math.isfinite(v) for v in values) or abs(math.hypot(*values[3:]) - 1.0) > 1e-3:
            self.get_logger().error(f"{frame} pose dropped: non-finite or non-unit {values}")
            return
        t = TransformStamped()
        t.header = msg.header
        if not t.header.frame_id:
            t.header.frame_id = self.world
        t.child_frame_id = self.prefix + frame
        t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = (
            p.x,
            p.y,
            p.z,
        )
        t.transform.rotation = q
        self.pub_tf.publish(TFMessage(transforms=[t]))


def main(args: list[str] | None = None) -> None:
    run_node(TfPublisher, args)


if __name__ == "__main__":
    main()
