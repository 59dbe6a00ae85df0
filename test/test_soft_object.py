"""The soft object of the sim scene (MuJoCo 3.17 flexcomp, dim 3) on real physics: it rests on
the table, the table carries its weight, the Panda's torque loop runs with it and reset
restores it, the SO-101's jaws squeeze it (their wrenches and contact points include the flex
contacts, its strain grows with the squeeze), bad material is refused, and the rigid scene
keeps its own integrator.

The issue's object: a 30 g, 3 cm cube, E = 5·10⁴ Pa, ν = 0.3 (config/scene.yaml ``soft``).
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from test_mujoco_sim import JAW_CLOSED, JAW_OPEN, grasp_configurations

from physai_ros.core.controllers.jtc import TrajectoryMsg
from physai_ros.core.motion.joint_trajectory import TrajectoryPoint
from physai_ros.core.pick.contact import JawContactSensor
from physai_ros.errors import InvalidInput
from physai_ros.robots.so101.emulator.bus import FeetechBusEmulator
from physai_ros.robots.so101.emulator.physics import JAWS
from physai_ros.sim.mujoco_sim import MujocoSim
from physai_ros.sim.scene import build_scene, scene_soft_object
from physai_ros.sim.soft import SOFT_FLEX

G = 9.81  # [m/s²] MuJoCo's default gravity
AWAY = (0.0, 0.3)  # [m] base frame: the rigid cube out of the way of a soft-object grasp


def flex_contact_force(sim: MujocoSim, bodies: tuple[str, ...] | None = None) -> np.ndarray:
    """Sum of the contact forces on the soft object [N] (world), from the geoms of ``bodies``
    only (``None`` = from everything)."""
    m, d, f6, total = sim.model, sim.data, np.zeros(6), np.zeros(3)
    ids = None if bodies is None else {m.body(b).id for b in bodies}
    for k in range(d.ncon):
        contact = d.contact[k]
        if contact.flex[0] < 0 and contact.flex[1] < 0:
            continue
        side = 1 if contact.flex[1] >= 0 else 0
        other = int(contact.geom[1 - side])
        if ids is not None and (other < 0 or m.geom_bodyid[other] not in ids):
            continue
        mujoco.mj_contactForce(m, d, k, f6)
        force = contact.frame.reshape(3, 3).T @ f6[:3]  # on side 2, from side 1
        total += force if side == 1 else -force
    return total


@pytest.mark.parametrize(
    ("shape", "sag"), [("cube", 0.001), ("sphere", 0.0025), ("cylinder", 0.001)]
)
def test_soft_object_rests_on_the_table_and_the_table_carries_its_weight(shape, sag):
    """``sag`` [m]: how far the centre of mass may sink below size/2 (contact and elastic
    compression; for the sphere Hertz alone gives 1.0 mm: 0.294 N on R 15 mm, E* 5.5·10⁴ Pa)."""
    soft = scene_soft_object("so101", shape=shape)
    sim = MujocoSim("so101", soft=soft)
    assert sim.model.opt.integrator == mujoco.mjtIntegrator.mjINT_DISCRETE
    start, _ = sim.soft_object_pose()
    np.testing.assert_allclose(start, [0.22, 0.08, soft.size / 2], atol=1e-9)
    for _ in range(20):  # 2 s in 0.1 s slices: finite and above the table all along
        sim.advance(0.1)
        com, quat = sim.soft_object_pose()
        assert np.all(np.isfinite(com)) and sim.instabilities == 0
        assert abs(com[2] - soft.size / 2) < sag
    assert np.linalg.norm(com[:2] - start[:2]) < 1e-4  # [m] it does not creep
    assert 2 * np.degrees(np.arccos(min(1.0, abs(quat[0])))) < 1.0  # [deg] nor tilt
    # at rest the table carries m g (the contact solver's equilibrium: 0.1 %)
    force = flex_contact_force(sim)
    assert force[2] == pytest.approx(soft.mass * G, rel=1e-3)
    assert np.linalg.norm(force[:2]) < 1e-3 * soft.mass * G
    assert 0.0 < sim.soft_object_strain() < 0.03  # its own weight: under 3 %


def test_a_rigid_motion_moves_the_pose_and_leaves_no_strain():
    """Vertices moved by a rotation R (40° about an oblique axis) and a shift t: the pose
    reports R and centre + t, the strain stays 0 (1e-9)."""
    sim = MujocoSim("so101", soft=scene_soft_object("so101"))
    m, d = sim.model, sim.data
    start, _ = sim.soft_object_pose()
    quat, shift = np.zeros(4), np.array([0.01, -0.02, 0.03])
    mujoco.mju_axisAngle2Quat(quat, np.array([1.0, 2.0, 3.0]) / np.sqrt(14.0), np.radians(40.0))
    rot = np.zeros(9)
    mujoco.mju_quat2Mat(rot, quat)
    rest = d.flexvert_xpos.copy()
    moved = (rest - start) @ rot.reshape(3, 3).T + start + shift
    for v, body in enumerate(m.flex_vertbodyid):
        for j in range(m.body_jntadr[body], m.body_jntadr[body] + m.body_jntnum[body]):
            d.qpos[m.jnt_qposadr[j]] = m.jnt_axis[j] @ (moved[v] - rest[v])  # x, y, z sliders
    mujoco.mj_forward(m, d)
    com, measured = sim.soft_object_pose()
    np.testing.assert_allclose(com, start + shift, atol=1e-12)
    np.testing.assert_allclose(measured * np.sign(measured[0]), quat, atol=1e-9)
    assert sim.soft_object_strain() < 1e-9
    with pytest.raises(InvalidInput, match="no soft object"):
        MujocoSim("so101").soft_object_pose()


def test_panda_torque_loop_runs_the_soft_scene_and_reset_restores_the_soft_object():
    """The Panda's torque loop (mj_step1 / torques / mj_step2) under the discrete integrator:
    the arm holds home while the soft cube settles; reset puts the cube back at its rest
    shape (strain exactly 0) where it started."""
    sim = MujocoSim("panda", soft=scene_soft_object("panda"))
    home, (start, _) = sim.arm_state().q.copy(), sim.soft_object_pose()
    sim.advance(0.5)
    assert sim.instabilities == 0
    np.testing.assert_allclose(sim.arm_state().q, home, atol=1e-3)  # [rad]
    settled, _ = sim.soft_object_pose()
    assert abs(settled[2] - start[2]) < 0.001 and sim.soft_object_strain() > 0.0
    sim.reset()
    np.testing.assert_allclose(sim.soft_object_pose()[0], start, atol=1e-12)
    assert sim.soft_object_strain() == 0.0


def test_place_soft_moves_the_object_at_rest_and_reset_keeps_it_there():
    """The sim bridge's soft_x/soft_y at sim/reset: the object moved on the table (a squeezed,
    moving one too) to the given base-frame place, undeformed, and a later reset leaves it
    there; the cube stays where it was."""
    sim = MujocoSim("panda", soft=scene_soft_object("panda"))
    (start, _), cube = sim.soft_object_pose(), sim.cube_pose()[0]
    sim.advance(0.3)  # settled on the table: strained, not at its compiled place
    sim.place_soft((start[0] + 0.02, start[1] - 0.03))
    moved, _ = sim.soft_object_pose()
    np.testing.assert_allclose(moved, start + np.array([0.02, -0.03, 0.0]), atol=1e-9)
    assert sim.soft_object_strain() < 1e-9
    sim.reset()
    np.testing.assert_allclose(sim.soft_object_pose()[0], moved, atol=1e-9)
    np.testing.assert_allclose(sim.cube_pose()[0], cube, atol=1e-9)
    with pytest.raises(InvalidInput):
        MujocoSim("panda").place_soft((0.5, 0.0))


def squeeze(effort: float, count: int | None = None) -> tuple[MujocoSim, float]:
    """The SO-101 closes its jaws on the soft cube (top-down, as lesson 16 on the rigid one)
    with ``effort`` [N·m] as the servo's cap, for 2 s; returns the sim and the soft cube's
    strain just before the close. ``count``: vertices per edge (``None`` = the default)."""
    sim = MujocoSim("so101", cube_pos=AWAY, soft=scene_soft_object("so101", count=count))
    above, down = grasp_configurations(sim, sim.soft_object_pose()[0])
    sim.ends += sim.gripper.accept("open", JAW_OPEN, 0.0, sim.time)
    sim.advance(1.0)
    path = [TrajectoryPoint(1.5, above), TrajectoryPoint(2.5, down)]
    sim.arm.follow(sim.arm.prepare(TrajectoryMsg(list(sim.arm_joints), path), sim.time))
    sim.advance(3.0)
    before = sim.soft_object_strain()
    sim.ends += sim.gripper.accept("close", JAW_CLOSED, effort, sim.time)
    sim.advance(2.0)
    return sim, before


def jaw_force(sim: MujocoSim) -> float:
    """The squeeze [N]: the smaller of the two jaws' contact forces."""
    return min(float(np.linalg.norm(w.force)) for w in sim.jaw_wrenches().values())


