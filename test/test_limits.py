"""Limits as data, the shortest duration per shape, trajectory checks and the rate limiter."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from support.paths import REPO_ROOT

from physai_ros.core.motion.limits import (
    check_trajectory,
    followed_limit_use,
    load_gripper_limits,
    load_limits,
    plan_move,
    sampled_peaks,
    shortest_duration,
)
from physai_ros.core.motion.rate_limit import limit_rate, limit_step
from physai_ros.core.motion.time_scaling import JointMove, spline_reference
from physai_ros.errors import InvalidInput, LimitViolation

LESSON_DQ = np.array([0.6, 0.4, -0.4, 0.5, 0.5, -0.4, 0.6])  # [rad] lesson 13's Panda move
HOME = np.array([0.0, 0.0, 0.0, -1.57079, 0.0, 1.57079, -0.7853])  # Panda `home` keyframe
MINIMAL_WITHIN = 1e-3  # [s] the chosen duration minus this must violate a limit
MIN_PERIODS = 5  # a move shorter than this many control periods is sampled as a near-step;
# it is still checked to be safe, but minimality is only asserted above it.

# Property test budget: moves per example x examples per (robot, shape). Smooth shapes need
# ~1 ms per move; a linear move's velocity jump forces T of minutes, so it gets fewer moves.
BATCH = 25
EXAMPLES = {"quintic": 50, "septic": 50, "cubic": 50, "trapezoid": 50, "linear": 2}
TOTAL_MOVES = 2 * BATCH * sum(EXAMPLES.values())  # both robots
STEP_MOVES = 2 * 200  # step: no duration helps; checked separately below


def test_property_budget_is_at_least_ten_thousand_moves():
    assert TOTAL_MOVES + STEP_MOVES >= 10_000


def test_limit_sets_load_by_name():
    panda = load_limits("panda")
    assert panda.set_name == "libfranka" and panda.control_period == pytest.approx(1e-3)
    np.testing.assert_allclose(panda.acceleration, 10.0)
    np.testing.assert_allclose(panda.jerk, 5000.0)
    np.testing.assert_allclose(panda.torque_rate, 1000.0)
    np.testing.assert_allclose(panda.velocity, [2.175] * 4 + [2.61] * 3)
    np.testing.assert_allclose(panda.torque, [87] * 4 + [12] * 3)
    legacy = load_limits("panda", "libfranka_legacy")
    np.testing.assert_allclose(legacy.acceleration, [15, 7.5, 10, 12.5, 15, 20, 20])
    np.testing.assert_allclose(legacy.jerk, [7500, 3750, 5000, 6250, 7500, 10000, 10000])
    so101 = load_limits("so101")
    assert len(so101.joint_names) == 6 and np.isinf(so101.jerk).all()
    with pytest.raises(InvalidInput, match=r"valid: \['libfranka', 'libfranka_legacy'\]"):
        load_limits("panda", "fast")
    with pytest.raises(InvalidInput, match=r"valid robots"):
        load_limits("ur5")
    with pytest.raises(InvalidInput, match=r"valid:"):
        panda.select(["joint1", "joint9"])


def test_gripper_limits_load_apart_from_the_arm(tmp_path):
    """The Panda's fingers have their own block (no arm trajectory moves them); the SO-101's
    jaw is one of its `joints`. A joint in both places would have two limits: rejected."""
    assert load_gripper_limits("panda") == {
        "finger_joint1": (0.2, 2.0),
        "finger_joint2": (0.2, 2.0),
    }
    assert load_gripper_limits("so101") == {}
    both = tmp_path / "limits_panda.yaml"
    text = (REPO_ROOT / "config" / "limits_panda.yaml").read_text()
    both.write_text(text.replace("joints: [finger_joint1, finger_joint2]", "joints: [joint1, x]"))
    with pytest.raises(InvalidInput, match=r"gripper joint\(s\) \['joint1'\]"):
        load_gripper_limits("panda", both)


# franka_description robots/fr3/joint_limits.yaml (0.4.0) and Franka's FR3 limits table
FR3_LOWER = [-2.7437, -1.7837, -2.9007, -3.0421, -2.8065, 0.5445, -3.0159]
FR3_UPPER = [2.7437, 1.7837, 2.9007, -0.1518, 2.8065, 4.5169, 3.0159]
FR3_VELOCITY = [2.62, 2.62, 2.62, 2.62, 5.26, 4.18, 5.26]
# the successor page "Control Interface Specification and Robot Limits" (wider ranges)
FR3_LOWER_2025 = [-2.9007, -1.8361, -2.9007, -3.0770, -2.8763, 0.4398, -3.0508]
FR3_UPPER_2025 = [2.9007, 1.8361, 2.9007, -0.1169, 2.8763, 4.6216, 3.0508]


def test_fr3_limits_are_franka_published_numbers():
    fr3 = load_limits("fr3")
    assert fr3.robot == "fr3" and fr3.set_name == "fr3"
    assert fr3.joint_names == load_limits("panda").joint_names  # the same model joints
    np.testing.assert_array_equal(fr3.position_min, FR3_LOWER)
    np.testing.assert_array_equal(fr3.position_max, FR3_UPPER)
    np.testing.assert_array_equal(fr3.velocity, FR3_VELOCITY)
    np.testing.assert_array_equal(fr3.acceleration, 10.0)
    np.testing.assert_array_equal(fr3.jerk, 5000.0)
    np.testing.assert_array_equal(fr3.torque, [87] * 4 + [12] * 3)
    np.testing.assert_array_equal(fr3.torque_rate, 1000.0)
    assert fr3.control_period == pytest.approx(1e-3)
    # the older ranges kept here lie inside the newer, wider ones
    assert np.all(fr3.position_min >= FR3_LOWER_2025) and np.all(fr3.position_max <= FR3_UPPER_2025)
    # the Panda's home pose (the sim's start) is inside the FR3's ranges
    assert np.all(fr3.position_min < HOME) and np.all(fr3.position_max > HOME)


def test_lesson_move_quintic_inside_libfranka_at_1s_but_not_at_half_a_second():
    panda = load_limits("panda")
    move = JointMove(panda.joint_names, HOME, HOME + LESSON_DQ)
    peaks = check_trajectory(move.shaped("quintic", 1.0), panda)
    assert peaks.acceleration.max() == pytest.approx(0.6 * 10 * np.sqrt(3) / 3, rel=1e-3)  # 3.46
    assert peaks.jerk.max() == pytest.approx(0.6 * 60, rel=1e-9)  # 36: exact at the start
    with pytest.raises(LimitViolation, match=r"joint 'joint1' acceleration 13.86 rad/s²"):
        check_trajectory(move.shaped("quintic", 0.5), panda)
    with pytest.raises(LimitViolation, match=r"acceleration"):
        check_trajectory(move.shaped("cubic", 0.5), panda)


def test_acceleration_and_jerk_scale_with_inverse_powers_of_T():
    panda = load_limits("panda")
    move = JointMove(panda.joint_names, HOME, HOME + LESSON_DQ)
    p1, p2 = (
        sampled_peaks(move.shaped("quintic", 1.0), 1e-3),
        sampled_peaks(move.shaped("quintic", 0.5), 1e-3),
    )
    np.testing.assert_allclose(p2.velocity / p1.velocity, 2.0, rtol=1e-5)
    np.testing.assert_allclose(p2.acceleration / p1.acceleration, 4.0, rtol=1e-4)
    np.testing.assert_allclose(p2.jerk / p1.jerk, 8.0, rtol=1e-9)


def _moves(limits, unit: np.ndarray) -> list[JointMove]:
    """Unit-cube samples (batch, 2, n) -> moves between points inside the position range."""
    span = limits.position_max - limits.position_min
    q = limits.position_min + unit * span
    return [JointMove(limits.joint_names, a, b) for a, b in q]


def _assert_shortest_and_minimal(limits, move, shape):
    T = shortest_duration(move, shape, limits)
    check_trajectory(move.shaped(shape, T), limits)  # never exceeds any limit
    if MIN_PERIODS * limits.control_period <= T - MINIMAL_WITHIN:
        with pytest.raises(LimitViolation):
            check_trajectory(move.shaped(shape, T - MINIMAL_WITHIN), limits)
    else:
        assert np.abs(move.delta).max() < 1e-3  # only tiny moves are that fast


@pytest.mark.parametrize("robot", ["panda", "so101"])
@pytest.mark.parametrize("shape", list(EXAMPLES))
def test_shortest_duration_is_safe_and_minimal(robot, shape):
    limits = load_limits(robot)
    n = len(limits.joint_names)

    @settings(
        max_examples=EXAMPLES[shape],
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(arrays(np.float64, (BATCH, 2, n), elements=st.floats(0.0, 1.0)))
    def prop(unit):
        for move in _moves(limits, unit):
            _assert_shortest_and_minimal(limits, move, shape)

    prop()


@pytest.mark.parametrize("robot", ["panda", "so101"])
@settings(max_examples=8, deadline=None, derandomize=True)
@given(unit=arrays(np.float64, (STEP_MOVES // 16, 2, 6), elements=st.floats(0.0, 1.0)))
def test_a_step_is_rejected_unless_the_move_is_tiny(robot, unit):
    limits = load_limits(robot)
    limits = limits.select(limits.joint_names[:6])
    for move in _moves(limits, unit):
        dq = np.abs(move.delta)
        # velocity Δq/dt, acceleration Δq/dt², jerk 2Δq/dt³ (third difference of a step)
        dt = limits.control_period
        fits = np.all(
            (dq / dt <= limits.velocity)
            & (dq / dt**2 <= limits.acceleration)
            & (2 * dq / dt**3 <= limits.jerk)
        )
        if fits:
            assert shortest_duration(move, "step", limits) == 0.0
        else:
            with pytest.raises(
                LimitViolation, match=r"joint '.+': a step .* limit at any duration"
            ):
                shortest_duration(move, "step", limits)


def test_bad_goals_are_rejected_naming_the_joint_and_limit():
    panda = load_limits("panda")
    move = JointMove(panda.joint_names, HOME, HOME + LESSON_DQ)
    with pytest.raises(
        LimitViolation, match=r"joint 'joint1' needs ≥ 0.5886 s for its acceleration limit 10"
    ):
        plan_move(move, "quintic", panda, duration=0.5)
    outside = HOME.copy()
    outside[3] = 0.1  # joint4's range ends at -0.0698 rad
    with pytest.raises(LimitViolation, match=r"goal of joint 'joint4' = 0.1000 rad is outside"):
        plan_move(JointMove(panda.joint_names, HOME, outside), "quintic", panda)
    with pytest.raises(InvalidInput, match=r"unknown joint"):
        plan_move(JointMove(("joint1", "elbow"), [0, 0], [1, 1]), "quintic", panda)
    assert plan_move(move, "quintic", panda, duration=1.0).duration == 1.0


def test_waypoint_trajectory_check_names_joint_and_limit():
    panda = load_limits("panda")
    names = panda.joint_names[:2]
    fast = spline_reference(names, [0.0, 0.3, 0.6], [[0, 0], [0.5, 0.1], [0.0, 0.0]])
    with pytest.raises(LimitViolation, match=r"joint 'joint1' (velocity|acceleration)"):
        check_trajectory(fast, panda)
    slow = spline_reference(names, [0.0, 3.0, 6.0], [[0, 0], [0.5, 0.1], [0.0, 0.0]])
    check_trajectory(slow, panda)
    over = spline_reference(names, [0.0, 3.0, 6.0], [[0, 0], [0.5, 1.76], [0.0, 1.76]])
    with pytest.raises(LimitViolation, match=r"joint 'joint2' position .* above its limit"):
        check_trajectory(over, panda)  # the spline overshoots 1.7628 between waypoints


def _finite_differences(q: np.ndarray, dt: float, start: np.ndarray):
    full = np.vstack([start, start, start, q])
    v = np.diff(full, axis=0) / dt
    a = np.diff(v, axis=0) / dt
    return v, a, np.diff(a, axis=0) / dt


def test_rate_limiter_clips_a_step_into_limits_and_reports_it():
    panda = load_limits("panda")
    dt = panda.control_period
    commands = np.tile(HOME + LESSON_DQ, (1500, 1))  # a step, held for 1.5 s
    out = limit_rate(commands, panda, initial=HOME)
    v, a, _ = _finite_differences(out.commands, dt, HOME)
    assert np.all(np.abs(v) <= panda.velocity * (1 + 1e-9))
    assert np.all(np.abs(a) <= panda.acceleration * (1 + 1e-9))
    assert out.report.clipped and out.report.clipped_steps["jerk"].min() > 0
    np.testing.assert_allclose(
        out.report.max_deviation, np.abs(LESSON_DQ), rtol=1e-4
    )  # 1st step moved
    assert "joint1 jerk" in str(out.report)


def test_rate_limiter_leaves_a_feasible_quintic_alone():
    panda = load_limits("panda")
    move = JointMove(panda.joint_names, HOME, HOME + LESSON_DQ)
    commands = move.shaped("quintic", 1.0)(np.arange(0, 1500) * panda.control_period)
    out = limit_rate(commands, panda, initial=HOME)
    assert not out.report.clipped
    np.testing.assert_allclose(out.commands, commands, atol=1e-9)


def test_torque_rate_limiter():
    panda = load_limits("panda")
    tau = np.zeros((10, 7))
    tau[2:] = 5.0  # a 5 N·m jump; 1000 N·m/s at 1 ms allows 1 N·m per step
    out = limit_rate(tau, panda, kind="torque")
    np.testing.assert_allclose(out.commands[2:7, 0], [1, 2, 3, 4, 5])
    assert out.report.clipped_steps["torque_rate"][0] == 4
    with pytest.raises(InvalidInput, match=r"valid"):
        limit_rate(tau, panda, kind="current")


@pytest.mark.parametrize("robot", ["panda", "so101"])
def test_ruckig_is_within_limits_and_never_slower_than_the_quintic(robot):
    from physai_ros.core.motion.ruckig_shape import ruckig_move

    limits = load_limits(robot)
    rng = np.random.default_rng(1)
    span = limits.position_max - limits.position_min
    for a, b in limits.position_min + rng.random((20, 2, len(span))) * span:
        move = JointMove(limits.joint_names, a, b)
        optimal = ruckig_move(move, limits)
        check_trajectory(optimal, limits)
        assert optimal.duration <= shortest_duration(move, "quintic", limits) + 1e-9
    lesson = JointMove(("joint1",), [0.0], [0.6])
    if robot == "panda":  # lesson: the quintic needs ≈ 1.19x the time-optimal duration
        ratio = shortest_duration(lesson, "quintic", limits) / ruckig_move(lesson, limits).duration
        assert ratio == pytest.approx(1.19, abs=0.01)


# --- limit_step: one command's velocity bound, for any step length ----------------------------
_angles = st.floats(-10.0, 10.0, allow_nan=False)
_speeds = st.one_of(st.floats(0.0, 10.0, allow_nan=False), st.just(np.inf))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(_angles, min_size=3, max_size=3), min_size=1, max_size=30),
    st.lists(st.floats(0.0, 0.2, allow_nan=False), min_size=30, max_size=30),
    st.lists(_speeds, min_size=3, max_size=3),
    st.lists(_angles, min_size=3, max_size=3),
)
def test_limit_step_never_steps_further_than_velocity_times_dt(refs, dts, velocity, start):
    """For any references and any time between sends, no command is further from the one
    before than velocity·dt (1e-12 rad of rounding), each lands exactly on its reference when
    that is within the bound, and ``clipped`` says which joints were held back."""
    v = np.array(velocity)
    last = np.array(start)
    for ref, dt in zip(refs, dts, strict=False):
        ref = np.array(ref)
        out = limit_step(last, ref, v, dt)
        bound = np.where(np.isinf(v), np.inf, np.where(np.isinf(v), 0.0, v) * dt)
        assert np.all(np.abs(out.command - last) <= bound + 1e-12)
        reachable = np.abs(ref - last) <= bound
        assert np.array_equal(out.command[reachable], ref[reachable])
        assert np.array_equal(out.clipped, ~reachable)
        assert np.all(np.abs(out.command - ref) <= np.abs(last - ref))  # never away from it
        last = out.command


def test_limit_step_refuses_what_it_cannot_bound():
    for dt in (-0.1, np.nan, np.inf):
        with pytest.raises(InvalidInput, match="dt"):
            limit_step(np.zeros(2), np.ones(2), np.ones(2), dt)
    with pytest.raises(InvalidInput, match="velocity"):
        limit_step(np.zeros(2), np.ones(2), np.array([1.0, -1.0]), 0.01)
    with pytest.raises(InvalidInput, match="finite"):
        limit_step(np.zeros(2), np.array([1.0, np.nan]), np.ones(2), 0.01)


def test_followed_limit_use_is_each_rate_over_its_limit_and_jerk_between_close_samples():
    """A quintic on the FR3's joint 4 that peaks at half its velocity limit, sampled every 20 ms
    as a controller reports it: 0.5 of the velocity limit, the exact peak acceleration's share,
    and the jerk from consecutive samples (within the exact peak); a pause between two goals
    (a gap over 50 ms) makes no jerk; too few samples or the wrong width is refused."""
    limits = load_limits("fr3")
    j, T = 3, 1.0
    dq = 0.5 * limits.velocity[j] * T / 1.875  # the quintic's peak speed is 1.875 dq / T
    t = np.arange(0.0, T + 1e-9, 0.02)
    s = t / T
    qd, qdd = np.zeros((t.size, 7)), np.zeros((t.size, 7))
    qd[:, j] = dq / T * (30 * s**2 - 60 * s**3 + 30 * s**4)
    qdd[:, j] = dq / T**2 * (60 * s - 180 * s**2 + 120 * s**3)
    use = followed_limit_use(t, qd, qdd, limits)
    assert use["velocity"] == pytest.approx(0.5, rel=1e-9)  # s = 0.5 is a sample
    peak_acc = dq / T**2 * 10 / np.sqrt(3)  # at s = 1/2 ± 1/(2√3)
    assert use["acceleration"] == pytest.approx(peak_acc / limits.acceleration[j], rel=0.01)
    peak_jerk = 60 * dq / T**3  # at both ends
    assert 0.8 * peak_jerk <= use["jerk"] * limits.jerk[j] <= peak_jerk
    paused = np.concatenate([t[:2], t[2:] + 10.0])  # 10 s between the first two samples
    qdd_jump = np.zeros_like(qdd)
    qdd_jump[2:, j] = 1.0
    assert followed_limit_use(paused, np.zeros_like(qd), qdd_jump, limits)["jerk"] == 0.0
    with pytest.raises(InvalidInput, match="at least two samples"):
        followed_limit_use(t[:1], qd[:1], qdd[:1], limits)
    with pytest.raises(InvalidInput, match="7 joints"):
        followed_limit_use(t, qd[:, :6], qdd[:, :6], limits)
