"""Grasp laws: friction cone, squeeze from a torque cap, outcome.

Referees: the closed forms and the lesson's printed values where stated.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from physai_ros.core.pick.grip import (
    G,
    cone_ratio,
    cone_use,
    max_mass,
    pick_outcome,
    squeeze_from_cap,
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


def test_grasp_laws_refuse_bad_input():
    with pytest.raises(InvalidInput):
        cone_ratio(0.5, [1.0], 0.0)
