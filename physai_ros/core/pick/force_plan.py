"""The force close's target from the grasp planner: the seed's plan → force targets → force close.

With ``plan.source: planner`` (config/pick.yaml) the pick asks ``plan_grasp`` for the object it
picks before it moves, and squeezes with the largest planned force target (one servo drives both
jaws of the SO-101, so they squeeze alike), raised to the jaw's least controllable squeeze
(``JawFloor``: from the jaw's dry friction, lever and the close's tolerance) when below it.
Pure: the request is built from plain values, the answer judged from plain values; the pick
node only copies message fields.

Where each fact comes from (one place each): the object's mass, friction and, for the soft
object, shape and material from ``config/scene.yaml`` (what the simulation builds); its size from
the pick's own ``cube_size`` (what the pick judges the lift by); the rigid cube's elastic
constants, which MuJoCo's rigid cube has not, and the planner's resolution from ``plan.*``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, NamedTuple

from physai_ros.core.pick.force_close import ForceCloseParams
from physai_ros.errors import InvalidInput

SOURCES = ("parameter", "planner")
OBJECTS = ("cube", "soft")
# scene.yaml's soft shapes -> the planner's primitives (a cube is a box of equal edges)
PLANNER_SHAPES = {"cube": "box", "sphere": "sphere", "cylinder": "cylinder"}
NO_SERVICE = "no plan_grasp service"


@dataclass(frozen=True)
class PlanSource:
    """source: parameter (force.target) | planner; object: which config/scene.yaml entry the
    picked object is (cube: rigid, soft); rigid_young [Pa], rigid_poisson [-]: the planner's
    material for the rigid cube; spacing [m]: surface point spacing; cells: lattice cells
    across the object; timeout [s, wall]: no answer by then aborts the pick."""

    source: str = "parameter"
    object: str = "cube"
    rigid_young: float = 1.0e9
    rigid_poisson: float = 0.3
    spacing: float = 0.006
    cells: int = 3
    timeout: float = 60.0

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise InvalidInput(f"plan.source must be one of {list(SOURCES)}, got {self.source!r}")
        if self.object not in OBJECTS:
            raise InvalidInput(f"plan.object must be one of {list(OBJECTS)}, got {self.object!r}")
        for name in ("rigid_young", "spacing", "timeout"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise InvalidInput(f"plan.{name} must be finite and > 0, got {value!r}")
        if not 0.0 <= self.rigid_poisson < 0.5:
            raise InvalidInput(f"plan.rigid_poisson must be in [0, 0.5), got {self.rigid_poisson}")
        if self.cells < 3:
            raise InvalidInput(f"plan.cells must be >= 3, got {self.cells}")

    @property
    def planned(self) -> bool:
        return self.source == "planner"


def plan_source(tree: dict) -> PlanSource:
    """The ``plan`` section of a pick parameters tree (absent: the parameter source)."""
    raw = dict(tree.get("plan", {}))
    try:
        return PlanSource(
            source=str(raw.get("source", "parameter")),
            object=str(raw.get("object", "cube")),
            rigid_young=float(raw.get("rigid_young", 1.0e9)),
            rigid_poisson=float(raw.get("rigid_poisson", 0.3)),
            spacing=float(raw.get("spacing", 0.006)),
            cells=int(raw.get("cells", 3)),
            timeout=float(raw.get("timeout", 60.0)),
        )
    except (TypeError, ValueError) as err:
        raise InvalidInput(f"bad plan section {raw!r}: {err}") from err


def plan_request(src: PlanSource, scene: dict[str, Any], size: float) -> dict[str, Any]:
    """The ``PlanGrasp`` request's fields for the SO-101 picking ``src.object`` of edge (or
    diameter) ``size`` [m]; ``scene`` is config/scene.yaml as a dict."""
    if not (math.isfinite(size) and size > 0.0):
        raise InvalidInput(f"object size must be finite and > 0 [m], got {size!r}")
    entry = scene[src.object]
    if src.object == "soft":
        shape = PLANNER_SHAPES.get(str(entry["shape"]))
        if shape is None:
            raise InvalidInput(f"scene soft shape {entry['shape']!r} has no planner primitive")
        young, poisson = float(entry["young"]), float(entry["poisson"])
    else:
        shape, young, poisson = "box", src.rigid_young, src.rigid_poisson
    return {
        "shape": shape,
        "size": float(size),
        "spacing": src.spacing,
        "hand": "so101",
        "young": young,
        "poisson": poisson,
        "mu": float(entry["mu"]),
        "mass": float(entry["mass"]),
        "cells": src.cells,
        "lift_accel": -1.0,  # the planner's defaults
        "force_margin": 0.0,
    }


def planned_target(success: bool, message: str, force_targets: list[float]) -> float:
    """The force target per jaw [N] from a plan: the largest of its targets (the jaws of a
    one-servo gripper squeeze alike). No grasp raises with the planner's reason."""
    if not success:
        raise InvalidInput(f"grasp planner: {message}")
    targets = [float(v) for v in force_targets]
    if not targets or not all(math.isfinite(v) and v > 0.0 for v in targets):
        raise InvalidInput(f"grasp planner gave no usable force targets: {targets}")
    return max(targets)