def test_jaws_squeezing_the_soft_cube_sense_it_and_strain_grows_with_the_squeeze():
    """Servo caps 0.3 and 0.6 N·m (below 0.3 the jaw stalls on its friction loss and the
    servo's stiffness before it touches): both jaws touch only the soft cube, so their
    wrenches are the flex contacts' forces, pushing against each other; the larger cap
    squeezes harder and strains more. Measured (3 vertices per edge): 2.6 and 8.7 N, strain
    0.14 and 0.28."""
    strains, squeezes = [], []
    for effort in (0.3, 0.6):  # [N·m]
        sim, before = squeeze(effort)
        assert sim.instabilities == 0
        wrenches = sim.jaw_wrenches()
        world = {}
        for jaw, wrench in wrenches.items():
            assert wrench.contacts > 0, jaw
            body = sim.model.body(sim.jaw_body_names[jaw]).id
            world[jaw] = sim.data.xmat[body].reshape(3, 3) @ wrench.force
        # what the jaws feel is what the flex feels from them (Newton's third law, 1e-9 N)
        on_flex = flex_contact_force(sim, tuple(sim.jaw_body_names.values()))
        np.testing.assert_allclose(-(world["fixed_jaw"] + world["moving_jaw"]), on_flex, atol=1e-9)
        fixed, moving = world["fixed_jaw"], world["moving_jaw"]
        assert fixed @ moving / np.linalg.norm(fixed) / np.linalg.norm(moving) < -0.9
        points = sim.contact_points()
        assert {p.jaw for p in points} == {"fixed_jaw", "moving_jaw"}
        for p in points:
            assert p.mu == pytest.approx(1.0) and p.normal @ p.force > 0.0
        # the emulator's truth reads the same contacts (JawContactSensor on the flex): each
        # jaw's net force is the wrench's force; the normal sum differs from it (friction, and
        # the vertex spheres' normals tilting apart: measured −1 to +13 %)
        sensor = JawContactSensor(sim.model, SOFT_FLEX, *JAWS, flex=True).read(sim.data)
        assert sensor.both_touch
        for net, normal, jaw in (
            (sensor.fixed_net, sensor.fixed_normal, "fixed_jaw"),
            (sensor.moving_net, sensor.moving_normal, "moving_jaw"),
        ):
            assert net == pytest.approx(np.linalg.norm(world[jaw]), abs=1e-9), jaw
            assert normal == pytest.approx(net, rel=0.15), jaw
        strains.append(sim.soft_object_strain())
        squeezes.append(jaw_force(sim))
        assert strains[-1] > before + 0.05  # squeezed: 5 % more than resting
    assert squeezes[0] > 1.0 and squeezes[1] > 1.5 * squeezes[0]  # [N]
    assert strains[1] > 1.5 * strains[0]


