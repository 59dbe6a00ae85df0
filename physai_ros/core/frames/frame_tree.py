"""A MuJoCo model's frame tree, walked from static model data and ``qpos`` alone (lesson 07).

Why not just call ``mj_kinematics``? Two reasons: a TF publisher needs the tree as *edges*
(parent name, ``T_parent_child``), not world poses; and the walk makes the kinematics explicit
and testable — it must reproduce MuJoCo's ``xpos/xmat``, ``site_xpos/site_xmat`` and
``cam_xpos/cam_xmat`` to ~1e-12 for every frame. Per body the pose is

    T_parent @ pose(body_pos, body_quat) @ (per joint, in order) motion

with motion = free: ``qpos`` *is* the world pose; ball: quaternion about the anchor ``jnt_pos``;
slide: translation ``axis · (q − qpos0)``; hinge: rotation by ``q − qpos0`` about the axis
through the anchor (``anchor @ move @ anchor⁻¹`` = ``[R, p − R p]``). Sites, fixed cameras and
inertial frames hang off their body by a fixed pose.

All names are looked up once and the index arrays frozen (dm_control's habit), so one call
costs a handful of batched numpy operations. Units: metres, radians.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np
from numpy.typing import ArrayLike, NDArray

from physai_ros.core.frames.spatial import as_finite, transform_inv
from physai_ros.errors import InvalidInput, ModelError

FloatArray = NDArray[np.float64]


class FrameKind(str, enum.Enum):
    """What a frame is attached as in MuJoCo."""

    BODY = "body"
    SITE = "site"
    CAMERA = "camera"
    INERTIAL = "inertial"


@dataclass(frozen=True)
class Frame:
    """One node of the tree: ``name`` hangs off ``parent`` (the root has no Frame)."""

    name: str
    kind: FrameKind
    mj_id: int  # id in MuJoCo's array of that kind (body, site, camera; body for inertial)
    parent: str
    static: bool  # True if T_parent_child does not depend on qpos (a /tf_static edge)


def _batch_quat_to_mat(q: FloatArray) -> FloatArray:
    """(N, 4) scalar-first quaternions (normalised here, as MuJoCo does) → (N, 3, 3)."""
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    w, x, y, z = q.T
    R = np.empty((len(q), 3, 3))
    R[:, 0, 0] = 1 - 2 * (y * y + z * z)
    R[:, 0, 1] = 2 * (x * y - w * z)
    R[:, 0, 2] = 2 * (x * z + w * y)
    R[:, 1, 0] = 2 * (x * y + w * z)
    R[:, 1, 1] = 1 - 2 * (x * x + z * z)
    R[:, 1, 2] = 2 * (y * z - w * x)
    R[:, 2, 0] = 2 * (x * z - w * y)
    R[:, 2, 1] = 2 * (y * z + w * x)
    R[:, 2, 2] = 1 - 2 * (x * x + y * y)
    return R


def _batch_poses(pos: FloatArray, quat: FloatArray) -> FloatArray:
    """(N, 3) positions and (N, 4) quaternions → (N, 4, 4) transforms."""
    T = np.zeros((len(pos), 4, 4))
    T[:, :3, :3] = _batch_quat_to_mat(quat) if len(pos) else np.zeros((0, 3, 3))
    T[:, :3, 3] = pos
    T[:, 3, 3] = 1.0
    return T


def _pose(pos: FloatArray, quat: FloatArray) -> FloatArray:
    """One (pos, quat) → 4x4, without the input checks of ``spatial`` (hot path)."""
    return _batch_poses(pos[None], quat[None])[0]


def _skew(v: FloatArray) -> FloatArray:
    """(N, 3) → (N, 3, 3) cross-product matrices."""
    K = np.zeros((len(v), 3, 3))
    K[:, 0, 1], K[:, 0, 2] = -v[:, 2], v[:, 1]
    K[:, 1, 0], K[:, 1, 2] = v[:, 2], -v[:, 0]
    K[:, 2, 0], K[:, 2, 1] = -v[:, 1], v[:, 0]
    return K


class FrameTree:
    """Bodies, sites, fixed cameras (and optionally inertial frames) of one ``MjModel``.

    ``frames[i]`` describes frame ``i``; ``parent_transforms(qpos)[i]`` is its
    ``T_parent_child`` and ``world_transforms(qpos)[i]`` its ``T_world_frame``. Cameras whose
    mode is not ``fixed`` (tracking, targetbody) depend on more than their body and are left
    out; their names are in ``skipped_cameras``.
    """

    def __init__(self, model: mujoco.MjModel, *, include_inertial: bool = False) -> None:
        self.nq = int(model.nq)
        self.root_name = model.body(0).name or "world"
        nbody = int(model.nbody)
        self._parent = np.array(model.body_parentid, dtype=int)
        self._fixed = _batch_poses(np.array(model.body_pos), np.array(model.body_quat))
        self._fixed[0] = np.eye(4)
        self._qpos0 = np.array(model.qpos0)

        jtype = np.array(model.jnt_type)
        jbody = np.array(model.jnt_bodyid)
        adr = np.array(model.jnt_qposadr)
        # k-th joint of its body: joints of one slot are applied together, slots in order.
        slot = np.array([j - model.body_jntadr[jbody[j]] for j in range(model.njnt)], dtype=int)
        self._slots: list[tuple[NDArray[np.int_], NDArray[np.int_]]] = []  # (joint ids, bodies)
        for k in range(int(slot.max()) + 1 if model.njnt else 0):
            ids = np.flatnonzero((slot == k) & (jtype != mujoco.mjtJoint.mjJNT_FREE))
            self._slots.append((ids, jbody[ids]))
        self._jtype, self._adr = jtype, adr
        self._anchor = np.array(model.jnt_pos)
        axis = np.array(model.jnt_axis)
        self._axis = axis / np.linalg.norm(axis, axis=1, keepdims=True).clip(min=1e-300)
        self._hinge = np.flatnonzero(jtype == mujoco.mjtJoint.mjJNT_HINGE)
        self._K = _skew(self._axis[self._hinge])
        self._K2 = self._K @ self._K
        self._slide = np.flatnonzero(jtype == mujoco.mjtJoint.mjJNT_SLIDE)
        self._ball = np.flatnonzero(jtype == mujoco.mjtJoint.mjJNT_BALL)
        free = np.flatnonzero(jtype == mujoco.mjtJoint.mjJNT_FREE)
        self._hinge_adr = adr[self._hinge]
        self._hinge_q0 = self._qpos0[self._hinge_adr]
        self._eye3, self._eye4 = np.eye(3), np.eye(4)
        self._eye_joints = np.tile(np.eye(4), (len(jtype), 1, 1))
        self._mocap = np.flatnonzero(np.array(model.body_mocapid) >= 0)

        depth = np.zeros(nbody, dtype=int)
        for b in range(1, nbody):  # MuJoCo stores parents before children
            depth[b] = depth[self._parent[b]] + 1
        # MuJoCo allows free joints only in children of the world, so local = world = qpos.
        self._free = list(zip(jbody[free].tolist(), adr[free].tolist(), strict=True))
        # Bodies grouped by depth: one batched product per level; a lone body (a serial
        # chain) is indexed by int, which numpy serves several times faster than fancy
        # indexing.
        self._levels: list[tuple[Any, Any]] = []
        for d in range(1, int(depth.max()) + 1 if nbody > 1 else 1):
            ids = np.flatnonzero(depth == d)
            if len(ids) == 1:
                self._levels.append((int(ids[0]), int(self._parent[ids[0]])))
            else:
                self._levels.append((ids, self._parent[ids]))

        moving = np.zeros(nbody, dtype=bool)
        moving[jbody] = True
        moving[self._mocap] = True

        cams = [
            c for c in range(model.ncam) if model.cam_mode[c] == mujoco.mjtCamLight.mjCAMLIGHT_FIXED
        ]
        self.skipped_cameras = tuple(
            model.camera(c).name for c in range(model.ncam) if c not in cams
        )
        self._site_body = np.array(model.site_bodyid, dtype=int)
        self._site_T = _batch_poses(np.array(model.site_pos), np.array(model.site_quat))
        self._cam_ids = np.array(cams, dtype=int)
        self._cam_body = np.array(model.cam_bodyid, dtype=int)[self._cam_ids]
        self._cam_T = _batch_poses(
            np.array(model.cam_pos)[self._cam_ids], np.array(model.cam_quat)[self._cam_ids]
        )
        inertial = np.arange(1, nbody) if include_inertial else np.zeros(0, dtype=int)
        self._inertial_body = inertial
        self._inertial_T = _batch_poses(
            np.array(model.body_ipos)[inertial], np.array(model.body_iquat)[inertial]
        )

        used = {self.root_name}
        body_names = [self.root_name] + [
            self._unique(model.body(b).name or f"body_{b}", FrameKind.BODY, used)
            for b in range(1, nbody)
        ]
        frames = [
            Frame(body_names[b], FrameKind.BODY, b, body_names[self._parent[b]], not moving[b])
            for b in range(1, nbody)
        ]
        for s in range(model.nsite):
            name = self._unique(model.site(s).name or f"site_{s}", FrameKind.SITE, used)
            frames.append(Frame(name, FrameKind.SITE, s, body_names[self._site_body[s]], True))
        for c, b in zip(self._cam_ids, self._cam_body, strict=True):
            name = self._unique(model.camera(c).name or f"camera_{c}", FrameKind.CAMERA, used)
            frames.append(Frame(name, FrameKind.CAMERA, int(c), body_names[b], True))
        for b in inertial:
            name = self._unique(f"{body_names[b]}_inertial", FrameKind.INERTIAL, used)
            frames.append(Frame(name, FrameKind.INERTIAL, int(b), body_names[b], True))
        self.frames: tuple[Frame, ...] = tuple(frames)
        self.names: tuple[str, ...] = tuple(f.name for f in frames)
        self.parent_names: tuple[str, ...] = tuple(f.parent for f in frames)
        self.static_mask = np.array([f.static for f in frames], dtype=bool)
        self.static_mask.flags.writeable = False
        self._index = {name: i for i, name in enumerate(self.names)}
        self._index_of_kind = {(f.kind, f.mj_id): i for i, f in enumerate(frames)}

    @staticmethod
    def _unique(name: str, kind: FrameKind, used: set[str]) -> str:
        """A TF-unique name: MuJoCo lets a body and a site share a name, TF does not."""
        candidate = name if name not in used else f"{name}_{kind.value}"
        suffix = 1
        while candidate in used:
            candidate, suffix = f"{name}_{kind.value}{suffix}", suffix + 1
        used.add(candidate)
        return candidate

    # ---------------------------------------------------------------- look-ups
    def index(self, name: str) -> int:
        """Frame index of ``name``; unknown names list the valid ones."""
        try:
            return self._index[name]
        except KeyError:
            raise InvalidInput(
                f"unknown frame {name!r}; valid frames: {', '.join(self.names)}"
            ) from None

    def index_of(self, kind: FrameKind, mj_id: int) -> int:
        """Frame index of MuJoCo object ``mj_id`` of ``kind`` (e.g. a site id)."""
        try:
            return self._index_of_kind[(FrameKind(kind), int(mj_id))]
        except KeyError:
            raise InvalidInput(f"no {FrameKind(kind).value} frame with MuJoCo id {mj_id}") from None

    # ---------------------------------------------------------------- the walk
    def _check_qpos(self, qpos: ArrayLike) -> FloatArray:
        return as_finite(qpos, (self.nq,), "qpos")

    def _locals(
        self, q: FloatArray, mocap_pos: FloatArray | None, mocap_quat: FloatArray | None
    ) -> FloatArray:
        """Per body ``T_parent_body`` (nbody, 4, 4)."""
        local = self._fixed.copy()
        if mocap_pos is not None and mocap_quat is not None:
            local[self._mocap] = _batch_poses(mocap_pos, mocap_quat)
        motion = self._eye_joints.copy()
        if len(self._hinge):
            angle = q[self._hinge_adr] - self._hinge_q0
            R = self._eye3 + np.sin(angle)[:, None, None] * self._K
            R += (1.0 - np.cos(angle))[:, None, None] * self._K2
            self._about_anchor(motion, self._hinge, R)
        if len(self._ball):
            quats = np.stack([q[a : a + 4] for a in self._adr[self._ball]])
            self._about_anchor(motion, self._ball, _batch_quat_to_mat(quats))
        if len(self._slide):
            dist = q[self._adr[self._slide]] - self._qpos0[self._adr[self._slide]]
            motion[self._slide, :3, 3] = self._axis[self._slide] * dist[:, None]
        for joints, bodies in self._slots:
            local[bodies] = local[bodies] @ motion[joints]
        for b, a in self._free:  # a child of the world: local pose = world pose = qpos
            local[b] = _pose(q[a : a + 3], q[a + 3 : a + 7])
        return local

    def _world(self, local: FloatArray) -> FloatArray:
        """``T_world_body`` (nbody, 4, 4) by one pass in depth order (parents first)."""
        world = np.empty_like(local)
        world[0] = self._eye4
        for level, parents in self._levels:
            world[level] = world[parents] @ local[level]
        return world

    def _about_anchor(self, motion: FloatArray, joints: NDArray[np.int_], R: FloatArray) -> None:
        """Rotation ``R`` about the anchor ``p``: ``anchor @ R @ anchor⁻¹ = [R, p − R p]``."""
        p = self._anchor[joints]
        motion[joints, :3, :3] = R
        motion[joints, :3, 3] = p - np.einsum("nij,nj->ni", R, p)

    def body_world(
        self,
        qpos: ArrayLike,
        mocap_pos: ArrayLike | None = None,
        mocap_quat: ArrayLike | None = None,
    ) -> FloatArray:
        """``T_world_body`` for every MuJoCo body id (index 0 is the world), (nbody, 4, 4).

        Mocap bodies sit at their model pose unless ``mocap_pos``/``mocap_quat`` are given.
        """
        q = self._check_qpos(qpos)
        return self._world(self._locals(q, *self._mocap_args(mocap_pos, mocap_quat)))

    def _mocap_args(
        self, mocap_pos: ArrayLike | None, mocap_quat: ArrayLike | None
    ) -> tuple[FloatArray | None, FloatArray | None]:
        if mocap_pos is None and mocap_quat is None:
            return None, None
        n = len(self._mocap)
        return as_finite(mocap_pos, (n, 3), "mocap_pos"), as_finite(
            mocap_quat, (n, 4), "mocap_quat"
        )

    def world_transforms(
        self,
        qpos: ArrayLike,
        mocap_pos: ArrayLike | None = None,
        mocap_quat: ArrayLike | None = None,
    ) -> FloatArray:
        """``T_world_frame`` of every frame, (len(frames), 4, 4), in ``frames`` order."""
        mocap = self._mocap_args(mocap_pos, mocap_quat)
        q = self._check_qpos(qpos)
        world = self._world(self._locals(q, *mocap))
        return np.concatenate(
            [
                world[1:],
                world[self._site_body] @ self._site_T,
                world[self._cam_body] @ self._cam_T,
                world[self._inertial_body] @ self._inertial_T,
            ]
        )

    def parent_transforms(
        self,
        qpos: ArrayLike,
        mocap_pos: ArrayLike | None = None,
        mocap_quat: ArrayLike | None = None,
    ) -> FloatArray:
        """``T_parent_frame`` of every frame (what a TF message carries), in ``frames`` order."""
        mocap = self._mocap_args(mocap_pos, mocap_quat)
        q = self._check_qpos(qpos)
        local = self._locals(q, *mocap)
        return np.concatenate([local[1:], self._site_T, self._cam_T, self._inertial_T])

    def transform(self, qpos: ArrayLike, target: str, source: str) -> FloatArray:
        """``T_target_source``: maps coordinates in ``source`` to ``target``."""
        world = self.world_transforms(qpos)
        T_WT = np.eye(4) if target == self.root_name else world[self.index(target)]
        T_WS = np.eye(4) if source == self.root_name else world[self.index(source)]
        return transform_inv(T_WT) @ T_WS


def require_names(model: mujoco.MjModel, kind: FrameKind, names: tuple[str, ...]) -> None:
    """Raise ModelError unless ``model`` has every ``names`` of ``kind`` (listing what it has)."""
    objtype = {
        FrameKind.BODY: mujoco.mjtObj.mjOBJ_BODY,
        FrameKind.SITE: mujoco.mjtObj.mjOBJ_SITE,
        FrameKind.CAMERA: mujoco.mjtObj.mjOBJ_CAMERA,
    }[kind]
    count = {FrameKind.BODY: model.nbody, FrameKind.SITE: model.nsite, FrameKind.CAMERA: model.ncam}
    have = [mujoco.mj_id2name(model, objtype, i) for i in range(count[kind])]
    missing = [n for n in names if n not in have]
    if missing:
        raise ModelError(f"model lacks {kind.value}(s) {missing}; it has {have}")
