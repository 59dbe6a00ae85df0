"""The grasp planning pipeline (seed 003) and its JSON-ready result.

contacts (Q1/Q2, preferring the most level triangle on a table; or antipodal) → quality (force
closure, ε) → pre-grasp (arm IK; unreachable grasps are rejected with the reason and the
next-best grasp is tried) → closing on the mass–spring body to static equilibrium → force
targets for the real hand's force-controlled close (the simulated squeeze, raised to lesson
16's friction-cone floor where it is lower).
Every failure is an exception with its reason, never a silent best effort.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from physai_ros.core.grasp_planning.closing import (
    ClosingConfig,
    ClosingProgress,
    ClosingResult,
    Finger,
    close,
    node_contact_stiffness,
)
from physai_ros.core.grasp_planning.contact_law import contact_law
from physai_ros.core.grasp_planning.contacts import (
    NoGrasp,
    TriangleGrasp,
    point_spacing,
    select_pair,
    select_triangle,
)
from physai_ros.core.grasp_planning.lattice import build_network, material
from physai_ros.core.grasp_planning.objects import SurfaceObject
from physai_ros.core.grasp_planning.pregrasp import PreGrasp, Unreachable, arm_spec, solve_pregrasp
from physai_ros.core.grasp_planning.quality import grasp_quality
from physai_ros.core.grasp_planning.three_finger import (
    COUPLING,
    OBJECT_POS,
    TIP_R,
    BarrettPreGrasp,
    solve_barrett_pregrasp,
)
from physai_ros.core.pick.grip import cone_ratio
from physai_ros.errors import InvalidInput

HANDS = ("barrett", "panda", "so101")
TIP_RADIUS = {"barrett": TIP_R, "panda": 0.01, "so101": 0.01}
"""Fingertip radius [m]. Barrett: 12 mm, about half the BH8-282 finger width (24 mm), since
no public model gives a tip radius. Panda/SO-101 pads are flat: a 10 mm sphere stands in for
the pad (the seed's contact model needs a hemisphere; a larger cap touches a small object's
edges and makes every closing step several times slower)."""
TORSION = 0.005  # [m] soft-finger torsional friction length of the flat jaw pads (MuJoCo's)
RETRIES = 5  # next-best grasps tried after an unreachable pre-grasp
UP = np.array([0.0, 0.0, 1.0])  # the table's normal: object frame z (the object rests on it)


@dataclass(frozen=True)
class PlanRequest:
    """What to plan: material E [Pa] and ν, μ, mass [kg], lattice cells across the object.

    ``q2_tie`` [m] (three fingers only): triangles whose Q2 is within it of the best count as
    equally good, and the most nearly horizontal of them is taken (the fingers then reach the
    contacts from above, clear of the table). None: half the surface point spacing (median
    nearest-neighbour distance), since a sample lies up to half a spacing from the surface
    point it stands for, and so does a triangle's centre from the one the continuous surface
    would give: Q2 differences below that are the sampling's, not the grasp's.
    """

    hand: str
    young: float
    poisson: float
    mu: float
    mass: float
    cells: int = 6
    closing: ClosingConfig = field(default_factory=ClosingConfig)
    lift_accel: float = 0.5  # upward acceleration of the lift [m/s²] (lesson 16's a)
    force_margin: float = 1.2  # the targets' friction-cone safety factor (see force_targets)
    q2_tie: float | None = None  # [m] Q2 tie tolerance of the table-top preference (above)


@dataclass(frozen=True)
class Plan:
    """The planned grasp (object frame, SI units) — see :func:`to_json` for the fields.

    Per contact means per finger: for the Barrett hand index i is finger F(i+1) (F1, F2, F3),
    for the jaws index 0 is the fixed (or first) jaw. ``object_position`` [m] is where the
    plan put the object's centre of mass in the world, resting on the table (z = 0): the
    pre-grasp is for the object there, unrotated.
    """

    hand: str
    contacts: np.ndarray
    normals: np.ndarray
    q1: float | None
    q2: float
    force_closure: bool
    epsilon: float
    pregrasp: PreGrasp | BarrettPreGrasp
    pregrasp_note: str
    rejected: list[str]
    closing: ClosingResult
    cone_ratio: float
    rigid_squeeze: float
    force_targets: np.ndarray
    target_basis: str
    object_position: np.ndarray


def _validate(req: PlanRequest) -> None:
    if req.hand not in HANDS:
        raise InvalidInput(f"unknown hand {req.hand!r}; valid choices: {list(HANDS)}")
    material(req.young, req.poisson)  # raises on E ≤ 0, ν outside [0, 0.5)
    if not (math.isfinite(req.mu) and req.mu > 0):
        raise InvalidInput(f"mu must be finite and > 0, got {req.mu!r}")
    if not (math.isfinite(req.mass) and req.mass > 0):
        raise InvalidInput(f"mass must be finite and > 0 [kg], got {req.mass!r}")
    if req.cells < 3:
        raise InvalidInput(f"cells must be ≥ 3 across the object, got {req.cells!r}")
    if not (math.isfinite(req.lift_accel) and req.lift_accel >= 0):
        raise InvalidInput(f"lift_accel must be finite and ≥ 0 [m/s²], got {req.lift_accel!r}")
    if not (math.isfinite(req.force_margin) and req.force_margin >= 1):
        raise InvalidInput(f"force_margin must be finite and ≥ 1, got {req.force_margin!r}")
    if req.q2_tie is not None and not (math.isfinite(req.q2_tie) and req.q2_tie >= 0):
        raise InvalidInput(f"q2_tie must be finite and ≥ 0 [m] (or None), got {req.q2_tie!r}")


def force_targets(
    squeeze: np.ndarray, mu: float, mass: float, g: float, accel: float, margin: float
) -> tuple[np.ndarray, str]:
    """The real hand's force targets [N] and what set them ("simulated" or "friction floor").

    Why not the simulated squeeze alone: it holds the model's object under hemispherical
    tips, whose normals also push up (μ ΣN + ΣN_z ≥ m g), and it is the least squeeze that held
    (within one force step) at rest. A flat pad has no such upward share and the real lift
    accelerates. So the simulated forces are scaled up, never down, until lesson 16's law
    μ Σ targets ≥ margin × m (g + a) holds; the margin (1.2 by default) keeps a close that
    stops 15 % short of its target (the force close's tolerance) inside the friction cone.
    """
    floor = margin * mass * (g + accel) / mu
    total = float(np.sum(np.abs(squeeze)))
    if total >= floor:
        return np.abs(squeeze), "simulated"
    return np.abs(squeeze) * (floor / total), "friction floor"


def _q2_tie(obj: SurfaceObject, req: PlanRequest) -> float:
    """The request's Q2 tie tolerance [m], or half the object's surface point spacing."""
    return point_spacing(obj.points) / 2 if req.q2_tie is None else req.q2_tie


def _barrett_triangles(
    candidate: SurfaceObject, obj: SurfaceObject, req: PlanRequest
) -> list[TriangleGrasp]:
    """The three-finger triangles to try, in order: the most level of those tied in Q2 (the
    fingers reach down to it, clear of the table), then the seed's least-Q2 triangle when it
    is another. Why both: a level triangle can be one the fingers cannot reach (the 60 mm
    cube's, 2.1° at μ = 0.6), while its tilted rival can (1.5°, 8 mm above the table); the
    table check in the finger IK refuses the tilted ones that would touch the table."""
    level = select_triangle(candidate, req.mu, up=UP, q2_tie=_q2_tie(obj, req))
    least = select_triangle(candidate, req.mu)
    return [level] if least.indices == level.indices else [level, least]


def _first_reached(
    tris: list[TriangleGrasp],
    candidate: SurfaceObject,
    surface: np.ndarray,
    where: np.ndarray,
    rejected: list[str],
) -> tuple[TriangleGrasp, BarrettPreGrasp] | None:
    """The first of ``tris`` (indices into ``candidate``) whose Barrett pre-grasp is reached
    with the object at ``where`` [m, world], and that pre-grasp; None when none is (each
    reason appended to ``rejected``)."""
    for tri in tris:
        idx = list(tri.indices)
        pts, nrm = candidate.points[idx], candidate.normals[idx]
        try:
            return tri, solve_barrett_pregrasp(pts, nrm, tri.centre, tri.normal, surface, where)
        except Unreachable as exc:
            rejected.append(str(exc))
    return None


def _exhausted(rejected: list[str], exc: NoGrasp) -> NoGrasp:
    """The selection's failure, after the grasps rejected so far (their reasons are why the
    points ran out), or as it is when none was."""
    if not rejected:
        return exc
    return NoGrasp(f"no reachable grasp; rejected: {' | '.join(rejected)}; then: {exc}")


def _without(obj: SurfaceObject, near: np.ndarray, radius: float) -> SurfaceObject:
    """The object minus its points within ``radius`` of ``near``: the next-best grasp."""
    keep = np.all(np.linalg.norm(obj.points[:, None] - near[None], axis=2) > radius, axis=1)
    return replace(obj, points=obj.points[keep], normals=obj.normals[keep])


def plan(
    obj: SurfaceObject,
    req: PlanRequest,
    progress: Callable[[ClosingProgress], None] | None = None,
) -> Plan:
    """Run the whole pipeline on ``obj`` (object frame, centre of mass at ``obj.com``);
    ``progress`` is told how far the closing, nearly all of the time, is."""
    _validate(req)
    radius = TIP_RADIUS[req.hand]
    rejected: list[str] = []
    candidate = obj
    lift = np.array([0.0, 0.0, -float(obj.points[:, 2].min())])  # resting on the table
    for _ in range(RETRIES + 1):
        if req.hand == "barrett":
            try:
                tris = _barrett_triangles(candidate, obj, req)
            except NoGrasp as exc:
                raise _exhausted(rejected, exc) from exc
            where = OBJECT_POS + lift
            reached = _first_reached(tris, candidate, obj.points, where, rejected)
            if reached is None:
                tried = [i for tri in tris for i in tri.indices]
                candidate = _without(candidate, candidate.points[tried], 2 * radius)
                continue
            tri, pre = reached
            # per finger from here on: contact i is the one finger F(i+1) takes
            idx = [tri.indices[c] for c in pre.fingers.assignment]
            pre = pre._replace(fingers=pre.fingers._replace(assignment=(0, 1, 2)))
            q1, q2, centre = tri.q1, tri.q2, tri.centre
            pts, nrm = candidate.points[idx], candidate.normals[idx]
            quality = grasp_quality(pts, -nrm, obj.com, req.mu, torque_scale=obj.size)
            note = (
                f"reached{'' if tri is tris[0] else ' (the least-Q2 triangle)'}: palm normal "
                f"{np.round(pre.fingers.rotation[:, 2], 3).tolist()}, "
                f"TCP line {pre.fingers.length * 1e3:.1f} mm after "
                f"{pre.fingers.lengths_tried} lengths, worst finger joint error "
                f"{np.degrees(pre.fingers.errors.max()):.2f}°"
            )
            break
        spec = arm_spec(req.hand)
        try:
            pair = select_pair(candidate, req.mu, spec.jaw)
        except NoGrasp as exc:
            raise _exhausted(rejected, exc) from exc
        idx = list(pair.indices)
        q1, q2 = None, pair.q2
        pts, nrm = candidate.points[idx], candidate.normals[idx]
        quality = grasp_quality(pts, -nrm, obj.com, req.mu, torsion=TORSION, torque_scale=obj.size)
        centre = pts.mean(axis=0)
        try:
            where = spec.object_pos + lift
            pre = solve_pregrasp(spec, centre + lift, pair.axis)
            note = f"reached with approach direction {np.round(pre.approach, 3).tolist()}"
            break
        except Unreachable as exc:
            rejected.append(str(exc))
            candidate = _without(candidate, pts, 2 * radius)
    else:
        raise NoGrasp("no reachable grasp; rejected: " + " | ".join(rejected))

    mat = material(req.young, req.poisson)
    extent = float(np.max(obj.points.max(axis=0) - obj.points.min(axis=0)))
    net = build_network(obj, mat, req.mass, extent / req.cells)
    law = contact_law(node_contact_stiffness(net), req.mu, req.poisson)
    fingers = []
    for p in pts:
        direction = centre - p
        direction /= np.linalg.norm(direction)
        fingers.append(Finger(p - (radius + 0.5 * net.spacing) * direction, direction, radius))
    result = close(net, fingers, law, req.closing, progress)
    ratio = cone_ratio(req.mu, np.abs(result.squeeze), req.mass, g=req.closing.gravity)
    rigid = req.mass * req.closing.gravity / req.mu
    targets, basis = force_targets(
        result.squeeze, req.mu, req.mass, req.closing.gravity, req.lift_accel, req.force_margin
    )
    return Plan(
        req.hand,
        pts,
        nrm,
        q1,
        q2,
        quality.force_closure,
        quality.epsilon,
        pre,
        note,
        rejected,
        result,
        ratio,
        rigid,
        targets,
        basis,
        where,
    )


def to_json(p: Plan) -> dict[str, Any]:
    """Plain JSON types; units in the key names.

    Lists per contact (contacts, normals, finger forces, squeeze, force targets, tips) are
    per finger in one order: F1, F2, F3 for the Barrett hand (its ``finger_contact`` is then
    [0, 1, 2]), the fixed jaw first for the jaws. ``object_position_m``: the object's centre of
    mass in the world that the pre-grasp (joints, tool pose) was planned for; the object frame
    is the world frame moved there, unrotated. T(object)⁻¹ · T(tool) is the tool pose in the
    object frame, for an object that is elsewhere.
    """
    r = p.closing
    disp = np.linalg.norm(r.x - r.x0, axis=1)
    return {
        "hand": p.hand,
        "contacts_m": np.round(p.contacts, 6).tolist(),
        "normals": np.round(p.normals, 6).tolist(),
        "q1_rad": p.q1,
        "q2_m": p.q2,
        "force_closure": p.force_closure,
        "epsilon": p.epsilon,
        "object_position_m": np.round(p.object_position, 6).tolist(),
        "pregrasp": _pregrasp_json(p.pregrasp),
        "pregrasp_note": p.pregrasp_note,
        "rejected": p.rejected,
        "finger_forces_N": np.round(r.finger_forces, 6).tolist(),
        "simulated_squeeze_N": np.round(r.squeeze, 6).tolist(),
        "force_targets_N": np.round(p.force_targets, 6).tolist(),
        "force_target_basis": p.target_basis,
        "finger_tips_m": np.round(r.tips, 6).tolist(),
        "cone_ratio": p.cone_ratio,
        "rigid_least_squeeze_N": p.rigid_squeeze,
        "max_deformation_m": float(disp.max()),
        "residual_force_N": r.residual_force,
        "residual_torque_Nm": r.residual_torque,
        "closing_steps": r.steps,
    }


def _pregrasp_json(pre: PreGrasp | BarrettPreGrasp) -> dict[str, Any]:
    """Arm joints and tool pose; for the Barrett hand also its joints and the 2° check."""
    out: dict[str, Any] = {
        "joints_rad": np.round(pre.q, 6).tolist(),
        "tool_position_m": np.round(pre.position, 6).tolist(),
        "tool_quat_wxyz": np.round(pre.quat, 6).tolist(),
        "error_m": pre.error,
    }
    if isinstance(pre, BarrettPreGrasp):
        f = pre.fingers
        out["hand"] = {
            "spread_rad": f.spread,
            "inner_rad": np.round(f.inner, 6).tolist(),
            "outer_rad": np.round(f.inner * COUPLING, 6).tolist(),
            "tcp_line_m": f.length,
            "finger_contact": list(f.assignment),
            "joint_errors_deg": np.round(np.degrees(f.errors), 3).tolist(),
            "tip_error_m": np.round(f.tip_error, 6).tolist(),
        }
    return out
