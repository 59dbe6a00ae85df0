"""The SO-101 pick: ``ros2 launch physai_ros pick.launch.py sim:=true`` (the simulated Panda:
``robot:=panda``, its Franka Hand through franka_gripper's actions).

sim:=true runs the MuJoCo sim bridge (real contact physics, no weld); sim:=false the LeRobot
SO-101 driver on a real arm (port:=…, calibration_file:=…, the cube placed at cube_x, cube_y),
a lifecycle node the launch configures and activates (autostart:=false leaves it to
``ros2 lifecycle set``), reachable from this computer only unless discovery:=subnet.
limits_set:=first_use runs the driver and the pick on the slower limit set together;
start_pick:=false leaves the pick to goals (``ros2 action send_goal /pick ...``).
record:=DIR records every pick into a LeRobot dataset (the dataset recorder).
robot:=panda franka:=panda|fr3 sim:=false runs the pick beside franka_ros2 on a real Panda or
FR3 (docs/franka.md: which franka_ros2 launch to start first).
The nodes come from ``physai_ros.launching.graph.pick_graph``, as for ``physai bringup pick``.
"""

from physai_ros.launching.graph import pick_graph
from physai_ros.launching.launch_support import (
    SO101_ARGUMENTS,
    as_bool,
    describe,
    optional_float,
)

ARGUMENTS = {
    **SO101_ARGUMENTS,
    "robot": ("so101", "robot model: so101 | panda (sim:=false: under franka_ros2, with franka)"),
    "mu": ("1.0", "cube friction coefficient (sim)"),
    "mass": ("0.03", "cube mass [kg] (sim)"),
    "cap": (
        "",
        "jaw cap [N m SO-101 | N Panda]: GripperCommand max_effort (and the sim actuator); "
        "empty = the robot's (SO-101 2.94 N m, Panda 70 N)",
    ),
    "model_path": ("", "Menagerie-style model folder; empty = the embedded model"),
    "limits_set": (
        "",
        "joint-limit set the pick times its moves within, and on the real arm the set the "
        "driver checks them against: sts3215 | first_use; empty = the driver's configured set",
    ),
    "start_pick": (
        "true",
        "pick the configured cube once at start; false: only goals on the /pick action",
    ),
    "cameras": (
        "",
        "sim: cameras whose images to publish, comma-separated (front_cam,wrist_cam); "
        "empty = none (software rendering slows the physics)",
    ),
    "record": (
        "",
        "folder of a LeRobot dataset to record every pick into (the cameras' images at 30 fps); "
        "empty = no recording",
    ),
    "image_topics": (
        "",
        "real arm, with record: sensor_msgs/Image topics of its cameras, comma-separated",
    ),
    "franka": (
        "none",
        "robot:=panda: franka_ros2's robot: none | panda | fr3 (fr3: its limits, and robot "
        "errors recovered by /pick/recover); sim:=false needs it: the graph beside franka_ros2",
    ),
}


def node_specs(values: dict[str, str]) -> list:
    """The pick graph for launch-argument ``values`` (strings, as launch passes them)."""
    return pick_graph(
        robot=values["robot"],
        sim=as_bool(values["sim"]),
        cube_x=optional_float(values["cube_x"]),
        cube_y=optional_float(values["cube_y"]),
        cube_mu=float(values["mu"]),
        cube_mass=float(values["mass"]),
        jaw_torque_cap=optional_float(values["cap"]),
        real_time_factor=float(values["real_time_factor"]),
        model_path=values["model_path"],
        port=values["port"],
        calibration_file=values["calibration_file"],
        autostart=as_bool(values["autostart"]),
        discovery=values["discovery"],
        limits_set=values["limits_set"],
        start_pick=as_bool(values["start_pick"]),
        cameras=values["cameras"],
        record=values["record"],
        image_topics=values["image_topics"],
        franka=values["franka"],
    )


def generate_launch_description():
    return describe(ARGUMENTS, node_specs, rviz=lambda values: as_bool(values["rviz"]))
