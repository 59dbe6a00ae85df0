"""Embedded robot models, the loader and the scene builder.

Parity with the Menagerie reference (``shared_models``): every body, site and camera frame over
random joint configurations, and the numbers that make the dynamics (masses, inertias, servo
gains, force limits, damping, armature, friction loss, ranges, jaw pad friction). The embedded
files replace meshes by primitives; nothing else may differ.
"""

from __future__ import annotations

import math
from pathlib import Path

import mujoco
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from physai_ros.errors import InvalidInput, ModelError
from physai_ros.models import load_robot_model, load_robot_spec
from physai_ros.models.joints import SO101_JOINTS
from physai_ros.sim.scene import (
    CUBE_BODY,
    CUBE_GEOM,
    CUBE_JOINT,
    build_scene,
    build_scene_spec,
    scene_preset,
)

ROBOT_DIRS = {"so101": "robotstudio_so101", "panda": "franka_emika_panda"}
N_CONFIGS = 200  # random joint configurations per robot (the brief asks for >= 100)
POS_TOL = 1e-6  # [m] frame position parity with the reference
ROT_TOL = 1e-6  # [rad] frame orientation parity with the reference
REL_TOL = 1e-12  # model numbers are written at full precision: equal up to float rounding


def reference(shared_models: Path, robot: str) -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_path(str(shared_models / ROBOT_DIRS[robot] / f"{robot}.xml"))


def frames(model: mujoco.MjModel, data: mujoco.MjData) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """World pose (position, rotation matrix) of every named body, site and camera."""
    out = {}
    for i in range(1, model.nbody):
        out["body " + model.body(i).name] = (data.xpos[i], data.xmat[i].reshape(3, 3))
    for i in range(model.nsite):
        out["site " + model.site(i).name] = (data.site_xpos[i], data.site_xmat[i].reshape(3, 3))
    for i in range(model.ncam):
        out["camera " + model.cam(i).name] = (data.cam_xpos[i], data.cam_xmat[i].reshape(3, 3))
    return {k: (p.copy(), r.copy()) for k, (p, r) in out.items()}


def random_configs(model: mujoco.MjModel, n: int, seed: int = 0) -> np.ndarray:
    """Joint configurations uniform inside the joint ranges (all joints are limited here)."""
    rng = np.random.default_rng(seed)
    return rng.uniform(model.jnt_range[:, 0], model.jnt_range[:, 1], size=(n, model.njnt))


@pytest.mark.parametrize("robot", ["so101", "panda"])
def test_frames_match_reference(shared_models: Path, robot: str) -> None:
    ours, ref = load_robot_model(robot), reference(shared_models, robot)
    assert [ours.joint(i).name for i in range(ours.njnt)] == [
        ref.joint(i).name for i in range(ref.njnt)
    ]
    data_ours, data_ref = mujoco.MjData(ours), mujoco.MjData(ref)
    worst_pos = worst_rot = 0.0
    for q in random_configs(ref, N_CONFIGS):
        for model, data in ((ours, data_ours), (ref, data_ref)):
            data.qpos[:] = q
            mujoco.mj_kinematics(model, data)
            mujoco.mj_camlight(model, data)  # cameras are placed here, not in mj_kinematics
        got, want = frames(ours, data_ours), frames(ref, data_ref)
        assert set(want) <= set(got), f"missing frames: {sorted(set(want) - set(got))}"
        for name, (pos, rot) in want.items():
            worst_pos = max(worst_pos, float(np.abs(got[name][0] - pos).max()))
            angle = Rotation.from_matrix(got[name][1].T @ rot).magnitude()
            worst_rot = max(worst_rot, float(angle))
    assert worst_pos < POS_TOL, worst_pos
    assert worst_rot < ROT_TOL, worst_rot


