"""The planning service's request → planner inputs, and a plan → its pre-grasp joint names
(pure: what the grasp_planner node copies in and out of ``PlanGrasp``)."""

from __future__ import annotations

import numpy as np
import pytest

from physai_ros.core.frames.spatial import quat_to_mat, quat_z_along
from physai_ros.core.grasp_planning.objects import primitive
from physai_ros.core.grasp_planning.plan import PlanRequest, plan
from physai_ros.core.grasp_planning.pregrasp import arm_spec
from physai_ros.core.grasp_planning.request import pregrasp_joints, request_inputs
from physai_ros.errors import InvalidInput

MATERIAL = {"hand": "panda", "young": 5e4, "poisson": 0.3, "mu": 0.6, "mass": 0.05}


def test_a_shape_request_with_unset_fields_takes_the_planner_defaults():
    obj, req = request_inputs("box", 0.04, 0.0044, None, **MATERIAL)
    assert obj.name.startswith("box") and len(obj.points) > 100
    defaults = PlanRequest("panda", 5e4, 0.3, 0.6, 0.05)
    assert (req.cells, req.lift_accel, req.force_margin) == (
        defaults.cells,
        defaults.lift_accel,
        defaults.force_margin,
    )
    _, req = request_inputs(
        "box", 0.04, 0.0044, None, **MATERIAL, cells=4, lift_accel=0.0, force_margin=1.5
    )
    assert (req.cells, req.lift_accel, req.force_margin) == (4, 0.0, 1.5)


def test_a_cloud_request_estimates_normals():
    sphere = primitive("sphere", 0.05, 0.005)
    offset = np.array([0.3, 0.0, 0.1])  # a cloud seen somewhere in the world
    obj, _ = request_inputs("", 0.0, 0.0, sphere.points + offset, **MATERIAL)
    # outward normals of a sphere: along the point's offset from the centre, to within 10°
    radial = obj.points / np.linalg.norm(obj.points, axis=1, keepdims=True)
    assert np.min(np.einsum("ij,ij->i", radial, obj.normals)) > np.cos(np.radians(10))


@pytest.mark.parametrize(
    ("shape", "size", "spacing", "cloud", "match"),
    [
        ("pyramid", 0.04, 0.004, None, "unknown shape"),
        ("box", 0.0, 0.004, None, "size"),
        ("box", 0.04, float("nan"), None, "spacing"),
        ("", 0.0, 0.0, None, "no object"),
        ("", 0.0, 0.0, np.zeros((0, 3)), "no object"),
        ("", 0.0, 0.0, np.zeros((5, 3)), "point cloud has 5 points"),
    ],
)
def test_bad_requests_are_refused_with_the_reason(shape, size, spacing, cloud, match):
    with pytest.raises(InvalidInput, match=match):
        request_inputs(shape, size, spacing, cloud, **MATERIAL)


def test_pregrasp_joints_are_the_arms_in_order():
    obj, req = request_inputs("box", 0.04, 0.0044, None, **MATERIAL, cells=4)
    names, values = pregrasp_joints(plan(obj, req))
    assert names == list(arm_spec("panda").joints) and len(values) == 7
    assert all(np.isfinite(values))


def test_the_plan_says_where_its_object_was():
    """The pre-grasp's tool centre is the grasp centre with the object where the plan puts
    it: tool position = object position + centre of the contacts (object frame, unrotated),
    the object resting on the table (its lowest point at the world's z = 0)."""
    obj, req = request_inputs("box", 0.04, 0.0044, None, **MATERIAL, cells=4)
    result = plan(obj, req)
    np.testing.assert_allclose(
        result.pregrasp.position, result.object_position + result.contacts.mean(axis=0), atol=1e-12
    )
    assert result.object_position[2] + obj.points[:, 2].min() == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("direction", [(0, 0, 1), (0, 0, -1), (1, 2, 3), (-1, 0, 0)])
def test_quat_z_along_points_the_frames_z_axis(direction):
    d = np.array(direction, float)
    q = quat_z_along(d)
    assert q[0] >= 0 and np.linalg.norm(q) == pytest.approx(1.0)
    np.testing.assert_allclose(quat_to_mat(q)[:, 2], d / np.linalg.norm(d), atol=1e-12)
    with pytest.raises(InvalidInput):
        quat_z_along(np.zeros(3))
