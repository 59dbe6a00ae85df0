"""The randomisation of scripted episodes: each episode's scene drawn from one seed.

Episode ``i`` of seed ``s`` is drawn from its own generator, ``numpy.random.default_rng([s, i])``,
so it is the same episode whether it runs first or last, alone or on one of many workers, and a
resumed recording draws exactly the episodes it would have drawn without the interruption.
"""

from __future__ import annotations

import colorsys
import math
from dataclasses import dataclass, fields

import numpy as np

from physai_ros.errors import InvalidInput

Range = tuple[float, float]


@dataclass(frozen=True)
class Randomisation:
    """Ranges each episode is drawn from, uniformly (``lo == hi``: fixed).

    x, y: cube centre in the arm's base frame [m]. yaw: cube rotation about z [deg].
    size: cube edge [m]. mass: [kg]. mu: the cube's sliding friction.
    colours: a random hue for the cube (else the scene's red).
    light: the scene light's diffuse intensity (1 channel, grey).
    camera_jitter: the fixed cameras' positions moved by up to this much on each axis [m].
    """

    x: Range = (0.20, 0.24)
    y: Range = (-0.03, 0.03)
    yaw: Range = (0.0, 0.0)
    size: Range = (0.03, 0.03)
    mass: Range = (0.03, 0.03)
    mu: Range = (1.0, 1.0)
    colours: bool = False
    light: Range = (0.7, 0.7)
    camera_jitter: float = 0.0

    def __post_init__(self) -> None:
        for field in fields(self):
            pair = getattr(self, field.name)
            if not isinstance(pair, tuple):  # colours, camera_jitter
                continue
            if len(pair) != 2 or not all(math.isfinite(v) for v in pair):
                raise InvalidInput(f"{field.name}: {pair!r} is not a finite range (lo, hi)")
            if pair[0] > pair[1]:
                raise InvalidInput(f"{field.name}: lo {pair[0]} above hi {pair[1]}")
        for name in ("size", "mass", "mu"):
            if getattr(self, name)[0] <= 0:
                raise InvalidInput(f"{name} must be positive, got {getattr(self, name)}")
        if self.light[0] < 0 or not self.camera_jitter >= 0 or math.isinf(self.camera_jitter):
            raise InvalidInput("light and camera_jitter cannot be negative (nor NaN, nor inf)")


@dataclass(frozen=True)
class EpisodeSetup:
    """One episode's scene, as drawn: everything that makes it differ from another."""

    index: int
    cube_xy: tuple[float, float]  # [m] in the base frame
    yaw_deg: float
    size: float  # [m]
    mass: float  # [kg]
    mu: float
    rgba: tuple[float, float, float, float] | None  # None: the scene's own colour
    light: float
    camera_offset: tuple[float, float, float]  # [m] added to every fixed camera's position


def draw(randomisation: Randomisation, seed: int, index: int) -> EpisodeSetup:
    """Episode ``index`` of ``seed`` (see the module's docstring for why one generator each)."""
    rng = np.random.default_rng([seed, index])
    r = randomisation

    def uniform(pair: Range) -> float:
        return float(rng.uniform(*pair)) if pair[1] > pair[0] else float(pair[0])

    cube_xy = (uniform(r.x), uniform(r.y))
    yaw, size, mass, mu = uniform(r.yaw), uniform(r.size), uniform(r.mass), uniform(r.mu)
    hue = float(rng.uniform())  # drawn always, so other fields do not shift with --colours
    rgba = (*colorsys.hsv_to_rgb(hue, 0.8, 0.85), 1.0) if r.colours else None
    light = uniform(r.light)
    jitter = rng.uniform(-1.0, 1.0, size=3) * r.camera_jitter
    return EpisodeSetup(
        index, cube_xy, yaw, size, mass, mu, rgba, light, tuple(float(v) for v in jitter)
    )


def parse_range(text: str) -> Range:
    """``"0.2,0.24"`` → (0.2, 0.24); ``"0.03"`` → (0.03, 0.03)."""
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise InvalidInput(f"{text!r} is not a number or a range LO,HI") from None
    if len(values) == 1:
        values *= 2
    if len(values) != 2:
        raise InvalidInput(f"{text!r}: a range is LO,HI")
    return (values[0], values[1])
