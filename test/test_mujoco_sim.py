"""The MuJoCo backend of the sim bridge, on real physics (no ROS): its controllers (the shared
joint trajectory and gripper action controllers) following in position (SO-101) and torque
(Panda) mode, the gripper stalling on the cube with both jaws in contact, recovery from a
diverged step."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from physai_ros.core.controllers.gac import GripperEnd
from physai_ros.core.controllers.jtc import GoalTolerances, Rejected, TrajectoryMsg
from physai_ros.core.motion.joint_trajectory import TrajectoryPoint
from physai_ros.core.motion.kinematics import solve_ik
from physai_ros.core.pick.contact import JawContactSensor, friction_cone_mesh
from physai_ros.sim.mujoco_sim import MujocoSim

JAW_OPEN, JAW_CLOSED = 0.85, -0.17453  # [rad] config/pick.yaml


def grasp_configurations(
    sim: MujocoSim, centre: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Arm q with the open jaw 5.5 cm above the object, and with it 4 mm below its centre
    (top-down, jaws closing along world y: lesson 16's grasp); ``centre`` [m] defaults to the
    rigid cube's."""
    data = mujoco.MjData(sim.model)
    data.qpos[:] = sim.data.qpos
    x, z = np.array([0.0, 0.0, -1.0]), np.array([0.0, 1.0, 0.0])
    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, np.column_stack([x, np.cross(z, x), z]).ravel())
    cube = sim.cube_pose()[0] if centre is None else centre
    q0 = np.zeros(len(sim.arm_joints))
    pre = solve_ik(
        sim.model, data, "gripperframe", cube + np.array([0, 0, 0.055]), sim.arm_joints, q0, quat
    )
    down = solve_ik(
        sim.model, data, "gripperframe", cube - np.array([0, 0, 0.004]), sim.arm_joints, pre.q, quat
    )
    assert pre.converged and down.converged
    return pre.q, down.q


def panda_grasp_configurations(sim: MujocoSim) -> tuple[np.ndarray, np.ndarray]:
    """Panda arm q with the open fingers 12 cm above the cube, and around it, the pads at its
    centre height (top-down, the hand as at home: fingers closing along world y)."""
    data = mujoco.MjData(sim.model)
    data.qpos[:] = sim.data.qpos
    mujoco.mj_forward(sim.model, data)
    site = sim.model.site("attachment_site").id  # on the finger axis, at the pads' height
    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, data.site_xmat[site])
    cube, _ = sim.cube_pose()
    home, arm = sim.arm_state().q, sim.arm_joints
    pre = solve_ik(
        sim.model, data, "attachment_site", cube + np.array([0, 0, 0.12]), arm, home, quat
    )
    down = solve_ik(
        sim.model, data, "attachment_site", cube + np.array([0, 0, 0.005]), arm, pre.q, quat
    )
    assert pre.converged and down.converged
    return pre.q, down.q


def follow(sim: MujocoSim, points: list[TrajectoryPoint], names=None):
    """Send a trajectory to the sim's arm controller (as the topic would); returns it."""
    msg = TrajectoryMsg(list(names or sim.arm_joints), points)
    sim.arm.follow(sim.arm.prepare(msg, sim.time))
    return sim.arm.traj


def run_gripper(sim: MujocoSim, position: float, timeout: float = 4.0) -> GripperEnd:
    """A gripper goal through the sim's gripper controller, until it ends."""
    sim.gripper.check(position, 0.0)
    sim.ends += sim.gripper.accept("goal", position, 0.0, sim.time)
    end = sim.time + timeout
    while sim.time < end:
        sim.advance(0.01)
        ended = [e for e in sim.ends if e.goal_id == "goal"]
        if ended:
            sim.ends.clear()
            return ended[0]
    raise AssertionError(f"gripper goal to {position} did not end in {timeout} s")


def test_so101_follows_a_multi_point_trajectory():
    sim = MujocoSim("so101")
    q0 = sim.arm_state().q
    wave = np.array([0.4, -0.5, 0.6, -0.4, 0.8])
    points = [
        TrajectoryPoint(1.0, q0 + wave, 0.3 * wave),
        TrajectoryPoint(2.0, q0 - 0.5 * wave, -0.2 * wave),
        TrajectoryPoint(3.0, q0 + 0.25 * wave, np.zeros(5)),
    ]
    traj = follow(sim, points)
    assert traj.kind == "cubic"
    worst, t0 = 0.0, sim.time
    while sim.time - t0 < traj.duration:
        sim.advance(0.01)
        worst = max(worst, float(np.abs(sim.tracking_error()).max()))
    sim.advance(0.5)
    final = sim.arm_state()
    # the servos (kp ≈ 1000 N m/rad, 2.94 N m cap) lag the moving reference by a few mrad
    assert worst < 0.03, worst
    np.testing.assert_allclose(final.q, points[-1].positions, atol=0.005)
    assert np.all(np.abs(final.qd) < 0.01)
    assert np.all(np.abs(final.effort) <= 2.94 + 1e-9)


