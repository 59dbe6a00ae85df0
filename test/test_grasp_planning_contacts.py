"""Contact selection (seed 003, Algorithm 1 and the two-jaw counterpart) and grasp quality.

Referees: brute force over all C(n, 3) triangles (the pruned search must return the very same
triangle, ties included), the sphere's analytic optimum (a great-circle equilateral triangle
through the centre has Q2 = 0), and hand-built contact sets whose force closure is known.
"""

from __future__ import annotations

import dataclasses
import math
from itertools import combinations, pairwise

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from physai_ros.core.grasp_planning import contacts
from physai_ros.core.grasp_planning.contacts import (
    Jaw,
    NoGrasp,
    plane_alignment,
    select_pair,
    select_triangle,
    select_triangle_brute,
    triangle_metrics,
)
from physai_ros.core.grasp_planning.objects import SurfaceObject, box, ellipsoid, primitive
from physai_ros.core.grasp_planning.quality import grasp_quality
from physai_ros.errors import InvalidInput

PARALLEL = Jaw("parallel", 0.0, 0.08, lambda w: np.zeros_like(w))


def _jittered(shape: str, seed: int, spacing: float) -> SurfaceObject:
    """A primitive with its points moved slightly: breaks the grid's exact ties."""
    obj = primitive(shape, 0.06, spacing)
    rng = np.random.default_rng(seed)
    return dataclasses.replace(obj, points=obj.points + rng.normal(0.0, 2e-4, obj.points.shape))


@pytest.mark.parametrize(
    ("shape", "seed", "mu"),
    [
        ("sphere", 1, 0.5),
        ("cylinder", 2, 0.5),
        ("ellipsoid", 3, 0.6),
        ("box", 4, 1.0),
        ("sphere", 5, 0.3),
        ("ellipsoid", 6, 0.4),
    ],
)
def test_pruned_selection_equals_brute_force(shape, seed, mu):
    obj = _jittered(shape, seed, 0.013)
    assert 40 <= len(obj.points) <= 160
    fast, brute = select_triangle(obj, mu), select_triangle_brute(obj, mu)
    assert fast.indices == brute.indices
    assert fast.q1 == brute.q1 and fast.q2 == brute.q2
    # not naive: far fewer exact evaluations than C(n, 3)
    assert fast.evaluated < brute.evaluated / 5


@pytest.mark.parametrize(("shape", "seed", "mu"), [("sphere", 7, 0.5), ("box", 8, 1.0)])
def test_subsample_seeded_search_equals_brute_force(shape, seed, mu, monkeypatch):
    # the seed (best triangle of every 3rd point) sets the radius; the answer must not change
    monkeypatch.setattr(contacts, "_SEED_MIN", 40)
    monkeypatch.setattr(contacts, "_SEED_STRIDE", 3)
    obj = _jittered(shape, seed, 0.013)
    fast, brute = select_triangle(obj, mu), select_triangle_brute(obj, mu)
    assert (fast.indices, fast.q1, fast.q2) == (brute.indices, brute.q1, brute.q2)
    assert fast.evaluated < brute.evaluated / 5


UP = np.array([0.0, 0.0, 1.0])


@pytest.mark.parametrize(
    ("shape", "seed", "mu"),
    [("sphere", 1, 0.5), ("cylinder", 2, 0.5), ("ellipsoid", 3, 0.6), ("box", 4, 1.0)],
)
def test_pruned_table_top_selection_equals_brute_force(shape, seed, mu):
    """The table-top rule (most horizontal plane among Q2 within 3 mm of the best) is applied
    by the pruned search exactly as by brute force, still at a fraction of the work."""
    obj = _jittered(shape, seed, 0.013)
    fast = select_triangle(obj, mu, up=UP, q2_tie=0.003)
    brute = select_triangle_brute(obj, mu, up=UP, q2_tie=0.003)
    assert (fast.indices, fast.q1, fast.q2) == (brute.indices, brute.q1, brute.q2)
    assert fast.evaluated < brute.evaluated / 5


@pytest.mark.parametrize(("shape", "seed", "mu"), [("sphere", 7, 0.5), ("box", 8, 1.0)])
def test_subsample_seeded_table_top_search_equals_brute_force(shape, seed, mu, monkeypatch):
    # the subsample's best Q2 bounds the best; the tie window reaches past it by the tolerance
    monkeypatch.setattr(contacts, "_SEED_MIN", 40)
    monkeypatch.setattr(contacts, "_SEED_STRIDE", 3)
    obj = _jittered(shape, seed, 0.013)
    fast = select_triangle(obj, mu, up=UP, q2_tie=0.003)
    brute = select_triangle_brute(obj, mu, up=UP, q2_tie=0.003)
    assert (fast.indices, fast.q1, fast.q2) == (brute.indices, brute.q1, brute.q2)


@settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.filter_too_much],
)
@given(
    shape=st.sampled_from(["sphere", "cylinder", "ellipsoid", "box"]),
    seed=st.integers(0, 10_000),
    mu=st.sampled_from([0.6, 1.0]),
    up=st.tuples(*[st.floats(-1.0, 1.0)] * 3).filter(lambda v: np.linalg.norm(v) > 0.1),
    tie=st.floats(0.0, 0.008),
)
def test_table_top_rule_is_exact_and_keeps_its_laws(shape, seed, mu, up, tie):
    """For any table normal and tolerance: the pruned search returns brute force's triangle;
    its Q2 is within the tolerance of the best Q2 (the seed's rule's answer) and no valid
    triangle in that window has a plane more nearly parallel to the table; −up is the same
    table. Sets of ~45 points, so that brute force stays cheap."""
    obj = _jittered(shape, seed, 0.016)
    up = np.asarray(up)
    try:
        plain = select_triangle_brute(obj, mu)
    except NoGrasp:
        with pytest.raises(NoGrasp):
            select_triangle(obj, mu, up=up, q2_tie=tie)
        return
    fast = select_triangle(obj, mu, up=up, q2_tie=tie)
    brute = select_triangle_brute(obj, mu, up=up, q2_tie=tie)
    assert (fast.indices, fast.q1, fast.q2) == (brute.indices, brute.q1, brute.q2)
    assert select_triangle(obj, mu, up=-up, q2_tie=tie).indices == fast.indices
    assert fast.q2 <= plain.q2 + tie
    tri = np.array(list(combinations(range(len(obj.points)), 3)))
    q1, q2, cones = triangle_metrics(obj, tri, mu)
    window = tri[(q1 <= contacts.Q1_BAND) & cones & (q2 <= plain.q2 + tie)]
    unit = up / np.linalg.norm(up)
    chosen = plane_alignment(obj, np.array([fast.indices]), unit)[0]
    assert chosen == plane_alignment(obj, window, unit).max()
    assert abs(fast.normal @ unit) == pytest.approx(chosen, abs=1e-12)


def test_a_wider_tie_never_tilts_the_plane_and_no_up_ignores_it():
    """Widening the tolerance only adds triangles to the tie, so the chosen plane never
    becomes less horizontal; a zero tolerance keeps the seed's Q2; without ``up`` a
    tolerance changes nothing (Q2 decides first)."""
    obj = _jittered("ellipsoid", 11, 0.013)
    plain = select_triangle(obj, 0.6)
    tolerant = select_triangle(obj, 0.6, q2_tie=0.005)
    assert (tolerant.indices, tolerant.q1, tolerant.q2) == (plain.indices, plain.q1, plain.q2)
    assert tolerant.evaluated == plain.evaluated
    assert select_triangle(obj, 0.6, up=UP).q2 == plain.q2
    ties = np.linspace(0.0, 0.008, 9)  # [m]
    alignment = [abs(select_triangle(obj, 0.6, up=UP, q2_tie=t).normal[2]) for t in ties]
    assert all(b >= a - 1e-12 for a, b in pairwise(alignment))


def test_close_point_pairs_stay_exact():
    """Every point doubled 10 µm away: near-ties everywhere, and the first radius (half the
    spacing) far below the best Q2. The table-top rule still returns brute force's answer."""
    obj = _jittered("sphere", 12, 0.016)
    twin = dataclasses.replace(
        obj,
        points=np.vstack([obj.points, obj.points + 1e-5]),
        normals=np.vstack([obj.normals, obj.normals]),
    )
    fast = select_triangle(twin, 0.6, up=UP, q2_tie=0.002)
    brute = select_triangle_brute(twin, 0.6, up=UP, q2_tie=0.002)
    assert (fast.indices, fast.q1, fast.q2) == (brute.indices, brute.q1, brute.q2)


