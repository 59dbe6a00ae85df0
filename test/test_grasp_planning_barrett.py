"""The Barrett-like hand: its model (ranges, coupling, link lengths) and its pre-grasp (finger
IK with the seed's 2° rule and TCP-line retry, then the Panda's arm IK)."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from physai_ros.core.grasp_planning import three_finger as bh
from physai_ros.core.grasp_planning.closing import ClosingResult
from physai_ros.core.grasp_planning.contacts import NoGrasp, select_triangle
from physai_ros.core.grasp_planning.objects import SurfaceObject, primitive
from physai_ros.core.grasp_planning.plan import PlanRequest, plan, to_json
from physai_ros.core.grasp_planning.pregrasp import Unreachable
from physai_ros.errors import InvalidInput
from physai_ros.models import load_robot_spec
from physai_ros.models.barrett_hand import PANDA_PREFIX, load_barrett_spec
from physai_ros.models.joints import PANDA_ARM_JOINTS

FINGERS = ("f1", "f2", "f3")
MU = 0.6


def _set(model: mujoco.MjModel, data: mujoco.MjData, spread: float, inner, prefix="") -> None:
    """Hand joints with the coupling applied by hand (kinematics only)."""
    for side in ("f1", "f2"):
        data.qpos[model.joint(f"{prefix}bh_spread_{side}").qposadr[0]] = spread
    for f, q in zip(FINGERS, inner, strict=True):
        data.qpos[model.joint(f"{prefix}bh_{f}_inner").qposadr[0]] = q
        data.qpos[model.joint(f"{prefix}bh_{f}_outer").qposadr[0]] = bh.COUPLING * q


def _grasp(obj: SurfaceObject):
    tri = select_triangle(obj, MU)
    idx = list(tri.indices)
    return obj.points[idx], obj.normals[idx], tri


def test_model_joint_ranges_and_coupling_as_stated():
    model = load_barrett_spec().compile()
    for f in FINGERS:
        np.testing.assert_allclose(model.joint(f"bh_{f}_inner").range, [0.0, 2.44])
        np.testing.assert_allclose(model.joint(f"bh_{f}_outer").range, [0.0, 0.84])
        eq = model.equality(f"bh_{f}_coupling")
        np.testing.assert_allclose(eq.data[:2], [0.0, 0.84 / 2.44], atol=1e-6)
    for side in ("f1", "f2"):
        np.testing.assert_allclose(model.joint(f"bh_spread_{side}").range, [0.0, math.pi])
    assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, "bh_spread_f3") == -1  # F3 fixed
    np.testing.assert_allclose(model.equality("bh_spread").data[:2], [0.0, 1.0])
    # the Panda variant carries the hand instead of the Franka Hand; the Panda model keeps it
    panda = load_robot_spec("panda_barrett").compile()
    assert mujoco.mj_name2id(panda, mujoco.mjtObj.mjOBJ_JOINT, "finger_joint1") == -1
    assert panda.nq == 7 + 8
    plain = load_robot_spec("panda").compile()
    assert mujoco.mj_name2id(plain, mujoco.mjtObj.mjOBJ_BODY, "hand") >= 0


def test_coupling_and_mirrored_spread_hold_when_driven():
    """The equality constraints make the outer link follow at 0.3443 × the inner (within 2 %)
    and F2's spread equal F1's (within 0.5 mrad), so F1 and F2 are mirror images."""
    model = load_barrett_spec().compile()
    model.opt.gravity[:] = 0.0
    data = mujoco.MjData(model)
    data.ctrl[:] = [1.0, 1.5, 0.8, 2.0]  # spread, F1, F2, F3 inner
    for _ in range(3000):  # 6 s
        mujoco.mj_step(model, data)
    for f in FINGERS:
        inner, outer = data.joint(f"bh_{f}_inner").qpos[0], data.joint(f"bh_{f}_outer").qpos[0]
        assert outer / inner == pytest.approx(bh.COUPLING, rel=0.02)
    s1, s2 = data.joint("bh_spread_f1").qpos[0], data.joint("bh_spread_f2").qpos[0]
    assert abs(s1 - s2) < 5e-4 and s1 == pytest.approx(1.0, abs=0.02)
    mujoco.mj_kinematics(model, data)
    _set(model, data, 1.0, [1.2, 1.2, 0.0])
    mujoco.mj_kinematics(model, data)
    t1, t2 = data.site("bh_f1_tip").xpos, data.site("bh_f2_tip").xpos
    np.testing.assert_allclose(t1 * [-1, 1, 1], t2, atol=1e-12)


def test_fingertip_kinematics_match_the_published_link_lengths():
    """Open hand: F3's tip centre lies A1 + A2 + (A3 − R)·cos 42° out and Dw + (A3 − R)·sin 42°
    up (A1 50, A2 70, A3 50, Dw 76 mm, R 12 mm); at inner = π/2 the inner link stands upright,
    so the outer joint is 70 mm straight above the inner joint. The planner's closed-form FK
    equals MuJoCo's to 1e-9 m over random joints."""
    model = load_barrett_spec().compile()
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    reach = 0.050 - 0.012
    phi = math.radians(42.0)
    np.testing.assert_allclose(
        data.site("bh_f3_tip").xpos,
        [0.0, 0.050 + 0.070 + reach * math.cos(phi), 0.076 + reach * math.sin(phi)],
        atol=1e-9,
    )
    np.testing.assert_allclose(data.site("bh_f1_tip").xpos[0], -0.025, atol=1e-9)
    _set(model, data, 0.0, [math.pi / 2] * 3)
    mujoco.mj_kinematics(model, data)
    rise = data.body("bh_f3_outer").xpos - data.body("bh_f3_inner").xpos
    np.testing.assert_allclose(rise, [0.0, 0.0, 0.070], atol=1e-9)
    rng = np.random.default_rng(3)
    for _ in range(20):
        spread, inner = rng.uniform(0, math.pi), rng.uniform(0, 2.44, 3)
        _set(model, data, spread, inner)
        mujoco.mj_kinematics(model, data)
        for i, f in enumerate(FINGERS):
            tip = bh.finger_tip(i, spread, inner[i])
            np.testing.assert_allclose(data.site(f"bh_{f}_tip").xpos, tip, atol=1e-9)


