"""``physai plan``: plan a grasp of a soft object (seed 003) and draw it.

    physai plan --object sphere --hand barrett --young 5e4 --poisson 0.3 --mu 0.6 --mass 0.05
    physai plan --object box --size 0.04 --hand panda --json
    physai plan --object part.stl --scale 0.001 --hand so101

Prints the chosen contacts, Q1, Q2, force closure and ε, the pre-grasp, the force targets for
the real hand's force-controlled close, and writes a picture (object, contacts, force arrows,
deformation as colour) under ``--output``. ``--json`` prints one JSON object instead.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from physai_ros.core.grasp_planning.closing import ClosingProgress
from physai_ros.core.grasp_planning.objects import SHAPES, from_mesh, primitive
from physai_ros.core.grasp_planning.plan import HANDS, Plan, PlanRequest, plan, to_json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--object", default="sphere", help=f"{'|'.join(SHAPES)} or a mesh file (.stl/.obj)"
    )
    parser.add_argument(
        "--size",
        type=float,
        default=0.05,
        help="characteristic size of a primitive [m] (cube edge, diameter)",
    )
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="mesh coordinates × scale = metres (0.001 for millimetres)",
    )
    parser.add_argument(
        "--spacing",
        type=float,
        default=0.004,
        help="distance between surface points [m] (point density)",
    )
    parser.add_argument("--hand", choices=HANDS, default="barrett", help="hand or gripper")
    parser.add_argument("--young", type=float, default=5e4, help="Young's modulus E [Pa]")
    parser.add_argument("--poisson", type=float, default=0.3, help="Poisson ratio ν, in [0, 0.5)")
    parser.add_argument("--mu", type=float, default=0.6, help="fingertip–object friction μ")
    parser.add_argument("--mass", type=float, default=0.05, help="object mass [kg]")
    parser.add_argument(
        "--cells", type=int, default=6, help="mass–spring lattice cells across the object"
    )
    parser.add_argument(
        "--lift-accel",
        type=float,
        default=0.5,
        help="upward acceleration of the lift [m/s²], ≥ 0 (the force targets carry m (g + a))",
    )
    parser.add_argument(
        "--margin",
        type=float,
        default=1.2,
        help="friction-cone safety factor of the force targets, ≥ 1",
    )
    parser.add_argument(
        "--q2-tie",
        type=float,
        default=None,
        help="three fingers: Q2 within this of the best ties, the most horizontal triangle "
        "wins [m] (default: half the surface point spacing)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON only")
    parser.add_argument("--output", default="physai_output/plan", help="directory for the PNG")


def _object(args: argparse.Namespace):
    if args.object in SHAPES:
        return primitive(args.object, args.size, args.spacing)
    return from_mesh(args.object, args.spacing, args.scale)


def draw(result: Plan, path: Path) -> Path:
    """Object (deformed skin coloured by displacement), contacts, force arrows, tips."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    r = result.closing
    disp = np.linalg.norm(r.x - r.x0, axis=1)
    fig = plt.figure(figsize=(7, 6))
    ax = fig.add_subplot(projection="3d")
    sc = ax.scatter(*r.x.T, c=disp * 1e3, cmap="viridis", s=6)
    fig.colorbar(sc, ax=ax, shrink=0.6, label="deformation [mm]")
    ax.scatter(*result.contacts.T, c="red", s=40, label="contacts")
    scale = 0.3 * float(np.ptp(r.x0, axis=0).max()) / max(np.abs(r.finger_forces).max(), 1e-9)
    for tip, force in zip(r.tips, r.finger_forces, strict=True):
        ax.quiver(*(tip - force * scale), *(force * scale), color="red")
    ax.scatter(*r.tips.T, c="black", s=60, marker="o", label="fingertip centres")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_zlabel("z [m]")
    ax.set_title(
        f"{result.hand}: simulated squeeze {np.round(r.squeeze, 3).tolist()} N\n"
        "(arrows: finger forces; colour: deformation)"
    )
    ax.legend(loc="upper left")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _show(bar, p: ClosingProgress) -> None:
    """One closing report on the bar: 100 % only when a lift has held."""
    bar.n = 100 if p.done else min(round(100 * p.carried), 99)
    bar.set_postfix_str(
        f"step {p.step}/{p.max_steps} at most, lifts tried {p.lifts}"
        + (f", steps retaken {p.refinements}" if p.refinements else ""),
        refresh=False,
    )
    bar.refresh()


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    obj = _object(args)
    req = PlanRequest(
        args.hand,
        args.young,
        args.poisson,
        args.mu,
        args.mass,
        args.cells,
        lift_accel=args.lift_accel,
        force_margin=args.margin,
        q2_tie=args.q2_tie,
    )
    # The closing takes nearly all the time and its number of steps is not known up front (see
    # ClosingProgress): the bar is the share of the weight the tips' friction carries, which
    # the closing raises until a lift holds; no ETA (a step takes from one to tens of seconds).
    with tqdm(
        total=100,
        desc="closing: weight carried by friction",
        disable=args.json,
        bar_format="{desc} {percentage:3.0f}%|{bar}| [{elapsed}{postfix}]",
    ) as bar:
        result = plan(obj, req, progress=lambda p: _show(bar, p))
    data = to_json(result)
    picture = draw(result, Path(args.output) / f"plan_{args.hand}_{obj.name}.png")
    data["picture"] = str(picture)
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    print(f"object: {obj.name}, {len(obj.points)} surface points; hand: {args.hand}")
    for i, (p, n) in enumerate(zip(data["contacts_m"], data["normals"], strict=True)):
        print(f"  contact {i}: {np.round(p, 4).tolist()} m, normal {np.round(n, 3).tolist()}")
    q1 = "—" if data["q1_rad"] is None else f"{data['q1_rad']:.4f} rad"
    print(
        f"Q1 {q1}, Q2 {data['q2_m'] * 1e3:.3f} mm, force closure {data['force_closure']}, "
        f"ε {data['epsilon']:.4f}"
    )
    print(f"pre-grasp: {data['pregrasp_note']}; object at {data['object_position_m']} m (world)")
    print(f"  joints [rad]: {data['pregrasp']['joints_rad']}")
    if "hand" in data["pregrasp"]:
        hand = data["pregrasp"]["hand"]
        print(
            f"  hand: spread {hand['spread_rad']:.4f} rad, inner {hand['inner_rad']} rad, "
            f"outer {hand['outer_rad']} rad; joint errors [°] {hand['joint_errors_deg']}"
        )
    for msg in data["rejected"]:
        print(f"  rejected: {msg}")
    print(
        f"simulated squeeze [N]: {data['simulated_squeeze_N']} (rigid least squeeze "
        f"{data['rigid_least_squeeze_N']:.3f} N in total; cone ratio {data['cone_ratio']:.2f})"
    )
    print(f"force targets [N]: {data['force_targets_N']} ({data['force_target_basis']})")
    print(f"max deformation {data['max_deformation_m'] * 1e3:.2f} mm; picture: {picture}")
    return 0