def test_panda_torque_mode_tracks_a_quintic():
    """Lesson 13's move: Δq = (0.6, 0.4, −0.4, 0.5, 0.5, −0.4, 0.6) rad in T = 1 s, torque =
    bias + Kp e + Kd ė + M q̈_r (config/sim_bridge.yaml); the lesson's error is 0.01°."""
    sim = MujocoSim("panda")
    q0 = sim.arm_state().q
    target = q0 + np.array([0.6, 0.4, -0.4, 0.5, 0.5, -0.4, 0.6])
    traj = follow(sim, [TrajectoryPoint(1.0, target, np.zeros(7), np.zeros(7))])
    assert traj.kind == "quintic"
    worst, peak_tau, t0 = 0.0, np.zeros(7), sim.time
    while sim.time - t0 < traj.duration + 0.2:
        sim.step()
        worst = max(worst, float(np.abs(sim.tracking_error()).max()))
        peak_tau = np.maximum(peak_tau, np.abs(sim.arm_state().effort))
    assert math.degrees(worst) < 0.05, math.degrees(worst)
    np.testing.assert_allclose(sim.arm_state().q, target, atol=1e-3)
    assert np.all(peak_tau <= sim.torque_limit + 1e-9)
    assert peak_tau[1] > 1.0  # the shoulder carries the arm: torque mode really drives it


def test_gripper_closing_on_the_cube_stalls_with_both_jaws_in_contact():
    sim = MujocoSim("so101")
    assert run_gripper(sim, JAW_OPEN).reached_goal
    pre, down = grasp_configurations(sim)
    follow(sim, [TrajectoryPoint(1.5, pre), TrajectoryPoint(2.5, down)])
    sim.advance(3.0)
    np.testing.assert_allclose(sim.arm_state().q, down, atol=0.01)
    cube_before, _ = sim.cube_pose()

    status = run_gripper(sim, JAW_CLOSED)
    assert status.stalled and not status.reached_goal and status.status == "succeeded"
    assert status.position > JAW_CLOSED + 0.1  # stopped by the 3 cm cube, not at the goal
    # the servo pushes at its cap (the goal's effort 0 = the model's 2.94 N m)
    assert abs(sim.gripper_status().effort) == pytest.approx(2.94, rel=1e-6)
    sensed = JawContactSensor(sim.model, "cube", "gripper", "moving_jaw_so101_v1").read(sim.data)
    assert sensed.both_touch
    wrenches = sim.jaw_wrenches()
    assert set(wrenches) == {"fixed_jaw", "moving_jaw"}
    world = {}
    for jaw, body, normal in (
        ("fixed_jaw", "gripper", sensed.fixed_normal),
        ("moving_jaw", "moving_jaw_so101_v1", sensed.moving_normal),
    ):
        # each jaw touches only the cube here: its wrench force is the (non-parallel) contact
        # normals plus friction, of the size of the summed normal force
        world[jaw] = sim.data.xmat[sim.model.body(body).id].reshape(3, 3) @ wrenches[jaw].force
        magnitude = float(np.linalg.norm(world[jaw]))
        assert normal > 5.0 and magnitude == pytest.approx(normal, rel=0.2), (jaw, magnitude)
        assert wrenches[jaw].contacts > 0
    # the jaws squeeze from opposite sides: their forces point against each other
    cosine = world["fixed_jaw"] @ world["moving_jaw"]
    assert cosine / np.linalg.norm(world["fixed_jaw"]) / np.linalg.norm(world["moving_jaw"]) < -0.9
    cube_after, _ = sim.cube_pose()
    assert np.linalg.norm(cube_after - cube_before) < 0.01  # squeezed, not thrown
    points = sim.contact_points()
    assert {p.jaw for p in points} == {"fixed_jaw", "moving_jaw"}
    for p in points:
        assert p.mu == pytest.approx(1.0) and p.normal @ p.force > 0.0


