"""The computations of Lesson 16 (the command and its report: the package)."""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import mujoco
import numpy as np

from physai_ros.core.motion.limits import JointLimits, load_limits
from physai_ros.core.pick.contact import contact_force_on
from physai_ros.core.pick.grip import OUTCOMES, G, cone_use, pick_outcome
from physai_ros.core.pick.machine import PickConfig
from physai_ros.core.stats import wilson
from physai_ros.sim.lockstep_pick import run_lockstep_pick
from physai_ros.sim.rigid_cube import RigidCubeWorld
from physai_ros.sim.scene import build_scene

# The lesson's set-up: one place for its numbers.
TIMESTEP = 0.002  # [s]
CUBE_SIZE = 0.03  # [m] edge
CUBE_MASS = 0.03  # [kg]
JAW_MU = 1.0  # jaw pad friction (priority 1; the cube's priority 2 makes its μ count)
DEFAULT_CAP = 2.94  # [N·m] jaw servo torque cap of the reference model
CENTRE = (0.22, 0.0)  # [m] cube square centre in the base frame (base at the world origin)
HALF_SQUARE = 0.01  # [m] positions uniform in ±1 cm
POSITIONS = 10
SEED = 0
SWEEPS = {  # sweep: (varied field, values, fixed fields)
    "A": ("mu", (0.005, 0.01, 0.015, 0.02, 0.03, 0.05, 0.1, 0.3, 1.0), {"mass": 0.03, "cap": 0.5}),
    "B": ("cap", (2.94, 1.0, 0.5, 0.3, 0.2, 0.15, 0.1), {"mass": 0.03, "mu": 0.05}),
    "C": ("mass", (0.03, 0.1, 0.2, 0.3, 0.4, 0.45, 0.5, 0.7), {"mu": 0.3, "cap": 0.5}),
}


@dataclass(frozen=True)
class Row:
    """One sweep row's physics: cube friction μ, cube mass [kg], jaw torque cap [N·m]."""

    mu: float
    mass: float
    cap: float


class PickResult(NamedTuple):
    """One pick, measured: outcome, and what the lesson's tables report."""

    outcome: str
    ejected: bool
    closed: bool
    lift: float  # [m] cube bottom above the table at the end
    close_s: float  # [s] time in close (nan if the grip never formed)
    squeeze: float  # [N] N1 + N2 when close ended
    forces: tuple[float, float]  # [N] (fixed, moving) jaw normal forces at the end
    steps: int
    ik_error: float  # [m]
    abort_reason: str | None
    lift_force: float  # [N] vertical force of the jaws on the cube at the end
    max_cone_use: float  # largest |f_t| / (μ f_n) over the jaw contacts at the end (nan: none)


def build_model(model_path: str | Path | None, row: Row) -> mujoco.MjModel:
    """The lesson's scene (``physai_ros.models.build_scene``): SO-101 on a table, a 3 cm cube
    (condim 4, priority 2), jaw pads μ 1 priority 1, this row's μ, mass and jaw cap, 2 ms steps."""
    return build_scene(
        "so101",
        model_path=model_path,
        base_pos=(0.0, 0.0, 0.0),
        base_yaw_deg=0.0,
        cube_pos=CENTRE,
        cube_size=CUBE_SIZE,
        cube_mass=row.mass,
        cube_mu=row.mu,
        jaw_mu=JAW_MU,
        jaw_torque_cap=row.cap,
        timestep=TIMESTEP,
    )


@functools.cache
def so101_limits() -> JointLimits:
    """The SO-101's default limit set, read once per process (a sweep runs hundreds of picks)."""
    return load_limits("so101")


def run_pick(
    model: mujoco.MjModel,
    cube_pos: Sequence[float],
    cfg: PickConfig,
    ctrl_log: list[np.ndarray] | None = None,
    limits: JointLimits | None = None,
) -> PickResult:
    """One scripted pick from rest, lockstep with MuJoCo; returns its measured outcome.

    ctrl_log: if given, every step's ``data.ctrl`` is appended (benchmarks replay it).
    limits: the arm's joint limits every move is timed within (default: the SO-101's default
    set, as the pick node uses; its moves at the configured durations are well inside it, so
    the lesson's numbers are those of the configured timings).
    """
    world = RigidCubeWorld(model, cube_pos, cfg, ctrl_log)
    limits = so101_limits() if limits is None else limits
    run = run_lockstep_pick(world, cfg, world.home, limits=limits)
    machine, data, sensor = run.machine, world.data, world.sensor
    reading = sensor.read(data)
    lift = float(data.xpos[world.cube_body][2] - CUBE_SIZE / 2)
    outcome = pick_outcome(lift, reading.both_touch, machine.closed, cfg.min_lift)
    moved = float(np.linalg.norm(data.xpos[world.cube_body][:2] - world.start[:2]))
    mu = float(model.geom_friction[sensor.object_geom][0])
    uses = [
        cone_use(contact_force_on(model, data, k, sensor.object_geom)[0], mu)
        for k, _ in sensor.jaw_contacts(data)
        if contact_force_on(model, data, k, sensor.object_geom)[0][0] > 0.0
    ]
    return PickResult(
        outcome=outcome,
        ejected=moved > cfg.eject_distance,
        closed=machine.closed,
        lift=lift,
        close_s=machine.close_s,
        squeeze=world.squeeze,
        forces=(reading.fixed_normal, reading.moving_normal),
        steps=run.steps,
        ik_error=machine.ik_error,
        abort_reason=machine.abort_reason,
        lift_force=reading.lift_force,
        max_cone_use=max(uses) if uses else math.nan,
    )


