"""The robot's frame tree as TF edges: what the TF publisher sends, computed without ROS.

``RobotTf`` turns named joint positions (a ``/joint_states`` message's content) into the
parent→child transforms of every moving frame, and lists the fixed edges once for
``/tf_static``: the world→base placement, fixed mounts, sites, cameras and each camera's
optical frame (ROS/OpenCV convention beside MuJoCo's). Geometry comes from the same MJCF the
simulation uses, through ``FrameTree``, so TF and physics cannot disagree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import mujoco
import numpy as np

from physai_ros.core.frames.camera import T_CAMERA_OPTICAL
from physai_ros.core.frames.frame_tree import FrameKind, FrameTree
from physai_ros.core.frames.joint_names import joint_indices
from physai_ros.errors import InvalidInput, ModelError

OPTICAL_SUFFIX = "_optical"


class Edge(NamedTuple):
    """One TF edge: ``T_parent_child`` maps child coordinates to parent coordinates."""

    parent: str
    child: str
    T: np.ndarray


class RobotTf:
    """Frame edges of one robot model placed in the world.

    Args:
        model: the robot's compiled model, already placed in the world (see
            ``physai_ros.models.place_robot``); it must have no free or ball joints, whose
            state ``/joint_states`` cannot carry.
        world_frame: name of the fixed frame at the model's world origin.
    """

    def __init__(self, model: mujoco.MjModel, world_frame: str = "world") -> None:
        movable = {int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)}
        bad = [
            model.joint(j).name for j in range(model.njnt) if int(model.jnt_type[j]) not in movable
        ]
        if bad:
            raise ModelError(
                f"joints {bad} are free/ball joints; a robot TF needs hinge/slide only"
            )
        self.tree = FrameTree(model)
        self.world_frame = world_frame
        self.joint_names: tuple[str, ...] = tuple(model.joint(j).name for j in range(model.njnt))
        self._qpos_adr = {n: int(model.jnt_qposadr[j]) for j, n in enumerate(self.joint_names)}
        self._qpos = np.array(model.qpos0, dtype=float)
        self._seen: set[str] = set()
        self._range = {
            n: (tuple(model.jnt_range[j]) if model.jnt_limited[j] else (-math.inf, math.inf))
            for j, n in enumerate(self.joint_names)
        }
        frames = self.tree.frames
        names = [f.name for f in frames]
        clashes = {n for n in names if names.count(n) > 1} | ({world_frame} & set(names))
        optical = [f.name + OPTICAL_SUFFIX for f in frames if f.kind is FrameKind.CAMERA]
        clashes |= set(optical) & set(names)
        if clashes:
            raise ModelError(f"frame names collide: {sorted(clashes)}; rename them in the model")
        root = self.tree.root_name
        self._parents = [world_frame if f.parent == root else f.parent for f in frames]
        self._dynamic = np.array([not f.static for f in frames])
        self._cameras = [f.name for f in frames if f.kind is FrameKind.CAMERA]

    @property
    def frame_names(self) -> list[str]:
        """Every child frame this publisher produces (static and moving)."""
        names = [f.name for f in self.tree.frames]
        return names + [c + OPTICAL_SUFFIX for c in self._cameras]

    @property
    def joint_ranges(self) -> dict[str, tuple[float, float]]:
        """Each joint's (lower, upper) position limit [rad or m]; ±inf where unlimited."""
        return dict(self._range)

    @property
    def complete(self) -> bool:
        """True once every joint's position has been received at least once."""
        return len(self._seen) == len(self.joint_names)

    @property
    def missing_joints(self) -> list[str]:
        return [n for n in self.joint_names if n not in self._seen]

    def update(self, names: Sequence[str], positions: Sequence[float]) -> None:
        """Take joint positions by name (a JointState may carry a subset of the joints).

        Raises ``InvalidInput`` naming the problem, and then changes nothing: unknown or
        duplicated names, a length mismatch, NaN/Inf, or a position outside the joint range.
        """
        if len(names) != len(positions):
            raise InvalidInput(f"{len(names)} joint names but {len(positions)} positions")
        joint_indices(names, self.joint_names)
        values = np.asarray(positions, dtype=float)
        if not np.all(np.isfinite(values)):
            bad = [n for n, v in zip(names, values, strict=True) if not math.isfinite(v)]
            raise InvalidInput(f"non-finite positions for joints {bad}")
        for name, value in zip(names, values, strict=True):
            lo, hi = self._range[name]
            # Real encoders and simulated contacts overshoot a little: 0.05 rad of slack.
            if not lo - 0.05 <= value <= hi + 0.05:
                raise InvalidInput(
                    f"joint {name} at {value:.4f} rad is outside its range [{lo:.4f}, {hi:.4f}]"
                )
        for name, value in zip(names, values, strict=True):
            self._qpos[self._qpos_adr[name]] = value
        self._seen.update(names)

    def static_edges(self) -> list[Edge]:
        """Edges that never move: placement, fixed mounts, sites, cameras, optical frames."""
        local = self.tree.parent_transforms(self._qpos)
        edges = [
            Edge(parent, frame.name, T)
            for frame, parent, T, dyn in zip(
                self.tree.frames, self._parents, local, self._dynamic, strict=True
            )
            if not dyn
        ]
        edges += [Edge(c, c + OPTICAL_SUFFIX, T_CAMERA_OPTICAL.copy()) for c in self._cameras]
        return edges

    def dynamic_edges(self) -> list[Edge]:
        """Edges that depend on the joints, at the last received positions."""
        local = self.tree.parent_transforms(self._qpos)
        idx = np.flatnonzero(self._dynamic)
        frames = self.tree.frames
        return [Edge(self._parents[i], frames[i].name, local[i]) for i in idx]


def load_robot_tf(
    robot: str,
    model_path: str | Path | None = None,
    base_pos: Sequence[float] = (0.0, 0.0, 0.0),
    base_yaw_deg: float = 0.0,
    world_frame: str = "world",
) -> RobotTf:
    """The robot's TF edges with the same placement the simulated scene uses."""
    from physai_ros.models import load_robot_spec, place_robot

    spec = load_robot_spec(robot, model_path)
    place_robot(spec, base_pos, base_yaw_deg)
    return RobotTf(spec.compile(), world_frame=world_frame)
