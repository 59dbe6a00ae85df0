"""``physai lesson soft``: its runner's force close on a soft cube, the laws it shows, its report.

No sweep here (``physai lesson soft`` is the benchmark): two force-mode picks of the 30 g soft cube
at the square's centre, E 5·10⁴ and 2·10⁵ Pa, at the jaw floor's target (what the planner's
0.19 N is raised to), with the timed states shortened (settle, pre, down, lift, hold: the arm's
moves, which the laws do not depend on) and a preshape closer to the cube to save CPU.
Tolerances: the force close's own band, ±15 % of the target; the stiffer cube strains under half
as much (measured 0.028 vs 0.12, ratio 0.23); jaw force magnitudes equal the bridge's wrenches
to 1e-9 N. One more pick runs the lesson's own configuration unshortened (the shipped
config/pick.yaml durations and preshape, the planner's target), so what a user runs is tested.
"""

from __future__ import annotations

import dataclasses
import math

import mujoco
import numpy as np
import pytest
from scipy.stats import binomtest

from physai_ros.core.pick.force_plan import JawFloor
from physai_ros.core.pick.machine import load_pick_tree, pick_config
from physai_ros.experiments.lesson_soft import (
    CONTACT,
    STRAIN_LIMIT,
    PlannedTarget,
    Setting,
    configs,
    summarise,
    verdict,
)
from physai_ros.experiments.soft_pick import Material, SoftPickResult, run_soft_pick, soft_sim
from physai_ros.sim.mujoco_sim import MujocoSim

CENTRE = (0.22, 0.0)
SHORT = {"settle": 0.1, "pre": 0.5, "down": 0.4, "lift": 0.5, "hold": 0.3}  # [s]


def _force_cfg(sim: MujocoSim):
    tree = load_pick_tree()
    tree = dict(
        tree,
        close_mode="force",
        durations=dict(tree["durations"], **SHORT),
        force=dict(tree["force"], contact=CONTACT, preshape=0.3),
    )
    cfg = pick_config(tree)
    jaw = sim.model.joint("gripper")
    floor = JawFloor(float(sim.model.dof_frictionloss[jaw.dofadr[0]]), cfg.force.lever, 0.15)
    return dataclasses.replace(cfg, force=dataclasses.replace(cfg.force, target=floor.force))


@pytest.fixture(scope="module")
def picks():
    out = {}
    for young in (5.0e4, 2.0e5):
        sim = soft_sim(Material(young, 0.03), CENTRE)
        cfg = _force_cfg(sim)
        out[young] = (run_soft_pick(sim, cfg), cfg.force, sim)
    return out


def test_force_close_holds_the_soft_cube_within_tolerance(picks):
    for res, force, _ in picks.values():
        assert res.outcome == "held" and res.closed and res.abort_reason is None, res
        low, high = force.band
        assert low <= res.squeeze_close <= high, res
        assert low <= res.squeeze <= high, res  # kept through lift and hold
        assert res.lift >= 0.04 and res.strain_peak < STRAIN_LIMIT, res


def test_stiffer_cube_strains_less_at_the_same_squeeze(picks):
    soft, stiff = picks[5.0e4][0], picks[2.0e5][0]
    assert stiff.strain_peak < 0.5 * soft.strain_peak
    assert stiff.strain < 0.5 * soft.strain


def test_jaw_forces_are_the_bridge_wrench_magnitudes(picks):
    sim = picks[5.0e4][2]
    norms = sim.jaw_force_norms()
    wrenches = sim.jaw_wrenches()
    assert min(norms) > 1.0  # still squeezing at the end
    for k, name in enumerate(sim.jaw_names):
        assert norms[k] == pytest.approx(np.linalg.norm(wrenches[name].force), abs=1e-9)


