"""Lesson 13 — trajectory generation on a torque-controlled Panda.

Reproduces the lesson's three tables: (A) five time scalings at T = 1 s plus model feedforward,
(B) the duration sweep that shows accelerations ∝ 1/T² and jerks ∝ 1/T³, (C) joint-space vs
Cartesian interpolation of a 50 cm straight TCP move. The Panda's position actuators are
disabled; a PD + bias controller writes torques into ``qfrc_applied`` every 2 ms, clipped to
the actuators' force ranges (87 / 12 N·m).

Column definitions (from the lesson): "ref" values are for the reference sampled at the
controller's 2 ms ticks (at rest at t = 0), for the largest joint; ref jerk is the 2 ms finite
difference of the reference acceleration; "∞" where the shape's acceleration (or velocity)
jumps. "Robot" values come from ``qacc`` (all joints), robot jerk is its 2 ms finite difference.
Tracking error is max |q_r − q| over joints and the whole run, with q_r and q at the same tick.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import mujoco
import numpy as np

from physai_ros.core.motion.cartesian import straight_line
from physai_ros.core.motion.kinematics import solve_ik
from physai_ros.core.motion.time_scaling import TimeScaling, get_shape, joint_reference
from physai_ros.errors import ModelError
from physai_ros.models.joints import PANDA_ARM_JOINTS

DT = 0.002  # [s] controller and physics period
TAIL = 0.5  # [s] simulated after the move ends
DQ = np.array([0.6, 0.4, -0.4, 0.5, 0.5, -0.4, 0.6])  # [rad] joint move from `home`
KP = np.array([600.0, 600.0, 600.0, 600.0, 250.0, 150.0, 50.0])  # [N·m/rad]
KD = np.array([50.0, 50.0, 50.0, 50.0, 20.0, 12.0, 4.0])  # [N·m·s/rad]
TABLE_A_SHAPES = ("step", "linear", "trapezoid", "cubic", "quintic")
SWEEP_DURATIONS = (0.25, 0.5, 1.0, 2.0)  # [s]
SWEEP_SHAPES = ("cubic", "quintic")
FEEDFORWARD_ROW = "quintic + M q̈_r − passive"
ARM_JOINTS = PANDA_ARM_JOINTS
TCP_SITE = "attachment_site"
LINE_HEIGHT = 0.40  # [m] Cartesian move: z of the line; x = the home TCP's x
LINE_LENGTH = 0.50  # [m] along world y, centred on y = 0, home TCP orientation held


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """CLI options of ``physai lesson 13``."""
    parser.add_argument("--model-path", default=None, help="Panda MJCF file or Menagerie folder")
    parser.add_argument("--output", default="physai_output/lesson13", help="folder for CSV/PNG")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")


def load_panda(model_path: str | Path | None) -> mujoco.MjModel:
    """The Panda at 2 ms with its position actuators disabled (torques go to qfrc_applied)."""
    try:
        from physai_ros.models.loader import load_robot_spec
    except ImportError as err:  # written by the models work package
        raise ModelError("physai_ros.models.loader.load_robot_spec is missing") from err
    model = load_robot_spec("panda", model_path).compile()
    model.opt.timestep = DT
    model.actuator_gainprm[:] = 0.0
    model.actuator_biasprm[:] = 0.0
    return model


def _arm_indices(model: mujoco.MjModel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """qpos / dof addresses of joint1..7 and their torque limits [N·m] (actuator forcerange)."""
    jid = [model.joint(n).id for n in ARM_JOINTS]
    limit = np.array([model.actuator(n).forcerange[1] for n in ARM_JOINTS])
    return model.jnt_qposadr[jid], model.jnt_dofadr[jid], limit


def simulate(
    model: mujoco.MjModel, shape: TimeScaling, duration: float, feedforward: bool = False
) -> dict:
    """Track ``shape`` over ``duration`` [s] from ``home``; returns the run's time series."""
    qadr, dadr, limit = _arm_indices(model)
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    mujoco.mj_forward(model, data)
    q0 = data.qpos[qadr].copy()
    steps = round((duration + TAIL) / DT)
    rec = {k: np.zeros((steps, 7)) for k in ("q_ref", "qdd_ref", "q", "qd", "qacc", "err")}
    rec["t"], saturated = np.zeros(steps), 0
    acc = np.zeros(model.nv)
    mass_acc = np.zeros(model.nv)
    for k in range(steps):
        q_ref, qd_ref, qdd_ref = joint_reference(shape, data.time, duration, q0, DQ)
        tau = (
            data.qfrc_bias[dadr] + KP * (q_ref - data.qpos[qadr]) + KD * (qd_ref - data.qvel[dadr])
        )
        if feedforward:
            acc[dadr] = qdd_ref
            mujoco.mj_mulM(model, data, mass_acc, acc)
            tau = tau + mass_acc[dadr] - data.qfrc_passive[dadr]
        saturated += bool(np.any(np.abs(tau) > limit))
        data.qfrc_applied[dadr] = np.clip(tau, -limit, limit)
        mujoco.mj_step(model, data)
        q_now = joint_reference(shape, data.time, duration, q0, DQ)[0]
        rec["t"][k], rec["q_ref"][k], rec["qdd_ref"][k] = data.time, q_now, qdd_ref
        rec["q"][k], rec["qd"][k], rec["qacc"][k] = (
            data.qpos[qadr],
            data.qvel[dadr],
            data.qacc[dadr],
        )
        rec["err"][k] = q_now - data.qpos[qadr]
    rec["jerk"] = np.vstack([np.zeros((1, 7)), np.diff(rec["qacc"], axis=0) / DT])
    rec["saturated"] = saturated / steps
    return rec


