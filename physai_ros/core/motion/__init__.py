"""Motion: joint limits, time scalings (quintic, trapezoid), ruckig shapes, trajectory
goal timing and tracking, Cartesian moves and inverse kinematics. Pure: no rclpy.
"""
