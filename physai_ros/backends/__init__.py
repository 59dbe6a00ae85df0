"""The seam between control logic and a robot (MuJoCo, LeRobot SO-101, ros2_control)."""
