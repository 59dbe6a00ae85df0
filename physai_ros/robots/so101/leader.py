"""A leader SO-101 read through LeRobot's own leader class, ``SOLeader``.

Its readings are LeRobot's action, as ``lerobot-teleoperate`` and ``lerobot-record`` take it:
the five arm joints in degrees and the jaw in percent of its calibrated range
(``physai_ros.datasets.features``' convention, which the policy runner's targets also start
from).

What is kept from ``SOLeader`` and what is not, and why: it builds the bus (ids 1-6, STS3215,
the calibration file LeRobot's ``lerobot-calibrate --teleop.type=so101_leader`` writes) and
``get_action`` reads it. Its ``connect()`` is not called: it calls ``configure()``, which
writes ``Operating_Mode`` -- an EEPROM register -- on every connect, and may call
``calibrate()``, which prompts with ``input()``. Here the bus only connects (LeRobot's
handshake: pings and firmware reads), the servos' calibration is compared with the file, and
nothing is ever written; a leader whose calibration differs is refused, naming the command
that calibrates it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np

from physai_ros.errors import InvalidInput, PhysaiError
from physai_ros.models.joints import SO101_JOINTS
from physai_ros.robots.so101.bus import (
    LEROBOT_MISSING,
    lerobot_calibration_file,
    require_lerobot,
)

T = TypeVar("T")
CALIBRATION_TRIES = 3
"""Reads of the leader's calibration registers at open: LeRobot reads each once, and one reply
lost on a noisy bus (or a pty starved on a loaded machine) would end the teleop at start."""
CALIBRATE = "lerobot-calibrate --teleop.type=so101_leader --teleop.port={port} --teleop.id={id}"


def leader_classes():
    """LeRobot's ``SOLeader`` and its configuration class (0.4: ``so_leader``; 0.3:
    ``so101_leader``)."""
    require_lerobot()
    for module, leader, config in (
        ("lerobot.teleoperators.so_leader", "SOLeader", "SOLeaderTeleopConfig"),
        ("lerobot.teleoperators.so101_leader", "SO101Leader", "SO101LeaderConfig"),
    ):
        try:
            found = importlib.import_module(module)
        except ImportError:
            continue
        return getattr(found, leader), getattr(found, config)
    raise PhysaiError(f"{LEROBOT_MISSING} (no SO-101 leader class in this LeRobot)")


def default_leader_calibration(leader_id: str) -> Path:
    """Where LeRobot keeps a leader's ``<leader_id>.json`` (0.4 name, then 0.3's)."""
    return lerobot_calibration_file("teleoperators", ("so_leader", "so101_leader"), leader_id)


def read_again(read: Callable[[], T], tries: int) -> T:
    """``read()``, tried again when its reply is lost (LeRobot raises ConnectionError,
    RuntimeError or OSError), up to ``tries`` times in all; the last failure is raised. Only for
    reads: a write tried twice could act twice."""
    for _ in range(tries - 1):
        try:
            return read()
        except (ConnectionError, RuntimeError, OSError):
            continue
    return read()


class LeaderArm:
    """A leader SO-101 on ``port`` with LeRobot's calibration file ``calibration_file``."""

    def __init__(self, port: str, calibration_file: Path) -> None:
        self.port, self.calibration_file = port, Path(calibration_file)
        self.leader = None

    def open(self) -> None:
        """Connect and check the calibration. Writes nothing to the servos."""
        if not self.calibration_file.is_file():
            raise InvalidInput(
                f"leader calibration file {self.calibration_file} not found: calibrate the "
                f"leader with LeRobot first ({self._calibrate_command()})"
            )
        leader_class, config_class = leader_classes()
        config = config_class(
            port=self.port,
            id=self.calibration_file.stem,
            calibration_dir=self.calibration_file.parent,
            use_degrees=True,
        )
        leader = leader_class(config)
        try:
            leader.bus.connect()  # not leader.connect(): see the module's docstring
        except (ConnectionError, RuntimeError, OSError) as exc:
            raise PhysaiError(f"no leader SO-101 on {self.port}: {exc}") from exc
        try:
            calibrated = read_again(lambda: leader.bus.is_calibrated, CALIBRATION_TRIES)
        except (ConnectionError, RuntimeError, OSError) as exc:
            leader.bus.disconnect(disable_torque=False)
            raise PhysaiError(
                f"reading the leader's calibration on {self.port} ({CALIBRATION_TRIES} tries): "
                f"{exc}"
            ) from exc
        if not calibrated:
            leader.bus.disconnect(disable_torque=False)
            raise InvalidInput(
                f"the leader on {self.port} holds another calibration than "
                f"{self.calibration_file}: calibrate it ({self._calibrate_command()})"
            )
        self.leader = leader

    def _calibrate_command(self) -> str:
        return CALIBRATE.format(port=self.port, id=self.calibration_file.stem)

    def read(self, tries: int = 2) -> np.ndarray:
        """The leader's pose as LeRobot's action: five arm joints [deg], the jaw [%]. A read
        whose reply is lost (a noisy bus) is tried again, up to ``tries`` reads in all."""
        if self.leader is None:
            raise PhysaiError("the leader is not open")
        try:
            action = read_again(self.leader.get_action, tries)
        except (ConnectionError, RuntimeError, OSError) as exc:
            raise PhysaiError(f"reading the leader on {self.port}: {exc}") from exc
        return np.array([action[f"{joint}.pos"] for joint in SO101_JOINTS], dtype=float)

    def close(self) -> None:
        """Close the port; the leader's torque is left as it is (off)."""
        if self.leader is not None and self.leader.bus.is_connected:
            self.leader.bus.disconnect(disable_torque=False)
        self.leader = None