def test_the_coarse_cube_squeezes_as_the_finer_one_within_stated_tolerances():
    """Convergence of the default resolution (3 vertices per edge, chosen for speed) against 4
    at the 0.3 N·m cap: the squeeze within 10 % (measured 2.63 vs 2.44 N, +8 %; 5 per edge:
    2.50 N), the largest edge strain lower by at most 30 % (0.14 vs 0.18; 5 per edge: 0.20):
    the coarse grid's linear tetrahedra are stiffer, so it strains less at the same squeeze."""
    coarse, _ = squeeze(0.3)
    fine, _ = squeeze(0.3, count=4)
    assert coarse.soft.count == 3 and fine.soft.count == 4
    assert jaw_force(coarse) == pytest.approx(jaw_force(fine), rel=0.10)
    ratio = coarse.soft_object_strain() / fine.soft_object_strain()
    assert 0.7 < ratio <= 1.0


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"young": 0.0}, "Young's modulus must be > 0"),
        ({"young": -5e4}, "Young's modulus must be > 0"),
        ({"poisson": 0.5}, r"Poisson ratio must be in \[0, 0.5\)"),
        ({"poisson": -0.1}, r"Poisson ratio must be in \[0, 0.5\)"),
        ({"poisson": float("nan")}, "Poisson ratio"),
        ({"mass": 0.0}, "mass must be > 0"),
        ({"mu": -1.0}, "friction mu must be > 0"),
        ({"damping": -0.1}, "damping must be >= 0"),
        ({"size": 0.005}, "size must be >"),
        ({"shape": "torus"}, "unknown soft object shape 'torus'; valid choices"),
        ({"count": 2}, r"count must be a whole number of vertices per edge in \[3, 6\]"),
        ({"count": 7}, "count must be a whole number"),
        ({"count": 3.5}, "count must be a whole number"),
        ({"colour": "red"}, "unknown soft object fields"),
        ({"young": "soft"}, "must be numbers"),
    ],
)
def test_bad_soft_object_is_refused(values, message):
    with pytest.raises(InvalidInput, match=message):
        scene_soft_object("so101", **values)


