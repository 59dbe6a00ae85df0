"""The jaw pick within the joint limits, and its cancel and abort: properties, not stored runs.

Tolerances, stated once:
* *within the limits*: every commanded arm reference, sampled at the limits' 2 ms control
  period, has its positions inside ``config/limits_so101.yaml``'s ranges and its first and
  second finite differences within the set's velocity and acceleration, with 1e-9 relative
  slack for round-off only (the limits' own rule, ``core.motion.limits``);
* *at rest*: the reference does not change any more (exactly: a held command);
* *still held* (MuJoCo): 1 s after the arm came to rest both jaws touch the cube and the cube
  has moved less than 3 mm relative to the gripper site since the cancel.

The pure tests drive the machine with scripted sensing (a grip that forms at once, support 0.3 s
into lower); the MuJoCo test runs the lesson's rigid-cube world lockstep.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import mujoco
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from physai_ros.core.motion.limits import JointLimits, load_limits
from physai_ros.core.pick.machine import (
    HELD_STATES,
    PickCommand,
    PickMachine,
    PickSensing,
    arm_ik,
    load_pick_config,
    phase_trajectory,
)
from physai_ros.experiments.lesson16.place import PLACE_SQUARE
from physai_ros.experiments.lesson16.sweep import CUBE_SIZE, Row, build_model
from physai_ros.sim.rigid_cube import RigidCubeWorld

CFG = load_pick_config()
HOME = np.asarray(CFG.robot["home"], dtype=float)
SETS = ("sts3215", "first_use")
LIMITS = {name: load_limits("so101", name) for name in SETS}
DT = LIMITS["sts3215"].control_period  # [s] 2 ms: the lesson's physics step too
SLACK = 1.0 + 1e-9
PICK_STATES = ("pre", "down", "close", "lift", "hold")
PLACE_RUN_STATES = ("pre", "down", "close", "lift", "carry", "descend", "lower", "open", "retreat")
MOVING = ("pre", "down", "lift", "carry", "descend", "lower", "retreat")  # min-jerk moves
NEVER_OPENS = 1e-12  # [rad] a jaw command after a cancel is the one before it, to round-off


@pytest.fixture(scope="module")
def model(shared_models) -> mujoco.MjModel:
    return build_model(str(shared_models / "robotstudio_so101"), Row(mu=1.0, mass=0.03, cap=2.94))


def square_point(u: float, v: float, z: float = CUBE_SIZE / 2) -> np.ndarray:
    """A point [m] of the reachable square (``PLACE_SQUARE``), ``u``, ``v`` ∈ [0, 1] across it."""
    (x0, x1), (y0, y1) = PLACE_SQUARE
    return np.array([x0 + u * (x1 - x0), y0 + v * (y1 - y0), z])


def assert_within(arms: np.ndarray, limits: JointLimits) -> None:
    """``arms`` (k, joints), one per control period, is inside the limits (module doc)."""
    lim = limits.select(CFG.robot["arm_joints"])
    assert np.all(arms >= lim.position_min - 1e-9) and np.all(arms <= lim.position_max + 1e-9)
    velocity = np.abs(np.diff(arms, axis=0)) / DT
    accel = np.abs(np.diff(arms, 2, axis=0)) / DT**2
    assert np.all(velocity <= lim.velocity * SLACK), (velocity.max(axis=0), lim.velocity)
    assert np.all(accel <= lim.acceleration * SLACK), (accel.max(axis=0), lim.acceleration)


def scripted(machine: PickMachine, now: float, cube: np.ndarray) -> PickSensing:
    """What the pure tests' sensors say: the cube seen at ``cube`` (and in the jaws as planned
    after lift), a grip that forms at once, support 0.3 s into lower."""
    state, t = machine.state, now - machine.t_state
    if state == "settle":
        return PickSensing(cube_pos=cube, cube_stamp=now)
    if state == "lift":  # in the jaws where planned: the site at lift, the cube ``down`` below it
        seen = machine._lift_site - np.array([0.0, 0.0, CFG.offsets["down"]])
        return PickSensing(cube_pos=seen, cube_stamp=now)
    if state == "close":
        return PickSensing(both_touch=True, jaw_speed=0.0)
    if state == "lower":
        return PickSensing(load=0.3 if t < 0.3 else 0.0)
    return PickSensing()


def run_pure(
    machine: PickMachine,
    cube: np.ndarray,
    event: Callable[[PickMachine, float], None] | None = None,
    after: float = 0.5,
) -> list[tuple[str, PickCommand]]:
    """Every 2 ms command of the machine until it ends (and ``after`` [s] more), each with the
    state it came from; ``event(machine, now)`` runs before each step's command (a cancel)."""
    trace, now, end = [], 0.0, math.inf
    while now < end and now < 40.0:
        if event is not None:
            event(machine, now)
        trace.append((machine.state, machine.command(now)))
        now = round(now + DT, 9)
        machine.update(now, scripted(machine, now, cube))
        if machine.finished and end == math.inf:
            end = now + after
    return trace


