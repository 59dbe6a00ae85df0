"""Everything the package knows about one robot, a folder each: ``so101`` (Feetech bus,
control loop, LeRobot driver, jaw model and the bus emulator) and ``franka`` (franka_ros2 names,
the Franka Hand).
"""
