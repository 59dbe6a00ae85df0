"""The Franka Hand's commands on the shared gripper controller: what each means (pure), and what
the simulated Panda hand then does (MuJoCo, no ROS): the width reached, the force on the cube,
libfranka's grasp window, franka_gripper's GripperCommand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_mujoco_sim import follow, panda_grasp_configurations

from physai_ros.config import load_sim_config
from physai_ros.core.controllers.gac import GripperEnd
from physai_ros.core.motion.joint_trajectory import TrajectoryPoint
from physai_ros.robots.franka.hand import (
    COMMAND_FAILED,
    CommandFailed,
    FrankaHand,
    HandGoal,
    HandSpec,
)
from physai_ros.sim.mujoco_sim import MujocoSim

SPEC = HandSpec(
    max_width=0.08, max_speed=0.1, min_force=30.0, continuous_force=70.0, max_force=140.0
)
CUBE = 0.03  # [m] the scene's cube


def hand() -> FrankaHand:
    return FrankaHand(SPEC, 0.5)


# --- what the commands mean ----------------------------------------------------------------
def test_widths_are_between_the_fingers_and_speeds_of_the_width():
    goal = hand().move(0.06, 0.08)
    assert (goal.kind, goal.position, goal.max_speed, goal.effort) == ("move", 0.03, 0.04, 0.0)
    home = hand().homing(0.1)
    assert (home.kind, home.position, home.width) == ("homing", 0.04, 0.08)


def test_grasp_closes_fully_with_the_force_per_finger_as_effort():
    goal = hand().grasp(0.03, 0.05, 40.0, 0.005, 0.004)
    assert goal.position == 0.0 and goal.max_speed == 0.025
    assert goal.effort == pytest.approx(80.0)  # each finger gets half the tendon's effort
    assert (goal.width, goal.inner, goal.outer, goal.warnings) == (0.03, 0.005, 0.004, ())


def test_forces_below_what_the_real_hand_applies_are_raised_to_it_and_too_much_fails():
    weak = hand().grasp(0.03, 0.05, 5.0, 0.005, 0.005)
    assert weak.effort == pytest.approx(60.0) and "libfranka issue #111" in weak.warnings[0]
    strong = hand().grasp(0.03, 0.05, 100.0, 0.005, 0.005)
    assert strong.effort == pytest.approx(200.0) and "70 N continuous" in strong.warnings[0]
    with pytest.raises(CommandFailed, match=r"force 200 N is above the hand's 140 N"):
        hand().grasp(0.03, 0.05, 200.0, 0.005, 0.005)


def test_too_fast_moves_at_the_hand_s_top_speed():
    goal = hand().move(0.05, 0.3)
    assert goal.max_speed == pytest.approx(0.05) and "0.1 m/s" in goal.warnings[0]


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda h: h.move(0.09, 0.1), "width 0.09 m is outside"),
        (lambda h: h.move(-0.01, 0.1), "outside the hand's range"),
        (lambda h: h.move(math.nan, 0.1), "width nan m"),
        (lambda h: h.move(0.05, 0.0), "speed 0.0 m/s must be > 0"),
        (lambda h: h.grasp(0.03, 0.1, -1.0, 0.005, 0.005), "force -1.0 N"),
        (lambda h: h.grasp(0.03, 0.1, math.inf, 0.005, 0.005), "force inf N"),
        (lambda h: h.grasp(0.03, 0.1, 40.0, -0.001, 0.005), "epsilon.inner"),
        (lambda h: h.gripper_command(0.05, 0.0, 0.08, 0.1, 0.005, 0.005), "width 0.1 m"),
    ],
)
def test_commands_the_hand_cannot_do_fail_as_libfranka_says(call, says):
    with pytest.raises(CommandFailed) as info:
        call(hand())
    assert str(info.value).startswith(COMMAND_FAILED) and says in str(info.value)


def test_gripper_command_position_is_per_finger_opening_moves_closing_grasps():
    h = hand()
    opening = h.gripper_command(0.035, 0.0, 0.03, 0.1, 0.005, 0.005)
    assert opening.kind == "move" and opening.width == pytest.approx(0.07)
    closing = h.gripper_command(0.01, 50.0, 0.08, 0.1, 0.005, 0.005)
    assert closing.kind == "grasp" and closing.width == pytest.approx(0.02)
    assert closing.effort == pytest.approx(100.0)
    assert h.gripper_command(0.04, 0.0, 0.08 - 5e-5, 0.1, 0.005, 0.005) is None  # already there


def end(position: float, *, stalled=False, reached=False, status="succeeded", message="x"):
    return GripperEnd("g", status, position, 80.0, stalled, reached, message)


def test_grasp_succeeds_inside_libfranka_s_window():
    goal = hand().grasp(0.03, 0.05, 40.0, 0.005, 0.004)
    assert FrankaHand.judge(goal, end(0.0126, stalled=True)) == (True, "")
    ok, error = FrankaHand.judge(goal, end(0.0175, stalled=True))  # 35 mm > 30 + 4
    assert not ok and "outside (0.0250, 0.0340) m" in error
    assert not FrankaHand.judge(goal, end(0.0124, stalled=True))[0]  # 24.8 mm < 30 - 5
    ok, error = FrankaHand.judge(goal, end(0.001, reached=True))  # closed on nothing
    assert not ok and "0.0020 m" in error


def test_move_fails_when_blocked_and_anything_interrupted_is_aborted():
    goal = hand().move(0.06, 0.1)
    assert FrankaHand.judge(goal, end(0.03, reached=True)) == (True, "")
    ok, error = FrankaHand.judge(goal, end(0.02, stalled=True))
    assert not ok and error.startswith(COMMAND_FAILED) and "0.0200 m short of 0.0600 m" in error
    ok, error = FrankaHand.judge(goal, end(0.02, status="canceled", message="preempted"))
    assert not ok and error == "libfranka gripper: Command aborted! (preempted)"
    ok, error = FrankaHand.judge(goal, end(0.02, status="aborted", message="simulation reset"))
    assert not ok and "simulation reset" in error


# --- what the simulated hand does ----------------------------------------------------------
@pytest.fixture(scope="module")
def at_the_cube() -> MujocoSim:
    """The Panda with its open fingers around the cube."""
    sim = MujocoSim("panda")
    pre, down = panda_grasp_configurations(sim)
    follow(sim, [TrajectoryPoint(1.0, pre), TrajectoryPoint(2.0, down)])
    sim.advance(2.5)
    return sim


def run(sim: MujocoSim, goal: HandGoal, timeout: float = 3.0) -> tuple[bool, str]:
    """One hand command through the sim's gripper controller, judged when it ends."""
    sim.gripper.check(goal.position, goal.effort, goal.max_speed)
    sim.ends += sim.gripper.accept("hand", goal.position, goal.effort, sim.time, goal.max_speed)
    deadline = sim.time + timeout
    while sim.time < deadline:
        sim.advance(0.01)
        ended = [e for e in sim.ends if e.goal_id == "hand"]
        if ended:
            sim.ends.clear()
            return FrankaHand.judge(goal, ended[0])
    raise AssertionError(f"{goal.kind} did not end within {timeout} s")


