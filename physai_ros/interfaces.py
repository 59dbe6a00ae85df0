"""The ROS names every node agrees on (one place, so the sim bridge, the real drivers, the pick
and the TF publisher cannot drift apart).

Names are relative, so a node started in a namespace (``PushRosNamespace('left')``, or
``--ros-args -r __ns:=/left``) serves and finds ``/left/joint_states``,
``/left/arm_controller/follow_joint_trajectory`` …, and two robots share one graph. They follow
ros2_control's controller naming (``arm_controller/…``, ``gripper_controller/…``), so a real
Panda under franka_ros2 or a user's own tools see the same graph. ``/tf``, ``/tf_static``,
``/clock`` and ``/diagnostics`` stay absolute, as everywhere in ROS: robots share one frame tree
(their frames told apart by a ``frame_prefix``), one clock and one diagnostics aggregator.
"""

from __future__ import annotations

JOINT_STATES = "joint_states"
CLOCK = "/clock"
TF = "/tf"
TF_STATIC = "/tf_static"
DIAGNOSTICS = "/diagnostics"
ROBOT_DESCRIPTION = "robot_description"

ARM_CONTROLLER = "arm_controller"
FOLLOW_JOINT_TRAJECTORY = f"{ARM_CONTROLLER}/follow_joint_trajectory"
JOINT_TRAJECTORY = f"{ARM_CONTROLLER}/joint_trajectory"
CONTROLLER_STATE = f"{ARM_CONTROLLER}/controller_state"  # JointTrajectoryControllerState
# sensor_msgs/JointState: position targets streamed at 10–60 Hz (a leader arm, a policy), not a
# ros2_controllers interface: followed inside the limits, see docs/streaming.md
STREAM = f"{ARM_CONTROLLER}/stream"
TRACKING_ERROR = f"{ARM_CONTROLLER}/tracking_error"  # sensor_msgs/JointState, position = q_r - q

GRIPPER_CONTROLLER = "gripper_controller"
GRIPPER_COMMAND = f"{GRIPPER_CONTROLLER}/gripper_cmd"
# JointTrajectoryControllerState of the jaw (reference = the commanded jaw position): not one of
# ros2_controllers' gripper interfaces, published so a recorder sees every joint's command
GRIPPER_STATE = f"{GRIPPER_CONTROLLER}/controller_state"

JAW_CONTACT_PREFIX = "jaw_contact"  # jaw_contact/<jaw>: geometry_msgs/WrenchStamped
CONTACT_MARKERS = "contact_markers"  # visualization_msgs/MarkerArray

CUBE_POSE = "cube_pose"  # geometry_msgs/PoseStamped in the world frame (TF frame "cube")
SOFT_OBJECT_POSE = "soft_object_pose"  # geometry_msgs/PoseStamped, world: centre of mass
SOFT_OBJECT_STRAIN = "soft_object_strain"  # std_msgs/Float64: largest edge strain [m/m]

SIM_RESET = "sim/reset"  # std_srvs/Trigger
PICK_STATE = "pick/state"  # std_msgs/String
PICK_OUTCOME = "pick/outcome"  # physai_ros_interfaces/msg/PickOutcome, latched
PICK_ACTION = "pick"  # physai_ros_interfaces/action/Pick (the pick node serves it)
HAND_PICK_STATE = "hand_pick/state"  # std_msgs/String: the three-finger pick's state
HAND_PICK_OUTCOME = "hand_pick/outcome"  # physai_ros_interfaces/msg/PickOutcome, latched
PLAN_GRASP = "plan_grasp"  # physai_ros_interfaces/srv/PlanGrasp (grasp_planner)
GRASP_MARKERS = "grasp_planner/markers"  # visualization_msgs/MarkerArray, latched


def under(controller: str, interface: str) -> str:
    """``interface`` (a constant above, named under its default controller) under another
    controller name: ``under("panda_arm_controller", FOLLOW_JOINT_TRAJECTORY)`` is franka_ros2's
    ``panda_arm_controller/follow_joint_trajectory``."""
    return f"{controller}/{interface.split('/', 1)[1]}"
