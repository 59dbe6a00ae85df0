"""Lesson 07: a 3 cm cube seen in the world, base, gripper and wrist-camera frames of an SO-101.

The SO-101 base is moved to (0.10, −0.05, 0) m and yawed 30° with MjSpec (world ≠ base); the
cube rests at world (0.2905, 0.0600, 0.015) m. Every frame comes from our frame-tree walk
(``core.frames.frame_tree``, static model data + qpos), checked against MuJoCo's framepos sensors.
Tables: the cube per frame, its pixel, the shoulder_pan sweep, the ±30° sweep of each arm
joint, five ways to put the cube in the gripper frame (one right), and the traps. Printing,
CSV and the figure: :mod:`physai_ros.experiments.lesson07.report`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from physai_ros.experiments.lesson07.frames import Lesson07, build_scene, load_spec
from physai_ros.experiments.lesson07.report import write_report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--model-path`` (a folder with so101.xml/scene.xml) and ``--output``."""
    parser.add_argument(
        "--model-path", default=None, help="SO-101 model folder (default: embedded)"
    )
    parser.add_argument("--output", default="physai_output/lesson07", help="directory for CSV/PNG")


def run(args: argparse.Namespace) -> int:
    """Print the lesson's tables (Markdown) and save them as CSV plus one PNG."""
    lesson = Lesson07(build_scene(load_spec(args.model_path)))
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    write_report(lesson, out)
    return 0
