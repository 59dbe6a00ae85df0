"""The Franka Panda and FR3: franka_ros2's names, the Franka Hand's gripper semantics."""
