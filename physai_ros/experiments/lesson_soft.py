"""Lesson soft: the cap-based close against the planned-force close on soft cubes.

``physai lesson soft [--positions N] [--youngs E,..] [--masses M,..] [--jobs N] [--contact N]
[--output DIR]``

Soft 3 cm cubes (config/scene.yaml ``soft``: MuJoCo flexcomp, 3 vertices per edge) of three
stiffnesses and two masses, each picked at lesson 16's 10 positions (2×2 cm square around
(22, 0) cm, seed 0) lockstep with MuJoCo (:mod:`physai_ros.experiments.soft_pick`) twice: with
lesson 16's close against the 2.94 N·m jaw torque cap, and with ``close_mode: force`` squeezing to
the grasp planner's target (``plan_grasp``'s core, as ``plan.source: planner``, raised to the
jaw's least controllable squeeze by ``force_plan.JawFloor``). A pick succeeds when the object is
held (lifted ≥ 4 cm, in both jaws) and not crushed (its largest edge strain stayed at or below
``STRAIN_LIMIT`` throughout). Tables, a figure and a verdict line under ``--output``.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import NamedTuple

import numpy as np

from physai_ros.config import load_scene_config
from physai_ros.core.grasp_planning.closing import NoEquilibrium
from physai_ros.core.grasp_planning.plan import plan
from physai_ros.core.grasp_planning.pregrasp import Unreachable
from physai_ros.core.grasp_planning.request import request_inputs
from physai_ros.core.pick.force_close import ForceCloseParams
from physai_ros.core.pick.force_plan import JawFloor, PlanSource, plan_request, planned_params
from physai_ros.core.pick.machine import PickConfig, force_params, load_pick_tree, pick_config
from physai_ros.core.stats import wilson
from physai_ros.errors import InvalidInput
from physai_ros.experiments.lesson16.report import markdown
from physai_ros.experiments.lesson16.sweep import cube_positions
from physai_ros.experiments.soft_pick import Material, SoftPickResult, run_soft_pick, soft_sim

# Stiffness [Pa]: a soft sponge-like foam, the judged cube (a soft silicone), a firm gel;
# below 2·10⁴ the 30 g cube sags under its own weight (1.8 % edge strain at rest, 6 % at 100 g),
# above 2·10⁵ it is rigid next to the SO-101's least squeeze (2.8 % at the jaw floor).
YOUNGS = (2.0e4, 5.0e4, 2.0e5)
# Mass [kg]: the 30 g, and 100 g (3.3× the weight: μ m g = 0.98 N of table friction the
# contact squeeze must overcome to slide the cube onto the fixed jaw).
MASSES = (0.03, 0.10)
MODES = ("cap", "planned")
# [N per jaw] the force close's contact squeeze for these objects: above the jaw's friction loss
# (0.052 N·m / 0.0718 m = 0.72 N) plus the 100 g cube's table friction (0.98 N at μ 1), since the
# moving jaw slides the cube onto the fixed one (at 1.5 N it stalled against it, never touching
# the fixed jaw), and below the band's low end at the jaw floor (0.85 × 2.41 N = 2.05 N).
CONTACT = 1.9
# Crushed: some edge of the flex squashed or stretched by half or more, far outside the linear
# elasticity the flex models. Stated at the cube's default resolution, 3 vertices per edge
# (soft_count 3): the largest edge strain is local and grows with resolution (at a 0.6 N·m cap,
# 0.28 at count 3, 0.77 at count 4; docs/soft_objects.md).
STRAIN_LIMIT = 0.5


class Setting(NamedTuple):
    """One table row: the cube's material and the close (``MODES``)."""

    material: Material
    mode: str


class PlannedTarget(NamedTuple):
    """The planned close's target for one material: the planner's largest target [N per jaw],
    its basis, and the force close's parameters (target raised to the jaw floor if below)."""

    planned: float
    basis: str
    params: ForceCloseParams


class SettingStats(NamedTuple):
    """A row summarised: picks, held, crushed (peak strain > limit), successes (held and not
    crushed) with their Wilson 95 % interval, the mean final squeeze [N per jaw] and close time
    [s] over picks whose grip formed, the peak strain's mean and largest, the final strain's
    mean."""

    setting: Setting
    target: PlannedTarget
    n: int
    held: int
    crushed: int
    success: int
    ci: tuple[float, float]
    squeeze: float
    strain: float
    strain_max: float
    strain_end: float
    close_s: float


def planned_target(tree: dict, material: Material, jaw_friction: float) -> PlannedTarget:
    """Plan the soft cube of ``material`` with the pick's own planner request (``plan_request``
    on config/scene.yaml's ``soft`` with this E and mass, the pick's ``cube_size``) and turn the
    answer into the force close's parameters as the pick node does (``planned_params``)."""
    scene = load_scene_config()
    scene = {**scene, "soft": {**scene["soft"], "young": material.young, "mass": material.mass}}
    fields = plan_request(PlanSource(source="planner", object="soft"), scene, tree["cube_size"])
    try:
        result = plan(*request_inputs(cloud=None, **fields))
    except (Unreachable, NoEquilibrium) as exc:
        raise InvalidInput(f"grasp planner, {material}: {exc}") from exc
    targets = [float(v) for v in result.force_targets]
    force = dataclasses.replace(force_params(tree), friction=jaw_friction)
    floor = JawFloor(jaw_friction, force.lever, force.tolerance)
    params = planned_params(force, True, "", targets, floor).params
    return PlannedTarget(max(targets), str(result.target_basis), params)