def arms_of(trace: list[tuple[str, PickCommand]]) -> np.ndarray:
    return np.array([cmd.arm for _, cmd in trace])


coords = st.floats(0.0, 1.0)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    cube=st.tuples(coords, coords),
    place=st.one_of(st.none(), st.tuples(coords, coords)),
    set_name=st.sampled_from(SETS),
    start=st.one_of(st.none(), st.lists(st.floats(-0.6, 0.6), min_size=5, max_size=5)),
)
def test_every_commanded_arm_reference_of_a_whole_pick_is_within_the_limits(
    model, cube, place, set_name, start
):
    """A whole pick — the home move from a random rest, pre, down, close, lift and hold or the
    place — for any cube over the reachable square and either limit set: every move is timed
    by the limits (the configured durations alone leave first_use's at pre)."""
    limits = LIMITS[set_name]
    rest = None if start is None else HOME + np.asarray(start)
    target = None if place is None else square_point(*place)
    machine = PickMachine(CFG, arm_ik(model, CFG), HOME, start=rest, place=target, limits=limits)
    trace = run_pure(machine, square_point(*cube))
    assert machine.state == ("done" if place is None else "placed"), machine.abort_reason
    assert {"pre", "down", "lift"} <= {s for s, _ in trace}
    assert_within(arms_of(trace), limits)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    when=st.floats(0.0, 1.0),
    place=st.booleans(),
    set_name=st.sampled_from(SETS),
    stop=st.sampled_from(["cancel", "abort"]),
)
def test_a_cancel_or_an_abort_at_any_time_stays_within_the_limits(
    model, when, place, set_name, stop
):
    """A cancel anywhere in a whole pick: the arm slows to rest on its path within the limits
    and holds, the jaw command never changes, the machine ends ``canceled`` remembering where.
    An abort anywhere: no jump either, the way home within the limits, and the jaw closed all
    the way when it may hold the cube (lift, hold, carry, descend, lower)."""
    limits = LIMITS[set_name]
    cube = square_point(0.9, 0.5)
    target = square_point(0.2, 0.3) if place else None
    ik = arm_ik(model, CFG)
    whole = run_pure(PickMachine(CFG, ik, HOME, place=target, limits=limits), cube)
    moving = sum(state not in ("done", "placed") for state, _ in whole)
    k = 1 + round(when * (moving - 2))  # the step the stop comes on, before the pick ends
    seen: dict[str, object] = {}

    def event(machine: PickMachine, now: float) -> None:
        if abs(now - k * DT) < DT / 2:
            seen["state"], seen["command"] = machine.state, machine.command(now)
            seen["t_state"] = machine.t_state
            seen["duration"] = machine.durations.get(machine.state, 0.0)
            if stop == "cancel":
                machine.cancel(now)
            else:
                machine.abort(now, "test stop")

    machine = PickMachine(CFG, ik, HOME, place=target, limits=limits)
    trace = run_pure(machine, cube, event)
    assert_within(arms_of(trace), limits)
    before, after = seen["command"], [cmd for _, cmd in trace[k:]]
    np.testing.assert_allclose(after[0].arm, before.arm, atol=1e-12)  # it starts where it was
    jaws = np.array([cmd.jaw for cmd in after])
    if stop == "abort":
        assert machine.state == "aborted" and machine.abort_reason == "test stop"
        kept = seen["state"] in HELD_STATES
        assert np.all(jaws == (before.jaw if kept else CFG.jaw_open)), (seen["state"], jaws)
        np.testing.assert_allclose(after[-1].arm, HOME, atol=1e-12)
        return
    assert machine.state == "canceled" and machine.canceled_in == seen["state"]
    assert np.all(np.abs(jaws - before.jaw) <= NEVER_OPENS)  # never opens, never moves
    start = dict(machine.entered)["cancel" if "cancel" in dict(machine.entered) else "canceled"]
    left = seen["t_state"] + seen["duration"] - start  # [s] of the move it was cancelled in
    if seen["state"] in MOVING and left > 0.3:  # it stops on the way, not at the move's end
        assert machine.durations["cancel"] < left - 0.1, (machine.durations["cancel"], left)
    efforts = np.array([cmd.effort for cmd in after])
    same = np.isnan(efforts) if math.isnan(before.effort) else efforts == before.effort
    assert np.all(same)
    tail = arms_of(trace[-round(0.5 / DT) :])  # the trace ran 0.5 s past the end: at rest
    assert np.all(tail == tail[-1])


