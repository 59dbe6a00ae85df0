"""Objects (primitives, meshes, point clouds, PointCloud2 bytes), pre-grasp, the whole plan, CLI.

Referees: exact normals of primitives, a unit cube written by hand as STL/OBJ, bytes packed by
hand the way a depth camera driver packs them, independent forward kinematics of the pre-grasp
(MuJoCo on a fresh MjData).
"""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from physai_ros.cli import main
from physai_ros.core.grasp_planning.closing import ClosingConfig
from physai_ros.core.grasp_planning.contacts import NoGrasp, select_pair
from physai_ros.core.grasp_planning.objects import (
    SHAPES,
    from_mesh,
    from_point_cloud,
    primitive,
)
from physai_ros.core.grasp_planning.plan import PlanRequest, force_targets, plan, to_json
from physai_ros.core.grasp_planning.point_cloud2 import FLOAT32, points_from_cloud2
from physai_ros.core.grasp_planning.pregrasp import (
    POS_TOL,
    Unreachable,
    arm_spec,
    so101_tilt,
    solve_pregrasp,
)
from physai_ros.core.pick.grip import G
from physai_ros.errors import InvalidInput

CUBE_V = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], float) - 0.5
CUBE_F = [
    (0, 1, 3),
    (0, 3, 2),
    (4, 6, 7),
    (4, 7, 5),
    (0, 4, 5),
    (0, 5, 1),
    (2, 3, 7),
    (2, 7, 6),
    (0, 2, 6),
    (0, 6, 4),
    (1, 5, 7),
    (1, 7, 3),
]


@pytest.mark.parametrize("shape", SHAPES)
def test_primitive_points_lie_on_the_surface_with_outward_normals(shape):
    obj = primitive(shape, 0.05, 0.004)
    assert np.allclose(np.linalg.norm(obj.normals, axis=1), 1.0)
    assert np.all(obj.contains(obj.points - 1e-4 * obj.normals))
    assert not np.any(obj.contains(obj.points + 1e-4 * obj.normals))


def test_density_is_a_parameter():
    assert len(primitive("sphere", 0.05, 0.002).points) > 3.5 * len(
        primitive("sphere", 0.05, 0.004).points
    )


def _write_stl(path, scale=1.0, binary=True):
    tri = CUBE_V[np.array(CUBE_F)] * scale
    if binary:
        data = b"\0" * 80 + struct.pack("<I", len(tri))
        for t in tri:
            data += struct.pack("<12fH", 0, 0, 0, *t.ravel(), 0)
        path.write_bytes(data)
    else:
        lines = ["solid cube"]
        for t in tri:
            lines += ["facet normal 0 0 0", "outer loop"]
            lines += [f"vertex {a} {b} {c}" for a, b, c in t]
            lines += ["endloop", "endfacet"]
        path.write_text("\n".join([*lines, "endsolid cube"]))


@pytest.mark.parametrize("kind", ["binary.stl", "ascii.stl", "cube.obj"])
def test_mesh_files_give_the_cube(tmp_path, kind):
    path = tmp_path / kind
    if kind.endswith(".obj"):
        verts = "\n".join(f"v {x + 0.5} {y + 0.5} {z + 0.5}" for x, y, z in CUBE_V * 40)
        faces = "\n".join(f"f {a + 1} {b + 1} {c + 1}" for a, b, c in CUBE_F)
        path.write_text(verts + "\n" + faces + "\n")
        obj = from_mesh(path, 0.002, scale=0.001)  # millimetres
    else:
        _write_stl(path, 0.04, binary=kind.startswith("binary"))
        obj = from_mesh(path, 0.002)
    assert np.allclose(np.abs(obj.points).max(axis=0), 0.02, atol=1e-9)
    # outward: a normal points along the coordinate the point is extreme in
    k = np.argmax(np.abs(obj.points), axis=1)
    rows = np.arange(len(k))
    assert np.all(np.sign(obj.normals[rows, k]) == np.sign(obj.points[rows, k]))


