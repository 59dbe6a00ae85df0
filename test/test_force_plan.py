"""The pick's force target from the grasp planner (``physai_ros.core.force_plan``): the
``plan_grasp`` request built from config/pick.yaml and config/scene.yaml, and the target taken
from the answer."""

from __future__ import annotations

import pytest

from physai_ros.core.force_plan import (
    PlanSource,
    plan_request,
    plan_source,
    planned_params,
    planned_target,
)
from physai_ros.core.pick import force_params, load_pick_tree
from physai_ros.errors import InvalidInput
from physai_ros.models.scene import load_scene_config


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
    """The rigid cube's plan (0.186 N per jaw, measured over ROS) is below the default 3 N
    contact force: the force close's own check refuses it, naming the planned target."""
    force = force_params(load_pick_tree())
    with pytest.raises(InvalidInput, match=r"planned force target 0\.1856 N per jaw: contact"):
        planned_params(force, True, "ok", [0.18558, 0.18558])
    low = planned_params(
        force_params({**load_pick_tree(), "force": {**load_pick_tree()["force"], "contact": 0.05}}),
        True,
        "ok",
        [0.17, 0.18558],
    )
    assert low.target == 0.18558 and low.contact == 0.05
