"""One three-finger pick of a soft object, lockstep with MuJoCo: the hand pick without ROS.

The pieces the ROS graph runs, reused: the sim bridge's scene, controllers and measures
(:class:`~physai_ros.sim.mujoco_sim.MujocoSim` of ``panda_barrett`` with a ``flexcomp``
soft object: the finger wrenches the hand pick reads as the fingers' normal forces, the
object's centre of mass and largest edge strain), the hand's gripper controllers (each finger
command a goal of its ``f<k>_controller``, as the node sends them), the arm's joint trajectory
controller (each arm move one goal: a quintic to the target in the move's duration, what the
trajectory node sends for a timed one-point goal) and the pure
:class:`~physai_ros.core.pick.hand_machine.HandPickMachine`. Nothing runs between a command and
the step that acts on it, so a pick is deterministic for a given plan and place. For tests and
sweeps; the judged runs are over ROS (``physai bench hand-pick``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from physai_ros.core.controllers.jtc import GoalEnd, GoalTolerances, TrajectoryMsg
from physai_ros.core.motion.joint_trajectory import TrajectoryPoint
from physai_ros.core.motion.limits import load_limits
from physai_ros.core.pick.hand_grasp import HandKinematics, PlannedGrasp
from physai_ros.core.pick.hand_machine import HandPickConfig, HandPickMachine, HandSensing
from physai_ros.models.joints import PANDA_ARM_JOINTS
from physai_ros.sim.mujoco_sim import MujocoSim

FINGER_CONTROLLERS = ("f1_controller", "f2_controller", "f3_controller")
SPREAD_CONTROLLER = "spread_controller"


class HandPickResult(NamedTuple):
    """One pick: the machine's final state and reason; rise [m]: the object's centre of mass
    at the end above where it was when the close ended; touching: fingers touching at the end;
    forces, peak (3,) [N]: per finger at the end and the largest while closing; targets (3,)
    [N]; strain_peak [m/m]: the largest edge strain from the close on; close_s [s]."""

    state: str
    abort_reason: str | None
    rise: float
    touching: int
    forces: np.ndarray
    peak: np.ndarray
    targets: np.ndarray
    strain_peak: float
    close_s: float


def run_hand_pick(
    sim: MujocoSim, cfg: HandPickConfig, grasp: PlannedGrasp, kin: HandKinematics, period: float
) -> HandPickResult:
    """Run one pick of ``sim``'s soft object with the planned ``grasp`` (lockstep), the machine
    updated every ``period`` [s] (the node's: 1 / config/hand_pick.yaml ``control_rate``)."""
    levers = kin.levers(grasp)
    touch = cfg.fingers["touch"]

    def poses(g: PlannedGrasp, at: np.ndarray):
        return kin.poses(g, at, cfg.approach_distance, cfg.lift_height)

    arm_q = sim.arm_state().q
    limits = load_limits("panda").select(PANDA_ARM_JOINTS)  # the moves timed as the node's
    machine = HandPickMachine(cfg, poses, arm_q, sim.time, limits=limits)
    machine.planned(sim.time, grasp, levers)
    sent_move, ended = 0, None
    sent: dict[str, tuple[float, float]] = {}
    peak, strain_peak, rise_from = np.zeros(3), 0.0, math.nan
    while not machine.finished:
        move = machine.arm_move
        if move is not None and move.id != sent_move:
            sent_move = move.id
            point = TrajectoryPoint(move.duration, move.q, np.zeros(7), np.zeros(7))
            prepared = sim.arm.prepare(TrajectoryMsg(sim.arm_joints, [point]), sim.time)
            sim.ends += sim.arm.accept(move.id, prepared, GoalTolerances())
        commands = dict(zip(FINGER_CONTROLLERS, machine.finger_commands(), strict=True))
        commands[SPREAD_CONTROLLER] = machine.spread_command()
        for name, command in commands.items():
            if sent.get(name) != command:
                sent[name] = command
                grip = sim.grippers[name]
                sim.ends += grip.accept((name, sim.time), command[0], command[1], sim.time)
        sim.advance(period)
        for end in sim.ends:
            if isinstance(end, GoalEnd) and end.goal_id == sent_move:
                ended = (end.goal_id, end.status == "succeeded", end.error_string)
        sim.ends.clear()
        fingers = [sim.gripper_status(name).position for name in FINGER_CONTROLLERS]
        speeds = [sim.grippers[name].velocity for name in FINGER_CONTROLLERS]
        forces = sim.jaw_force_norms()
        pose = sim.soft_object_pose()[0]
        before = machine.state
        machine.update(
            sim.time,
            HandSensing(np.array(fingers), np.array(speeds), forces, object_pos=pose,
                        object_stamp=sim.time, move=ended),
        )  # fmt: skip
        if before == "close":
            peak = np.maximum(peak, forces)
        if machine.state in ("close", "lift", "hold", "done"):
            strain_peak = max(strain_peak, sim.soft_object_strain())
        if before == "close" and machine.state == "lift":
            rise_from = float(pose[2])
    forces = sim.jaw_force_norms()
    rise = float(sim.soft_object_pose()[0][2]) - rise_from
    return HandPickResult(
        machine.state,
        machine.abort_reason,
        rise,
        int(np.sum(forces > touch)),
        forces,
        peak,
        grasp.targets,
        strain_peak,
        machine.close_s,
    )
