"""Frames: rigid transforms, frame trees, the robot's TF frames, cameras and joint names.
Pure: no rclpy.
"""
