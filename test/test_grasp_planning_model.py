"""The contact–deformation model as laws: elasticity calibration, Hertz, slip onset, closing.

Tolerances and why:
- lattice (E, ν) mapping: the stored energy of a homogeneous small strain equals the
  continuum's ½λ(tr ε)² + μ ε:ε to 1e-4 (exact in the linear limit; the rest is ε² terms);
- Hertz: a 20 mm tip pressed 0.2 mm into a 24 × 24 × 12 mm block, fixed at the bottom,
  frictionless; the error falls as the lattice is refined (3 → 2 → 1.5 mm) and is within 5 %
  at the finest (the block's finite thickness and the skin penalty keep it from zero);
- slip onset: gross slip starts when |ΣF_t| = μ ΣF_n within 2 % (the issue's bound);
- closing: equal squeeze of a symmetric grasp within 1 % (two jaws on a cube; three fingers on
  a sphere whose lattice has its 3-fold axis vertical); at equilibrium the weight is carried
  within the friction cone, μ ΣN + ΣN_z ≥ m g within 5 % (the equilibrium criterion's own
  force tolerance; N_z the normals' upward share under hemispherical tips: 16 % of m g on the
  cube, 21 % on the sphere, so μ ΣN alone is 0.88 and 0.85 m g there); the squeeze tends
  to the rigid least squeeze m g / μ as E rises (within 5 % at 1 and 10 MPa: one force step,
  with contact points fine enough that their spacing tilts the normals by only 6 %).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from physai_ros.core.grasp_planning.closing import (
    ClosingConfig,
    Finger,
    NoEquilibrium,
    Statics,
    close,
    node_contact_stiffness,
)
from physai_ros.core.grasp_planning.contact_law import (
    Sticking,
    contact_law,
    normal_force,
    tangential,
    touch,
)
from physai_ros.core.grasp_planning.lattice import (
    build_network,
    elastic_energy,
    internal_forces,
    material,
)
from physai_ros.core.grasp_planning.objects import box, primitive
from physai_ros.core.pick.grip import cone_ratio
from physai_ros.errors import InvalidInput

MASS = 0.05  # [kg]
G = 9.81


@pytest.mark.parametrize("nu", [0.0, 0.25, 0.45])
def test_lattice_reproduces_the_continuum_energy(nu):
    mat = material(1e5, nu)
    net = build_network(box((0.04, 0.04, 0.04), 0.004), mat, 0.1, 0.01)
    volume = len(net.cells) * net.spacing**3
    for eps in (np.diag([1e-4, 0, 0]), np.array([[0, 1e-4, 0], [1e-4, 0, 0], [0, 0, 0]])):
        expected = volume * (
            0.5 * mat.lame_lambda * np.trace(eps) ** 2 + mat.lame_mu * np.sum(eps**2)
        )
        assert elastic_energy(net, net.x0 @ (np.eye(3) + eps).T) == pytest.approx(
            expected, rel=1e-4
        )


def test_internal_forces_are_the_energy_gradient():
    net = build_network(box((0.04, 0.04, 0.04), 0.004), material(1e5, 0.45), 0.1, 0.01)
    x = net.x0 + 1e-3 * np.random.default_rng(0).standard_normal(net.x0.shape)
    force = internal_forces(net, x, np.zeros_like(x))
    for node, axis in ((7, 1), (30, 2), (60, 0)):
        h = 1e-8
        plus, minus = x.copy(), x.copy()
        plus[node, axis] += h
        minus[node, axis] -= h
        fd = -(elastic_energy(net, plus) - elastic_energy(net, minus)) / (2 * h)
        assert force[node, axis] == pytest.approx(fd, rel=1e-5)


@pytest.mark.parametrize(
    ("young", "nu"), [(0.0, 0.3), (-1.0, 0.3), (1e5, -0.1), (1e5, 0.5), (float("nan"), 0.3)]
)
def test_non_physical_materials_are_refused(young, nu):
    with pytest.raises(InvalidInput):
        material(young, nu)


def _press(spacing: float, delta: float, radius: float = 0.02) -> float:
    """Normal force [N] of a frictionless tip pressed ``delta`` [m] into a fixed-bottom block."""
    net = build_network(box((0.024, 0.024, 0.012), spacing / 2), material(1e5, 0.3), 0.01, spacing)
    law = contact_law(node_contact_stiffness(net), 0.5, 0.3)
    fixed = net.x0[:, 2] < net.x0[:, 2].min() + 1e-9
    sim = Statics(net, law, 0.0, fixed)
    tip = np.array([[0.0, 0.0, net.x0[:, 2].max() + radius - delta]])
    sim.solve(tip, radius, None)
    ((force, _),) = sim.forces(tip, radius, None)[0]
    return float(-force.sum(axis=0)[2])


def test_hertz_law_converges_as_the_lattice_is_refined():
    radius, delta = 0.02, 2e-4
    hertz = 4 / 3 * 1e5 / (1 - 0.3**2) * math.sqrt(radius) * delta**1.5
    errors = [abs(_press(a, delta) / hertz - 1) for a in (0.003, 0.002, 0.0015)]
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.05


def test_hunt_crossley_normal_law():
    law = contact_law(1000.0, 0.5, 0.3, restitution=0.5, impact_speed=0.1)
    depth = np.array([1e-3, 4e-3])
    assert normal_force(law, depth) == pytest.approx(1000.0 * depth**1.5)
    # damping λ = 3k(1 − e)/(2 v⁻): pressing in adds λ δⁿ δ̇, pulling out never pulls
    lam = 3 * 1000.0 * 0.5 / (2 * 0.1)
    assert normal_force(law, depth, 0.01) == pytest.approx(
        1000.0 * depth**1.5 + lam * depth**1.5 * 0.01
    )
    assert np.all(normal_force(law, depth, -1e3) == 0.0)
    assert normal_force(law, np.array([-1e-3]))[0] == 0.0


def test_stick_slip_switching_on_one_point():
    law = contact_law(1e4, 0.5, 0.3)
    unit = np.array([[0.0, 0.0, 1.0]])
    depth = np.array([1e-3])
    fn = normal_force(law, depth)[0]
    state = touch(Sticking.empty(1), np.array([[0.0, 0.0, 0.01]]), depth)  # anchored here
    kt = law.kt_ratio * 1.5 * 1e4 * 1e-3**0.5
    limit_u = law.mu * fn / kt  # displacement at which the spring reaches μ F_n
    ft, state, drag = tangential(law, np.array([[0.5 * limit_u, 0, 0.01]]), unit, depth, state)
    assert ft[0, 0] == pytest.approx(-0.5 * law.mu * fn) and drag == 0.0 and not state.sliding[0]
    ft, state, drag = tangential(law, np.array([[2.0 * limit_u, 0, 0.01]]), unit, depth, state)
    assert np.linalg.norm(ft[0]) == pytest.approx(law.mu * fn) and state.sliding[0]
    assert drag == pytest.approx(limit_u)  # the anchor was dragged to the cone's edge
    # coming back a little: the spring unloads and the point sticks again
    ft, state, drag = tangential(law, np.array([[1.5 * limit_u, 0, 0.01]]), unit, depth, state)
    assert not state.sliding[0] and drag == 0.0 and abs(ft[0, 0]) < law.mu * fn
    # contact broken: the state is reset
    state = touch(state, np.array([[0.0, 0.0, 0.02]]), np.array([-1e-3]))
    assert not state.active[0] and np.all(state.anchor == 0.0)


def test_slip_begins_when_the_tangential_force_reaches_mu_fn():
    mu, radius, delta = 0.5, 0.02, 3e-4
    net = build_network(box((0.024, 0.024, 0.012), 0.002), material(1e5, 0.3), 0.01, 0.004)
    law = contact_law(node_contact_stiffness(net), mu, 0.3)
    fixed = net.x0[:, 2] < net.x0[:, 2].min() + 1e-9
    sim = Statics(net, law, 0.0, fixed)
    top = net.x0[:, 2].max()
    states = [Sticking.empty(net.skin.shape[0])]
    ratios, gross = [], None
    for k in range(40):
        tip = np.array([[k * 1e-5, 0.0, top + radius - delta]])
        for _ in range(30):
            states = sim.touching(tip, radius, states)
            sim.solve(tip, radius, states)
            out, states, drag = sim.forces(tip, radius, states)
            if drag < 1e-9:
                break
        force, _fn = out[0]
        total = force.sum(axis=0)
        ratios.append(math.hypot(total[0], total[1]) / (mu * -total[2]))
        if gross is None and np.all(states[0].sliding[states[0].active]):
            gross = k
            break
    assert gross is not None, f"no gross slip; |F_t|/(μ F_n) reached {max(ratios):.3f}"
    assert ratios[gross] == pytest.approx(1.0, abs=0.02)
    assert max(ratios[:gross]) < 1.0 + 0.02


def _normal_lift(result) -> float:
    """Σ of the normal forces' upward components [N]: a point below a hemispherical tip's
    centre is pushed up as well as in, so the normals carry part of the weight themselves."""
    lift = 0.0
    for tip, normal in zip(result.tips, result.point_normal, strict=True):
        unit = result.skin - tip
        lift += float(np.sum(normal * unit[:, 2] / np.linalg.norm(unit, axis=1)))
    return lift


def _squeeze(
    young: float,
    cells: int = 4,
    mu: float = 0.6,
    cfg: ClosingConfig | None = None,
    skin_per_edge: int = 2,
    progress=None,
):
    net = build_network(
        box((0.04, 0.04, 0.04), 0.004),
        material(young, 0.3),
        MASS,
        0.04 / cells,
        skin_per_edge=skin_per_edge,
    )
    law = contact_law(node_contact_stiffness(net), mu, 0.3)
    radius = 0.01
    fingers = [
        Finger(np.array([s * (0.02 + radius + 0.004), 0.0, 0.0]), np.array([-s, 0, 0.0]), radius)
        for s in (-1.0, 1.0)
    ]
    return close(net, fingers, law, cfg, progress)


def test_symmetric_grasp_equal_forces_and_friction_cone_at_equilibrium():
    reports = []
    result = _squeeze(5e4, progress=reports.append)
    # what `physai plan` shows: step by step, the weight carried, ending done at the last step
    assert [r.step for r in reports] == sorted(r.step for r in reports)
    assert reports[0].step == 1 and reports[0].carried == 0.0 and not reports[0].done
    assert reports[-1].done and reports[-1].step == result.steps and reports[-1].lifts >= 1
    assert reports[-1].carried >= ClosingConfig().lift_gate
    assert not any(r.done for r in reports[:-1])
    f1, f2 = np.linalg.norm(result.finger_forces, axis=1)
    assert f1 == pytest.approx(f2, rel=0.01)
    assert result.squeeze[0] == pytest.approx(result.squeeze[1], rel=0.01)
    # the weight is carried: net force below 5 % of it, friction cone law with ΣN of the points
    assert result.residual_force < 0.05 * MASS * G
    # the weight W = Σ(N_z + T_z) ≤ ΣN_z + μ ΣN (|T| ≤ μ N at every point), up to the 5 %
    # residual; the normals' own lift is 16 % here (the cube sinks 1.1 mm below the tips'
    # centres), so the lesson-16 form μ ΣN ≥ m g holds only to that share (measured 0.88): the
    # planner's force targets are raised to that law (test_grasp_planning_pipeline.py)
    total_n = result.point_normal.sum()
    assert 0.6 * total_n + _normal_lift(result) >= 0.95 * MASS * G
    assert cone_ratio(0.6, result.point_normal.sum(axis=1), MASS) >= 0.85
    assert sum(result.finger_forces[:, 2]) == pytest.approx(MASS * G, rel=0.05)


def test_three_finger_grasp_of_a_sphere_reaches_equilibrium_with_equal_forces():
    # The lattice's body diagonal is turned vertical: its 3-fold axis, so three fingers 120°
    # apart in the horizontal plane are a truly symmetric grasp of the voxelised sphere (with
    # an axis-aligned lattice one finger presses a flat face, the others a staircase).
    diameter, tip = 0.05, 0.012
    net = build_network(primitive("sphere", diameter, 0.004), material(5e4, 0.3), MASS, 0.05 / 3)
    centre = net.x0.mean(axis=0)
    up = np.ones(3) / math.sqrt(3)
    side = np.array([1.0, -1.0, 0.0]) / math.sqrt(2)
    turn = np.array([side, np.cross(up, side), up])  # rows: the new x, y, z axes
    net = net._replace(x0=(net.x0 - centre) @ turn.T)
    law = contact_law(node_contact_stiffness(net), 0.6, 0.3)
    fingers = []
    for angle in (0.0, 2 * math.pi / 3, 4 * math.pi / 3):
        d = np.array([math.cos(angle), math.sin(angle), 0.0])
        fingers.append(Finger(-(diameter / 2 + tip + 0.5 * net.spacing) * d, d, tip))
    result = close(net, fingers, law)
    forces = np.linalg.norm(result.finger_forces, axis=1)
    assert forces.max() - forces.min() < 0.01 * forces.mean()
    assert result.squeeze.max() - result.squeeze.min() < 0.01 * result.squeeze.mean()
    # static equilibrium: net force < 5 % of the weight, each finger lifts a third of it
    assert result.residual_force < 0.05 * MASS * G
    assert result.finger_forces[:, 2] == pytest.approx([MASS * G / 3] * 3, rel=0.05)
    # the weight within the friction cone: μ ΣN + ΣN_z ≥ m g up to the 5 % residual (see the
    # cube's test); the tips sit above the sinking sphere's contact patches, so the normals
    # lift a fifth of the weight (measured 0.21 m g) and μ ΣN alone is 0.85 m g
    assert 0.6 * result.point_normal.sum() + _normal_lift(result) >= 0.95 * MASS * G
    assert cone_ratio(0.6, result.point_normal.sum(axis=1), MASS) >= 0.80


@pytest.mark.slow
def test_squeeze_tends_to_the_rigid_least_squeeze_as_the_object_stiffens():
    # Contact points 1.25 mm apart (8 per 10 mm cell edge): a tip between four of them is
    # touched 0.625 mm off its axis, which tilts the normals by h/R = 6 % in the stiff limit;
    # at 2 points per edge (h/R = 25 %) a stiff cube hangs on the tips' tops at 0.7 of the
    # rigid squeeze (measured 0.707 at E = 10 MPa), an artefact of the sampled face.
    rigid = MASS * G / 0.6
    results = [_squeeze(e, skin_per_edge=8) for e in (2e4, 1e6, 1e7)]
    ratios = [r.squeeze.sum() / rigid for r in results]
    deform = [np.abs(r.x - r.x0).max() for r in results]
    assert deform[0] > deform[1] > deform[2]
    # soft: the body cradles the tips (measured 0.89); stiff: within 5 % (one force step)
    assert abs(ratios[1] - 1.0) < 0.05 and abs(ratios[2] - 1.0) < 0.05
    assert abs(ratios[0] - 1.0) > max(abs(ratios[1] - 1.0), abs(ratios[2] - 1.0))


def test_closing_without_equilibrium_is_an_error():
    with pytest.raises(NoEquilibrium):
        _squeeze(5e4, mu=0.05, cfg=ClosingConfig(max_steps=3))