@pytest.mark.parametrize("robot", ["so101", "panda"])
def test_dynamics_numbers_match_reference(shared_models: Path, robot: str) -> None:
    ours, ref = load_robot_model(robot), reference(shared_models, robot)
    fields = [
        "body_mass", "body_inertia", "body_ipos", "jnt_range", "jnt_axis", "jnt_pos",
        "dof_damping", "dof_armature", "dof_frictionloss", "actuator_gainprm",
        "actuator_biasprm", "actuator_forcerange", "actuator_ctrlrange", "actuator_gear",
        "actuator_trntype", "actuator_gaintype", "actuator_biastype", "tendon_num", "wrap_prm",
        "eq_solref", "eq_solimp", "key_qpos", "key_ctrl",
    ]  # fmt: skip
    for field in fields:
        np.testing.assert_allclose(
            getattr(ours, field), getattr(ref, field), rtol=REL_TOL, atol=1e-15, err_msg=field
        )
    for option in ("timestep", "integrator", "cone", "impratio", "iterations", "ls_iterations"):
        assert getattr(ours.opt, option) == getattr(ref.opt, option), option


@pytest.mark.parametrize("robot", ["so101", "panda"])
def test_mass_matrix_and_gravity_match_reference(shared_models: Path, robot: str) -> None:
    """Same inertias and frames => same M(q) and bias forces (gravity + Coriolis) everywhere."""
    ours, ref = load_robot_model(robot), reference(shared_models, robot)
    rng = np.random.default_rng(1)
    datas = mujoco.MjData(ours), mujoco.MjData(ref)
    for q in random_configs(ref, 20, seed=1):
        qvel = rng.normal(size=ref.nv)
        out = []
        for model, data in zip((ours, ref), datas, strict=True):
            data.qpos[:], data.qvel[:] = q, qvel
            mujoco.mj_forward(model, data)
            full = np.zeros((model.nv, model.nv))
            mujoco.mj_fullM(model, data, full)
            out.append((full, data.qfrc_bias.copy()))
        np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-9, atol=1e-15)
        np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-9, atol=1e-12)


def pad_geoms(model: mujoco.MjModel, robot: str) -> list[int]:
    """Jaw contact pads: named jaw/camera geoms (SO-101), fingertip pad boxes (Panda)."""
    if robot == "so101":
        prefixes = (
            "fixed_jaw_box",
            "fixed_jaw_sph",
            "moving_jaw_box",
            "moving_jaw_sph",
            "camera_box",
        )
        return [i for i in range(model.ngeom) if model.geom(i).name.startswith(prefixes)]
    fingers = {model.body("left_finger").id, model.body("right_finger").id}
    return [
        i
        for i in range(model.ngeom)
        if model.geom_bodyid[i] in fingers
        and model.geom_group[i] == 3
        and model.geom_type[i] == mujoco.mjtGeom.mjGEOM_BOX
    ]


@pytest.mark.parametrize("robot", ["so101", "panda"])
def test_jaw_pads_match_reference(shared_models: Path, robot: str) -> None:
    ours, ref = load_robot_model(robot), reference(shared_models, robot)
    mine, theirs = pad_geoms(ours, robot), pad_geoms(ref, robot)
    assert len(mine) == len(theirs) > 0
    for field in (
        "geom_friction",
        "geom_priority",
        "geom_condim",
        "geom_solref",
        "geom_size",
        "geom_pos",
        "geom_quat",
        "geom_type",
    ):
        np.testing.assert_allclose(
            getattr(ours, field)[mine], getattr(ref, field)[theirs], rtol=1e-7, err_msg=field
        )


def test_so101_names_camera_and_timestep() -> None:
    model = load_robot_model("so101")
    assert [model.joint(i).name for i in range(model.njnt)] == list(SO101_JOINTS)
    assert [model.actuator(i).name for i in range(model.nu)] == list(SO101_JOINTS)
    assert model.site("gripperframe").id >= 0
    assert model.cam_fovy[model.cam("wrist_cam").id] == pytest.approx(61.0)
    # The lessons' pinhole: f = (H/2) / tan(fovy/2) = 407.4 px at 640x480.
    assert 240 / math.tan(math.radians(61.0) / 2) == pytest.approx(407.4, abs=0.05)
    assert model.opt.timestep == pytest.approx(0.005)
    assert load_robot_model("panda").opt.timestep == pytest.approx(0.002)


def test_panda_home_keyframe() -> None:
    model = load_robot_model("panda")
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    assert data.qpos[3] == pytest.approx(-1.57079) and data.qpos[7] == pytest.approx(0.04)
    assert model.nu == 8 and model.njnt == 9


