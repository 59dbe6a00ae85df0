"""The frame-tree walk (static model data + qpos only) reproduces MuJoCo's kinematics."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest

from physai_ros.core.frames.frame_tree import FrameKind, FrameTree
from physai_ros.errors import InvalidInput

TOL = 1e-12  # brief: every body/site/camera to ~1e-12 (observed ~1e-15)
N_SAMPLES = 100

# Every joint type, a body with two joints (hinge then slide), off-centre anchors, a site and a
# camera on a moving body, a non-fixed camera (skipped), a mocap body, a site named like a body.
JOINTS_MJCF = """
<mujoco>
  <worldbody>
    <body name="mocap" mocap="true" pos="0 1 0"/>
    <camera name="tracker" mode="targetbody" target="arm" pos="0 -2 1"/>
    <body name="floater" pos="1 2 3" quat="0.9 0.1 0.2 0.3">
      <freejoint/>
      <geom size="0.1"/>
      <body name="ball_child" pos="0.1 0.2 0.3" quat="0.5 0.5 0.5 0.5">
        <joint type="ball" pos="0.05 0 -0.02"/>
        <geom size="0.05" pos="0.1 0 0"/>
        <site name="ball_child" pos="0.1 0 0" quat="0 1 0 0"/>
      </body>
    </body>
    <body name="arm" pos="0 0 0.5" euler="0.3 0.2 0.1">
      <joint name="j_hinge" type="hinge" axis="0.3 0.4 1" pos="0.02 -0.01 0.05"/>
      <joint name="j_slide" type="slide" axis="1 1 0" ref="0.1"/>
      <geom size="0.05" pos="0.2 0 0"/>
      <body name="forearm" pos="0.3 0 0" euler="0 1.2 0">
        <joint type="hinge" axis="0 1 0" pos="0 0 0.1" ref="0.4"/>
        <geom size="0.05"/>
        <camera name="cam" pos="0.1 0 0" euler="0.1 -0.2 0.3"/>
        <site name="tip" pos="0.2 0.01 0"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def random_qpos(model: mujoco.MjModel, rng: np.random.Generator) -> np.ndarray:
    """Random joint values, with quaternions deliberately NOT normalised (MuJoCo normalises)."""
    qpos = rng.uniform(-2.0, 2.0, model.nq)
    for j in range(model.njnt):
        adr = model.jnt_qposadr[j]
        if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            qpos[adr + 3 : adr + 7] = rng.normal(size=4) * rng.uniform(0.2, 5.0)
        elif model.jnt_type[j] == mujoco.mjtJoint.mjJNT_BALL:
            qpos[adr : adr + 4] = rng.normal(size=4) * rng.uniform(0.2, 5.0)
    return qpos


def max_error_vs_mujoco(model: mujoco.MjModel, n: int, seed: int) -> float:
    tree = FrameTree(model, include_inertial=True)
    data = mujoco.MjData(model)
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(n):
        data.qpos[:] = random_qpos(model, rng)
        mujoco.mj_forward(model, data)
        ref = {
            FrameKind.BODY: (data.xpos, data.xmat),
            FrameKind.SITE: (data.site_xpos, data.site_xmat),
            FrameKind.CAMERA: (data.cam_xpos, data.cam_xmat),
            FrameKind.INERTIAL: (data.xipos, data.ximat),
        }
        world = tree.world_transforms(data.qpos)
        for i, frame in enumerate(tree.frames):
            pos, mat = ref[frame.kind]
            worst = max(
                worst,
                np.abs(world[i, :3, 3] - pos[frame.mj_id]).max(),
                np.abs(world[i, :3, :3].ravel() - mat[frame.mj_id]).max(),
            )
        bodies = tree.body_world(data.qpos)
        worst = max(worst, np.abs(bodies[:, :3, 3] - data.xpos).max())
    return worst


def test_walk_matches_mujoco_for_every_joint_type() -> None:
    model = mujoco.MjModel.from_xml_string(JOINTS_MJCF)
    assert max_error_vs_mujoco(model, N_SAMPLES, seed=0) < TOL


