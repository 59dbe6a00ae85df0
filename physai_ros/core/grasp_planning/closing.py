"""The closing (seed §5): fingers advance step by step until the object hangs in static balance.

Each step moves every fingertip a little toward the grasp centre (position control, like the
paper's iterative closing) and brings the hand + object to rest: the network's nodes take the
positions that minimise elastic energy + Hunt–Crossley contact energy + stick-spring energy −
gravity's work (L-BFGS, exact gradients), then the stick–slip rule drags the anchors of the
points whose spring exceeds the friction cone, and the two alternate until no anchor moves.
The object is free — only the tips hold it, gravity (−z, true mass) pulls it.

Static equilibrium, the end of the closing: the slip has stopped (largest anchor drag below
``drag_tol``), the net force of contacts and gravity on the object is below ``force_tol`` ×
weight and the net torque below ``force_tol`` × weight × object size, and the object has not
slid down more than ``max_sink`` since the first contact. A step whose slip does not stop means
friction cannot carry the weight yet: the fingers advance. Step sizes adapt so that the squeeze
grows by about ``force_step`` × the rigid least squeeze per step, and a step that held but added
more than two such steps is taken back and retaken in smaller steps: the result is the least
squeeze that holds, within one force step, not an overshoot of the first step that held (a
stiff body gains a lot of force per millimetre: 1.22 × the rigid squeeze at E = 10 MPa before).
Running out of ``max_steps`` or sliding away is a :class:`NoEquilibrium` error, never a silent
best effort.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy.optimize import OptimizeResult, minimize

from physai_ros.core.grasp_planning.contact_law import (
    ContactLaw,
    Sticking,
    normal_force,
    tangent_stiffness,
    tangential,
    touch,
)
from physai_ros.core.grasp_planning.lattice import Network, elastic_energy, internal_forces
from physai_ros.core.pick.grip import G
from physai_ros.errors import PhysaiError


class NoEquilibrium(PhysaiError):
    """The closing did not reach static equilibrium; the message says what was seen."""


class Finger(NamedTuple):
    """A fingertip: its centre's start [m], unit closing direction, hemisphere radius [m]."""

    start: np.ndarray
    direction: np.ndarray
    radius: float


@dataclass(frozen=True)
class ClosingConfig:
    """Closing parameters (SI units)."""

    force_step: float = 0.05  # squeeze growth per step, × the rigid least squeeze per finger
    force_tol: float = 0.05  # net force/torque bound, fraction of the weight
    drag_tol: float = 1e-7  # [m] anchors dragged less than this: the slip has stopped
    max_slip_iterations: int = 12  # anchor drags per step before the step is "not held"
    max_sink: float = 0.01  # [m] the object may slide down this far after first contact
    max_steps: int = 200  # finger steps before the closing is declared impossible
    gravity: float = G  # [m/s²] along −z of the object frame
    friction: bool = True  # False: frictionless tips (the Hertz check)
    lift_gate: float = 0.7  # lift only once μ ΣN ≥ this × weight (below, it cannot hold)
    max_refinements: int = 6  # steps taken back when one that held added > 2 force steps


class ClosingProgress(NamedTuple):
    """How far a closing is, for a progress display. Its length is not known up front (the
    steps adapt, a lift that holds too firmly is taken back and retaken in smaller steps, and a
    step costs from one to tens of seconds); what measures it is the share of the weight the
    tips' friction carries: the closing ends once a lift holds, which takes μ ΣN near m g.

    step: the finger step under way (at most ``max_steps``); carried: μ ΣN / m g on the table
    after the last step (the lift is tried from ``lift_gate``); lifts: lifts tried;
    refinements: steps taken back; done: the closing has ended (held)."""

    step: int
    max_steps: int
    carried: float
    lifts: int
    refinements: int
    done: bool = False


class ClosingResult(NamedTuple):
    """Equilibrium of the hand + object (object frame, SI units).

    finger_forces: (F, 3) contact force of each finger on the object [N]; squeeze: (F,) each
    finger's force along its closing direction [N] (the force target); tips: (F, 3) tip
    centres [m]; x, x0: (N, 3) deformed and rest node positions; point_normal: (F, P) normal
    force on each surface contact point [N] (÷ skin spacing² = pressure); skin: (P, 3) deformed
    contact points; steps: finger steps taken; residual_force [N], residual_torque [N·m]: net
    force and torque at the end; weight [N]; sink: slide since first contact [m].
    """

    finger_forces: np.ndarray
    squeeze: np.ndarray
    tips: np.ndarray
    x: np.ndarray
    x0: np.ndarray
    point_normal: np.ndarray
    skin: np.ndarray
    steps: int
    residual_force: float
    residual_torque: float
    weight: float
    sink: float

    @property
    def normal_sum(self) -> float:
        """Σ of the point normal forces over all fingers [N] (ΣN of the friction-cone law)."""
        return float(self.point_normal.sum())