def test_loader_accepts_menagerie_layouts(shared_models: Path) -> None:
    """Each layout loads the reference itself (its meshes, not the embedded primitives), with
    what the package relies on: the joints and actuators by name, the gripper body, the jaw,
    the TCP site and the wrist camera, and the reference's masses (0.644 kg in all)."""
    ref = reference(shared_models, "so101")
    for path in (
        shared_models,
        shared_models / "robotstudio_so101",
        shared_models / "robotstudio_so101" / "so101.xml",
    ):
        model = load_robot_spec("so101", path).compile()
        assert [model.joint(i).name for i in range(model.njnt)] == list(SO101_JOINTS), path
        assert [model.actuator(i).name for i in range(model.nu)] == list(SO101_JOINTS), path
        for body in ("gripper", "moving_jaw_so101_v1"):
            assert model.body(body).id > 0, (path, body)
        assert model.site("gripperframe").id >= 0 and model.cam("wrist_cam").id >= 0, path
        assert model.nmesh == ref.nmesh > 0, path  # the reference's meshes, not primitives
        np.testing.assert_allclose(model.body_mass, ref.body_mass, rtol=REL_TOL, err_msg=path)
        assert model.body_mass.sum() == pytest.approx(0.644, abs=1e-3), path


def test_loader_errors(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="valid choices"):
        load_robot_spec("ur5")
    with pytest.raises(ModelError, match="looked for") as missing:
        load_robot_spec("so101", tmp_path)
    assert str(tmp_path / "so101.xml") in str(missing.value)
    assert str(tmp_path / "robotstudio_so101" / "so101.xml") in str(missing.value)
    (tmp_path / "so101.xml").write_text(
        "<mujoco><worldbody><geom type='mesh' mesh='nope'/></worldbody></mujoco>"
    )
    with pytest.raises(ModelError, match="does not load"):
        load_robot_spec("so101", tmp_path)
    (tmp_path / "so101.xml").write_text(
        "<mujoco><worldbody><body><joint name='gripper'/><geom size='0.1'/></body>"
        "</worldbody></mujoco>"
    )
    with pytest.raises(ModelError, match=r"lacks .*shoulder_pan"):
        load_robot_spec("so101", tmp_path)


# --- scene builder -------------------------------------------------------------------------


def test_scene_defaults_mirror_lesson16() -> None:
    model = build_scene("so101")
    cube = model.geom(CUBE_GEOM).id
    assert model.opt.timestep == pytest.approx(0.002)
    assert (
        model.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC
    )  # the robot file's solver options are kept
    assert model.body_mass[model.body(CUBE_BODY).id] == pytest.approx(0.03)
    np.testing.assert_allclose(model.geom_size[cube], [0.015] * 3)
    np.testing.assert_allclose(model.geom_friction[cube], [1.0, 0.03, 0.003])
    assert (model.geom_condim[cube], model.geom_priority[cube]) == (4, 2)
    np.testing.assert_allclose(
        model.actuator_forcerange[model.actuator("gripper").id], [-2.94, 2.94]
    )
    # Robot qpos first, unchanged; the cube's free joint after it.
    assert model.nq == 6 + 7 and model.body("base").id == 1
    assert model.jnt_type[model.joint(CUBE_JOINT).id] == mujoco.mjtJoint.mjJNT_FREE


def test_scene_jaw_parameters() -> None:
    model = build_scene("so101", jaw_mu=0.4, jaw_torque_cap=0.5, cube_mu=0.05, cube_mass=0.2)
    jaws = {model.body("gripper").id, model.body("moving_jaw_so101_v1").id}
    pads = [i for i in range(model.ngeom) if model.geom_bodyid[i] in jaws and model.geom_contype[i]]
    assert len(pads) >= 10
    assert set(model.geom_priority[pads]) == {1}
    np.testing.assert_allclose(model.geom_friction[pads, 0], 0.4)
    np.testing.assert_allclose(model.actuator_forcerange[model.actuator("gripper").id], [-0.5, 0.5])
    assert model.geom_friction[model.geom(CUBE_GEOM).id, 0] == pytest.approx(0.05)
    assert model.body_mass[model.body(CUBE_BODY).id] == pytest.approx(0.2)
    with pytest.raises(InvalidInput, match="cube_mass"):
        build_scene("so101", cube_mass=-1.0)
    with pytest.raises(InvalidInput, match="cube_pos"):
        build_scene("so101", cube_pos=[0.1])