@dataclass(frozen=True)
class JawFloor:
    """The least squeeze a jaw controls: friction [N·m], the jaw joint's dry friction (the
    model's ``frictionloss``, what the simulation and the SO-101 driver's calibration use);
    lever [m], normal force = torque / lever; tolerance [-], the close's band ±tolerance."""

    friction: float
    lever: float
    tolerance: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.friction) and self.friction >= 0.0):
            raise InvalidInput(f"jaw friction must be finite and >= 0 [N m], got {self.friction!r}")
        if not (math.isfinite(self.lever) and self.lever > 0.0):
            raise InvalidInput(f"jaw lever must be finite and > 0 [m], got {self.lever!r}")
        if not 0.0 < self.tolerance < 1.0:
            raise InvalidInput(f"tolerance must be in (0, 1), got {self.tolerance!r}")

    @property
    def resolution(self) -> float:
        """[N] a stalled jaw's friction holds anything within ±friction of the servo's torque,
        so the force a torque sets (and the driver's estimate, which takes friction / 2) is
        known to ±friction / (2 lever) only: a band ±tolerance · N* narrower is not told apart."""
        return self.friction / (2.0 * self.lever * self.tolerance)

    @property
    def approach(self) -> float:
        """[N] the contact phase must move the jaw (force > friction / lever) and stay below
        the band (force < N* · (1 − tolerance)): no target at or below this leaves room."""
        return self.friction / (self.lever * (1.0 - self.tolerance))

    @property
    def force(self) -> float:
        """[N per jaw] the least controllable squeeze: the larger of the two limits."""
        return max(self.resolution, self.approach)

    def contact_fault(self, contact: float) -> str | None:
        """Why a contact force [N per jaw] would never bring the jaw onto the object, or None:
        at or below friction / lever the servo's torque does not overcome the jaw's friction,
        and the close would wait out its timeout with the jaw standing still."""
        least = self.friction / self.lever
        if contact <= least:
            return (
                f"force.contact {contact:.3f} N per jaw cannot move the jaw: its friction "
                f"{self.friction:.3f} N m / lever {self.lever:.4f} m = {least:.3f} N"
            )
        return None

    @property
    def why(self) -> str:
        """The floor with its numbers, for the log and the outcome."""
        which = "resolution" if self.resolution >= self.approach else "approach"
        return (
            f"below the jaw's least controllable squeeze {self.force:.3f} N ({which}: jaw "
            f"friction {self.friction:.4g} N m / (2 x lever {self.lever:.4g} m x tolerance "
            f"{self.tolerance:g}) = {self.resolution:.3f} N; friction / (lever x (1 - "
            f"tolerance)) = {self.approach:.3f} N)"
        )


class PlannedParams(NamedTuple):
    """The force close's parameters from a plan; raised: {from_N, to_N, why} when the planned
    target lay below the jaw's least controllable squeeze and was raised to it, else None."""

    params: ForceCloseParams
    raised: dict[str, Any] | None


def planned_params(
    force: ForceCloseParams,
    success: bool,
    message: str,
    force_targets: list[float],
    floor: JawFloor,
) -> PlannedParams:
    """The force close's parameters with the planned target, raised to ``floor.force`` if it
    lies below (a squeeze the jaw cannot set or tell is no plan to execute: the planner's
    friction floor of a light object is far below the SO-101's); a target the close cannot
    squeeze to (``force.contact`` not below its band, ...) raises with the target and reason."""
    target = planned_target(success, message, force_targets)
    raised = None
    if target < floor.force:
        raised = {"from_N": round(target, 4), "to_N": round(floor.force, 4), "why": floor.why}
        target = floor.force
    try:
        return PlannedParams(dataclasses.replace(force, target=target), raised)
    except InvalidInput as exc:
        note = "" if raised is None else f" (raised from {raised['from_N']} N, {floor.why})"
        raise InvalidInput(f"planned force target {target:.4f} N per jaw{note}: {exc}") from exc