def summarise(shape: TimeScaling, rec: dict) -> dict[str, float]:
    """The lesson's columns for one run (``inf`` where the shape's derivative jumps)."""
    big = int(np.argmax(np.abs(DQ)))
    ref_acc = np.abs(rec["qdd_ref"][:, big])
    ref_jerk = np.abs(np.diff(rec["qdd_ref"][:, big])) / DT
    velocity_jumps = shape.jump(0) > 0 or shape.jump(1) > 0
    return {
        "ref_acc": np.inf if velocity_jumps else float(ref_acc.max()),
        "ref_jerk": np.inf if velocity_jumps or shape.jump(2) > 0 else float(ref_jerk.max()),
        "robot_acc": float(np.abs(rec["qacc"]).max()),
        "robot_jerk": float(np.abs(rec["jerk"]).max()),
        "error_deg": float(np.degrees(np.abs(rec["err"]).max())),
        "saturated_pct": 100.0 * rec["saturated"],
    }


def table_a(model: mujoco.MjModel) -> dict[str, tuple[dict, dict]]:
    """Each shape at T = 1 s, plus the quintic with M(q)q̈_r − qfrc_passive feedforward."""
    runs = {}
    for name in TABLE_A_SHAPES:
        rec = simulate(model, get_shape(name), 1.0)
        runs[name] = (summarise(get_shape(name), rec), rec)
    rec = simulate(model, get_shape("quintic"), 1.0, feedforward=True)
    runs[FEEDFORWARD_ROW] = (summarise(get_shape("quintic"), rec), rec)
    return runs


def table_b(model: mujoco.MjModel) -> list[tuple[float, str, dict]]:
    """Cubic and quintic over the duration sweep."""
    return [
        (T, name, summarise(get_shape(name), simulate(model, get_shape(name), T)))
        for T in SWEEP_DURATIONS
        for name in SWEEP_SHAPES
    ]


def _fmt(value: float, digits: int = 2) -> str:
    return "∞" if not np.isfinite(value) else f"{value:.{digits}f}"


