"""The simulated cameras' images (``physai_ros.sim.render``), on the OpenGL this machine has.

The cube is where the pinhole model says it is: its red pixels' centroid lands on the projection
of its centre through the camera's pose and field of view (``core.frames.camera``), at two cube
positions -- which checks the camera's placement, the image's orientation (OpenGL's rows run
bottom-up) and the renderer together. Both offscreen OpenGLs are tried where they work, and a
machine with none gets an error naming what to install.
"""

from __future__ import annotations

import os
import subprocess
import sys

import mujoco
import numpy as np
import pytest

from physai_ros.core.frames.camera import PinholeIntrinsics, project_mujoco
from physai_ros.sim import render
from physai_ros.sim.render import Cameras, RenderUnavailable
from physai_ros.sim.scene import CUBE_JOINT, build_scene

HEIGHT, WIDTH = 240, 320  # the dataset resolution
PIXELS = 1.0  # [px] the red centroid from the projected centre (measured 0.1-0.3: the
# silhouette of a cube seen at a slant is centred near, not on, its centre's projection)


def red_centroid(image: np.ndarray) -> tuple[np.ndarray, int]:
    """(u, v) of the cube's pixels (its red, config/scene.yaml's rgba, shaded) and how many;
    pixel (i, j) covers [i, i + 1) x [j, j + 1), so its centre is half a pixel in."""
    r, g, b = (image[..., k].astype(int) for k in range(3))
    mask = (r > 40) & (r > 2 * g) & (r > 2 * b)
    v, u = np.nonzero(mask)
    centre = np.array([u.mean(), v.mean()]) + 0.5 if u.size else np.full(2, np.nan)
    return centre, int(u.size)


def projected(model: mujoco.MjModel, data: mujoco.MjData, camera: str) -> np.ndarray:
    """The cube centre's pixel through ``camera`` (MuJoCo frame: -z forward, +y up)."""
    cam = model.camera(camera).id
    centre = data.body("cube").xpos
    in_camera = data.cam_xmat[cam].reshape(3, 3).T @ (centre - data.cam_xpos[cam])
    intrinsics = PinholeIntrinsics.from_fovy(float(model.cam_fovy[cam]), WIDTH, HEIGHT)
    return project_mujoco(intrinsics, in_camera)


@pytest.fixture(scope="module", params=["full", "fast"])
def scene(request):
    """The SO-101 scene's two cameras at each quality (the cheaper one must not move what is
    seen); only the table and the cube drawn (MuJoCo's geom group 0): the arm's links (groups
    2 and 3) would hide part of the cube at rest."""
    model = build_scene("so101")
    cameras = Cameras(model, ["front_cam", "wrist_cam"], HEIGHT, WIDTH, quality=request.param)
    cameras.option.geomgroup[1:] = 0
    yield model, cameras
    cameras.close()


@pytest.mark.parametrize("cube_xy", [(0.22, 0.0), (0.18, 0.06), (0.26, -0.08)])
def test_the_front_camera_sees_the_cube_where_the_pinhole_model_puts_it(scene, cube_xy):
    model, cameras = scene
    data = mujoco.MjData(model)
    start = model.jnt_qposadr[model.joint(CUBE_JOINT).id]
    data.qpos[start : start + 2] = cube_xy
    mujoco.mj_forward(model, data)
    images = cameras.render(data)
    assert set(images) == {"front_cam", "wrist_cam"}
    for image in images.values():
        assert image.shape == (HEIGHT, WIDTH, 3) and image.dtype == np.uint8
        assert image.std() > 5.0  # a picture, not a blank buffer
    seen, count = red_centroid(images["front_cam"])
    want = projected(model, data, "front_cam")
    assert count > 20, f"the cube covers {count} pixels of the front image"
    assert np.linalg.norm(seen - want) < PIXELS, (seen, want)


def test_unknown_cameras_and_bad_sizes_are_refused_before_any_rendering():
    model = build_scene("so101")
    with pytest.raises(ValueError, match=r"no camera 'top_cam'.*front_cam"):
        Cameras(model, ["top_cam"], HEIGHT, WIDTH)
    with pytest.raises(ValueError, match="resolution"):
        Cameras(model, ["front_cam"], 0, WIDTH)
    with pytest.raises(ValueError, match="quality 'best'"):
        Cameras(model, ["front_cam"], HEIGHT, WIDTH, quality="best")


def test_every_robots_scene_has_its_front_camera():
    for robot in ("so101", "panda", "panda_barrett"):
        model = build_scene(robot)
        assert model.camera("front_cam").id >= 0, robot


def test_a_machine_without_an_offscreen_opengl_is_told_what_to_install(monkeypatch):
    """Every backend failing (here: names no OpenGL has) ends in the error naming OSMesa."""
    monkeypatch.setattr(render, "BACKENDS", ("no_such_gl",))
    monkeypatch.setattr(render, "_chosen", None)
    monkeypatch.delenv("MUJOCO_GL", raising=False)
    with pytest.raises(RenderUnavailable, match="libosmesa6") as raised:
        render.choose_backend()
    assert "no_such_gl" in str(raised.value)


SAME_IMAGE = """
import sys, mujoco, numpy as np
from physai_ros.sim.render import Cameras
from physai_ros.sim.scene import build_scene
model = build_scene("so101"); data = mujoco.MjData(model); mujoco.mj_forward(model, data)
cameras = Cameras(model, ["front_cam"], 240, 320)
np.save(sys.argv[1], cameras.render(data)["front_cam"]); cameras.close()
"""


def test_each_offscreen_opengl_that_works_here_renders_the_same_scene(tmp_path):
    """OSMesa (installed by the set-up) and EGL where a device answers: each in a process of its
    own, asked by ``MUJOCO_GL`` as a user would; their images agree but for shading noise."""
    images = {}
    for backend in render.BACKENDS:
        if render.probe(backend) is not None:
            continue
        out = tmp_path / f"{backend}.npy"
        env = dict(os.environ, MUJOCO_GL=backend)
        env.pop("PYOPENGL_PLATFORM", None)
        subprocess.run([sys.executable, "-c", SAME_IMAGE, str(out)], env=env, check=True)
        images[backend] = np.load(out)
    assert "osmesa" in images, "OSMesa does not render here: the set-up installs libosmesa6"
    first = next(iter(images.values())).astype(int)
    for backend, image in images.items():
        differ = np.mean(np.abs(image.astype(int) - first) > 16)
        assert differ < 0.02, f"{backend}: {differ:.1%} of the pixels differ"
