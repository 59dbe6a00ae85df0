"""The three-finger hand's pick within the Panda's joint limits, and its cancel and abort:
properties of the pure machine (``core/pick/hand_machine.py``), not stored runs.

*Within the limits* is the jaw pick's rule (test/test_pick_cancel.py): every arm reference the
machine commands (:meth:`HandPickMachine.arm_command`), sampled at the limits' 1 ms control
period, has its positions inside ``config/limits_panda.yaml``'s ranges and its first and second
finite differences within the set's velocity and acceleration, with 1e-9 relative slack for
round-off only.

The machine is driven with scripted sensing: the object's pose always fresh, every arm move's
result given when the reference has reached its end (or a failure at a drawn time), and a finger
plant whose fingers are where they are told and push with what their effort gives through their
lever once closing past the preshape. Poses (home, approach, grasp, lift) are drawn anywhere in
the joints' ranges, so the moves' durations come from the limits, not the configuration.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hand_pick import CFG, GRASP, HAND, LEVERS

from physai_ros.core.motion.limits import load_limits
from physai_ros.core.pick.hand_grasp import HandPoses
from physai_ros.core.pick.hand_machine import HandPickMachine, HandSensing
from physai_ros.core.pick.place import stoppable_duration

SETS = ("libfranka", "libfranka_legacy")
LIMITS = {name: load_limits("panda", name) for name in SETS}
DT = LIMITS["libfranka"].control_period  # [s] 1 ms
SLACK = 1.0 + 1e-9
MOVING = ("approach", "reach", "lift")  # the states of an arm move
PRESHAPE = np.maximum(GRASP.inner - CFG.fingers["preshape_open"], 0.0)  # [rad]
SPAN = LIMITS["libfranka"].position_max - LIMITS["libfranka"].position_min

fraction = st.floats(0.02, 0.98)
pose = st.lists(fraction, min_size=7, max_size=7).map(
    lambda u: LIMITS["libfranka"].position_min + np.asarray(u) * SPAN
)


def assert_within(arms: np.ndarray, set_name: str) -> None:
    lim = LIMITS[set_name]
    assert np.all(arms >= lim.position_min - 1e-9) and np.all(arms <= lim.position_max + 1e-9)
    velocity = np.abs(np.diff(arms, axis=0)) / DT
    accel = np.abs(np.diff(arms, 2, axis=0)) / DT**2
    assert np.all(velocity <= lim.velocity * SLACK), (velocity.max(axis=0), lim.velocity)
    assert np.all(accel <= lim.acceleration * SLACK), (accel.max(axis=0), lim.acceleration)


def fingers(machine: HandPickMachine) -> tuple[np.ndarray, np.ndarray]:
    """The plant: each finger at its commanded position; past its preshape (closing onto the
    object) it pushes with its effort through its lever [N]."""
    commands = machine.finger_commands()
    q = np.array([c[0] for c in commands])
    pushing = q > PRESHAPE + 1e-9
    forces = np.where(pushing, np.array([c[1] for c in commands]) / LEVERS, 0.0)
    return q, forces


def run(
    machine: HandPickMachine, at: float | None = None, event: str = "none", limit: float = 40.0
) -> tuple[np.ndarray, list]:
    """Drive ``machine`` to its end at the control period; ``event`` (``cancel``, or ``fail``:
    the move under way fails) at ``at`` [s]. Returns the arm references, the moves sent and
    the fingers' commands at the cancel (None: none)."""
    machine.planned(0.0, GRASP, LEVERS)
    arms, moves, t, step, kept = [], [], 0.0, 0, None
    while not machine.finished and t < limit:
        move = machine.arm_move
        if move is not None and (not moves or moves[-1][0].id != move.id):
            moves.append((move, t))
        result = None
        if at is not None and t >= at and event == "cancel":
            kept = machine.finger_commands()
            machine.cancel(t)
            at = None
        elif at is not None and t >= at and event == "fail" and machine.state in MOVING:
            result, at = (move.id, False, "path tolerance violated"), None
        if result is None and move is not None and t >= moves[-1][1] + move.duration - 1e-9:
            result = (move.id, True, "")
        q, forces = fingers(machine)
        sensed = HandSensing(q, np.zeros(3), forces, object_pos=GRASP.object_pos, object_stamp=t,
                             move=result)  # fmt: skip
        machine.update(t, sensed)
        arms.append(machine.arm_command(t))
        step += 1
        t = step * DT
    return np.array(arms), moves, kept


