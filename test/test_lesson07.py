"""Lesson 07's numbers on the reference SO-101 (seed 004), and the laws behind them.

Tolerances: the seed prints metres to 4 decimals (±5e-5 m), centimetres and millimetres to
2 or 1 decimals; each check allows half the last printed digit plus 1e-9 of round-off.
The camera-frame numbers are checked as laws only (sensor agreement, T_GC fixed, equal
G/C changes): the reference model's wrist_cam mount differs from the lesson's by ~7 mm, so
the lesson's camera coordinates and pixel do not reproduce there (see test_camera.py for
the pixel computed from the lesson's camera-frame point).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pytest

from physai_ros.experiments import lesson07
from physai_ros.experiments.lesson07.frames import (
    ARM_JOINTS,
    SETUP,
    Lesson07,
    build_scene,
    scene_qpos,
)

HALF_DIGIT_M = 0.5e-4  # 4 decimals in metres
HALF_DIGIT_CM = 0.5e-4  # 2 decimals in centimetres = 0.05 mm, in metres
HALF_DIGIT_MM_1 = 0.05e-3  # 1 decimal in millimetres, in metres
HALF_DIGIT_MM_2 = 0.005e-3  # 2 decimals in millimetres, in metres
EXACT = 1e-12  # sensors vs our transforms, rigid-body invariants


@pytest.fixture(scope="module")
def lesson(shared_models: Path) -> Lesson07:
    spec = lesson07.load_spec(shared_models / "robotstudio_so101")
    return Lesson07(build_scene(spec))


@pytest.fixture(scope="module")
def qpos(lesson: Lesson07) -> np.ndarray:
    return scene_qpos(lesson.model, SETUP)


def test_cube_in_each_frame(lesson: Lesson07, qpos: np.ndarray) -> None:
    cube, sensor = lesson.cube_in(qpos), lesson.sensors(qpos)
    np.testing.assert_allclose(cube["W"], SETUP.cube_pos, atol=EXACT)
    np.testing.assert_allclose(cube["B"], [0.2200, 0.0000, 0.0150], atol=HALF_DIGIT_M)
    np.testing.assert_allclose(cube["G"], [0.0806, -0.0290, -0.0205], atol=HALF_DIGIT_M)
    np.testing.assert_allclose(cube["Bi"], [-0.0044, 0.0397, 0.2032], atol=HALF_DIGIT_M)
    for key in ("B", "G", "C", "Bi"):
        np.testing.assert_allclose(cube[key], sensor[key], atol=EXACT)
    assert cube["C"][2] < 0.0  # in front of a MuJoCo camera (looks along −z)


def test_walk_reproduces_mujoco(lesson: Lesson07, qpos: np.ndarray) -> None:
    assert max(lesson.walk_errors(qpos).values()) < EXACT


def test_pixel_conventions_agree_and_land_in_the_image(lesson: Lesson07, qpos: np.ndarray) -> None:
    mj, optical = lesson.pixel(qpos)
    np.testing.assert_allclose(mj, optical, atol=1e-9)
    width, height = SETUP.image_size
    assert 0.0 < mj[0] < width and 0.0 < mj[1] < height


def test_pan_sweep(lesson: Lesson07) -> None:
    # The lesson's table (cm): cube in G and gripper site in W at shoulder_pan −40°, 0°, 40°.
    expected_g = {
        -40.0: (5.30, 2.62, 11.15),
        0.0: (8.16, -1.46, -0.19),
        40.0: (5.30, -10.68, -7.96),
    }
    expected_w = {-40.0: (18.88, 9.21, 8.26), 0.0: (25.47, 2.79, 8.26), 40.0: (26.40, -6.36, 8.26)}
    for pan in SETUP.pan_angles_deg:
        q = scene_qpos(lesson.model, SETUP, pan_deg=pan)
        cube, frames = lesson.cube_in(q), lesson.frames(q)
        np.testing.assert_allclose(cube["B"], [0.22, 0.0, 0.015], atol=HALF_DIGIT_M)
        np.testing.assert_allclose(cube["G"], np.array(expected_g[pan]) / 100, atol=HALF_DIGIT_CM)
        np.testing.assert_allclose(
            frames["G"][:3, 3], np.array(expected_w[pan]) / 100, atol=HALF_DIGIT_CM
        )


def test_joint_sweep_changes_only_frames_after_the_joint(
    lesson: Lesson07, qpos: np.ndarray
) -> None:
    expected_mm = {"shoulder_pan": 93.77, "shoulder_lift": 93.44, "elbow_flex": 150.07,
                   "wrist_flex": 124.53, "wrist_roll": 15.74}  # fmt: skip
    for joint in ARM_JOINTS:
        change = lesson.joint_sweep(qpos, joint)
        assert change["W"] < EXACT and change["B"] < EXACT
        assert change["G"] == pytest.approx(change["C"], abs=1e-9)  # T_GC is rigid
        assert change["T_GC"] < EXACT
        assert change["G"] == pytest.approx(expected_mm[joint] / 1000, abs=HALF_DIGIT_MM_2)


def test_five_ways(lesson: Lesson07, qpos: np.ndarray) -> None:
    expected_mm = (0.0, 101.0, 103.2, 274.3, 424.4)
    errors = list(lesson.five_ways(qpos).values())
    assert errors[0] < EXACT
    np.testing.assert_allclose(errors, np.array(expected_mm) / 1000, atol=HALF_DIGIT_MM_1)


def test_traps(lesson: Lesson07, qpos: np.ndarray) -> None:
    traps = list(lesson.traps(qpos).values())
    assert traps[0] == pytest.approx(0.2955, abs=HALF_DIGIT_MM_1)  # body = inertial frame
    assert traps[1] > 1e-3 and traps[2] > 1e-3  # stale frames are wrong, silently


def test_run_writes_tables(shared_models: Path, tmp_path: Path, capsys) -> None:
    parser = argparse.ArgumentParser()
    lesson07.add_arguments(parser)
    args = parser.parse_args(
        ["--model-path", str(shared_models / "robotstudio_so101"), "--output", str(tmp_path)]
    )
    assert lesson07.run(args) == 0
    out = capsys.readouterr().out
    assert "| Frame | cube (m) | max abs diff vs sensor |" in out
    assert "424.4 mm" in out
    assert len(list(tmp_path.glob("*.csv"))) == 7
    assert (tmp_path / "joint_sweep.png").stat().st_size > 0


def test_embedded_model_places_the_base() -> None:
    # Whatever the embedded SO-101's links, the placement law holds: base (0.22, 0, 0.015).
    lesson = Lesson07(build_scene(lesson07.load_spec(None)))
    cube = lesson.cube_in(scene_qpos(lesson.model, SETUP))
    np.testing.assert_allclose(cube["B"], [0.22, 0.0, 0.015], atol=HALF_DIGIT_M)
