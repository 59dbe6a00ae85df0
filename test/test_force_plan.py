"""The pick's force target from the grasp planner (``physai_ros.core.pick.force_plan``): the
``plan_grasp`` request built from config/pick.yaml and config/scene.yaml, and the target taken
from the answer."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from physai_ros.core.pick.force_plan import (
    JawFloor,
    PlanSource,
    plan_request,
    plan_source,
    planned_params,
    planned_target,
)
from physai_ros.core.pick.machine import force_params, load_pick_tree
from physai_ros.errors import InvalidInput
from physai_ros.models.loader import load_robot_spec
from physai_ros.sim.scene import load_scene_config

NO_FLOOR = JawFloor(friction=0.0, lever=0.0718, tolerance=0.15)  # a frictionless jaw


def so101_floor(tolerance: float = 0.15) -> JawFloor:
    """The SO-101's floor as the pick node builds it: the model's jaw frictionloss, the pick's
    lever."""
    model = load_robot_spec("so101").compile()
    friction = model.dof_frictionloss[model.jnt_dofadr[model.joint("gripper").id]]
    return JawFloor(float(friction), load_pick_tree()["so101"]["jaw_lever"], tolerance)


def test_the_shipped_config_keeps_the_parameter_source():
    src = plan_source(load_pick_tree())
    assert src == PlanSource() and not src.planned  # config/pick.yaml's plan = the defaults


def test_the_rigid_cube_request_takes_mass_and_mu_from_the_scene_and_size_from_the_pick():
    scene = load_scene_config()
    tree = load_pick_tree()
    tree["plan"] = {**tree["plan"], "source": "planner"}
    req = plan_request(plan_source(tree), scene, tree["cube_size"])
    assert req["shape"] == "box" and req["hand"] == "so101"
    assert req["size"] == tree["cube_size"] == 0.03
    assert (req["mass"], req["mu"]) == (scene["cube"]["mass"], scene["cube"]["mu"])
    assert (req["young"], req["poisson"]) == (1.0e9, 0.3)  # plan.rigid_*: MuJoCo's cube has none
    assert (req["spacing"], req["cells"]) == (0.006, 3)


@pytest.mark.parametrize(("shape", "primitive"), [("cube", "box"), ("sphere", "sphere")])
def test_the_soft_object_request_takes_shape_and_material_from_the_scene(shape, primitive):
    scene = load_scene_config()
    scene = {**scene, "soft": {**scene["soft"], "shape": shape}}
    req = plan_request(PlanSource(source="planner", object="soft"), scene, 0.03)
    soft = scene["soft"]
    assert req["shape"] == primitive
    assert (req["young"], req["poisson"]) == (soft["young"], soft["poisson"]) == (5.0e4, 0.3)
    assert (req["mass"], req["mu"]) == (soft["mass"], soft["mu"])


def test_the_target_is_the_largest_planned_one_and_no_plan_gives_the_planners_reason():
    assert planned_target(True, "ok", [0.2997, 0.3003]) == 0.3003
    with pytest.raises(InvalidInput, match="grasp planner: no antipodal pair"):
        planned_target(False, "no antipodal pair within so101's opening", [])
    with pytest.raises(InvalidInput, match="no usable force targets"):
        planned_target(True, "ok", [])
    with pytest.raises(InvalidInput, match="no usable force targets"):
        planned_target(True, "ok", [0.3, float("nan")])


@pytest.mark.parametrize(
    ("section", "match"),
    [
        ({"source": "guess"}, "plan.source"),
        ({"object": "sponge"}, "plan.object"),
        ({"rigid_poisson": 0.5}, "rigid_poisson"),
        ({"cells": 2}, "cells"),
        ({"timeout": 0.0}, "timeout"),
        ({"cells": "many"}, "bad plan section"),
    ],
)
def test_bad_plan_parameters_are_refused_with_the_name(section, match):
    with pytest.raises(InvalidInput, match=match):
        plan_source({"plan": section})


def test_a_bad_size_is_refused():
    with pytest.raises(InvalidInput, match="size"):
        plan_request(PlanSource(source="planner"), load_scene_config(), 0.0)


def test_a_planned_target_below_the_contact_force_is_refused_with_both_numbers():
    """A plan below the default 3 N contact force: the force close's own check refuses it,
    naming the planned target (here with a frictionless jaw: no raise)."""
    force = force_params(load_pick_tree())
    with pytest.raises(InvalidInput, match=r"planned force target 0\.1856 N per jaw: contact"):
        planned_params(force, True, "ok", [0.18558, 0.18558], NO_FLOOR)
    low = planned_params(
        force_params({**load_pick_tree(), "force": {**load_pick_tree()["force"], "contact": 0.05}}),
        True,
        "ok",
        [0.17, 0.18558],
        NO_FLOOR,
    )
    assert low.params.target == 0.18558 and low.params.contact == 0.05 and low.raised is None


def test_the_so101_floor_is_its_model_friction_at_the_lever_over_twice_the_tolerance():
    """0.052 N m of jaw frictionloss (the model's), lever 0.0718 m, tolerance 0.15: the
    resolution limit 0.052 / (2 · 0.0718 · 0.15) = 2.414 N binds (the approach's 0.852 N not)."""
    floor = so101_floor()
    assert floor.friction == pytest.approx(0.052, abs=1e-12)
    assert floor.force == pytest.approx(2.4141, abs=1e-4)
    assert floor.approach == pytest.approx(0.052 / 0.0718 / 0.85, rel=1e-12)
    assert "resolution" in floor.why and "2.414 N" in floor.why


def test_a_contact_force_the_jaw_friction_swallows_is_refused_with_the_numbers():
    """0.052 N m / 0.0718 m = 0.724 N: a contact force at or below it never moves the jaw; the
    shipped contact forces (3 N rigid, 1.5 N soft) are above it."""
    floor = so101_floor()
    fault = floor.contact_fault(0.7)
    assert fault is not None and "cannot move the jaw" in fault and "0.724 N" in fault
    assert floor.contact_fault(floor.friction / floor.lever) is not None  # at it: stands still
    assert floor.contact_fault(0.73) is None
    assert floor.contact_fault(float(load_pick_tree()["force"]["contact"])) is None
    assert NO_FLOOR.contact_fault(1e-6) is None


def test_the_rigid_cubes_plan_is_raised_to_the_floor_and_says_from_what_and_why():
    """The 30 g cube's plan (0.186 N per jaw, measured over ROS) is raised to 2.414 N; with a
    soft object's contact force (1.5 N) the close accepts it; with the default 3 N the refusal
    names the raise."""
    tree = load_pick_tree()
    soft = force_params({**tree, "force": {**tree["force"], "contact": 1.5}})
    params, raised = planned_params(soft, True, "ok", [0.17, 0.18558], so101_floor())
    assert params.target == pytest.approx(2.4141, abs=1e-4)
    assert raised["from_N"] == 0.1856 and raised["to_N"] == pytest.approx(2.4141, abs=1e-4)
    assert raised["why"].startswith("below the jaw's least controllable squeeze 2.414 N")
    with pytest.raises(InvalidInput, match=r"2\.4141 N per jaw \(raised from 0\.1856 N, below"):
        planned_params(force_params(tree), True, "ok", [0.18558], so101_floor())
    above = planned_params(force_params(tree), True, "ok", [7.9, 8.0], so101_floor())
    assert above.params.target == 8.0 and above.raised is None  # a plan above it is kept


@given(
    target=st.floats(1e-3, 40.0),
    friction=st.floats(0.0, 0.5),
    lever=st.floats(0.01, 0.2),
    tolerance=st.floats(0.01, 0.5),
)
def test_the_floored_target_is_the_larger_one_and_leaves_a_controllable_band(
    target, friction, lever, tolerance
):
    """Law: the target used is max(planned, floor), raised exactly when the plan is below;
    its band is at least as wide as the friction's uncertainty ±friction / (2 lever), and its
    bottom lies above the least force that moves the jaw (friction / lever): a contact force
    fits between them."""
    floor = JawFloor(friction, lever, tolerance)
    base = force_params(load_pick_tree())
    force = dataclasses.replace(base, contact=1e-6, cap=1e6)
    params, raised = planned_params(force, True, "ok", [target], floor)
    assert params.target == max(target, floor.force)
    assert (raised is not None) == (target < floor.force)
    half_width = tolerance * params.target
    assert half_width >= friction / (2.0 * lever) * (1 - 1e-12)
    assert params.band[0] >= friction / lever * (1 - 1e-12)
    assert math.isfinite(params.target)


def test_a_franka_hand_plan_below_its_floor_is_raised_to_the_hands_least_force():
    """The Franka Hand squeezes with at least min_force (config/sim_robots.yaml, libfranka issue
    #111): a planned 0.19 N becomes that, and the Panda pick's default target is that floor."""
    from physai_ros.config import load_sim_config
    from physai_ros.robots.franka.hand import HandFloor

    floor = HandFloor(float(load_sim_config()["robots"]["panda"]["franka_hand"]["min_force"]))
    tree = load_pick_tree(robot="panda")
    force = force_params(tree, "panda")
    assert force.target == floor.force == 30.0
    params, raised = planned_params(force, True, "", [0.19, 0.05], floor)
    assert params.target == 30.0 and raised["from_N"] == 0.19 and raised["to_N"] == 30.0
    assert "libfranka issue #111" in raised["why"] and floor.contact_fault(0.0) is None
    params, raised = planned_params(force, True, "", [45.0], floor)
    assert params.target == 45.0 and raised is None
