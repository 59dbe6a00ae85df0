"""Trajectory node for a real Panda under franka_ros2, on wall time.

    ros2 launch franka_bringup ...            # franka_ros2 starts the robot and its controller
    ros2 launch physai_ros trajectory_franka.launch.py
    ros2 launch physai_ros trajectory_franka.launch.py \
        controller_action:=/fr3_arm_controller/follow_joint_trajectory joint_prefix:=fr3_

Only the trajectory node runs here: franka_ros2's joint_trajectory_controller executes what it
sends, after it was checked against libfranka's limits (config/limits_panda.yaml). The node list
comes from ``physai_ros.graph.trajectory_graph``; ROS imports live inside the
function, so the module loads (and is tested) without launch_ros.
"""

import physai_ros.graph as graph

ARGUMENTS = {
    "controller_action": (
        graph.FRANKA_CONTROLLER_ACTION,
        "franka_ros2 arm controller's FollowJointTrajectory action",
    ),
    "joint_prefix": (graph.FRANKA_JOINT_PREFIX, "franka_ros2 joint name prefix (panda_ | fr3_)"),
    "limits_set": ("libfranka", "limit set of config/limits_panda.yaml"),
    "shape": ("quintic", "time scaling: step|linear|trapezoid|cubic|quintic|septic|ruckig"),
    "duration": ("0.0", "untimed goal duration [s]; 0 = the fastest within the limits"),
}
SIM = False


def node_specs(values: dict[str, str]) -> list:
    """The graph for launch-argument ``values`` (strings, as launch passes them)."""
    return graph.trajectory_graph(
        "panda",
        sim=SIM,
        controller_action=values["controller_action"],
        joint_prefix=values["joint_prefix"],
        limits_set=values["limits_set"],
        shape=values["shape"],
        duration=float(values["duration"]),
    )


def generate_launch_description():
    from launch import LaunchDescription
    from launch.actions import DeclareLaunchArgument, OpaqueFunction
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import Node

    def nodes(context):
        values = {name: LaunchConfiguration(name).perform(context) for name in ARGUMENTS}
        return [
            Node(
                package="physai_ros",
                executable=spec.executable,
                name=spec.name,
                parameters=[spec.parameters],
                output="screen",
            )
            for spec in node_specs(values)
        ]

    declared = [
        DeclareLaunchArgument(name, default_value=default, description=description)
        for name, (default, description) in ARGUMENTS.items()
    ]
    return LaunchDescription([*declared, OpaqueFunction(function=nodes)])