def configs(
    tree: dict, material: Material, contact: float, jaw_friction: float
) -> tuple[dict[str, PickConfig], PlannedTarget]:
    """The two picks' configurations for ``material``: lesson 16's cap close, and the force
    close with ``contact`` [N] and the planned target."""
    cap = pick_config(dict(tree, close_mode="cap"))
    force_tree = dict(tree, close_mode="force", force=dict(tree["force"], contact=contact))
    target = planned_target(force_tree, material, jaw_friction)
    planned = dataclasses.replace(pick_config(force_tree), force=target.params)
    return {"cap": cap, "planned": planned}, target


def _trial(job: tuple) -> SoftPickResult:
    model_path, material, pos, cfg = job
    return run_soft_pick(soft_sim(material, pos, model_path), cfg)


def run_trials(jobs: list[tuple], workers: int, progress: bool = True) -> list[SoftPickResult]:
    """(model_path, material, pos, cfg) jobs in order; ``workers`` > 1 uses processes."""
    from tqdm import tqdm

    bar = tqdm(total=len(jobs), file=sys.stderr, disable=not progress, desc="soft picks")
    results = []
    if workers <= 1:
        for result in map(_trial, jobs):
            results.append(result)
            bar.update()
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for result in pool.map(_trial, jobs):
                results.append(result)
                bar.update()
    bar.close()
    return results


def summarise(
    setting: Setting,
    target: PlannedTarget,
    results: Sequence[SoftPickResult],
    limit: float = STRAIN_LIMIT,
) -> SettingStats:
    held = [r.outcome == "held" for r in results]
    crushed = [not r.strain_peak <= limit for r in results]  # a diverged pick: nan, crushed
    success = sum(h and not c for h, c in zip(held, crushed, strict=True))
    closed = [r for r in results if r.closed]

    def mean(values: list[float]) -> float:
        return float(np.mean(values)) if values else math.nan

    return SettingStats(
        setting,
        target,
        len(results),
        sum(held),
        sum(crushed),
        success,
        tuple(wilson(success, len(results))),
        mean([r.squeeze for r in closed]),
        mean([r.strain_peak for r in results]),
        max(r.strain_peak for r in results),
        mean([r.strain for r in results if r.outcome != "diverged"]),
        mean([r.close_s for r in closed]),
    )


def _target(t: PlannedTarget) -> str:
    return f"{t.params.target:.2f} (plan {t.planned:.2f}, {t.basis})"


def table(stats: Sequence[SettingStats]) -> tuple[list[str], list[list[str]]]:
    header = [
        "E [kPa]",
        "mass [g]",
        "close",
        "target [N/jaw]",
        "held",
        "crushed",
        "success (Wilson 95 %)",
        "final squeeze [N/jaw]",
        "strain: peak mean / max, end mean",
        "close [s]",
    ]
    body = []
    for s in stats:
        lo, hi = s.ci
        body.append(
            [
                f"{s.setting.material.young / 1e3:g}",
                f"{s.setting.material.mass * 1e3:g}",
                s.setting.mode,
                "cap" if s.setting.mode == "cap" else _target(s.target),
                f"{s.held}/{s.n}",
                f"{s.crushed}/{s.n}",
                f"{s.success}/{s.n} [{lo:.2f}, {hi:.2f}]",
                f"{s.squeeze:.2f}",
                f"{s.strain:.2f} / {s.strain_max:.2f}, {s.strain_end:.2f}",
                f"{s.close_s:.2f}",
            ]
        )
    return header, body


def verdict(stats: Sequence[SettingStats], limit: float = STRAIN_LIMIT) -> str:
    """Where the cap close crushes or loses the object and the planned close does not."""
    rows = {(s.setting.material, s.setting.mode): s for s in stats}
    wins, both, neither = [], [], []
    for material in dict.fromkeys(s.setting.material for s in stats):
        cap, planned = rows[(material, "cap")], rows[(material, "planned")]
        name = f"E {material.young / 1e3:g} kPa / {material.mass * 1e3:g} g"
        cap_fails = cap.crushed or cap.n - cap.held
        planned_fails = planned.crushed or planned.n - planned.held
        how = f"crushed {cap.crushed}/{cap.n}, lost {cap.n - cap.held}/{cap.n}"
        if cap_fails and not planned_fails:
            wins.append(f"{name} (cap: {how})")
        elif cap_fails:
            both.append(
                f"{name} (cap: {how}; planned: crushed {planned.crushed}/{planned.n}, "
                f"lost {planned.n - planned.held}/{planned.n})"
            )
        else:
            neither.append(name)
    sentences = [
        f"verdict (crushed: peak edge strain > {limit:g} at soft_count 3): the cap-based close "
        f"crushes or loses the object and the planned close does not on "
        f"{'; '.join(wins) or 'no setting'}"
    ]
    if both:
        sentences.append(f"Both fail on {'; '.join(both)}")
    if neither:
        sentences.append(f"Neither fails on {'; '.join(neither)}")
    return ". ".join(sentences) + "."


