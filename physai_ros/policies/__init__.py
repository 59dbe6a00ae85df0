"""Policies that drive the SO-101 through the streaming path: a trained LeRobot policy loaded
from its pretrained folder, or a recorded episode's actions replayed.

Both speak LeRobot's units (``datasets.features``): an observation is a dict of
``observation.state`` and ``observation.images.<camera>`` arrays, an action one vector of the
six motors. Pure Python: the ``policy_runner`` node feeds them from ROS topics.
"""
