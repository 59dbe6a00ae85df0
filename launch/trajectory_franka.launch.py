"""Trajectory node for a real Panda under franka_ros2, on wall time.

    ros2 launch franka_bringup ...            # franka_ros2 starts the robot and its controller
    ros2 launch physai_ros trajectory_franka.launch.py
    ros2 launch physai_ros trajectory_franka.launch.py franka:=fr3

Only the trajectory node runs here: franka_ros2's joint_trajectory_controller executes what it
sends, after it was checked against libfranka's limits (config/limits_panda.yaml; franka:=fr3:
config/limits_fr3.yaml, the controller fr3_arm_controller and the joints fr3_joint1..). The node
list comes from ``physai_ros.launching.graph.trajectory_graph``.
"""

import physai_ros.launching.graph as graph
from physai_ros.launching.launch_support import describe

ARGUMENTS = {
    "franka": ("panda", "franka_ros2 robot: panda | fr3 (its controller, joint names, limits)"),
    "controller_action": (
        "",
        "franka_ros2 arm controller's FollowJointTrajectory action; '' = the franka robot's",
    ),
    "joint_prefix": ("", "franka_ros2 joint name prefix; '' = the franka robot's"),
    "limits_set": ("", "limit set of config/limits_<robot>.yaml; '' = its default"),
    "shape": ("quintic", "time scaling: step|linear|trapezoid|cubic|quintic|septic|ruckig"),
    "duration": ("0.0", "untimed goal duration [s]; 0 = the fastest within the limits"),
}
SIM = False


def node_specs(values: dict[str, str]) -> list:
    """The graph for launch-argument ``values`` (strings, as launch passes them)."""
    return graph.trajectory_graph(
        "panda",
        sim=SIM,
        franka=values["franka"],
        controller_action=values["controller_action"] or None,
        joint_prefix=values["joint_prefix"] or None,
        limits_set=values["limits_set"] or None,
        shape=values["shape"],
        duration=float(values["duration"]),
    )


def generate_launch_description():
    return describe(ARGUMENTS, node_specs)
