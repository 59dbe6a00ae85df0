"""Damped-least-squares inverse kinematics for one site, over a chosen subset of joints.

Why DLS: near singular poses (a stretched SO-101, a Panda wrist flip) the plain pseudo-inverse
asks for huge joint steps; the damping ``λ`` trades a little accuracy far from the target for
bounded steps, and the error still goes to zero when the target is reachable. The Jacobian is
MuJoCo's own (``mj_jacSite``), so the solver agrees with the simulator by construction.

The solver works on a scratch ``MjData``: the caller's state (qpos, qvel, contacts, warm
starts) is never touched, so it can be called from inside a running simulation loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import mujoco
import numpy as np

from physai_ros.errors import InvalidInput

_MAX_STEP = 0.2  # [rad or m] largest joint change per DLS iteration
_ONE_DOF_JOINTS = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))


class IKResult(NamedTuple):
    """Outcome of :func:`solve_ik`.

    q: joint values for ``joint_names`` in that order [rad or m].
    error: remaining position error of the site [m].
    iterations: DLS steps taken.
    converged: position error below ``tol`` (and, with a target orientation, the orientation
        error below ``rot_tol`` [rad]).
    """

    q: np.ndarray
    error: float
    iterations: int
    converged: bool


def _name_to_id(model: mujoco.MjModel, obj: mujoco.mjtObj, name: str, kind: str) -> int:
    """Look a name up once and fail with the list of valid names."""
    idx = mujoco.mj_name2id(model, obj, name)
    if idx < 0:
        count = {"site": model.nsite, "joint": model.njnt}[kind]
        valid = [mujoco.mj_id2name(model, obj, i) for i in range(count)]
        raise InvalidInput(f"unknown {kind} {name!r}; valid {kind}s: {valid}")
    return idx


def _quat_error_world(target_quat: np.ndarray, xmat: np.ndarray) -> np.ndarray:
    """Rotation vector [rad], world frame, that takes the current site frame to the target."""
    current = np.empty(4)
    mujoco.mju_mat2Quat(current, xmat)
    local = np.empty(3)
    mujoco.mju_subQuat(local, target_quat, current)  # current * quat(local) = target
    return xmat.reshape(3, 3) @ local


def solve_ik(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    site_name: str,
    target_pos: Sequence[float] | np.ndarray,
    joint_names: Sequence[str],
    q_init: Sequence[float] | np.ndarray,
    target_quat: Sequence[float] | np.ndarray | None = None,
    *,
    damping: float = 1e-3,
    max_iters: int = 300,
    tol: float = 1e-5,
    rot_tol: float = 1e-4,
    rot_weight: float = 0.2,
) -> IKResult:
    """Joint values that put ``site_name`` at ``target_pos`` (and ``target_quat``) in the world.

    model, data: the model and a state that fixes every joint not in ``joint_names`` (its
        qpos is copied into a scratch MjData; ``data`` itself is not modified).
    target_pos: site position in the world frame [m].
    joint_names: the hinge/slide joints IK may move; the others stay as in ``data``.
    q_init: start values for those joints [rad or m].
    target_quat: optional site orientation in the world frame (w, x, y, z).
    damping: DLS damping λ [m]; larger = smaller, safer steps near singularities.
    max_iters: iteration cap; when hit, the result has ``converged=False``.
    tol: position tolerance [m]; rot_tol: orientation tolerance [rad].
    rot_weight: how many metres of position error one radian of orientation error is worth.

    Joint ranges of limited joints are respected: every iterate is clipped into them. A target
    outside the reachable set therefore returns ``converged=False`` with the closest pose found,
    never an exception; inputs that cannot be meaningful (unknown names, NaN, wrong shapes) raise
    :class:`InvalidInput`.
    """
    site_id = _name_to_id(model, mujoco.mjtObj.mjOBJ_SITE, site_name, "site")
    joint_ids = [_name_to_id(model, mujoco.mjtObj.mjOBJ_JOINT, n, "joint") for n in joint_names]
    if not joint_ids:
        raise InvalidInput("joint_names is empty; give at least one hinge or slide joint")
    for name, j in zip(joint_names, joint_ids, strict=True):
        if int(model.jnt_type[j]) not in _ONE_DOF_JOINTS:
            raise InvalidInput(
                f"joint {name!r} is not a hinge or slide joint; IK moves 1-DoF joints"
            )
    target = np.asarray(target_pos, dtype=float)
    q = np.asarray(q_init, dtype=float).copy()
    if target.shape != (3,) or not np.all(np.isfinite(target)):
        raise InvalidInput(f"target_pos must be 3 finite numbers [m], got {target_pos!r}")
    if q.shape != (len(joint_ids),) or not np.all(np.isfinite(q)):
        raise InvalidInput(f"q_init must be {len(joint_ids)} finite numbers, got {q_init!r}")
    quat = None
    if target_quat is not None:
        quat = np.asarray(target_quat, dtype=float)
        norm = np.linalg.norm(quat) if quat.shape == (4,) else 0.0
        if not np.isfinite(norm) or norm < 1e-9:
            raise InvalidInput(f"target_quat must be a non-zero (w, x, y, z), got {target_quat!r}")
        quat = quat / norm

    qadr = model.jnt_qposadr[joint_ids]
    dadr = model.jnt_dofadr[joint_ids]
    limited = model.jnt_limited[joint_ids].astype(bool)
    lo = np.where(limited, model.jnt_range[joint_ids, 0], -np.inf)
    hi = np.where(limited, model.jnt_range[joint_ids, 1], np.inf)
    q = np.clip(q, lo, hi)

    scratch = mujoco.MjData(model)
    scratch.qpos[:] = data.qpos
    scratch.mocap_pos[:] = data.mocap_pos
    scratch.mocap_quat[:] = data.mocap_quat
    jacp = np.zeros((3, model.nv))
    jacr = np.zeros((3, model.nv))
    rows = 6 if quat is not None else 3
    eye = np.eye(rows)

    pos_err = rot_err = np.inf
    iterations = 0
    for iterations in range(max_iters + 1):
        scratch.qpos[qadr] = q
        mujoco.mj_kinematics(model, scratch)
        mujoco.mj_comPos(model, scratch)  # cdof, which mj_jacSite needs
        e_pos = target - scratch.site_xpos[site_id]
        pos_err = float(np.linalg.norm(e_pos))
        if quat is not None:
            e_rot = _quat_error_world(quat, scratch.site_xmat[site_id])
            rot_err = float(np.linalg.norm(e_rot))
        else:
            rot_err = 0.0
        if (pos_err < tol and rot_err < rot_tol) or iterations == max_iters:
            break
        mujoco.mj_jacSite(model, scratch, jacp, jacr, site_id)
        if quat is not None:
            jac = np.vstack([jacp[:, dadr], rot_weight * jacr[:, dadr]])
            err = np.concatenate([e_pos, rot_weight * e_rot])
        else:
            jac, err = jacp[:, dadr], e_pos
        dq = jac.T @ np.linalg.solve(jac @ jac.T + damping**2 * eye, err)
        largest = float(np.max(np.abs(dq)))
        if largest > _MAX_STEP:  # far from the target the linearisation lies: take a short step
            dq *= _MAX_STEP / largest
        q = np.clip(q + dq, lo, hi)
    converged = bool(pos_err < tol and rot_err < rot_tol)
    return IKResult(q=q, error=pos_err, iterations=iterations, converged=converged)