def sim_hand(sim: MujocoSim) -> FrankaHand:
    spec = HandSpec.from_config(load_sim_config()["robots"]["panda"]["franka_hand"], 0.08)
    return FrankaHand(spec, sim.gripper_force_per_effort)


def finger_forces(sim: MujocoSim) -> list[float]:
    return [float(np.linalg.norm(w.force)) for w in sim.jaw_wrenches().values()]


def test_simulated_grasp_squeezes_the_cube_with_the_commanded_force(at_the_cube):
    sim = at_the_cube
    h = sim_hand(sim)
    assert run(sim, h.grasp(CUBE, 0.05, 40.0, 0.005, 0.005)) == (True, "")
    assert finger_forces(sim) == pytest.approx([40.0, 40.0], rel=0.02)
    width = 2.0 * sim.gripper_status().position
    assert CUBE - 0.005 < width < CUBE  # soft contacts: pressed in about a millimetre per side
    # a weaker request squeezes with what the real hand applies at least
    assert run(sim, h.move(0.06, 0.1)) == (True, "")
    assert finger_forces(sim) == [0.0, 0.0]
    assert run(sim, h.grasp(CUBE, 0.1, 10.0, 0.005, 0.005))[0]
    assert finger_forces(sim) == pytest.approx([30.0, 30.0], rel=0.02)


def test_simulated_grasp_of_the_wrong_width_fails_and_a_blocked_move_fails(at_the_cube):
    sim = at_the_cube
    h = sim_hand(sim)
    assert run(sim, h.homing(0.1)) == (True, "")
    assert 2.0 * sim.gripper_status().position == pytest.approx(0.08, abs=0.004)
    ok, error = run(sim, h.grasp(0.05, 0.1, 40.0, 0.005, 0.005))
    assert not ok and "outside (0.0450, 0.0550) m" in error
    ok, error = run(sim, h.move(0.01, 0.1))  # the cube is in the way
    assert not ok and "blocked at a width of 0.02" in error
    assert run(sim, h.homing(0.1)) == (True, "")
