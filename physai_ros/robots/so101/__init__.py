"""The SO-101: its Feetech STS3215 protocol, LeRobot's motor bus, the control loop behind the
driver node, its configuration, the jaw force model; ``emulator`` stands in for the arm.
"""
