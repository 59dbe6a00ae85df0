"""Lesson 13's tables on the reference Panda (MuJoCo Menagerie), and the scaling laws behind them.

Tolerance: every lesson number within 5 % or 0.05° (angles) / one unit of the lesson's last
printed digit (other columns), whichever is larger. The lesson ran MuJoCo 3.17.0, as we do.
"""

from __future__ import annotations

import argparse
import contextlib
import io

import numpy as np
import pytest

from physai_ros.experiments import lesson13

REL = 0.05  # 5 %
ANGLE_ABS = 0.05  # [deg]

# Lesson 13, table A (T = 1 s): ref acc, ref jerk, robot acc, robot jerk, error [deg], saturated %
TABLE_A = {
    "step": (np.inf, np.inf, 739.2, 175025, 34.35, 5.5),
    "linear": (np.inf, np.inf, 220.9, 110475, 0.78, 0.0),
    "trapezoid": (2.70, np.inf, 3.0, 1003, 1.08, 0.0),
    "cubic": (3.59, np.inf, 3.6, 1337, 1.05, 0.0),
    "quintic": (3.46, 35.78, 3.7, 35, 1.32, 0.0),
    lesson13.FEEDFORWARD_ROW: (3.46, 35.78, 3.5, 48, 0.01, 0.0),
}
# Table B: (T, shape) -> ref acc, ref jerk, robot jerk, error [deg]
TABLE_B = {
    (0.25, "cubic"): (56.68, np.inf, 21311, 4.46),
    (0.25, "quintic"): (55.41, 2249.0, 2107, 5.52),
    (0.50, "cubic"): (14.28, np.inf, 5317, 2.16),
    (0.50, "quintic"): (13.86, 284.6, 234, 2.73),
    (1.00, "cubic"): (3.59, np.inf, 1337, 1.05),
    (1.00, "quintic"): (3.46, 35.8, 35, 1.32),
    (2.00, "cubic"): (0.90, np.inf, 335, 0.52),
    (2.00, "quintic"): (0.87, 4.5, 4, 0.65),
}
# Table C: deviation [cm], hand path [cm], joint path [rad]
TABLE_C = {"joint": (5.38, 51.53, 1.089), "cartesian": (0.00, 50.00, 1.256)}


def _close(measured: float, lesson: float, unit_abs: float) -> bool:
    if np.isinf(lesson):
        return bool(np.isinf(measured))
    return abs(measured - lesson) <= max(REL * abs(lesson), unit_abs)


@pytest.fixture(scope="module")
def results(shared_models, tmp_path_factory):
    """``physai lesson 13`` itself (``run()``), its tables kept as ``save_outputs`` got them and
    its printed Markdown as the user reads it."""
    out = tmp_path_factory.mktemp("lesson13")
    parser = argparse.ArgumentParser()
    lesson13.add_arguments(parser)
    args = parser.parse_args(["--model-path", str(shared_models), "--output", str(out)])
    saved = {}
    real_save = lesson13.save_outputs

    def save_outputs(out_dir, runs, sweep, cart, plots):
        saved.update(runs=runs, sweep=sweep, cart=cart, plots=plots)
        return real_save(out_dir, runs, sweep, cart, plots)

    printed = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(printed):
        patch.setattr(lesson13, "save_outputs", save_outputs)
        assert lesson13.run(args) == 0
    assert saved["plots"] is True
    return {**saved, "lines": printed.getvalue().splitlines(), "out": out}


def test_table_a(results):
    keys = ("ref_acc", "ref_jerk", "robot_acc", "robot_jerk", "error_deg", "saturated_pct")
    units = (0.01, 0.01, 0.1, 1, ANGLE_ABS, 0.1)
    for shape, lesson in TABLE_A.items():
        row = results["runs"][shape][0]
        for key, unit, value in zip(keys, units, lesson, strict=True):
            assert _close(row[key], value, unit), f"{shape} {key}: {row[key]} vs lesson {value}"


def test_table_b(results):
    keys, units = ("ref_acc", "ref_jerk", "robot_jerk", "error_deg"), (0.01, 0.1, 1, ANGLE_ABS)
    measured = {(T, name): row for T, name, row in results["sweep"]}
    for key_b, lesson in TABLE_B.items():
        for key, unit, value in zip(keys, units, lesson, strict=True):
            got = measured[key_b][key]
            assert _close(got, value, unit), f"{key_b} {key}: {got} vs lesson {value}"


def test_table_c(results):
    cart = results["cart"]
    assert cart["ik_residual_mm"] < 1e-3  # lesson: IK residual below 0.001 mm
    for kind, lesson in TABLE_C.items():
        row = cart[kind]
        got = (row["deviation_cm"], row["hand_path_cm"], row["joint_path_rad"])
        for g, value, unit in zip(got, lesson, (0.01, 0.01, 0.001), strict=True):
            assert _close(g, value, unit), f"{kind}: {got} vs lesson {lesson}"
    # physics: the straight line is the shortest hand path; the joint line the shortest in q
    assert cart["cartesian"]["hand_path_cm"] < cart["joint"]["hand_path_cm"]
    assert cart["joint"]["joint_path_rad"] < cart["cartesian"]["joint_path_rad"]


def test_scaling_laws_in_the_sweep(results):
    quintic = {T: row for T, name, row in results["sweep"] if name == "quintic"}
    for short, long in ((0.25, 0.5), (0.5, 1.0), (1.0, 2.0)):
        # sampled at 2 ms, so the laws hold to the sampling error (largest at T = 0.25 s)
        assert quintic[short]["ref_acc"] / quintic[long]["ref_acc"] == pytest.approx(4.0, rel=0.02)
        assert quintic[short]["ref_jerk"] / quintic[long]["ref_jerk"] == pytest.approx(
            8.0, rel=0.05
        )
    # smoothness, not duration, decides the robot's jerk: cubic ≥ 10x quintic at every T
    for T in lesson13.SWEEP_DURATIONS:
        rows = {name: row for t, name, row in results["sweep"] if t == T}
        assert rows["cubic"]["robot_jerk"] > 10 * rows["quintic"]["robot_jerk"]


def test_outputs_and_markdown(results):
    lines = "\n".join(results["lines"])
    for header in (
        "| shape | ref peak acc",
        "robot peak jerk",
        "tracking error",
        "| interpolation |",
    ):
        assert header in lines
    names = {p.name for p in results["out"].iterdir()}
    assert {"table_a.csv", "table_b.csv", "table_c.csv"} <= names
    assert sum(n.endswith(".png") for n in names) == len(TABLE_A)
    assert sum(n.startswith("run_") and n.endswith(".csv") for n in names) == len(TABLE_A)
