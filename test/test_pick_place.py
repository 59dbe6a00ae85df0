"""Pick and place of the jaw pick: the machine's place states, judged by physics and by limits.

Tolerances, stated once:
* a place is *placed* when the cube's centre ends within 1 cm of the place position (3-D), its z
  axis within 10° of the vertical, and no jaw touches it after the retreat (``judge.py``'s
  ``PLACE_TOLERANCE``, ``MAX_TILT``); in the sim every placement over the reachable square must
  be placed, with the jaws at least 5 mm clear of the cube;
* every commanded arm step of the place (carry … retreat), sampled at the 2 ms control period,
  stays within the SO-101's velocity and acceleration limits (``config/limits_so101.yaml``),
  with 1e-9 relative slack for round-off only.
"""

from __future__ import annotations

import math
from dataclasses import replace

import mujoco
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from physai_ros.core.motion.limits import load_limits
from physai_ros.core.motion.time_scaling import get_shape
from physai_ros.core.pick.judge import (
    MAX_TILT,
    NO_MEASUREMENT,
    PLACE_TOLERANCE,
    RobotPlaceReading,
    final_place_verdict,
    place_pose_verdict,
    place_robot_verdict,
)
from physai_ros.core.pick.machine import (
    PickMachine,
    PickSensing,
    arm_ik,
    load_pick_config,
    object_estimate,
    phase_trajectory,
)
from physai_ros.core.pick.place import PLACE_STATES, PlaceParams, along, brake, descent_duration
from physai_ros.errors import InvalidInput
from physai_ros.experiments.lesson16.place import PLACE_SQUARE, run_place, square_places
from physai_ros.experiments.lesson16.sweep import CUBE_SIZE, Row, build_model
from physai_ros.sim.lockstep_pick import run_lockstep_pick
from physai_ros.sim.rigid_cube import RigidCubeWorld

CFG = load_pick_config()
LIMITS = load_limits("so101")
DT = 0.002  # [s] the lesson's physics step and the limits' control period
CUBE = np.array([0.22, 0.0, CUBE_SIZE / 2])  # [m] where the cube is picked
UPRIGHT = np.array([1.0, 0.0, 0.0, 0.0])
SLACK = 1.0 + 1e-9


@pytest.fixture(scope="module")
def model(shared_models) -> mujoco.MjModel:
    return build_model(str(shared_models / "robotstudio_so101"), Row(mu=1.0, mass=0.03, cap=2.94))


# --- the judge ---------------------------------------------------------------------------------


def test_judge_places_a_cube_on_target_and_refuses_one_3_cm_off():
    target = np.array([0.2, 0.0, 0.015])
    good = place_pose_verdict(
        target + np.array([0.004, -0.003, 0.0]), UPRIGHT, 0.0, target, jaw_clear=True
    )
    assert good.outcome == "placed" and good.error == pytest.approx(0.005)
    off = place_pose_verdict(
        target + np.array([0.03, 0.0, 0.0]), UPRIGHT, 0.0, target, jaw_clear=True
    )
    assert off.outcome == "dropped" and "3.00 cm" in off.reason


def test_judge_refuses_a_tipped_cube_a_touching_jaw_and_a_stale_pose():
    target = np.array([0.2, 0.0, 0.015])
    half = math.radians(15.0) / 2  # 15° about x
    tipped = np.array([math.cos(half), math.sin(half), 0.0, 0.0])
    verdict = place_pose_verdict(target, tipped, 0.0, target, jaw_clear=True)
    assert verdict.outcome == "dropped" and verdict.tilt == pytest.approx(math.radians(15.0))
    assert math.radians(15.0) > MAX_TILT
    touching = place_pose_verdict(target, UPRIGHT, 0.0, target, jaw_clear=False)
    assert touching.outcome == "dropped" and "jaw" in touching.reason
    stale = place_pose_verdict(target, UPRIGHT, 2.0, target, jaw_clear=True, max_age=0.5)
    assert stale.outcome == NO_MEASUREMENT


