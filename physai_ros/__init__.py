"""physai_ros: SO-101 and Panda control with ROS 2 interfaces, backed by MuJoCo physics.

The package is split so that the physics can be tested without ROS:
``core`` (numpy/scipy/mujoco only), ``models`` (embedded MJCF), ``backends`` (the seam to a
robot), ``nodes`` (thin rclpy shells) and ``experiments`` (the lessons' tables, benchmarks).
"""

__version__ = "0.1.0"
