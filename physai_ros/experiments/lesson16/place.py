"""Pick and place lockstep with MuJoCo: lesson 16's pick, then the place, judged by physics.

The cube is picked as in the lesson's sweeps (:class:`~physai_ros.experiments.lesson16.sweep.
RigidCubeWorld`), carried to a place position, lowered until the table takes its weight,
released, and the gripper retreats. The outcome is judged from the cube's own pose after the
retreat by :func:`~physai_ros.core.pick.judge.place_pose_verdict`, never from the script.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import mujoco
import numpy as np

from physai_ros.core.motion.limits import JointLimits
from physai_ros.core.pick.judge import PlaceVerdict, place_pose_verdict
from physai_ros.core.pick.machine import PickConfig
from physai_ros.experiments.lesson16.sweep import RigidCubeWorld
from physai_ros.sim.lockstep_pick import run_lockstep_pick


class PlaceResult(NamedTuple):
    """One pick and place, measured after the retreat.

    verdict: the judge's (from the cube pose); state: the machine's end (placed, aborted…);
    abort_reason; support_by: which signal ended the descent (load | stall | None);
    cube: the cube centre [m]; phases: seconds spent in each state; jaw_gap: the least
    distance between a jaw and the cube [m] (positive: clear of it); steps.
    """

    verdict: PlaceVerdict
    state: str
    abort_reason: str | None
    support_by: str | None
    cube: np.ndarray
    phases: dict[str, float]
    jaw_gap: float
    steps: int


def phase_durations(entered: Sequence[tuple[str, float]], end: float) -> dict[str, float]:
    """Seconds [s] in each state from the machine's (state, entered at) log, up to ``end``."""
    times = [t for _, t in entered[1:]] + [end]
    return {state: t1 - t0 for (state, t0), t1 in zip(entered, times, strict=True)}


def jaw_gap(model: mujoco.MjModel, data: mujoco.MjData, world: RigidCubeWorld) -> float:
    """Least distance [m] between any jaw geom and the cube (negative: penetrating)."""
    sensor, gap = world.sensor, math.inf
    for geom in (*sensor.fixed, *sensor.moving):
        fromto = np.zeros(6)
        gap = min(gap, mujoco.mj_geomDistance(model, data, geom, sensor.object_geom, 0.1, fromto))
    return float(gap)


def run_place(
    model: mujoco.MjModel,
    cube_pos: Sequence[float],
    place: Sequence[float],
    cfg: PickConfig,
    limits: JointLimits,
    settle: float = 0.3,
) -> PlaceResult:
    """Pick the cube at ``cube_pos`` and place it at ``place`` (centre, base frame [m]), then
    let the physics run ``settle`` [s] more with the arm at rest, and judge the cube's pose."""
    world = RigidCubeWorld(model, cube_pos, cfg)
    home = world.home
    run = run_lockstep_pick(world, cfg, home, place=place, limits=limits)
    machine, data = run.machine, world.data
    end = data.time
    steps = run.steps
    command = machine.command(data.time)
    for _ in range(round(settle / model.opt.timestep)):
        world.actuate(machine, command)
        mujoco.mj_step(model, data)
        steps += 1
    cube = data.xpos[world.cube_body].copy()
    quat = data.xquat[world.cube_body].copy()
    gap = jaw_gap(model, data, world)
    verdict = place_pose_verdict(cube, quat, 0.0, np.asarray(place, float), jaw_clear=gap > 0.0)
    return PlaceResult(
        verdict=verdict,
        state=machine.state,
        abort_reason=machine.abort_reason,
        support_by=machine.support_by,
        cube=cube,
        phases=phase_durations(machine.entered, end),
        jaw_gap=gap,
        steps=steps,
    )
