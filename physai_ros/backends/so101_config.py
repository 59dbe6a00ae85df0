"""config/so101_driver.yaml to the SO-101 driver's settings, without ROS.

The node declares one parameter per leaf of the YAML tree (dotted names, ``tolerances.goal``);
these functions turn the parameter values back into ``BusSettings`` and ``LoopSettings``, so the
node only declares and passes on, and the mapping can be read (and tested) in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from physai_ros.backends.so101_lerobot import BusSettings, default_calibration_path
from physai_ros.backends.so101_loop import LoopSettings, relax_torque
from physai_ros.core.jaw_estimate import JawModel
from physai_ros.core.joint_trajectory import Tolerances

NOT_PARAMETERS = ("frames",)  # jaw.frames is a table of TF frames, read from the file directly


def flatten_config(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """The YAML tree's leaves as ``{"dotted.name": value}`` (one ROS parameter each)."""
    out = {}
    for key, value in tree.items():
        if key in NOT_PARAMETERS:
            continue
        if isinstance(value, dict):
            out.update(flatten_config(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out


def bus_settings(
    p: Mapping[str, Any], cfg: Mapping[str, Any], limits: Mapping[str, Any]
) -> BusSettings:
    """``So101Bus`` settings from the parameters ``p``, the config tree ``cfg`` (which servo
    registers exist) and config/limits_so101.yaml's ``limits`` (joint limits [rad])."""
    cal = (
        Path(p["calibration_file"])
        if p["calibration_file"]
        else (default_calibration_path(p["robot_id"]))
    )
    return BusSettings(
        port=p["port"],
        calibration_file=cal,
        joint_min=np.asarray(limits["position_min"], dtype=float),
        joint_max=np.asarray(limits["position_max"], dtype=float),
        baudrate=int(p["baudrate"]),
        joint_offsets=tuple(p["joint_offsets"]),
        joint_directions=tuple(int(d) for d in p["joint_directions"]),
        servo={k: int(p[f"servo.{k}"]) for k in cfg["servo"]},
        gripper_protection={
            k: int(p[f"gripper_protection.{k}"]) for k in cfg["gripper_protection"]
        },
        read_retries=int(p["read_retries"]),
    )


def loop_settings(p: Mapping[str, Any]) -> LoopSettings:
    """``ServoLoop`` settings from the parameters ``p``; a negative tolerance = not checked."""

    def per_joint(value: float) -> np.ndarray:
        return np.full(5, np.inf if value < 0 else float(value))

    model = JawModel(
        p["jaw.min_error"],
        p["jaw.still_speed"],
        p["jaw.load_fraction"],
        p["jaw.min_load"],
        p["jaw.confirm_time"],
        p["jaw.moment_arm"],
    )
    return LoopSettings(
        tolerances=Tolerances(
            per_joint(p["tolerances.path"]),
            per_joint(p["tolerances.goal"]),
            per_joint(p["tolerances.goal_velocity"]),
            float(p["tolerances.goal_time"]),
        ),
        start_tolerance=p["tolerances.start"],
        gripper_goal_tolerance=p["gripper.goal_tolerance"],
        gripper_stall_speed=p["gripper.stall_speed"],
        gripper_stall_time=p["gripper.stall_time"],
        gripper_timeout=p["gripper.timeout"],
        allow_stalling=p["gripper.allow_stalling"],
        jaw=model,
        fault_policy=p["fault_policy"],
        stale_timeout=p["stale_timeout"],
        reconnect_period=p["reconnect_period"],
        watchdog_timeout=p["watchdog_timeout"],
        health_every=int(p["health_every"]),
        relax=p["grasp.relax"],
        relax_delay=p["grasp.relax_delay"],
        relax_torque=relax_torque(
            p["grasp.object_mass"],
            p["grasp.mu"],
            p["grasp.lift_accel"],
            p["grasp.margin"],
            p["jaw.moment_arm"],
            p["grasp.min_torque"],
        ),
    )
