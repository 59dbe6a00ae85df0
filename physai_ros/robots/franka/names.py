"""franka_ros2's names for the Panda and the FR3, in one place (the sim bridge's
``franka_profile``, the launch files' ``franka`` argument, the trajectory node's defaults).

Checked against franka_ros2 itself:

* ``panda``: v0.1.13 (branch humble, commit 40cf08b), the last release with the Panda:
  ``franka_moveit_config/config/panda_ros_controllers.yaml`` names the joint_trajectory_controller
  ``panda_arm_controller`` on ``panda_joint1..7``; ``franka_gripper/launch/gripper.launch.py``
  names the gripper node ``[arm_id, '_gripper']`` = ``panda_gripper``, so its actions are
  ``/panda_gripper/{homing,move,grasp,gripper_action}`` and its joints ``panda_finger_joint1/2``.
* ``fr3``: v3.4.0 (branch jazzy, commit 29cb85a): ``franka_fr3_moveit_config/config/
  fr3_ros_controllers.yaml`` names it ``fr3_arm_controller`` on ``fr3_joint1..7``; since v2.0.0
  the gripper node is called ``franka_gripper`` (in the robot's namespace), so its actions are
  ``/franka_gripper/{homing,...}`` (v1.x: ``/fr3_gripper/...``, set ``franka_gripper`` to that).

The simulated robot is always the Panda model: ``fr3`` means Panda kinematics and dynamics with
the FR3's names and limits (``config/limits_fr3.yaml``).
"""

from __future__ import annotations

from typing import NamedTuple

from physai_ros import interfaces
from physai_ros.errors import InvalidInput


class FrankaProfile(NamedTuple):
    """joint_prefix: put before the model's joint names; arm_controller: the arm controller's
    name; franka_gripper: namespace of the franka_gripper actions ('' = not served); limits:
    the robot whose ``config/limits_<robot>.yaml`` the goals are checked against ('' = the
    simulated robot's own)."""

    joint_prefix: str
    arm_controller: str
    franka_gripper: str
    limits: str


FRANKA_PROFILES = {
    "none": FrankaProfile("", interfaces.ARM_CONTROLLER, "", ""),
    "panda": FrankaProfile("panda_", "panda_arm_controller", "panda_gripper", "panda"),
    "fr3": FrankaProfile("fr3_", "fr3_arm_controller", "franka_gripper", "fr3"),
}


def franka_profile(name: str) -> FrankaProfile:
    """The profile called ``name``; an unknown name lists the valid ones."""
    if name not in FRANKA_PROFILES:
        valid = list(FRANKA_PROFILES)
        raise InvalidInput(f"unknown franka profile {name!r}; choose one of {valid}")
    return FRANKA_PROFILES[name]


# The sim bridge's parameters a profile gives the defaults of: name -> FrankaProfile field
PROFILE_PARAMETERS = {
    "joint_prefix": "joint_prefix",
    "arm_controller_name": "arm_controller",
    "franka_gripper": "franka_gripper",
}

# franka_ros2's /joint_states: ros2_control_node's joint_state_broadcaster publishes the arm on
# ``franka/joint_states``, and a joint_state_publisher (``source_list``: that and the gripper's
# joint_states) merges them onto ``/joint_states`` at this rate [Hz] (franka_moveit_config's and
# franka_fr3_moveit_config's moveit.launch.py, v0.1.13 and v3.4.0). It repeats the last values it
# got from a source that stopped: after a robot error the arm's last broadcast state keeps coming.
JOINT_STATE_PUBLISHER_RATE = 30.0

# franka_hardware's recovery after a robot error (franka_ros2 v3.x; v0.1.13 has none): its
# ``action_server`` node's ErrorRecovery action, and the ros2_control hardware component it
# leaves to be set active again (franka_description's name for a single arm)
ERROR_RECOVERY = "/action_server/error_recovery"
HARDWARE_COMPONENT = "FrankaHardwareInterface"

# libfranka's robot errors (franka::Errors) a pick can meet, as the simulation injects them, and
# the text of the ControlException libfranka throws for one
ROBOT_ERRORS = (
    "cartesian_reflex",
    "joint_reflex",
    "communication_constraints_violation",
    "power_limit_violation",
    "joint_motion_generator_acceleration_discontinuity",
)
REFLEX = 'libfranka: Move command aborted: motion aborted by reflex! ["{error}"]'

# franka_ros2 v0.1.13 (the Panda's) on a robot error: FrankaHardwareInterface::read lets
# libfranka's exception through, C++ ends ros2_control_node with this on stderr, and the launch's
# on_exit=Shutdown() ends franka_ros2's whole launch: /joint_states and the controllers are gone
PANDA_TERMINATE = (
    "terminate called after throwing an instance of 'franka::ControlException'\n  what():  {reflex}"
)
PANDA_SILENCE_HINT = (
    "under franka_ros2 v0.1.13 a robot error (a reflex, a communication constraint violation) "
    "ends franka_ros2's launch: its log names libfranka's error; start it again for the next goal"
)
