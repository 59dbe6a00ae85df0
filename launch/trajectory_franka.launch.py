"""Trajectory node for a real Panda under franka_ros2, on wall time.

    ros2 launch franka_bringup ...            # franka_ros2 starts the robot and its controller
    ros2 launch physai_ros trajectory_franka.launch.py
    ros2 launch physai_ros trajectory_franka.launch.py \
        controller_action:=/fr3_arm_controller/follow_joint_trajectory joint_prefix:=fr3_

Only the trajectory node runs here: franka_ros2's joint_trajectory_controller executes what it
sends, after it was checked against libfranka's limits (config/limits_panda.yaml). The node list
comes from ``physai_ros.graph.trajectory_graph``.
"""

import physai_ros.graph as graph
from physai_ros.launch_support import describe

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
    return describe(ARGUMENTS, node_specs)
