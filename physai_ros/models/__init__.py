"""The robots' embedded MuJoCo models (MJCF beside this file) and how they are loaded.

``load_robot_spec`` gives a robot as an editable ``MjSpec`` (embedded primitive-shape model, or a
Menagerie checkout via ``model_path``); ``place_robot`` puts it at its base pose. The pick scene
built around it is ``physai_ros.sim.scene``; the URDF and MoveIt configuration generated from it
are ``physai_ros.export``.
"""

from physai_ros.models.loader import ROBOTS, load_robot_model, load_robot_spec, robot_model_file
from physai_ros.models.placement import place_robot

__all__ = ["ROBOTS", "load_robot_model", "load_robot_spec", "place_robot", "robot_model_file"]
