"""The three-finger pick of a soft object: ``ros2 launch physai_ros hand_pick.launch.py``.

The seed's whole pipeline over ROS with the Barrett-like hand on the simulated Panda: the sim
bridge (MuJoCo, a soft sphere), the TF publisher, the trajectory node, the grasp planner and
the hand pick (plan -> pre-grasp through the trajectory node -> close to the contacts -> force
close -> lift). The outcome is latched on ``/hand_pick/outcome``; the hand pick serves the
``/pick`` action (docs/hand_pick.md). The nodes come from
``physai_ros.launching.graph.hand_pick_graph``, as for ``physai bringup hand_pick``.
"""

from physai_ros.launching.graph import hand_pick_graph
from physai_ros.launching.launch_support import as_bool, describe, optional_float

ARGUMENTS = {
    "object_x": ("", "soft object centre x in the base frame [m]; empty = config/hand_pick.yaml"),
    "object_y": ("", "soft object centre y in the base frame [m]; empty = config/hand_pick.yaml"),
    "young": ("", "its Young's modulus [Pa]; empty = config/hand_pick.yaml"),
    "mass": ("", "its mass [kg]; empty = config/hand_pick.yaml"),
    "real_time_factor": ("1.0", "sim pacing: 1 = real time, 0 = as fast as possible"),
    "model_path": ("", "Menagerie-style folder of the Panda arm; empty = the embedded model"),
    "autostart": ("true", "pick once at start; false: only /pick goals"),
    "rviz": ("false", "start RViz with config/physai.rviz"),
}


def node_specs(values: dict[str, str]) -> list:
    """The hand pick graph for launch-argument ``values`` (strings, as launch passes them)."""
    return hand_pick_graph(
        object_x=optional_float(values["object_x"]),
        object_y=optional_float(values["object_y"]),
        young=optional_float(values["young"]),
        mass=optional_float(values["mass"]),
        real_time_factor=float(values["real_time_factor"]),
        model_path=values["model_path"],
        autostart=as_bool(values["autostart"]),
    )


def generate_launch_description():
    return describe(ARGUMENTS, node_specs, rviz=lambda values: as_bool(values["rviz"]))
