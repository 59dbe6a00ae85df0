"""Lesson 16's report: the sweep tables as CSV and Markdown, and the two figures.

Kept apart from :mod:`physai_ros.experiments.lesson16.sweep` (the runner) so that the physics
and its
presentation change independently; this module only formats numbers the runner measured.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from physai_ros.core.pick.grip import OUTCOMES
from physai_ros.experiments.lesson16.sweep import SWEEPS, PickResult, RowStats

LABEL = {"mu": "μ", "cap": "τ [N·m]", "mass": "m [kg]"}


def _fmt(x: float, digits: int = 2) -> str:
    return "–" if math.isnan(x) else f"{x:.{digits}f}"


def nominal_table(res: PickResult) -> tuple[list[str], list[list[str]]]:
    """The nominal pick as one table row: outcome, lift, IK error, jaw forces, close time, steps."""
    header = ["outcome", "lift [cm]", "IK error [mm]", "jaw forces [N]", "close [s]", "steps"]
    body = [
        [
            res.outcome,
            f"{res.lift * 100:.2f}",
            f"{res.ik_error * 1e3:.3f}",
            f"{res.forces[0]:.2f} / {res.forces[1]:.2f}",
            _fmt(res.close_s, 3),
            str(res.steps),
        ]
    ]
    return header, body


def table(name: str, stats: Sequence[RowStats]) -> tuple[list[str], list[list[str]]]:
    header = [LABEL[SWEEPS[name][0]], "success", "Wilson 95 %", "close [s]", "squeeze [N]"]
    header += ["μ(N1+N2)/mg", "held / not closed / dropped; ejected"]
    body = []
    for s in stats:
        n = sum(s.counts.values())
        c = s.counts
        body.append(
            [
                f"{s.value:g}",
                f"{c['held']}/{n}",
                f"[{s.ci[0]:.2f}, {s.ci[1]:.2f}]",
                _fmt(s.close_s),
                _fmt(s.squeeze),
                _fmt(s.ratio),
                f"{c['held']} / {c['not closed']} / {c['dropped']}; {s.ejected}",
            ]
        )
    return header, body


def markdown(header: list[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in body])


def save_table(out: Path, name: str, header, body) -> str:
    """Write ``sweep_<name>.csv`` and ``.md`` under ``out``; returns the Markdown section."""
    with open(out / f"sweep_{name}.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([header, *body])
    text = f"### Sweep {name}\n\n{markdown(header, body)}\n"
    (out / f"sweep_{name}.md").write_text(text)
    return text


def plot(out: Path, stats: dict[str, list[RowStats]]) -> None:
    """Outcomes per μ (sweep A) and success vs cone ratio (all rows with a ratio)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if "A" in stats:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        labels = [f"{s.value:g}" for s in stats["A"]]
        bottom = np.zeros(len(labels))
        for outcome in OUTCOMES:
            counts = np.array([s.counts[outcome] for s in stats["A"]])
            ax.bar(labels, counts, bottom=bottom, label=outcome)
            bottom += counts
        ax.set(xlabel="cube friction μ", ylabel="picks", title="Sweep A: outcome per μ")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "outcomes_per_mu.png", dpi=120)
        plt.close(fig)
    points = [
        (s.ratio, s.counts["held"] / sum(s.counts.values()), k)
        for k, v in stats.items()
        for s in v
        if not math.isnan(s.ratio)
    ]
    if points:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        for key in sorted({p[2] for p in points}):
            xs = [p[0] for p in points if p[2] == key]
            ys = [p[1] for p in points if p[2] == key]
            ax.scatter(xs, ys, label=f"sweep {key}")
        ax.axvline(1.0, color="grey", ls="--", lw=1)
        ax.set(
            xscale="log",
            xlabel="μ(N1+N2)/(m g)",
            ylabel="success rate",
            title="Success vs friction-cone ratio",
        )
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "success_vs_cone_ratio.png", dpi=120)
        plt.close(fig)