def plot(out: Path, stats: Sequence[SettingStats], limit: float = STRAIN_LIMIT) -> Path:
    """Success with Wilson intervals, final squeeze and peak strain per setting, both closes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    materials = list(dict.fromkeys(s.setting.material for s in stats))
    labels = [f"{m.young / 1e3:g} kPa\n{m.mass * 1e3:g} g" for m in materials]
    x = np.arange(len(materials))
    for k, mode in enumerate(MODES):
        rows = [next(s for s in stats if s.setting == Setting(m, mode)) for m in materials]
        rate = np.array([s.success / s.n for s in rows])
        err = np.array([[r - s.ci[0], s.ci[1] - r] for r, s in zip(rate, rows, strict=True)]).T
        dx = (k - 0.5) * 0.35
        axes[0].bar(x + dx, rate, 0.35, yerr=err, capsize=3, label=mode)
        axes[1].bar(x + dx, [s.squeeze for s in rows], 0.35, label=mode)
        axes[2].bar(x + dx, [s.strain for s in rows], 0.35, label=f"{mode} (mean)")
        axes[2].scatter(x + dx, [s.strain_max for s in rows], marker="v", color="k", s=14)
    axes[0].set(ylabel="success (held, not crushed)", ylim=(0, 1.05))
    axes[1].set(ylabel="final squeeze [N per jaw]", yscale="log")
    axes[2].axhline(limit, color="r", ls="--", label=f"crush limit {limit:g}")
    axes[2].set(ylabel="peak edge strain (▼ max)")
    for ax in axes:
        ax.set_xticks(x, labels, fontsize=8)
        ax.legend(fontsize=8)
    counts = sorted({s.n for s in stats})
    picks = f"{counts[0]} positions each" if len(counts) == 1 else "positions per setting vary"
    fig.suptitle(f"Soft cubes: cap-based vs planned-force close (SO-101, {picks})")
    fig.tight_layout()
    path = out / "lesson_soft.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _floats(text: str) -> tuple[float, ...]:
    """``"2e4,5e4"`` → ``(20000.0, 50000.0)``: a comma-separated option's values."""
    try:
        values = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not comma-separated numbers: {text!r}") from exc
    if not values or not all(math.isfinite(v) and v > 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive numbers, got {text!r}")
    return values


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--positions", type=int, default=10, help="cube positions per setting")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument(
        "--youngs",
        type=_floats,
        default=YOUNGS,
        help="cube stiffnesses E [Pa], comma-separated (one: a quicker check)",
    )
    parser.add_argument(
        "--masses",
        type=_floats,
        default=MASSES,
        help="cube masses [kg], comma-separated (one: a quicker check)",
    )
    parser.add_argument(
        "--contact", type=float, default=CONTACT, help="force close contact squeeze [N per jaw]"
    )
    parser.add_argument("--output", default="physai_output/lesson_soft", help="output directory")
    parser.add_argument(
        "--model-path", default=None, help="reference SO-101 folder (None: the embedded model)"
    )
    parser.add_argument("--config", default=None, help="pick config YAML (config/pick.yaml)")


def run(args: argparse.Namespace) -> int:
    if args.jobs < 1 or args.positions < 1:
        raise InvalidInput(f"--jobs and --positions must be ≥ 1, got {args.jobs}, {args.positions}")
    tree = load_pick_tree(args.config)
    positions = cube_positions(args.positions)[:, :2]
    probe = soft_sim(Material(YOUNGS[0], MASSES[0]), positions[0], args.model_path)
    jaw = probe.model.joint(str(tree["so101"]["jaw_joint"]))
    jaw_friction = float(probe.model.dof_frictionloss[jaw.dofadr[0]])
    settings, targets, jobs = [], {}, []
    for young in args.youngs:
        for mass in args.masses:
            material = Material(young, mass)
            cfgs, planned = configs(tree, material, args.contact, jaw_friction)
            print(
                f"E {young:g} Pa, {mass * 1e3:g} g: planned {planned.planned:.3f} N per jaw "
                f"({planned.basis}), squeezing with {planned.params.target:.3f} N",
                file=sys.stderr,
            )
            for mode in MODES:
                settings.append(Setting(material, mode))
                targets[settings[-1]] = planned
                jobs += [(args.model_path, material, pos, cfgs[mode]) for pos in positions]
    results = run_trials(jobs, args.jobs)
    n = len(positions)
    stats = [summarise(s, targets[s], results[i * n : (i + 1) * n]) for i, s in enumerate(settings)]
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    text = "\n".join(
        [markdown(*table(stats)), "", verdict(stats), f"figure: {plot(out, stats)}", ""]
    )
    (out / "lesson_soft.md").write_text(text)
    print(text)
    return 0
