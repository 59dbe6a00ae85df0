"""The soft object's parameters (not a node itself): one declaration for every node whose
MuJoCo scene can hold one -- the sim bridge and the SO-101 bus emulator (their schemas
describe them alike) -- both building it with ``scene_soft_object``.
"""

from __future__ import annotations

from rclpy.node import Node

from physai_ros.config import load_scene_config
from physai_ros.nodes._common import Schema, declare_schema
from physai_ros.sim.scene import scene_soft_object
from physai_ros.sim.soft import SoftObject

MATERIAL = ("young", "poisson", "damping", "mass", "mu", "size")  # sim/soft.py's fields
SOFT_PARAMETERS = (
    "soft_object",
    "soft_x",
    "soft_y",
    "soft_count",
    *(f"soft_{k}" for k in MATERIAL),
)


def declare_soft_object(node: Node, schema: Schema, robot: str) -> SoftObject | None:
    """Declare ``soft_object`` and its ``soft_*`` material, position and resolution of the
    node's ``schema`` (defaults: the schema's for ``soft_object`` and ``soft_count``,
    config/scene.yaml's for the rest) and return the checked object, ``None`` for
    ``soft_object`` none. Raises InvalidInput on a bad shape or material."""
    scene = load_scene_config()
    x, y = scene["robots"][robot]["soft_pos"]
    defaults = {"soft_x": x, "soft_y": y} | {f"soft_{k}": scene["soft"][k] for k in MATERIAL}
    s = declare_schema(node, schema.only(*SOFT_PARAMETERS), defaults)
    if s["soft_object"] == "none":
        return None
    values = {k: s[f"soft_{k}"] for k in MATERIAL} | {"count": s["soft_count"] or None}
    return scene_soft_object(robot, (s["soft_x"], s["soft_y"]), shape=s["soft_object"], **values)