@pytest.mark.parametrize(
    "path", ["robotstudio_so101/scene.xml", "franka_emika_panda/scene.xml"], ids=["so101", "panda"]
)
def test_walk_matches_mujoco_on_reference_robots(shared_models: Path, path: str) -> None:
    model = mujoco.MjModel.from_xml_path(str(shared_models / path))
    tree = FrameTree(model)
    kinds = {f.kind for f in tree.frames}
    assert FrameKind.BODY in kinds and FrameKind.SITE in kinds
    assert max_error_vs_mujoco(model, N_SAMPLES, seed=1) < TOL


def test_parent_edges_chain_to_world_poses() -> None:
    model = mujoco.MjModel.from_xml_string(JOINTS_MJCF)
    tree = FrameTree(model, include_inertial=True)
    rng = np.random.default_rng(2)
    for _ in range(20):
        qpos = random_qpos(model, rng)
        world, local = tree.world_transforms(qpos), tree.parent_transforms(qpos)
        for i, parent in enumerate(tree.parent_names):
            T_world_parent = np.eye(4) if parent == tree.root_name else world[tree.index(parent)]
            np.testing.assert_allclose(T_world_parent @ local[i], world[i], atol=TOL)


def test_static_edges_do_not_depend_on_qpos() -> None:
    model = mujoco.MjModel.from_xml_string(JOINTS_MJCF)
    tree = FrameTree(model)
    rng = np.random.default_rng(3)
    a = tree.parent_transforms(random_qpos(model, rng))
    b = tree.parent_transforms(random_qpos(model, rng))
    np.testing.assert_array_equal(a[tree.static_mask], b[tree.static_mask])
    jointed = ~tree.static_mask
    jointed[tree.index("mocap")] = False  # moves with mocap_pos, not with qpos
    assert np.all(np.abs(a[jointed] - b[jointed]).max(axis=(1, 2)) > 0)
    assert not tree.frames[tree.index("mocap")].static  # mocap bodies move without qpos


def test_names_parents_and_skipped_cameras() -> None:
    model = mujoco.MjModel.from_xml_string(JOINTS_MJCF)
    tree = FrameTree(model)
    assert tree.skipped_cameras == ("tracker",)
    assert len(set(tree.names)) == len(tree.names)  # TF needs unique names
    assert tree.frames[tree.index("ball_child_site")].parent == "ball_child"
    assert tree.frames[tree.index("cam")].parent == "forearm"
    assert tree.frames[tree.index("floater")].parent == tree.root_name
    T = tree.transform(model.qpos0, "tip", "world")
    np.testing.assert_allclose(T @ tree.transform(model.qpos0, "world", "tip"), np.eye(4), atol=TOL)


def test_mocap_pose_is_used_when_given() -> None:
    model = mujoco.MjModel.from_xml_string(JOINTS_MJCF)
    tree = FrameTree(model)
    data = mujoco.MjData(model)
    data.mocap_pos[0] = [0.3, -0.2, 0.1]
    data.mocap_quat[0] = [0.0, 0.0, 0.0, 1.0]
    mujoco.mj_kinematics(model, data)
    world = tree.body_world(data.qpos, mocap_pos=data.mocap_pos, mocap_quat=data.mocap_quat)
    np.testing.assert_allclose(world[:, :3, 3], data.xpos, atol=TOL)


@pytest.mark.parametrize("bad", ["nan", "short", "inf"])
def test_bad_qpos_raises_invalid_input(bad: str) -> None:
    model = mujoco.MjModel.from_xml_string(JOINTS_MJCF)
    tree = FrameTree(model)
    qpos = model.qpos0.copy()
    if bad == "nan":
        qpos[0] = np.nan
    elif bad == "inf":
        qpos[-1] = np.inf
    else:
        qpos = qpos[:-1]
    with pytest.raises(InvalidInput):
        tree.world_transforms(qpos)
    with pytest.raises(InvalidInput):
        tree.parent_transforms(qpos)


def test_unknown_frame_lists_valid_names() -> None:
    tree = FrameTree(mujoco.MjModel.from_xml_string(JOINTS_MJCF))
    with pytest.raises(InvalidInput, match="forearm"):
        tree.index("no_such_frame")
