"""Statistics of trial counts: the one Wilson interval the lessons, the trials and the benches
report success rates with."""

from __future__ import annotations

from typing import NamedTuple

from physai_ros.errors import InvalidInput


class Interval(NamedTuple):
    """A confidence interval for a success rate, both ends in [0, 1]."""

    low: float
    high: float


def wilson(k: int, n: int, confidence: float = 0.95) -> Interval:
    """Wilson score interval for ``k`` successes in ``n`` trials (SciPy's ``binomtest``).

    Why Wilson: with 10 trials and 0 or 10 successes the normal approximation collapses to a
    zero-width interval; Wilson stays honest. Note SciPy's default method is "exact"
    (Clopper–Pearson, wider), so the method is named explicitly.
    """
    # Imported here: scipy.stats takes about a second to import, and a module that imports
    # this one for something else should not pay for it.
    from scipy.stats import binomtest

    if int(n) != n or n < 1 or int(k) != k or not 0 <= k <= n:
        raise InvalidInput(f"need integers 0 ≤ k ≤ n, n ≥ 1; got k={k!r}, n={n!r}")
    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=confidence, method="wilson")
    return Interval(float(ci.low), float(ci.high))
