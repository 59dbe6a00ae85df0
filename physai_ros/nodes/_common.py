"""Parameter declarations that several nodes share (not a node itself).

The robot, its model and its placement in the world must be the same in the sim bridge, the
TF publisher and the pick node; declaring them in one place keeps names, defaults and
descriptions identical.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.node import Node

from physai_ros.config import load_scene_config, node_tree
from physai_ros.models import ROBOTS
from physai_ros.qos import DDS_PROFILE, LATCHED, stream_qos, use_dds_profile  # noqa: F401 - re-exported for the nodes


class RobotParams(NamedTuple):
    robot: str
    model_path: str | None
    base_pos: list[float]
    base_yaw_deg: float


def declare_robot_params(node: Node, default: str = "so101") -> RobotParams:
    """Declare ``robot`` (``default``), ``model_path``, ``base_pos`` and ``base_yaw_deg``
    (read-only)."""
    robot = node.declare_parameter(
        "robot",
        default,
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
    returns its value (the override from the launch file or params file, else ``default``).
    Integer limits ``(1, 1000)`` make an integer parameter, float limits a double."""
    desc = ParameterDescriptor(description=description, read_only=read_only)
    if limits is not None and all(isinstance(v, int) for v in limits):
        desc.integer_range = [IntegerRange(from_value=limits[0], to_value=limits[1], step=1)]
        default = int(default)
    elif limits is not None:
        desc.floating_point_range = [FloatingPointRange(from_value=limits[0], to_value=limits[1])]
        default = float(default)
    return node.declare_parameter(name, default, desc).value


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested parameter tree as ROS names it: ``{"a": {"b": 1}}`` → ``{"a.b": 1}``."""
    out: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out


def unflatten(values: Mapping[str, Any]) -> dict[str, Any]:
    """``flatten`` undone: ``{"a.b": 1}`` → ``{"a": {"b": 1}}``."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        *parents, leaf = name.split(".")
        node = out
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    return out


def node_defaults(file_name: str) -> dict[str, Any]:
    """A node's defaults: ``node_tree`` flattened to parameter names. The same file is a valid
    ``--params-file``, so the defaults users read and the defaults the node uses are one file."""
    return flatten(node_tree(file_name))


Table = Mapping[str, tuple[str, tuple[float, float] | None, bool]]


def declare_table(node: Node, defaults: Mapping[str, Any], table: Table) -> dict[str, Any]:
    """Declare every parameter of ``table`` (name → (description with units, (min, max) or
    None, read_only)) with its default from ``defaults``; returns name → value."""
    return {
        name: declare_param(node, name, defaults[name], text, limits, read_only)
        for name, (text, limits, read_only) in table.items()
    }


def run_node(make: Callable[[], Node], args: list[str] | None = None, cleanup=None) -> None:
    """``main()`` of every node: init, build, spin a single-threaded executor (goals are
    coroutines or threads of their own), and end quietly on Ctrl-C. An exception raised while
    the context is going down (a callback that fired as Ctrl-C shut it) is part of the
    shutdown, not a crash; one raised while it is up still propagates. ``cleanup(node)`` runs
    last in any case (the driver's torque policy, the bridge's physics thread). The DDS profile
    (``use_dds_profile``) is set first, so ``ros2 run``, ``ros2 launch`` and ``physai bringup``
    all start nodes with it."""
    import rclpy
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor

    use_dds_profile()
    try:
        with rclpy.init(args=args):
            node = make()
            executor = SingleThreadedExecutor()
            executor.add_node(node)
            try:
                executor.spin()
            except (KeyboardInterrupt, ExternalShutdownException):
                pass
            except Exception:
                if rclpy.ok(context=node.context):
                    raise
            finally:
                if cleanup is not None:
                    cleanup(node)
                node.destroy_node()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
