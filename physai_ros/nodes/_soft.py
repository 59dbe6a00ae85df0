"""The soft object's parameters (not a node itself): one declaration for every node whose
MuJoCo scene can hold one -- the sim bridge and the SO-101 bus emulator -- so that names,
ranges and descriptions are identical and both build it with ``scene_soft_object``.
"""

from __future__ import annotations

from rclpy.node import Node

from physai_ros.config import load_scene_config
from physai_ros.nodes._common import declare_table, node_defaults
from physai_ros.sim.scene import scene_soft_object
from physai_ros.sim.soft import SoftObject

SOFT_PARAMETERS = {  # soft_<field>: (description with units, range, read_only); sim/soft.py
    "young": ("soft object Young's modulus [Pa]", (1.0, 1.0e9), True),
    "poisson": ("soft object Poisson ratio [-], below 0.5", (0.0, 0.4999), True),
    "damping": ("soft object elasticity damping [s] (stiffness-proportional)", (0.0, 1.0), True),
    "mass": ("soft object mass [kg]", (1e-4, 10.0), True),
    "mu": ("soft object sliding friction [-]", (1e-4, 5.0), True),
    "size": ("soft object edge (cube) or diameter (sphere, cylinder) [m]", (0.01, 0.2), True),
}


def declare_soft_object(node: Node, robot: str, defaults_file: str) -> SoftObject | None:
    """Declare ``soft_object`` and its ``soft_*`` material, position and resolution (defaults:
    ``config/<defaults_file>`` for ``soft_object`` and ``soft_count``, config/scene.yaml for the
    rest) and return the checked object, ``None`` for ``soft_object`` none.
    Raises InvalidInput on a bad shape or material."""
    scene = load_scene_config()
    table = {
        "soft_object": (
            "soft object beside the cube: none | cube | sphere | cylinder (a MuJoCo flex; the "
            "scene then steps with the discrete integrator)",
            None,
            True,
        ),
        "soft_x": ("soft object centre x, base frame [m]", (-2.0, 2.0), True),
        "soft_y": ("soft object centre y, base frame [m]", (-2.0, 2.0), True),
        "soft_count": (
            "soft object resolution, vertices per edge (cube grid; sphere and cylinder surface "
            "grid) [-], 3 to 6; 0 = the shape's own from config/scene.yaml (cube 3: the bridge "
            "keeps real time; 4 steps ~3x slower)",
            (0, 6),
            True,
        ),
    } | {f"soft_{k}": v for k, v in SOFT_PARAMETERS.items()}
    x, y = scene["robots"][robot]["soft_pos"]
    defaults = (
        node_defaults(defaults_file)
        | {"soft_x": x, "soft_y": y}
        | {f"soft_{k}": scene["soft"][k] for k in SOFT_PARAMETERS}
    )
    s = declare_table(node, defaults, table)
    if s["soft_object"] == "none":
        return None
    values = {k: s[f"soft_{k}"] for k in SOFT_PARAMETERS} | {"count": s["soft_count"] or None}
    return scene_soft_object(robot, (s["soft_x"], s["soft_y"]), shape=s["soft_object"], **values)
