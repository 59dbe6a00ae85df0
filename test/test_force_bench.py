"""The force-close bench's pure parts (``physai_ros.experiments.trials.force_runs``, used by
``physai bench force-close``): its positions, its Wilson intervals, its pass rule, its table and
its command line. The sweep itself is not run in CI."""

from __future__ import annotations

import json
import math

import pytest

from physai_ros.cli import main
from physai_ros.experiments.trials.force_runs import (
    BAND,
    HALF_SQUARE,
    Run,
    load_runs,
    positions,
    table,
    wilson,
)


def test_positions_are_deterministic_distinct_reachable_and_inside_the_square():
    centre = (0.22, 0.08)
    everywhere = positions(10, centre, lambda x, y: True)
    assert everywhere == positions(10, centre, lambda x, y: True)
    assert positions(3, centre, lambda x, y: True) == everywhere[:3]
    assert len(set(everywhere)) == 10
    for x, y in everywhere:
        assert abs(x - centre[0]) <= HALF_SQUARE + 1e-9 and abs(y - centre[1]) <= HALF_SQUARE + 1e-9
    # spread: both halves of the square in x and in y among the first ten
    assert {x > centre[0] for x, _ in everywhere} == {True, False}
    assert {y > centre[1] for _, y in everywhere} == {True, False}
    near = positions(10, centre, lambda x, y: math.hypot(x, y) < 0.238)  # skips the far corner
    assert all(math.hypot(x, y) < 0.238 for x, y in near) and len(set(near)) == 10
    assert set(near) - set(everywhere) and set(near) & set(everywhere)
    with pytest.raises(ValueError, match="at least one"):
        positions(0, centre, lambda x, y: True)
    with pytest.raises(ValueError, match="reachable"):
        positions(2, centre, lambda x, y: False)


def test_wilson_interval_matches_the_closed_form():
    """Wilson 95 %: (p + z²/2n ± z √(p(1−p)/n + z²/4n²)) / (1 + z²/n), z = 1.95996."""
    z = 1.959963984540054
    for k, n in ((9, 10), (10, 10), (0, 10), (3, 7)):
        p = k / n
        mid, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        low, high = wilson(k, n)
        assert low == pytest.approx((mid - half) / (1 + z * z / n), abs=1e-9)
        assert high == pytest.approx((mid + half) / (1 + z * z / n), abs=1e-9)
    assert all(math.isnan(v) for v in wilson(0, 0))


def test_a_run_passes_when_held_within_the_band_and_under_the_strain_limit():
    target = 2.414
    ok = Run("force", 0.22, 0.08, "held", target=target, squeeze=target * (1 - BAND + 1e-6),
             strain_max=0.13)  # fmt: skip
    assert ok.passed(0.25) and not ok.passed(0.13)  # the limit is strict
    assert not Run("force", 0, 0, "held", target=target, squeeze=target * (1 + BAND + 1e-3),
                   strain_max=0.1).passed(0.25)  # fmt: skip
    assert not Run("force", 0, 0, "dropped", target=target, squeeze=target, strain_max=0.1).passed(
        0.25
    )
    assert not Run("cap", 0, 0, "held", squeeze=40.0, strain_max=0.1).within  # no target


def test_the_table_gives_each_modes_rates_with_intervals_and_every_run(tmp_path):
    runs = [
        Run("force", 0.22, 0.08, "held", target=2.4, squeeze=2.3, peak=3.0, strain_max=0.13),
        Run(
            "force",
            0.21,
            0.09,
            "aborted",
            target=2.4,
            squeeze=0.0,
            strain_max=0.0,
            reason="the force never settled",
        ),
        Run("cap", 0.22, 0.08, "held", squeeze=39.7, peak=81.0, strain_max=0.85, lift_cm=7.4),
        Run("cap", 0.21, 0.09, "dropped", squeeze=1.0, peak=80.0, strain_max=0.95, lift_cm=0.1),
    ]
    text = table(runs, 0.25)
    force_row = next(line for line in text.splitlines() if line.startswith("| force | 2 |"))
    assert "1/2 [0.09, 0.91]" in force_row  # pass, held and within: one of two
    # numbers of the runs that closed: the aborted one's zeros are not among them
    assert "2.30 (2.30–2.30)" in force_row and "0.130 (0.130–0.130)" in force_row, force_row
    cap_row = next(line for line in text.splitlines() if line.startswith("| cap | 2 |"))
    assert "1/2 [0.09, 0.91]" in cap_row and "20.35 (1.00–39.70)" in cap_row, cap_row
    assert "0.900 (0.850–0.950)" in cap_row and "3.75 (0.10–7.40)" in cap_row, cap_row
    assert "the force never settled" in text and text.count("\n| ") == 7
    saved = tmp_path / "runs.json"
    saved.write_text(json.dumps([dict(vars(r), error=r.error) for r in runs]))
    assert table(load_runs(saved), 0.25) == text  # --table FILE prints the same table


@pytest.mark.parametrize(
    "argv", [["--runs", "0"], ["--strain-limit", "1.5"], ["--gain", "0"], ["--young", "0.5"]]
)
def test_bad_arguments_are_refused(argv, capsys):
    """Refused before anything starts (the arguments are checked first)."""
    assert main(["bench", "force-close", *argv]) == 2
    assert "must be" in capsys.readouterr().err