@pytest.mark.parametrize(("shape", "size"), [("sphere", 0.08), ("box", 0.06)])
def test_finger_ik_reaches_the_contacts_within_two_degrees(shape, size):
    """Every spread and inner-joint error ≤ 2°; with the solution's joints the model's tip
    centres lie within 4 mm of the targets (contact + R·normal), the reported tip error to
    1e-6 m; the object clears the palm face."""
    obj = primitive(shape, size, 0.006)
    pts, nrm, tri = _grasp(obj)
    sols = bh.solve_fingers(pts, nrm, tri.centre, tri.normal, obj.points)
    sol = sols[0]
    assert np.all(sol.errors <= math.radians(2.0))
    model = load_barrett_spec().compile()
    data = mujoco.MjData(model)
    _set(model, data, sol.spread, sol.inner)
    mujoco.mj_kinematics(model, data)
    targets = pts + bh.TIP_R * nrm
    for finger, contact in enumerate(sol.assignment):
        tip_hand = data.site(f"bh_{FINGERS[finger]}_tip").xpos
        tip = sol.position + sol.rotation @ tip_hand
        gap = np.linalg.norm(tip - targets[contact])
        assert gap == pytest.approx(sol.tip_error[finger], abs=1e-6)
        assert gap < 0.004
    heights = (obj.points - sol.position) @ sol.rotation[:, 2]
    assert heights.min() >= bh.PALM_FACE - 1e-9


