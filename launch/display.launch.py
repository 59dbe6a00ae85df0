"""RViz on the package's own frame tree: ``ros2 launch physai_ros display.launch.py``.

No robot_state_publisher: our TF publisher computes /tf and /tf_static from the same MJCF the
simulation steps and publishes the generated URDF on /robot_description. The robot stands in
the sim bridge, so the frames have a live joint-state source.
"""

from physai_ros.launching.graph import demo_graph
from physai_ros.launching.launch_support import as_bool, describe

ARGUMENTS = {
    "robot": ("so101", "robot model: so101 or panda"),
    "rviz": ("true", "start RViz with config/physai.rviz"),
}


def node_specs(values: dict[str, str]) -> list:
    """The sim bridge and the TF publisher for ``values["robot"]``."""
    return demo_graph(robot=values["robot"])


def generate_launch_description():
    return describe(ARGUMENTS, node_specs, rviz=lambda values: as_bool(values["rviz"]))
