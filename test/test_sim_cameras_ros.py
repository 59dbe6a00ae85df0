"""The simulated cameras over ROS, as a user starts them:
``ros2 launch physai_ros pick.launch.py sim:=true cameras:=front_cam,wrist_cam``.

What an image consumer relies on is checked through the messages alone, the way RViz or a
detector uses them: the front camera's frames on ``/tf_static``, its ``camera_info`` matrix and
its image put the cube (from ``/cube_pose``, world frame) where the image shows it -- the
pinhole projection through the optical frame (+z forward, +y down) lands on the cube's red
pixels. Images are stamped in sim time, in order, in the optical frame.
"""

from __future__ import annotations

import itertools
import threading

import numpy as np
import pytest
import rclpy
from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import CameraInfo, Image
from test_sim_render import red_centroid
from tf2_msgs.msg import TFMessage

from physai_ros import interfaces
from physai_ros.core.frames.camera import PinholeIntrinsics, project_optical
from physai_ros.core.frames.spatial import compose, pose_to_transform, transform_inv
from physai_ros.experiments.trials.spinning import Spinning, wait
from physai_ros.qos import LATCHED, stream_qos

pytestmark = [pytest.mark.dds, pytest.mark.slow]

CAMERAS = ("front_cam", "wrist_cam")
CUBE = (0.2, 0.08)  # [m] base frame: clear of the arm at rest, in the front camera's view
PIXELS = 1.0  # [px] as test_sim_render: the silhouette's centre from the centre's projection


class Viewer:
    """Images, camera_info, /tf_static and the cube's pose, as a ROS image consumer sees them."""

    def __init__(self, context) -> None:
        self.node = node = rclpy.create_node("camera_viewer", context=context)
        self.lock = threading.Lock()
        self.images: dict[str, list[Image]] = {c: [] for c in CAMERAS}
        self.infos: dict[str, CameraInfo] = {}
        self.static: dict[str, tuple[str, np.ndarray]] = {}  # child -> (parent, T_parent_child)
        self.cube: np.ndarray | None = None
        for cam in CAMERAS:
            node.create_subscription(
                Image, f"/{cam}/image_raw", lambda m, c=cam: self._image(c, m), 5
            )
            node.create_subscription(
                CameraInfo, f"/{cam}/camera_info", lambda m, c=cam: self._info(c, m), 5
            )
        node.create_subscription(TFMessage, interfaces.TF_STATIC, self._static, LATCHED)
        node.create_subscription(PoseStamped, interfaces.CUBE_POSE, self._cube, stream_qos(10))
        self.spinning = Spinning(context, node)

    def _image(self, cam: str, msg: Image) -> None:
        with self.lock:
            self.images[cam] = [*self.images[cam][-9:], msg]

    def _info(self, cam: str, msg: CameraInfo) -> None:
        with self.lock:
            self.infos[cam] = msg

    def _static(self, msg: TFMessage) -> None:
        with self.lock:
            for t in msg.transforms:
                p, q = t.transform.translation, t.transform.rotation
                T = pose_to_transform([p.x, p.y, p.z], [q.w, q.x, q.y, q.z])
                self.static[t.child_frame_id] = (t.header.frame_id, T)

    def _cube(self, msg: PoseStamped) -> None:
        p = msg.pose.position
        self.cube = np.array([p.x, p.y, p.z])

    def world_to(self, frame: str) -> np.ndarray:
        """T_frame_world from the static edges up to the world."""
        chain, child = [], frame
        while child in self.static:
            parent, T = self.static[child]
            chain.insert(0, T)
            child = parent
        assert child == "world", f"{frame} hangs from {child!r}, not the world"
        return transform_inv(compose(*chain))


def test_launched_cameras_publish_images_a_consumer_can_project_into(ros2, ros_context, tmp_path):
    viewer = Viewer(ros_context)
    log = tmp_path / "launch.log"
    ros2("launch", "physai_ros", "pick.launch.py", "sim:=true", "start_pick:=false",
         f"cube_x:={CUBE[0]}", f"cube_y:={CUBE[1]}", f"cameras:={','.join(CAMERAS)}",
         log=log)  # fmt: skip
    try:
        ready = wait(
            lambda: (
                all(len(v) >= 3 for v in viewer.images.values())
                and len(viewer.infos) == 2
                and "front_cam_optical" in viewer.static
                and viewer.cube is not None
            ),
            120.0,
        )
        assert ready, (
            {c: len(v) for c, v in viewer.images.items()},
            sorted(viewer.static),
            log.read_text()[-3000:],
        )
        with viewer.lock:
            images = {c: list(v) for c, v in viewer.images.items()}
            infos = dict(viewer.infos)
        for cam, received in images.items():
            image = received[-1]
            assert (image.height, image.width, image.encoding) == (240, 320, "rgb8"), cam
            assert image.step == 3 * 320 and len(image.data) == 240 * 320 * 3, cam
            assert image.header.frame_id == f"{cam}_optical", image.header.frame_id
            stamps = [m.header.stamp.sec + m.header.stamp.nanosec * 1e-9 for m in received]
            assert all(b > a for a, b in itertools.pairwise(stamps)), stamps
            assert 0.0 < stamps[-1] < 1e6, stamps  # sim time, not the wall clock's epoch
            pixels = np.frombuffer(bytes(image.data), np.uint8).reshape(240, 320, 3)
            assert pixels.std() > 5.0, f"{cam}: a blank image"
        info = infos["front_cam"]
        assert info.header.frame_id == "front_cam_optical" and list(info.d) == [0.0] * 5
        k = np.array(info.k).reshape(3, 3)
        assert k[0, 0] == pytest.approx(k[1, 1]) and (k[0, 2], k[1, 2]) == (160.0, 120.0)
        intrinsics = PinholeIntrinsics(320, 240, k[0, 0], k[1, 1], k[0, 2], k[1, 2])
        # the cube's centre, world -> the optical frame -> a pixel, against the image
        T = viewer.world_to("front_cam_optical")
        centre = T[:3, :3] @ viewer.cube + T[:3, 3]
        want = project_optical(intrinsics, centre)
        front = np.frombuffer(bytes(images["front_cam"][-1].data), np.uint8).reshape(240, 320, 3)
        seen, count = red_centroid(front)
        assert count > 20, f"the cube covers {count} pixels of the front image"
        assert np.linalg.norm(seen - want) < PIXELS, (seen, want)
    finally:
        viewer.spinning.close()
