"""The SO-101 jaw's load-to-force calibration, derived from the model and checked against it.

Why: the real gripper has no force sensor. The driver turns the servo's ``Present_Load`` into a
normal force per jaw, ``N = (τ_c - τ_f) / r`` (``physai_ros.robots.so101.jaw_estimate.jaw_normal``).
``r`` is the moment arm of the moving jaw's contact about the gripper axis -- it depends on
where along the jaw the cube sits, i.e. on the pick's grasp height (``offsets.down`` in
config/pick.yaml) -- and ``τ_f`` the torque the servo's own gear friction takes while stalled.

Here both are derived in the emulator's physics (``So101Physics``, the MuJoCo scene behind the
emulated servos): the arm placed at the pick's grasp pose over the cube (the pick's own IK),
the jaw closed on the cube at rising torque caps, and at each cap, once still:

* the lever ``r = Σ ((p_i - a) × f_i)·â / Σ n_i`` over the moving jaw's contacts (point
  ``p_i``, force ``f_i`` on the jaw, normal part ``n_i``) about the joint axis ``â`` through
  ``a`` -- kinematics of the contact points, not a fit;
* the friction the stall left, ``τ - r Σ n_i``;
* the driver's estimate from the quantized load (``round(1000 τ / 2.94)`` counts, as the
  servo reports it) against the true normal force of each jaw.

``python -m physai_ros.robots.so101.jaw_lever`` prints that table; config/so101_driver.yaml
holds the numbers the driver uses. Pure numpy + mujoco.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import NamedTuple

import mujoco
import numpy as np

from physai_ros.config import node_tree
from physai_ros.core.pick.contact import contact_force_on
from physai_ros.core.pick.machine import arm_ik, load_pick_config
from physai_ros.errors import InvalidInput
from physai_ros.robots.so101.emulator.physics import So101Physics
from physai_ros.robots.so101.emulator.servo import STALL_TORQUE
from physai_ros.robots.so101.jaw_estimate import JawModel, jaw_normal

GRIPPER = 5  # joint index in So101Physics.JOINTS
PRE_CLOSE = 0.3  # [rad] the jaw first moves here by position: about 9 mm clear of the 3 cm cube


class JawSample(NamedTuple):
    """One stalled grip. cap, torque [N·m] (servo output); load: Present_Load [0.1 %];
    fixed_n, moving_n: true normal force of each jaw [N]; lever [m]; friction [N·m]: torque
    not reaching the contact; estimate [N]: the driver's per-jaw force from ``load``."""

    cap: float
    torque: float
    load: int
    fixed_n: float
    moving_n: float
    lever: float
    friction: float
    estimate: float


def grasp_pose(physics: So101Physics, offset: str = "down") -> np.ndarray:
    """Arm joint angles [rad] that put the gripper site at the pick's ``offset`` above the
    cube, solved by the pick's IK (config/pick.yaml) on the physics model."""
    cfg = load_pick_config()
    ik = arm_ik(physics.model, cfg)
    cube, _ = physics.cube_pose()
    q = np.asarray(cfg.robot["home"], dtype=float)
    for name in ("pre", offset):
        result = ik(cube + np.array([0.0, 0.0, cfg.offsets[name]]), q)
        if not result.converged:
            raise InvalidInput(f"IK did not converge for the {name} pose over {cube.tolist()}")
        q = np.asarray(result.q, dtype=float)
    return q


def moving_jaw_lever(physics: So101Physics) -> tuple[float, float]:
    """(force-weighted moment arm [m] of the moving jaw's contacts about the gripper axis,
    their summed normal force [N]); (nan, 0) with no contact."""
    m, d, sensor = physics.model, physics.data, physics.jaw_sensor
    joint = m.joint("gripper").id
    anchor, axis = d.xanchor[joint], d.xaxis[joint]
    moment = normal = 0.0
    for k, jaw in sensor.jaw_contacts(d):
        if jaw != "moving":
            continue
        local, world = contact_force_on(m, d, k, sensor.object_geom)
        # -world: the force on the jaw; its moment about the axis opposes the closing torque
        moment += abs(float(np.dot(np.cross(d.contact[k].pos - anchor, -world), axis)))
        normal += float(local[0])
    return (moment / normal if normal > 0.0 else float("nan")), normal