@pytest.mark.parametrize("cap", [60.0, 280.0])
def test_panda_fingers_squeeze_the_cube_with_half_the_force_cap_each(cap):
    """The stiff finger servo (config/sim_robots.yaml gripper_servo): fingers blocked by the
    cube push with the effort cap, which the tendon splits, so each finger presses with
    cap x gripper_force_per_effort (0.5) -- what a Franka grasp force means. The setpoint
    travels at max_speed, so the fingers close at that speed until they touch."""
    sim = MujocoSim("panda")
    pre, down = panda_grasp_configurations(sim)
    follow(sim, [TrajectoryPoint(1.0, pre), TrajectoryPoint(2.0, down)])
    sim.advance(2.5)
    assert sim.gripper_status().position == pytest.approx(0.04, abs=1e-4)  # open at home
    sim.gripper.check(0.0, cap, 0.02)
    sim.ends += sim.gripper.accept("grasp", 0.0, cap, sim.time, max_speed=0.02)
    sim.advance(0.25)  # 5 mm closed at 0.02 m/s, well before the cube
    assert sim.gripper_status().position == pytest.approx(0.035, abs=1e-3)
    sim.advance(1.5)  # 20 mm more to the cube, then 0.1 s still: stalled
    (end,) = [e for e in sim.ends if e.goal_id == "grasp"]
    assert end.stalled and end.status == "succeeded"
    assert 0.010 < end.position < 0.015  # on the 3 cm cube (soft contacts: pressed in a little)
    assert abs(sim.gripper_status().effort) == pytest.approx(cap, rel=1e-3)
    force = sim.gripper_force_per_effort * cap
    for jaw, wrench in sim.jaw_wrenches().items():
        assert float(np.linalg.norm(wrench.force)) == pytest.approx(force, rel=0.02), jaw
    cube, _ = sim.cube_pose()
    assert np.linalg.norm(cube[:2] - [0.5, 0.0]) < 0.005  # squeezed where it stood


def test_invalid_commands_change_nothing():
    sim = MujocoSim("so101")
    sim.advance(0.1)
    ref = sim.reference()
    with pytest.raises(Rejected, match="don't match the controller joints"):
        follow(sim, [TrajectoryPoint(1.0, [0.0, 0.0])], names=["shoulder_pan", "nope"])
    with pytest.raises(Rejected, match="Incoming joint nope"):
        follow(sim, [TrajectoryPoint(1.0, [0.0] * 5)], names=[*sim.arm_joints[:4], "nope"])
    with pytest.raises(Rejected, match="elbow_flex"):
        follow(sim, [TrajectoryPoint(1.0, [0, 0, 2.5, 0, 0])])
    with pytest.raises(Rejected, match="gripper position"):
        sim.gripper.check(5.0, 1.0)
    assert not sim.arm.following
    np.testing.assert_array_equal(sim.reference(), ref)


def test_diverged_step_resets_to_home_and_is_reported(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # MuJoCo writes its warning to ./MUJOCO_LOG.TXT
    sim = MujocoSim("panda")
    home = sim.arm_state().q.copy()
    sim.ends += sim.arm.accept(
        "goal",
        sim.arm.prepare(
            TrajectoryMsg(list(sim.arm_joints), [TrajectoryPoint(1.0, home + 0.2)]), sim.time
        ),
        GoalTolerances(),
    )
    sim.advance(0.5)
    t = sim.time
    sim.data.qfrc_applied[2] = math.nan  # poisons qacc on the next step
    sim.step()
    assert sim.instabilities == 1 and "diverged" in sim.last_instability
    assert sim.time == pytest.approx(t + sim.dt)  # time keeps going forward
    sim.data.qfrc_applied[:] = 0.0
    sim.advance(0.2)
    assert sim.instabilities == 1
    np.testing.assert_allclose(sim.arm_state().q, home, atol=1e-3)
    assert not sim.arm.following
    aborted = [e for e in sim.ends if e.goal_id == "goal"]  # the goal reports the divergence
    assert aborted and aborted[0].status == "aborted" and "diverged" in aborted[0].error_string


def test_reset_and_place_cube():
    sim = MujocoSim("so101")
    sim.place_cube((0.18, 0.03))
    pos, _ = sim.cube_pose()
    np.testing.assert_allclose(pos, [0.18, 0.03, 0.015], atol=1e-9)
    follow(sim, [TrajectoryPoint(0.5, [0.3, 0, 0, 0, 0])])
    sim.advance(1.0)
    t = sim.time
    sim.reset()
    assert sim.time == t
    np.testing.assert_allclose(sim.arm_state().q, np.zeros(5))
    np.testing.assert_allclose(sim.cube_pose()[0], [0.18, 0.03, 0.015], atol=1e-9)


def test_friction_cone_opens_at_atan_mu():
    apex, axis, mu, height = np.array([0.1, 0.2, 0.3]), np.array([0.0, 0.0, 2.0]), 0.5, 0.02
    mesh = friction_cone_mesh(apex, axis, mu, height, 8)
    assert mesh.shape == (24, 3)
    rim = mesh[1::3] - apex
    np.testing.assert_allclose(rim[:, 2], height)
    np.testing.assert_allclose(np.linalg.norm(rim[:, :2], axis=1) / rim[:, 2], mu)
