"""The SO-101 driver's parameters to its settings, without ROS.

The node declares the parameters of config/schema/so101_driver.yaml (each one's unit, range
and whether it may change at run time; defaults to copy: config/so101_driver.yaml); these
functions turn the values into ``BusSettings`` and ``LoopSettings``, so the node only declares
and passes on, and the mapping can be read (and tested) in one place.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from physai_ros.core.motion.limits import JointLimits, load_limits
from physai_ros.errors import InvalidInput
from physai_ros.robots.so101.bus import ARM, JOINTS, BusSettings, default_calibration_path
from physai_ros.robots.so101.emulator.servo import STEP_RAD
from physai_ros.robots.so101.jaw_estimate import JawModel, least_squeeze_torque
from physai_ros.robots.so101.loop import LoopSettings


def bus_settings(p: Mapping[str, Any], limits: JointLimits) -> BusSettings:
    """``So101Bus`` settings from the parameters ``p`` and the robot's limits."""
    cal = (
        Path(p["calibration_file"])
        if p["calibration_file"]
        else default_calibration_path(p["robot_id"])
    )
    directions = tuple(int(d) for d in p["joint_directions"])
    if len(directions) != 6 or any(d not in (-1, 1) for d in directions):
        raise InvalidInput(f"joint_directions must be six of +1/-1, got {list(directions)}")
    if len(p["joint_offsets"]) != 6:
        raise InvalidInput(f"joint_offsets must be six angles [rad], got {p['joint_offsets']}")
    # velocity limit [rad/s] -> each servo's Goal_Velocity [step/s], so that the servo's own
    # profile is no faster than the set either; unlimited = 0, the servo's full speed
    velocity = tuple(int(v) for v in goal_velocity(limits))
    return BusSettings(
        port=p["port"],
        calibration_file=cal,
        joint_min=limits.position_min,
        joint_max=limits.position_max,
        baudrate=int(p["baudrate"]),
        joint_offsets=tuple(float(v) for v in p["joint_offsets"]),
        joint_directions=directions,
        setup={
            "Operating_Mode": 0,
            "P_Coefficient": p["servo.p_coefficient"],
            "I_Coefficient": p["servo.i_coefficient"],
            "D_Coefficient": p["servo.d_coefficient"],
            "Return_Delay_Time": p["servo.return_delay_time"],
        },
        gripper_setup={
            "Max_Torque_Limit": p["gripper_protection.max_torque_limit"],
            "Protection_Current": p["gripper_protection.protection_current"],
            "Overload_Torque": p["gripper_protection.overload_torque"],
        },
        acceleration=acceleration_register(limits),
        velocity=velocity,
        read_retries=int(p["read_retries"]),
        stall_torque=float(p["stall_torque"]),
        rated_voltage=float(p["rated_voltage"]),
    )


def acceleration_register(limits: JointLimits) -> int:
    """The servos' Acceleration register [100 step/s²] for the limit set's slowest
    acceleration [rad/s²]; an unlimited set gets LeRobot's 254, never 0: on the STS3215, 0
    means no ramp at all (the set-point jumps to the goal, a full-speed step)."""
    counts = float(np.min(limits.acceleration)) / (100.0 * STEP_RAD)
    return int(min(254, max(1, math.floor(counts)))) if math.isfinite(counts) else 254


def goal_velocity(limits: JointLimits) -> np.ndarray:
    """Each servo's Goal_Velocity [step/s] for the limit set's velocities (all six joints, or
    the arm's five: the gripper then gets the slowest of them): whole steps, rounded down, at
    least 1 (0 is the servo's full speed); 0 where the set leaves a joint unlimited."""
    lim = limits.select(JOINTS) if set(JOINTS) <= set(limits.joint_names) else limits
    v = lim.velocity if len(lim.velocity) == 6 else np.append(lim.velocity, lim.velocity.min())
    with np.errstate(invalid="ignore", over="ignore"):
        steps = np.where(np.isfinite(v), np.clip(np.floor(v / STEP_RAD), 1, 32767), 0)
    return steps.astype(int)


def relax_torque(p: Mapping[str, Any]) -> float:
    """Gripper torque once a grasp formed [N·m], or 0 when the object's mass or friction is
    unknown (then the goal's torque stays: a guess would let a heavier object slip)."""
    if p["grasp.object_mass"] <= 0.0 or p["grasp.mu"] <= 0.0:
        return 0.0
    torque = least_squeeze_torque(
        p["grasp.object_mass"],
        p["grasp.mu"],
        p["grasp.lift_accel"],
        p["grasp.margin"],
        p["jaw.moment_arm"],
        p["jaw.friction_torque"],
    )
    return max(torque, p["grasp.min_torque"])


def loop_settings(p: Mapping[str, Any], limits: JointLimits | None = None) -> LoopSettings:
    """``ServoLoop`` settings from the parameters ``p`` and the robot's limits (all six
    joints; default: the set ``limits_set`` names): the goals sent are bounded by its
    velocities."""
    limits = limits or load_limits("so101", p["limits_set"] or None)
    model = JawModel(
        p["jaw.min_error"],
        p["jaw.still_speed"],
        p["jaw.load_fraction"],
        p["jaw.min_load"],
        p["jaw.confirm_time"],
        p["jaw.moment_arm"],
        p["jaw.friction_torque"],
    )
    return LoopSettings(
        limit_margin=p["limit_margin"],
        stale_timeout=p["stale_timeout"],
        reconnect_period=p["reconnect_period"],
        health_every=int(p["health_every"]),
        write_calibration=bool(p["write_calibration"]),
        jaw=model,
        relax_torque=relax_torque(p),
        relax_delay=p["grasp.relax_delay"],
        max_velocity=tuple(float(v) for v in limits.select(JOINTS).velocity),
    )


def arm_limits(p: Mapping[str, Any]) -> JointLimits:
    """The arm joints' limits (config/limits_so101.yaml, set ``limits_set``)."""
    return load_limits("so101", p["limits_set"] or None).select(ARM)
