"""The node graphs, defined once for both ways of starting them.

``launch/*.launch.py`` (launch_ros, on a ROS 2 install) and ``physai bringup`` (where
launch_ros is absent: pip-only installs, CI) both build their process lists from these
functions, so the nodes, their names and their parameters cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from physai_ros.errors import InvalidInput


@dataclass(frozen=True)
class NodeSpec:
    """One node of a graph: ``executable`` is both the console entry point
    (``ros2 run physai_ros <executable>``) and the module ``physai_ros.nodes.<executable>``."""

    executable: str
    name: str
    parameters: dict[str, Any] = field(default_factory=dict)

    @property
    def module(self) -> str:
        return f"physai_ros.nodes.{self.executable}"


ROBOTS = ("so101", "panda")


def _check_robot(robot: str) -> None:
    if robot not in ROBOTS:
        raise InvalidInput(f"unknown robot {robot!r}; choose one of {ROBOTS}")


def demo_graph(robot: str = "so101", use_sim_time: bool = True) -> list[NodeSpec]:
    """The smallest end-to-end graph: the simulated robot publishing joint states and /clock,
    and the TF publisher turning them into the frame tree."""
    _check_robot(robot)
    common = {"robot": robot, "use_sim_time": use_sim_time}
    return [
        NodeSpec("sim_bridge", "sim_bridge", {"robot": robot}),
        NodeSpec("tf_publisher", "tf_publisher", common),
    ]


def pick_graph(
    robot: str = "so101",
    sim: bool = True,
    *,
    cube_x: float = 0.22,
    cube_y: float = 0.0,
    cube_mu: float = 1.0,
    cube_mass: float = 0.03,
    jaw_torque_cap: float = 2.94,
    real_time_factor: float = 1.0,
    model_path: str = "",
) -> list[NodeSpec]:
    """The pick: a robot (sim bridge, or the real SO-101 driver), the TF publisher and the pick.

    cube_x, cube_y: cube centre in the base frame [m]; cube_mu: its friction; cube_mass [kg];
    jaw_torque_cap: gripper torque cap [N m], both the sim actuator's and the pick's
    GripperCommand max_effort; real_time_factor: sim pacing (0 = as fast as possible).
    """
    _check_robot(robot)
    if robot != "so101":
        raise InvalidInput(f"the scripted pick is written for the SO-101; got robot {robot!r}")
    shared = {"robot": robot, "model_path": model_path}
    if sim:
        driver = NodeSpec(
            "sim_bridge",
            "sim_bridge",
            {
                **shared,
                # float(): a ROS double parameter refuses an integer such as `1`.
                "real_time_factor": float(real_time_factor),
                "cube_x": float(cube_x),
                "cube_y": float(cube_y),
                "cube_mu": float(cube_mu),
                "cube_mass": float(cube_mass),
                "jaw_torque_cap": float(jaw_torque_cap),
            },
        )
    else:
        from physai_ros.graph_so101 import real_driver_spec

        driver = real_driver_spec(**shared)
    timing = {"use_sim_time": sim}
    return [
        driver,
        NodeSpec("tf_publisher", "tf_publisher", {**shared, **timing}),
        NodeSpec("pick", "pick", {**shared, **timing, "jaw_torque_cap": float(jaw_torque_cap)}),
    ]


GRAPHS = {"demo": demo_graph, "pick": pick_graph}