def test_robot_judges_its_release_point_and_a_fresh_pose_wins():
    target = np.array([0.2, 0.0, 0.015])
    down = CFG.offsets["down"]
    grip = (0.0, 0.0, down)
    at = target + np.array([0.003, 0.0, down])  # the site where it held a cube centred 3 mm off
    robot = place_robot_verdict(RobotPlaceReading(at, True, False, 0.0), target, grip=grip)
    assert robot.outcome == "placed" and robot.error == pytest.approx(0.003)
    # the cube seen 8 mm off the site in the jaws: the same release point is 8 mm further off
    shifted = place_robot_verdict(
        RobotPlaceReading(at, True, False, 0.0), target, grip=(0.0, -0.008, down)
    )
    assert shifted.error == pytest.approx(math.hypot(0.003, 0.008))
    unsensed = RobotPlaceReading(at, False, False, 0.0)
    assert place_robot_verdict(unsensed, target, grip=grip).outcome == "dropped"
    far = RobotPlaceReading(at + np.array([PLACE_TOLERANCE * 2, 0.0, 0.0]), True, False, 0.0)
    assert place_robot_verdict(far, target, grip=grip).outcome == "dropped"
    fell = place_pose_verdict(
        target + np.array([0.03, 0.0, 0.0]), UPRIGHT, 0.0, target, jaw_clear=True
    )
    assert final_place_verdict(robot, fell) == (fell, "cube_pose")
    stale = place_pose_verdict(target, UPRIGHT, 9.0, target, jaw_clear=True, max_age=0.5)
    assert final_place_verdict(robot, stale) == (robot, "robot")


# --- bad targets are refused before anything moves -----------------------------------------------


@pytest.mark.parametrize(
    ("place", "words"),
    [
        ((0.2, math.nan, 0.015), "finite"),
        ((0.2, 0.0), "3 finite"),
        ((0.2, 0.0, -0.01), "below the table"),
        ((0.32, 0.0, 0.015), "out of reach"),
        ((0.0, 0.0, 0.015), "out of reach"),
    ],
)
def test_bad_place_targets_are_refused_before_the_arm_moves(model, place, words):
    world = RigidCubeWorld(model, CUBE, CFG)
    with pytest.raises(InvalidInput, match=words):
        run_lockstep_pick(world, CFG, world.home, place=place, limits=LIMITS)
    assert world.data.time == 0.0  # not one physics step


def test_a_place_without_limits_is_refused(model):
    with pytest.raises(InvalidInput, match="limits"):
        PickMachine(CFG, arm_ik(model, CFG), np.zeros(5), place=(0.2, 0.0, 0.015))


def test_config_pick_yaml_place_section_is_the_code_defaults():
    assert CFG.place == PlaceParams()


def test_place_parameters_are_checked():
    with pytest.raises(InvalidInput, match="support_fraction"):
        PlaceParams(support_fraction=1.5)
    with pytest.raises(InvalidInput, match="valid"):
        PlaceParams.from_tree({"carry_hieght": 0.05})


# --- the place in MuJoCo ------------------------------------------------------------------------


def test_places_over_the_reachable_square_land_within_1_cm_upright(model):
    """Six placements, judged by the cube's own pose: all placed, the jaws clear after retreat."""
    for place in square_places(6, seed=26):
        result = run_place(model, CUBE, place, CFG, LIMITS)
        assert result.state == "placed", (place, result.abort_reason)
        assert result.support_by == "load"  # the table took the weight, sensed
        assert result.verdict.outcome == "placed", (place, result.verdict.reason)
        assert result.verdict.error < PLACE_TOLERANCE and result.verdict.tilt < MAX_TILT
        assert result.jaw_gap > 0.005
        assert result.phases["lower"] < result.phases["carry"]  # ended on support, not a timer


def test_places_sensed_by_the_arm_stall_alone_land_within_1_cm(model):
    """A robot without a load estimate: the table stopping the arm ends the descent."""
    for place in square_places(3, seed=7):
        result = run_place(model, CUBE, place, CFG, LIMITS, sense_load=False)
        assert result.support_by == "stall", result.abort_reason
        assert result.verdict.outcome == "placed", (place, result.verdict.reason)
        assert result.jaw_gap > 0.005


def test_a_place_without_sensing_releases_at_the_placing_height_within_1_cm(model):
    """``sense_support`` false (a stiff arm such as a Franka): the descent ends at the placing
    height itself, on its own clock, and the jaw opens there; the cube, set down on the table
    where it was told to go, stands upright within 1 cm."""
    cfg = replace(CFG, place=replace(CFG.place, sense_support=False))
    for place in square_places(2, seed=31):
        result = run_place(model, CUBE, place, cfg, LIMITS, sense_load=False)
        assert (result.state, result.support_by) == ("placed", "height"), result.abort_reason
        assert result.verdict.outcome == "placed", (place, result.verdict.reason)
        assert result.verdict.error < PLACE_TOLERANCE and result.verdict.tilt < MAX_TILT
        assert result.jaw_gap > 0.005
        # lower ran its whole descent (approach only, no press), not cut by a sensed support
        whole = get_shape("quintic").peak(1) * cfg.place.approach / cfg.place.lower_speed
        assert result.phases["lower"] >= whole - DT


