"""The three-finger pick's pure parts: its state machine (``core/pick/hand_machine.py``) driven by
scripted sensing and a spring plant per finger, its verdict and its plan request; no MuJoCo, no
ROS. What it must never do: move before the plan and the object's pose are in, squeeze past a
finger's capacity, or end anywhere but done or aborted with a reason."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from physai_ros.core.pick.hand_grasp import HandPoses, PlannedGrasp
from physai_ros.core.pick.hand_machine import (
    HandPickConfig,
    HandPickMachine,
    HandSensing,
    hand_verdict,
    plan_request,
)
from physai_ros.errors import InvalidInput
from physai_ros.paths import config_path

TREE = yaml.safe_load(config_path("hand_pick.yaml").read_text())["/**"]["ros__parameters"]
HAND = {"cap": 5.0, "closed": 2.44}  # [N m], [rad]: a finger like the model's
CFG = HandPickConfig.from_tree(TREE, HAND)
DT = 0.01
GRASP = PlannedGrasp(
    arm=np.zeros(7),
    spread=0.5,
    inner=np.array([1.4, 1.4, 1.3]),
    targets=np.array([0.3, 0.35, 0.4]),
    contacts=np.zeros((3, 3)),
    normals=np.tile([1.0, 0.0, 0.0], (3, 1)),
    object_pos=np.array([0.5, 0.0, 0.03]),
)
LEVERS = np.array([0.08, 0.08, 0.095])
POSES = HandPoses(np.full(7, 0.1), np.full(7, 0.2), np.full(7, 0.3), 1e-6)


def solve(grasp: PlannedGrasp, at: np.ndarray) -> HandPoses:
    return POSES


def unreachable(grasp: PlannedGrasp, at: np.ndarray) -> HandPoses:
    raise InvalidInput("IK did not converge for the grasp pose: object out of reach?")


def idle(now: float, move=None, pose=True) -> HandSensing:
    return HandSensing(
        fingers=np.zeros(3),
        speeds=np.zeros(3),
        forces=np.zeros(3),
        object_pos=np.array([0.5, 0.0, 0.027]) if pose else None,
        object_stamp=now if pose else None,
        move=move,
    )


class Plant:
    """Three fingers closing onto a soft object: each finger's inner joint moves toward its
    command at a speed its effort allows (damped), and once past its contact angle presses with
    stiffness ``k`` [N/rad] × overlap, limited by what its effort gives (effort / lever)."""

    def __init__(self, contact: np.ndarray, k: float, levers: np.ndarray) -> None:
        self.q = np.zeros(3)
        self.contact, self.k, self.levers = contact, k, levers
        self.speed = np.zeros(3)

    def step(self, commands: list[tuple[float, float]]) -> np.ndarray:
        for i, (goal, effort) in enumerate(commands):
            free = min(effort / 0.05, 5.0) * DT  # [rad] a step at this effort (damping 0.05)
            push = effort / self.levers[i]  # [N] the force the effort can apply
            want = float(np.clip(goal - self.q[i], -free, free))
            q = self.q[i] + want
            if q > self.contact[i]:  # in contact: stop where the object pushes back as hard
                q = min(q, self.contact[i] + push / self.k)
            self.speed[i] = (q - self.q[i]) / DT
            self.q[i] = q
        return np.maximum(self.q - self.contact, 0.0) * self.k

    def sensed(self, now: float, forces: np.ndarray, move=None) -> HandSensing:
        return HandSensing(self.q.copy(), self.speed.copy(), forces, object_pos=np.zeros(3),
                           object_stamp=now, move=move)  # fmt: skip


def run(machine: HandPickMachine, plant: Plant, t: float, limit: float = 60.0):
    """Drive ``machine`` to its end: every arm move succeeds right away; returns the peak force
    per finger after the preshape and the moves sent."""
    forces, moves, peak = np.zeros(3), [], np.zeros(3)
    while not machine.finished and t < limit:
        move = machine.arm_move
        done = None
        if move is not None:
            if not moves or moves[-1].id != move.id:
                moves.append(move)
            done = (move.id, True, "")
        forces = plant.step(machine.finger_commands())
        if machine.state in ("close", "lift", "hold"):
            peak = np.maximum(peak, forces)
        machine.update(t, plant.sensed(t, forces, done))
        t += DT
    return peak, moves, forces


def test_config_refuses_bad_values():
    with pytest.raises(InvalidInput, match="contact_fraction"):
        HandPickConfig.from_tree(
            {**TREE, "fingers": {**TREE["fingers"], "contact_fraction": 0.9}}, HAND
        )
    with pytest.raises(InvalidInput, match="lift_height"):
        HandPickConfig.from_tree({**TREE, "lift_height": -0.01}, HAND)
    with pytest.raises(InvalidInput, match="lacks"):
        HandPickConfig.from_tree({k: v for k, v in TREE.items() if k != "durations"}, HAND)
    with pytest.raises(InvalidInput, match=r"fingers\.cap"):
        HandPickConfig.from_tree(TREE, {"cap": -1.0, "closed": 2.44})


def test_nothing_moves_before_the_plan_and_a_failed_plan_ends_it():
    machine = HandPickMachine(CFG, solve, np.zeros(7), 0.0)
    for k in range(50):
        assert machine.update(k * DT, idle(k * DT)) == "plan"
    assert machine.arm_move is None
    machine.plan_failed(0.5, "grasp planner: no triangle inside the Q1 band")
    assert machine.state == "aborted" and machine.arm_move is None
    assert machine.abort_reason == "grasp planner: no triangle inside the Q1 band"


def test_a_target_beyond_a_finger_capacity_is_refused_before_anything_moves():
    machine = HandPickMachine(CFG, solve, np.zeros(7), 0.0)
    weak = LEVERS.copy()
    weak[1] = CFG.fingers["cap"] / 0.34  # F2 can apply only 0.34 N < its 0.35 N target
    machine.planned(0.0, GRASP, weak)
    assert machine.state == "aborted" and machine.arm_move is None
    assert "finger F2 is above what it can apply" in machine.abort_reason, machine.abort_reason


@pytest.mark.parametrize("pose", [False, True])
def test_settle_waits_for_a_fresh_object_pose_then_aborts_unmoved(pose):
    machine = HandPickMachine(CFG, solve, np.zeros(7), 0.0)
    machine.planned(0.0, GRASP, LEVERS)
    t, stale = 0.0, HandSensing(np.zeros(3), np.zeros(3), np.zeros(3), None, np.zeros(3), -5.0)
    wait = CFG.durations["settle"] + CFG.pose_wait
    while t < wait - DT:
        assert machine.update(t, stale if pose else idle(t, pose=False)) == "settle"
        t += DT
    machine.update(wait + DT, stale if pose else idle(t, pose=False))
    assert machine.state == "aborted" and machine.arm_move is None
    what = "stale" if pose else "missing"
    assert machine.abort_reason.startswith(f"object pose {what} after waiting"), (
        machine.abort_reason
    )


def test_a_late_pose_is_planned_from_when_it_arrives():
    machine = HandPickMachine(CFG, solve, np.zeros(7), 0.0)
    machine.planned(0.0, GRASP, LEVERS)
    late = CFG.durations["settle"] + 1.0
    for k in range(int(late / DT)):
        machine.update(k * DT, idle(k * DT, pose=False))
    assert machine.state == "settle"
    machine.update(late, idle(late))
    assert machine.state == "approach" and machine.arm_move.q is POSES.approach


def test_an_unreachable_object_aborts_before_anything_moves():
    machine = HandPickMachine(CFG, unreachable, np.zeros(7), 0.0)
    machine.planned(0.0, GRASP, LEVERS)
    machine.update(CFG.durations["settle"], idle(CFG.durations["settle"]))
    assert machine.state == "aborted" and machine.arm_move is None
    assert "out of reach" in machine.abort_reason


@given(
    k=st.floats(2.0, 200.0),
    contact=st.lists(st.floats(-0.08, 0.08), min_size=3, max_size=3),
    lever_error=st.floats(0.9, 1.1),
)
def test_the_whole_pick_squeezes_each_finger_to_its_target_and_no_harder(k, contact, lever_error):
    """Approach, reach, close, lift, hold, done: every finger ends within its band, and none
    pushes above the band's top while closing (a plant of stiffness k [N/rad], contact within
    the preshape's reach, its true lever ±10 % off the model's)."""
    machine = HandPickMachine(CFG, solve, np.zeros(7), 0.0)
    machine.planned(0.0, GRASP, LEVERS)
    preshape = GRASP.inner - CFG.fingers["preshape_open"]
    plant = Plant(
        preshape + CFG.fingers["preshape_open"] + np.array(contact), k, LEVERS * lever_error
    )
    peak, moves, forces = run(machine, plant, 0.0)
    assert machine.state == "done", machine.abort_reason
    sent = [m.q for m in moves]
    assert len(sent) == 3 and all(
        m is q for m, q in zip(sent, (POSES.approach, POSES.grasp, POSES.lift), strict=True)
    )
    tol = CFG.fingers["tolerance"]
    assert np.all(np.abs(forces - GRASP.targets) <= tol * GRASP.targets), (forces, GRASP.targets)
    assert np.all(peak <= GRASP.targets * (1 + tol) + 1e-9), (peak, GRASP.targets)


def test_a_failed_move_aborts_and_backs_off_to_the_approach_pose():
    machine = HandPickMachine(CFG, solve, np.zeros(7), 0.0)
    machine.planned(0.0, GRASP, LEVERS)
    t = CFG.durations["settle"]
    machine.update(t, idle(t))
    approach = machine.arm_move
    machine.update(t + 1.0, idle(t + 1.0, move=(approach.id, True, "")))
    reach = machine.arm_move
    assert machine.state == "reach" and reach.q is POSES.grasp
    machine.update(t + 2.0, idle(t + 2.0, move=(reach.id, False, "path tolerance violated")))
    assert machine.state == "abort" and machine.abort_reason.endswith("path tolerance violated")
    retreat = machine.arm_move
    assert retreat.id > reach.id and retreat.q is POSES.approach
    assert all(q == pytest.approx(p) for (q, _), p in zip(machine.finger_commands(),
               GRASP.inner - CFG.fingers["preshape_open"], strict=True))  # fmt: skip
    machine.update(t + 2.5, idle(t + 2.5, move=(reach.id, False, "preempted")))  # the old one
    assert machine.state == "abort"
    machine.update(t + 4.0, idle(t + 4.0, move=(retreat.id, True, "")))
    assert machine.state == "aborted"


def test_a_move_without_a_result_aborts_after_its_margin():
    machine = HandPickMachine(CFG, solve, np.zeros(7), 0.0)
    machine.planned(0.0, GRASP, LEVERS)
    t = CFG.durations["settle"]
    machine.update(t, idle(t))
    end = t + CFG.durations["approach"] + CFG.move_margin
    machine.update(end - DT, idle(end - DT))
    assert machine.state == "approach"
    machine.update(end + DT, idle(end + DT))
    assert machine.state == "abort" and "no result for the approach move" in machine.abort_reason


def test_a_finger_that_never_meets_the_object_aborts_the_close():
    """The object softer or farther than planned: F3 closes to its limit without a force."""
    machine = HandPickMachine(CFG, solve, np.zeros(7), 0.0)
    machine.planned(0.0, GRASP, LEVERS)
    plant = Plant(np.array([1.4, 1.4, 10.0]), 50.0, LEVERS)  # F3's contact beyond its reach
    run(machine, plant, 0.0)
    assert machine.state == "aborted"
    assert machine.abort_reason.startswith("force close of finger F3: both jaws never touched")


@pytest.mark.parametrize(
    ("closed", "rise", "touching", "strain", "age", "outcome"),
    [
        (True, 0.065, 3, 0.02, 0.1, "held"),
        (True, 0.065, 3, 0.30, 0.1, "crushed"),
        (True, 0.01, 3, 0.02, 0.1, "dropped"),
        (True, 0.065, 2, 0.02, 0.1, "dropped"),
        (False, 0.0, 0, 0.0, 0.1, "not closed"),
        (True, 0.065, 3, 0.02, 0.9, "no measurement"),
    ],
)
def test_verdict(closed, rise, touching, strain, age, outcome):
    verdict = hand_verdict(
        closed, rise, touching, strain, age, min_lift=0.04, strain_limit=0.25, max_age=0.5
    )
    assert verdict.outcome == outcome, verdict


def test_plan_request_is_the_barrett_hand_on_the_configured_object():
    request = plan_request(TREE["object"], TREE["plan"])
    assert request["hand"] == "barrett" and request["shape"] == "sphere"
    assert request["size"] == TREE["object"]["size"] and request["mu"] == TREE["object"]["mu"]
    assert request["force_margin"] == TREE["plan"]["force_margin"]
    with pytest.raises(InvalidInput, match="no planner primitive"):
        plan_request({**TREE["object"], "shape": "torus"}, TREE["plan"])
    assert math.isfinite(request["young"])
