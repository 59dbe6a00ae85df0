"""Pinhole projection in the MuJoCo (−z forward, +y up) and optical (+z forward, +y down) frames."""

from __future__ import annotations

import math

import numpy as np
import pytest

from physai_ros.core.frames.camera import (
    QUAT_CAMERA_OPTICAL,
    T_CAMERA_OPTICAL,
    PinholeIntrinsics,
    mujoco_to_optical,
    optical_to_mujoco,
    project_mujoco,
    project_optical,
)
from physai_ros.core.frames.spatial import quat_to_mat, transform_inv, transform_point
from physai_ros.errors import InvalidInput
from physai_ros.experiments.lesson07.frames import SETUP

INTRINSICS = PinholeIntrinsics.from_fovy(SETUP.fovy_deg, *SETUP.image_size)


def test_focal_length_from_fovy() -> None:
    width, height = SETUP.image_size
    assert INTRINSICS.fy == pytest.approx((height / 2) / math.tan(math.radians(SETUP.fovy_deg) / 2))
    assert INTRINSICS.fy == pytest.approx(407.4, abs=0.05)  # lesson: f = 407.4 px (1 decimal)
    assert (INTRINSICS.cx, INTRINSICS.cy) == (width / 2, height / 2)
    np.testing.assert_allclose(INTRINSICS.K[:2, 2], [width / 2, height / 2])


def test_field_of_view_edges_land_on_the_image_border() -> None:
    half = math.radians(SETUP.fovy_deg) / 2
    top = np.array([0.0, math.tan(half), -1.0])  # MuJoCo: +y up, looking along −z
    np.testing.assert_allclose(project_mujoco(INTRINSICS, top), [INTRINSICS.cx, 0.0], atol=1e-9)
    np.testing.assert_allclose(
        project_mujoco(INTRINSICS, [0.0, 0.0, -0.3]), [INTRINSICS.cx, INTRINSICS.cy]
    )


def test_both_conventions_give_the_same_pixels() -> None:
    rng = np.random.default_rng(0)
    p_cam = np.column_stack([rng.uniform(-0.1, 0.1, (50, 2)), rng.uniform(-1.0, -0.05, 50)])
    p_opt = mujoco_to_optical(p_cam)
    np.testing.assert_allclose(p_opt, transform_point(transform_inv(T_CAMERA_OPTICAL), p_cam))
    np.testing.assert_allclose(optical_to_mujoco(p_opt), p_cam)
    np.testing.assert_allclose(
        project_optical(INTRINSICS, p_opt), project_mujoco(INTRINSICS, p_cam)
    )
    np.testing.assert_allclose(quat_to_mat(QUAT_CAMERA_OPTICAL), T_CAMERA_OPTICAL[:3, :3])
    np.testing.assert_allclose(T_CAMERA_OPTICAL @ T_CAMERA_OPTICAL, np.eye(4))


def test_lesson_pixel_from_the_lesson_camera_point() -> None:
    # The seed prints the cube in the camera frame to 0.1 mm, (−0.0064, −0.0011, −0.1508) m,
    # and its pixel (302.7, 242.8). Rounding the point by ±0.05 mm moves the pixel by up to
    # f·0.05 mm/0.1508 m = 0.135 px, plus 0.05 px for the printed pixel's own rounding.
    u, v = project_mujoco(INTRINSICS, [-0.0064, -0.0011, -0.1508])
    tol = INTRINSICS.fy * 0.5e-4 / 0.1508 + 0.05
    assert u == pytest.approx(302.7, abs=tol)
    assert v == pytest.approx(242.8, abs=tol)


@pytest.mark.parametrize(
    ("call", "point"),
    [
        (project_mujoco, [0.0, 0.0, 0.1]),  # behind a MuJoCo camera
        (project_optical, [0.0, 0.0, -0.1]),  # behind an optical camera
        (project_mujoco, [np.nan, 0.0, -0.1]),
        (project_optical, [0.0, 0.0]),
    ],
)
def test_points_without_a_pixel_raise(call, point) -> None:
    with pytest.raises(InvalidInput):
        call(INTRINSICS, point)


@pytest.mark.parametrize("fovy", [0.0, 180.0, float("nan"), -5.0])
def test_bad_fovy_raises(fovy: float) -> None:
    with pytest.raises(InvalidInput):
        PinholeIntrinsics.from_fovy(fovy, 640, 480)
