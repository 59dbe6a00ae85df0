"""How every node declares its parameters, and what the nodes share (not a node itself).

Each node's parameters are described in one file, ``config/schema/<node>.yaml``
(``physai_ros.parameters``); ``declare_schema`` declares them from it, the only declaration
path. The robot, its model and its placement must be the same in the TF publisher, the pick
nodes and the sim bridge: ``declare_robot_params`` gives them their defaults from
config/scene.yaml.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.node import Node

from physai_ros.config import load_scene_config
from physai_ros.errors import InvalidInput
from physai_ros.models import ROBOTS
from physai_ros.parameters import MAP, Schema, load_schema  # noqa: F401 - re-exported for the nodes
from physai_ros.qos import DDS_PROFILE, LATCHED, stream_qos, use_dds_profile  # noqa: F401 - re-exported for the nodes

ROBOT_PARAMS = ("robot", "model_path", "base_pos", "base_yaw_deg")  # declare_robot_params


class RobotParams(NamedTuple):
    robot: str
    model_path: str | None
    base_pos: list[float]
    base_yaw_deg: float


def declare_schema(
    node: Node, schema: Schema, defaults: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Declare every parameter of ``schema`` (``physai_ros.parameters``, the node's
    ``config/schema/<node>.yaml``) with its type, description (units), range and read_only;
    the default is ``defaults[name]`` where given (one that depends on the robot, the scene or
    a profile), else the schema's. Returns name → value: the params file's or ``-p``'s, else the
    default. The one way a node declares a parameter."""
    defaults = dict(defaults or {})
    unknown = sorted(set(defaults) - set(schema))
    if unknown:
        raise InvalidInput(f"{node.get_name()}: defaults for undeclared parameters {unknown}")
    values = {}
    for name, spec in schema.items():
        if MAP in name:
            raise InvalidInput(f"{node.get_name()}: {name} needs Schema.mapped first")
        desc = ParameterDescriptor(description=spec.description, read_only=spec.read_only)
        if spec.bounds is not None and spec.type == "int":
            low, high = spec.bounds
            desc.integer_range = [IntegerRange(from_value=low, to_value=high, step=1)]
        elif spec.bounds is not None:
            low, high = spec.bounds
            desc.floating_point_range = [FloatingPointRange(from_value=low, to_value=high)]
        default = spec.coerce(defaults[name]) if name in defaults else spec.default
        values[name] = node.declare_parameter(name, default, desc).value
    return values


def declare_robot_params(node: Node, schema: Schema) -> RobotParams:
    """Declare ``robot``, ``model_path``, ``base_pos`` and ``base_yaw_deg`` of ``schema``
    (the robot's placement: config/scene.yaml's for the robot chosen)."""
    robot = declare_schema(node, schema.only("robot"))["robot"]
    if robot not in ROBOTS:
        raise SystemExit(f"{node.get_name()}: unknown robot {robot!r}; choose one of {ROBOTS}")
    place = load_scene_config()["robots"][robot]
    p = declare_schema(
        node,
        schema.only("model_path", "base_pos", "base_yaw_deg"),
        {"base_pos": place["base_pos"], "base_yaw_deg": place["base_yaw_deg"]},
    )
    return RobotParams(
        robot, p["model_path"] or None, list(p["base_pos"]), float(p["base_yaw_deg"])
    )


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
