"""Embedded MuJoCo models of the SO-101 and the Panda, the pick scene builder, and URDF export.

``load_robot_spec`` gives a robot as an editable ``MjSpec`` (embedded primitive-shape model, or a
Menagerie checkout via ``model_path``); ``build_scene`` adds the table and the cube;
``physai_ros.models.urdf`` turns the compiled model into the URDF that TF/RViz use, and
``physai_ros.models.moveit_config`` writes the MoveIt configuration (config/moveit/<robot>/).
"""

from physai_ros.models.loader import ROBOTS, load_robot_model, load_robot_spec, robot_model_file
from physai_ros.models.scene import (
    build_scene,
    build_scene_spec,
    load_scene_config,
    place_robot,
    scene_preset,
    scene_soft_object,
)

__all__ = [
    "ROBOTS",
    "build_scene",
    "build_scene_spec",
    "load_robot_model",
    "load_robot_spec",
    "load_scene_config",
    "place_robot",
    "robot_model_file",
    "scene_preset",
    "scene_soft_object",
]