def test_table_top_sphere_grasp_is_nearly_horizontal_and_fast():
    """The 6 cm sphere at 6 mm spacing (314 points): within half a spacing of the best Q2
    there is a triangle whose plane is within 5° of the table, and finding it takes well
    under a second of CPU (the time is a loose bound: the machine is shared)."""
    import time

    obj = primitive("sphere", 0.06, 0.006)
    plain = select_triangle(obj, 1.0)
    start = time.process_time()
    grasp = select_triangle(obj, 1.0, up=UP, q2_tie=0.003)
    assert time.process_time() - start < 2.0
    assert abs(grasp.normal[2]) >= math.cos(math.radians(5.0))
    assert grasp.q2 <= plain.q2 + 0.003


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"up": np.zeros(3)}, "up"),
        ({"up": np.array([0.0, 1.0])}, "up"),
        ({"up": np.array([np.nan, 0.0, 1.0])}, "up"),
        ({"up": UP, "q2_tie": -1e-3}, "q2_tie"),
        ({"q2_tie": math.inf}, "q2_tie"),
    ],
)
def test_bad_table_preference_is_refused(kwargs, match):
    obj = primitive("sphere", 0.06, 0.013)
    for select in (select_triangle, select_triangle_brute):
        with pytest.raises(InvalidInput, match=match):
            select(obj, 0.6, **kwargs)


def test_no_candidate_at_the_first_radius_widens_it():
    """A cube's face rims only (what is left after the planner removed the face centres): every
    point's friction cone passes farther from the centre of mass than half the spacing, so the
    first radius has no candidate point at all; the search widens and finds brute force's
    triangle (before: a ValueError from an empty array)."""
    obj = box((0.06, 0.06, 0.06), 0.01)
    offset = np.abs(obj.points) * (1 - np.abs(obj.normals))  # in-face offset from face centre
    rim = np.max(offset, axis=1) > 0.8 * 0.03
    obj = dataclasses.replace(obj, points=obj.points[rim], normals=obj.normals[rim])
    assert contacts.cone_distance(obj, 0.6).min() > contacts.point_spacing(obj.points) / 2
    for up in (None, UP):
        fast = select_triangle(obj, 0.6, up=up, q2_tie=0.003)
        brute = select_triangle_brute(obj, 0.6, up=up, q2_tie=0.003)
        assert (fast.indices, fast.q1, fast.q2) == (brute.indices, brute.q1, brute.q2)


def test_grid_ties_are_broken_the_same_way():
    obj = box((0.04, 0.04, 0.04), 0.011)  # a symmetric grid: many triangles share Q2
    assert select_triangle(obj, 1.0).indices == select_triangle_brute(obj, 1.0).indices


def test_chosen_triangle_is_in_band_and_cones():
    obj = primitive("sphere", 0.06, 0.004)
    grasp = select_triangle(obj, 0.5)
    q1, q2, cones = triangle_metrics(obj, np.array([grasp.indices]), 0.5)
    assert q1[0] <= 0.3 and bool(cones[0])
    assert q2[0] == pytest.approx(grasp.q2)
    assert grasp.q2 < 0.02 * 0.03  # near the sphere's centre: Q2 → 0 as points densify
    quality = grasp_quality(
        obj.points[list(grasp.indices)],
        -obj.normals[list(grasp.indices)],
        obj.com,
        0.5,
        torque_scale=obj.size,
    )
    assert quality.force_closure and quality.epsilon > 0.0


def test_5000_points_evaluate_a_tiny_fraction_of_all_triangles():
    obj = ellipsoid((0.03, 0.03, 0.03), 0.0015)
    assert 4900 <= len(obj.points) <= 5100
    grasp = select_triangle(obj, 0.5)
    assert grasp.evaluated < math.comb(len(obj.points), 3) * 1e-5


def test_table_top_preference_on_5000_points_evaluates_a_tiny_fraction():
    """The level bound keeps the second pass small: < 10⁻⁵ of C(n, 3) in all, and the plane
    found on the 6 cm sphere is within 1° of the table."""
    obj = ellipsoid((0.03, 0.03, 0.03), 0.0015)
    grasp = select_triangle(obj, 0.5, up=UP, q2_tie=0.0015 / 2)
    assert grasp.evaluated < math.comb(len(obj.points), 3) * 1e-5
    assert abs(grasp.normal[2]) >= math.cos(math.radians(1.0))


def test_no_triangle_in_band_is_reported_with_the_reason():
    # a box with μ = 0.5: three fingers on three faces need μ ≥ 0.71 to meet at the centre
    with pytest.raises(NoGrasp, match="friction cone"):
        select_triangle(box((0.04, 0.04, 0.04), 0.01), 0.5)