def test_bad_mesh_and_cloud_inputs(tmp_path):
    with pytest.raises(InvalidInput, match="not found"):
        from_mesh(tmp_path / "missing.stl", 0.01)
    (tmp_path / "x.ply").write_text("ply")
    with pytest.raises(InvalidInput, match=r"\.stl or \.obj"):
        from_mesh(tmp_path / "x.ply", 0.01)
    with pytest.raises(InvalidInput, match="need more"):
        from_point_cloud(np.zeros((5, 3)))


def test_point_cloud_normals_match_the_sphere():
    sphere = primitive("sphere", 0.06, 0.003)
    cloud = from_point_cloud(sphere.points + np.array([0.3, 0.1, 0.05]))
    assert np.all(np.einsum("ij,ij->i", cloud.normals, sphere.normals) > 0.99)


def test_pointcloud2_bytes_with_padding_and_nan():
    pts = np.array([[0.1, 0.2, 0.3], [np.nan, 0.0, 0.0], [-1.0, 2.0, 3.5]], np.float32)
    step = 16  # x, y, z float32 + 4 bytes of rgb
    data = b"".join(struct.pack("<3f", *p) + b"\x01\x02\x03\x04" for p in pts)
    fields = {"x": (0, FLOAT32), "y": (4, FLOAT32), "z": (8, FLOAT32), "rgb": (12, 6)}
    out = points_from_cloud2(data, fields, step, width=3)
    assert np.allclose(out, pts[[0, 2]])
    big = b"".join(struct.pack(">3f", *p) + b"\0" * 4 for p in pts)
    assert np.allclose(points_from_cloud2(big, fields, step, 3, is_bigendian=True), pts[[0, 2]])
    with pytest.raises(InvalidInput, match="lacks"):
        points_from_cloud2(data, {"x": (0, FLOAT32)}, step, 3)
    with pytest.raises(InvalidInput, match="bytes"):
        points_from_cloud2(data[:-1], fields, step, 3)


@pytest.mark.ros  # sensor_msgs
def test_pointcloud2_message_adapter():
    from sensor_msgs.msg import PointCloud2, PointField

    from physai_ros.core.grasp_planning.point_cloud2 import points_from_msg

    pts = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], np.float32)
    msg = PointCloud2(
        height=1,
        width=2,
        point_step=12,
        row_step=24,
        is_bigendian=False,
        fields=[
            PointField(name=n, offset=4 * i, datatype=FLOAT32, count=1) for i, n in enumerate("xyz")
        ],
        data=pts.tobytes(),
    )
    assert np.allclose(points_from_msg(msg), pts)


@pytest.mark.parametrize(("robot", "size"), [("panda", 0.05), ("so101", 0.03)])
def test_pregrasp_puts_the_tool_on_the_grasp(robot, size):
    import mujoco

    from physai_ros.models import load_robot_spec

    spec = arm_spec(robot)
    obj = primitive("box", size, 0.004)
    pair = select_pair(obj, 0.5, spec.jaw)
    centre = obj.points[list(pair.indices)].mean(axis=0) + np.array([0, 0, size / 2])
    pre = solve_pregrasp(spec, centre, pair.axis)
    mj = load_robot_spec(robot)
    mj.body(spec.tcp_body).add_site(name="tcp", pos=list(spec.tcp_pos))
    model = mj.compile()
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, 0) if model.nkey else None
    for name, q in zip(spec.joints, pre.q, strict=True):
        data.qpos[model.joint(name).qposadr[0]] = q
    mujoco.mj_kinematics(model, data)
    assert np.linalg.norm(data.site_xpos[model.site("tcp").id] - pre.position) < POS_TOL
    close_world = data.site_xmat[model.site("tcp").id].reshape(3, 3) @ spec.close_axis
    assert abs(close_world @ pair.axis) > np.cos(np.radians(2.0))


