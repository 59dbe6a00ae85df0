"""Generated descriptions for the ROS ecosystem: URDF from the MJCF, the MoveIt configuration,
the collision matrix.
"""
