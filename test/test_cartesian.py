"""Cartesian straight-line moves: the hand stays on the line, timed by the shape."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from physai_ros.core.motion.cartesian import straight_line
from physai_ros.core.motion.time_scaling import get_shape
from physai_ros.errors import InvalidInput
from physai_ros.models import load_robot_model
from physai_ros.models.joints import PANDA_ARM_JOINTS

ARM = list(PANDA_ARM_JOINTS)
SITE = "attachment_site"
ON_LINE = 1e-6  # [m] IK tolerance is 1e-8 m; this allows for the site read-back


@pytest.fixture(scope="module")
def panda():
    model = load_robot_model("panda")
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    mujoco.mj_kinematics(model, data)
    site = model.site(SITE).id
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, data.site_xmat[site])
    home = np.array([data.qpos[model.joint(j).qposadr[0]] for j in ARM])
    return model, data.site_xpos[site].copy(), quat, home


def site_positions(model, qs):
    data = mujoco.MjData(model)
    adr = [model.joint(j).qposadr[0] for j in ARM]
    out = []
    for q in qs:
        data.qpos[adr] = q
        mujoco.mj_kinematics(model, data)
        out.append(data.site_xpos[model.site(SITE).id].copy())
    return np.array(out)


def test_hand_stays_on_the_line_and_follows_the_time_scaling(panda):
    model, p0, quat, home = panda
    a, b = p0 + np.array([0.0, -0.1, -0.05]), p0 + np.array([0.0, 0.1, -0.05])
    path = straight_line(model, SITE, ARM, a, b, home, quat, n_points=41)
    pts = site_positions(model, path.q)
    axis = (b - a) / np.linalg.norm(b - a)
    rel = pts - a
    off_line = np.linalg.norm(rel - np.outer(rel @ axis, axis), axis=1)
    assert off_line.max() < ON_LINE
    progress = rel @ axis / np.linalg.norm(b - a)
    np.testing.assert_allclose(progress, get_shape("quintic")(np.linspace(0, 1, 41)), atol=1e-5)
    assert path.max_ik_error < 1e-7


def test_unreachable_line_and_bad_input_are_refused(panda):
    model, p0, quat, home = panda
    with pytest.raises(InvalidInput, match="reach"):
        straight_line(model, SITE, ARM, p0, p0 + np.array([3.0, 0.0, 0.0]), home, quat, n_points=5)
    with pytest.raises(InvalidInput, match="finite"):
        straight_line(model, SITE, ARM, p0, [np.nan, 0, 0], home, quat)
    with pytest.raises(InvalidInput, match="n_points"):
        straight_line(model, SITE, ARM, p0, p0, home, quat, n_points=1)
