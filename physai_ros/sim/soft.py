"""An opt-in deformable object for the pick scene: a MuJoCo 3.17 ``flexcomp`` of dimension 3.

The body is linear tetrahedra with ``<elasticity young poisson damping>``; MuJoCo 3.17 refuses
that elasticity under ``implicit``/``implicitfast`` and a 4×4×4 grid goes unstable under
``Euler``, so a scene with a soft object steps with ``integrator="discrete"`` and at least
``iterations`` solver iterations (the discrete step's M+K solve uses them). Scenes without one
keep the robot file's integrator and solver untouched: lesson 16's rigid numbers belong to
those scenes only.

Shapes: ``cube`` is a ``grid`` flexcomp (count³ vertices, 6 tetrahedra per cell);
``cylinder`` and ``sphere`` are the ``cylinder`` and ``ellipsoid`` flexcomps (a surface grid
whose triangles each meet one centre vertex: fewer, flatter tetrahedra, so the body is softer
than its E says). Resting 2 s under their own 30 g (E 5·10⁴ Pa), the centre of mass stood at
99 % of its unloaded height for the cube and the cylinder, 89 % for the sphere (Hertz alone
predicts 93 % for a 3 cm ball).

Every vertex is a body with three slider joints and a contact sphere of ``vertex_radius``; the
vertex spacing is chosen so that the spheres' outer surface spans ``size``. Defaults:
``config/scene.yaml`` (``soft``).

The resolution ``count`` is the object's speed: the cube's default 3 (27 vertices) steps about 3×
faster than 4 (64), which is what lets the sim bridge keep real time on two shared cores; it
squeezes 8 % harder and strains less at the same jaw cap (docs/soft_objects.md "Speed"). At 3 the
sphere rocks on its coarse facets, so it keeps 4, and so does the cylinder (not measured
squeezed at 3).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import mujoco
import numpy as np

from physai_ros.errors import InvalidInput, ModelError

SOFT_FLEX = "soft"  # the flex's name; its vertex bodies are named soft_0, soft_1, ...
SHAPES = {"cube": "grid", "sphere": "ellipsoid", "cylinder": "cylinder"}  # ours -> flexcomp


class SoftObject(NamedTuple):
    """A soft object's material and geometry: shape ("cube" | "sphere" | "cylinder"), Young's
    modulus [Pa], Poisson ratio [-], elasticity damping [s], mass [kg], sliding friction μ
    [-], size [m] (cube edge; sphere diameter; cylinder diameter and height), resolution
    ``count`` [vertices per edge of the cube's grid, or of the sphere's and cylinder's surface
    grid], centre (x, y) on the table in the robot's base frame [m]."""

    shape: str
    young: float
    poisson: float
    damping: float
    mass: float
    mu: float
    size: float
    count: int
    pos: tuple[float, float]


FIELDS = ("shape", "young", "poisson", "damping", "mass", "mu", "size", "count")  # config/caller
COUNT_RANGE = (3, 6)  # vertices per edge: below 3 no interior, above 6 far slower than real time


def soft_object(config: dict[str, Any], pos: tuple[float, float], **values: Any) -> SoftObject:
    """A checked ``SoftObject``: ``values`` (any field but ``pos``) over ``config`` (the
    ``soft`` section of config/scene.yaml; ``count`` defaults to the shape's own there). Raises
    InvalidInput on an unknown shape, E ≤ 0, ν outside [0, 0.5), damping < 0, mass ≤ 0, μ ≤ 0,
    a size not above four vertex radii, a count that is not a whole number in COUNT_RANGE, or a
    value that is not a number."""
    unknown = set(values) - set(FIELDS)
    if unknown:
        raise InvalidInput(f"unknown soft object fields {sorted(unknown)}; valid: {FIELDS}")
    v = {f: config[f] if values.get(f) is None else values[f] for f in FIELDS}
    shape = v["shape"]
    if shape not in SHAPES:
        raise InvalidInput(f"unknown soft object shape {shape!r}; valid choices: {sorted(SHAPES)}")
    if values.get("count") is None:
        v["count"] = config["count"][shape]
    try:
        young, poisson, damping, mass, mu, size, count = (float(v[k]) for k in FIELDS[1:])
        x, y = (float(c) for c in pos)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"soft object values must be numbers: {v}, pos {pos!r}") from exc
    if not (math.isfinite(young) and young > 0.0):
        raise InvalidInput(f"soft object Young's modulus must be > 0 [Pa], got {young!r}")
    if not 0.0 <= poisson < 0.5:
        raise InvalidInput(f"soft object Poisson ratio must be in [0, 0.5), got {poisson!r}")
    if not (math.isfinite(damping) and damping >= 0.0):
        raise InvalidInput(f"soft object damping must be >= 0 [s], got {damping!r}")
    if not (math.isfinite(mass) and mass > 0.0):
        raise InvalidInput(f"soft object mass must be > 0 [kg], got {mass!r}")
    if not (math.isfinite(mu) and mu > 0.0):
        raise InvalidInput(f"soft object friction mu must be > 0, got {mu!r}")
    radius = float(config["vertex_radius"])
    if not (math.isfinite(size) and size > 4.0 * radius):
        raise InvalidInput(
            f"soft object size must be > {4.0 * radius:g} m (four vertex radii), got {size!r}"
        )
    if not (count.is_integer() and COUNT_RANGE[0] <= count <= COUNT_RANGE[1]):
        raise InvalidInput(
            f"soft object count must be a whole number of vertices per edge in "
            f"[{COUNT_RANGE[0]}, {COUNT_RANGE[1]}], got {v['count']!r}"
        )
    if not (math.isfinite(x) and math.isfinite(y)):
        raise InvalidInput(f"soft object position must be finite (x, y) [m], got {pos!r}")
    return SoftObject(shape, young, poisson, damping, mass, mu, size, int(count), (x, y))