def test_a_place_given_the_cube_position_only_lands_within_1_cm(model):
    """A real arm without a detector: the pick is told where the cube is and never measures it.
    After the grip that position says nothing (the cube is in the jaws): the place takes the
    grasp as planned. Offered as a pose at the end of the lift, it read as the cube a lift
    height below the jaws, and the place stopped that much high."""
    for place in square_places(2, seed=29):
        result = run_place(model, CUBE, place, CFG, LIMITS, sense_load=False, pose_given=True)
        assert result.state == "placed", (place, result.abort_reason)
        assert result.verdict.outcome == "placed", (place, result.verdict.reason)
        assert result.verdict.error < PLACE_TOLERANCE


def test_the_given_position_counts_until_the_grip_and_a_fresh_measurement_first():
    given, now, max_age = np.array([0.2, 0.0, 0.015]), 10.0, 0.5
    fresh, stale = (np.array([0.21, 0.0, 0.015]), 9.8), (np.array([0.3, 0.0, 0.015]), 9.0)
    for measured in (None, stale):
        pos, stamp = object_estimate(measured, given, now, max_age, gripped=False)
        assert np.array_equal(pos, given) and stamp == now
    assert object_estimate(fresh, given, now, max_age, gripped=False) is fresh
    for measured in (None, stale, fresh):  # in the jaws: only what was measured
        assert object_estimate(measured, given, now, max_age, gripped=True) is measured
    assert object_estimate(stale, None, now, max_age, gripped=False) is stale


def lower_behind(machine: PickMachine, behind: float, support_at: float) -> float | None:
    """Lift-and-place ``machine`` on a 2 ms clock (as :func:`drive`), the measured arm in lower
    following its command ``behind`` [s] late until ``support_at`` [s] into lower, where the
    table stops it. Returns when [s into lower] the machine left lower (None: it never did)."""
    now = 0.0
    stopped = None
    while not machine.finished and now < 30.0:
        now += DT
        state, t = machine.state, now - machine.t_state
        sensed = scripted(machine, now)
        if state == "lower":
            lower_at = machine.t_state
            if t < support_at:
                stopped = machine.command(max(lower_at, now - behind)).arm
            sensed = PickSensing(arm=stopped, arm_stamp=now)
        if machine.update(now, sensed) != "lower" and state == "lower":
            return now - lower_at
    return None


@pytest.mark.parametrize("stall_delay", [0.04, 0.0])
def test_an_arm_running_behind_its_command_is_no_stall_until_the_table_stops_it(model, stall_delay):
    """A servo that follows its command 30 ms late (the simulated arm over ROS ran 17 ms late)
    lags the descent's own speed by millimetres: the stall is the lag from the nearest of the
    last ``stall_delay`` of commands, so the default senses support only once the table stops
    the arm, within 0.1 s; without that allowance (``stall_delay`` 0) the late arm alone reads
    as a stall well before it."""
    cfg = replace(CFG, place=replace(CFG.place, stall_delay=stall_delay))
    machine = PickMachine(
        cfg, arm_ik(model, cfg), np.zeros(5), place=(0.2, 0.0, 0.015), limits=LIMITS
    )
    support_at = 0.5
    left = lower_behind(machine, behind=0.03, support_at=support_at)
    assert left is not None, machine.abort_reason
    if stall_delay > 0.0:
        assert machine.support_by == "stall"
        assert support_at < left < support_at + 0.1, left
    else:
        assert left < support_at, f"no false stall without the allowance: left lower at {left}"


def test_without_support_the_lower_fails_with_its_reason(model):
    """A table that never takes the weight (the load never falls, the arm never lags): the
    descent stops at its bound and the place aborts, saying why."""
    machine = PickMachine(
        CFG, arm_ik(model, CFG), np.zeros(5), place=(0.2, 0.0, 0.015), limits=LIMITS
    )
    run = drive(machine, support_at=math.inf)
    assert run.state == "aborted" and "no support sensed" in machine.abort_reason


# --- every commanded step of the place is inside the joint limits -------------------------------


