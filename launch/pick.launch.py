"""The SO-101 pick: ``ros2 launch physai_ros pick.launch.py sim:=true``.

sim:=true runs the MuJoCo sim bridge (real contact physics, no weld); sim:=false the LeRobot
SO-101 driver on a real arm. Arguments and the node graph come from physai_ros.launch_support
and physai_ros.graph, the same code ``physai bringup pick`` runs where launch_ros is absent.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration

from physai_ros.launch_support import (
    PICK_ARGUMENTS,
    as_bool,
    node_actions,
    pick_specs,
    rviz_action,
)


def _nodes(context):
    arg = {name: LaunchConfiguration(name).perform(context) for name in PICK_ARGUMENTS}
    actions = node_actions(pick_specs(arg))
    if as_bool(arg["rviz"]):
        actions.append(rviz_action(use_sim_time=as_bool(arg["sim"])))
    return actions


def generate_launch_description():
    return LaunchDescription(
        [
            *(
                DeclareLaunchArgument(name, default_value=default, description=text)
                for name, (default, text) in PICK_ARGUMENTS.items()
            ),
            OpaqueFunction(function=_nodes),
        ]
    )
