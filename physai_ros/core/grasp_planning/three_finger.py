"""Pre-grasp of the Barrett-like hand (the seed's Algorithm 2): finger IK, then arm IK.

Why like this: the seed puts the tool-centre line (the palm normal) through the grasp
triangle's centre along the triangle's normal, solves each finger's IK for its contact, and
accepts the pose when every finger joint is within 2° of reaching its contact; otherwise it
changes the length of the TCP line (how far the palm is from the grasp centre) and tries
again. On the BH8-282 each finger has one motor (outer joint = 0.3443 × inner) and F1/F2
share the spread, so a finger cannot reach an arbitrary point: it traces a curve in a plane.
What is left free once the TCP line is fixed — the palm's side of the triangle, its turn
about the line, which finger takes which contact, and the line's length — is searched
(the turn is set so F3's fixed plane passes through its target, then varied by ±3°):

- a fingertip is a hemisphere of radius R; it touches contact p with outward normal n when
  its centre is at p + R n (the target);
- spread: F1 and F2 each need the spread that puts their finger plane through their
  target; the hand takes their mean, and each finger's spread error is its distance from
  it; F3 (no spread) errs by the angle between its fixed plane and its target;
- curl: with the outer joint coupled, the inner angle that brings the tip centre closest to
  the target is found on a 0.05° grid; asin(residual distance ÷ distance from the inner
  joint to the target) is the inner joint's error (the turn that would close the gap);
- accepted when every spread and inner-joint error is ≤ 2°, at the shortest TCP length
  (lengths from the one where the object just clears the palm, in 1 mm steps, up to 120 mm more).

- the links must clear the object: a solution is dropped when an object point comes within
  LINK_R of a finger's inner link or of its outer link short of the tip (the last TIP_R of it
  is the tip's, where contact is wanted); the palm is kept clear by the TCP length.
- the fingers must clear the table: a solution is dropped when a fingertip hemisphere's
  centre is below the table top + TIP_R + TABLE_CLEARANCE, or a finger link (knuckle, inner,
  outer short of the tip) below the table top + LINK_R + TABLE_CLEARANCE. A tilted grasp of
  a small object on a table otherwise curls its lowest finger under the object, into the
  table (9 mm deep in MuJoCo for a 6 cm sphere).

Then the Panda with the hand on its flange is asked (damped-least-squares IK, full pose) to
put the hand there; accepted finger solutions are tried in order of their error until the
arm reaches one. Anything unreachable raises :class:`Unreachable` with the reason.
"""

from __future__ import annotations

import math
from itertools import permutations
from typing import NamedTuple

import mujoco
import numpy as np
from scipy.spatial import cKDTree

from physai_ros.core.grasp_planning.pregrasp import Unreachable
from physai_ros.core.motion.kinematics import solve_ik
from physai_ros.errors import InvalidInput
from physai_ros.models import load_robot_spec
from physai_ros.models.barrett_hand import PANDA_PREFIX
from physai_ros.models.joints import PANDA_ARM_JOINTS

# BH8-282 kinematics (sources in physai_ros/models/barrett.xml and docs/grasp_planning.md) [m, rad]
AW = 0.025  # F1/F2 spread axes at x = ∓AW; F3's knuckle at x = 0
A1 = 0.050  # knuckle (spread axis) to inner joint
A2 = 0.070  # inner link
A3 = 0.050  # outer (distal) link, to the apex of the fingertip
DW = 0.076  # spread axes (knuckles) above the mounting face
PHI3 = math.radians(42.0)  # fixed bend of the distal link
COUPLING = 0.84 / 2.44  # outer joint / inner joint
INNER_MAX = 2.44
SPREAD_MAX = math.pi
TIP_R = 0.012  # fingertip hemisphere radius
LINK_R = 0.008  # finger link half-thickness kept clear of the object [m] (links ~ 24 mm wide)
TABLE_CLEARANCE = 0.005
"""[m] fingertips and links kept this far above the table (beyond TIP_R, LINK_R): the arm's
1 mm palm tolerance, plus the 2° a finger may still turn to meet its contact (the seed's
acceptance) over the ≤ 108 mm from its inner joint to its tip centre: 3.8 mm. The MuJoCo
model's link capsules (radius 12 mm, LINK_R 8 mm) then stay ≥ 1 mm above the table."""
PALM_FACE = 0.066  # palm face above the mounting face
ACCEPT = math.radians(2.0)  # the seed's per-joint acceptance
LENGTH_STEP = 0.001  # TCP line length step [m]
LENGTHS = 120  # lengths tried (12 cm of palm travel)
TURN_OFFSETS = np.radians(np.arange(-3.0, 3.01, 0.5))  # turns tried around F3's plane
ARM_TRIES = 8  # accepted finger solutions offered to the arm
ARM_POS_TOL = 1e-3  # [m]
ARM_ROT_TOL = math.radians(2.0)  # [rad]
OBJECT_POS = np.array([0.5, 0.0, 0.0])  # object centre over the table in front of the Panda

