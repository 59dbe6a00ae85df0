"""Grasp laws: friction cone, squeeze from a torque cap, outcome, Wilson interval.

Referees: SciPy's binomtest for Wilson (agreement 1e-12: the same routine), the lesson's
closed form with z = 1.96 (agreement 1e-4: SciPy uses z = 1.95996…), and the lesson's printed
values where stated.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binomtest

from physai_ros.core.pick.grip import (
    G,
    cone_ratio,
    cone_use,
    max_mass,
    pick_outcome,
    squeeze_from_cap,
    wilson,
)
from physai_ros.errors import InvalidInput


def test_cone_ratio_is_one_exactly_at_the_friction_limit():
    # μ (N1 + N2) = m g: friction can just carry the weight
    assert cone_ratio(0.5, [0.2 * G, 0.2 * G], 0.2) == pytest.approx(1.0)
    # lifting with upward acceleration a needs m (g + a): the same grip is below 1
    assert cone_ratio(0.5, [0.2 * G, 0.2 * G], 0.2, accel=1.0) < 1.0


def test_lesson_ratios_and_max_mass_from_printed_squeeze():
    # lesson 16 tables: squeeze 12.74 N at μ 0.05, 30 g -> 2.16; 16.25 N at μ 0.3, 0.4 kg -> 1.24
    assert cone_ratio(0.05, [12.74], 0.03) == pytest.approx(2.16, abs=0.01)
    assert cone_ratio(0.3, [16.25], 0.4) == pytest.approx(1.24, abs=0.01)
    assert max_mass(0.05, [12.74]) == pytest.approx(0.065, abs=5e-4)
    assert max_mass(0.3, [16.25]) == pytest.approx(0.497, abs=5e-4)


@given(
    mu=st.floats(0.01, 2.0),
    n1=st.floats(0.1, 100.0),
    n2=st.floats(0.1, 100.0),
    mass=st.floats(0.01, 5.0),
)
def test_max_mass_is_where_the_cone_ratio_reaches_one(mu, n1, n2, mass):
    limit = max_mass(mu, [n1, n2])
    assert cone_ratio(mu, [n1, n2], limit) == pytest.approx(1.0)
    assert (cone_ratio(mu, [n1, n2], mass) >= 1.0) == (mass <= limit * (1 + 1e-12))


def test_cone_use_of_contact_frame_forces():
    assert cone_use([10.0, 3.0, 4.0], 1.0) == pytest.approx(0.5)  # |f_t| = 5
    assert cone_use([10.0, 0.3, 0.4], 0.05) == pytest.approx(1.0)  # on the cone: sliding
    with pytest.raises(InvalidInput, match="normal > 0"):
        cone_use([-1.0, 0.0, 0.0], 1.0)


def test_squeeze_from_cap_doubles_the_moving_jaw_force():
    # lesson step 3: τ 0.5 N·m, r 7.42 cm -> 13.47 N
    assert squeeze_from_cap(0.5, 0.0742) == pytest.approx(13.47, abs=0.01)
    assert squeeze_from_cap(1.0, 0.05) == pytest.approx(2 * 1.0 / 0.05)


def test_pick_outcome_rules():
    assert pick_outcome(0.0737, True, True) == "held"
    assert pick_outcome(0.0737, False, True) == "dropped"  # lifted, then out of one jaw
    assert pick_outcome(0.0, True, True) == "dropped"
    assert pick_outcome(0.0, False, False) == "not closed"
    assert pick_outcome(0.039, True, False) == "not closed"


def _wilson_closed_form(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    p = k / n
    den = 1 + z * z / n
    c = (p + z * z / (2 * n)) / den
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, c - h), min(1.0, c + h)


@pytest.mark.parametrize("k", range(11))
def test_wilson_matches_scipy_and_the_lesson_formula(k):
    low, high = wilson(k, 10)
    ref = binomtest(k, 10).proportion_ci(method="wilson")
    assert (low, high) == pytest.approx((ref.low, ref.high), abs=1e-12)
    assert (low, high) == pytest.approx(_wilson_closed_form(k, 10), abs=1e-4)
    assert low <= k / 10 <= high


def test_wilson_lesson_values_and_bad_input():
    assert tuple(round(x, 2) for x in wilson(10, 10)) == (0.72, 1.00)
    assert tuple(round(x, 2) for x in wilson(2, 10)) == (0.06, 0.51)
    assert tuple(round(x, 2) for x in wilson(0, 10)) == (0.00, 0.28)
    # the default "exact" (Clopper–Pearson) interval is wider: why the method is named
    assert binomtest(10, 10).proportion_ci().low < wilson(10, 10).low
    with pytest.raises(InvalidInput, match="0 ≤ k ≤ n"):
        wilson(11, 10)
    with pytest.raises(InvalidInput):
        cone_ratio(0.5, [1.0], 0.0)
