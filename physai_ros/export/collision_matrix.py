"""Which link pairs MoveIt need not collision-check, by the MoveIt Setup Assistant's method with
MuJoCo's collision detection on the model the URDF was generated from.

The Setup Assistant (``compute_default_collisions.cpp``) takes every pair of links that have
collision geometry and disables it for the first reason that holds, in this order:

    Adjacent  joined by a joint, directly or through links without geometry (sites, anchors)
    Default   in contact at MoveIt's default state (each joint at 0, mid-range where 0 is not
              in its range)
    Always    in contact in more than 95 % of the random states
    Never     in contact in none of the random states (``SAMPLES``, fixed seed: reproducible)

Other pairs stay checked. One reason is added after Adjacent: ``User`` for a pair MuJoCo itself
never lets touch (an ``<exclude>``, or contype/conaffinity bits that never match), because the
model's author decided so and MoveIt should agree with the simulation.

States are drawn as MoveIt draws them, in the URDF's terms (uniform in each joint's range, a
mimic joint from its master), and judged by ``mj_kinematics`` + ``mj_collision`` (link name =
body name). MuJoCo's parent filter, which skips a body against its parent's weld body (the
SO-101's camera mount, welded to the gripper, against the moving jaw), is off for the sampling:
those links are not adjacent in the URDF, so MoveIt checks them and must know whether they touch.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from xml.etree import ElementTree as ET

import mujoco
import numpy as np

from physai_ros.errors import ModelError

SAMPLES = 50_000
"""Random states per robot. The Setup Assistant's default is 10,000, but the Panda's link0 and
link4 touch in only 1.3e-4 of the states (200,000 sampled): 10,000 miss them one time in four,
50,000 one time in 700."""

SEED = 0
ALWAYS_FRACTION = 0.95
"""A pair in contact in more than this share of the states is "Always" in collision."""

REASONS = ("Adjacent", "User", "Default", "Always", "Never")

Pair = tuple[str, str]
"""Two link names in alphabetical order, as the Setup Assistant writes them."""


@dataclass(frozen=True)
class UrdfJoint:
    """One URDF joint: kind, links, range [rad or m] and ``<mimic>`` (master, mult., offset)."""

    name: str
    kind: str
    parent: str
    child: str
    lower: float
    upper: float
    mimic: tuple[str, float, float] | None


@dataclass(frozen=True)
class Urdf:
    """What MoveIt reads from a URDF for its semantic set-up: links, which of them carry
    collision geometry, the root link and the joints (in file order)."""

    name: str
    links: tuple[str, ...]
    collision_links: frozenset[str]
    root: str
    joints: dict[str, UrdfJoint]

    @property
    def movable(self) -> list[UrdfJoint]:
        """Joints with a position (not fixed), mimic joints included."""
        return [j for j in self.joints.values() if j.kind != "fixed"]


def _bound(joint: ET.Element, key: str, default: float) -> float:
    """``<limit lower/upper>`` of a URDF joint; ``default`` where there is none (continuous
    joints: MoveIt samples them in [-pi, pi])."""
    limit = joint.find("limit")
    return default if limit is None else float(limit.get(key, default))


def parse_urdf(text: str) -> Urdf:
    """The parts of URDF ``text`` that the SRDF and the collision matrix depend on."""
    robot = ET.fromstring(text)
    links = tuple(link.get("name") for link in robot.findall("link"))
    joints = {}
    for element in robot.findall("joint"):
        mimic = element.find("mimic")
        if mimic is not None:
            mimic = (
                mimic.get("joint"),
                float(mimic.get("multiplier", 1.0)),
                float(mimic.get("offset", 0.0)),
            )
        joint = UrdfJoint(
            element.get("name"),
            element.get("type"),
            element.find("parent").get("link"),
            element.find("child").get("link"),
            _bound(element, "lower", -np.pi),
            _bound(element, "upper", np.pi),
            mimic,
        )
        joints[joint.name] = joint
    children = {j.child for j in joints.values()}
    roots = [link for link in links if link not in children]
    if len(roots) != 1:
        raise ModelError(f"URDF {robot.get('name')!r} needs one root link, found {roots}")
    collision = frozenset(
        link.get("name") for link in robot.findall("link") if link.find("collision") is not None
    )
    return Urdf(robot.get("name"), links, collision, roots[0], joints)


def with_mimics(urdf: Urdf, q: np.ndarray) -> np.ndarray:
    """``q`` (last axis in ``urdf.movable`` order) with every mimic joint set from its master."""
    q = np.array(q, dtype=float)
    index = {j.name: i for i, j in enumerate(urdf.movable)}
    for i, joint in enumerate(urdf.movable):
        if joint.mimic is not None:
            master, multiplier, offset = joint.mimic
            q[..., i] = multiplier * q[..., index[master]] + offset
    return q


def default_state(urdf: Urdf) -> np.ndarray:
    """MoveIt's default state (``urdf.movable`` order): 0 where the range allows it, else the
    middle of the range."""
    q = [0.0 if j.lower <= 0.0 <= j.upper else 0.5 * (j.lower + j.upper) for j in urdf.movable]
    return with_mimics(urdf, np.array(q))


def adjacent_pairs(urdf: Urdf) -> set[Pair]:
    """Links with geometry joined by a joint, directly or through links without geometry: the
    Setup Assistant joins all neighbours of a geometry-less link until nothing changes."""
    graph: dict[str, set[str]] = {link: set() for link in urdf.links}
    for joint in urdf.joints.values():
        graph[joint.parent].add(joint.child)
        graph[joint.child].add(joint.parent)
    changed = True
    while changed:
        changed = False
        for link in urdf.links:
            if link in urdf.collision_links:
                continue
            for a, b in itertools.combinations(sorted(graph[link]), 2):
                if b not in graph[a]:
                    graph[a].add(b)
                    graph[b].add(a)
                    changed = True
    return {
        (a, b)
        for a in urdf.collision_links
        for b in graph[a]
        if a < b and b in urdf.collision_links
    }


def mujoco_filtered_pairs(model: mujoco.MjModel, links: frozenset[str]) -> set[Pair]:
    """Pairs of ``links`` (body names) that MuJoCo never collides: an ``<exclude>``, or no geom
    pair whose contype/conaffinity match, and no explicit ``<pair>`` between them."""
    excluded = {(int(s) >> 16, int(s) & 0xFFFF) for s in model.exclude_signature}
    explicit = {
        tuple(sorted(model.geom_bodyid[[g1, g2]].tolist()))
        for g1, g2 in zip(model.pair_geom1, model.pair_geom2, strict=True)
    }
    colliding = (model.geom_contype != 0) | (model.geom_conaffinity != 0)
    out = set()
    for a, b in itertools.combinations(sorted(links), 2):
        body_a, body_b = sorted((model.body(a).id, model.body(b).id))
        g_a = np.flatnonzero((model.geom_bodyid == body_a) & colliding)
        g_b = np.flatnonzero((model.geom_bodyid == body_b) & colliding)
        match = (model.geom_contype[g_a][:, None] & model.geom_conaffinity[g_b][None, :]) | (
            model.geom_conaffinity[g_a][:, None] & model.geom_contype[g_b][None, :]
        )
        never = (body_a, body_b) in excluded or not match.any()
        if never and (body_a, body_b) not in explicit:
            out.add((a, b))
    return out


class ContactSampler:
    """Which link pairs MuJoCo finds in contact at URDF joint states.

    The parent filter is off; pairs in ``skip`` (already decided) are excluded, as the Setup
    Assistant stops checking them too, which also spares MuJoCo the neighbours that touch in
    every state (most of the narrow-phase work otherwise).
    """

    def __init__(self, spec: mujoco.MjSpec, urdf: Urdf, skip: Iterable[Pair] = ()) -> None:
        spec = spec.copy()  # the caller's spec stays as it was
        for a, b in skip:
            spec.add_exclude(bodyname1=a, bodyname2=b)
        self.model = spec.compile()
        self.model.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_FILTERPARENT)
        self.data = mujoco.MjData(self.model)
        self.names = [self.model.body(b).name for b in range(self.model.nbody)]
        self.qpos = np.array([self.model.joint(j.name).qposadr[0] for j in urdf.movable])

    def counts(self, states: np.ndarray) -> np.ndarray:
        """(nbody, nbody) int: for bodies i < j, in how many of ``states`` (rows,
        ``urdf.movable`` order) they have at least one contact."""
        model, data = self.model, self.data
        found = []
        for q in states:  # the loop does only this; the bookkeeping is vectorized below
            data.qpos[self.qpos] = q
            mujoco.mj_kinematics(model, data)
            mujoco.mj_collision(model, data)
            found.append(data.contact.geom.copy())
        state = np.repeat(np.arange(len(found)), [len(g) for g in found])
        bodies = np.sort(model.geom_bodyid[np.concatenate([np.zeros((0, 2), int), *found])], 1)
        unique = np.unique(np.column_stack([state, bodies]), axis=0)  # one per state and pair
        counts = np.zeros((model.nbody, model.nbody), dtype=int)
        np.add.at(counts, (unique[:, 1], unique[:, 2]), 1)
        return counts

    def pairs(self, selected: np.ndarray) -> set[Pair]:
        """The (i, j) entries set in ``selected`` as alphabetically ordered body-name pairs."""
        return {tuple(sorted((self.names[i], self.names[j]))) for i, j in np.argwhere(selected)}


def random_states(urdf: Urdf, count: int, seed: int) -> np.ndarray:
    """``count`` states (rows, ``urdf.movable`` order) as MoveIt's ``setToRandomPositions``
    draws them: each active joint uniform in its range, each mimic joint from its master."""
    lower = np.array([j.lower for j in urdf.movable])
    upper = np.array([j.upper for j in urdf.movable])
    return with_mimics(urdf, np.random.default_rng(seed).uniform(lower, upper, (count, lower.size)))


def disabled_collisions(
    spec: mujoco.MjSpec, urdf: Urdf, samples: int = SAMPLES, seed: int = SEED
) -> dict[Pair, str]:
    """Link pair -> reason (``REASONS``) for every pair MoveIt need not check; ``urdf`` must
    be generated from ``spec``'s model (same links, same colliding bodies)."""
    model = spec.compile()
    colliding = {
        model.body(model.geom_bodyid[g]).name
        for g in range(model.ngeom)
        if model.geom_contype[g] or model.geom_conaffinity[g]
    }
    if urdf.collision_links != colliding:
        raise ModelError(
            f"URDF collision links {sorted(urdf.collision_links)} are not the model's colliding "
            f"bodies {sorted(colliding)}: generate the URDF from this model"
        )
    reasons: dict[Pair, str] = dict.fromkeys(adjacent_pairs(urdf), "Adjacent")
    for pair in mujoco_filtered_pairs(model, urdf.collision_links):
        reasons.setdefault(pair, "User")
    sampler = ContactSampler(spec, urdf, skip=reasons)
    for pair in sampler.pairs(sampler.counts(default_state(urdf)[None]) > 0):
        reasons.setdefault(pair, "Default")
    counts = sampler.counts(random_states(urdf, samples, seed))
    for pair in sampler.pairs(counts > ALWAYS_FRACTION * samples):
        reasons.setdefault(pair, "Always")
    seen = sampler.pairs(counts > 0)
    for pair in itertools.combinations(sorted(urdf.collision_links), 2):
        if pair not in seen:
            reasons.setdefault(pair, "Never")
    return dict(sorted(reasons.items()))
