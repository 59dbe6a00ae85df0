"""PickMachine is pure: driven here with a fake clock and scripted sensor readings, no MuJoCo.

Timing tolerance: one 2 ms step (the machine switches on the first step at or after a duration).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from physai_ros.core.motion.kinematics import IKResult
from physai_ros.core.pick.machine import (
    PickMachine,
    PickSensing,
    load_pick_config,
    load_pick_tree,
    pick_config,
)
from physai_ros.errors import InvalidInput

DT = 0.002  # [s]
CFG = load_pick_config()
HOME = np.zeros(5)
CUBE = np.array([0.22, 0.0, 0.015])


def linear_ik(target, q0):
    """A stand-in IK that is exact and invertible: q = 10·(x, y, z, 0, 0)."""
    q = np.concatenate([10.0 * np.asarray(target), [0.0, 0.0]])
    return IKResult(q=q, error=0.0, iterations=1, converged=True)


def failing_ik(target, q0):
    return IKResult(q=np.asarray(q0), error=0.05, iterations=300, converged=False)


def drive(machine, sensing, t_end=20.0):
    """Step the clock; ``sensing(state, t_in_state)`` returns (both_touch, jaw_speed)."""
    t, trace = 0.0, []
    while not machine.finished and t < t_end:
        cmd = machine.command(t)
        trace.append((t, machine.state, cmd))
        t = round(t + DT, 9)
        touch, speed = sensing(machine.state, t - machine.t_state)
        machine.update(t, PickSensing(touch, speed, CUBE, t))
    return t, trace


def test_config_loads_the_lesson_numbers_frozen():
    d = CFG.durations
    assert (d["settle"], d["pre"], d["down"], d["lift"], d["hold"]) == (0.3, 1.2, 0.8, 1.0, 0.8)
    assert (d["close_ramp"], CFG.close_timeout, CFG.still_speed, CFG.still_time) == (
        0.3,
        4.0,
        0.05,
        0.1,
    )
    assert (CFG.offsets["pre"], CFG.offsets["down"], CFG.offsets["lift"]) == (0.055, -0.004, 0.07)
    with pytest.raises(dataclasses.FrozenInstanceError):
        CFG.close_timeout = 1.0
    with pytest.raises(InvalidInput, match="valid"):
        load_pick_config(robot="ur5")


def test_timed_states_and_a_sensed_close():
    touch_at = 0.25  # [s] into close the jaws seat and stop
    machine = PickMachine(CFG, linear_ik, HOME)

    def sensing(state, t):
        return (state == "close" and t >= touch_at), (0.0 if t >= touch_at else 2.0)

    t_end, trace = drive(machine, sensing)
    entered = {}
    for t, state, _ in trace:
        entered.setdefault(state, t)
    assert entered["pre"] == pytest.approx(0.3, abs=DT)
    assert entered["down"] == pytest.approx(1.5, abs=DT)
    assert entered["close"] == pytest.approx(2.3, abs=DT)
    # sensed: still only counts after the 0.3 s ramp, then for 0.1 s
    assert machine.closed and machine.close_s == pytest.approx(0.4, abs=DT)
    assert entered["lift"] - entered["close"] == pytest.approx(0.4, abs=2 * DT)
    assert t_end == pytest.approx(2.3 + 0.4 + 1.0 + 0.8, abs=2 * DT)
    assert machine.state == "done" and machine.abort_reason is None
    # targets: IK of cube + offsets, reached at the end of each move; jaw open until close
    by_state = {s: [c for _, st, c in trace if st == s] for s in ("pre", "down", "close", "hold")}
    np.testing.assert_allclose(
        by_state["down"][-1].arm[:3], 10 * (CUBE + np.array([0, 0, -0.004])), atol=1e-6
    )
    np.testing.assert_allclose(
        by_state["hold"][-1].arm[:3], 10 * (CUBE + np.array([0, 0, 0.07])), atol=1e-9
    )
    assert all(c.jaw == CFG.jaw_open for c in by_state["pre"] + by_state["down"])
    assert by_state["close"][0].jaw == pytest.approx(CFG.jaw_open)
    assert by_state["close"][-1].jaw == pytest.approx(CFG.jaw_closed)
    assert all(np.array_equal(c.arm, by_state["close"][0].arm) for c in by_state["close"])


def test_stillness_must_last_and_a_twitch_restarts_it():
    machine = PickMachine(CFG, linear_ik, HOME)

    def sensing(state, t):
        twitch = 0.35 <= t < 0.36  # jaw moves briefly: the 0.1 s window starts again
        return state == "close", (1.0 if twitch else 0.0)

    drive(machine, sensing)
    assert machine.close_s == pytest.approx(0.36 + 0.1, abs=2 * DT)


def test_no_grip_times_out_and_lifts_anyway():
    machine = PickMachine(CFG, linear_ik, HOME)
    _, trace = drive(machine, lambda state, t: (False, 0.0))
    assert machine.state == "done" and not machine.closed and math.isnan(machine.close_s)
    close_time = sum(1 for _, s, _ in trace if s == "close") * DT
    assert close_time == pytest.approx(CFG.close_timeout, abs=2 * DT)


def test_unreachable_cube_aborts_open_and_back_home():
    machine = PickMachine(CFG, failing_ik, HOME)
    _, trace = drive(machine, lambda state, t: (False, 0.0))
    assert machine.state == "aborted" and "IK did not converge" in machine.abort_reason
    assert all(c.jaw == CFG.jaw_open for _, _, c in trace)
    np.testing.assert_array_equal(machine.command(99.0).arm, HOME)


@pytest.mark.parametrize(
    ("pose", "stamp", "reason"), [(None, None, "missing"), (CUBE, -1.0, "stale")]
)
def test_missing_or_stale_cube_pose_is_waited_for_at_rest_then_aborts(pose, stamp, reason):
    machine = PickMachine(CFG, linear_ik, HOME)
    t = 0.0
    while machine.state == "settle":
        np.testing.assert_array_equal(machine.command(t).arm, HOME)  # nothing moves meanwhile
        t = round(t + DT, 9)
        machine.update(t, PickSensing(False, 0.0, pose, stamp))
    assert machine.state == "abort" and reason in machine.abort_reason
    assert f"after waiting {CFG.pose_wait:g} s" in machine.abort_reason
    assert t == pytest.approx(CFG.durations["settle"] + CFG.pose_wait, abs=DT)


@pytest.mark.parametrize("late", [0.1, 1.9])  # [s] after the end of settle (pose_wait 2 s)
def test_a_pose_that_comes_late_within_pose_wait_is_planned_from(late):
    assert late < CFG.pose_wait
    machine = PickMachine(CFG, linear_ik, HOME)
    arrives = CFG.durations["settle"] + late
    t = 0.0
    while machine.state == "settle":
        t = round(t + DT, 9)
        fresh = t >= arrives
        machine.update(t, PickSensing(False, 0.0, CUBE if fresh else None, t if fresh else None))
    assert machine.state == "pre"
    assert t == pytest.approx(arrives, abs=DT)
    lift_to = np.array([0.0, 0.0, CFG.offsets["pre"]])
    np.testing.assert_allclose(machine.poses["pre"][:3], 10.0 * (CUBE + lift_to))


def test_negative_pose_wait_is_refused():
    with pytest.raises(InvalidInput, match="pose_wait"):
        dataclasses.replace(CFG, pose_wait=-1.0)


def test_abort_mid_move_blends_from_where_the_arm_was():
    """An abort mid-move starts where the arm was commanded, slows it to rest along its path
    (no velocity jump), opens the jaw (nothing held before the close) and ends home."""
    machine = PickMachine(CFG, linear_ik, HOME)
    _, _ = drive(machine, lambda s, t: (False, 0.0), t_end=1.0)  # in pre, mid-move
    where = machine.command(1.0).arm
    velocity = (where - machine.command(1.0 - DT).arm) / DT
    machine.abort(1.0, "operator stop")
    np.testing.assert_allclose(machine.command(1.0).arm, where)
    np.testing.assert_allclose((machine.command(1.0 + DT).arm - where) / DT, velocity, rtol=0.02)
    assert machine.command(1.0).jaw == CFG.jaw_open
    assert machine.durations["abort"] > CFG.durations["abort"]  # the stop comes first
    np.testing.assert_allclose(machine.command(1.0 + machine.durations["abort"]).arm, HOME)


def test_a_resting_arm_goes_home_first_within_its_speed_and_acceleration():
    """The home move starts where the arm was measured and lasts long enough for the peak
    joint speed (home_speed) and acceleration (home_accel) of its min-jerk profile; an arm
    already home skips it (the lessons' sweeps are unchanged)."""
    rest = np.array([0.0, -1.7, 1.6, 0.8, 0.0])
    machine = PickMachine(CFG, linear_ik, HOME, t0=0.0, start=rest)
    assert machine.state == "home"
    _, trace = drive(machine, lambda state, t: (state == "close" and t > 0.35, 0.0))
    home = [(t, cmd.arm) for t, state, cmd in trace if state == "home"]
    times = np.array([t for t, _ in home])
    q = np.array([a for _, a in home])
    np.testing.assert_allclose(q[0], rest)
    speed = np.abs(np.diff(q, axis=0)) / DT
    accel = np.abs(np.diff(q, n=2, axis=0)) / DT**2
    assert speed.max() <= CFG.home_speed * 1.01 and accel.max() <= CFG.home_accel * 1.02
    assert speed.max() > 0.95 * CFG.home_speed  # as fast as allowed, not slower
    assert times[-1] == pytest.approx(1.875 * 1.7 / CFG.home_speed, abs=2 * DT)
    assert next(s for _, s, _ in trace if s != "home") == "settle"
    assert PickMachine(CFG, linear_ik, HOME, start=HOME + 1e-4).state == "settle"
    with pytest.raises(InvalidInput, match="start pose"):
        PickMachine(CFG, linear_ik, HOME, start=np.full(5, math.nan))


def test_abort_starts_where_the_controller_holds_the_arm():
    machine = PickMachine(CFG, linear_ik, HOME)
    machine.update(0.31, PickSensing(False, 0.0, CUBE, 0.3))  # settle -> pre
    held = np.array([0.1, 0.2, 0.3, 0.0, 0.0])
    machine.abort(0.5, "the controller stopped the arm", start=held)
    np.testing.assert_allclose(machine.command(0.5).arm, held)
    np.testing.assert_allclose(machine.command(0.5 + CFG.durations["abort"]).arm, HOME)


def force_config(target: float):
    tree = load_pick_tree()
    tree["close_mode"] = "force"
    tree["force"]["target"] = target
    return pick_config(tree)


def test_force_mode_closes_on_the_settled_force_and_keeps_its_effort_through_lift():
    """close_mode force with a scripted jaw: at the preshape and still at once, touching 0.2 s
    later, the force a spring of the effort (N = τ / lever): the close ends after the squeeze
    and the 0.3 s settle, the pick lifts and holds with the settled effort (not the cap)."""
    cfg = force_config(8.0)
    machine = PickMachine(cfg, linear_ik, HOME)
    t, efforts = 0.0, []
    while not machine.finished and t < 20.0:
        cmd = machine.command(t)
        t = round(t + DT, 9)
        forces, jaw = (0.0, 0.0), cfg.force.preshape
        if machine.state == "close":
            efforts.append(cmd.effort)
            touching = cmd.jaw == cfg.jaw_closed and t - machine.t_state > 0.2
            forces = (cmd.effort / cfg.force.lever,) * 2 if touching else forces
        machine.update(t, PickSensing(False, 0.0, CUBE, t, jaw, forces))
        if machine.state == "hold":
            held = machine.command(t)
    assert machine.state == "done" and machine.closed, machine.abort_reason
    assert efforts[0] == cfg.force.cap  # the preshape: a position move at the cap
    assert held.jaw == cfg.jaw_closed
    assert held.effort / cfg.force.lever == pytest.approx(8.0, rel=0.15)
    assert max(efforts[1:]) <= 8.0 * 1.15 * cfg.force.lever


def test_force_target_beyond_the_cap_aborts_before_anything_moves():
    machine = PickMachine(force_config(45.0), linear_ik, HOME)
    assert machine.state == "abort" and "above what the gripper can apply" in machine.abort_reason
    _, trace = drive(machine, lambda state, t: (False, 0.0))
    assert machine.state == "aborted"
    assert all(c.jaw == CFG.jaw_open and np.array_equal(c.arm, HOME) for _, _, c in trace)


def test_unknown_close_mode_is_refused():
    tree = load_pick_tree()
    tree["close_mode"] = "grab"
    with pytest.raises(InvalidInput, match="cap"):
        pick_config(tree)


# --- the Panda's close: one franka_gripper Grasp (force_close grasp) -------------------------
PANDA_HOME = np.zeros(7)


def panda_ik(target, q0):
    """The linear stand-in for seven joints."""
    q = np.concatenate([10.0 * np.asarray(target), np.zeros(4)])
    return IKResult(q=q, error=0.0, iterations=1, converged=True)


def grasp_config(**force):
    tree = load_pick_tree(robot="panda")
    tree["close_mode"] = "force"
    tree["force"].update(force)
    return pick_config(tree, "panda")


def drive_grasp(cfg, result_after: float | None, result: tuple[bool, str] = (True, "")):
    """Drive a Panda pick whose Grasp answers ``result`` ``result_after`` [s] into close (None:
    never); returns the machine and the commands sent in close."""
    machine = PickMachine(cfg, panda_ik, PANDA_HOME)
    t, in_close = 0.0, []
    while not machine.finished and t < 30.0:
        cmd = machine.command(t)
        if machine.state == "close":
            in_close.append(cmd)
        t = round(t + DT, 9)
        answered = (
            machine.state == "close"
            and result_after is not None
            and t - machine.t_state >= result_after
        )
        machine.update(
            t, PickSensing(cube_pos=CUBE, cube_stamp=t, grasp=result if answered else None)
        )
    return machine, in_close


def test_the_panda_section_overrides_the_top_level_values_as_defaults():
    """robot panda reads its own jaw (metres of one finger), cap (N) and target (the hand's
    30 N floor); the SO-101's stay; no ``overrides`` entry is left to be declared."""
    tree = load_pick_tree(robot="panda")
    cfg = pick_config(tree, "panda")
    assert (cfg.jaw_open, cfg.jaw_closed, cfg.still_speed) == (0.04, 0.0, 0.005)
    assert tree["jaw_torque_cap"] == 70.0 and tree["force"]["target"] == 30.0
    assert tree["force"]["tolerance"] == load_pick_tree()["force"]["tolerance"]  # merged, kept
    assert "overrides" not in tree["panda"] and "overrides" not in tree["so101"]
    assert (CFG.jaw_open, CFG.robot["jaws"]) == (0.85, ["fixed_jaw", "moving_jaw"])
    assert not cfg.grasping and grasp_config().grasping  # cap by default, a Grasp when force


def test_grasp_close_lifts_on_a_successful_grasp_with_the_target_as_its_force():
    cfg = grasp_config(target=40.0)
    machine, in_close = drive_grasp(cfg, result_after=0.7)
    assert machine.state == "done" and machine.closed, machine.abort_reason
    assert machine.close_s == pytest.approx(0.7, abs=DT)
    assert all(c.jaw == cfg.jaw_closed and c.effort == 40.0 for c in in_close)
    assert machine.force_close is None  # no servo loop of the pick's own


def test_a_failed_grasp_aborts_with_the_hands_reason_and_the_hand_opens():
    why = "grasp failed: the fingers stopped at a width of 0.0039 m, outside (0.015, 0.035) m"
    machine, _ = drive_grasp(grasp_config(), result_after=1.0, result=(False, why))
    assert machine.state == "aborted" and not machine.closed
    assert machine.abort_reason == f"the gripper's grasp failed: {why}"
    assert machine.command(1e9).jaw == machine.cfg.jaw_open


def test_no_grasp_result_aborts_at_the_force_timeout():
    cfg = grasp_config(timeout=2.5)
    machine = PickMachine(cfg, panda_ik, PANDA_HOME)
    t, entered = 0.0, None
    while not machine.finished and t < 30.0:
        t = round(t + DT, 9)
        machine.update(t, PickSensing(cube_pos=CUBE, cube_stamp=t))
        if machine.state == "close" and entered is None:
            entered = t
        if machine.state == "abort":
            break
    assert "no grasp result within force.timeout 2.5 s" in machine.abort_reason
    assert t - entered == pytest.approx(2.5, abs=2 * DT)


def test_grasp_settings_and_the_gripper_kind_are_checked():
    tree = load_pick_tree(robot="panda")
    tree["close_mode"] = "force"
    with pytest.raises(InvalidInput, match=r"grasp\.speed"):
        pick_config({**tree, "grasp": {**tree["grasp"], "speed": 0.0}}, "panda")
    with pytest.raises(InvalidInput, match="epsilon_inner"):
        pick_config({**tree, "grasp": {**tree["grasp"], "epsilon_inner": math.nan}}, "panda")
    with pytest.raises(InvalidInput, match="force_close 'squeeze' unknown"):
        pick_config({**tree, "panda": {**tree["panda"], "force_close": "squeeze"}}, "panda")
    with pytest.raises(InvalidInput, match="lacks \\['jaws'\\]"):
        pick_config({**tree, "panda": {k: v for k, v in tree["panda"].items() if k != "jaws"}},
                    "panda")  # fmt: skip


@pytest.mark.parametrize("where", ["close", "hold"])
def test_a_cancel_keeps_the_force_close_squeeze_where_it_was(where):
    """close_mode force, cancelled while squeezing (0.25 s into close: touching, the effort
    being servoed) or holding: the jaw target and effort of that instant are kept for good,
    so a held cube stays squeezed at its force and a squeeze under way stops where it was."""
    cfg = force_config(8.0)
    machine = PickMachine(cfg, linear_ik, HOME)
    t, at_cancel = 0.0, None
    while not machine.finished and t < 20.0:
        if at_cancel is None and machine.state == where and t - machine.t_state >= 0.25:
            at_cancel = machine.command(t)
            machine.cancel(t)
        cmd = machine.command(t)
        t = round(t + DT, 9)
        touching = machine.state == "close" and t - machine.t_state > 0.2
        forces = (cmd.effort / cfg.force.lever,) * 2 if touching else (0.0, 0.0)
        machine.update(t, PickSensing(False, 0.0, CUBE, t, cfg.force.preshape, forces))
    assert machine.state == "canceled" and machine.canceled_in == where
    assert machine.command(t + 5.0) == (pytest.approx(at_cancel.arm), *at_cancel[1:])
    assert not math.isnan(at_cancel.effort)  # the force close's effort, not the cap


def test_a_cancel_stops_an_aborts_way_home_and_an_abort_leaves_a_cancel_alone():
    """A cancel during an abort's way home stops it where it is (canceled_in abort, the abort's
    reason kept); an abort during a cancel changes nothing (the arm holds, it does not go home)."""
    machine = PickMachine(CFG, linear_ik, HOME)
    drive(machine, lambda s, t: (False, 0.0), t_end=1.0)  # in pre, mid-move
    machine.abort(1.0, "operator stop")
    machine.cancel(1.5)
    assert machine.canceled_in == "abort" and machine.abort_reason == "operator stop"
    rest = machine.command(1.5 + machine.durations["cancel"]).arm
    assert not np.allclose(rest, HOME)
    machine.abort(1.6, "late trouble")
    machine.update(3.0, PickSensing())
    assert machine.state == "canceled" and machine.abort_reason == "operator stop"
    np.testing.assert_allclose(machine.command(9.0).arm, rest)
