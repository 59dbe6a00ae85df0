"""The generated tf2_msgs/control_msgs/franka_msgs/controller_manager_msgs are wire-compatible
with the official ones.

ROS 2 (Iron and later) matches publishers and subscribers by type hash (RIHS01), computed from
the fields only. The pinned hashes below are those of the official packages as released for
Kilted (control_msgs 6.10.0, tf2_msgs of geometry2, controller_manager_msgs 5.16.0) and of
franka_ros2's franka_msgs (v3.4.0; the gripper's definitions the same since v0.1.0), computed
by building the upstream definitions (for franka_msgs and controller_manager_msgs: the whole
upstream package, unchanged) with the same rosidl generators; if a field of ours drifted, these
differ.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.ros  # the generated interface packages

KILTED_HASHES = {
    "control_msgs/action/FollowJointTrajectory": (
        "RIHS01_ff29901b2693f5deb847e96084a1c2cdb26e70b7c847be21859b70a55fb29cf0"
    ),
    "control_msgs/action/GripperCommand": (
        "RIHS01_e17c0e644eccf14bea84a0a93e0977182872c2eb7873ca6694900059b46dbc84"
    ),
    "control_msgs/msg/GripperCommand": (
        "RIHS01_57eb8f326c9889ca8bb34ead82cc94cc09bf6bc5c3b6c09546dca3a00b589890"
    ),
    "control_msgs/msg/JointTolerance": (
        "RIHS01_c254f9cece0f3b733017b6990fd46d1326e25242d6b8844398c97d9a88e7d648"
    ),
    "control_msgs/msg/JointComponentTolerance": (
        "RIHS01_739ea7566931944d33830fa10f1bf5e7a7fbdc3172bce7a7eaac642bd6e3ffa4"
    ),
    "tf2_msgs/msg/TFMessage": (
        "RIHS01_e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087"
    ),
    "franka_msgs/action/Grasp": (
        "RIHS01_8e8a4bb9d96564ae56fb2d47e932c65656316f5c10365958a26df3517a06bb92"
    ),
    "franka_msgs/action/Homing": (
        "RIHS01_2156a4bd902561e59e6081ba94428daf9a453f960596f8b7ca12e8281e0caeeb"
    ),
    "franka_msgs/action/Move": (
        "RIHS01_ff1f93537cae0ce92792433e368199606771ad62bb819d78078bfe37144d3ef1"
    ),
    "franka_msgs/msg/GraspEpsilon": (
        "RIHS01_387fda91ae7324c144958fa617e7d5dc21f99d6b054b141b073ead3d082f46d3"
    ),
    "franka_msgs/action/ErrorRecovery": (
        "RIHS01_6c5dbf0517672f7127a92796e6a162d096e286c26f88c96177cb4c5448dfc5f5"
    ),
    "controller_manager_msgs/srv/SwitchController": (
        "RIHS01_d4ad10aa5da7808bc522d55d4123d8ef79de73d049d165639d7663ac37cc9895"
    ),
    "controller_manager_msgs/srv/SetHardwareComponentState": (
        "RIHS01_940b15846ed3e1fb561ab45edf77a992b811fd59c574f45d5205a84a0deb2f65"
    ),
}


def installed_type_hash(type_name: str) -> str:
    from ament_index_python.packages import get_package_share_directory

    package, kind, name = type_name.split("/")
    share = Path(get_package_share_directory(package))
    data = json.loads((share / kind / f"{name}.json").read_text())
    return {h["type_name"]: h["hash_string"] for h in data["type_hashes"]}[type_name]


@pytest.mark.parametrize("type_name", sorted(KILTED_HASHES))
def test_type_hash_matches_official_kilted(type_name: str) -> None:
    distro = os.environ.get("ROS_DISTRO", "kilted")
    if distro != "kilted":
        pytest.skip(f"{type_name} comes from the official packages of ROS 2 {distro}")
    assert installed_type_hash(type_name) == KILTED_HASHES[type_name]


def test_follow_joint_trajectory_has_ros2_fields() -> None:
    """The ROS 1-era definition lacks these; ROS 2 controllers send and expect them."""
    from control_msgs.action import FollowJointTrajectory

    goal = FollowJointTrajectory.Goal()
    for field in ("multi_dof_trajectory", "component_path_tolerance", "component_goal_tolerance"):
        assert hasattr(goal, field)
    assert hasattr(FollowJointTrajectory.Result(), "error_string")
    assert FollowJointTrajectory.Result.GOAL_TOLERANCE_VIOLATED == -5


def test_grasp_epsilon_defaults_are_franka_s():
    """The defaults come with the definition: 5 mm each, as franka_gripper assumes."""
    from franka_msgs.action import Grasp

    epsilon = Grasp.Goal().epsilon
    assert (epsilon.inner, epsilon.outer) == (0.005, 0.005)
