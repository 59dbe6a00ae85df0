"""The rigid cube of the pick lessons as a lockstep world: the cube at a given pose, the arm at
home, arm and jaw targets written straight to their position servos.

Lesson 16's sweeps, the place experiments and the dataset recorder all step this one world
through :func:`~physai_ros.sim.lockstep_pick.run_lockstep_pick`, so what a "pick" senses is the
same in each.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import mujoco
import numpy as np

from physai_ros.core.pick.contact import JawContactSensor, jaws_touch
from physai_ros.core.pick.machine import (
    PickCommand,
    PickConfig,
    PickMachine,
    PickSensing,
    object_estimate,
)
from physai_ros.sim.lockstep_pick import pose_arm_at_home


class TouchTest:
    """Both jaws push on the object: ``JawContactSensor.read(...).both_touch``, vectorised.

    Runs after every physics step of the close state, so it works on MuJoCo's contact arrays
    instead of a Python loop over contacts. For an elliptic cone a contact's normal force is its
    first constraint row; for a pyramidal cone it is not (rows are cone edges), so that case
    falls back to the sensor's ``mj_contactForce`` path. Either way the decision is
    ``jaws_touch`` of the jaws' normal-force sums at 0, as the sensor's: these are the normal
    forces of the cube's contacts, not the pick node's wrench magnitudes over ``touch_force``
    (the lesson's numbers were measured with this reading; the threshold change would move them).
    """

    def __init__(self, model: mujoco.MjModel, sensor: JawContactSensor) -> None:
        self.sensor = sensor
        self.obj = sensor.object_geom
        self.side = np.zeros(model.ngeom + 1, dtype=np.int8)  # last entry: "not a contact"
        self.side[list(sensor.fixed)] = 1
        self.side[list(sensor.moving)] = 2
        self.elliptic = int(model.opt.cone) == int(mujoco.mjtCone.mjCONE_ELLIPTIC)

    def __call__(self, data: mujoco.MjData) -> bool:
        if not self.elliptic:
            return self.sensor.read(data).both_touch
        if data.ncon == 0:
            return False
        contact = data.contact
        g1, g2, adr = contact.geom1, contact.geom2, contact.efc_address
        other = np.where(g1 == self.obj, g2, np.where(g2 == self.obj, g1, -1))
        side = self.side[other]  # -1 indexes the "not a contact" entry
        pushing = (adr >= 0) & (side > 0)
        if not pushing.any():
            return False
        normal = np.maximum(data.efc_force[adr[pushing]], 0.0)  # the sensor skips pulls too
        sums = np.bincount(side[pushing], weights=normal, minlength=3)  # [-, fixed, moving]
        return jaws_touch(sums[1:].tolist())


class RigidCubeWorld:
    """The lesson's scene for :func:`~physai_ros.sim.lockstep_pick.run_lockstep_pick`: the cube
    at ``cube_pos`` and the arm at home, at rest; arm and jaw targets written straight to their
    position servos (the jaw at its torque cap).

    It reads only what the machine needs in the current state (the cube pose while settling,
    and at the end of lift when placing; the jaw speed while closing, and the jaw contacts only
    when ``PickMachine.wants_contacts`` says they can matter; the jaws' vertical load and the
    arm joints while lowering to place): a sweep is 650 000 steps, and the Python around
    ``mj_step`` is what ``physai bench pick`` measures.

    ctrl_log: if given, every step's ``data.ctrl`` is appended (benchmarks replay it).
    cube_yaw_deg: the cube's rotation about the vertical [deg] (the pick does not turn the jaw
    to it, so a large one is a harder pick).
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        cube_pos: Sequence[float],
        cfg: PickConfig,
        ctrl_log: list[np.ndarray] | None = None,
        cube_yaw_deg: float = 0.0,
    ) -> None:
        rob = cfg.robot
        self.model, self.data = model, mujoco.MjData(model)
        data = self.data
        cube_q = model.joint("cube").qposadr[0]
        self.cube_body = model.body("cube").id
        data.qpos[cube_q : cube_q + 3] = cube_pos
        if cube_yaw_deg:
            half = math.radians(cube_yaw_deg) / 2
            data.qpos[cube_q + 3 : cube_q + 7] = (math.cos(half), 0.0, 0.0, math.sin(half))
        self.home = pose_arm_at_home(model, data, cfg)
        arm_act = [model.actuator(n).id for n in rob["arm_joints"]]
        if arm_act == list(range(arm_act[0], arm_act[0] + len(arm_act))):
            arm_act = slice(arm_act[0], arm_act[0] + len(arm_act))  # a view, no fancy indexing
        self.arm_act = arm_act
        self.jaw_act = model.actuator(rob["jaw_joint"]).id
        self.jaw_dof = model.joint(rob["jaw_joint"]).dofadr[0]
        self.arm_q = np.array([model.joint(n).qposadr[0] for n in rob["arm_joints"]])
        mujoco.mj_forward(model, data)
        self.start = data.xpos[self.cube_body].copy()
        self.sensor = JawContactSensor(model, "cube", rob["fixed_jaw_body"], rob["moving_jaw_body"])
        self.both_touch = TouchTest(model, self.sensor)
        self.ctrl_log = ctrl_log
        self.squeeze = math.nan  # [N] N1 + N2 when close ended
        self.sense_load = True  # False: lowering senses only the arm (a robot without a load)
        # True: the cube is never measured, only given where it starts (a real arm without a
        # detector), and the pick estimates it as the pick node does (``object_estimate``)
        self.pose_given = False
        self._idle = PickSensing()

    def actuate(self, machine: PickMachine, command: PickCommand) -> None:
        ctrl = self.data.ctrl
        ctrl[self.arm_act] = command.arm
        ctrl[self.jaw_act] = command.jaw
        if self.ctrl_log is not None:
            self.ctrl_log.append(ctrl.copy())

    def after_step(self) -> None:
        return None

    def sense(self, machine: PickMachine, state: str) -> PickSensing:
        data = self.data
        if state == "close":
            speed = float(data.qvel[self.jaw_dof])
            touch = machine.wants_contacts(data.time, speed) and self.both_touch(data)
            return PickSensing(both_touch=touch, jaw_speed=speed)
        if state == "settle" or (state == "lift" and machine.place is not None):
            # the plan at settle's end needs the cube pose; a place, where it sits in the jaws
            if self.pose_given:
                pose = object_estimate(None, self.start, data.time, 0.0, machine.past_close)
                pos, stamp = (None, None) if pose is None else pose
                return PickSensing(cube_pos=pos, cube_stamp=stamp)
            return PickSensing(cube_pos=data.xpos[self.cube_body].copy(), cube_stamp=data.time)
        if state == "lower":  # placing: is the table taking the cube's weight?
            load = self.sensor.read(data).lift_force if self.sense_load else math.nan
            return PickSensing(load=load, arm=data.qpos[self.arm_q].copy())
        return self._idle

    def close_ended(self, machine: PickMachine) -> None:
        reading = self.sensor.read(self.data)
        self.squeeze = reading.fixed_normal + reading.moving_normal
