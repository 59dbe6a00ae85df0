"""Each robot model's joint names, in one place (the models, the core, the robots' drivers,
the experiments and the tests all read them from here).

These are the MJCF names of ``so101.xml`` and ``panda.xml`` (and of MuJoCo Menagerie's
originals). franka_ros2's wire names put a prefix before the Panda's
(``physai_ros.robots.franka.names``).
"""

from __future__ import annotations

SO101_JOINTS = (
    "shoulder_pan",
    "shoulder_lift",
    "elbow_flex",
    "wrist_flex",
    "wrist_roll",
    "gripper",
)
"""The SO-101's joints, base to jaw (servo ids 1..6 in this order)."""
SO101_ARM_JOINTS = SO101_JOINTS[:5]
"""The SO-101's arm: every joint but the jaw."""

PANDA_ARM_JOINTS = tuple(f"joint{i}" for i in range(1, 8))
"""The Panda's seven arm joints, base to flange."""
PANDA_FINGER_JOINTS = ("finger_joint1", "finger_joint2")
"""The Franka Hand's fingers (``finger_joint2`` mimics ``finger_joint1``)."""
PANDA_JOINTS = (*PANDA_ARM_JOINTS, *PANDA_FINGER_JOINTS)
"""The Panda with the Franka Hand: arm, then fingers."""
