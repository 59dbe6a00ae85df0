"""URDF export: forward kinematics through the URDF (yourdfpy, an independent implementation)
equals MuJoCo's frames, limits come from the limits files and the actuators, and the checked-in
``urdf/*.urdf`` equal freshly generated output."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest
import yourdfpy

from physai_ros.core.motion.limits import load_gripper_limits, load_limits
from physai_ros.errors import ModelError
from physai_ros.export.urdf import OPTICAL_SUFFIX, generate_urdf, main, urdf_from_model
from physai_ros.models import load_robot_model

REPO_ROOT = Path(__file__).resolve().parents[1]
FK_TOL = 1e-9  # [m] and [-] (rotation-matrix entries): URDF numbers are written at full precision
N_CONFIGS = 100  # random joint configurations per robot
ROOTS = {"so101": "base", "panda": "link0"}
MUJOCO_TO_OPTICAL = np.diag([1.0, -1.0, -1.0])  # (x, y, z)_mujoco = (x, -y, -z)_optical


def load_urdf(text: str, tmp_path: Path) -> yourdfpy.URDF:
    path = tmp_path / "robot.urdf"
    path.write_text(text, encoding="utf-8")
    return yourdfpy.URDF.load(
        str(path), build_collision_scene_graph=False, load_meshes=False, load_collision_meshes=False
    )


def mujoco_frames(model: mujoco.MjModel, data: mujoco.MjData) -> dict[str, np.ndarray]:
    """4x4 world pose of every body, site, camera and camera optical frame, by URDF link name."""
    poses = {}

    def put(name: str, pos: np.ndarray, mat: np.ndarray) -> None:
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = mat.reshape(3, 3), pos
        poses[name] = T

    for i in range(1, model.nbody):
        put(model.body(i).name, data.xpos[i], data.xmat[i])
    for i in range(model.nsite):
        put(model.site(i).name, data.site_xpos[i], data.site_xmat[i])
    for i in range(model.ncam):
        put(model.cam(i).name, data.cam_xpos[i], data.cam_xmat[i])
        put(
            model.cam(i).name + OPTICAL_SUFFIX,
            data.cam_xpos[i],
            data.cam_xmat[i].reshape(3, 3) @ MUJOCO_TO_OPTICAL,
        )
    return poses


def fk_error(model: mujoco.MjModel, urdf: yourdfpy.URDF, root: str, n: int, seed: int = 0) -> float:
    """Largest |URDF - MuJoCo| over all frames and ``n`` random in-range configurations (a mimic
    joint set from its master, as the URDF computes it; its coupling is tested on its own)."""
    rng = np.random.default_rng(seed)
    data = mujoco.MjData(model)
    lo = np.where(model.jnt_limited, model.jnt_range[:, 0], -np.pi)
    hi = np.where(model.jnt_limited, model.jnt_range[:, 1], np.pi)
    mimics = [j for j in urdf.robot.joints if j.mimic is not None]
    worst = 0.0
    for _ in range(n):
        q = rng.uniform(lo, hi)
        for joint in mimics:
            master = q[model.joint(joint.mimic.joint).id]
            q[model.joint(joint.name).id] = joint.mimic.multiplier * master + joint.mimic.offset
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        mujoco.mj_camlight(model, data)
        urdf.update_cfg({model.joint(j).name: q[j] for j in range(model.njnt)})
        frames = mujoco_frames(model, data)
        assert set(frames) <= set(urdf.link_map), sorted(set(frames) - set(urdf.link_map))
        for name, T in frames.items():
            worst = max(worst, float(np.abs(urdf.get_transform(name, root) - T).max()))
    return worst


@pytest.mark.parametrize("robot", ["so101", "panda"])
def test_checked_in_urdf_is_fresh(robot: str) -> None:
    checked_in = (REPO_ROOT / "urdf" / f"{robot}.urdf").read_text(encoding="utf-8")
    assert checked_in == generate_urdf(robot), (
        f"urdf/{robot}.urdf is stale; regenerate it with "
        f"python -m physai_ros.export.urdf --robot {robot} --output urdf/{robot}.urdf"
    )


@pytest.mark.parametrize("robot", ["so101", "panda"])
def test_urdf_forward_kinematics_matches_mujoco(robot: str, tmp_path: Path) -> None:
    model = load_robot_model(robot)
    urdf = load_urdf(generate_urdf(robot), tmp_path)
    assert fk_error(model, urdf, ROOTS[robot], N_CONFIGS) < FK_TOL


@pytest.mark.parametrize("robot", ["so101", "panda"])
def test_urdf_joints_inertials_and_limits(robot: str, tmp_path: Path) -> None:
    model = load_robot_model(robot)
    urdf = load_urdf(generate_urdf(robot), tmp_path)
    mimic = {j.name for j in urdf.robot.joints if j.mimic is not None}
    assert mimic == {"panda": {"finger_joint2"}, "so101": set()}[robot]  # SO-101: one jaw joint
    names = [model.joint(j).name for j in range(model.njnt)]
    assert urdf.actuated_joint_names == [n for n in names if n not in mimic]
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    urdf.update_cfg(np.zeros(len(urdf.actuated_joint_names)))
    for b in range(1, model.nbody):
        link = urdf.link_map[model.body(b).name]
        if model.body_mass[b] == 0.0:
            assert link.inertial is None
            continue
        assert link.inertial.mass == pytest.approx(model.body_mass[b], rel=1e-15)
        com = urdf.get_transform(link.name, ROOTS[robot]) @ link.inertial.origin
        np.testing.assert_allclose(com[:3, 3], data.xipos[b], atol=FK_TOL)
        np.testing.assert_allclose(com[:3, :3], data.ximat[b].reshape(3, 3), atol=FK_TOL)
        np.testing.assert_allclose(
            np.diag(link.inertial.inertia), model.body_inertia[b], rtol=1e-15
        )
    for j in range(model.njnt):
        joint = urdf.joint_map[model.joint(j).name]
        np.testing.assert_allclose([joint.limit.lower, joint.limit.upper], model.jnt_range[j])
        assert joint.limit.effort > 0 and joint.limit.velocity > 0
    if robot == "so101":
        assert urdf.joint_map["gripper"].limit.effort == pytest.approx(2.94)  # STS3215 stall torque
    else:  # actuator8 (100 N) pulls the tendon 0.5 q1 + 0.5 q2: 50 N on each finger
        assert urdf.joint_map["finger_joint2"].limit.effort == pytest.approx(50.0)


@pytest.mark.parametrize("robot", ["so101", "panda"])
def test_urdf_limits_agree_with_the_limits_file(robot: str, tmp_path: Path) -> None:
    """<limit velocity> is the limits file's default set and gripper block (what MoveIt and the
    trajectory checks use); <limit effort>, read from the actuators' force range, is the file's
    torque. Every movable joint gets its speed from the file."""
    limits = load_limits(robot)
    urdf = load_urdf(generate_urdf(robot), tmp_path)
    for name, velocity, torque in zip(
        limits.joint_names, limits.velocity, limits.torque, strict=True
    ):
        assert urdf.joint_map[name].limit.velocity == velocity, name
        assert urdf.joint_map[name].limit.effort == pytest.approx(torque), name
    gripper = load_gripper_limits(robot)
    for name, (velocity, _) in gripper.items():
        assert urdf.joint_map[name].limit.velocity == velocity, name
    movable = {j.name for j in urdf.robot.joints if j.type != "fixed"}
    assert movable == set(limits.joint_names) | set(gripper)


def test_camera_optical_frame_convention(tmp_path: Path) -> None:
    """Optical +z is the viewing direction (MuJoCo -z), optical +y points down (MuJoCo -y)."""
    model = load_robot_model("so101")
    urdf = load_urdf(generate_urdf("so101"), tmp_path)
    urdf.update_cfg(np.zeros(model.njnt))
    cam = urdf.get_transform("wrist_cam", "base")
    optical = urdf.get_transform("wrist_cam" + OPTICAL_SUFFIX, "base")
    np.testing.assert_allclose(optical[:3, 3], cam[:3, 3], atol=1e-15)
    np.testing.assert_allclose(optical[:3, 2], -cam[:3, 2], atol=1e-15)
    np.testing.assert_allclose(optical[:3, 1], -cam[:3, 1], atol=1e-15)
    np.testing.assert_allclose(optical[:3, 0], cam[:3, 0], atol=1e-15)


ANCHOR_MJCF = """
<mujoco>
  <worldbody>
    <body name="root" pos="0.1 0.2 0.3" euler="0.1 0.2 0.3">
      <geom type="capsule" size="0.02 0.05" pos="0.01 0 0" euler="0.3 0 0"/>
      <body name="arm" pos="0 0 0.2" quat="0.9 0.1 0.3 -0.2">
        <joint name="hinge" axis="0.3 0.4 0.5" pos="0.05 -0.02 0.01" range="-2 2"/>
        <geom type="cylinder" size="0.02 0.05" pos="0.1 0 0"/>
        <site name="tip" pos="0.2 0.01 0" euler="0 1.5707963267948966 0"/>
        <body name="slider" pos="0.2 0 0">
          <joint name="slide" type="slide" axis="1 1 0" range="-0.1 0.1"/>
          <joint name="spin" axis="0 0 1" pos="0 0.03 0" limited="false"/>
          <geom type="sphere" size="0.02"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_hinge_anchor_root_pose_and_capsule(tmp_path: Path) -> None:
    """General mapping: hinge anchor off the body origin, root off the world origin, capsule."""
    model = mujoco.MjModel.from_xml_string(
        ANCHOR_MJCF.replace('<joint name="spin" axis="0 0 1" pos="0 0.03 0" limited="false"/>', "")
    )
    text = urdf_from_model(model, "test", {"default": 1.0})
    # Visual and collision each: capsule = cylinder + 2 spheres, plus the cylinder and the sphere.
    assert text.count("<cylinder") == 2 * 2 and text.count("<sphere") == 2 * 3
    urdf = load_urdf(text, tmp_path)
    assert fk_error(model, urdf, "world", 50) < FK_TOL


def test_unsupported_joints_are_rejected() -> None:
    with pytest.raises(ModelError, match="one hinge or slide"):
        urdf_from_model(mujoco.MjModel.from_xml_string(ANCHOR_MJCF), "test")
    ref = ANCHOR_MJCF.replace('range="-2 2"', 'range="-2 2" ref="0.5"')
    ref = ref.replace('<joint name="spin" axis="0 0 1" pos="0 0.03 0" limited="false"/>', "")
    with pytest.raises(ModelError, match="reference position"):
        urdf_from_model(mujoco.MjModel.from_xml_string(ref), "test")


def test_cli_writes_the_same_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "out" / "so101.urdf"
    assert main(["--robot", "so101", "--output", str(output)]) == 0
    assert output.read_text(encoding="utf-8") == generate_urdf("so101")
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    assert "--robot" in capsys.readouterr().out
