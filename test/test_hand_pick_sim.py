"""The three-finger pick in-process, lockstep with MuJoCo (``experiments/hand_pick_sim.py``):
the planner's grasp of the configured soft sphere (config/hand_pick.yaml), executed by the pure
hand pick on the sim bridge's own scene and controllers, at the planned place and 2 cm off it.
The laws: the object is lifted in all three fingers, each finger's final force within the
force close's tolerance of its planned target and never above the band's top while closing,
friction carries the weight (μ ΣN ≥ m g), and the object is not crushed."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from physai_ros.core.grasp_planning.plan import plan
from physai_ros.core.grasp_planning.request import pregrasp_joints, request_inputs
from physai_ros.core.pick.hand_grasp import HandKinematics, planned_grasp
from physai_ros.core.pick.hand_machine import HandPickConfig, plan_request
from physai_ros.experiments.hand_pick_sim import run_hand_pick
from physai_ros.models import load_robot_spec
from physai_ros.paths import config_path
from physai_ros.sim.mujoco_sim import MujocoSim
from physai_ros.sim.scene import scene_soft_object

pytestmark = pytest.mark.slow
TREE = yaml.safe_load(config_path("hand_pick.yaml").read_text())["/**"]["ros__parameters"]
G = 9.81


@pytest.fixture(scope="module")
def grasp():
    """The planner's answer for the configured object, as the node turns it into a grasp."""
    fields = plan_request(TREE["object"], TREE["plan"])
    obj, req = request_inputs(
        fields["shape"], fields["size"], fields["spacing"], None, fields["hand"],
        fields["young"], fields["poisson"], fields["mu"], fields["mass"], fields["cells"],
        fields["lift_accel"], fields["force_margin"],
    )  # fmt: skip
    result = plan(obj, req)
    names, q = pregrasp_joints(result)
    return planned_grasp(
        names, q, result.force_targets, result.contacts, result.normals, result.object_position
    )


@pytest.mark.parametrize("offset", [(0.0, 0.0), (0.02, -0.015)])
def test_the_planned_grasp_lifts_the_soft_sphere_at_its_forces(grasp, offset):
    o = TREE["object"]
    soft = scene_soft_object(
        "panda_barrett", pos=(o["x"] + offset[0], o["y"] + offset[1]), shape=o["shape"],
        young=o["young"], poisson=o["poisson"], damping=o["damping"], mass=o["mass"],
        mu=o["mu"], size=o["size"], count=o["count"],
    )  # fmt: skip
    sim = MujocoSim("panda_barrett", soft=soft)
    sim.advance(0.3)  # the sphere settles on the table
    kin = HandKinematics(load_robot_spec("panda_barrett").compile())
    cfg = HandPickConfig.from_tree(TREE, kin.finger_limits)
    result = run_hand_pick(sim, cfg, grasp, kin, 1.0 / TREE["control_rate"])
    tol = cfg.fingers["tolerance"]
    assert result.state == "done", result.abort_reason
    assert result.rise >= TREE["min_lift"] and result.touching == 3, result
    error = np.abs(result.forces - grasp.targets) / grasp.targets
    assert np.all(error <= tol), (result.forces, grasp.targets)
    assert np.all(result.peak <= grasp.targets * (1.0 + tol)), (result.peak, grasp.targets)
    assert o["mu"] * result.forces.sum() >= o["mass"] * G, result.forces  # friction holds it
    assert result.strain_peak < TREE["strain_limit"], result.strain_peak
