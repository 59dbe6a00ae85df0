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


GRAPHS = {"demo": demo_graph}
