"""One scripted pick of a soft object, lockstep with MuJoCo: the runner of ``physai lesson soft``.

The same pieces as over ROS, reused rather than copied: the sim bridge's scene and measures
(:class:`~physai_ros.sim.mujoco_sim.MujocoSim` with a ``flexcomp`` soft object: its jaw
wrenches, whose magnitudes the pick node reads as the jaw forces, its centre of mass and largest
edge strain), its jaw servo (``MujocoSim.drive_jaw``: a command's effort becomes the jaw
actuator's force range, 0 = the cap, through the same min-jerk ramp) and the pure
:class:`~physai_ros.core.pick.machine.PickMachine` in either close mode. Here nothing runs between a
command and the step that acts on it (every jaw command counts as acknowledged), so a pick is
deterministic for a given model.

The arm's servo targets are written directly each step (the bridge's trajectory controller
follows the same min-jerk blend within 0.1 mrad), as lesson 16's runner does; the jaw gets the
goals the pick node sends (each change of the machine's jaw command, and for the cap close one
goal to ``jaw_closed``), each ramped by the bridge's servo ramp.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import mujoco
import numpy as np

from physai_ros.core.pick.contact import jaws_touch
from physai_ros.core.pick.grip import pick_outcome
from physai_ros.core.pick.machine import PickConfig, PickMachine, PickSensing, arm_ik
from physai_ros.sim.mujoco_sim import MujocoSim
from physai_ros.sim.scene import scene_soft_object

PARK = (0.10, -0.15)  # [m] the scene's rigid cube, base frame: clear of the soft object's square
_DIVERGED = (mujoco.mjtWarning.mjWARN_BADQACC, mujoco.mjtWarning.mjWARN_BADQVEL)


class Material(NamedTuple):
    """The soft cube of a lesson setting: Young's modulus [Pa] and mass [kg]; the rest
    (shape cube, ν, damping, μ, 3 cm, resolution) from config/scene.yaml ``soft``."""

    young: float
    mass: float


class SoftPickResult(NamedTuple):
    """One soft pick, measured.

    outcome: ``pick_outcome`` (held / dropped / not closed) or ``diverged``; lift [m]: the
    object's bottom (centre of mass − size / 2) above the table at the end; close_s [s]: time
    in close when the grip formed (nan: never); squeeze_close, squeeze [N]: mean normal force
    per jaw when the close ended and at the end of the pick (after lift and hold); strain_peak,
    strain: the largest edge strain over the whole pick and at its end [m/m]."""

    outcome: str
    closed: bool
    lift: float
    close_s: float
    squeeze_close: float
    squeeze: float
    strain_peak: float
    strain: float
    abort_reason: str | None
    steps: int


def soft_sim(
    material: Material, pos: Sequence[float], model_path: str | Path | None = None
) -> MujocoSim:
    """The bridge's SO-101 scene with the soft cube of ``material`` centred at ``pos`` (x, y)
    [m, base frame] and the rigid cube parked at ``PARK``."""
    soft = scene_soft_object(
        "so101", pos=(pos[0], pos[1]), young=material.young, mass=material.mass
    )
    return MujocoSim("so101", model_path=model_path, cube_pos=PARK, soft=soft)


def jaw_forces(sim: MujocoSim) -> tuple[float, float]:
    """(fixed, moving) jaw normal force [N]: the magnitude of each jaw's contact wrench, as the
    pick node reads ``jaw_contact/<jaw>``."""
    fixed, moving = sim.jaw_force_norms().tolist()
    return fixed, moving


def run_soft_pick(sim: MujocoSim, cfg: PickConfig) -> SoftPickResult:
    """One pick of ``sim``'s soft object from rest, lockstep; ``cfg.close_mode`` picks the close
    (``cap``: lesson 16's; ``force``: squeeze to ``cfg.force.target``)."""
    m, d = sim.model, sim.data
    rob = cfg.robot
    arm = list(rob["arm_joints"])
    arm_act = [m.actuator(n).id for n in arm]
    home = np.asarray(rob["home"], dtype=float)
    d.qpos[[m.joint(n).qposadr[0] for n in arm]] = home
    d.ctrl[arm_act] = home
    mujoco.mj_forward(m, d)
    jaw_q = m.joint(rob["jaw_joint"]).qposadr[0]
    jaw_v = m.joint(rob["jaw_joint"]).dofadr[0]
    touch = float(cfg.ros["touch_force"])
    size = sim.soft.size
    warnings = [d.warning[w].number for w in _DIVERGED]
    machine = PickMachine(cfg, arm_ik(m, cfg), home, t0=d.time)
    idle = PickSensing()
    # the jaw goals the pick node sends: the cap close is one goal to jaw_closed, which the
    # bridge ramps (gripper_ramp_time = close_ramp), not the machine's per-step ramp
    cap_close = cfg.close_mode == "cap"
    steps, peak, squeeze_close = 0, 0.0, math.nan
    holding = False  # a force close's grip: its law runs on through lift and hold
    while not machine.finished:
        cmd = machine.command(d.time)
        d.ctrl[arm_act] = cmd.arm
        goal = cfg.jaw_closed if machine.state == "close" and cap_close else cmd.jaw
        sim.drive_jaw(goal, 0.0 if math.isnan(cmd.effort) else cmd.effort)
        mujoco.mj_step(m, d)
        steps += 1
        if [d.warning[w].number for w in _DIVERGED] != warnings:  # MuJoCo reset the state
            return _diverged(machine, steps, peak)
        peak = max(peak, sim.soft_object_strain())
        state = machine.state
        if state == "settle":
            sensed = PickSensing(cube_pos=sim.soft_object_pose()[0], cube_stamp=d.time)
        elif state == "close" or (holding and state in ("lift", "hold")):
            # the cap close reads contacts only when they can end it; the force close reads
            # the forces in close and, after a grip, through lift and hold (it keeps them)
            speed = float(d.qvel[jaw_v])
            wanted = state != "close" or machine.wants_contacts(d.time, speed)
            forces = jaw_forces(sim) if wanted else (0.0, 0.0)
            sensed = PickSensing(
                both_touch=jaws_touch(forces, touch),
                jaw_speed=speed,
                jaw=float(d.qpos[jaw_q]),
                jaw_forces=forces,
            )
        else:
            sensed = idle
        if machine.update(d.time, sensed) != "close" and state == "close":
            squeeze_close = float(np.mean(jaw_forces(sim)))
            holding = machine.closed and machine.force_close is not None
    forces = jaw_forces(sim)
    lift = float(sim.soft_object_pose()[0][2] - size / 2.0)
    return SoftPickResult(
        outcome=pick_outcome(lift, jaws_touch(forces, touch), machine.closed, cfg.min_lift),
        closed=machine.closed,
        lift=lift,
        close_s=machine.close_s,
        squeeze_close=squeeze_close,
        squeeze=float(np.mean(forces)),
        strain_peak=peak,
        strain=sim.soft_object_strain(),
        abort_reason=machine.abort_reason,
        steps=steps,
    )


def _diverged(machine: PickMachine, steps: int, peak: float) -> SoftPickResult:
    """A pick whose physics went non-finite (MuJoCo reset it): nothing after it is measured."""
    reason = f"simulation diverged in {machine.state} (MuJoCo reset the state)"
    nan = math.nan
    return SoftPickResult("diverged", machine.closed, nan, nan, nan, nan, peak, nan, reason, steps)
