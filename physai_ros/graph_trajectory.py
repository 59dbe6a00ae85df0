"""The trajectory node's graphs, for ``launch/trajectory_*.launch.py`` and the Python bringup.

Sim: the MuJoCo bridge (serves the arm's FollowJointTrajectory and publishes /clock), the TF
publisher and the trajectory node, all on sim time. Real Panda: only the trajectory node, pointed
at franka_ros2's joint_trajectory_controller (started by franka_ros2's own bringup) on wall time.
"""

from __future__ import annotations

from typing import Any

from physai_ros import interfaces
from physai_ros.graph import NodeSpec, _check_robot

FRANKA_CONTROLLER_ACTION = "/panda_arm_controller/follow_joint_trajectory"
"""franka_ros2's Panda arm controller (``panda_ros_controllers.yaml``: a
joint_trajectory_controller named ``panda_arm_controller`` on joints ``panda_joint1..7``).
FR3 releases name it ``fr3_arm_controller`` on ``fr3_joint1..7``: pass
``controller_action=/fr3_arm_controller/follow_joint_trajectory, joint_prefix=fr3_``."""

FRANKA_JOINT_PREFIX = "panda_"
"""franka_ros2 names the Panda's joints ``panda_joint1``…; our limits file says ``joint1``…"""


def trajectory_graph(robot: str = "panda", sim: bool = True, **trajectory: Any) -> list[NodeSpec]:
    """Nodes of the trajectory demo; ``trajectory`` overrides the trajectory node's parameters
    (shape, duration, controller_action, joint_prefix, limits_set, …)."""
    _check_robot(robot)
    params: dict[str, Any] = {"robot": robot, "use_sim_time": sim}
    if sim:
        params["controller_action"] = interfaces.FOLLOW_JOINT_TRAJECTORY
    elif robot == "panda":
        params["controller_action"] = FRANKA_CONTROLLER_ACTION
        params["joint_prefix"] = FRANKA_JOINT_PREFIX
    params.update({k: v for k, v in trajectory.items() if v is not None})
    node = NodeSpec("trajectory", "trajectory", params)
    if not sim:
        return [node]
    return [
        NodeSpec("sim_bridge", "sim_bridge", {"robot": robot}),
        NodeSpec("tf_publisher", "tf_publisher", {"robot": robot, "use_sim_time": True}),
        node,
    ]
