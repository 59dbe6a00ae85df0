"""RViz on the package's own frame tree: ``ros2 launch physai_ros display.launch.py``.

No robot_state_publisher: our TF publisher computes /tf and /tf_static from the same MJCF the
simulation steps and publishes the generated URDF on /robot_description. The robot moves in
the sim bridge, so the frames have a live joint-state source.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration

from physai_ros.launch_support import (
    DISPLAY_ARGUMENTS,
    as_bool,
    display_specs,
    node_actions,
    rviz_action,
)


def _nodes(context):
    arg = {name: LaunchConfiguration(name).perform(context) for name in DISPLAY_ARGUMENTS}
    actions = node_actions(display_specs(arg))
    if as_bool(arg["rviz"]):
        actions.append(rviz_action())
    return actions


def generate_launch_description():
    return LaunchDescription(
        [
            *(
                DeclareLaunchArgument(name, default_value=default, description=text)
                for name, (default, text) in DISPLAY_ARGUMENTS.items()
            ),
            OpaqueFunction(function=_nodes),
        ]
    )
