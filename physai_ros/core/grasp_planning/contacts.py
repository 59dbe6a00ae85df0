"""Contact selection: the seed's Algorithm 1 (three fingers) and its two-jaw counterpart.

Three fingers. For every triangle of surface points, Q1 = Σ |θᵢ − π/3| over its three angles
[rad]: 0 for an equilateral triangle. The seed's band [0, 0.3] is read as Q1 ≤ 0.3 rad (17.2°
of total angle error; since the deviations sum to zero, no single angle is more than 0.15 rad =
8.6° from 60°). Among triangles inside the band whose contacts satisfy the friction cone — at
each contact the inward normal lies within atan μ of the line to the triangle's centre, where
the three squeezing forces meet — the one with the smallest Q2 = |centre − centre of mass| is
chosen; ties go to the smaller Q1, then the smaller point indices.

Table-top preference (optional ``up``, the table's normal, and ``q2_tie`` [m]). On a sphere
every great-circle triangle has Q2 ≈ 0, so the rule above picks an arbitrary tilted one, whose
lowest contact lies near the table and whose fingers then reach under it. With ``up`` given,
every valid triangle whose Q2 is within ``q2_tie`` of the best Q2 counts as tied, and among
those the one whose plane is most nearly horizontal (largest |n·up|) wins; then Q2, Q1 and
indices as before. Without ``up`` the tolerance changes nothing (Q2 decides first anyway).

Not naive: Q2 ≤ r bounds everything. The centre lies in every contact's friction cone, so a
point whose cone passes farther than r from the centre of mass is out; the third vertex is
3·centre − pᵢ − pⱼ, so it lies within 3r of 3·com − pᵢ − pⱼ (a k-d tree answers that); the law
of sines bounds the other two edges by the first. r starts at the Q2 of the best triangle of
every 8th point (a valid triangle of the whole set, so the best has Q2 ≤ r) or, on small sets,
at half the sample spacing, growing ×4 until a valid triangle with Q2 ≤ r appears. The answer
is exactly brute force's (every triangle with Q2 ≤ r passes every filter), at a small fraction
of C(n, 3) evaluations.

The table-top preference runs after that search, with the window W = best Q2 + ``q2_tie``
fixed: the same Q2 bounds (with W for r) give the candidate pairs, and since a triangle's plane
contains each of its edges, |n·up| ≤ √(1 − (ê·up)²) for its edge ê between the pair. Pairs are
visited most level first, and once that bound is below the best |n·up| found the rest cannot
win; the other two edges bound each third vertex the same way. Exact again (the tests compare
it with brute force). Why a second pass rather than the first with r + ``q2_tie``: the tie
window holds far more triangles than the least Q2's neighbourhood (3·10⁶ evaluated, 33 s, on a
300 mm sphere of 7,854 points; 2.4·10⁴, 1.9 s with the level bound).

Two jaws. Antipodal pairs: the jaw axis lies within each contact's friction cone, the width
within the jaw's opening; Q2 is the distance of the centre of mass from the axis. A hinged jaw
(SO-101) presses along its tilted face, so its cone is narrowed by the tilt at that width.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import chain, combinations
from typing import NamedTuple

import numpy as np
from scipy.spatial import cKDTree

from physai_ros.core.grasp_planning.objects import SurfaceObject
from physai_ros.errors import InvalidInput

Q1_BAND = 0.3  # [rad] the seed's error band [0, 0.3] on Q1
_SLACK = 1e-9  # relative slack on the pruning bounds (floating point), never on the answer
_F32 = 1e-5  # relative slack where bounds are computed in float32
_CHUNK = 300_000  # pair evaluations per vectorised block (fits the cache better than more)
_BATCH = 16384  # candidate pairs per k-d tree query, visited best bound first
_SEED_MIN = 1000  # points from which a subsample's best triangle seeds the search radius
_SEED_STRIDE = 8  # every 8th point forms that subsample
_Q2_DECIMALS = 12  # two-jaw Q2 compared to a picometre (symmetric pairs tie exactly)
_LEVEL_SLACK = 1e-9  # on the |n·up| bound of a pair: rounding, never the answer


class TriangleGrasp(NamedTuple):
    """A three-finger grasp: point indices (sorted), Q1 [rad], Q2 [m], triangle centre [m],
    unit normal of the triangle's plane, and how many triangles were evaluated exactly."""

    indices: tuple[int, int, int]
    q1: float
    q2: float
    centre: np.ndarray
    normal: np.ndarray
    evaluated: int


