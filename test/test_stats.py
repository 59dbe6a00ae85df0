"""The Wilson interval of a success rate.

Referees: SciPy's binomtest (agreement 1e-12: the same routine), the lesson's closed form with
z = 1.96 (agreement 1e-4: SciPy uses z = 1.95996…), and the lesson's printed values.
"""

from __future__ import annotations

import math

import pytest
from scipy.stats import binomtest

from physai_ros.core.stats import wilson
from physai_ros.errors import InvalidInput


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
