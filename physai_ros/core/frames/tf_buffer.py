"""A TF buffer without tf2: the latest transform of every parent → child link from ``/tf`` and
``/tf_static``, chained to give the world frame's pose of any frame of the tree.

Why: ``tf2_ros`` is not part of the pip-installed ROS (only its messages are), yet a node that
takes a frame by name (the pick's ``object_frame``) must find a frame wherever it hangs: a
marker published as a child of the cube, an object seen by the wrist camera. Only the latest
transform of each link is kept (no interpolation in time): a consumer asks where a frame is
now, and says how old that answer may be.

Stamps: the answer is as old as its oldest *dynamic* link (a chain is only as fresh as its
stalest measurement); static links (``/tf_static``) never go stale, and a chain of static links
alone has no stamp at all (``Chained.stamp`` is None). Errors name the frame and what is wrong:
a frame never received, a chain that ends at a frame other than the world (the trees are not
connected), a cycle. Pure: numpy and the frame helpers of ``spatial``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from physai_ros.core.frames.spatial import (
    QUAT_MIN_NORM,
    FloatArray,
    transform_to_pose,
)
from physai_ros.errors import InvalidInput


class FrameLookupError(InvalidInput):
    """A frame the buffer cannot place in the world: unknown, disconnected, or in a cycle."""


class Link(NamedTuple):
    """One received transform: ``parent ← child`` as translation [m] and unit quaternion
    (w, x, y, z), measured at ``stamp`` [s] (ignored when ``static``)."""

    parent: str
    translation: tuple[float, float, float]
    quat: tuple[float, float, float, float]
    stamp: float
    static: bool


class Chained(NamedTuple):
    """The world's pose of a frame: ``T`` (4x4, world ← frame) and the stamp [s] of its oldest
    dynamic link (None: every link is static, never stale)."""

    T: FloatArray
    stamp: float | None

    @property
    def position(self) -> FloatArray:
        """The frame's origin in the world [m]."""
        return self.T[:3, 3].copy()

    @property
    def quat(self) -> FloatArray:
        """The frame's orientation in the world, (w, x, y, z) with w ≥ 0."""
        return transform_to_pose(self.T)[1]

    def age(self, now: float) -> float:
        """How old [s] the answer is at ``now`` [s]; 0 for a static chain."""
        return 0.0 if self.stamp is None else now - self.stamp


def _matrix(link: Link) -> FloatArray:
    """``parent ← child`` as a 4x4 transform (the link's quaternion is already unit; plain
    floats: a pick node looks its object up at every control tick)."""
    w, x, y, z = link.quat
    tx, ty, tz = link.translation
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y), tx],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x), ty],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y), tz],
            [0.0, 0.0, 0.0, 1.0],
        ]
    )


class TfBuffer:
    """The latest link of every child frame (a TF frame has one parent), looked up from
    ``world``. A newer link of a child replaces the older; a dynamic link older than the one
    kept (an out-of-order message) is ignored."""

    def __init__(self, world: str) -> None:
        if not world:
            raise InvalidInput("the world frame must be named")
        self.world = world
        self.links: dict[str, Link] = {}

    def set(
        self,
        parent: str,
        child: str,
        translation: Sequence[float],
        quat: Sequence[float],
        stamp: float,
        static: bool = False,
    ) -> None:
        """Keep ``parent ← child``: ``translation`` [m], ``quat`` (w, x, y, z; normalised here),
        measured at ``stamp`` [s]. Empty names, a frame its own parent, or numbers that are not
        finite raise ``InvalidInput`` and change nothing.

        Plain floats, no arrays: a node calls this for every link of every /tf message (a
        robot's dozen links at 100 Hz), and numpy's per-call cost made a pick node fall a
        second behind its /tf stream on a loaded machine; lookups build the matrices."""
        if not parent or not child:
            raise InvalidInput(f"a TF link needs two frame names, got {parent!r} ← {child!r}")
        if parent == child:
            raise InvalidInput(f"TF frame {child!r} cannot be its own parent")
        t, q = tuple(map(float, translation)), tuple(map(float, quat))
        stamp = float(stamp)
        if len(t) != 3 or len(q) != 4 or not all(map(math.isfinite, (*t, *q, stamp))):
            raise InvalidInput(
                f"TF link {parent!r} ← {child!r} needs a finite translation (3), rotation (4) "
                f"and stamp, got {t}, {q}, {stamp}"
            )
        norm = math.sqrt(sum(v * v for v in q))
        if norm < QUAT_MIN_NORM:
            raise InvalidInput(f"TF link {parent!r} ← {child!r}: the rotation {q} is zero")
        kept = self.links.get(child)
        if kept is not None and not (static or kept.static) and stamp < kept.stamp:
            return
        self.links[child] = Link(parent, t, tuple(v / norm for v in q), stamp, bool(static))

    def chain(self, frame: str) -> list[str]:
        """The frames from ``frame`` up to the world, both included; ``FrameLookupError`` for
        an unknown frame, a chain that ends elsewhere, or a cycle."""
        path = [frame]
        while path[-1] != self.world:
            link = self.links.get(path[-1])
            if link is None:
                if len(path) == 1:
                    raise FrameLookupError(
                        f"unknown TF frame {frame!r}: no transform from {self.world!r} to it "
                        "has been received"
                    )
                raise FrameLookupError(
                    f"TF frame {frame!r} is not connected to {self.world!r}: its chain "
                    f"{' → '.join(path)} ends at {path[-1]!r}, which has no parent"
                )
            if link.parent in path:
                loop = " → ".join([*path[path.index(link.parent) :], link.parent])
                raise FrameLookupError(f"TF frame {frame!r} is in a cycle: {loop}")
            path.append(link.parent)
        return path

    def lookup(self, frame: str) -> Chained:
        """The world's pose of ``frame``, composed from the world down along its chain."""
        T, stamp = np.eye(4), None
        for child in reversed(self.chain(frame)[:-1]):
            link = self.links[child]
            T = T @ _matrix(link)
            if not link.static:
                stamp = link.stamp if stamp is None else min(stamp, link.stamp)
        return Chained(T, stamp)

    def known(self) -> list[str]:
        """Every frame that chains to the world (the world excluded), sorted."""
        found = []
        for frame in self.links:
            try:
                self.chain(frame)
            except FrameLookupError:
                continue
            found.append(frame)
        return sorted(f for f in found if f != self.world)
