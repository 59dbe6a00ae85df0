"""One scripted pick lockstep with MuJoCo: the loop every in-process pick runner shares.

The pure :class:`~physai_ros.core.pick.machine.PickMachine` decides; a *world* says how its
commands reach the actuators and what the sensors read after each step. Lesson 16's rigid cube
and the soft-object lesson are two worlds around this one loop, so a change to how a pick is
stepped (the order of command, step and sensing, when the close counts as ended) is made once.

Nothing runs between a command and the step that acts on it, so a pick is deterministic for a
given model and world: the lessons' tables are reproducible bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Protocol

import mujoco
import numpy as np

from physai_ros.core.motion.limits import JointLimits
from physai_ros.core.pick.machine import (
    PickCommand,
    PickConfig,
    PickMachine,
    PickSensing,
    arm_ik,
)


class LockstepWorld(Protocol):
    """What a pick acts on: a MuJoCo model and its data, posed at the start of the pick."""

    model: mujoco.MjModel
    data: mujoco.MjData

    def actuate(self, machine: PickMachine, command: PickCommand) -> None:
        """Write one step's command into ``data.ctrl`` (read by the step that follows)."""

    def after_step(self) -> str | None:
        """Measure what the whole pick needs after each step; a reason ends the pick at once
        (physics that went non-finite, say), None goes on."""

    def sense(self, machine: PickMachine, state: str) -> PickSensing:
        """What the machine reads after the step it spent in ``state``; a world reads only what
        that state needs (a sweep is hundreds of thousands of steps)."""

    def close_ended(self, machine: PickMachine) -> None:
        """The step on which the machine left ``close``: the squeeze is measured here."""


class LockstepRun(NamedTuple):
    """The pick as it ended: the machine (its state, close time, abort reason), the physics
    steps taken and the world's reason if it stopped the pick (None: the machine finished)."""

    machine: PickMachine
    steps: int
    stopped: str | None


def pose_arm_at_home(model: mujoco.MjModel, data: mujoco.MjData, config: PickConfig) -> np.ndarray:
    """Put the arm joints at the pick's home pose (``robot.home``) and return it [rad]."""
    robot = config.robot
    home = np.asarray(robot["home"], dtype=float)
    data.qpos[[model.joint(n).qposadr[0] for n in robot["arm_joints"]]] = home
    return home


def run_lockstep_pick(
    world: LockstepWorld,
    config: PickConfig,
    home: np.ndarray,
    place: Sequence[float] | None = None,
    limits: JointLimits | None = None,
) -> LockstepRun:
    """Run one pick from ``world``'s current state to the machine's end (or the world's stop).

    place, limits: the machine's place target [m] and joint limits (None: lift and hold).

    Each step: the machine's command at the current time → the world's actuators → one
    ``mj_step`` → the world's measures → its sensing for the state the step was spent in → the
    machine's update.
    """
    model, data = world.model, world.data
    ik = arm_ik(model, config)
    machine = PickMachine(config, ik, home, t0=data.time, place=place, limits=limits)
    actuate, after_step, sense = world.actuate, world.after_step, world.sense
    step = mujoco.mj_step
    steps = 0
    while not machine.finished:
        actuate(machine, machine.command(data.time))
        step(model, data)
        steps += 1
        stopped = after_step()
        if stopped is not None:
            return LockstepRun(machine, steps, stopped)
        state = machine.state
        if machine.update(data.time, sense(machine, state)) != "close" and state == "close":
            world.close_ended(machine)
    return LockstepRun(machine, steps, None)