def test_a_cancel_samples_its_stop_for_the_controller_and_the_close_keeps_its_target(model):
    """phase_trajectory in ``cancel`` is the stop to rest (ending where the machine holds);
    a cancel in close keeps the jaw ramp's target of that instant, not the closed one."""
    limits = LIMITS["sts3215"]
    ik, cube = arm_ik(model, CFG), square_point(0.5, 0.5)
    machine = PickMachine(CFG, ik, HOME, limits=limits)
    run_pure(machine, cube, lambda m, now: m.cancel(now) if m.state == "lift" else None)
    lift_at = dict(machine.entered)["lift"]
    assert machine.canceled_in == "lift" and dict(machine.entered)["cancel"] == lift_at

    machine = PickMachine(CFG, ik, HOME, limits=limits)
    stop_at: list[float] = []

    def mid_lift(m: PickMachine, now: float) -> None:
        if m.state == "lift" and now - m.t_state >= 0.4 and not stop_at:
            stop_at.append(now)
            m.cancel(now)
            times, q = phase_trajectory(m, now, 0.02)
            assert m.state == "cancel" and times[-1] == pytest.approx(m.durations["cancel"])
            np.testing.assert_allclose(q[-1], m.command(now + 10.0).arm, atol=1e-12)
            assert times[-1] > 0.0

    run_pure(machine, cube, mid_lift)
    assert machine.state == "canceled" and phase_trajectory(machine, 99.0, 0.02)[0].size == 0

    machine = PickMachine(CFG, ik, HOME, limits=limits)
    jaw: list[float] = []

    def mid_close(m: PickMachine, now: float) -> None:
        if m.state == "close" and now - m.t_state >= 0.1 and not jaw:
            jaw.append(m.command(now).jaw)
            m.cancel(now)

    run_pure(machine, cube, mid_close)
    assert machine.canceled_in == "close" and CFG.jaw_closed < jaw[0] < CFG.jaw_open
    assert machine.command(99.0).jaw == jaw[0]


def test_an_abort_in_lift_keeps_the_jaw_closed_unless_the_jaw_is_empty(model):
    limits = LIMITS["sts3215"]
    ik, cube = arm_ik(model, CFG), square_point(0.5, 0.5)
    for empty, jaw in ((False, CFG.jaw_closed), (True, CFG.jaw_open)):
        machine = PickMachine(CFG, ik, HOME, limits=limits)

        def mid_lift(m: PickMachine, now: float, empty: bool = empty) -> None:
            if m.state == "lift" and now - m.t_state >= 0.5:
                m.abort(now, "the jaw is empty" if empty else "operator stop", empty=empty)

        trace = run_pure(machine, cube, mid_lift)
        assert machine.state == "aborted"
        assert [cmd.jaw for s, cmd in trace if s == "abort"][-1] == jaw
        np.testing.assert_allclose(trace[-1][1].arm, HOME, atol=1e-12)
        assert_within(arms_of(trace), limits)