def _link_segments(model, data, sol) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each finger's inner link and its outer link up to TIP_R short of the tip centre, from
    MuJoCo's body frames (object frame) — independent of the planner's own kinematics."""
    _set(model, data, sol.spread, sol.inner)
    mujoco.mj_kinematics(model, data)
    out = []
    for f in FINGERS:
        inner, outer = data.body(f"bh_{f}_inner").xpos, data.body(f"bh_{f}_outer").xpos
        tip = data.site(f"bh_{f}_tip").xpos
        short = tip - bh.TIP_R * (tip - outer) / np.linalg.norm(tip - outer)
        for a, b in ((inner, outer), (outer, short)):
            out.append((sol.position + sol.rotation @ a, sol.position + sol.rotation @ b))
    return out


def _distance(points: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    t = np.clip((points - a) @ (b - a) / float((b - a) @ (b - a)), 0.0, 1.0)
    return float(np.min(np.linalg.norm(points - a - t[:, None] * (b - a), axis=1)))


def test_finger_links_are_kept_clear_of_the_object():
    """Every returned solution keeps each link LINK_R (8 mm) from every object point. An
    obstacle point put on the best solution's F1 inner link makes the planner drop that
    solution (another is returned, clear of it) or reject the grasp naming the links."""
    model = load_barrett_spec().compile()
    data = mujoco.MjData(model)
    obj = primitive("sphere", 0.08, 0.006)
    pts, nrm, tri = _grasp(obj)
    sols = bh.solve_fingers(pts, nrm, tri.centre, tri.normal, obj.points)
    for sol in sols[:5]:
        for a, b in _link_segments(model, data, sol):
            assert _distance(obj.points, a, b) >= bh.LINK_R - 1e-6
    a, b = _link_segments(model, data, sols[0])[0]  # F1's inner link
    surface = np.vstack([obj.points, (a + b) / 2])
    try:
        again = bh.solve_fingers(pts, nrm, tri.centre, tri.normal, surface)
    except Unreachable as exc:
        assert "finger link" in str(exc)
        return
    assert not (
        again[0].assignment == sols[0].assignment
        and np.allclose(again[0].rotation, sols[0].rotation)
        and again[0].length == pytest.approx(sols[0].length)
    )
    for sol in again[:5]:
        for a, b in _link_segments(model, data, sol):
            assert _distance(surface, a, b) >= bh.LINK_R - 1e-6


def _lowest(model, data, sol) -> tuple[float, float]:
    """Lowest fingertip centre and lowest finger-link end (object frame z) from MuJoCo's
    frames: knuckle, inner joint, outer joint, TIP_R short of the tip centre."""
    _set(model, data, sol.spread, sol.inner)
    mujoco.mj_kinematics(model, data)
    tips, links = [], []
    for f in FINGERS:
        tip = data.site(f"bh_{f}_tip").xpos
        outer = data.body(f"bh_{f}_outer").xpos
        short = tip - bh.TIP_R * (tip - outer) / np.linalg.norm(tip - outer)
        ends = (data.body(f"bh_{f}_knuckle").xpos, data.body(f"bh_{f}_inner").xpos, outer, short)
        tips.append((sol.position + sol.rotation @ tip)[2])
        links += [(sol.position + sol.rotation @ p)[2] for p in ends]
    return min(tips), min(links)


def test_finger_heights_equal_mujoco_s_for_any_pose():
    """The vectorised heights the table check uses equal those from MuJoCo's frames (1e-9 m)
    over random joints, hand orientations and mounting-face heights."""
    model = load_barrett_spec().compile()
    data = mujoco.MjData(model)
    rng = np.random.default_rng(5)
    for _ in range(20):
        rot, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        rot *= np.linalg.det(rot)  # a rotation, not a reflection
        spread, inner, base = rng.uniform(0, math.pi), rng.uniform(0, 2.44, 3), rng.normal()
        sol = bh.FingerSolution(
            np.array([0.1, -0.2, base]),
            rot,
            0.0,
            spread,
            inner,
            np.zeros((3, 2)),
            np.zeros(3),
            (0, 1, 2),
            1,
        )
        tip_z, link_z = bh._finger_lows(
            np.array([[spread]]), inner[None, None], rot[None, 2], np.array([[base]])
        )
        np.testing.assert_allclose(
            [tip_z[0, 0], link_z[0, 0]], _lowest(model, data, sol), atol=1e-9
        )


def test_fingers_are_kept_above_the_table():
    """6 cm sphere resting on the table. The seed's tilted triangle (Q2 alone) reaches its
    lowest contact only with a finger under the sphere: every solution offered keeps the tips
    TIP_R + TABLE_CLEARANCE and the links LINK_R + TABLE_CLEARANCE above the table (MuJoCo's
    frames), or the grasp is refused naming the table. A table just under the equator refuses
    the horizontal grasp's fingertips, with that reason."""
    model = load_barrett_spec().compile()
    data = mujoco.MjData(model)
    obj = primitive("sphere", 0.06, 0.006)
    table = float(obj.points[:, 2].min())
    for up in (None, np.array([0.0, 0.0, 1.0])):
        tri = select_triangle(obj, 1.0, up=up, q2_tie=0.003)
        idx = list(tri.indices)
        try:
            sols = bh.solve_fingers(
                obj.points[idx], obj.normals[idx], tri.centre, tri.normal, obj.points, table
            )
        except Unreachable as exc:
            assert up is None and "into the table" in str(exc)
            continue
        for sol in sols:
            tip_z, link_z = _lowest(model, data, sol)
            assert tip_z >= table + bh.TIP_R + bh.TABLE_CLEARANCE - 1e-9
            assert link_z >= table + bh.LINK_R + bh.TABLE_CLEARANCE - 1e-9
    with pytest.raises(Unreachable, match="put a fingertip or finger link into the table"):
        bh.solve_fingers(
            obj.points[idx], obj.normals[idx], tri.centre, tri.normal, obj.points, -bh.TIP_R
        )


