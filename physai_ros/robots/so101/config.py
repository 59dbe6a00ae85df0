"""The SO-101 driver's parameters to its settings, without ROS.

The node declares the parameters of config/so101_driver.yaml (``PARAMETERS`` says each one's
unit, range and whether it may change at run time); these functions turn the values into
``BusSettings`` and ``LoopSettings``, so the node only declares and passes on, and the mapping
can be read (and tested) in one place.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from physai_ros.core.motion.limits import JointLimits, load_limits
from physai_ros.errors import InvalidInput
from physai_ros.robots.so101.bus import ARM, BusSettings, default_calibration_path
from physai_ros.robots.so101.emulator.servo import STEP_RAD
from physai_ros.robots.so101.jaw_estimate import JawModel, least_squeeze_torque
from physai_ros.robots.so101.loop import LoopSettings

PARAMETERS = {  # name: (description with units, (min, max) or None, read_only)
    "port": ("serial port of the servo bus adapter", None, True),
    "robot_id": ("LeRobot robot id: names the calibration file", None, True),
    "calibration_file": ("LeRobot calibration JSON; '' = LeRobot's path for robot_id", None, True),
    "write_calibration": ("write the file's calibration to the servos' EPROM", None, True),
    "baudrate": ("bus rate [bit/s]", (9600, 1_000_000), True),
    "loop_rate": ("bus cycle rate [Hz]", (1.0, 500.0), True),
    "health_every": ("read temperature/voltage/error flags every n-th cycle", (1, 1000), True),
    "diagnostics_rate": ("/diagnostics rate [Hz]", (0.1, 100.0), True),
    "read_retries": ("extra tries of a failed sync read", (0, 5), True),
    "autostart": ("configure and activate at start (launch files: true)", None, True),
    "on_exit": ("at shutdown: hold (torque stays on) | release (torque off)", None, False),
    "limits_set": ("limit set of config/limits_so101.yaml", None, True),
    "limit_margin": ("a pose this far beyond the limits still arms [rad]", (0.0, 0.2), True),
    "stale_timeout": ("no good read this long = servos silent [s]", (0.01, 10.0), True),
    "reconnect_period": ("retry a lost port this often [s]", (0.05, 60.0), True),
    "joint_offsets": ("model angle at LeRobot's 0 deg, per joint [rad]", None, True),
    "joint_directions": ("+1 or -1 per joint: LeRobot's sign to the model's", None, True),
    "servo.p_coefficient": ("position loop P (EPROM)", (0, 254), True),
    "servo.i_coefficient": ("position loop I (EPROM)", (0, 254), True),
    "servo.d_coefficient": ("position loop D (EPROM)", (0, 254), True),
    "servo.return_delay_time": ("reply delay [2 us] (EPROM)", (0, 254), True),
    "gripper_protection.max_torque_limit": ("gripper torque cap [0.1 %] (EPROM)", (1, 1000), True),
    "gripper_protection.protection_current": ("gripper current cap [6.5 mA]", (1, 2000), True),
    "gripper_protection.overload_torque": ("gripper overload threshold [%]", (1, 100), True),
    "jaw.min_error": ("contact: goal further closed than the jaw by [rad]", (0.001, 1.0), True),
    "jaw.still_speed": ("contact: jaw slower than [rad/s]", (0.001, 10.0), True),
    "jaw.load_fraction": ("contact: load at least this share of the limit", (0.01, 1.0), True),
    "jaw.min_load": ("contact: and at least [N m]", (0.0, 3.0), True),
    "jaw.confirm_time": ("contact: for this long [s]", (0.0, 5.0), True),
    "jaw.moment_arm": (
        "jaw contact lever [m]: N = (torque - friction) / lever",
        (0.001, 1.0),
        True,
    ),
    "jaw.friction_torque": (
        "gripper torque its gear friction takes at a stall [N m]",
        (0.0, 1.0),
        True,
    ),
    "grasp.object_mass": ("object mass [kg]; 0 = unknown: no squeeze relief", (0.0, 10.0), False),
    "grasp.mu": ("jaw-object friction; 0 = unknown: no squeeze relief", (0.0, 5.0), False),
    "grasp.lift_accel": ("peak upward acceleration when lifting [m/s^2]", (0.0, 50.0), False),
    "grasp.margin": ("cone ratio kept by the relieved squeeze", (1.0, 10.0), False),
    "grasp.min_torque": ("relieved squeeze never below [N m]", (0.0, 3.0), False),
    "grasp.relax_delay": ("relief this long after contact [s]", (0.0, 10.0), False),
}
CONTROLLERS = {  # the controllers' own parameters: physai_ros.nodes._controllers
    "arm_controller.action_monitor_rate": ("action feedback rate [Hz]", (0.1, 1000.0), True),
    "arm_controller.state_publish_rate": ("controller_state rate [Hz]", (0.1, 1000.0), True),
    "arm_controller.check_limits": ("check goals against limits_set", None, True),
    "arm_controller.constraints.trajectory": ("path tolerance, all [rad]", (0.0, 10.0), True),
    "arm_controller.constraints.goal": ("goal tolerance, all [rad]", (0.0, 10.0), True),
}


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
    # acceleration limit [rad/s²] -> the servos' Acceleration register [100 step/s²]
    counts = float(np.min(limits.acceleration)) / (100.0 * STEP_RAD)
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
        acceleration=int(min(254, max(1, math.floor(counts)))) if math.isfinite(counts) else 0,
        read_retries=int(p["read_retries"]),
    )


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


def loop_settings(p: Mapping[str, Any]) -> LoopSettings:
    """``ServoLoop`` settings from the parameters ``p``."""
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
    )


def arm_limits(p: Mapping[str, Any]) -> JointLimits:
    """The arm joints' limits (config/limits_so101.yaml, set ``limits_set``)."""
    return load_limits("so101", p["limits_set"] or None).select(ARM)