_KNUCKLE_X = np.array([-AW, AW, 0.0])  # F1, F2, F3
_GRID = np.linspace(0.0, INNER_MAX, round(math.degrees(INNER_MAX) * 20) + 1)


class FingerSolution(NamedTuple):
    """Hand pose and joints for three contacts (object frame, SI units).

    position: mounting-face origin [m]; rotation: hand axes as columns (z = palm normal);
    length: TCP line length, mounting face to grasp centre [m]; spread [rad]; inner (3,) [rad]
    (outer = COUPLING × inner); errors (3, 2): per finger, spread and inner-joint error [rad];
    tip_error (3,): tip centre to target [m]; assignment: contact index taken by F1, F2, F3;
    lengths_tried: TCP lengths tried before acceptance."""

    position: np.ndarray
    rotation: np.ndarray
    length: float
    spread: float
    inner: np.ndarray
    errors: np.ndarray
    tip_error: np.ndarray
    assignment: tuple[int, int, int]
    lengths_tried: int


class BarrettPreGrasp(NamedTuple):
    """fingers: the accepted finger solution; q: Panda joints [rad]; position [m] and quat
    (w, x, y, z) of the hand's mounting face in the world; error: arm position error [m]."""

    fingers: FingerSolution
    q: np.ndarray
    position: np.ndarray
    quat: np.ndarray
    error: float


def finger_tip(finger: int, spread: float, inner: float) -> np.ndarray:
    """Fingertip hemisphere centre [m] in the hand frame (finger 0, 1, 2 = F1, F2, F3)."""
    u = _direction(finger, spread)
    knuckle = np.array([_KNUCKLE_X[finger], 0.0, DW])
    rho, height = _curl(np.array([inner]))
    return knuckle + (A1 + rho[0]) * u + height[0] * np.array([0.0, 0.0, 1.0])


def _direction(finger: int, spread: float) -> np.ndarray:
    """Unit horizontal direction of a finger's plane (outward at inner = 0), hand frame."""
    angle = (-spread - math.pi / 2, spread - math.pi / 2, math.pi / 2)[finger]
    return np.array([math.cos(angle), math.sin(angle), 0.0])


