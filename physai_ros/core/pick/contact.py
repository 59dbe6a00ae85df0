"""Jaw contact sensing from MuJoCo: which jaw touches the object, and how hard.

Why a class: the jaw geoms are found by body name once (dm_control's habit: names to indices
once, then only integer work per step), because this runs after every physics step of a sweep.
Forces come from ``mj_contactForce`` (contact frame, normal first), which is correct for both
elliptic and pyramidal cones; reading ``efc_force`` directly is not (pyramidal rows are cone
edges, not (normal, tangents)).

``jaws_touch`` is the one definition of "both jaws touch": the pick node on the jaw wrenches,
the soft-pick runner on the sim's same wrenches, this sensor and lesson 16's vectorised test on
the jaws' normal-force sums all decide with it.

``friction_cone_mesh`` is the geometry of a contact's friction cone, for drawing it (RViz).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import NamedTuple

import mujoco
import numpy as np

from physai_ros.errors import InvalidInput


def jaws_touch(forces: Iterable[float], threshold: float = 0.0) -> bool:
    """Both jaws touch the object: every jaw's contact force [N] exceeds ``threshold`` [N].

    The pick node passes the magnitudes of the jaw wrenches and ``ros.touch_force``;
    ``JawContactSensor.read`` the per-jaw normal-force sums and 0 (any push). A NaN force
    (never measured) does not touch.
    """
    return all(f > threshold for f in forces)


class ContactPoint(NamedTuple):
    """One jaw contact for drawing: world position [m], unit normal pointing from the jaw into
    the other body, force the jaw applies there [N] (world), friction coefficient."""

    jaw: str
    position: np.ndarray
    normal: np.ndarray
    force: np.ndarray
    mu: float


class JawContacts(NamedTuple):
    """One reading of the jaws on the object.

    fixed_normal, moving_normal: summed normal force of each jaw on the object [N].
    both_touch: ``jaws_touch`` of the two sums at 0 (each jaw pushes).
    lift_force: vertical force of the jaws on the object, world z [N] (friction's share).
    contacts: number of jaw–object contacts with a force.
    fixed_net, moving_net: magnitude of each jaw's net contact force on the object [N], normal
    and friction summed as vectors: what a force sensor behind the jaw reads, and the sim
    bridge's jaw wrench. On a flat face it is about the normal sum; on a soft body the
    contacts' normals tilt apart and the two differ (by −1 to +13 % squeezed in the SO-101).
    """

    fixed_normal: float
    moving_normal: float
    both_touch: bool
    lift_force: float
    contacts: int
    fixed_net: float = 0.0
    moving_net: float = 0.0


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
    """Reads the normal force each jaw of a gripper puts on one object.

    model: compiled model; object_geom: name of the grasped geom (the cube), or of the grasped
    flex (a soft object) with ``flex=True``; fixed_jaw_body, moving_jaw_body: bodies whose
    colliding geoms form each jaw. A flex's side of a contact has geom −1 and the flex's id in
    ``contact.flex``.
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        object_geom: str,
        fixed_jaw_body: str,
        moving_jaw_body: str,
        *,
        flex: bool = False,
    ) -> None:
        kind = mujoco.mjtObj.mjOBJ_FLEX if flex else mujoco.mjtObj.mjOBJ_GEOM
        oid = mujoco.mj_name2id(model, kind, object_geom)
        if oid < 0:
            names = (
                (model.flex(i).name for i in range(model.nflex))
                if flex
                else (model.geom(i).name for i in range(model.ngeom))
            )
            what = "flex" if flex else "geom"
            raise InvalidInput(
                f"unknown {what} {object_geom!r}; valid named {what}s: {[n for n in names if n]}"
            )
        self.model = model
        self.flex = flex
        self.object_geom = -1 if flex else oid
        self.object_flex = oid if flex else -1
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

    def _side(self, contact) -> int:
        """0 or 1: the object's side of ``contact``; −1: the object is not in it."""
        for side in (0, 1):
            if self.flex:
                if contact.geom[side] < 0 and contact.flex[side] == self.object_flex:
                    return side
            elif contact.geom[side] == self.object_geom:
                return side
        return -1

    def jaw_contacts(self, data: mujoco.MjData) -> list[tuple[int, str]]:
        """(contact index, jaw) of every active jaw–object contact in ``data``."""
        return [(k, jaw) for k, jaw, _ in self._jaw_contacts(data)]

    def _jaw_contacts(self, data: mujoco.MjData) -> list[tuple[int, str, int]]:
        found = []
        for k in range(data.ncon):
            contact = data.contact[k]
            if contact.efc_address < 0:  # excluded or beyond margin: carries no force
                continue
            side = self._side(contact)
            if side < 0:
                continue
            jaw = self.jaw_of(int(contact.geom[1 - side]))
            if jaw is not None:
                found.append((k, jaw, side))
        return found

    def read(self, data: mujoco.MjData) -> JawContacts:
        """Per-jaw normal force sums, both-touch flag and the jaws' vertical force [N]."""
        sums = {"fixed": 0.0, "moving": 0.0}
        nets = {"fixed": np.zeros(3), "moving": np.zeros(3)}
        lift = 0.0
        count = 0
        f6 = np.zeros(6)
        for k, jaw, side in self._jaw_contacts(data):
            mujoco.mj_contactForce(self.model, data, k, f6)
            if f6[0] <= 0.0:
                continue
            # the frame's normal points from side 0 to side 1: the force acts on side 1
            world = data.contact[k].frame.reshape(3, 3).T @ f6[:3]
            on_object = world if side == 1 else -world
            sums[jaw] += float(f6[0])
            nets[jaw] += on_object
            lift += float(on_object[2])
            count += 1
        return JawContacts(
            fixed_normal=sums["fixed"],
            moving_normal=sums["moving"],
            both_touch=jaws_touch((sums["fixed"], sums["moving"])),
            lift_force=lift,
            contacts=count,
            fixed_net=float(np.linalg.norm(nets["fixed"])),
            moving_net=float(np.linalg.norm(nets["moving"])),
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
