"""Cross-check of the contact–deformation model against MuJoCo's own deformable body.

The same squeeze is simulated twice: a cube of edge L (Young's modulus E, Poisson ratio ν)
pressed by two rigid spheres of radius R on opposite faces, each moved a given depth δ into
its face, no gravity, no friction.

- MuJoCo 3.17: a ``flexcomp`` grid, dim 3 (linear tetrahedra, ``<elasticity young poisson
  damping>``), which needs ``integrator="discrete"``; the spheres are mocap bodies ramped to
  their depth and held until the body is at rest. Flex contacts are vertex spheres of radius
  ``vertex_radius``: the body's contact surface lies that far outside its vertices, so the
  tips' depth is counted from there. Self-collision is off (it only adds contacts between
  neighbouring vertices). The contact's time constant is the stiffest the step allows,
  2 Δt (MuJoCo's default 0.02 s lets the tips sink into the vertex spheres). The force is
  ``mj_contactForce`` summed over one tip's contacts.
- Ours: the mass–spring lattice with the same node grid, the skin contact points and the
  Hunt–Crossley tips (``closing.Statics``), brought to rest by L-BFGS.

Both report the squeeze force [N] and the face centre's displacement [m] at each depth.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import mujoco
import numpy as np

from physai_ros.core.grasp_planning.closing import Statics, node_contact_stiffness
from physai_ros.core.grasp_planning.contact_law import contact_law
from physai_ros.core.grasp_planning.lattice import build_network, material
from physai_ros.core.grasp_planning.objects import box
from physai_ros.errors import InvalidInput


class Squeeze(NamedTuple):
    """Per depth [m]: squeeze force on one tip [N] and the face centre's inward displacement
    [m]; wall time of the whole run [s]."""

    depths: tuple[float, ...]
    force: np.ndarray
    indentation: np.ndarray
    seconds: float


class Setup(NamedTuple):
    """The shared squeeze: cube edge [m], lattice cells along it, E [Pa], ν, mass [kg], tip
    radius [m]."""

    edge: float = 0.04
    cells: int = 4
    young: float = 5e4
    poisson: float = 0.3
    mass: float = 0.05
    tip: float = 0.01


def _check(setup: Setup, depths: tuple[float, ...]) -> None:
    material(setup.young, setup.poisson)  # raises on E ≤ 0, ν outside [0, 0.5)
    if setup.cells < 2 or not all(0.0 < d < setup.edge / 4 for d in depths):
        raise InvalidInput(f"need cells ≥ 2 and depths in (0, edge/4), got {setup}, {depths}")


def _flex_xml(setup: Setup, vertex_radius: float, damping: float, timestep: float) -> str:
    a = setup.edge / setup.cells
    reach = setup.edge / 2 + vertex_radius + setup.tip + 1e-3  # tips start 1 mm off the surface
    tips = "".join(
        f'<body name="tip{k}" mocap="true" pos="{s * reach} 0 0">'
        f'<geom type="sphere" size="{setup.tip}" condim="1"/></body>'
        for k, s in enumerate((-1, 1))
    )
    n = setup.cells + 1
    return f"""<mujoco>
  <option timestep="{timestep}" integrator="discrete" gravity="0 0 0"/>
  <worldbody>
    <flexcomp name="cube" type="grid" dim="3" count="{n} {n} {n}" spacing="{a} {a} {a}"
              radius="{vertex_radius}" mass="{setup.mass}">
      <elasticity young="{setup.young}" poisson="{setup.poisson}" damping="{damping}"/>
      <contact condim="1" selfcollide="none" solref="{2 * timestep} 1"/>
      <edge equality="false"/>
    </flexcomp>
    {tips}
  </worldbody>
</mujoco>"""


def flex_squeeze(
    setup: Setup,
    depths: tuple[float, ...] = (0.001, 0.002),
    vertex_radius: float = 0.004,
    damping: float = 0.01,
    timestep: float = 0.002,
    settle: float = 0.3,
) -> Squeeze:
    """MuJoCo flex: ramp the tips to each depth in turn over ``settle`` [s], hold ``settle``
    [s] (the body comes to rest: flex damping), then read the force and the face centre."""
    _check(setup, depths)
    model = mujoco.MjModel.from_xml_string(_flex_xml(setup, vertex_radius, damping, timestep))
    data = mujoco.MjData(model)
    start = time.perf_counter()
    mujoco.mj_forward(model, data)
    rest = data.flexvert_xpos.copy()
    centre = int(np.argmin(np.linalg.norm(rest - [-setup.edge / 2, 0.0, 0.0], axis=1)))
    origin = data.mocap_pos.copy()
    tip_geom = int(model.body_geomadr[model.body("tip0").id])
    steps = max(1, round(settle / timestep))
    travel, force, indentation = 0.0, [], []
    wrench = np.zeros(6)
    for depth in depths:
        target = 1e-3 + depth
        for k in range(2 * steps):
            now = travel + (target - travel) * min(1.0, (k + 1) / steps)
            data.mocap_pos[0] = origin[0] + [now, 0.0, 0.0]
            data.mocap_pos[1] = origin[1] - [now, 0.0, 0.0]
            mujoco.mj_step(model, data)
        travel = target
        total = np.zeros(3)
        for i in range(data.ncon):
            contact = data.contact[i]
            if tip_geom not in (contact.geom[0], contact.geom[1]):
                continue
            mujoco.mj_contactForce(model, data, i, wrench)
            world = contact.frame.reshape(3, 3).T @ wrench[:3]
            total += world if contact.geom[1] == tip_geom else -world
        force.append(float(-total[0]))  # the body pushes tip 0 towards −x
        indentation.append(float(data.flexvert_xpos[centre, 0] - rest[centre, 0]))
    return Squeeze(depths, np.array(force), np.array(indentation), time.perf_counter() - start)


def lattice_squeeze(setup: Setup, depths: tuple[float, ...] = (0.001, 0.002)) -> Squeeze:
    """Ours: the same cube as a mass–spring lattice, frictionless tips at each depth."""
    _check(setup, depths)
    start = time.perf_counter()
    a = setup.edge / setup.cells
    net = build_network(
        box((setup.edge,) * 3, a / 2), material(setup.young, setup.poisson), setup.mass, a
    )
    law = contact_law(node_contact_stiffness(net), 1.0, setup.poisson)
    sim = Statics(net, law, 0.0, None)
    centre = int(np.argmin(np.linalg.norm(net.x0 - [-setup.edge / 2, 0.0, 0.0], axis=1)))
    force, indentation = [], []
    for depth in depths:
        x = setup.edge / 2 + setup.tip - depth
        tips = np.array([[-x, 0.0, 0.0], [x, 0.0, 0.0]])
        sim.solve(tips, setup.tip, None)
        out, _, _ = sim.forces(tips, setup.tip, None)
        force.append(float(out[0][0].sum(axis=0)[0]))
        indentation.append(float(sim.x[centre, 0] - net.x0[centre, 0]))
    return Squeeze(depths, np.array(force), np.array(indentation), time.perf_counter() - start)
