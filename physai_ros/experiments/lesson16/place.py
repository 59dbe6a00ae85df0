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
from physai_ros.sim.lockstep_pick import run_lockstep_pick
from physai_ros.sim.rigid_cube import RigidCubeWorld


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
    sense_load: bool = True,
    pose_given: bool = False,
) -> PlaceResult:
    """Pick the cube at ``cube_pos`` and place it at ``place`` (centre, base frame [m]), then
    let the physics run ``settle`` [s] more with the arm at rest, and judge the cube's pose.

    sense_load: False hides the jaws' load from the machine, which then ends the descent on the
    arm's stall alone (what a robot without a load estimate senses); pose_given: the cube is
    never measured, only given where it starts (a real arm without a detector)."""
    world = RigidCubeWorld(model, cube_pos, cfg)
    world.sense_load, world.pose_given = sense_load, pose_given
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


PLACE_SQUARE = ((0.175, 0.225), (-0.025, 0.025))  # [m] x, y of place centres the IK reaches


def square_places(
    n: int, seed: int = 0, square: tuple[tuple[float, float], ...] = PLACE_SQUARE
) -> np.ndarray:
    """``n`` place centres [m] uniform over ``square`` (x range, y range; default the SO-101's
    :data:`PLACE_SQUARE`: its top-down grasp reaches about 16-23 cm out, see docs/pick.md), the
    cube resting on the table."""
    from physai_ros.experiments.lesson16.sweep import CUBE_SIZE

    rng = np.random.default_rng(seed)
    xy = np.column_stack([rng.uniform(*square[0], n), rng.uniform(*square[1], n)])
    return np.column_stack([xy, np.full(n, CUBE_SIZE / 2)])


def main(argv: Sequence[str] | None = None) -> int:
    """Pick the lesson's nominal cube and place it at ``--n`` positions; print a summary."""
    import argparse

    from physai_ros.core.motion.limits import load_limits
    from physai_ros.core.pick.machine import load_pick_config
    from physai_ros.experiments.lesson16.sweep import (
        CENTRE,
        CUBE_MASS,
        CUBE_SIZE,
        DEFAULT_CAP,
        Row,
        build_model,
    )

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--n", type=int, default=20, help="placements")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model-path", default=None, help="SO-101 model folder (default: ours)")
    parser.add_argument("--limits-set", default=None, help="config/limits_so101.yaml set")
    parser.add_argument("--stall-only", action="store_true", help="sense support by stall only")
    args = parser.parse_args(argv)
    cfg, limits = load_pick_config(), load_limits("so101", args.limits_set)
    model = build_model(args.model_path, Row(mu=1.0, mass=CUBE_MASS, cap=DEFAULT_CAP))
    cube = (CENTRE[0], CENTRE[1], CUBE_SIZE / 2)
    places = square_places(args.n, args.seed)
    sense_load = not args.stall_only
    results = [run_place(model, cube, p, cfg, limits, sense_load=sense_load) for p in places]
    placed = [r for r in results if r.verdict.outcome == "placed"]
    errors = [r.verdict.error for r in results if math.isfinite(r.verdict.error)]
    print(f"placements {len(results)}, placed within 1 cm and upright {len(placed)}")
    print(f"max error {max(errors) * 100:.2f} cm, mean {np.mean(errors) * 100:.2f} cm")
    print(f"max tilt {math.degrees(max(r.verdict.tilt for r in results)):.2f} deg")
    print(f"least jaw gap after retreat {min(r.jaw_gap for r in results) * 1000:.1f} mm")
    print("support sensed by", sorted({str(r.support_by) for r in results}))
    print("state       mean [s]  max [s]")
    for state in ("lift", "carry", "descend", "lower", "open", "retreat"):
        times = [r.phases.get(state, math.nan) for r in results]
        print(f"{state:10s} {np.mean(times):8.3f} {np.max(times):8.3f}")
    return 0 if len(placed) == len(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
