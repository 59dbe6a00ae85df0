"""The sim bridge's cameras: each named scene camera's image on ``<camera>/image_raw``
(``sensor_msgs/Image``, rgb8) and its pinhole model on ``<camera>/camera_info``, stamped with
the sim time of the physics state they show, in the camera's optical frame
(``<camera>_optical``: +z forward, +y down, as image consumers expect).

Why a module of its own: rendering is the one costly stream (``physai_ros.sim.render``: tens of
ms an image with software OpenGL), so it is off unless asked for, rendered only while someone
subscribes, and its OpenGL context lives in the thread that renders (the physics thread: the
state it shows is the one just stepped). A camera on a robot link (the SO-101's ``wrist_cam``)
gets its TF frames from the TF publisher with the rest of the robot; a camera fixed in the
scene (``front_cam``, config/scene.yaml) is no part of the robot's model, so its two frames go
on ``/tf_static`` from here.
"""

from __future__ import annotations

import mujoco
import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import TransformStamped
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image
from tf2_msgs.msg import TFMessage

from physai_ros import interfaces
from physai_ros.core.frames.camera import T_CAMERA_OPTICAL, PinholeIntrinsics
from physai_ros.core.frames.robot_tf import OPTICAL_SUFFIX, Edge
from physai_ros.core.frames.spatial import pose_to_transform
from physai_ros.nodes._common import LATCHED
from physai_ros.nodes.tf_publisher import to_msgs
from physai_ros.sim.render import QUALITIES, Cameras, choose_backend

# [messages] kept for a reliable subscriber that is slow to take them (230 kB an image; the
# writer never waits, it drops the oldest unacknowledged one): 10 frames, a third of a second at
# 30 Hz. With 2, a dataset recorder busy encoding the last episode lost 226 ms of front_cam on a
# loaded machine and rightly dropped the episode it was recording.
IMAGE_DEPTH = 10


class SimCameras:
    """``names`` of ``model``'s cameras at ``height`` x ``width`` and ``quality`` (``Cameras``),
    published by ``node`` in the world frame ``world``. Raises ValueError for an unknown camera
    or quality and ``RenderUnavailable`` when the machine renders with no OpenGL: both before
    anything is published."""

    def __init__(
        self,
        node: Node,
        model: mujoco.MjModel,
        names: list[str],
        height: int,
        width: int,
        world: str = "world",
        quality: str = "full",
    ) -> None:
        if quality not in QUALITIES:
            raise ValueError(f"cameras.quality: {quality!r} is not one of {QUALITIES}")
        known = [model.camera(i).name for i in range(model.ncam)]
        unknown = [name for name in names if name not in known]
        if unknown:
            raise ValueError(f"cameras.names: no camera {unknown} in the scene (it has {known})")
        self.backend = choose_backend()  # RenderUnavailable: what to install
        self.model, self.names, self.height, self.width = model, names, height, width
        self.quality = quality
        self.renderer: Cameras | None = None  # made by the thread that renders
        self.images = {
            n: node.create_publisher(Image, f"{n}/image_raw", IMAGE_DEPTH) for n in names
        }
        self.infos = {
            n: node.create_publisher(CameraInfo, f"{n}/camera_info", IMAGE_DEPTH) for n in names
        }
        self.info = {n: self._camera_info(n) for n in names}
        fixed = [n for n in names if model.cam_bodyid[model.camera(n).id] == 0]
        if fixed:
            self.tf_static = node.create_publisher(TFMessage, interfaces.TF_STATIC, LATCHED)
            self.tf_static.publish(TFMessage(transforms=self._fixed_frames(fixed, world)))

    def _camera_info(self, name: str) -> CameraInfo:
        """The pinhole model MuJoCo renders with (its vertical field of view, square pixels,
        the centre in the middle, no distortion)."""
        fovy = float(self.model.cam_fovy[self.model.camera(name).id])
        k = PinholeIntrinsics.from_fovy(fovy, self.width, self.height).K
        info = CameraInfo(height=self.height, width=self.width, distortion_model="plumb_bob")
        info.header.frame_id = name + OPTICAL_SUFFIX
        info.d = [0.0] * 5
        info.k = [float(v) for v in k.ravel()]
        info.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
        info.p = [float(v) for v in np.hstack([k, np.zeros((3, 1))]).ravel()]
        return info

    def _fixed_frames(self, names: list[str], world: str) -> list[TransformStamped]:
        """world -> camera (MuJoCo's: -z forward, +y up) -> camera_optical, for cameras fixed
        in the world, as the TF publisher sends the robot's."""
        edges = []
        for name in names:
            cam = self.model.camera(name).id
            T = pose_to_transform(self.model.cam_pos[cam], self.model.cam_quat[cam])
            edges += [Edge(world, name, T), Edge(name, name + OPTICAL_SUFFIX, T_CAMERA_OPTICAL)]
        return to_msgs(edges, Time())

    def wanted(self) -> bool:
        """Whether anyone subscribes to an image or a camera_info (nothing is rendered else)."""
        return any(
            p.get_subscription_count() for p in [*self.images.values(), *self.infos.values()]
        )

    def messages(self, data: mujoco.MjData, stamp) -> list[tuple[object, object]]:
        """(publisher, message) of every camera's image and camera_info for the state in
        ``data`` at ``stamp`` (builtin_interfaces/Time). Called from the physics thread."""
        if self.renderer is None:
            self.renderer = Cameras(
                self.model, self.names, self.height, self.width, self.backend, self.quality
            )
        out = []
        for name, pixels in self.renderer.render(data).items():
            image = Image(
                height=self.height, width=self.width, encoding="rgb8", step=3 * self.width
            )
            image.header.stamp, image.header.frame_id = stamp, name + OPTICAL_SUFFIX
            image.data = pixels.tobytes()
            info = self.info[name]
            info.header.stamp = stamp
            out += [(self.images[name], image), (self.infos[name], info)]
        return out

    def close(self) -> None:
        """Free the OpenGL context; from the thread that rendered."""
        if self.renderer is not None:
            self.renderer.close()
            self.renderer = None
