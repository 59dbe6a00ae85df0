"""Lesson 07's report: the tables (Markdown on stdout, one CSV each) and the joint-sweep figure.

Kept apart from :mod:`physai_ros.experiments.lesson07.frames` (scene set-up and computations)
so that
the maths and its presentation change independently; this module only formats what
:class:`~physai_ros.experiments.lesson07.frames.Lesson07` computes.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from physai_ros.experiments.lesson07.frames import ARM_JOINTS, FRAME_KEYS, Lesson07, scene_qpos


def _fmt(v: np.ndarray, scale: float = 1.0, digits: int = 4) -> str:
    return "(" + ", ".join(f"{x * scale:.{digits}f}" for x in v) + ")"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def _save(path: Path, header: list[str], rows: list[list[str]]) -> None:
    with path.open("w", newline="") as f:
        csv.writer(f).writerows([header, *rows])


def report(lesson: Lesson07) -> list[tuple[str, list[str], list[list[str]]]]:
    """The lesson's tables as (title, header, rows), numbers formatted as in the seed."""
    setup, qpos = lesson.setup, scene_qpos(lesson.model, lesson.setup)
    cube, sensor = lesson.cube_in(qpos), lesson.sensors(qpos)
    names = {
        "W": "world W",
        "B": "base B",
        "G": f"gripper G ({setup.gripper_site})",
        "C": f"camera C ({setup.camera})",
        "Bi": "base INERTIAL frame",
    }
    frames = [
        [names[k], _fmt(cube[k]), "–" if k == "W" else f"{np.abs(cube[k] - sensor[k]).max():.1e}"]
        for k in ("W", "B", "G", "C", "Bi")
    ]
    walk = [[k, f"{v:.1e}"] for k, v in lesson.walk_errors(qpos).items()]
    (u, v), (uo, vo) = lesson.pixel(qpos)
    f = lesson.intrinsics.fy
    pixel = [
        [
            f"{setup.image_size[0]}x{setup.image_size[1]}",
            f"{setup.fovy_deg:g}",
            f"{f:.1f}",
            f"{u:.1f}",
            f"{v:.1f}",
            f"{uo:.1f}",
            f"{vo:.1f}",
        ]
    ]
    pan = []
    for deg in setup.pan_angles_deg:
        q = scene_qpos(lesson.model, setup, pan_deg=deg)
        c, F = lesson.cube_in(q), lesson.frames(q)
        pan.append(
            [
                f"{deg:+.0f}°",
                *(_fmt(c[k], 100.0, 2) for k in ("B", "G", "C")),
                _fmt(F["G"][:3, 3], 100.0, 2),
            ]
        )
    sweep = []
    for joint in ARM_JOINTS:
        s = lesson.joint_sweep(qpos, joint)
        sweep.append([joint, *(f"{1000 * s[k]:.2f} mm" for k in FRAME_KEYS), f"{s['T_GC']:.1e}"])
    ways = [[k, f"{1000 * e:.1f} mm"] for k, e in lesson.five_ways(qpos).items()]
    traps = [[k, f"{1000 * e:.1f} mm"] for k, e in lesson.traps(qpos).items()]
    return [
        (
            "Frames · the cube in each frame, ours vs framepos sensor",
            ["Frame", "cube (m)", "max abs diff vs sensor"],
            frames,
        ),
        ("Walk · frame-tree walk vs MuJoCo xpos/xmat", ["frames", "max abs error"], walk),
        (
            "Pixel · camera frame to pixel",
            [
                "image",
                "fovy (deg)",
                "f (px)",
                "u (MuJoCo)",
                "v (MuJoCo)",
                "u (optical)",
                "v (optical)",
            ],
            pixel,
        ),
        (
            "Pan sweep · shoulder_pan, other joints fixed (cm)",
            ["pan", "cube in B", "cube in G", "cube in C", "gripper site in W"],
            pan,
        ),
        (
            "Joint sweep · each arm joint ±30° about the pose",
            ["swept joint", "max change in W", "in B", "in G", "in C", "T_GC drift"],
            sweep,
        ),
        ("Five ways · the cube in the gripper frame", ["computation", "error"], ways),
        ("Traps · silent errors", ["trap", "distance"], traps),
    ]


def write_report(lesson: Lesson07, out: Path) -> None:
    """Print the lesson's tables (Markdown) and save them under ``out`` as CSV plus one PNG."""
    for title, header, rows in report(lesson):
        print(f"\n### {title}\n\n{_table(header, rows)}")
        _save(out / f"{title.split(' ·')[0].lower().replace(' ', '_')}.csv", header, rows)
    _plot(lesson, out / "joint_sweep.png")
    print(f"\nCSV and PNG written to {out}")


def _plot(lesson: Lesson07, path: Path) -> None:
    """Cube coordinate change per frame while shoulder_pan sweeps ±30° (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    qpos = scene_qpos(lesson.model, lesson.setup)
    adr = lesson.model.jnt_qposadr[lesson.model.joint("shoulder_pan").id]
    offsets = np.linspace(-1.0, 1.0, lesson.setup.sweep_points) * lesson.setup.sweep_deg
    ref = lesson.cube_in(qpos)
    change = {k: [] for k in FRAME_KEYS}
    for offset in offsets:
        q = qpos.copy()
        q[adr] += np.radians(offset)
        cube = lesson.cube_in(q)
        for k in FRAME_KEYS:
            change[k].append(1000.0 * np.linalg.norm(cube[k] - ref[k]))
    fig, ax = plt.subplots(figsize=(6, 4))
    for k in FRAME_KEYS:
        ax.plot(offsets, change[k], label=f"cube in {k}", linestyle="--" if k == "C" else "-")
    ax.set_xlabel("shoulder_pan offset [deg]")
    ax.set_ylabel("change of cube coordinates [mm]")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