def drive(
    machine: PickMachine,
    support_at: float,
    grip=(0.0, 0.0, 0.0),
    signal: str = "load",
    sag: np.ndarray | None = None,
    press: np.ndarray | None = None,
) -> PickMachine:
    """Run the pure machine on a 2 ms clock with scripted sensing: the cube seen at ``CUBE``, a
    grip that forms at once, the cube ``grip`` [m] off in the jaws after lift, and support
    ``support_at`` [s] into lower: the load falls (signal load) or the measured arm, ``sag``
    [rad] behind its command until then, lags by ``press`` [rad] more (signal stall; with
    load, the arm is measured too when ``sag`` is given). Records every arm command on
    ``machine.arms``."""
    machine.arms = []
    now = 0.0
    while not machine.finished and now < 30.0:
        machine.arms.append((machine.state, machine.command(now).arm))
        now += DT
        state, t = machine.state, now - machine.t_state
        sensed = scripted(machine, now, grip)
        if state == "lower":
            supported = t >= support_at
            load = (0.0 if supported else 0.3) if signal == "load" else math.nan
            arm = None
            if sag is not None:
                arm = machine.command(now).arm - sag - (press if supported else 0.0)
            sensed = PickSensing(load=load, arm=arm)
        machine.update(now, sensed)
    return machine


def scripted(machine: PickMachine, now: float, grip=(0.0, 0.0, 0.0)) -> PickSensing:
    """The scripted sensing of every state but lower at ``now`` [s]: the cube seen at ``CUBE``,
    a grip that forms at once, the cube ``grip`` [m] off in the jaws after lift."""
    if machine.state == "settle":
        return PickSensing(cube_pos=CUBE, cube_stamp=now)
    if machine.state == "close":
        return PickSensing(both_touch=True, jaw_speed=0.0)
    if machine.state == "lift":
        seen = machine._lift_site + np.array([0.0, 0.0, -CFG.offsets["down"]]) + grip
        return PickSensing(cube_pos=seen, cube_stamp=now)
    return PickSensing()


coords = st.floats(0.0, 1.0)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    u=coords,
    v=coords,
    support=st.floats(0.02, 1.2),
    grip=st.tuples(*[st.floats(-0.005, 0.005)] * 3),
    set_name=st.sampled_from(["sts3215", "first_use"]),
    signal=st.sampled_from(["load", "stall", "none"]),
    sag=st.lists(st.floats(-0.01, 0.01), min_size=5, max_size=5),
    press=st.lists(st.floats(-0.05, 0.05), min_size=5, max_size=5),
)
def test_every_commanded_place_step_is_within_the_velocity_and_acceleration_limits(
    model, u, v, support, grip, set_name, signal, sag, press
):
    """Random places over the square, grips, support times and arm lags (the relief before
    the jaw opens moves the arm back by the press), with either support signal, or none
    sensed (``sense_support`` false: released at the placing height)."""
    limits = load_limits("so101", set_name)
    lim = limits.select(CFG.robot["arm_joints"])
    x = PLACE_SQUARE[0][0] + u * (PLACE_SQUARE[0][1] - PLACE_SQUARE[0][0])
    y = PLACE_SQUARE[1][0] + v * (PLACE_SQUARE[1][1] - PLACE_SQUARE[1][0])
    cfg = replace(CFG, place=replace(CFG.place, sense_support=signal != "none"))
    machine = PickMachine(cfg, arm_ik(model, cfg), np.zeros(5), place=(x, y, 0.015), limits=limits)
    press = np.asarray(press)
    if signal == "stall":  # the stall must show: one joint lags past the threshold
        press[0] = math.copysign(max(abs(press[0]), 2 * CFG.place.stall_lag), press[0])
    machine = drive(machine, support, grip, signal, np.asarray(sag), press)
    assert machine.state == "placed", machine.abort_reason
    assert (machine.support_by == "height") == (signal == "none"), machine.support_by
    states = [s for s, _ in machine.arms]
    first = states.index("carry") - 2  # at rest at the end of lift, then the place's moves
    arms = np.array([q for _, q in machine.arms[first:]])
    assert set(PLACE_STATES) <= set(states[first:])
    velocity = np.abs(np.diff(arms, axis=0)) / DT
    accel = np.abs(np.diff(arms, 2, axis=0)) / DT**2
    assert np.all(velocity <= lim.velocity * SLACK), velocity.max(axis=0)
    assert np.all(accel <= lim.acceleration * SLACK), accel.max(axis=0)