def test_the_lesson_as_shipped_holds_the_soft_cube_within_tolerance():
    """``physai lesson soft``'s planned pick with nothing shortened: the shipped pick config
    (config/pick.yaml: settle 0.3, pre 1.2, down 0.8, lift 1.0, hold 0.8 s, preshape 0.4 rad)
    and the grasp planner's target, as ``lesson_soft.configs`` builds it, on the E 5·10⁴ Pa
    cube at the square's centre: held, squeeze within the band, lifted, not crushed."""
    material = Material(5.0e4, 0.03)
    sim = soft_sim(material, CENTRE)
    jaw = sim.model.joint("gripper")
    friction = float(sim.model.dof_frictionloss[jaw.dofadr[0]])
    cfg = configs(load_pick_tree(), material, CONTACT, friction)[0]["planned"]
    assert cfg.durations == pick_config(load_pick_tree()).durations  # unshortened
    res = run_soft_pick(sim, cfg)
    assert res.outcome == "held" and res.closed and res.abort_reason is None, res
    low, high = cfg.force.band
    assert low <= res.squeeze_close <= high and low <= res.squeeze <= high, res
    assert res.lift >= 0.04 and res.strain_peak < STRAIN_LIMIT, res


def test_drive_jaw_sets_the_force_range_a_gripper_goal_sets():
    sim = MujocoSim("so101")
    act = sim.model.actuator("gripper").id
    cap = float(sim.model.actuator_forcerange[act, 1])
    for effort, expect in ((0.2, 0.2), (0.0, cap)):  # 0: the cap, as GripperCommand's
        sim.drive_jaw(0.5, effort)
        assert tuple(sim.model.actuator_forcerange[act]) == (-expect, expect)
        other = MujocoSim("so101")
        other.gripper.accept("g", 0.5, effort, other.time)
        other.step()
        assert tuple(other.model.actuator_forcerange[act]) == (-expect, expect)
    for _ in range(200):  # the same min-jerk ramp: the servo target reaches the goal by 0.3 s
        sim.drive_jaw(0.5, 0.0)
        mujoco.mj_step(sim.model, sim.data)
    assert sim.data.ctrl[act] == pytest.approx(0.5)


def _result(outcome: str, strain: float) -> SoftPickResult:
    held = outcome == "held"
    lift = 0.07 if held else 0.0
    return SoftPickResult(outcome, held, lift, 1.0, 2.0, 2.0, strain, strain, None, 1)


def test_summary_and_verdict():
    soft, firm = Material(2e4, 0.03), Material(2e5, 0.03)
    target = PlannedTarget(0.19, "friction floor", None)
    crushing = [_result("held", 0.9)] * 7 + [_result("dropped", 0.3)] * 3
    gentle = [_result("held", 0.1)] * 9 + [_result("held", 0.6)]
    stats = [
        summarise(Setting(firm, "cap"), target, crushing),
        summarise(Setting(firm, "planned"), target, [_result("held", 0.1)] * 10),
        summarise(Setting(soft, "cap"), target, crushing),
        summarise(Setting(soft, "planned"), target, gentle),
    ]
    assert [s.success for s in stats] == [0, 10, 0, 9]
    assert stats[0].crushed == 7 and stats[0].held == 7 and stats[3].crushed == 1
    ci = binomtest(9, 10).proportion_ci(method="wilson")
    assert stats[3].ci == pytest.approx((ci.low, ci.high), abs=1e-12)
    assert stats[3].strain_max == 0.6 and math.isclose(stats[3].strain, 0.15)
    line = verdict(stats)
    assert f"> {STRAIN_LIMIT:g} at soft_count 3" in line
    assert "does not on E 200 kPa / 30 g (cap: crushed 7/10, lost 3/10)" in line
    both = ". Both fail on E 20 kPa / 30 g (cap: crushed 7/10, lost 3/10; planned: crushed 1/10"
    assert both in line


def test_bad_arguments_are_refused_before_anything_runs():
    import argparse

    from physai_ros.errors import InvalidInput
    from physai_ros.experiments.lesson_soft import add_arguments, run

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    with pytest.raises(InvalidInput, match="--jobs and --positions must be ≥ 1, got 1, 0"):
        run(parser.parse_args(["--positions", "0"]))