def test_object_too_big_for_the_hand_is_rejected_with_the_reason():
    obj = primitive("sphere", 0.3, 0.02)
    pts, nrm, tri = _grasp(obj)
    with pytest.raises(Unreachable, match=r"within 2° per joint .* smallest worst joint error"):
        bh.solve_fingers(pts, nrm, tri.centre, tri.normal, obj.points)


def test_hand_on_the_panda_reaches_a_pregrasp_on_a_tabletop_object():
    """Sphere of 8 cm resting on the table at (0.5, 0, 0): the arm puts the palm on the finger
    solution within 1 mm; fingertips then sit within 4 mm of their targets in the world, the
    palm above the table."""
    obj = primitive("sphere", 0.08, 0.006)
    pts, nrm, tri = _grasp(obj)
    where = bh.OBJECT_POS + np.array([0.0, 0.0, -obj.points[:, 2].min()])
    pre = bh.solve_barrett_pregrasp(pts, nrm, tri.centre, tri.normal, obj.points, where)
    assert pre.error < 1e-3
    model = load_robot_spec("panda_barrett").compile()
    data = mujoco.MjData(model)
    for name, q in zip(PANDA_ARM_JOINTS, pre.q, strict=True):
        data.qpos[model.joint(name).qposadr[0]] = q
    _set(model, data, pre.fingers.spread, pre.fingers.inner, PANDA_PREFIX)
    mujoco.mj_kinematics(model, data)
    targets = where + pts + bh.TIP_R * nrm
    for finger, contact in enumerate(pre.fingers.assignment):
        tip = data.site(f"{PANDA_PREFIX}bh_{FINGERS[finger]}_tip").xpos
        assert np.linalg.norm(tip - targets[contact]) < 0.004
    assert data.site(f"{PANDA_PREFIX}bh_palm").xpos[2] > 0.0