def node_contact_stiffness(net: Network, penalty: float = 3.0) -> float:
    """Per contact point Hunt–Crossley k [N/m^1.5]: the point as a sphere of half the skin
    spacing s in Hertz contact with a rigid tip (4/3 E* √(s/2)), times ``penalty`` so that the
    tip–point penetration stays small beside the body's own deformation (it vanishes as the
    lattice is refined)."""
    e_star = net.material.young / (1.0 - net.material.poisson**2)
    return penalty * 4.0 / 3.0 * e_star * math.sqrt(net.skin_spacing / 2.0)


class Statics:
    """Quasi-static hand + object: node positions, per-finger stick states, tip centres."""

    def __init__(self, net: Network, law: ContactLaw, gravity: float, fixed: np.ndarray | None):
        self.net, self.law = net, law
        self.x = net.x0.copy()
        self.gravity = gravity
        self.weight_force = np.zeros_like(net.x0)
        self.weight_force[:, 2] = -gravity * net.mass
        self.free = np.ones(len(net.x0), bool) if fixed is None else ~fixed

    def _contact(self, xs: np.ndarray, centre: np.ndarray, radius: float):
        rel = xs - centre
        dist = np.linalg.norm(rel, axis=1)
        return rel, radius - dist, rel / np.maximum(dist, 1e-300)[:, None]

    def solve(
        self,
        tips: np.ndarray,
        radius: float,
        states: list[Sticking] | None,
        floor: float | None = None,
    ) -> None:
        """Bring the nodes to rest for fixed tips and anchors (None: frictionless); stop early
        once the nodes' mean height falls below ``floor`` [m] (the object slides away: when
        friction cannot carry the weight the energy falls without bound, and L-BFGS would run
        to its iteration limit, tens of seconds, to say so).

        Friction enters as an elastic–perfectly-plastic spring (a Huber potential): ½ k_t u²
        up to the cone's edge k_t |u| = μ F_n, then μ F_n |u| beyond it, with k_t and F_n taken
        at the solve's start. So a point slides within the minimisation, at the Coulomb force,
        instead of one anchor drag per solve: dragging anchors between linear-spring solves
        converged by only ~10 % per solve once the object hung on its tips (three fingers on
        a sphere: still creeping after 12 drags at every finger step, 98 steps, 400 s).
        """
        net, law, skin = self.net, self.law, self.net.skin
        frozen = []
        for f, centre in enumerate(tips):
            _, depth, unit = self._contact(skin @ self.x, centre, radius)
            if states is not None:
                kt = np.where(states[f].active, tangent_stiffness(law, depth), 0.0)
                limit = np.where(states[f].active, law.mu * normal_force(law, depth), 0.0)
                # the spring's reach: beyond it the point slides at μ F_n (k_t = 0: none)
                reach = np.divide(limit, kt, out=np.zeros_like(kt), where=kt > 0)
                frozen.append((kt, unit, limit, reach))
        free = self.free
        x_all = self.x.copy()

        def energy(flat: np.ndarray) -> tuple[float, np.ndarray]:
            x_all[free] = flat.reshape(-1, 3)
            e = elastic_energy(net, x_all) - float(np.sum(self.weight_force * x_all))
            grad = -internal_forces(net, x_all, np.zeros_like(x_all)) - self.weight_force
            xs = skin @ x_all
            g_skin = np.zeros_like(xs)
            for f, centre in enumerate(tips):
                rel, depth, unit = self._contact(xs, centre, radius)
                d = np.maximum(depth, 0.0)
                e += float(np.sum(law.k * d ** (law.exponent + 1) / (law.exponent + 1)))
                g_skin -= normal_force(law, d)[:, None] * unit
                if states is not None:
                    kt, u0, limit, reach = frozen[f]
                    u = rel - states[f].anchor
                    u -= np.einsum("ij,ij->i", u, u0)[:, None] * u0
                    size = np.sqrt(np.einsum("ij,ij->i", u, u))
                    slides = size > reach
                    e += float(
                        np.sum(np.where(slides, limit * (size - 0.5 * reach), 0.5 * kt * size**2))
                    )
                    pull = np.where(slides, limit / np.maximum(size, 1e-300), kt)
                    g_skin += pull[:, None] * u
            grad += skin.T @ g_skin
            return e, grad[free].ravel()

        def slid_away(intermediate_result: OptimizeResult) -> None:
            if floor is not None and float(np.mean(intermediate_result.x[2::3])) < floor:
                raise StopIteration

        scale = max(self.gravity * float(self.net.mass.sum()), 1e-6)
        res = minimize(
            energy,
            self.x[free].ravel(),
            jac=True,
            method="L-BFGS-B",
            callback=slid_away,
            options={"maxiter": 2000, "gtol": 1e-5 * scale, "ftol": 1e-12},
        )
        self.x[free] = res.x.reshape(-1, 3)

    def gravity_on(self, on: bool) -> None:
        """Gravity on the nodes (true masses), or off while a support carries the weight."""
        self.weight_force[:, 2] = -self.gravity * self.net.mass if on else 0.0

    def touching(self, tips: np.ndarray, radius: float, states: list[Sticking]) -> list:
        """Stick states with the points touching now anchored (see ``touch``)."""
        xs = self.net.skin @ self.x
        return [
            touch(st, *self._contact(xs, c, radius)[:2])
            for st, c in zip(states, tips, strict=False)
        ]

    def forces(self, tips: np.ndarray, radius: float, states: list[Sticking] | None):
        """Per finger: contact forces on the skin points (normal + tangential), normal
        magnitudes, the updated stick states and the largest anchor drag."""
        xs = self.net.skin @ self.x
        out, new_states, drag = [], [], 0.0
        for f, centre in enumerate(tips):
            rel, depth, unit = self._contact(xs, centre, radius)
            fn = normal_force(self.law, depth)
            force = fn[:, None] * unit
            if states is not None:
                state = touch(states[f], rel, depth)
                ft, state, d = tangential(self.law, rel, unit, depth, state)
                force = force + ft
                new_states.append(state)
                drag = max(drag, d)
            out.append((force, fn))
        return out, (new_states if states is not None else None), drag


