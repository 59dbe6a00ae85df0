"""Parameter declarations that several nodes share (not a node itself).

The robot, its model and its placement in the world must be the same in the sim bridge, the
TF publisher and the pick node; declaring them in one place keeps names, defaults and
descriptions identical.
"""

from __future__ import annotations

from typing import NamedTuple

from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor
from rclpy.node import Node

from physai_ros.models import ROBOTS, load_scene_config


class RobotParams(NamedTuple):
    robot: str
    model_path: str | None
    base_pos: list[float]
    base_yaw_deg: float


def declare_robot_params(node: Node) -> RobotParams:
    """Declare ``robot``, ``model_path``, ``base_pos`` and ``base_yaw_deg`` (read-only)."""
    robot = node.declare_parameter(
        "robot",
        "so101",
        ParameterDescriptor(read_only=True, description=f"robot model, one of {list(ROBOTS)}"),
    ).value
    if robot not in ROBOTS:
        raise SystemExit(f"{node.get_name()}: unknown robot {robot!r}; choose one of {ROBOTS}")
    defaults = load_scene_config()["robots"][robot]
    model_path = node.declare_parameter(
        "model_path",
        "",
        ParameterDescriptor(
            read_only=True,
            description="Menagerie-style model folder or MJCF file; empty = the embedded model",
        ),
    ).value
    base_pos = node.declare_parameter(
        "base_pos",
        [float(v) for v in defaults["base_pos"]],
        ParameterDescriptor(read_only=True, description="robot base position in the world [m]"),
    ).value
    base_yaw = node.declare_parameter(
        "base_yaw_deg",
        float(defaults["base_yaw_deg"]),
        ParameterDescriptor(read_only=True, description="robot base yaw about world z [deg]"),
    ).value
    return RobotParams(robot, model_path or None, list(base_pos), float(base_yaw))


def declare_param(
    node: Node,
    name: str,
    default,
    description: str,
    limits: tuple[float, float] | None = None,
    read_only: bool = False,
):
    """Declare one parameter with its description (units) and, for a number, its range;
    returns its value (the override from the launch file or params file, else ``default``)."""
    desc = ParameterDescriptor(description=description, read_only=read_only)
    if limits is not None:
        desc.floating_point_range = [FloatingPointRange(from_value=limits[0], to_value=limits[1])]
        default = float(default)
    return node.declare_parameter(name, default, desc).value
