"""Objects as the planner sees them: surface points, outward unit normals, a centre of mass.

Why this form: the seed's Algorithm 1 works on the set of points of the object's outer surface,
measured from its centre of mass, and every later step (friction cones, the mass–spring body)
needs the outward normal at each point and a test for "inside". Three sources give it:
primitive shapes (exact normals and centre), a triangle mesh file (face normals, volume
centroid) and a point cloud (normals estimated by local PCA, oriented away from the centroid —
which assumes a roughly star-shaped object, as any single-view cloud of a graspable item is).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.spatial import cKDTree

from physai_ros.core.pick.grip import _positive  # one positive-number check for the package
from physai_ros.errors import InvalidInput

SHAPES = ("box", "sphere", "cylinder", "ellipsoid")
_GOLDEN = math.pi * (3.0 - math.sqrt(5.0))  # [rad] Fibonacci-lattice turn between samples


@dataclass(frozen=True)
class SurfaceObject:
    """A graspable object in its own frame.

    points: (N, 3) surface samples [m]; normals: (N, 3) outward unit normals;
    com: centre of mass [m]; contains: maps (M, 3) points [m] to a bool mask "inside the
    object" (fills the volume of the mass–spring body); name: for reports.
    """

    name: str
    points: np.ndarray
    normals: np.ndarray
    com: np.ndarray
    contains: Callable[[np.ndarray], np.ndarray]

    @property
    def size(self) -> float:
        """Largest distance of a surface point from the centre of mass [m]."""
        return float(np.max(np.linalg.norm(self.points - self.com, axis=1)))


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def _grid(lo: float, hi: float, spacing: float) -> np.ndarray:
    """Cell-centred samples covering [lo, hi] with about ``spacing`` between them."""
    n = max(1, round((hi - lo) / spacing))
    return lo + (np.arange(n) + 0.5) * (hi - lo) / n


def box(size: tuple[float, float, float], spacing: float) -> SurfaceObject:
    """Box of full edge lengths ``size`` [m], points on a grid of ``spacing`` [m] on each face."""
    half = np.array([_positive("box size", s) / 2.0 for s in size])
    spacing = _positive("spacing", spacing)
    points, normals = [], []
    for axis in range(3):
        u, v = [a for a in range(3) if a != axis]
        gu, gv = np.meshgrid(
            _grid(-half[u], half[u], spacing), _grid(-half[v], half[v], spacing), indexing="ij"
        )
        for sign in (-1.0, 1.0):
            face = np.zeros((gu.size, 3))
            face[:, u], face[:, v], face[:, axis] = gu.ravel(), gv.ravel(), sign * half[axis]
            normal = np.zeros((gu.size, 3))
            normal[:, axis] = sign
            points.append(face)
            normals.append(normal)

    def contains(x: np.ndarray) -> np.ndarray:
        return np.all(np.abs(x) <= half + 1e-12, axis=1)

    return SurfaceObject("box", np.vstack(points), np.vstack(normals), np.zeros(3), contains)


def ellipsoid(radii: tuple[float, float, float], spacing: float) -> SurfaceObject:
    """Ellipsoid of semi-axes ``radii`` [m] (a sphere when equal), Fibonacci-lattice samples.

    The count is set from the surface area (Knud Thomsen's formula, < 1.1 % error) so that the
    mean distance between samples is about ``spacing`` [m].
    """
    r = np.array([_positive("radius", x) for x in radii])
    spacing = _positive("spacing", spacing)
    p = 1.6075
    area = (
        4
        * math.pi
        * ((r[0] ** p * r[1] ** p + r[0] ** p * r[2] ** p + r[1] ** p * r[2] ** p) / 3) ** (1 / p)
    )
    n = max(4, round(area / spacing**2))
    k = np.arange(n) + 0.5
    z = 1.0 - 2.0 * k / n
    rho = np.sqrt(1.0 - z * z)
    unit = np.column_stack([rho * np.cos(_GOLDEN * k), rho * np.sin(_GOLDEN * k), z])
    points = unit * r
    normals = _unit(unit / r)
    name = "sphere" if np.allclose(r, r[0]) else "ellipsoid"

    def contains(x: np.ndarray) -> np.ndarray:
        return np.sum((x / r) ** 2, axis=1) <= 1.0 + 1e-12

    return SurfaceObject(name, points, normals, np.zeros(3), contains)


def cylinder(radius: float, height: float, spacing: float) -> SurfaceObject:
    """Upright cylinder (axis z) of ``radius`` and ``height`` [m], side and both caps sampled."""
    radius, height = _positive("radius", radius), _positive("height", height)
    spacing = _positive("spacing", spacing)
    n_around = max(8, round(2 * math.pi * radius / spacing))
    phi = 2 * math.pi * (np.arange(n_around) + 0.5) / n_around
    zz = _grid(-height / 2, height / 2, spacing)
    gphi, gz = np.meshgrid(phi, zz, indexing="ij")
    side = np.column_stack(
        [radius * np.cos(gphi.ravel()), radius * np.sin(gphi.ravel()), gz.ravel()]
    )
    side_n = np.column_stack([np.cos(gphi.ravel()), np.sin(gphi.ravel()), np.zeros(gz.size)])
    gx, gy = np.meshgrid(*(2 * [_grid(-radius, radius, spacing)]), indexing="ij")
    disc = np.column_stack([gx.ravel(), gy.ravel()])
    disc = disc[np.hypot(disc[:, 0], disc[:, 1]) <= radius]
    caps, caps_n = [], []
    for sign in (-1.0, 1.0):
        caps.append(np.column_stack([disc, np.full(len(disc), sign * height / 2)]))
        caps_n.append(np.tile([0.0, 0.0, sign], (len(disc), 1)))

    def contains(x: np.ndarray) -> np.ndarray:
        return (np.hypot(x[:, 0], x[:, 1]) <= radius + 1e-12) & (
            np.abs(x[:, 2]) <= height / 2 + 1e-12
        )

    points = np.vstack([side, *caps])
    return SurfaceObject("cylinder", points, np.vstack([side_n, *caps_n]), np.zeros(3), contains)


def primitive(shape: str, size: float, spacing: float) -> SurfaceObject:
    """A named primitive of characteristic ``size`` [m] (the CLI's ``--object`` shapes).

    box: cube of edge ``size``; sphere: diameter ``size``; cylinder: diameter and height
    ``size``; ellipsoid: semi-axes (0.5, 0.4, 0.3) × ``size``.
    """
    size = _positive("size", size)
    if shape == "box":
        return box((size, size, size), spacing)
    if shape == "sphere":
        return ellipsoid((size / 2,) * 3, spacing)
    if shape == "cylinder":
        return cylinder(size / 2, size, spacing)
    if shape == "ellipsoid":
        return ellipsoid((0.5 * size, 0.4 * size, 0.3 * size), spacing)
    raise InvalidInput(f"unknown shape {shape!r}; valid choices: {list(SHAPES)}")


def _inside_by_nearest_normal(points: np.ndarray, normals: np.ndarray) -> Callable:
    """Inside test from surface samples alone: behind the nearest sample's tangent plane.

    Exact for convex shapes; for others it is right wherever the samples are denser than the
    smallest feature, which is what a planner's point set must be anyway.
    """
    tree = cKDTree(points)

    def contains(x: np.ndarray) -> np.ndarray:
        _, idx = tree.query(x)
        return np.einsum("ij,ij->i", x - points[idx], normals[idx]) <= 0.0

    return contains


def read_mesh(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (V, 3) and triangles (T, 3) of an ASCII/binary STL or a Wavefront OBJ file."""
    path = Path(path)
    if not path.is_file():
        raise InvalidInput(f"mesh file {str(path)!r} not found")
    raw = path.read_bytes()
    suffix = path.suffix.lower()
    if suffix == ".obj":
        verts, faces = [], []
        for line in raw.decode("utf-8", "replace").splitlines():
            parts = line.split()
            if parts[:1] == ["v"]:
                verts.append([float(x) for x in parts[1:4]])
            elif parts[:1] == ["f"]:
                idx = [int(p.split("/")[0]) for p in parts[1:]]
                idx = [i - 1 if i > 0 else len(verts) + i for i in idx]
                faces.extend([idx[0], idx[k], idx[k + 1]] for k in range(1, len(idx) - 1))
        vertices, triangles = np.array(verts, float), np.array(faces, int)
    elif suffix == ".stl":
        if raw[:5] == b"solid" and b"facet" in raw[:512]:
            numbers = [
                [float(x) for x in line.split()[1:4]]
                for line in raw.decode("ascii", "replace").splitlines()
                if line.strip().startswith("vertex")
            ]
            corners = np.array(numbers, float)
        else:
            count = int(np.frombuffer(raw, "<u4", 1, 80)[0])
            record = np.dtype([("n", "<f4", 3), ("v", "<f4", (3, 3)), ("attr", "<u2")])
            if len(raw) < 84 + count * record.itemsize:
                raise InvalidInput(f"binary STL {str(path)!r} is truncated")
            corners = np.frombuffer(raw, record, count, 84)["v"].reshape(-1, 3).astype(float)
        vertices, triangles = corners, np.arange(len(corners)).reshape(-1, 3)
    else:
        raise InvalidInput(f"mesh file must be .stl or .obj, got {str(path)!r}")
    if len(triangles) < 4 or not np.all(np.isfinite(vertices)):
        raise InvalidInput(f"mesh {str(path)!r} has fewer than 4 triangles or non-finite vertices")
    return vertices, triangles


def from_mesh(path: str | Path, spacing: float, scale: float = 1.0) -> SurfaceObject:
    """A closed triangle mesh sampled area-uniformly (deterministic), face normals outward.

    scale: multiplies the file's coordinates (e.g. 0.001 for a file in millimetres). The
    centre of mass is the volume centroid (uniform density) from signed tetrahedra; a mesh
    wound inward (negative volume) is turned outward.
    """
    vertices, triangles = read_mesh(path)
    spacing = _positive("spacing", spacing)
    tri = vertices[triangles] * _positive("scale", scale)
    cross = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    signed = np.einsum("ij,ij->i", tri[:, 0], cross) / 6.0
    volume = float(signed.sum())
    if abs(volume) < 1e-15:
        raise InvalidInput(f"mesh {str(path)!r} encloses no volume (not closed?)")
    com = (signed[:, None] * tri.sum(axis=1) / 4.0).sum(axis=0) / volume
    face_n = _unit(cross * np.sign(volume))
    area = 0.5 * np.linalg.norm(cross, axis=1)
    n = max(4, round(area.sum() / spacing**2))
    rng = np.random.default_rng(0)
    face = rng.choice(len(tri), size=n, p=area / area.sum())
    u, v = rng.random(n), rng.random(n)
    flip = u + v > 1.0
    u[flip], v[flip] = 1.0 - u[flip], 1.0 - v[flip]
    t = tri[face]
    points = t[:, 0] + u[:, None] * (t[:, 1] - t[:, 0]) + v[:, None] * (t[:, 2] - t[:, 0])
    normals = face_n[face]
    contains = _inside_by_nearest_normal(points, normals)
    return SurfaceObject(
        Path(path).stem, points - com, normals, np.zeros(3), _shifted(contains, com)
    )


def _shifted(contains: Callable, offset: np.ndarray) -> Callable:
    """``contains`` of a shape moved by ``-offset`` (the object frame is centred on the com)."""
    return lambda x: contains(np.asarray(x) + offset)


def from_point_cloud(
    points: np.ndarray, k: int = 12, com: np.ndarray | None = None
) -> SurfaceObject:
    """A surface point cloud [m] with normals from PCA of each point's ``k`` nearest neighbours.

    The normal is the direction of least variance, turned to point away from ``com`` (default:
    the cloud's centroid, which is the centre of mass of a thin uniform shell — state a better
    one when known). The object frame is centred on ``com``.
    """
    pts = np.asarray(points, dtype=float)
    if pts.ndim != 2 or pts.shape[1] != 3 or not np.all(np.isfinite(pts)):
        raise InvalidInput(f"point cloud must be (N, 3) finite [m], got shape {pts.shape}")
    if len(pts) < max(k, 4) + 1:
        raise InvalidInput(f"point cloud has {len(pts)} points; need more than {max(k, 4)}")
    centre = pts.mean(axis=0) if com is None else np.asarray(com, dtype=float)
    _, idx = cKDTree(pts).query(pts, k=k)
    nbrs = pts[idx] - pts[idx].mean(axis=1, keepdims=True)
    _, vecs = np.linalg.eigh(np.einsum("nki,nkj->nij", nbrs, nbrs))
    normals = vecs[:, :, 0]
    normals *= (
        np.sign(np.einsum("ij,ij->i", normals, pts - centre))[:, None]
        + (np.einsum("ij,ij->i", normals, pts - centre) == 0)[:, None]
    )
    local = pts - centre
    return SurfaceObject(
        "point_cloud", local, normals, np.zeros(3), _inside_by_nearest_normal(local, normals)
    )
