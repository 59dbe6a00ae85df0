"""Jaw contact sensing from MuJoCo: which jaw touches the object, and how hard.

Why a class: the jaw geoms are found by body name once (dm_control's habit: names to indices
once, then only integer work per step), because this runs after every physics step of a sweep.
Forces come from ``mj_contactForce`` (contact frame, normal first), which is correct for both
elliptic and pyramidal cones; reading ``efc_force`` directly is not (pyramidal rows are cone
edges, not (normal, tangents)).

``friction_cone_mesh`` is the geometry of a contact's friction cone, for drawing it (RViz).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import mujoco
import numpy as np

from physai_ros.errors import InvalidInput


class JawContacts(NamedTuple):
    """One reading of the jaws on the object.

    fixed_normal, moving_normal: summed normal force of each jaw on the object [N].
    both_touch: both sums > 0 (each jaw pushes).
    lift_force: vertical force of the jaws on the object, world z [N] (friction's share).
    contacts: number of jaw–object contacts with a force.
    """

    fixed_normal: float
    moving_normal: float
    both_touch: bool
    lift_force: float
    contacts: int


def _body_geoms(model: mujoco.MjModel, body: str) -> frozenset[int]:
    bid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body)
    if bid < 0:
        valid = [model.body(i).name for i in range(model.nbody)]
        raise InvalidInput(f"unknown body {body!r}; valid bodies: {valid}")
    collide = (model.geom_contype != 0) | (model.geom_conaffinity != 0)
    return frozenset(int(g) for g in np.flatnonzero((model.geom_bodyid == bid) & collide))


def contact_force_on(
    model: mujoco.MjModel, data: mujoco.MjData, k: int, geom: int
) -> tuple[np.ndarray, np.ndarray]:
    """Force of contact ``k`` acting on ``geom``: (contact-frame (n, t1, t2) [N], world [N]).

    MuJoCo's contact frame normal points from geom1 to geom2, so the reported force acts on
    geom2; when ``geom`` is geom1 the sign flips.
    """
    f6 = np.zeros(6)
    mujoco.mj_contactForce(model, data, k, f6)
    contact = data.contact[k]
    world = contact.frame.reshape(3, 3).T @ f6[:3]
    if contact.geom1 == geom:
        world = -world
    return f6[:3].copy(), world


class JawContactSensor:
    """Reads the normal force each jaw of a gripper puts on one object geom.

    model: compiled model; object_geom: name of the grasped geom (the cube);
    fixed_jaw_body, moving_jaw_body: bodies whose colliding geoms form each jaw.
    """

    def __init__(
        self, model: mujoco.MjModel, object_geom: str, fixed_jaw_body: str, moving_jaw_body: str
    ) -> None:
        gid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, object_geom)
        if gid < 0:
            valid = [model.geom(i).name for i in range(model.ngeom) if model.geom(i).name]
            raise InvalidInput(f"unknown geom {object_geom!r}; valid named geoms: {valid}")
        self.model = model
        self.object_geom = gid
        self.fixed = _body_geoms(model, fixed_jaw_body)
        self.moving = _body_geoms(model, moving_jaw_body)
        if not self.fixed or not self.moving:
            raise InvalidInput(
                f"jaw bodies {fixed_jaw_body!r} / {moving_jaw_body!r} have no colliding geoms"
            )

    def jaw_of(self, other: int) -> str | None:
        """'fixed', 'moving' or None for a geom touching the object."""
        if other in self.fixed:
            return "fixed"
        return "moving" if other in self.moving else None

    def jaw_contacts(self, data: mujoco.MjData) -> list[tuple[int, str]]:
        """(contact index, jaw) of every active jaw–object contact in ``data``."""
        found = []
        obj = self.object_geom
        for k in range(data.ncon):
            contact = data.contact[k]
            if contact.efc_address < 0:  # excluded or beyond margin: carries no force
                continue
            if contact.geom1 == obj:
                jaw = self.jaw_of(int(contact.geom2))
            elif contact.geom2 == obj:
                jaw = self.jaw_of(int(contact.geom1))
            else:
                continue
            if jaw is not None:
                found.append((k, jaw))
        return found

    def read(self, data: mujoco.MjData) -> JawContacts:
        """Per-jaw normal force sums, both-touch flag and the jaws' vertical force [N]."""
        sums = {"fixed": 0.0, "moving": 0.0}
        lift = 0.0
        count = 0
        for k, jaw in self.jaw_contacts(data):
            local, world = contact_force_on(self.model, data, k, self.object_geom)
            if local[0] <= 0.0:
                continue
            sums[jaw] += float(local[0])
            lift += float(world[2])
            count += 1
        return JawContacts(
            fixed_normal=sums["fixed"],
            moving_normal=sums["moving"],
            both_touch=sums["fixed"] > 0.0 and sums["moving"] > 0.0,
            lift_force=lift,
            contacts=count,
        )


def friction_cone_mesh(
    apex: np.ndarray, axis: np.ndarray, mu: float, height: float, segments: int
) -> np.ndarray:
    """Triangles (3·segments, 3) of a friction cone: apex at the contact, opening along
    ``axis`` with half-angle atan(μ), ``height`` [m] tall (RViz TRIANGLE_LIST order)."""
    axis = axis / np.linalg.norm(axis)
    helper = np.array([1.0, 0.0, 0.0]) if abs(axis[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    u = np.cross(axis, helper)
    u /= np.linalg.norm(u)
    w = np.cross(axis, u)
    angles = np.linspace(0.0, 2.0 * math.pi, segments + 1)
    rim = apex + height * (axis + mu * (np.outer(np.cos(angles), u) + np.outer(np.sin(angles), w)))
    tris = np.empty((segments, 3, 3))
    tris[:, 0] = apex
    tris[:, 1] = rim[:-1]
    tris[:, 2] = rim[1:]
    return tris.reshape(-1, 3)
