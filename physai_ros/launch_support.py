"""Turn the graphs of ``physai_ros.graph`` into launch_ros actions (used by ``launch/``).

Kept apart from ``graph.py`` so that the graphs import without launch_ros (pip installs, CI)
while the launch files, on a ROS 2 install, start exactly the same nodes and parameters.
"""

from __future__ import annotations

from physai_ros.graph import NodeSpec, demo_graph, pick_graph
from physai_ros.paths import share_dir

TRUE = ("true", "1", "yes", "on")

#: ``pick.launch.py``'s arguments: name → (default, description).
PICK_ARGUMENTS = {
    "sim": ("true", "true: MuJoCo sim bridge; false: the real SO-101 through LeRobot"),
    "robot": ("so101", "robot model (the scripted pick is written for the SO-101)"),
    "rviz": ("false", "start RViz with config/physai.rviz"),
    "cube_x": ("0.22", "cube centre x in the robot base frame [m]"),
    "cube_y": ("0.0", "cube centre y in the robot base frame [m]"),
    "mu": ("1.0", "cube friction coefficient (sim)"),
    "mass": ("0.03", "cube mass [kg] (sim)"),
    "cap": ("2.94", "jaw torque cap [N m]: GripperCommand max_effort (and the sim actuator)"),
    "real_time_factor": ("1.0", "sim pacing: 1 = real time, 0 = as fast as possible"),
    "model_path": ("", "Menagerie-style model folder; empty = the embedded model"),
    "port": ("/dev/ttyACM0", "real arm: serial port of the servo bus (lerobot-find-port)"),
    "calibration_file": ("", "real arm: LeRobot calibration JSON; empty = LeRobot's own path"),
}

#: ``display.launch.py``'s arguments.
DISPLAY_ARGUMENTS = {
    "robot": ("so101", "robot model: so101 or panda"),
    "rviz": ("true", "start RViz with config/physai.rviz"),
}


def as_bool(text: str) -> bool:
    """A launch argument's text as a boolean (``sim:=true``)."""
    return text.strip().lower() in TRUE


def pick_specs(arg: dict[str, str]) -> list[NodeSpec]:
    """The pick graph from launch-argument text (what ``pick.launch.py`` starts)."""
    return pick_graph(
        robot=arg["robot"],
        sim=as_bool(arg["sim"]),
        cube_x=float(arg["cube_x"]),
        cube_y=float(arg["cube_y"]),
        cube_mu=float(arg["mu"]),
        cube_mass=float(arg["mass"]),
        jaw_torque_cap=float(arg["cap"]),
        real_time_factor=float(arg["real_time_factor"]),
        model_path=arg["model_path"],
        port=arg["port"],
        calibration_file=arg["calibration_file"],
    )


def display_specs(arg: dict[str, str]) -> list[NodeSpec]:
    """The display graph from launch-argument text (what ``display.launch.py`` starts)."""
    return demo_graph(robot=arg["robot"])


def node_actions(specs: list[NodeSpec]) -> list:
    """One ``launch_ros.actions.Node`` per spec, same executable, name and parameters."""
    from launch_ros.actions import Node

    return [
        Node(
            package="physai_ros",
            executable=spec.executable,
            name=spec.name,
            parameters=[spec.parameters],
            output="screen",
            emulate_tty=True,
        )
        for spec in specs
    ]


def rviz_action(config: str = "physai.rviz", use_sim_time: bool = True):
    """RViz with the package's display configuration (robot model, TF, contacts, camera)."""
    from launch_ros.actions import Node

    return Node(
        package="rviz2",
        executable="rviz2",
        name="rviz2",
        arguments=["-d", str(share_dir() / "config" / config)],
        parameters=[{"use_sim_time": use_sim_time}],
        output="screen",
    )