def _curl(inner: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tip centre (along the finger plane's direction, up) relative to the inner joint [m]."""
    distal = inner + PHI3 + COUPLING * inner
    reach = A3 - TIP_R
    return A2 * np.cos(inner) + reach * np.cos(distal), A2 * np.sin(inner) + reach * np.sin(distal)


_CURL = cKDTree(np.stack(_curl(_GRID), axis=-1))  # tip centres over the inner-joint grid


def _spread_needed(finger: int, xy: np.ndarray) -> np.ndarray:
    """Spread [rad] that puts F1's or F2's plane through ``xy`` (…, 2), in [0, π)."""
    bearing = np.arctan2(xy[..., 1], xy[..., 0] - _KNUCKLE_X[finger])
    spread = -bearing - math.pi / 2 if finger == 0 else bearing + math.pi / 2
    return np.mod(spread, math.pi)


def _fingers(targets: np.ndarray) -> tuple[np.ndarray, ...]:
    """Joints and errors for targets (…, 3, 3) in the hand frame, rows F1, F2, F3.

    Returns spread (…), inner (…, 3), errors (…, 3, 2), tip error (…, 3) [m].
    """
    s1 = _spread_needed(0, targets[..., 0, :2])
    s2 = _spread_needed(1, targets[..., 1, :2])
    spread = np.clip((s1 + s2) / 2, 0.0, SPREAD_MAX)
    shape = targets.shape[:-2]
    errors = np.empty((*shape, 3, 2))
    errors[..., 0, 0] = np.abs(s1 - spread)
    errors[..., 1, 0] = np.abs(s2 - spread)
    f3 = targets[..., 2, :2]
    errors[..., 2, 0] = np.arcsin(
        np.abs(f3[..., 0]) / np.maximum(np.linalg.norm(f3, axis=-1), 1e-9)
    )
    angles = np.stack(
        [-spread - math.pi / 2, spread - math.pi / 2, np.full(shape, math.pi / 2)], -1
    )
    u = np.stack([np.cos(angles), np.sin(angles)], axis=-1)  # (…, 3, 2)
    rel = targets[..., :2] - np.stack([_KNUCKLE_X, np.zeros(3)], axis=-1)
    lateral = rel[..., 0] * u[..., 1] - rel[..., 1] * u[..., 0]
    in_plane = np.stack([np.sum(rel * u, axis=-1) - A1, targets[..., 2] - DW], axis=-1)
    residual, best = _CURL.query(in_plane)
    inner = _GRID[best]
    lever = np.maximum(np.linalg.norm(in_plane, axis=-1), 1e-9)
    errors[..., 1] = np.arcsin(np.clip(residual / lever, 0.0, 1.0))
    tip_error = np.hypot(residual, lateral)
    return spread, inner, errors, tip_error


def _frames(normal: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hand rotations (K, 3, 3) (columns x, y, z) and finger assignments (K, 3).

    The palm normal z is ±``normal``; the turn about it puts F3's fixed plane through its
    target (y along ± the target's offset across the line), then is varied by TURN_OFFSETS
    so that F3 can give up some of its error to F1 and F2.
    """
    rots, perms = [], []
    for z in (-normal, normal):
        for perm in permutations(range(3)):
            across = targets[perm[2]] - (targets[perm[2]] @ z) * z
            if np.linalg.norm(across) < 1e-9:
                continue  # F3's target on the line: any turn; the others cover it
            across /= np.linalg.norm(across)
            for sign in (1.0, -1.0):
                for offset in TURN_OFFSETS:
                    y = sign * (math.cos(offset) * across + math.sin(offset) * np.cross(z, across))
                    rots.append(np.column_stack([np.cross(y, z), y, z]))
                    perms.append(perm)
    return np.array(rots), np.array(perms)


def solve_fingers(
    contacts: np.ndarray,
    normals: np.ndarray,
    centre: np.ndarray,
    normal: np.ndarray,
    surface: np.ndarray,
    floor: float = -math.inf,
) -> list[FingerSolution]:
    """Finger IK for three contacts [m] with outward unit ``normals``, grasp ``centre`` and
    triangle ``normal`` (object frame); ``surface`` (N, 3) object points keep the palm and
    links clear; hand poses whose mounting face or palm centre is below ``floor`` (z, object
    frame: the table top), or whose fingertips or finger links come within TABLE_CLEARANCE
    of it, are not taken.

    Returns the accepted solutions at the shortest accepted TCP length, best first.
    Raises :class:`Unreachable` with why the configurations that reach were refused, or with
    the smallest joint error seen when none reaches.
    """
    contacts = np.asarray(contacts, dtype=float)
    normals = np.asarray(normals, dtype=float)
    if contacts.shape != (3, 3) or normals.shape != (3, 3):
        raise InvalidInput(f"need 3 contacts and 3 normals, got {contacts.shape}, {normals.shape}")
    normal = np.asarray(normal, dtype=float) / np.linalg.norm(normal)
    targets = contacts + TIP_R * normals - centre  # tip centres relative to the grasp centre
    rots, perms = _frames(normal, targets)  # (K, 3, 3), (K, 3)
    local = np.einsum("kji,kfj->kfi", rots, targets[perms])  # (K, finger, 3) hand frame
    depth = (np.asarray(surface) - centre) @ rots[:, :, 2].T  # (N, K) along the palm normal
    shortest = PALM_FACE - depth.min(axis=0)  # (K,) TCP length where the object meets the palm
    # every length at once: (L, K) candidates, the shortest accepted length wins
    length = shortest + LENGTH_STEP * np.arange(LENGTHS)[:, None]  # (L, K)
    at = np.broadcast_to(local, (LENGTHS, *local.shape)).copy()
    at[..., 2] += length[..., None]
    spread, inner, errors, tip = _fingers(at)
    worst = errors.max(axis=(-2, -1))  # (L, K)
    reach = worst <= ACCEPT
    base_z = centre[2] - length * rots[:, 2, 2]  # mounting-face origin's height
    palm_low = np.minimum(base_z, base_z + PALM_FACE * rots[:, 2, 2]) <= floor
    tip_z, link_z = _finger_lows(spread, inner, rots[:, 2, :], base_z)
    fingers_low = (tip_z < floor + TIP_R + TABLE_CLEARANCE) | (
        link_z < floor + LINK_R + TABLE_CLEARANCE
    )
    accepted = reach & ~palm_low & ~fingers_low
    blocked = 0
    for step in np.flatnonzero(accepted.any(axis=1)):
        ok = np.flatnonzero(accepted[step])
        clear = np.array(
            [
                _links_clear(
                    spread[step, k],
                    inner[step, k],
                    (np.asarray(surface) - centre) @ rots[k] + [0.0, 0.0, length[step, k]],
                )
                for k in ok
            ]
        )
        blocked += int(np.sum(~clear))
        ok = ok[clear]
        if not len(ok):
            continue
        return [
            FingerSolution(
                centre - length[step, k] * rots[k][:, 2],
                rots[k],
                float(length[step, k]),
                float(spread[step, k]),
                inner[step, k],
                errors[step, k],
                tip[step, k],
                tuple(int(i) for i in perms[k]),
                step + 1,
            )
            for k in ok[np.argsort(worst[step, ok])]
        ]
    if reach.any():  # every configuration that reaches was refused by the table or the object
        reasons = [
            f"{count} {why}"
            for count, why in (
                (int(np.sum(reach & palm_low)), "put the palm below the table top"),
                (
                    int(np.sum(reach & ~palm_low & fingers_low)),
                    "put a fingertip or finger link into the table "
                    f"(closer than {TABLE_CLEARANCE * 1e3:.0f} mm)",
                ),
                (blocked, "put a finger link into the object"),
            )
            if count
        ]
        raise Unreachable(
            f"barrett: all {int(reach.sum())} finger configurations that reach the contacts "
            f"within {math.degrees(ACCEPT):.0f}° per joint are refused: " + "; ".join(reasons)
        )
    best_error = float(np.where(palm_low, math.inf, worst).min())
    raise Unreachable(
        f"barrett: no finger configuration reaches the contacts within "
        f"{math.degrees(ACCEPT):.0f}° per joint ({LENGTHS} TCP line lengths × "
        f"{len(rots)} hand orientations and finger assignments tried; smallest worst joint "
        f"error {math.degrees(best_error):.1f}°)"
    )


def _finger_lows(
    spread: np.ndarray, inner: np.ndarray, up: np.ndarray, base_z: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Lowest fingertip centre and lowest finger-link point [m] (object frame z) of hand
    poses (L, K): ``spread`` (L, K), ``inner`` (L, K, 3), ``up`` (K, 3) the world z axis in
    each hand frame (the rotation's third row), ``base_z`` (L, K) the mounting face's height.

    The links are the knuckle (spread axis to inner joint), the inner link and the outer link
    to TIP_R short of the tip centre, as straight segments, so each is lowest at an end. The
    knuckle counts here though not in :func:`_links_clear`: above the palm face it cannot
    touch the object, but a tilted hand can put it into the table.
    """
    angle = np.stack(
        [-spread - math.pi / 2, spread - math.pi / 2, np.full_like(spread, math.pi / 2)], -1
    )  # (L, K, 3): each finger plane's direction u in the hand's xy plane
    rise_u = up[:, None, 0] * np.cos(angle) + up[:, None, 1] * np.sin(angle)  # z of u
    rise_z = up[:, 2, None]  # z of the hand's z axis, (K, 1)
    knuckle = base_z[..., None] + up[:, None, 0] * _KNUCKLE_X + rise_z * DW
    joint = knuckle + A1 * rise_u
    outer = joint + A2 * (np.cos(inner) * rise_u + np.sin(inner) * rise_z)
    distal = inner * (1.0 + COUPLING) + PHI3
    along = np.cos(distal) * rise_u + np.sin(distal) * rise_z
    short = outer + (A3 - 2.0 * TIP_R) * along
    tip = outer + (A3 - TIP_R) * along
    links = np.minimum(np.minimum(knuckle, joint), np.minimum(outer, short))
    return tip.min(axis=-1), links.min(axis=-1)


def _links_clear(spread: float, inner: np.ndarray, points: np.ndarray) -> bool:
    """True when no object point (N, 3), hand frame, is within LINK_R of a finger's inner
    link or of its outer link from the outer joint to TIP_R short of the tip centre."""
    up = np.array([0.0, 0.0, 1.0])
    for finger in range(3):
        u = _direction(finger, spread)
        joint = np.array([_KNUCKLE_X[finger], 0.0, DW]) + A1 * u
        a, d = float(inner[finger]), float(inner[finger]) * (1.0 + COUPLING) + PHI3
        outer = joint + A2 * (math.cos(a) * u + math.sin(a) * up)
        along = math.cos(d) * u + math.sin(d) * up
        short = outer + (A3 - 2.0 * TIP_R) * along  # the outer link up to the tip's own part
        for start, end in ((joint, outer), (outer, short)):
            seg = end - start
            t = np.clip((points - start) @ seg / float(seg @ seg), 0.0, 1.0)
            if np.min(np.linalg.norm(points - start - t[:, None] * seg, axis=1)) < LINK_R:
                return False
    return True


def solve_barrett_pregrasp(
    contacts: np.ndarray,
    normals: np.ndarray,
    centre: np.ndarray,
    normal: np.ndarray,
    surface: np.ndarray,
    object_pos: np.ndarray = OBJECT_POS,
) -> BarrettPreGrasp:
    """Finger IK, then the Panda (7 joints, full pose) to the hand pose; the object frame is
    placed at ``object_pos`` in the world, the table top at world z = 0 (the hand stays above
    it). Raises :class:`Unreachable` with the reason."""
    solutions = solve_fingers(contacts, normals, centre, normal, surface, -object_pos[2])
    model = load_robot_spec("panda_barrett").compile()
    data = mujoco.MjData(model)
    home = load_robot_spec("panda").compile().key("home").qpos[: len(PANDA_ARM_JOINTS)]  # IK start
    for name, value in zip(PANDA_ARM_JOINTS, home, strict=True):
        data.qpos[model.joint(name).qposadr[0]] = value
    palm = PANDA_PREFIX + "bh_palm"
    base_to_palm = np.array([0.0, 0.0, PALM_FACE])
    best = math.inf
    for sol in solutions[:ARM_TRIES]:
        target = object_pos + sol.position + sol.rotation @ base_to_palm
        quat = np.empty(4)
        mujoco.mju_mat2Quat(quat, sol.rotation.ravel())
        res = solve_ik(
            model,
            data,
            palm,
            target,
            PANDA_ARM_JOINTS,
            home,
            quat,
            tol=ARM_POS_TOL / 10,
            rot_tol=ARM_ROT_TOL / 10,
            max_iters=300,
        )
        check = mujoco.MjData(model)
        check.qpos[:] = data.qpos
        for name, value in zip(PANDA_ARM_JOINTS, res.q, strict=True):
            check.qpos[model.joint(name).qposadr[0]] = value
        mujoco.mj_kinematics(model, check)
        site = model.site(palm).id
        err_pos = float(np.linalg.norm(check.site_xpos[site] - target))
        rot = check.site_xmat[site].reshape(3, 3)
        err_rot = math.acos(min(1.0, max(-1.0, (np.trace(rot.T @ sol.rotation) - 1) / 2)))
        best = min(best, err_pos)
        if err_pos <= ARM_POS_TOL and err_rot <= ARM_ROT_TOL:
            return BarrettPreGrasp(sol, res.q, object_pos + sol.position, quat, err_pos)
    raise Unreachable(
        f"barrett on the Panda: the arm reaches none of {min(len(solutions), ARM_TRIES)} "
        f"accepted hand poses (best palm position error {best * 1e3:.1f} mm)"
    )