def add_soft_object(
    spec: mujoco.MjSpec, soft: SoftObject, centre: list[float], config: dict[str, Any]
) -> None:
    """Add ``soft`` to ``spec`` with its centre at ``centre`` (world [m]), and switch the scene
    to the discrete integrator with at least ``config['iterations']`` solver iterations and the
    solver tolerance ``config['tolerance']`` (1e-6: the same jaw forces and strains as 1e-8 to
    three digits, and fewer iterations per step)."""
    radius = float(config["vertex_radius"])
    count = soft.count
    spacing = (soft.size - 2.0 * radius) / (count - 1)
    flex = spec.worldbody.make_flex(
        SOFT_FLEX,
        type=SHAPES[soft.shape],
        dim=3,
        count=[count] * 3,
        spacing=[spacing] * 3,
        radius=radius,
        mass=soft.mass,
        pos=list(centre),
    )
    flex.young, flex.poisson, flex.damping = soft.young, soft.poisson, soft.damping
    flex.friction[0] = soft.mu
    flex.condim = int(config["condim"])
    flex.priority = int(config["priority"])
    flex.selfcollide = mujoco.mjtFlexSelf.mjFLEXSELF_NONE  # neighbours only: contacts, no use
    flex.solref = [int(config["contact_steps"]) * spec.option.timestep, 1.0]
    flex.rgba = config["rgba"]
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_DISCRETE
    spec.option.iterations = max(spec.option.iterations, int(config["iterations"]))
    spec.option.tolerance = float(config["tolerance"])


class SoftBody:
    """What a compiled scene's soft object looks like now: its pose and its strain.

    Shared by every runner of a soft scene (the sim bridge's ``MujocoSim``, the bus
    emulator's ``So101Physics``), so both report the same measures. The vertex and edge
    ranges, mass weights, rest offsets from the centre of mass and rest lengths are looked up
    once; the reads are then array work only.
    """

    def __init__(self, model: mujoco.MjModel, flex: str = SOFT_FLEX) -> None:
        m = model
        fid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_FLEX, flex)
        if fid < 0:
            raise ModelError(f"the scene has no flex {flex!r} (no soft object)")
        self.flex = fid
        start, count = int(m.flex_vertadr[fid]), int(m.flex_vertnum[fid])
        self.verts = slice(start, start + count)
        start, count = int(m.flex_edgeadr[fid]), int(m.flex_edgenum[fid])
        self.edges = slice(start, start + count)
        mass = m.body_mass[m.flex_vertbodyid[self.verts]]
        self.weight = mass / mass.sum()
        self.rest_length = m.flexedge_length0[self.edges].copy()
        data = mujoco.MjData(m)
        mujoco.mj_kinematics(m, data)
        mujoco.mj_flex(m, data)
        rest = data.flexvert_xpos[self.verts]
        self.rest = rest - self.weight @ rest

    def pose(self, data: mujoco.MjData) -> tuple[np.ndarray, np.ndarray]:
        """Centre of mass [m] (vertex positions weighted by vertex mass) and the rotation
        (w, x, y, z) that best maps the rest shape onto the current one (mass-weighted least
        squares, Kabsch), in the world."""
        x = data.flexvert_xpos[self.verts]
        com = self.weight @ x
        cov = (self.rest * self.weight[:, None]).T @ (x - com)
        u, _, vt = np.linalg.svd(cov)
        flip = np.diag([1.0, 1.0, np.sign(np.linalg.det(vt.T @ u.T))])
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, (vt.T @ flip @ u.T).ravel())
        return com, quat

    def strain(self, data: mujoco.MjData) -> float:
        """The largest engineering strain |l / l0 − 1| [m/m] over the edges (0 at the rest
        shape; 0.1 = some edge 10 % longer or shorter)."""
        length = data.flexedge_length[self.edges]
        return float(np.max(np.abs(length / self.rest_length - 1.0)))
