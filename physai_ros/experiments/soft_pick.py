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
from physai_ros.core.pick.machine import PickCommand, PickConfig, PickMachine, PickSensing
from physai_ros.sim.lockstep_pick import pose_arm_at_home, run_lockstep_pick
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


class SoftObjectWorld:
    """``sim``'s soft object for :func:`~physai_ros.sim.lockstep_pick.run_lockstep_pick`, driven
    as the sim bridge drives it: arm targets written each step, jaw goals through the bridge's
    servo (``MujocoSim.drive_jaw``), the jaw forces read as the pick node reads them.

    The cap close reads contacts only when they can end it; the force close reads the forces in
    close and, after a grip, through lift and hold (its law runs on: it keeps the squeeze).
    """

    def __init__(self, sim: MujocoSim, cfg: PickConfig) -> None:
        m, d = sim.model, sim.data
        rob = cfg.robot
        self.sim, self.cfg, self.model, self.data = sim, cfg, m, d
        self.arm_act = [m.actuator(n).id for n in rob["arm_joints"]]
        self.home = pose_arm_at_home(m, d, cfg)
        d.ctrl[self.arm_act] = self.home
        mujoco.mj_forward(m, d)
        self.jaw_q = m.joint(rob["jaw_joint"]).qposadr[0]
        self.jaw_v = m.joint(rob["jaw_joint"]).dofadr[0]
        self.touch = float(cfg.ros["touch_force"])
        self.warnings = [d.warning[w].number for w in _DIVERGED]
        # the jaw goals the pick node sends: the cap close is one goal to jaw_closed, which the
        # bridge ramps (gripper_ramp_time = close_ramp), not the machine's per-step ramp
        self.cap_close = cfg.close_mode == "cap"
        self.peak = 0.0  # largest edge strain so far
        self.squeeze_close = math.nan  # [N] mean per jaw when close ended
        self.holding = False  # a force close's grip: its law runs on through lift and hold
        self._idle = PickSensing()

    def actuate(self, machine: PickMachine, command: PickCommand) -> None:
        self.data.ctrl[self.arm_act] = command.arm
        close = machine.state == "close" and self.cap_close
        goal = self.cfg.jaw_closed if close else command.jaw
        self.sim.drive_jaw(goal, 0.0 if math.isnan(command.effort) else command.effort)

    def after_step(self) -> str | None:
        if [self.data.warning[w].number for w in _DIVERGED] != self.warnings:
            return "MuJoCo reset the state"
        self.peak = max(self.peak, self.sim.soft_object_strain())
        return None

    def sense(self, machine: PickMachine, state: str) -> PickSensing:
        d = self.data
        if state == "settle":
            return PickSensing(cube_pos=self.sim.soft_object_pose()[0], cube_stamp=d.time)
        if state == "close" or (self.holding and state in ("lift", "hold")):
            speed = float(d.qvel[self.jaw_v])
            wanted = state != "close" or machine.wants_contacts(d.time, speed)
            forces = jaw_forces(self.sim) if wanted else (0.0, 0.0)
            return PickSensing(
                both_touch=jaws_touch(forces, self.touch),
                jaw_speed=speed,
                jaw=float(d.qpos[self.jaw_q]),
                jaw_forces=forces,
            )
        return self._idle

    def close_ended(self, machine: PickMachine) -> None:
        self.squeeze_close = float(np.mean(jaw_forces(self.sim)))
        self.holding = machine.closed and machine.force_close is not None


def run_soft_pick(sim: MujocoSim, cfg: PickConfig) -> SoftPickResult:
    """One pick of ``sim``'s soft object from rest, lockstep; ``cfg.close_mode`` picks the close
    (``cap``: lesson 16's; ``force``: squeeze to ``cfg.force.target``)."""
    world = SoftObjectWorld(sim, cfg)
    run = run_lockstep_pick(world, cfg, world.home)
    machine = run.machine
    if run.stopped is not None:
        return _diverged(machine, run.steps, world.peak, run.stopped)
    forces = jaw_forces(sim)
    lift = float(sim.soft_object_pose()[0][2] - sim.soft.size / 2.0)
    return SoftPickResult(
        outcome=pick_outcome(lift, jaws_touch(forces, world.touch), machine.closed, cfg.min_lift),
        closed=machine.closed,
        lift=lift,
        close_s=machine.close_s,
        squeeze_close=world.squeeze_close,
        squeeze=float(np.mean(forces)),
        strain_peak=world.peak,
        strain=sim.soft_object_strain(),
        abort_reason=machine.abort_reason,
        steps=run.steps,
    )


def _diverged(machine: PickMachine, steps: int, peak: float, why: str) -> SoftPickResult:
    """A pick whose physics went non-finite (MuJoCo reset it): nothing after it is measured."""
    reason = f"simulation diverged in {machine.state} ({why})"
    nan = math.nan
    return SoftPickResult("diverged", machine.closed, nan, nan, nan, nan, peak, nan, reason, steps)
