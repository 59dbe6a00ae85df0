"""What the launch files in ``launch/`` share: turning graphs into launch_ros actions.

Every launch file declares its ``ARGUMENTS`` (name → (default, description)) and a
``node_specs(values)`` that maps the arguments' text to ``physai_ros.launching.graph`` node specs —
the
same graphs ``physai bringup`` starts where launch_ros is absent. Every launch file also takes
``params_file:=`` (``PARAMS_FILE``): a ``ros__parameters`` file given to each of its nodes after
the values the launch arguments set, so the file's entries win (as ``--params-file`` does for
``ros2 run``). launch and launch_ros are
imported only inside the functions that build launch actions, so the launch files load (and
are tested) on installs without them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from physai_ros.errors import InvalidInput
from physai_ros.launching.graph import NodeSpec
from physai_ros.paths import share_dir

TRUE = ("true", "1", "yes", "on")
Arguments = dict[str, tuple[str, str]]
PARAMS_FILE = (
    "params_file",
    (
        "",
        "a ros__parameters file (e.g. config/<node>.yaml edited) for the graph's nodes, "
        "applied after the launch arguments; '' = none",
    ),
)

SO101_ARGUMENTS: Arguments = {
    "sim": ("true", "true: MuJoCo sim bridge; false: the real SO-101 through LeRobot"),
    "rviz": ("false", "start RViz with config/physai.rviz"),
    "cube_x": ("", "cube centre x in the robot base frame [m]; empty = the robot's place"),
    "cube_y": ("", "cube centre y in the robot base frame [m]; empty = the robot's place"),
    "real_time_factor": ("1.0", "sim pacing: 1 = real time, 0 = as fast as possible"),
    "port": ("/dev/ttyACM0", "real arm: serial port of the servo bus (lerobot-find-port)"),
    "calibration_file": ("", "real arm: LeRobot calibration JSON; empty = LeRobot's own path"),
    "autostart": ("true", "real arm: configure and activate the driver at start"),
    "discovery": (
        "localhost",
        "real arm: who may reach the graph: localhost (this computer) | subnet (ROS default)",
    ),
    "limits_set": (
        "",
        "joint-limit set, on the real arm the one the driver checks against: sts3215 | "
        "first_use; empty = the driver's configured set",
    ),
}
"""The SO-101 behind a graph, simulated or real: the arguments of every launch file that
starts one (``pick``, ``policy``), defined once."""


def as_bool(text: str) -> bool:
    """A launch argument's text as a boolean (``sim:=true``)."""
    return text.strip().lower() in TRUE


def optional_float(text: str) -> float | None:
    """A launch argument's number, or None for an empty one (``cube_x:=`` = the default)."""
    return float(text) if text.strip() else None


def node_actions(specs: list[NodeSpec], params_file: str = "") -> list:
    """One ``launch_ros.actions.Node`` per spec, same executable, name and parameters, then
    ``params_file`` (when given) over them. Specs with a namespace go into one ``GroupAction``
    per namespace that pushes it (``PushRosNamespace``) with the specs' remappings
    (``SetRemap``), as a hand-written multi-robot launch file would."""
    from launch.actions import GroupAction
    from launch_ros.actions import Node, PushRosNamespace, SetRemap

    if params_file and not Path(params_file).is_file():
        raise InvalidInput(f"params_file:={params_file}: no such file")
    files = [params_file] if params_file else []

    def node(spec: NodeSpec):
        return Node(
            package="physai_ros",
            executable=spec.executable,
            name=spec.name,
            parameters=[spec.parameters, *files],
            additional_env=spec.env or None,
            output="screen",
            emulate_tty=True,
        )

    out: list = []
    groups: dict[str, list[NodeSpec]] = {}
    for spec in specs:
        if spec.namespace:
            groups.setdefault(spec.namespace, []).append(spec)
        else:
            out.append(node(spec))
    for namespace, members in groups.items():
        remaps = {src: dst for spec in members for src, dst in spec.remaps.items()}
        if any(spec.remaps != remaps for spec in members):
            raise InvalidInput(f"the nodes in namespace {namespace!r} need the same remappings")
        out.append(
            GroupAction(
                [
                    PushRosNamespace(namespace),
                    *(SetRemap(src=src, dst=dst) for src, dst in remaps.items()),
                    *(node(spec) for spec in members),
                ]
            )
        )
    return out


def rviz_action(config: str = "physai.rviz", use_sim_time: bool = True):
    """RViz with the package's display configuration (robot model, TF, contacts, camera)."""
    from launch_ros.actions import Node

    return Node(
        package="rviz2",
        executable="rviz2",
        name="rviz2",
        arguments=["-d", str(share_dir() / "config" / config)],
        parameters=[{"use_sim_time": use_sim_time}],
        output="screen",
    )


def describe(
    arguments: Arguments,
    node_specs: Callable[[dict[str, str]], list[NodeSpec]],
    rviz: Callable[[dict[str, str]], bool] | None = None,
):
    """The ``LaunchDescription``: declared arguments, then, at launch time, one Node per spec
    of ``node_specs(values)`` (plus RViz when ``rviz(values)`` says so)."""
    from launch import LaunchDescription
    from launch.actions import DeclareLaunchArgument, OpaqueFunction
    from launch.substitutions import LaunchConfiguration

    arguments = dict([*arguments.items(), PARAMS_FILE])

    def actions(context) -> list:
        values = {name: LaunchConfiguration(name).perform(context) for name in arguments}
        out = node_actions(node_specs(values), values["params_file"])
        if rviz is not None and rviz(values):
            out.append(rviz_action(use_sim_time=as_bool(values.get("sim", "true"))))
        return out

    declared = [
        DeclareLaunchArgument(name, default_value=default, description=description)
        for name, (default, description) in arguments.items()
    ]
    return LaunchDescription([*declared, OpaqueFunction(function=actions)])