def test_too_few_points_and_bad_friction_are_refused():
    obj = primitive("sphere", 0.06, 0.01)
    tiny = dataclasses.replace(obj, points=obj.points[:2], normals=obj.normals[:2])
    with pytest.raises(NoGrasp, match="too few"):
        select_triangle(tiny, 0.5)
    with pytest.raises(InvalidInput, match="mu"):
        select_triangle(obj, 0.0)
    with pytest.raises(InvalidInput, match="mu"):
        select_pair(obj, float("nan"), PARALLEL)


def _pair_brute(obj: SurfaceObject, mu: float, jaw: Jaw) -> tuple[int, int]:
    best = None
    cos_phi = math.cos(math.atan(mu))
    for i, j in ((i, j) for i in range(len(obj.points)) for j in range(len(obj.points))):
        if i == j:
            continue
        d = obj.points[j] - obj.points[i]
        w = float(np.linalg.norm(d))
        u = d / w
        tilt = float(jaw.tilt(np.array([w]))[0])
        if not (jaw.min_width <= w <= jaw.max_width and tilt < math.atan(mu)):
            continue
        if -obj.normals[i] @ u < cos_phi or obj.normals[j] @ u < math.cos(math.atan(mu) - tilt):
            continue
        rel = obj.com - obj.points[i]
        q2 = round(float(np.linalg.norm(rel - (rel @ u) * u)), 12)  # picometre ties
        align = round(min(-obj.normals[i] @ u, obj.normals[j] @ u), 12)
        if best is None or (q2, -align, i, j) < best:
            best = (q2, -align, i, j)
    assert best is not None
    return best[2], best[3]


@pytest.mark.parametrize("shape", ["box", "sphere", "cylinder", "ellipsoid"])
def test_antipodal_pair_equals_brute_force_and_respects_the_jaw(shape):
    obj = _jittered(shape, 7, 0.012)
    hinged = Jaw("hinged", 0.0, 0.07, lambda w: 0.2 * w / 0.07)
    for jaw in (PARALLEL, hinged):
        grasp = select_pair(obj, 0.5, jaw)
        assert grasp.indices == _pair_brute(obj, 0.5, jaw)
        assert jaw.min_width <= grasp.width <= jaw.max_width


def test_jaw_opening_limit_gives_no_grasp():
    narrow = Jaw("narrow", 0.0, 0.01, lambda w: np.zeros_like(w))
    with pytest.raises(NoGrasp, match="opening"):
        select_pair(primitive("box", 0.06, 0.01), 0.5, narrow)


def test_force_closure_of_known_contact_sets():
    centre = np.zeros(3)
    # three contacts at 120° in a plane, pushing to the centre: force closure with friction
    ang = np.radians([90, 210, 330])
    pts = 0.03 * np.column_stack([np.cos(ang), np.sin(ang), np.zeros(3)])
    q = grasp_quality(pts, -pts / 0.03, centre, 0.5, torque_scale=0.03)
    assert q.force_closure and q.epsilon > 0.01
    # without friction three point contacts cannot resist a twist: not force closure
    assert not grasp_quality(pts, -pts / 0.03, centre, 0.0, torque_scale=0.03).force_closure
    # two hard antipodal contacts: the twist about their axis is free (ε = 0) ...
    two = np.array([[-0.03, 0, 0], [0.03, 0, 0]])
    push = np.array([[1.0, 0, 0], [-1.0, 0, 0]])
    assert grasp_quality(two, push, centre, 0.5, torque_scale=0.03).epsilon == 0.0
    # ... soft-finger pads with torsional friction close it
    soft = grasp_quality(two, push, centre, 0.5, torsion=0.005, torque_scale=0.03)
    assert soft.force_closure and soft.epsilon > 0.0
    # more friction, a larger ε
    wide = grasp_quality(pts, -pts / 0.03, centre, 1.0, torque_scale=0.03)
    assert wide.epsilon > q.epsilon


def test_triangle_metrics_of_an_equilateral_triangle():
    pts = np.array([[1.0, 0, 0], [-0.5, math.sqrt(3) / 2, 0], [-0.5, -math.sqrt(3) / 2, 0]])
    obj = SurfaceObject("t", pts, pts, np.zeros(3), lambda x: np.zeros(len(x), bool))
    q1, q2, cones = triangle_metrics(obj, np.array(list(combinations(range(3), 3))), 0.1)
    assert q1[0] == pytest.approx(0.0, abs=1e-12) and q2[0] == pytest.approx(0.0, abs=1e-12)
    assert bool(cones[0])