def cube_positions(n: int = POSITIONS, seed: int = SEED) -> np.ndarray:
    """``n`` cube centres [m], uniform in the 2×2 cm square around (22, 0) cm, on the table."""
    rng = np.random.default_rng(seed)
    xy = np.asarray(CENTRE) + rng.uniform(-HALF_SQUARE, HALF_SQUARE, size=(n, 2))
    return np.column_stack([xy, np.full(n, CUBE_SIZE / 2)])


_MODELS: dict[tuple, mujoco.MjModel] = {}  # per-process cache: one compile per row


def model_for(model_path: str | Path | None, row: Row) -> mujoco.MjModel:
    """The row's compiled model, cached per process (compiling costs more than a pick)."""
    key = (model_path, row)
    if key not in _MODELS:
        _MODELS[key] = build_model(model_path, row)
    return _MODELS[key]


def _trial(job: tuple) -> PickResult:
    model_path, row, pos, cfg = job
    return run_pick(model_for(model_path, row), pos, cfg)


def run_trials(jobs: list[tuple], workers: int, progress: bool = True) -> list[PickResult]:
    """Run (model_path, row, pos, cfg) jobs in order; ``workers`` > 1 uses processes."""
    from tqdm import tqdm

    bar = tqdm(total=len(jobs), file=sys.stderr, disable=not progress, desc="picks")
    results = []
    if workers <= 1:
        for job in jobs:
            results.append(_trial(job))
            bar.update()
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for result in pool.map(_trial, jobs, chunksize=max(1, len(jobs) // (4 * workers))):
                results.append(result)
                bar.update()
    bar.close()
    return results


class RowStats(NamedTuple):
    """A sweep row summarised as the lesson's tables report it."""

    value: float
    row: Row
    counts: dict[str, int]
    ejected: int
    close_s: float  # [s] mean over picks whose grip formed (nan if none)
    squeeze: float  # [N] mean N1 + N2 over the same picks
    ratio: float  # μ (N1 + N2) / (m g) from that mean squeeze
    ci: tuple[float, float]


def summarise(value: float, row: Row, results: Sequence[PickResult]) -> RowStats:
    counts = {o: sum(r.outcome == o for r in results) for o in OUTCOMES}
    closed = [r for r in results if r.closed]
    close_s = float(np.mean([r.close_s for r in closed])) if closed else math.nan
    squeeze = float(np.mean([r.squeeze for r in closed])) if closed else math.nan
    ratio = row.mu * squeeze / (row.mass * G) if closed else math.nan
    ci = tuple(wilson(counts["held"], len(results)))
    ejected = sum(r.ejected for r in results)
    return RowStats(value, row, counts, ejected, close_s, squeeze, ratio, ci)


def sweep_rows(name: str) -> list[tuple[float, Row]]:
    field_name, values, fixed = SWEEPS[name]
    return [(v, Row(**{**fixed, field_name: v})) for v in values]


def run_sweep(
    name: str, model_path, cfg: PickConfig, positions: np.ndarray, workers: int, progress=True
) -> list[RowStats]:
    rows = sweep_rows(name)
    jobs = [(model_path, row, pos, cfg) for _, row in rows for pos in positions]
    results = run_trials(jobs, workers, progress)
    n = len(positions)
    return [summarise(v, row, results[i * n : (i + 1) * n]) for i, (v, row) in enumerate(rows)]


def nominal(model_path, cfg: PickConfig) -> PickResult:
    """The lesson's nominal pick: μ 1, 30 g, default cap, cube at (22, 0) cm."""
    model = build_model(model_path, Row(mu=1.0, mass=CUBE_MASS, cap=DEFAULT_CAP))
    return run_pick(model, (CENTRE[0], CENTRE[1], CUBE_SIZE / 2), cfg)