def _no_closing(net, fingers, law, cfg, progress):
    """Stands in for the closing simulation: these tests are about the pre-grasp only."""
    n = len(fingers)
    zero = np.zeros((n, 3))
    return ClosingResult(
        zero,
        np.ones(n),  # a squeeze, so that the force targets have a distribution to scale
        zero,
        net.x0,
        net.x0,
        np.zeros((n, 1)),
        np.zeros((1, 3)),
        0,
        0.0,
        0.0,
        1.0,
        0.0,
    )


def test_plan_reports_the_barrett_pregrasp(monkeypatch):
    monkeypatch.setattr("physai_ros.core.grasp_planning.plan.close", _no_closing)
    req = PlanRequest("barrett", 5e4, 0.3, MU, 0.05, cells=3)
    data = to_json(plan(primitive("sphere", 0.08, 0.006), req))
    assert data["pregrasp_note"].startswith("reached")
    assert data["pregrasp"]["hand"]["finger_contact"] == [0, 1, 2]
    hand = data["pregrasp"]["hand"]
    assert max(max(e) for e in hand["joint_errors_deg"]) <= 2.0
    assert len(data["pregrasp"]["joints_rad"]) == 7
    np.testing.assert_allclose(
        hand["outer_rad"], np.array(hand["inner_rad"]) * bh.COUPLING, atol=1e-5
    )


def _lowest_geom_points(model: mujoco.MjModel, data: mujoco.MjData) -> dict[str, float]:
    """World z [m] of the lowest point of each of the hand's geoms (spheres, capsules,
    cylinders), from MuJoCo's geom frames and sizes, by body name."""
    low: dict[str, float] = {}
    for g in range(model.ngeom):
        body = model.body(model.geom_bodyid[g]).name
        if not body.startswith(PANDA_PREFIX):
            continue
        radius, half = model.geom_size[g][:2]
        axis_z = abs(data.geom_xmat[g].reshape(3, 3)[2, 2])  # geom z axis: capsule/cylinder
        kind = model.geom_type[g]
        if kind == mujoco.mjtGeom.mjGEOM_SPHERE:
            drop = radius
        elif kind == mujoco.mjtGeom.mjGEOM_CAPSULE:
            drop = axis_z * half + radius
        elif kind == mujoco.mjtGeom.mjGEOM_CYLINDER:
            drop = axis_z * half + radius * math.sqrt(max(0.0, 1.0 - axis_z**2))
        else:
            raise AssertionError(f"unexpected geom type {kind} on {body}")
        low[body] = min(low.get(body, math.inf), float(data.geom_xpos[g][2] - drop))
    return low


def _hand_on_panda(result) -> tuple[mujoco.MjModel, mujoco.MjData]:
    """The Panda with the Barrett hand at a plan's arm and hand joints (kinematics only)."""
    model = load_robot_spec("panda_barrett").compile()
    data = mujoco.MjData(model)
    for name, q in zip(PANDA_ARM_JOINTS, result.pregrasp.q, strict=True):
        data.qpos[model.joint(name).qposadr[0]] = q
    fingers = result.pregrasp.fingers
    _set(model, data, fingers.spread, fingers.inner, PANDA_PREFIX)
    mujoco.mj_kinematics(model, data)
    return model, data