def _first_touch(net: Network, finger: Finger) -> float:
    """Distance [m] the tip travels along its direction until it touches the skin."""
    rel = net.skin @ net.x0 - finger.start
    along = rel @ finger.direction
    lateral2 = np.einsum("ij,ij->i", rel, rel) - along**2
    reach = lateral2 <= finger.radius**2
    if not reach.any():
        raise NoEquilibrium("a fingertip's closing line misses the object")
    return float(np.min(along[reach] - np.sqrt(finger.radius**2 - lateral2[reach])))


def _relax(sim: Statics, tips, radius, states, cfg: ClosingConfig, z0: float):
    """Solve and drag anchors until the slip stops, the iterations run out, or the object has
    slid more than ``max_sink``; returns the states, the forces and the last drag [m]."""
    drag = math.inf
    for _ in range(cfg.max_slip_iterations):
        if states is not None:  # points touching now stick where they are before the solve
            states = sim.touching(tips, radius, states)
        sim.solve(tips, radius, states, z0 - cfg.max_sink)
        out, new_states, drag = sim.forces(tips, radius, states)
        states = new_states
        if drag < cfg.drag_tol or z0 - float(np.mean(sim.x[:, 2])) > cfg.max_sink:
            break
    return states, out, drag


def _next_step(step: float, squeeze: np.ndarray, previous: float, target: float) -> float:
    """Finger step [m] that should add ``target`` [N] of squeeze, from the last step's gain."""
    gained = float(squeeze.mean()) - previous
    if gained <= 0.0:
        return step
    return float(np.clip(step * target / gained, 0.2 * step, 5.0 * step))


