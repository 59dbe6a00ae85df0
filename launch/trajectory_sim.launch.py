"""Simulated arm + TF + trajectory node on sim time.

    ros2 launch physai_ros trajectory_sim.launch.py robot:=panda shape:=quintic duration:=0.0
    ros2 launch physai_ros trajectory_sim.launch.py franka:=panda   # franka_ros2's names

``franka:=panda|fr3`` makes the simulated Panda look like franka_ros2's (joints panda_joint1..,
panda_arm_controller, the franka_gripper actions; fr3: fr3_ names and the FR3's limits on the
Panda model), so code written for a real Franka runs against it unchanged.

The node list comes from ``physai_ros.launching.graph.trajectory_graph`` (shared with the
Python bringup), so both ways of starting the graph run the same nodes and parameters.
"""

import physai_ros.launching.graph as graph
from physai_ros.launching.launch_support import describe

ARGUMENTS = {
    "robot": ("panda", "robot to simulate: so101 | panda"),
    "shape": ("quintic", "time scaling: step|linear|trapezoid|cubic|quintic|septic|ruckig"),
    "duration": ("0.0", "untimed goal duration [s]; 0 = the fastest within the limits"),
    "franka": ("none", "franka_ros2's names and limits on the simulated Panda: none | panda | fr3"),
}
SIM = True


def node_specs(values: dict[str, str]) -> list:
    """The graph for launch-argument ``values`` (strings, as launch passes them)."""
    return graph.trajectory_graph(
        values["robot"],
        sim=SIM,
        franka=values["franka"],
        shape=values["shape"],
        duration=float(values["duration"]),
    )


def generate_launch_description():
    return describe(ARGUMENTS, node_specs)
