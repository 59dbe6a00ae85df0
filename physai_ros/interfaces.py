"""The ROS names every node agrees on (one place, so the sim bridge, the real drivers, the pick
and the TF publisher cannot drift apart). They follow ros2_control's controller naming, so a
real Panda under franka_ros2 or a user's own tools see the same graph."""

from __future__ import annotations

JOINT_STATES = "/joint_states"
CLOCK = "/clock"
TF = "/tf"
TF_STATIC = "/tf_static"
ROBOT_DESCRIPTION = "/robot_description"

ARM_CONTROLLER = "arm_controller"
FOLLOW_JOINT_TRAJECTORY = f"/{ARM_CONTROLLER}/follow_joint_trajectory"
JOINT_TRAJECTORY = f"/{ARM_CONTROLLER}/joint_trajectory"
TRACKING_ERROR = f"/{ARM_CONTROLLER}/tracking_error"  # sensor_msgs/JointState, position = q_r - q

GRIPPER_CONTROLLER = "gripper_controller"
GRIPPER_COMMAND = f"/{GRIPPER_CONTROLLER}/gripper_cmd"

JAW_CONTACT_PREFIX = "/jaw_contact"  # /jaw_contact/<jaw>: geometry_msgs/WrenchStamped
CONTACT_MARKERS = "/contact_markers"  # visualization_msgs/MarkerArray

CUBE_POSE = "/cube_pose"  # geometry_msgs/PoseStamped in the world frame (TF frame "cube")

SIM_RESET = "/sim/reset"  # std_srvs/Trigger
PICK_STATE = "/pick/state"  # std_msgs/String
PICK_OUTCOME = "/pick/outcome"  # std_msgs/String (JSON), latched