def close(
    net: Network,
    fingers: list[Finger],
    law: ContactLaw,
    cfg: ClosingConfig | None = None,
    progress: Callable[[ClosingProgress], None] | None = None,
) -> ClosingResult:
    """Advance the fingers step by step to static equilibrium (see the module docstring).
    ``progress`` is told where the closing is at each step and each solve (``ClosingProgress``)."""
    cfg = cfg or ClosingConfig()
    radius = fingers[0].radius
    sim = Statics(net, law, cfg.gravity, None)
    weight = net.total_mass * cfg.gravity
    size = float(np.max(np.linalg.norm(net.x0 - net.x0.mean(axis=0), axis=1)))
    rigid = weight / (law.mu * len(fingers))  # least squeeze per finger of a rigid object [N]
    offset = np.array([_first_touch(net, f) for f in fingers])
    direction = np.array([f.direction for f in fingers])
    starts = np.array([f.start for f in fingers])
    states = [Sticking.empty(net.skin.shape[0]) for _ in fingers]
    e_star = net.material.young / (1 - net.material.poisson**2)
    # first step: 0.3 × the rigid least squeeze by Hertz (later steps adapt to what is felt)
    step = (0.3 * rigid / (4.0 / 3.0 * e_star * math.sqrt(radius))) ** (2 / 3)
    z0 = float(np.mean(sim.x[:, 2]))
    previous = 0.0  # squeeze of the last step [N]
    friction = cfg.friction
    refinements = lifts = 0
    carried = 0.0  # μ ΣN / m g on the table after the last step

    def report(n_step: int, done: bool = False) -> None:
        if progress is not None:
            progress(ClosingProgress(n_step, cfg.max_steps, carried, lifts, refinements, done))

    for n_step in range(1, cfg.max_steps + 1):
        report(n_step)
        before = (sim.x.copy(), states, offset.copy(), previous)
        offset += step
        tips = starts + offset[:, None] * direction
        # squeeze on the table: the support carries the weight
        sim.gravity_on(False)
        states, out, _ = _relax(sim, tips, radius, states if friction else None, cfg, z0)
        table = (sim.x.copy(), states)
        capacity = law.mu * sum(float(fn.sum()) for _, fn in out)
        carried = capacity / weight
        report(n_step)
        # the step adapts to the squeeze on the table: a failed lift's squeeze is that of a
        # body sliding out of the tips, no measure of what the last step added
        held_squeeze = np.array(
            [f.sum(axis=0) @ d for (f, _), d in zip(out, direction, strict=True)]
        )
        step_next = _next_step(step, held_squeeze, previous, cfg.force_step * rigid)
        if friction and capacity < cfg.lift_gate * weight:
            # friction cannot carry the weight yet: no need to try lifting
            step, previous = step_next, float(held_squeeze.mean())
            continue
        # lift: the weight goes to the fingers; held if the slip stops
        lifts += 1
        report(n_step)
        sim.gravity_on(True)
        _, out, drag = _relax(sim, tips, radius, states if friction else None, cfg, z0)
        node_force = sum(net.skin.T @ f for f, _ in out)
        total = node_force + sim.weight_force
        com = (net.mass[:, None] * sim.x).sum(axis=0) / net.total_mass
        residual_f = float(np.linalg.norm(total.sum(axis=0)))
        residual_t = float(np.linalg.norm(np.cross(sim.x - com, total).sum(axis=0)))
        sink = z0 - float(np.mean(sim.x[:, 2]))
        squeeze = np.array([f.sum(axis=0) @ d for (f, _), d in zip(out, direction, strict=True)])
        held = (
            drag < cfg.drag_tol
            and sink <= cfg.max_sink
            and residual_f < cfg.force_tol * weight
            and residual_t < cfg.force_tol * weight * size
            and np.all(squeeze > 0.0)
        )
        gained = float(held_squeeze.mean()) - previous
        if held and gained > 2.0 * cfg.force_step * rigid and refinements < cfg.max_refinements:
            # held, but this step added more than two force steps: the least squeeze that
            # holds may lie inside it. Back to the table state before it, smaller steps.
            sim.x, states, offset, previous = before
            step, refinements = step_next, refinements + 1
            continue
        if held:
            report(n_step, done=True)
            return ClosingResult(
                finger_forces=np.array([f.sum(axis=0) for f, _ in out]),
                squeeze=squeeze,
                tips=tips,
                x=sim.x.copy(),
                x0=net.x0.copy(),
                point_normal=np.array([fn for _, fn in out]),
                skin=net.skin @ sim.x,
                steps=n_step,
                residual_force=residual_f,
                residual_torque=residual_t,
                weight=weight,
                sink=sink,
            )
        sim.x, states = table  # not held: back on the table, squeeze harder
        step, previous = step_next, float(held_squeeze.mean())
    raise NoEquilibrium(f"no static equilibrium after {cfg.max_steps} finger steps")
