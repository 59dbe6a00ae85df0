"""A planning request as plain values (what the ``plan_grasp`` service carries) → the planner's
inputs, and a plan → the joint names of its pre-grasp. Pure: the node only copies fields.

Why here: every check on the request (shape or cloud, units, defaults for zero/negative
"unset" fields) is the planner's business and is tested without ROS.
"""

from __future__ import annotations

import math

import numpy as np

from physai_ros.core.grasp_planning.objects import (
    SHAPES,
    SurfaceObject,
    from_point_cloud,
    primitive,
)
from physai_ros.core.grasp_planning.plan import Plan, PlanRequest
from physai_ros.core.grasp_planning.pregrasp import arm_spec
from physai_ros.core.grasp_planning.three_finger import BarrettPreGrasp
from physai_ros.errors import InvalidInput
from physai_ros.models.barrett_hand import PANDA_PREFIX
from physai_ros.models.joints import PANDA_ARM_JOINTS

DEFAULTS = PlanRequest("panda", 1.0, 0.0, 1.0, 1.0)  # only its optional fields are used
# the hand's driven joints as named on the Panda (F2's spread mirrors F1's; outer = coupled)
BARRETT_JOINTS = tuple(
    PANDA_PREFIX + name for name in ("bh_spread_f1", "bh_f1_inner", "bh_f2_inner", "bh_f3_inner")
)


def request_inputs(
    shape: str,
    size: float,
    spacing: float,
    cloud: np.ndarray | None,
    hand: str,
    young: float,
    poisson: float,
    mu: float,
    mass: float,
    cells: int = 0,
    lift_accel: float = -1.0,
    force_margin: float = 0.0,
) -> tuple[SurfaceObject, PlanRequest]:
    """The object and the request; ``cells`` 0, ``lift_accel`` < 0 and ``force_margin`` 0 mean
    the planner's defaults (a ROS message has no "unset"). The request's own values are
    checked by ``plan``; the object's here."""
    if shape:
        if shape not in SHAPES:
            raise InvalidInput(f"unknown shape {shape!r}; valid choices: {list(SHAPES)}")
        for name, value in (("size", size), ("spacing", spacing)):
            if not (math.isfinite(value) and value > 0):
                raise InvalidInput(f"{name} must be finite and > 0 [m], got {value!r}")
        obj = primitive(shape, size, spacing)
    elif cloud is not None and len(cloud):
        obj = from_point_cloud(cloud)
    else:
        raise InvalidInput("no object: give a shape, or a point cloud with points")
    req = PlanRequest(
        hand,
        young,
        poisson,
        mu,
        mass,
        cells if cells > 0 else DEFAULTS.cells,
        lift_accel=lift_accel if lift_accel >= 0 else DEFAULTS.lift_accel,
        force_margin=force_margin if force_margin > 0 else DEFAULTS.force_margin,
    )
    return obj, req


def pregrasp_joints(p: Plan) -> tuple[list[str], list[float]]:
    """Names and values [rad] of the pre-grasp's joints: the arm's, then for the Barrett hand
    its spread and the three inner joints (the outer ones follow by the coupling)."""
    pre = p.pregrasp
    if isinstance(pre, BarrettPreGrasp):
        f = pre.fingers
        return [*PANDA_ARM_JOINTS, *BARRETT_JOINTS], [
            *map(float, pre.q),
            f.spread,
            *map(float, f.inner),
        ]
    return list(arm_spec(p.hand).joints), [float(v) for v in pre.q]
