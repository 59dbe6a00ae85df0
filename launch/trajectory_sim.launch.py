"""Simulated arm + TF + trajectory node on sim time.

    ros2 launch physai_ros trajectory_sim.launch.py robot:=panda shape:=quintic duration:=0.0

The node list comes from ``physai_ros.graph.trajectory_graph`` (shared with the
Python bringup), so both ways of starting the graph run the same nodes and parameters. The
ROS imports live inside the function: the module loads (and is tested) without launch_ros.
"""

import physai_ros.graph as graph

ARGUMENTS = {
    "robot": ("panda", "robot to simulate: so101 | panda"),
    "shape": ("quintic", "time scaling: step|linear|trapezoid|cubic|quintic|septic|ruckig"),
    "duration": ("0.0", "untimed goal duration [s]; 0 = the fastest within the limits"),
}
SIM = True


def node_specs(values: dict[str, str]) -> list:
    """The graph for launch-argument ``values`` (strings, as launch passes them)."""
    return graph.trajectory_graph(
        values["robot"], sim=SIM, shape=values["shape"], duration=float(values["duration"])
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