def test_unreachable_pregrasp_is_rejected_with_the_reason():
    spec = arm_spec("so101")
    with pytest.raises(Unreachable, match="no arm configuration"):
        solve_pregrasp(spec, np.array([1.5, 0.0, 0.3]), np.array([0.0, 1.0, 0.0]))


def test_so101_jaw_tilts_with_its_opening():
    assert so101_tilt(np.array([0.0163]))[0] == pytest.approx(0.0, abs=0.02)
    assert so101_tilt(np.array([0.055]))[0] == pytest.approx(0.5, abs=0.05)


def test_plan_for_the_panda_end_to_end():
    obj = primitive("box", 0.04, 0.0044)  # 9 × 9 points a face: one at each face centre
    req = PlanRequest("panda", 5e4, 0.3, 0.6, 0.05, cells=4)
    result = plan(obj, req)
    data = json.loads(json.dumps(to_json(result)))
    assert data["pregrasp"] is not None and data["force_closure"]
    assert len(data["force_targets_N"]) == 2 and min(data["force_targets_N"]) > 0
    # μ Σsqueeze / (m g): below 1 because the 10 mm tips' normals also lift (the law with
    # that share is checked in test_grasp_planning_model.py) ...
    assert 0.7 < data["cone_ratio"] < 1.0
    # ... so the targets are the simulated squeeze raised, in proportion, to lesson 16's law
    # μ Σ targets = margin × m (g + a) (flat pads have no upward share; the lift accelerates)
    targets, simulated = np.array(data["force_targets_N"]), np.array(data["simulated_squeeze_N"])
    assert data["force_target_basis"] == "friction floor"
    assert 0.6 * targets.sum() == pytest.approx(1.2 * 0.05 * (G + 0.5), rel=1e-4)
    assert np.all(targets > simulated)
    assert targets / targets.sum() == pytest.approx(simulated / simulated.sum(), rel=1e-4)


def test_force_targets_keep_a_simulated_squeeze_above_the_floor():
    squeeze = np.array([2.0, 3.0])
    targets, basis = force_targets(squeeze, mu=0.6, mass=0.05, g=G, accel=0.5, margin=1.2)
    assert basis == "simulated" and targets.tolist() == [2.0, 3.0]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"young": 0.0}, "Young"),
        ({"poisson": 0.5}, "Poisson"),
        ({"hand": "gripper"}, "hand"),
        ({"mass": -1.0}, "mass"),
        ({"mu": 0.0}, "mu"),
        ({"lift_accel": -1.0}, "lift_accel"),
        ({"force_margin": 0.9}, "force_margin"),
        ({"q2_tie": -0.001}, "q2_tie"),
    ],
)
def test_plan_refuses_bad_input(kwargs, match):
    base = {"hand": "panda", "young": 5e4, "poisson": 0.3, "mu": 0.6, "mass": 0.05}
    with pytest.raises(InvalidInput, match=match):
        plan(primitive("box", 0.04, 0.01), PlanRequest(**{**base, **kwargs}))


def test_plan_reports_no_grasp_in_band():
    req = PlanRequest("barrett", 5e4, 0.3, 0.5, 0.05, closing=ClosingConfig(max_steps=2))
    with pytest.raises(NoGrasp, match="band"):
        plan(primitive("box", 0.04, 0.01), req)


@pytest.mark.slow
def test_cli_plan_json_and_help(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    assert "--young" in capsys.readouterr().out
    code = main(
        [
            "plan",
            "--object",
            "box",
            "--size",
            "0.04",
            "--hand",
            "panda",
            "--cells",
            "4",
            "--json",
            "--output",
            str(tmp_path),
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and (tmp_path / "plan_panda_box.png").is_file()
    assert data["picture"].endswith(".png")
    assert main(["plan", "--object", "box", "--young", "-1", "--json"]) == 2