def test_planned_sphere_grasp_is_from_above_clear_of_the_table_and_per_finger(monkeypatch):
    """The grasp the Barrett hand is to execute: a 6 cm sphere (6 mm spacing, 3 cells, μ 1)
    on the table. The plan's triangle is within 5° of horizontal; with its arm and hand joints
    set on the Panda model, every hand geom's lowest point is above the table top (z = 0);
    contact i is finger F(i+1)'s (its tip within 4 mm of contact i + TIP_R · normal i), the
    closing model's finger i starts nearest contact i, and the object sits where the plan says."""
    seen: list = []

    def closing(net, fingers, law, cfg, progress):
        seen.extend(fingers)
        return _no_closing(net, fingers, law, cfg, progress)

    monkeypatch.setattr("physai_ros.core.grasp_planning.plan.close", closing)
    obj = primitive("sphere", 0.06, 0.006)
    result = plan(obj, PlanRequest("barrett", 5e4, 0.3, 1.0, 0.05, cells=3))
    lift = np.array([0.0, 0.0, -obj.points[:, 2].min()])
    np.testing.assert_allclose(result.object_position, bh.OBJECT_POS + lift, atol=1e-12)
    fingers = result.pregrasp.fingers
    np.testing.assert_allclose(
        result.pregrasp.position, result.object_position + fingers.position, atol=1e-12
    )
    assert abs(fingers.rotation[2, 2]) >= math.cos(math.radians(5.0))
    assert fingers.assignment == (0, 1, 2)
    model, data = _hand_on_panda(result)
    low = _lowest_geom_points(model, data)
    assert len(low) == 10 and min(low.values()) > 0.0, low  # palm + 3 × (knuckle, inner, outer)
    targets = result.object_position + result.contacts + bh.TIP_R * result.normals
    for i, f in enumerate(FINGERS):
        tip = data.site(f"{PANDA_PREFIX}bh_{f}_tip").xpos
        assert np.linalg.norm(tip - targets[i]) < 0.004
    assert len(seen) == 3
    for i, finger in enumerate(seen):
        assert np.argmin(np.linalg.norm(result.contacts - finger.start, axis=1)) == i


def test_a_level_triangle_out_of_reach_falls_back_to_the_least_q2_one(monkeypatch):
    """60 mm cube, μ 0.6: the most level triangle tied in Q2 is out of the fingers' reach
    (2.1° > 2°); the plan then takes the seed's least-Q2 triangle, tilted, with every hand
    geom still above the table in MuJoCo."""
    monkeypatch.setattr("physai_ros.core.grasp_planning.plan.close", _no_closing)
    obj = primitive("box", 0.06, 0.006)
    result = plan(obj, PlanRequest("barrett", 5e4, 0.3, MU, 0.05, cells=3))
    assert len(result.rejected) == 1 and "within 2° per joint" in result.rejected[0]
    assert "(the least-Q2 triangle)" in result.pregrasp_note
    assert result.q2 == select_triangle(obj, MU).q2
    low = _lowest_geom_points(*_hand_on_panda(result))
    assert min(low.values()) > 0.0, low


def test_plan_rejects_every_grasp_of_an_object_too_big(monkeypatch):
    monkeypatch.setattr("physai_ros.core.grasp_planning.plan.close", _no_closing)
    req = PlanRequest("barrett", 5e4, 0.3, MU, 0.05, cells=3)
    with pytest.raises(NoGrasp, match="no reachable grasp; rejected: barrett"):
        plan(primitive("sphere", 0.3, 0.06), req)


def test_without_the_table_preference_the_sphere_runs_out_of_grasps(monkeypatch):
    """Q2 alone (a zero tie tolerance) on the 6 cm sphere: each tilted triangle puts a finger
    into the table, the next-best ones are tried until the points run out, and the error
    gives the rejections' reasons, not only the last selection's."""
    monkeypatch.setattr("physai_ros.core.grasp_planning.plan.close", _no_closing)
    req = PlanRequest("barrett", 5e4, 0.3, 1.0, 0.05, cells=3, q2_tie=0.0)
    with pytest.raises(NoGrasp, match=r"rejected: barrett: .* into the table .*; then: "):
        plan(primitive("sphere", 0.06, 0.006), req)


def test_finger_ik_refuses_other_than_three_contacts():
    pts = np.zeros((2, 3))
    with pytest.raises(InvalidInput, match="need 3 contacts"):
        bh.solve_fingers(pts, pts, np.zeros(3), np.array([0.0, 0.0, 1.0]), pts)
