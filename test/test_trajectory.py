"""Time scalings: derived polynomials, exact peaks, the chain rule, SciPy equivalents, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from physai_ros.core.motion.time_scaling import (
    SHAPES,
    JointMove,
    get_shape,
    joint_reference,
    minjerk,
    poly_from_boundary,
    spline_reference,
    trapezoid_scaling,
)
from physai_ros.errors import InvalidInput

U = np.linspace(0.0, 1.0, 100_001)  # dense normalised time for numerical peaks
DENSE_RTOL = 1e-6  # dense sampling misses an interior peak by O(du²) ≈ 1e-10 relative


def test_polynomials_come_from_boundary_conditions():
    rest = [(0.0, 0, 0.0), (1.0, 0, 1.0), (0.0, 1, 0.0), (1.0, 1, 0.0)]
    acc = [(0.0, 2, 0.0), (1.0, 2, 0.0)]
    jerk = [(0.0, 3, 0.0), (1.0, 3, 0.0)]
    np.testing.assert_allclose(poly_from_boundary(rest, 3), [0, 0, 3, -2], atol=1e-12)
    np.testing.assert_allclose(poly_from_boundary(rest + acc, 5), [0, 0, 0, 10, -15, 6], atol=1e-12)
    np.testing.assert_allclose(
        poly_from_boundary(rest + acc + jerk, 7), [0, 0, 0, 0, 35, -84, 70, -20], atol=1e-10
    )
    with pytest.raises(InvalidInput, match="needs 4 conditions"):
        poly_from_boundary(rest[:3], 3)


@given(st.floats(min_value=-2.0, max_value=3.0, allow_nan=False))
def test_minjerk_is_the_quintic_time_scaling(u):
    """The per-step scalar blend and the derived quintic are one function (the lesson's closed
    form too), clipped the same way outside [0, 1]."""
    assert minjerk(u) == pytest.approx(float(SHAPES["quintic"](u)), abs=1e-13)
    v = min(1.0, max(0.0, u))
    assert minjerk(u) == v**3 * (10.0 - 15.0 * v + 6.0 * v * v)  # bit for bit: sweeps unchanged


def test_minjerk_boundary_conditions_and_peak_speed():
    u = np.linspace(0.0, 1.0, 20001)
    s = np.array([minjerk(x) for x in u])
    h = u[1] - u[0]
    v = np.gradient(s, h)
    a = np.gradient(v, h)
    assert s[0] == 0.0 and s[-1] == 1.0 and minjerk(0.5) == pytest.approx(0.5)
    assert v.max() == pytest.approx(15 / 8, rel=1e-3)  # peak speed 1.875 at u = 0.5
    assert abs(v[0]) < 1e-3 and abs(v[-1]) < 1e-3
    assert abs(a[1]) < 1e-2 and abs(a[-2]) < 1e-2
    assert minjerk(-1.0) == 0.0 and minjerk(2.0) == 1.0  # clipped outside [0, 1]


@pytest.mark.parametrize("name", ["linear", "trapezoid", "cubic", "quintic", "septic"])
def test_shapes_go_from_rest_to_goal_and_peaks_match_dense_sampling(name):
    s = get_shape(name)
    assert s(0.0) == pytest.approx(0.0, abs=1e-12) and s(1.0) == pytest.approx(1.0, abs=1e-12)
    for order in (1, 2, 3):
        dense = np.abs(s(U, order)).max()
        assert s.peak(order) == pytest.approx(dense, rel=DENSE_RTOL, abs=1e-9)
    # the derivative integrates back to s (continuity of s for piecewise shapes)
    integral = np.concatenate([[0.0], np.cumsum(0.5 * (s(U[1:], 1) + s(U[:-1], 1)) * np.diff(U))])
    np.testing.assert_allclose(integral, s(U), atol=1e-8)


def test_closed_form_peaks_of_the_lesson():
    cubic, quintic, trap = SHAPES["cubic"], SHAPES["quintic"], SHAPES["trapezoid"]
    assert (cubic.peak(1), cubic.peak(2), cubic.jump(2)) == pytest.approx((1.5, 6.0, 6.0))
    assert quintic.peak(1) == pytest.approx(1.875)
    assert quintic.peak(2) == pytest.approx(10 * np.sqrt(3) / 3)
    u_peak = (3 - np.sqrt(3)) / 6
    assert abs(quintic(u_peak, 2)) == pytest.approx(quintic.peak(2))
    assert quintic.peak(3) == pytest.approx(60.0)
    assert quintic.jump(2) == 0.0 and quintic.jump(1) == 0.0  # minimum jerk: smooth acceleration
    assert (trap.peak(1), trap.peak(2), trap.jump(2)) == pytest.approx((1.5, 4.5, 4.5))
    assert SHAPES["linear"].jump(1) == 1.0 and SHAPES["step"].jump(0) == 1.0
    assert SHAPES["septic"].jump(3) == 0.0


def test_trapezoid_accepts_a_triangle_and_rejects_bad_ta():
    tri = trapezoid_scaling(0.5)
    assert tri(1.0) == pytest.approx(1.0) and tri.peak(2) == pytest.approx(4.0)
    with pytest.raises(InvalidInput, match="ta"):
        trapezoid_scaling(0.7)


@pytest.mark.parametrize("duration", [0.25, 0.5, 1.0, 2.0])
def test_chain_rule_scales_derivatives_by_powers_of_T(duration):
    move = JointMove(("a", "b"), [0.0, 1.0], [0.6, 0.5])
    ref, ref1 = move.shaped("quintic", duration), move.shaped("quintic", 1.0)
    t = np.linspace(0.0, duration, 2001)
    for order in (1, 2, 3):
        np.testing.assert_allclose(
            ref(t, order), ref1(t / duration, order) / duration**order, rtol=1e-9, atol=1e-9
        )
    # each derivative is the time derivative of the one below (central differences)
    h = t[1] - t[0]
    for order in (1, 2, 3):
        fd = np.gradient(ref(t, order - 1), h, axis=0)
        scale = np.abs(ref(t, order)).max()
        np.testing.assert_allclose(fd[2:-2], ref(t, order)[2:-2], atol=1e-4 * scale)


def test_joint_reference_is_at_rest_outside_the_open_interval():
    q0, dq = np.zeros(2), np.array([0.6, -0.4])
    for t in (-0.1, 0.0, 1.0, 1.5):
        _, qd, qdd = joint_reference("cubic", t, 1.0, q0, dq)
        assert not qd.any() and not qdd.any()
    q, qd, qdd = joint_reference("quintic", 0.5, 1.0, q0, dq)
    np.testing.assert_allclose(q, 0.5 * dq)
    np.testing.assert_allclose(qd, 1.875 * dq)
    # the lesson's "2 ms" cubic acceleration: first tick after t = 0 is 6 − 12·0.002
    assert joint_reference("cubic", 0.002, 1.0, q0, dq)[2][0] == pytest.approx(0.6 * (6 - 0.024))


@pytest.mark.parametrize(("kind", "shape"), [("cubic", "cubic"), ("quintic", "quintic")])
def test_scipy_splines_through_two_points_are_the_time_scalings(kind, shape):
    T = 1.0
    ref = spline_reference(("j",), [0.0, T], [[0.0], [0.6]], kind=kind)
    move = JointMove(("j",), [0.0], [0.6]).shaped(shape, T)
    t = np.linspace(0.0, T, 1001)
    for order in (0, 1, 2):
        np.testing.assert_allclose(ref(t, order), move(t, order), atol=1e-12)


def test_multi_waypoint_spline_passes_every_waypoint_and_ends_at_rest():
    times = [0.0, 0.7, 1.5, 2.0]
    pos = [[0.0, 1.0], [0.3, 0.8], [0.1, 0.2], [0.5, 0.0]]
    ref = spline_reference(("a", "b"), times, pos, kind="quintic")
    np.testing.assert_allclose(ref(np.array(times)), pos, atol=1e-12)
    for order in (1, 2):
        np.testing.assert_allclose(ref(np.array([0.0, 2.0]), order), 0.0, atol=1e-10)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"joint_names": ()}, "empty goal"),
        ({"joint_names": ("a", "a")}, "duplicated joint names"),
        ({"goal": [np.nan, 0.0]}, "joint 'a'"),
        ({"start": [0.0, np.inf]}, "joint 'b'"),
        ({"goal": [0.0]}, "one value per joint"),
    ],
)
def test_bad_moves_are_rejected_with_the_joint_named(kwargs, match):
    args = {"joint_names": ("a", "b"), "start": [0.0, 0.0], "goal": [1.0, 1.0]} | kwargs
    with pytest.raises(InvalidInput, match=match):
        JointMove(**args)


def test_bad_waypoints_and_names_are_rejected():
    with pytest.raises(InvalidInput, match="strictly increase"):
        spline_reference(("a",), [0.0, 1.0, 1.0], [[0], [1], [2]])
    with pytest.raises(InvalidInput, match="joint 'a'"):
        spline_reference(("a",), [0.0, 1.0], [[0], [np.nan]])
    with pytest.raises(InvalidInput, match="valid:"):
        get_shape("sinusoid")
    with pytest.raises(InvalidInput, match="duration"):
        JointMove(("a",), [0.0], [1.0]).shaped("quintic", -1.0)