class JawGrasp(NamedTuple):
    """A two-jaw grasp: point indices (i on the fixed/first jaw), width [m], Q2 [m], unit axis
    from i to j, jaw tilt [rad] at that width, and the number of pairs evaluated."""

    indices: tuple[int, int]
    width: float
    q2: float
    axis: np.ndarray
    tilt: float
    evaluated: int


class Jaw(NamedTuple):
    """A two-jaw gripper: opening limits [m] and the tilt [rad] of its moving face vs width."""

    name: str
    min_width: float
    max_width: float
    tilt: Callable[[np.ndarray], np.ndarray]


class NoGrasp(InvalidInput):
    """No contact set satisfies the criteria; the message says which one failed."""


def _check(obj: SurfaceObject, mu: float, need: int) -> None:
    if not math.isfinite(mu) or mu <= 0.0:
        raise InvalidInput(f"friction coefficient mu must be finite and > 0, got {mu!r}")
    if len(obj.points) < need:
        raise NoGrasp(f"too few surface points: {len(obj.points)} < {need}")


def point_spacing(points: np.ndarray, tree: cKDTree | None = None) -> float:
    """Median distance [m] from each point (N, 3) to its nearest neighbour: the sampling
    resolution of the surface (``tree``: a k-d tree of ``points`` already built)."""
    tree = cKDTree(points) if tree is None else tree
    return float(np.median(tree.query(points, k=2)[0][:, 1]))


def cone_distance(obj: SurfaceObject, mu: float) -> np.ndarray:
    """Distance [m] from the centre of mass to each point's friction cone (0 if inside).

    The cone has its apex at the point, axis along the inward normal, half-angle atan μ.
    """
    v = obj.com - obj.points
    axial = np.einsum("ij,ij->i", v, -obj.normals)
    radial = np.linalg.norm(v + axial[:, None] * obj.normals, axis=1)
    beyond = np.arctan2(radial, axial) - math.atan(mu)  # angle outside the cone [rad]
    dist = np.linalg.norm(v, axis=1) * np.sin(np.clip(beyond, 0.0, math.pi / 2))
    return np.where(beyond >= math.pi / 2, np.linalg.norm(v, axis=1), dist)