@pytest.mark.parametrize("use_reference", [False, True])
def test_lesson07_placement(shared_models: Path, use_reference: bool) -> None:
    """Base at (0.10, -0.05, 0) yawed 30 deg; cube at base (0.22, 0, 0.015).

    The lesson prints the cube at world (0.2905, 0.0600, 0.015).
    """
    kwargs = scene_preset("lesson07")
    robot = kwargs.pop("robot")
    model = build_scene(robot, model_path=shared_models if use_reference else None, **kwargs)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    base, cube = model.body("base").id, model.body(CUBE_BODY).id
    np.testing.assert_allclose(
        data.xpos[cube], [0.2905, 0.0600, 0.015], atol=5e-5
    )  # lesson prints 0.1 mm
    T_world_base = np.eye(4)
    T_world_base[:3, :3], T_world_base[:3, 3] = data.xmat[base].reshape(3, 3), data.xpos[base]
    cube_in_base = np.linalg.solve(T_world_base, np.append(data.xpos[cube], 1.0))[:3]
    np.testing.assert_allclose(cube_in_base, [0.22, 0.0, 0.015], atol=1e-12)
    assert math.degrees(math.atan2(T_world_base[1, 0], T_world_base[0, 0])) == pytest.approx(30.0)


@pytest.mark.parametrize("robot", ["so101", "panda"])
def test_cube_rests_on_table(robot: str) -> None:
    """Gravity against the table: the cube settles at z = size/2 and stays where it was put."""
    model = build_scene(robot)
    data = mujoco.MjData(model)
    if robot == "panda":
        mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    cube = model.body(CUBE_BODY).id
    start = model.body_pos[cube].copy()
    for _ in range(int(0.5 / model.opt.timestep)):
        mujoco.mj_step(model, data)
    assert data.xpos[cube][2] == pytest.approx(0.015, abs=1e-3)  # soft contact sinks < 1 mm
    np.testing.assert_allclose(data.xpos[cube][:2], start[:2], atol=1e-4)


def test_scene_with_reference_model_keeps_its_meshes(shared_models: Path) -> None:
    spec = build_scene_spec("so101", model_path=shared_models / "robotstudio_so101")
    model = spec.compile()
    assert model.nmesh > 0 and model.cam_fovy[model.cam("wrist_cam").id] > 0
    assert model.geom_friction[model.geom(CUBE_GEOM).id, 0] == pytest.approx(1.0)


@pytest.mark.parametrize("use_reference", [False, True])
def test_panda_grasp_site_lies_between_the_fingertip_pads(
    shared_models: Path, use_reference: bool
) -> None:
    """The pick's grasp site, added to ours and to the reference (Menagerie) Panda alike: midway
    between the two fingers' large pads at any opening, its x axis along the hand's approach
    (the hand's z) and its z axis from the left finger towards the right one."""
    path = shared_models / "franka_emika_panda" if use_reference else None
    model = load_robot_spec("panda", path).compile()
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    mujoco.mj_forward(model, data)
    site = model.site("grasp_site").id
    pads = []
    for finger in ("left_finger", "right_finger"):
        body = model.body(finger).id
        boxes = [
            g
            for g in range(model.ngeom)
            if model.geom_bodyid[g] == body
            and model.geom_type[g] == mujoco.mjtGeom.mjGEOM_BOX
            and max(model.geom_size[g]) < 0.01  # pads, not the finger's own box
        ]
        pad = max(boxes, key=lambda g: model.geom_size[g][0])  # the large pad (17 mm square)
        pads.append(data.geom_xpos[pad])
    np.testing.assert_allclose(data.site_xpos[site], (pads[0] + pads[1]) / 2.0, atol=1e-3)
    axes = data.site_xmat[site].reshape(3, 3)
    hand = data.xmat[model.body("hand").id].reshape(3, 3)
    np.testing.assert_allclose(axes[:, 0], hand[:, 2], atol=1e-9)
    toward_right = (pads[1] - pads[0]) / np.linalg.norm(pads[1] - pads[0])
    np.testing.assert_allclose(axes[:, 2], toward_right, atol=1e-3)