def print_tables(runs: dict, sweep: list, cart: dict) -> list[str]:
    """Markdown tables with the lesson's column names; returns the lines."""
    lines = [
        "A. Shapes at T = 1 s (ref values for the largest joint, 0.6 rad)",
        "",
        "| shape | ref peak acc [rad/s²] | ref peak jerk [rad/s³] | robot peak acc | "
        "robot peak jerk | tracking error | steps in saturation |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, (row, _) in runs.items():
        lines.append(
            f"| {name} | {_fmt(row['ref_acc'])} | {_fmt(row['ref_jerk'])} | {row['robot_acc']:.1f} "
            f"| {row['robot_jerk']:.0f} | {row['error_deg']:.2f}° | {row['saturated_pct']:.1f} % |"
        )
    lines += [
        "",
        "B. Duration sweep",
        "",
        "| T [s] | shape | ref peak acc | ref peak jerk | robot peak jerk | error |",
        "|---|---|---|---|---|---|",
    ]
    for T, name, row in sweep:
        lines.append(
            f"| {T:.2f} | {name} | {_fmt(row['ref_acc'])} | {_fmt(row['ref_jerk'], 1)} | "
            f"{row['robot_jerk']:.0f} | {row['error_deg']:.2f}° |"
        )
    lines += [
        "",
        f"C. Joint space or Cartesian? (IK residual {cart['ik_residual_mm']:.4f} mm)",
        "",
        "| interpolation | max distance from the line | hand path | joint path |",
        "|---|---|---|---|",
    ]
    for label, key in (
        ("joint space (quintic in q)", "joint"),
        ("Cartesian (IK at every waypoint)", "cartesian"),
    ):
        r = cart[key]
        lines.append(
            f"| {label} | {r['deviation_cm']:.2f} cm | {r['hand_path_cm']:.2f} cm "
            f"| {r['joint_path_rad']:.3f} rad |"
        )
    print("\n".join(lines))
    return lines


def save_outputs(out: Path, runs: dict, sweep: list, cart: dict, plots: bool) -> None:
    """CSV of every table and time series; PNG of q, q̇, q̈ and jerk per shape."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "table_a.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["shape", *next(iter(runs.values()))[0].keys()])
        w.writerows([name, *row.values()] for name, (row, _) in runs.items())
    with open(out / "table_b.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["T_s", "shape", *sweep[0][2].keys()])
        w.writerows([T, name, *row.values()] for T, name, row in sweep)
    with open(out / "table_c.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["interpolation", "deviation_cm", "hand_path_cm", "joint_path_rad"])
        w.writerows(
            [k, *(cart[k][c] for c in ("deviation_cm", "hand_path_cm", "joint_path_rad"))]
            for k in ("joint", "cartesian")
        )
    for i, (name, (_, rec)) in enumerate(runs.items()):
        slug = "quintic_feedforward" if name == FEEDFORWARD_ROW else name
        cols = [
            "t",
            *(f"{k}{j + 1}" for k in ("q_ref", "q", "qd", "qacc", "jerk") for j in range(7)),
        ]
        table = np.column_stack(
            [rec["t"], rec["q_ref"], rec["q"], rec["qd"], rec["qacc"], rec["jerk"]]
        )
        np.savetxt(
            out / f"run_{i}_{slug}.csv", table, delimiter=",", header=",".join(cols), comments=""
        )
        if plots:
            _plot(out / f"run_{i}_{slug}.png", name, rec)


def _plot(path: Path, title: str, rec: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(4, 1, figsize=(8, 9), sharex=True)
    series = [
        ("q [rad]", rec["q"]),
        ("q̇ [rad/s]", rec["qd"]),
        ("q̈ [rad/s²]", rec["qacc"]),
        ("jerk [rad/s³]", rec["jerk"]),
    ]
    for ax, (label, values) in zip(axes, series, strict=True):
        ax.plot(rec["t"], values, lw=1)
        ax.set_ylabel(label)
    axes[0].plot(rec["t"], rec["q_ref"], "k--", lw=0.6)
    axes[-1].set_xlabel("t [s]")
    fig.suptitle(f"Panda, {title}, T = 1 s (dashed: reference)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def cartesian_vs_joint(model: mujoco.MjModel, n_points: int = 501) -> dict:
    """Table C: the same end points, quintic timing, joint-space vs IK at every waypoint."""
    qadr, _, _ = _arm_indices(model)
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    mujoco.mj_kinematics(model, data)
    site = model.site(TCP_SITE).id
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, data.site_xmat[site])
    centre = np.array([data.site_xpos[site][0], 0.0, LINE_HEIGHT])
    half = np.array([0.0, LINE_LENGTH / 2, 0.0])
    a, b = centre - half, centre + half
    home = data.qpos[qadr].copy()

    line = straight_line(
        model, TCP_SITE, ARM_JOINTS, a, b, home, quat, n_points=n_points, shape="quintic"
    )
    # Joint space: the same time scaling between the IK solutions at the two ends (B solved
    # from A, as a joint-space planner given only the end poses would).
    qa = line.q[0]
    end = solve_ik(model, data, TCP_SITE, b, ARM_JOINTS, qa, quat, tol=1e-8, rot_tol=1e-8)
    joint_q = qa + line.s[:, None] * (end.q - qa)
    return {
        "joint": _path_metrics(model, data, qadr, site, joint_q, a, b),
        "cartesian": _path_metrics(model, data, qadr, site, line.q, a, b),
        "ik_residual_mm": 1000.0 * max(line.max_ik_error, end.error),
    }


def _path_metrics(model, data, qadr, site, qs: np.ndarray, a: np.ndarray, b: np.ndarray) -> dict:
    """Max distance of the TCP from line ab [cm], TCP path length [cm], joint path length [rad]."""
    pts = []
    for q in qs:
        data.qpos[qadr] = q
        mujoco.mj_kinematics(model, data)
        pts.append(data.site_xpos[site].copy())
    pts = np.array(pts)
    axis = (b - a) / np.linalg.norm(b - a)
    rel = pts - a
    off_line = np.linalg.norm(rel - np.outer(rel @ axis, axis), axis=1)
    return {
        "deviation_cm": 100.0 * float(off_line.max()),
        "hand_path_cm": 100.0 * float(np.linalg.norm(np.diff(pts, axis=0), axis=1).sum()),
        "joint_path_rad": float(np.linalg.norm(np.diff(qs, axis=0), axis=1).sum()),
    }


def run(args: argparse.Namespace) -> int:
    """Run the three tables, print them, save CSV/PNG under ``args.output``."""
    model = load_panda(getattr(args, "model_path", None))
    runs, sweep, cart = table_a(model), table_b(model), cartesian_vs_joint(model)
    print_tables(runs, sweep, cart)
    save_outputs(Path(args.output), runs, sweep, cart, plots=not getattr(args, "no_plots", False))
    return 0