def triangle_metrics(
    obj: SurfaceObject, tri: np.ndarray, mu: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Q1 [rad], Q2 [m] and the cone test of triangles ``tri`` (T, 3) of point indices.

    The one formula both the fast search and brute force use, so that ties compare equal.
    """
    p = obj.points[tri]  # (T, 3, 3)
    centre = p.mean(axis=1)
    q2 = np.linalg.norm(centre - obj.com, axis=1)
    q1 = np.zeros(len(tri))
    for a in range(3):
        u = p[:, (a + 1) % 3] - p[:, a]
        w = p[:, (a + 2) % 3] - p[:, a]
        cos = np.einsum("ij,ij->i", u, w) / (np.linalg.norm(u, axis=1) * np.linalg.norm(w, axis=1))
        q1 += np.abs(np.arccos(np.clip(cos, -1.0, 1.0)) - math.pi / 3)
    to_centre = centre[:, None, :] - p
    dist = np.linalg.norm(to_centre, axis=2)
    inward = -obj.normals[tri]
    cos_cone = np.einsum("tci,tci->tc", to_centre, inward) / np.maximum(dist, 1e-300)
    cones = np.all((cos_cone >= math.cos(math.atan(mu))) & (dist > 0), axis=1)
    return q1, q2, cones


def _best(tri: np.ndarray, q1: np.ndarray, q2: np.ndarray, align: np.ndarray | None = None) -> int:
    """Index of the best row: smallest Q2, then Q1, then point indices; with ``align`` (|n·up|
    of each row, all rows inside the tie window), the most aligned first."""
    keys = (tri[:, 2], tri[:, 1], tri[:, 0], q1, q2)
    return int(np.lexsort(keys if align is None else (*keys, -align))[0])


def plane_alignment(obj: SurfaceObject, tri: np.ndarray, up: np.ndarray) -> np.ndarray:
    """|n·up| of each triangle's unit plane normal n, for triangles ``tri`` (T, 3) of sorted
    point indices (none degenerate) and a unit vector ``up``.

    Written out per component, without reductions, so that the pruned search and brute force
    get the same bits for the same triangle whatever else is in their arrays.
    """
    p = obj.points[tri]
    u, w = p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]
    cx = u[:, 1] * w[:, 2] - u[:, 2] * w[:, 1]
    cy = u[:, 2] * w[:, 0] - u[:, 0] * w[:, 2]
    cz = u[:, 0] * w[:, 1] - u[:, 1] * w[:, 0]
    dot = cx * up[0] + cy * up[1] + cz * up[2]
    return np.abs(dot) / np.sqrt(cx * cx + cy * cy + cz * cz)


def _preference(up: np.ndarray | None, q2_tie: float) -> tuple[np.ndarray | None, float]:
    """The checked table normal (unit) and tie tolerance [m]; no ``up``, no tolerance."""
    if not (math.isfinite(q2_tie) and q2_tie >= 0.0):
        raise InvalidInput(f"q2_tie must be finite and >= 0 [m], got {q2_tie!r}")
    if up is None:
        return None, 0.0
    vec = np.asarray(up, dtype=float)
    norm = float(np.linalg.norm(vec)) if vec.shape == (3,) else math.nan
    if not (math.isfinite(norm) and norm > 0.0):
        raise InvalidInput(f"up must be a finite, non-zero 3-vector, got {up!r}")
    return vec / norm, float(q2_tie)


def _result(
    obj: SurfaceObject,
    tri: np.ndarray,
    q1: np.ndarray,
    q2: np.ndarray,
    evaluated: int,
    align: np.ndarray | None = None,
) -> TriangleGrasp:
    k = _best(tri, q1, q2, align)
    p = obj.points[tri[k]]
    normal = np.cross(p[1] - p[0], p[2] - p[0])
    centre = p.mean(axis=0)
    normal /= np.linalg.norm(normal)
    if np.dot(normal, centre - obj.com) < 0.0:  # the palm side: away from the centre of mass
        normal = -normal
    return TriangleGrasp(
        tuple(int(i) for i in tri[k]), float(q1[k]), float(q2[k]), centre, normal, evaluated
    )


def select_triangle_brute(
    obj: SurfaceObject,
    mu: float,
    band: float = Q1_BAND,
    up: np.ndarray | None = None,
    q2_tie: float = 0.0,
) -> TriangleGrasp:
    """Reference: every one of the C(n, 3) triangles evaluated (small sets only); the same
    rule as :func:`select_triangle`, ``up`` and ``q2_tie`` included."""
    _check(obj, mu, 3)
    up, tie = _preference(up, q2_tie)
    n = len(obj.points)
    tri = np.fromiter(combinations(range(n), 3), dtype=np.dtype((int, 3)))
    q1, q2, cones = triangle_metrics(obj, tri, mu)
    ok = (q1 <= band) & cones
    if not ok.any():
        raise NoGrasp(_why_none(q1 <= band, cones, band))
    evaluated = len(tri)
    tri, q1, q2 = tri[ok], q1[ok], q2[ok]
    if up is None:
        return _result(obj, tri, q1, q2, evaluated)
    window = q2 <= q2.min() + tie  # tied with the best Q2
    tri, q1, q2 = tri[window], q1[window], q2[window]
    return _result(obj, tri, q1, q2, evaluated, plane_alignment(obj, tri, up))


def _why_none(in_band: np.ndarray, cones: np.ndarray, band: float) -> str:
    if not in_band.any():
        return f"no triangle inside the Q1 band [0, {band}] rad"
    return "no triangle inside the Q1 band has every contact normal inside its friction cone"


def _candidate_pairs(
    obj: SurfaceObject, cand: np.ndarray, lb: np.ndarray, radius: float, ratio: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs (i < j) of ``cand`` that can be two vertices of a valid triangle with Q2 ≤ radius.

    Returns i, j and a lower bound on Q2 of any triangle through them. Necessary conditions:
    each vertex's cone distance ≤ r; the third vertex 3·centre − pᵢ − pⱼ lies within 3r of
    q = 3·com − pᵢ − pⱼ, so some surface point has |p − com| within 3r of |q − com|; the law of
    sines bounds the two other edges by this one. With x = p − com every quantity is a function
    of |xᵢ|², |xⱼ|² and xᵢ·xⱼ, so one Gram block per block of rows gives them all. The
    shell test runs first on the whole block (it removes most pairs: on a sphere it keeps the
    pairs about 120° apart); the edge bounds run only on its survivors.
    """
    if len(cand) < 2:  # no pair yet: the caller widens the radius
        return np.zeros(0, dtype=int), np.zeros(0, dtype=int), np.zeros(0)
    x = (obj.points[cand] - obj.com).astype(np.float32)  # bounds only; the answer is float64
    xt = np.ascontiguousarray(x.T)
    rho2 = np.einsum("ij,ij->i", x, x)
    rho = np.sort(np.sqrt(rho2)) if len(rho2) > 1 else np.repeat(np.sqrt(rho2), 2)
    eps = _F32 * float(np.sqrt(rho2.max()))  # [m] float32 rounding of the quantities below
    slack = 3 * radius * (1 + _SLACK) + eps
    # occupied shells |p − com| on a grid of width `slack`, dilated by one cell
    cells = np.floor(np.sqrt(rho2) / slack).astype(np.int64)
    occupied = np.zeros(int(cells.max()) + 3, dtype=bool)
    for shift in (-1, 0, 1):
        occupied[np.clip(cells + shift, 0, None)] = True
    m = len(cand)
    block = max(1, _CHUNK // max(m, 1))
    out_i, out_j, out_lb = [], [], []
    for r0 in range(0, m, block):
        r1 = min(m, r0 + block)
        # row a is point r0 + a, column b is point r0 + b; three broadcasts, not a BLAS call
        # (an inner dimension of 3 makes BLAS slow and, threaded on a loaded machine, erratic)
        rows, cols = x[r0:r1], xt[:, r0:]
        gram = rows[:, 0, None] * cols[0]
        gram += rows[:, 1, None] * cols[1]
        gram += rows[:, 2, None] * cols[2]
        dq_block = np.sqrt(np.maximum(rho2[r0:r1, None] + rho2[None, r0:] + 2 * gram, 0.0))
        cell = np.minimum((dq_block / slack).astype(np.int64), len(occupied) - 1)
        a, b = np.nonzero(occupied[cell])
        upper = a < b
        a, b = a[upper], b[upper]
        ri, rj, g = rho2[r0 + a], rho2[r0 + b], gram[a, b]
        edge = np.sqrt(np.maximum(ri + rj - 2 * g, 0.0))
        dq = np.sqrt(np.maximum(ri + rj + 2 * g, 0.0))
        da = np.sqrt(np.maximum(4 * ri + rj + 4 * g, 0.0))
        db = np.sqrt(np.maximum(ri + 4 * rj + 4 * g, 0.0))
        keep = (
            (edge > 0)
            & (da >= ratio * edge - slack)
            & (da <= edge / ratio + slack)
            & (db >= ratio * edge - slack)
            & (db <= edge / ratio + slack)
        )
        e, a_d, b_d, d_q = edge[keep], da[keep], db[keep], dq[keep]
        i, j = cand[r0 + a[keep]], cand[r0 + b[keep]]
        k = np.clip(np.searchsorted(rho, d_q), 1, len(rho) - 1)
        shell = np.minimum(np.abs(rho[k] - d_q), np.abs(rho[k - 1] - d_q))
        bound = np.maximum(np.maximum(lb[i], lb[j]), shell / 3)
        for d in (a_d, b_d):
            bound = np.maximum(bound, np.maximum(ratio * e - d, d - e / ratio) / 3)
        bound = np.maximum(bound.astype(float) - eps, 0.0)
        near = bound <= radius * (1 + _SLACK)
        out_i.append(i[near])
        out_j.append(j[near])
        out_lb.append(bound[near])
    return np.concatenate(out_i), np.concatenate(out_j), np.concatenate(out_lb)


def _edge_ratio(band: float) -> float:
    """Least ratio of two edges of a triangle in the band (law of sines): the deviations sum
    to zero, so one angle is off 60° by at most band/2."""
    worst = band / 2.0
    return math.sin(max(math.pi / 3 - worst, 1e-6)) / math.sin(
        min(math.pi / 3 + worst, math.pi / 2)
    )


def select_triangle(
    obj: SurfaceObject,
    mu: float,
    band: float = Q1_BAND,
    up: np.ndarray | None = None,
    q2_tie: float = 0.0,
) -> TriangleGrasp:
    """The seed's Algorithm 1, exact and pruned (see the module docstring).

    ``up``: unit normal of the table (object frame): of the triangles within ``q2_tie`` [m] of
    the best Q2, the most nearly horizontal wins; None: Q2 alone (the seed's rule).
    """
    _check(obj, mu, 3)
    if not 0.0 < band < 2 * math.pi:
        raise InvalidInput(f"Q1 band must be in (0, 2π) rad, got {band!r}")
    up, tie = _preference(up, q2_tie)
    best = _least_q2(obj, mu, band)
    return best if up is None else _most_level(obj, mu, band, up, best, best.q2 + tie)


def _seed(obj: SurfaceObject, mu: float, band: float) -> TriangleGrasp | None:
    """The best triangle of every ``_SEED_STRIDE``-th point, or None (small set, or none there).

    Its triangle is a triangle of the whole set, with the same Q1, Q2 and cone test, so its Q2
    is an upper bound on the best: the whole search can start at that radius, in one round,
    and still return exactly brute force's answer.
    """
    if len(obj.points) < _SEED_MIN:
        return None
    keep = np.arange(0, len(obj.points), _SEED_STRIDE)
    sub = SurfaceObject(obj.name, obj.points[keep], obj.normals[keep], obj.com, obj.contains)
    try:
        found = _least_q2(sub, mu, band)
    except NoGrasp:
        return None
    return found._replace(indices=tuple(int(keep[i]) for i in found.indices))


def _third_vertices(
    obj: SurfaceObject, tree: cKDTree, lb: np.ndarray, i: np.ndarray, j: np.ndarray, limit: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The triangles (i, j, k), k > j, that pairs (i, j) can close with Q2 ≤ ``limit``: the
    third vertex lies within 3 · limit of 3 · com − pᵢ − pⱼ (a k-d tree ball), and its own cone
    distance is within the limit."""
    q = 3 * obj.com - obj.points[i] - obj.points[j]
    reach = 3 * limit * (1 + _SLACK) + 1e-15
    near = tree.query(q, k=1, distance_upper_bound=reach)[0] <= reach
    i, j, q = i[near], j[near], q[near]
    found = tree.query_ball_point(q, reach)
    counts = np.fromiter((len(f) for f in found), int, len(found))
    k = np.fromiter(chain.from_iterable(found), int, int(counts.sum()))
    i, j = np.repeat(i, counts), np.repeat(j, counts)
    keep = (k > j) & (lb[k] <= limit * (1 + _SLACK))
    return i[keep], j[keep], k[keep]


def _least_q2(obj: SurfaceObject, mu: float, band: float) -> TriangleGrasp:
    """The seed's Algorithm 1, exact and pruned (see the module docstring).

    Within a radius r, candidate pairs are visited in order of their Q2 lower bound and the
    search stops once that bound exceeds the best Q2 found, which shrinks the k-d tree ball
    for the third vertex as it goes.
    """
    pts = obj.points
    tree = cKDTree(pts)
    spacing = point_spacing(pts, tree)
    lb = cone_distance(obj, mu)
    ratio = _edge_ratio(band)
    radius, r_max = max(spacing / 2, 1e-12), obj.size * (1 + _SLACK)
    seed = _seed(obj, mu, band)
    evaluated = 0 if seed is None else seed.evaluated
    if seed is not None:
        radius = max(seed.q2, 1e-12)
    while True:
        cand = np.flatnonzero(lb <= radius * (1 + _SLACK))
        ii, jj, bound = _candidate_pairs(obj, cand, lb, radius, ratio)
        best_key: tuple | None = None
        best_tri = np.zeros((0, 3), dtype=int)
        best_q1 = best_q2 = np.zeros(0)
        if seed is not None:  # the incumbent: a valid triangle with Q2 = radius
            best_key = (seed.q2, seed.q1, *seed.indices)
            best_tri = np.array([seed.indices])
            best_q1, best_q2 = np.array([seed.q1]), np.array([seed.q2])
        while bound.size:
            limit = radius if best_key is None else min(radius, best_key[0])
            alive = bound <= limit * (1 + _SLACK)
            ii, jj, bound = ii[alive], jj[alive], bound[alive]
            if bound.size == 0:
                break
            # the lowest bounds first: a good incumbent early shrinks everything after it
            rows = np.argpartition(bound, _BATCH)[:_BATCH] if bound.size > _BATCH else None
            if rows is None:
                rows = np.arange(bound.size)
            taken = np.zeros(bound.size, dtype=bool)
            taken[rows] = True
            i, j = ii[rows], jj[rows]
            ii, jj, bound = ii[~taken], jj[~taken], bound[~taken]
            i, j, k = _third_vertices(obj, tree, lb, i, j, limit)
            tri = np.column_stack([i, j, k])
            evaluated += len(tri)
            if len(tri) == 0:
                continue
            q1, q2, cones = triangle_metrics(obj, tri, mu)
            ok = (q1 <= band) & cones & (q2 <= radius)
            if ok.any():
                best_tri = np.vstack([best_tri, tri[ok]])
                best_q1, best_q2 = (
                    np.concatenate([best_q1, q1[ok]]),
                    np.concatenate([best_q2, q2[ok]]),
                )
                top = _best(best_tri, best_q1, best_q2)
                best_key = (best_q2[top], best_q1[top], *best_tri[top])
                best_tri, best_q1, best_q2 = best_tri[[top]], best_q1[[top]], best_q2[[top]]
        if best_key is not None:
            return _result(obj, best_tri, best_q1, best_q2, evaluated)
        if radius >= r_max:
            raise NoGrasp(
                f"no triangle inside the Q1 band [0, {band}] rad with every contact normal "
                f"inside its friction cone (μ = {mu}) among {len(pts)} points"
            )
        radius = min(4 * radius, r_max)


def _edge_level(edge: np.ndarray, up: np.ndarray) -> np.ndarray:
    """Upper bound on |n·up| of any plane containing each edge (E, 3): √(1 − (ê·up)²)."""
    rise = (edge @ up) / np.linalg.norm(edge, axis=1)
    return np.sqrt(np.maximum(1.0 - rise * rise, 0.0))


def _most_level(
    obj: SurfaceObject,
    mu: float,
    band: float,
    up: np.ndarray,
    best: TriangleGrasp,
    window: float,
) -> TriangleGrasp:
    """The valid triangle with Q2 ≤ ``window`` [m] whose plane is most nearly horizontal
    (largest |n·up|; then Q2, Q1, indices), starting from ``best`` (the least Q2, a valid
    incumbent).

    Pairs come from the Q2 bounds at radius ``window``; each pair's |n·up| bound (the plane
    contains the edge) orders them, most level first, and ends the search (module docstring).
    """
    pts = obj.points
    tree = cKDTree(pts)
    lb = cone_distance(obj, mu)
    cand = np.flatnonzero(lb <= window * (1 + _SLACK))
    ii, jj, _ = _candidate_pairs(obj, cand, lb, window, _edge_ratio(band))
    top_tri = np.array([best.indices])
    top_q1, top_q2 = np.array([best.q1]), np.array([best.q2])
    top_align = plane_alignment(obj, top_tri, up)
    level = _edge_level(pts[jj] - pts[ii], up)
    keep = level >= top_align[0] - _LEVEL_SLACK  # no less level than the incumbent
    ii, jj, level = ii[keep], jj[keep], level[keep]
    order = np.argsort(-level, kind="stable")
    ii, jj, level = ii[order], jj[order], level[order]
    evaluated = best.evaluated
    for start in range(0, len(ii), _BATCH):
        keep = level[start : start + _BATCH] >= top_align[0] - _LEVEL_SLACK
        if not keep[0]:  # sorted: no pair from here on has a plane level enough to win
            break
        i, j = ii[start : start + _BATCH][keep], jj[start : start + _BATCH][keep]
        i, j, k = _third_vertices(obj, tree, lb, i, j, window)
        floor = top_align[0] - _LEVEL_SLACK  # the other two edges bound the plane as well
        keep = (_edge_level(pts[k] - pts[i], up) >= floor) & (
            _edge_level(pts[k] - pts[j], up) >= floor
        )
        tri = np.column_stack([i[keep], j[keep], k[keep]])
        evaluated += len(tri)
        if len(tri) == 0:
            continue
        q1, q2, cones = triangle_metrics(obj, tri, mu)
        ok = (q1 <= band) & cones & (q2 <= window)
        if ok.any():
            top_tri = np.vstack([top_tri, tri[ok]])
            top_q1, top_q2 = np.concatenate([top_q1, q1[ok]]), np.concatenate([top_q2, q2[ok]])
            top_align = np.concatenate([top_align, plane_alignment(obj, tri[ok], up)])
            t = [_best(top_tri, top_q1, top_q2, top_align)]
            top_tri, top_q1, top_q2, top_align = top_tri[t], top_q1[t], top_q2[t], top_align[t]
    return _result(obj, top_tri, top_q1, top_q2, evaluated, top_align)


def select_pair(obj: SurfaceObject, mu: float, jaw: Jaw) -> JawGrasp:
    """The best antipodal pair for ``jaw``: smallest Q2; among equal Q2 the pair whose normals
    are best aligned with the axis (the least friction spent on the tilt); then indices.

    Exhaustive but vectorised in blocks: n² pairs cost what n³ triangles would not. Contact i
    is on the fixed jaw, j on the moving one, so j's cone is narrowed by the tilt.
    """
    _check(obj, mu, 2)
    phi = math.atan(mu)
    pts, inward = obj.points, -obj.normals
    n = len(pts)
    best: tuple[float, float, int, int] | None = None
    evaluated = 0
    for start in range(0, n, max(1, _CHUNK // n)):
        rows = np.arange(start, min(n, start + max(1, _CHUNK // n)))
        a, b = np.repeat(rows, n), np.tile(np.arange(n), len(rows))
        keep = a != b
        a, b = a[keep], b[keep]
        evaluated += len(a)
        d = pts[b] - pts[a]
        width = np.linalg.norm(d, axis=1)
        axis = d / width[:, None]
        tilt = jaw.tilt(width)
        cos_i = np.einsum("ij,ij->i", inward[a], axis)
        cos_j = -np.einsum("ij,ij->i", inward[b], axis)
        ok = (
            (width >= jaw.min_width)
            & (width <= jaw.max_width)
            & (cos_i >= math.cos(phi))
            & (cos_j >= np.cos(np.clip(phi - tilt, -np.pi, np.pi)))
            & (tilt < phi)
        )
        if not ok.any():
            continue
        rel = obj.com - pts[a[ok]]
        q2 = np.linalg.norm(rel - np.einsum("ij,ij->i", rel, axis[ok])[:, None] * axis[ok], axis=1)
        q2 = np.round(q2, _Q2_DECIMALS)  # equal to a picometre is a tie
        # ties: the pair whose worse normal is best aligned with the axis, then indices
        align = np.round(np.minimum(cos_i[ok], cos_j[ok]), _Q2_DECIMALS)
        k = int(np.lexsort((b[ok], a[ok], -align, q2))[0])
        cand = (float(q2[k]), -float(align[k]), int(a[ok][k]), int(b[ok][k]))
        if best is None or cand < best:
            best = cand
    if best is None:
        raise NoGrasp(
            f"no antipodal pair within {jaw.name}'s opening [{jaw.min_width}, {jaw.max_width}] m "
            f"with both normals inside the friction cone (μ = {mu})"
        )
    q2, _, i, j = best
    d = pts[j] - pts[i]
    width = float(np.linalg.norm(d))
    return JawGrasp((i, j), width, q2, d / width, float(jaw.tilt(np.array([width]))[0]), evaluated)
