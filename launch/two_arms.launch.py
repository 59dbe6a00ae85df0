"""Two SO-101 side by side, each picking its own cube:

    ros2 launch physai_ros two_arms.launch.py

Each arm is the whole simulated pick graph (``pick.launch.py sim:=true``) pushed into its own
namespace, ``left`` or ``right`` (``/left/joint_states``, ``/left/arm_controller/…``,
``/left/pick/outcome``), its TF frames under ``left/`` or ``right/`` in the one shared tree,
its base 0.2 m to the left or right of the world origin. Each arm's sim bridge steps its own
MuJoCo world, so each namespace has its own clock (``/left/clock``, ``/right/clock``).
The nodes come from ``physai_ros.launching.graph.two_arm_graph``.
"""

from physai_ros.launching.graph import two_arm_graph
from physai_ros.launching.launch_support import describe

ARGUMENTS = {
    "left_cube_x": ("0.22", "left arm's cube centre x in its base frame [m]"),
    "left_cube_y": ("0.0", "left arm's cube centre y in its base frame [m]"),
    "right_cube_x": ("0.22", "right arm's cube centre x in its base frame [m]"),
    "right_cube_y": ("0.0", "right arm's cube centre y in its base frame [m]"),
    "mu": ("1.0", "cube friction coefficient (both cubes)"),
    "mass": ("0.03", "cube mass [kg] (both cubes)"),
    "real_time_factor": ("1.0", "sim pacing of both worlds: 1 = real time"),
}


def node_specs(values: dict[str, str]) -> list:
    """The two namespaced pick graphs for launch-argument ``values``."""
    cubes = {
        arm: (float(values[f"{arm}_cube_x"]), float(values[f"{arm}_cube_y"]))
        for arm in ("left", "right")
    }
    return two_arm_graph(
        cubes,
        real_time_factor=float(values["real_time_factor"]),
        cube_mu=float(values["mu"]),
        cube_mass=float(values["mass"]),
    )


def generate_launch_description():
    return describe(ARGUMENTS, node_specs)