def machine_for(home, approach, grasp, lift, set_name) -> HandPickMachine:
    poses = HandPoses(approach, grasp, lift, 1e-6)
    return HandPickMachine(CFG, lambda g, at: poses, home, 0.0, limits=LIMITS[set_name])


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(home=pose, approach=pose, grasp=pose, lift=pose, set_name=st.sampled_from(SETS))
def test_every_arm_reference_of_a_whole_hand_pick_is_within_the_limits(
    home, approach, grasp, lift, set_name
):
    machine = machine_for(home, approach, grasp, lift, set_name)
    arms, moves, _ = run(machine)
    assert machine.state == "done", machine.abort_reason
    assert_within(arms, set_name)
    lim = LIMITS[set_name]
    for (move, _), start, shortest in zip(
        moves,
        (home, approach, grasp),
        (CFG.durations[k] for k in ("approach", "reach", "lift")),
        strict=True,
    ):  # each move sent as timed, and timed to be stoppable within the limits
        assert move.duration == stoppable_duration(start, move.q, lim, shortest)
    assert np.array_equal(arms[-1], lift)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    home=pose,
    approach=pose,
    grasp=pose,
    lift=pose,
    set_name=st.sampled_from(SETS),
    at=st.floats(0.0, 12.0),
    event=st.sampled_from(["cancel", "fail"]),
)
def test_a_cancel_or_an_abort_at_any_time_stays_within_the_limits(
    home, approach, grasp, lift, set_name, at, event
):
    """A cancel slows the arm to rest on its path and holds it there, the fingers keeping their
    command of the cancel's moment; a move that fails mid-way is stopped, then backed off to
    the approach pose: all inside the limits."""
    machine = machine_for(home, approach, grasp, lift, set_name)
    arms, _, kept = run(machine, at, event)
    assert_within(arms, set_name)
    assert machine.state in ("done", "canceled", "aborted"), machine.state
    if machine.state == "canceled":
        assert machine.finger_commands() == kept
        rest = machine.arm_command(machine.t_state)
        assert np.array_equal(machine.arm_command(machine.t_state + 5.0), rest)
        assert machine.canceled_in is not None and machine.canceled_in != "cancel"
    if machine.state == "aborted" and machine.moved:
        assert np.allclose(arms[-1], approach, atol=1e-12)


def test_a_cancel_mid_move_sends_the_stop_and_holds_the_squeeze():
    """Canceled mid-lift: a new arm move to where the stop rests, over the stop's duration; the
    fingers keep the force close's command (never opened); the state it stopped is kept."""
    lim = LIMITS["libfranka"]
    home = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
    approach, grasp, lift = home + 0.3, home + 0.35, home + 0.1
    machine = machine_for(home, approach, grasp, lift, "libfranka")
    events = []

    def mid_lift(t: float) -> None:
        if machine.state == "lift" and not events and t - machine.t_state > 0.3:
            events.append((machine.finger_commands(), machine.arm_move.id))
            machine.cancel(t)
            events.append(machine.arm_trajectory(t, 0.02))

    machine.planned(0.0, GRASP, LEVERS)
    t, began = 0.0, {}
    while not machine.finished and t < 40.0:
        move = machine.arm_move
        if move is not None and move.id not in began:
            began[move.id] = t
        result = None
        if move is not None and t >= began[move.id] + move.duration - 1e-9:
            result = (move.id, True, "")
        q, forces = fingers(machine)
        machine.update(t, HandSensing(q, np.zeros(3), forces, object_pos=GRASP.object_pos,
                                      object_stamp=t, move=result))  # fmt: skip
        mid_lift(t)
        t += DT
    assert machine.state == "canceled" and machine.canceled_in == "lift"
    held, lift_id = events[0]
    assert machine.finger_commands() == held
    assert all(effort < HAND["cap"] for _, effort in held)  # the squeeze, not the open cap
    stop = machine.arm_move
    assert stop.id == lift_id + 1 and 0.0 < stop.duration < machine.durations["lift"]
    assert np.array_equal(stop.q, machine.arm_command(math.inf))
    assert not np.allclose(stop.q, lift)  # it stopped short of the lift pose
    times, path = events[1]  # the stop sampled for a trajectory goal: it ends where it rests
    assert times[-1] == pytest.approx(stop.duration) and np.array_equal(path[-1], stop.q)
    assert np.all(np.diff(times) > 0.0) and path.shape == (times.size, 7)
    assert machine.arm_trajectory(machine.t_state + 1.0, 0.02)[0].size == 0  # at rest: none
    report = machine.report()  # what the outcome says: canceled in lift after a sensed grip
    assert (report["state"], report["canceled_in"], report["closed"]) == ("canceled", "lift", True)
    assert report["close_s"] == machine.close_s > 0.0 and report["abort_reason"] is None
    closing = report["closing"]
    assert closing["phase"] == "done" and closing["gripped"] and len(closing["forces_N"]) == 3
    assert stoppable_duration(grasp, lift, lim, CFG.durations["lift"]) == machine.durations["lift"]
