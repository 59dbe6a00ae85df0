"""Simulated arm + TF + trajectory node on sim time.

    ros2 launch physai_ros trajectory_sim.launch.py robot:=panda shape:=quintic duration:=0.0

The node list comes from ``physai_ros.graph.trajectory_graph`` (shared with the
Python bringup), so both ways of starting the graph run the same nodes and parameters.
"""

import physai_ros.graph as graph
from physai_ros.launch_support import describe

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
    return describe(ARGUMENTS, node_specs)