# --- a cancel on the real physics ---------------------------------------------------------------


def lockstep(
    model: mujoco.MjModel, place: np.ndarray | None, cancel_step: int | None, limits: JointLimits
) -> dict:
    """The lesson's rigid-cube pick (the cube at the square's centre), lockstep as
    ``run_lockstep_pick`` steps it, cancelled before the command of step ``cancel_step``, run
    on 1 s past the machine's end; returns the arm and jaw commands and what MuJoCo says."""
    cube = square_point(0.5, 0.5)
    world = RigidCubeWorld(model, cube, CFG)
    data = world.data
    machine = PickMachine(CFG, arm_ik(model, CFG), world.home, place=place, limits=limits)
    site = model.site(CFG.robot["site"]).id
    out: dict = {"arms": [], "jaws": [], "canceled_in": None}
    step, end = 0, math.inf
    while data.time < end:
        if step == cancel_step:
            out["state"] = machine.state
            out["jaw_at_cancel"] = machine.command(data.time).jaw
            out["offset"] = data.xpos[world.cube_body] - data.site_xpos[site]
            out["k"] = step
            machine.cancel(data.time)
        command = machine.command(data.time)
        out["arms"].append(command.arm)
        out["jaws"].append(command.jaw)
        world.actuate(machine, command)
        mujoco.mj_step(model, data)
        step += 1
        state = machine.state
        sensed = world.sense(machine, state)
        if not machine.finished and machine.update(data.time, sensed) != "close" == state:
            world.close_ended(machine)
        if machine.finished and end == math.inf:
            end = data.time + 1.0
    out["machine"] = machine
    out["offset_end"] = data.xpos[world.cube_body] - data.site_xpos[site]
    out["touch_end"] = world.sensor.read(data).both_touch
    return out


@pytest.fixture(scope="module")
def whole_runs(model) -> dict:
    """The uncancelled picks' state entries (step numbers), to aim a cancel at a state."""
    runs = {}
    for place, set_name in itertools.product((False, True), SETS):
        target = square_point(0.2, 0.3) if place else None
        run = lockstep(model, target, None, LIMITS[set_name])
        machine = run["machine"]
        assert machine.state == ("placed" if place else "done"), machine.abort_reason
        entered = [(s, round(t / DT)) for s, t in machine.entered]
        spans = {s: (a, b) for (s, a), (_, b) in itertools.pairwise(entered)}
        runs[place, set_name] = (target, spans)
    return runs


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.data(), place=st.booleans(), when=st.floats(0.0, 1.0), set_name=st.sampled_from(SETS)
)
def test_a_cancel_on_the_physics_stops_within_the_limits_and_keeps_the_cube(
    model, whole_runs, data, place, when, set_name
):
    """A cancel at a random time of a whole lockstep pick (or pick and place) in MuJoCo: the
    commanded arm stays within the limits and comes to rest, the jaw command never opens, and
    a cube held at the cancel is still in both jaws, where it was, 1 s after the arm stopped."""
    target, spans = whole_runs[place, set_name]
    state = data.draw(st.sampled_from(PLACE_RUN_STATES if place else PICK_STATES))
    first, last = spans[state]
    k = first + 1 + round(when * (last - first - 2))
    run = lockstep(model, target, k, LIMITS[set_name])
    machine = run["machine"]
    assert run["state"] == state and machine.state == "canceled" and machine.canceled_in == state
    arms, jaws = np.array(run["arms"]), np.array(run["jaws"])
    assert_within(arms, LIMITS[set_name])
    tail = arms[-round(1.0 / DT) :]
    assert np.all(tail == tail[-1])  # at rest, held there
    assert np.all(np.abs(jaws[run["k"] :] - run["jaw_at_cancel"]) <= NEVER_OPENS)
    if state in ("lift", "hold", "carry", "descend"):  # held: it moved with the gripper
        moved = np.linalg.norm(run["offset_end"] - run["offset"])
        assert run["touch_end"] and moved < 0.003, (moved, run["touch_end"])