def calibrate(
    caps: Sequence[float],
    model: JawModel,
    cube_pos: Sequence[float] = (0.22, 0.0),
    close_time: float = 8.0,
    settle: float = 0.7,
) -> list[JawSample]:
    """Close the jaw on the cube at the grasp pose (``PRE_CLOSE`` by position, then at the
    lowest cap for at most ``close_time`` [s]), then hold
    each cap (ascending, as a force-controlled close raises the squeeze) for ``settle`` [s] and
    sample the stall."""
    if not caps or any(not 0.0 < c <= STALL_TORQUE for c in caps):
        raise InvalidInput(f"caps must be in (0, {STALL_TORQUE}] N·m, got {list(caps)!r}")
    physics = So101Physics({"cube_pos": [float(v) for v in cube_pos]})
    cfg = load_pick_config()
    q = [*grasp_pose(physics), cfg.jaw_open]
    d = physics.data
    d.qpos[physics.qadr], d.ctrl[physics.act] = q, q
    mujoco.mj_forward(physics.model, d)
    for i in range(GRIPPER):
        physics.apply(i, q[i], STALL_TORQUE, 1.0)
    physics.apply(GRIPPER, PRE_CLOSE, STALL_TORQUE, 1.0)
    for _ in range(round(close_time / (2.0 * physics.dt))):
        physics.step()
    samples = []
    for n, cap in enumerate(sorted(caps)):
        physics.apply(GRIPPER, cfg.jaw_closed, cap, 1.0)
        if n == 0:  # close until both jaws touch (a low cap closes slowly: gear damping)
            for _ in range(round(close_time / physics.dt)):
                physics.step()
                if physics.cube_in_jaws():
                    break
            else:
                raise InvalidInput(f"the jaw did not reach the cube within {close_time} s")
        for _ in range(round(settle / physics.dt)):
            physics.step()
        _, _, torque = physics.joint(GRIPPER)
        closing = -torque  # closing decreases the gripper angle
        load = round(1000.0 * closing / STALL_TORQUE)
        lever, moving = moving_jaw_lever(physics)
        fixed, _ = physics.jaw_normal()
        estimate = jaw_normal(load * STALL_TORQUE / 1000.0, model)
        samples.append(
            JawSample(cap, closing, load, fixed, moving, lever, closing - lever * moving, estimate)
        )
    return samples


def driver_jaw_config() -> dict:
    """The ``jaw`` section of config/so101_driver.yaml (the numbers the driver uses)."""
    return dict(node_tree("so101_driver.yaml")["jaw"])


def main(argv: list[str] | None = None) -> int:
    jaw = driver_jaw_config()
    parser = argparse.ArgumentParser(
        prog="python -m physai_ros.robots.so101.jaw_lever",
        description="SO-101 gripper load -> jaw force: lever and friction derived in the "
        "emulator's physics at the pick's grasp, and the driver's estimate against the truth.",
    )
    parser.add_argument("--caps", type=float, nargs="+", default=[0.2, 0.3, 0.45, 0.66])
    parser.add_argument("--moment-arm", type=float, default=jaw["moment_arm"])
    parser.add_argument("--friction-torque", type=float, default=jaw["friction_torque"])
    args = parser.parse_args(argv)
    model = JawModel(jaw_moment_arm_m=args.moment_arm, friction_torque_nm=args.friction_torque)
    print(f"driver: N = (load - {model.friction_torque_nm}) / {model.jaw_moment_arm_m}")
    print("cap[Nm] load[0.1%] fixed[N] moving[N] lever[mm] friction[Nm] estimate[N] error")
    for s in calibrate(args.caps, model):
        error = s.estimate / (0.5 * (s.fixed_n + s.moving_n)) - 1.0
        print(
            f"{s.cap:7.3f} {s.load:10d} {s.fixed_n:8.3f} {s.moving_n:9.3f} "
            f"{1e3 * s.lever:9.2f} {s.friction:12.4f} {s.estimate:11.3f} {error:+6.1%}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
