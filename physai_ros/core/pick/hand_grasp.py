"""A planned three-finger grasp made executable: where the palm goes for the object where it
lies, and how hard each finger's motor pushes per newton at its contact.

The planner (``plan_grasp``, seed 003) plans for the object at one place (``object_pose``) and
answers with the arm's and hand's joints there, the contacts and their outward normals in the
object frame, and a force target per finger. The hand pick meets the object where it lies, so
what carries over is the palm's pose *relative to the object*: found once by forward
kinematics of the planned arm joints, then put on the measured object and solved for the arm
(damped-least-squares IK on the palm site, the planned joints as the seed). The object frame is
taken as translated, not turned (a sphere has no orientation; a turned object needs a new
plan).

Each finger has one motor on its inner joint, the outer joint following at the model's coupling
c (its joint equality, 0.3443): a tip
force f along the contact's inward normal n costs the motor ``τ = (J_inner + c·J_outer)ᵀ n · f``
(J the positional Jacobian of the contact point on the finger's outer link). That factor, the
finger's *lever* [m], turns a force target into an effort for the force close (``ForceClose``
regulates on the measured force; the lever sets its gain and the capacity check, cap / lever).

MuJoCo only (no ROS): the model is the sim bridge's (``load_robot_spec("panda_barrett")``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import mujoco
import numpy as np

from physai_ros.core.motion.kinematics import IKResult, solve_ik
from physai_ros.errors import InvalidInput
from physai_ros.models.barrett_hand import FINGERS, PANDA_PREFIX
from physai_ros.models.joints import PANDA_ARM_JOINTS

PALM_SITE = PANDA_PREFIX + "bh_palm"
SPREAD_JOINTS = tuple(PANDA_PREFIX + f"bh_spread_{f}" for f in ("f1", "f2"))
INNER_JOINTS = tuple(PANDA_PREFIX + f"bh_{f}_inner" for f in FINGERS)
OUTER_JOINTS = tuple(PANDA_PREFIX + f"bh_{f}_outer" for f in FINGERS)
OUTER_BODIES = tuple(PANDA_PREFIX + f"bh_{f}_outer" for f in FINGERS)
PLANNED_HAND = (SPREAD_JOINTS[0], *INNER_JOINTS)  # what plan_grasp's joint_names list after the arm
MIN_LEVER = 0.005  # [m] a finger pushing less than this along its contact normal cannot press it


class PlannedGrasp(NamedTuple):
    """A plan as the hand pick uses it (world frame of the plan, SI units).

    arm: planned arm joints [rad] (a seed for IK); spread [rad]; inner (3,) [rad] per finger
    F1..F3; targets (3,) [N] per finger; contacts, normals (3, 3): contact points [m] and
    outward unit normals, object frame, per finger; object_pos: where the plan put the object's
    centre of mass [m]."""

    arm: np.ndarray
    spread: float
    inner: np.ndarray
    targets: np.ndarray
    contacts: np.ndarray
    normals: np.ndarray
    object_pos: np.ndarray


def planned_grasp(
    joint_names: Sequence[str],
    joint_positions: Sequence[float],
    targets: Sequence[float],
    contacts: np.ndarray,
    normals: np.ndarray,
    object_pos: Sequence[float],
) -> PlannedGrasp:
    """Check a ``plan_grasp`` answer for the Barrett hand on the Panda and keep what the pick
    needs. Raises InvalidInput naming what is missing or malformed (the planner's interface is
    the contract: a wrong hand or a partial answer must not move the arm)."""
    names = list(joint_names)
    want = [*PANDA_ARM_JOINTS, *PLANNED_HAND]
    if names != want:
        raise InvalidInput(f"the plan's joints {names} are not the Barrett-on-Panda's {want}")
    q = np.asarray(joint_positions, dtype=float)
    contacts, normals = np.asarray(contacts, float), np.asarray(normals, float)
    targets = np.asarray(targets, dtype=float)
    obj = np.asarray(object_pos, dtype=float)
    shapes = (q.shape, targets.shape, contacts.shape, normals.shape, obj.shape)
    if shapes != ((len(want),), (3,), (3, 3), (3, 3), (3,)):
        raise InvalidInput(f"a three-finger plan needs 3 targets, contacts and normals: {shapes}")
    values = np.concatenate([q, targets, contacts.ravel(), normals.ravel(), obj])
    if not np.all(np.isfinite(values)) or np.any(targets <= 0.0):
        raise InvalidInput("the plan has non-finite values or a force target <= 0")
    n = len(PANDA_ARM_JOINTS)
    return PlannedGrasp(q[:n], float(q[n]), q[n + 1 :], targets, contacts, normals, obj)


class HandPoses(NamedTuple):
    """Arm joints [rad] of the pick's three hand poses for the object where it lies:
    ``approach`` (the palm backed off along its normal), ``grasp`` (the plan's palm pose on
    the object) and ``lift`` (that raised); ``error``: worst IK position error [m]."""

    approach: np.ndarray
    grasp: np.ndarray
    lift: np.ndarray
    error: float


class HandKinematics:
    """The Panda with the Barrett hand: palm IK for the pick's poses and the fingers' levers.

    model: the robot as the simulation has it (``load_robot_spec("panda_barrett")``, placed
    where its base is); ik: ``solve_ik`` keyword arguments (tol, rot_tol, damping, max_iters).
    A scratch ``MjData`` keeps every caller's state untouched.
    """

    def __init__(self, model: mujoco.MjModel, ik: dict[str, float] | None = None) -> None:
        self.model = model
        self.data = mujoco.MjData(model)
        self.ik = {k: (int(v) if k == "max_iters" else float(v)) for k, v in (ik or {}).items()}
        self._site = model.site(PALM_SITE).id
        self._arm = [int(model.joint(j).qposadr[0]) for j in PANDA_ARM_JOINTS]
        actuators = [model.actuator(f"{PANDA_PREFIX}bh_{f}").id for f in FINGERS]
        self.finger_limits = {  # the force close's hand facts (HandPickConfig HAND_KEYS)
            "cap": float(np.min(model.actuator_forcerange[actuators, 1])),  # [N m] motor limit
            "closed": float(np.min([model.joint(j).range[1] for j in INNER_JOINTS])),  # [rad]
        }
        # outer = c × inner, per finger, as the model's joint equalities say (polycoef[1])
        self.coupling = np.array(
            [model.eq_data[model.equality(f"{PANDA_PREFIX}bh_{f}_coupling").id, 1] for f in FINGERS]
        )

    def _place(self, arm: np.ndarray, spread: float = 0.0, inner: np.ndarray | None = None):
        d = self.data
        d.qpos[:] = self.model.qpos0
        d.qpos[self._arm] = arm
        inner = np.zeros(3) if inner is None else inner
        for joint in SPREAD_JOINTS:
            d.qpos[self.model.joint(joint).qposadr[0]] = spread
        for k in range(3):
            d.qpos[self.model.joint(INNER_JOINTS[k]).qposadr[0]] = inner[k]
            d.qpos[self.model.joint(OUTER_JOINTS[k]).qposadr[0]] = self.coupling[k] * inner[k]
        mujoco.mj_kinematics(self.model, d)
        mujoco.mj_comPos(self.model, d)

    def palm_pose(self, arm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Palm site position [m] and orientation quaternion (w, x, y, z) for ``arm`` [rad]."""
        self._place(np.asarray(arm, float))
        quat = np.empty(4)
        mujoco.mju_mat2Quat(quat, self.data.site_xmat[self._site])
        return self.data.site_xpos[self._site].copy(), quat

    def solve(self, target: np.ndarray, quat: np.ndarray, seed: np.ndarray) -> IKResult:
        """Arm joints that put the palm at ``target`` [m] with orientation ``quat``."""
        self._place(np.asarray(seed, float))
        return solve_ik(
            self.model, self.data, PALM_SITE, target, PANDA_ARM_JOINTS, seed, quat, **self.ik
        )

    def poses(
        self, grasp: PlannedGrasp, object_pos: np.ndarray, approach: float, lift: float
    ) -> HandPoses:
        """The approach, grasp and lift joints for the object's centre of mass at
        ``object_pos`` [m]: the planned palm pose moved with the object, backed off by
        ``approach`` [m] along the palm normal, raised by ``lift`` [m]. Raises InvalidInput when
        the arm does not reach one of them ("object out of reach")."""
        palm, quat = self.palm_pose(grasp.arm)
        at = np.asarray(object_pos, float) + (palm - grasp.object_pos)
        normal = self.data.site_xmat[self._site].reshape(3, 3)[:, 2]  # palm normal, to the object
        out, errors = {}, []
        targets = {
            "grasp": at,
            "approach": at - approach * normal,
            "lift": at + np.array([0.0, 0.0, lift]),
        }
        for name in ("grasp", "approach", "lift"):
            seed = grasp.arm if name == "grasp" else out["grasp"]
            result = self.solve(targets[name], quat, seed)
            if not result.converged:
                raise InvalidInput(
                    f"IK did not converge for the {name} pose (palm at "
                    f"{np.round(targets[name], 4).tolist()} m, error {result.error * 1e3:.1f} mm): "
                    "object out of reach?"
                )
            out[name] = np.asarray(result.q, float)
            errors.append(result.error)
        return HandPoses(out["approach"], out["grasp"], out["lift"], max(errors))

    def levers(self, grasp: PlannedGrasp) -> np.ndarray:
        """Per finger, the motor torque per newton of tip force along the contact's inward
        normal [m], at the planned configuration (module docstring). Raises InvalidInput for a
        finger that cannot press its contact (lever below MIN_LEVER)."""
        m, d = self.model, self.data
        self._place(grasp.arm, grasp.spread, grasp.inner)
        jacp, jacr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
        out = np.empty(3)
        for k in range(3):
            point = grasp.object_pos + grasp.contacts[k]
            mujoco.mj_jac(m, d, jacp, jacr, point, m.body(OUTER_BODIES[k]).id)
            inner = int(m.joint(INNER_JOINTS[k]).dofadr[0])
            outer = int(m.joint(OUTER_JOINTS[k]).dofadr[0])
            along = jacp[:, inner] + self.coupling[k] * jacp[:, outer]
            out[k] = float(along @ -grasp.normals[k])
        if np.any(out < MIN_LEVER) or not np.all(np.isfinite(out)):
            worst = int(np.argmin(out))
            raise InvalidInput(
                f"finger {FINGERS[worst].upper()} cannot press its contact: closing it moves the "
                f"contact {out[worst] * 1e3:.1f} mm/rad along the contact normal (< "
                f"{MIN_LEVER * 1e3:g})"
            )
        return out
