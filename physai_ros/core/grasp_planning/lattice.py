"""The object's body: a nonlinear isotropic mass–spring network filling its volume.

Why this network and how its stiffness maps to (E, ν). Nodes sit on a cubic lattice of spacing
``a`` inside the object; every cube ("cell") carries springs on its 12 edges and 12 face
diagonals, and a volume term. For a homogeneous strain, central springs of bond stiffness k on
the edges and face diagonals give the cubic elastic constants C11 = 3k/a, C12 = C44 = k/a
(sum of k L² nᵢnⱼnₖnₗ over the bonds of one node, divided by a³). That is isotropic with
Lamé μ = λ = k/a — Poisson 1/4 only (the Cauchy relation of central forces). The cell volume
term ½ K_v V₀ (J − 1)², J the cell's volume ratio, adds K_v to λ and nothing to μ, so

    k = μ a,   K_v = λ − μ,   μ = E / (2(1 + ν)),   λ = E ν / ((1 + ν)(1 − 2ν)),

reproduces any E > 0 and 0 ≤ ν < 1/2 at small strain (K_v < 0 for ν < 1/4 is fine: the total
energy stays positive definite while λ + 2μ/3 > 0). This is Teschner et al. 2004's
distance + volume mass–spring model with the stiffnesses derived from the lattice instead of
tuned. Each cell gives k/4 to each edge and k/2 to each face diagonal (a bulk edge is shared by
4 cells, a diagonal by 2), so a free surface behaves like a cut continuum. Springs act along
the current bond direction (large rotations are exact: the network is geometrically
nonlinear) and carry dashpots along the bond, which damp deformation but not rigid motion.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy import sparse

from physai_ros.core.grasp_planning.objects import SurfaceObject
from physai_ros.errors import InvalidInput

_CORNERS = np.array([[i, j, k] for k in (0, 1) for j in (0, 1) for i in (0, 1)])  # (8, 3)
_EDGES = [
    (a, b)
    for a in range(8)
    for b in range(a + 1, 8)
    if np.abs(_CORNERS[a] - _CORNERS[b]).sum() == 1
]
_DIAGONALS = [
    (a, b)
    for a in range(8)
    for b in range(a + 1, 8)
    if np.abs(_CORNERS[a] - _CORNERS[b]).sum() == 2
]
_GRAD_N = (2 * _CORNERS - 1) / 4.0  # ∇N of each trilinear shape function at the cell centre × a


class Material(NamedTuple):
    """Isotropic elastic material: young [Pa], poisson [-], the Lamé constants [Pa]."""

    young: float
    poisson: float
    lame_mu: float
    lame_lambda: float


def material(young: float, poisson: float) -> Material:
    """Validated (E, ν) with its Lamé constants; E ≤ 0 or ν outside [0, 0.5) is refused."""
    if not math.isfinite(young) or young <= 0.0:
        raise InvalidInput(f"Young's modulus must be finite and > 0 [Pa], got {young!r}")
    if not math.isfinite(poisson) or not 0.0 <= poisson < 0.5:
        raise InvalidInput(f"Poisson ratio must be in [0, 0.5), got {poisson!r}")
    mu = young / (2 * (1 + poisson))
    lam = young * poisson / ((1 + poisson) * (1 - 2 * poisson))
    return Material(young, poisson, mu, lam)


class Network(NamedTuple):
    """The discretised body (object frame, metres, kilograms).

    x0: (N, 3) rest positions; mass: (N,) node masses; springs: (S, 2) node pairs; rest: (S,)
    rest lengths; k: (S,) spring stiffness [N/m]; c: (S,) dashpots [N·s/m]; cells: (C, 8)
    corner nodes; k_volume: K_v [Pa]; spacing: a [m]; surface: (N,) node is on the boundary;
    skin: (P, N) trilinear weights of the contact points on the free faces (x_skin = skin @ x,
    node forces = skinᵀ @ f_skin); skin_mass: (P,) mass each contact point stands for [kg];
    skin_spacing: distance between contact points [m].
    """

    x0: np.ndarray
    mass: np.ndarray
    springs: np.ndarray
    rest: np.ndarray
    k: np.ndarray
    c: np.ndarray
    cells: np.ndarray
    k_volume: float
    spacing: float
    surface: np.ndarray
    material: Material
    skin: sparse.csr_matrix
    skin_mass: np.ndarray
    skin_spacing: float

    @property
    def total_mass(self) -> float:
        return float(self.mass.sum())

    def stable_dt(self, extra_stiffness: float = 0.0) -> float:
        """Largest safe step [s] of the semi-implicit Euler: 0.4 × 2/ω_max, ω_max² bounded by
        the summed stiffness at the busiest node (springs, volume term, ``extra`` [N/m])."""
        n = len(self.x0)
        load = np.bincount(self.springs.ravel(), np.repeat(self.k, 2), minlength=n)
        load += 2 * abs(self.k_volume) * self.spacing + extra_stiffness
        omega = math.sqrt(float(np.max(load / self.mass)) * 4.0)
        return 0.4 * 2.0 / omega


def build_network(
    obj: SurfaceObject,
    mat: Material,
    mass: float,
    spacing: float,
    damping_ratio: float = 0.5,
    skin_per_edge: int = 2,
) -> Network:
    """Fill ``obj`` with a cubic lattice of ``spacing`` [m]; total ``mass`` [kg].

    A cell is kept when its centre is inside the object (so the body's volume matches the
    object's to within a cell); damping_ratio ζ sets each bond's dashpot c = 2ζ√(k m_node);
    skin_per_edge: contact points along each edge of a free face (see ``_skin``).
    """
    if not math.isfinite(mass) or mass <= 0.0:
        raise InvalidInput(f"mass must be finite and > 0 [kg], got {mass!r}")
    if not math.isfinite(spacing) or spacing <= 0.0:
        raise InvalidInput(f"lattice spacing must be finite and > 0 [m], got {spacing!r}")
    lo, hi = obj.points.min(axis=0), obj.points.max(axis=0)
    counts = np.maximum(np.ceil((hi - lo) / spacing).astype(int), 1)
    start = (lo + hi) / 2 - counts * spacing / 2
    idx = np.stack(np.meshgrid(*(np.arange(c) for c in counts), indexing="ij"), -1).reshape(-1, 3)
    inside = obj.contains(start + (idx + 0.5) * spacing)
    cell_idx = idx[inside]
    if len(cell_idx) < 1:
        raise InvalidInput(f"lattice spacing {spacing} m leaves no cell inside the object")
    corners = cell_idx[:, None, :] + _CORNERS[None, :, :]  # (C, 8, 3) lattice coordinates
    keys = np.ravel_multi_index(corners.reshape(-1, 3).T, counts + 1)
    unique, inverse = np.unique(keys, return_inverse=True)
    cells = inverse.reshape(-1, 8)
    x0 = start + np.column_stack(np.unravel_index(unique, counts + 1)) * spacing
    n = len(x0)
    share = np.bincount(cells.ravel(), minlength=n) / 8.0  # cells per node / 8
    node_mass = mass * share / share.sum()
    bond = mat.lame_mu * spacing
    pairs = np.vstack(
        [cells[:, list(_EDGES)].reshape(-1, 2), cells[:, list(_DIAGONALS)].reshape(-1, 2)]
    )
    weight = np.concatenate(
        [np.full(len(cells) * 12, bond / 4), np.full(len(cells) * 12, bond / 2)]
    )
    pairs = np.sort(pairs, axis=1)
    pair_keys = pairs[:, 0] * n + pairs[:, 1]
    uniq_pairs, pinv = np.unique(pair_keys, return_inverse=True)
    springs = np.column_stack([uniq_pairs // n, uniq_pairs % n])
    k = np.bincount(pinv, weight)
    rest = np.linalg.norm(x0[springs[:, 1]] - x0[springs[:, 0]], axis=1)
    m_pair = np.minimum(node_mass[springs[:, 0]], node_mass[springs[:, 1]])
    c = 2 * damping_ratio * np.sqrt(k * m_pair)
    surface = share < 1.0  # fewer than 8 cells around it
    skin, skin_mass = _skin(cell_idx, cells, node_mass, n, skin_per_edge)
    return Network(
        x0,
        node_mass,
        springs,
        rest,
        k,
        c,
        cells,
        mat.lame_lambda - mat.lame_mu,
        spacing,
        surface,
        mat,
        skin,
        skin_mass,
        spacing / skin_per_edge,
    )


def _skin(
    cell_idx: np.ndarray, cells: np.ndarray, node_mass: np.ndarray, n: int, per_edge: int
) -> tuple[sparse.csr_matrix, np.ndarray]:
    """Contact points on every free cell face, ``per_edge``² per face, embedded trilinearly.

    Why: a tip touching lattice nodes alone feels a bumpy surface (one node, then a gap, then
    the next) unless the lattice is far finer than the contact patch; points embedded in the
    faces make the contact surface smooth at the cost of a sparse product per step.
    """
    occupied = {tuple(c) for c in cell_idx.tolist()}
    uv = (np.arange(per_edge) + 0.5) / per_edge
    gu, gv = (g.ravel() for g in np.meshgrid(uv, uv, indexing="ij"))
    rows, cols, vals, masses = [], [], [], []
    count = 0
    for c, ijk in enumerate(cell_idx.tolist()):
        for axis in range(3):
            for side in (0, 1):
                nb = list(ijk)
                nb[axis] += 1 if side else -1
                if tuple(nb) in occupied:
                    continue
                local = np.zeros((len(gu), 3))
                others = [a for a in range(3) if a != axis]
                local[:, others[0]], local[:, others[1]], local[:, axis] = gu, gv, side
                corner = _CORNERS[None, :, :] == 1
                w = np.prod(np.where(corner, local[:, None, :], 1 - local[:, None, :]), axis=2)
                rows.append(np.repeat(np.arange(count, count + len(gu)), 8))
                cols.append(np.tile(cells[c], len(gu)))
                vals.append(w.ravel())
                masses.append(w @ node_mass[cells[c]] / 4.0)
                count += len(gu)
    skin = sparse.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(count, n)
    )
    return skin, np.concatenate(masses)


def internal_forces(net: Network, x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(N, 3) spring, dashpot and volume forces [N] on the nodes at positions x, velocities v."""
    n = len(x)
    i, j = net.springs[:, 0], net.springs[:, 1]
    d = x[j] - x[i]
    length = np.linalg.norm(d, axis=1)
    unit = d / length[:, None]
    rate = np.einsum("ij,ij->i", v[j] - v[i], unit)
    f = (net.k * (length - net.rest) + net.c * rate)[:, None] * unit  # on i, toward j
    out = np.zeros((n, 3))
    for axis in range(3):
        out[:, axis] = np.bincount(i, f[:, axis], n) - np.bincount(j, f[:, axis], n)
    if net.k_volume != 0.0:
        a = net.spacing
        grad = np.swapaxes(x[net.cells], 1, 2) @ (_GRAD_N / a)  # (C, 3, 3) deformation gradient
        f0, f1, f2 = grad[:, :, 0], grad[:, :, 1], grad[:, :, 2]
        c12, c20, c01 = _cross(f1, f2), _cross(f2, f0), _cross(f0, f1)
        jac = np.einsum("ci,ci->c", f0, c12)
        dj_df = np.stack([c12, c20, c01], axis=1)  # (C, j, i) = ∂J/∂F_ij
        coef = -net.k_volume * a**3 * (jac - 1.0)
        fv = coef[:, None, None] * ((_GRAD_N / a) @ dj_df)  # (C, 8, 3)
        flat = net.cells.ravel()
        for axis in range(3):
            out[:, axis] += np.bincount(flat, fv[:, :, axis].ravel(), n)
    return out


def _cross(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Row-wise cross product of (C, 3) arrays (np.cross is slower on small rows)."""
    return np.column_stack(
        [
            u[:, 1] * v[:, 2] - u[:, 2] * v[:, 1],
            u[:, 2] * v[:, 0] - u[:, 0] * v[:, 2],
            u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0],
        ]
    )


def elastic_energy(net: Network, x: np.ndarray) -> float:
    """Stored energy [J] of the springs and volume terms (for static solves and checks)."""
    d = x[net.springs[:, 1]] - x[net.springs[:, 0]]
    stretch = np.linalg.norm(d, axis=1) - net.rest
    energy = 0.5 * float(np.sum(net.k * stretch**2))
    if net.k_volume != 0.0:
        grad = np.einsum("cai,aj->cij", x[net.cells], _GRAD_N) / net.spacing
        jac = np.linalg.det(grad)
        energy += 0.5 * net.k_volume * net.spacing**3 * float(np.sum((jac - 1.0) ** 2))
    return energy