@settings(max_examples=50, deadline=None)
@given(
    dq=st.lists(st.floats(-1.5, 1.5), min_size=5, max_size=5),
    u0=st.floats(0.0, 1.0),
)
def test_the_brake_of_a_move_timed_at_the_limits_stays_within_them(dq, u0):
    """The hardest case for the brake: the descent at the shortest duration it is given
    (half the acceleration limit), stopped anywhere along it (the pick's is far slower)."""
    lim = LIMITS.select(CFG.robot["arm_joints"])
    qa, dq = np.zeros(5), np.asarray(dq)
    T = descent_duration(qa, qa + dq, lim)
    if T == 0.0:  # no motion
        return
    stop = brake(1.0, u0, T, dq, lim, shortest=DT)
    t = 1.0 + np.arange(-3, round(stop.D / DT) + 4) * DT  # from just before the stop to rest
    clock = [max(0.0, u0 + (tt - 1.0) / T) if tt < 1.0 else stop.u(tt) for tt in t]
    q = np.array([along(qa, dq, c) for c in clock])
    assert np.all(np.abs(np.diff(q, axis=0)) / DT <= lim.velocity * SLACK)
    assert np.all(np.abs(np.diff(q, 2, axis=0)) / DT**2 <= lim.acceleration * SLACK)


def test_each_place_state_samples_into_a_trajectory_ending_where_the_machine_goes(model):
    """What the pick node sends per state: sampled from the state's entry to its end, the last
    sample the pose the next state starts from."""
    machine = PickMachine(
        CFG, arm_ik(model, CFG), np.zeros(5), place=(0.2, 0.01, 0.015), limits=LIMITS
    )
    sampled = {}
    now, state = 0.0, machine.state
    while not machine.finished:
        if machine.state != state or not sampled:
            state = machine.state
            sampled[state] = phase_trajectory(machine, now, 0.02)
            start = now
        now += DT
        t = now - machine.t_state
        sensed = {
            "settle": PickSensing(cube_pos=CUBE, cube_stamp=now),
            "close": PickSensing(both_touch=True, jaw_speed=0.0),
            "lower": PickSensing(load=0.3 if t < 0.3 else 0.0),
        }.get(machine.state, PickSensing())
        before = machine.state
        machine.update(now, sensed)
        if machine.state != before and before in PLACE_STATES:
            times, q = sampled[before]
            assert now - start == pytest.approx(times[-1], abs=DT) or before == "lower"
            if before != "lower":  # lower ends on support, mid-move: open starts from there
                np.testing.assert_allclose(q[-1], machine.command(now).arm, atol=1e-9)
    assert machine.state == "placed" and set(PLACE_STATES) <= set(sampled)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(when=st.floats(0.0, 1.0))
def test_an_abort_anywhere_in_the_place_goes_home_within_the_limits(model, when):
    """An abort at a random time from carry to retreat (the half-speed first_use limits): the
    way home is timed by the limits too, so no commanded step leaves them."""
    limits = load_limits("so101", "first_use")
    lim = limits.select(CFG.robot["arm_joints"])
    place = (0.2, 0.02, 0.015)
    whole = drive(
        PickMachine(CFG, arm_ik(model, CFG), np.zeros(5), place=place, limits=limits), 0.3
    )
    starts = dict(whole.entered)
    t_abort = starts["carry"] + when * (starts["placed"] - starts["carry"])
    machine = PickMachine(CFG, arm_ik(model, CFG), np.zeros(5), place=place, limits=limits)
    arms, now = [], 0.0
    while not machine.finished:
        arms.append(machine.command(now).arm)
        now += DT
        if abs(now - t_abort) < DT / 2:
            machine.abort(now, "test abort")
        t = now - machine.t_state
        sensed = {
            "settle": PickSensing(cube_pos=CUBE, cube_stamp=now),
            "close": PickSensing(both_touch=True, jaw_speed=0.0),
            "lower": PickSensing(load=0.3 if t < 0.3 else 0.0),
        }.get(machine.state, PickSensing())
        machine.update(now, sensed)
    assert machine.state == "aborted" and machine.abort_reason == "test abort"
    q = np.array(arms[round(starts["carry"] / DT) - 2 :])
    assert np.all(np.abs(np.diff(q, axis=0)) / DT <= lim.velocity * SLACK)
    assert np.all(np.abs(np.diff(q, 2, axis=0)) / DT**2 <= lim.acceleration * SLACK)
