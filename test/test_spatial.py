"""Rigid-transform algebra (lesson 07) pinned to MuJoCo's own pose functions."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from physai_ros.core.frames import spatial
from physai_ros.errors import InvalidInput

TOL = 1e-12  # double-precision round-off on products of a few 4x4 matrices


def random_pose(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    quat = rng.normal(size=4)
    return rng.uniform(-1.0, 1.0, 3), quat / np.linalg.norm(quat)


def test_inverse_matches_numpy_and_mujoco() -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        pos, quat = random_pose(rng)
        T = spatial.pose_to_transform(pos, quat)
        inv = spatial.transform_inv(T)
        np.testing.assert_allclose(inv, np.linalg.inv(T), atol=TOL)
        neg_pos, neg_quat = np.zeros(3), np.zeros(4)
        mujoco.mju_negPose(neg_pos, neg_quat, pos, quat)
        np.testing.assert_allclose(inv, spatial.pose_to_transform(neg_pos, neg_quat), atol=TOL)
        np.testing.assert_allclose(spatial.compose(T, inv), np.eye(4), atol=TOL)


def test_compose_matches_mju_mulpose() -> None:
    rng = np.random.default_rng(1)
    for _ in range(200):
        (pa, qa), (pb, qb) = random_pose(rng), random_pose(rng)
        pos, quat = np.zeros(3), np.zeros(4)
        mujoco.mju_mulPose(pos, quat, pa, qa, pb, qb)
        T = spatial.compose(spatial.pose_to_transform(pa, qa), spatial.pose_to_transform(pb, qb))
        np.testing.assert_allclose(T, spatial.pose_to_transform(pos, quat), atol=TOL)


def test_quaternion_matrix_round_trip_and_non_unit_input() -> None:
    rng = np.random.default_rng(2)
    for _ in range(200):
        quat = rng.normal(size=4)  # deliberately not unit length
        mat = np.zeros(9)
        mujoco.mju_quat2Mat(mat, quat / np.linalg.norm(quat))
        R = spatial.quat_to_mat(quat * rng.uniform(0.1, 10.0))
        np.testing.assert_allclose(R.ravel(), mat, atol=TOL)
        np.testing.assert_allclose(R @ R.T, np.eye(3), atol=TOL)
        back = spatial.mat_to_quat(R)
        unit = quat / np.linalg.norm(quat)
        assert back[0] >= 0.0
        assert min(np.abs(back - unit).max(), np.abs(back + unit).max()) < 1e-10


def test_axis_angle_matches_mujoco() -> None:
    rng = np.random.default_rng(3)
    for _ in range(50):
        axis, angle = rng.normal(size=3), rng.uniform(-np.pi, np.pi)
        quat = np.zeros(4)
        mujoco.mju_axisAngle2Quat(quat, axis / np.linalg.norm(axis), angle)
        np.testing.assert_allclose(
            spatial.axis_angle_to_mat(axis * 3.0, angle), spatial.quat_to_mat(quat), atol=TOL
        )


def test_point_in_frame_preserves_distances_and_inverts_transform_point() -> None:
    rng = np.random.default_rng(4)
    T = spatial.pose_to_transform(*random_pose(rng))
    points = rng.uniform(-1.0, 1.0, (20, 3))
    moved = spatial.transform_point(T, points)
    np.testing.assert_allclose(spatial.point_in_frame(T, moved), points, atol=TOL)
    d_before = np.linalg.norm(points[:, None] - points[None], axis=-1)
    d_after = np.linalg.norm(moved[:, None] - moved[None], axis=-1)
    np.testing.assert_allclose(d_after, d_before, atol=TOL)


def test_transform_to_pose_round_trip() -> None:
    T = spatial.yaw_transform(np.radians(30.0), (0.10, -0.05, 0.0))
    pos, quat = spatial.transform_to_pose(T)
    np.testing.assert_allclose(spatial.pose_to_transform(pos, quat), T, atol=TOL)
    np.testing.assert_allclose(quat, [np.cos(np.pi / 12), 0, 0, np.sin(np.pi / 12)], atol=TOL)


@pytest.mark.parametrize(
    ("call", "args"),
    [
        (spatial.quat_to_mat, ([np.nan, 0.0, 0.0, 1.0],)),
        (spatial.quat_to_mat, ([0.0, 0.0, 0.0, 0.0],)),
        (spatial.quat_to_mat, ([1.0, 0.0, 0.0],)),
        (spatial.transform, (np.eye(3), [0.0, np.inf, 0.0])),
        (spatial.transform_inv, (np.full((4, 4), np.nan),)),
        (spatial.transform_point, (np.eye(4), [np.nan, 0.0, 0.0])),
        (spatial.transform_point, (np.eye(4), [0.0, 0.0])),
        (spatial.axis_angle_to_mat, ([0.0, 0.0, 0.0], 1.0)),
        (spatial.axis_angle_to_mat, ([0.0, 0.0, 1.0], np.nan)),
        (spatial.pose_to_transform, ([0.0, 0.0, 0.0], "abcd")),
    ],
)
def test_bad_input_raises_invalid_input(call, args) -> None:
    with pytest.raises(InvalidInput):
        call(*args)


def test_batch_quaternions_equal_one_by_one():
    from scipy.spatial.transform import Rotation

    from physai_ros.core.frames.spatial import mat_to_quat, mats_to_quats

    mats = Rotation.random(50, random_state=3).as_matrix()
    batch = mats_to_quats(mats)
    for R, q in zip(mats, batch, strict=True):
        np.testing.assert_allclose(q, mat_to_quat(R), atol=1e-15)
    assert np.all(batch[:, 0] >= 0.0)
    with pytest.raises(InvalidInput):
        mats_to_quats(np.full((2, 3, 3), np.nan))