def test_the_rigid_scene_keeps_its_integrator_and_solver():
    rigid = build_scene("so101")
    soft = build_scene("so101", soft=scene_soft_object("so101"))
    assert rigid.opt.integrator != mujoco.mjtIntegrator.mjINT_DISCRETE
    assert rigid.opt.iterations == 10  # the SO-101 file's own
    assert soft.opt.iterations == 100 and rigid.nflex == 0 and soft.nflex == 1
    assert soft.opt.tolerance == 1e-6 and rigid.opt.tolerance == 1e-8  # MuJoCo's default
    assert soft.nq == rigid.nq + 3 * 27  # 3 × 3 × 3 vertices, 3 sliders each, after the cube
    finer = build_scene("so101", soft=scene_soft_object("so101", count=4))
    assert finer.nq == rigid.nq + 3 * 64


def test_the_emulator_builds_the_same_soft_cube_and_its_witness_reports_it():
    """The bus emulator's scene with ``soft``: the sim bridge's soft cube from the same
    ``build_scene_spec`` (same vertices, discrete integrator), read by the same ``SoftBody``:
    at power-up (0.5 s limp settle) its witness gives the cube at (soft_x, soft_y) resting
    (COM within 1 mm of size/2, strain below 0.02 as in the bridge), touching no jaw; the
    bridge's reading at rest agrees within 1e-4 m. Without it, ``soft`` is None."""
    soft = scene_soft_object("so101", (0.20, 0.06))
    emulator = FeetechBusEmulator(scene_kwargs={"cube_pos": list(AWAY), "soft": soft})
    truth = emulator.witness().soft
    assert (
        truth is not None
        and emulator.physics.model.opt.integrator == mujoco.mjtIntegrator.mjINT_DISCRETE
    )
    np.testing.assert_allclose(truth.pos, [0.20, 0.06, 0.015], atol=1e-3)
    assert 0.0 <= truth.strain < 0.02 and not truth.in_jaws and truth.jaw_force == (0.0, 0.0)
    sim = MujocoSim("so101", cube_pos=AWAY, soft=soft)
    assert sim.model.nflex == 1 and sim.model.nflexvert == emulator.physics.model.nflexvert
    sim.advance(0.5)
    np.testing.assert_allclose(sim.soft_object_pose()[0], truth.pos, atol=1e-4)
    assert FeetechBusEmulator(scene_kwargs={"cube_pos": list(AWAY)}).witness().soft is None
