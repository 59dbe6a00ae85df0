"""What a streaming client (the policy runner, teleoperation) shares: hearing from the arm
controller it streams to whether it stopped following and holds, where the arm is, and its
own status on ``/diagnostics``.

The controller reports its stream on ``/diagnostics`` as ``<stream topic>`` (``following``,
``stopping``, ``held: <why>``) on change and once a second. A client that keeps streaming
after a hold is refused (the controller does not follow a stream that resumes far from its
held pose), so it must begin again from where the arm holds. ``HoldWatch`` says when: once per
new 'held' report, and again if the arm still holds a second after the last restart.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.node import Node
from sensor_msgs.msg import JointState

from physai_ros import interfaces
from physai_ros.datasets.features import MOTOR_NAMES
from physai_ros.errors import InvalidInput

AGAIN_AFTER = 1.0  # [s] a hold still reported this long after a restart restarts again


class HoldWatch:
    """Watches ``/diagnostics`` for the controller's reports on ``stream_topic``.

    streaming: whether the client streams now (a hold while it does not is no reason to
    restart). ``take()`` gives the reason to begin again, once, and counts it in ``restarts``.
    """

    def __init__(self, node: Node, stream_topic: str, streaming: Callable[[], bool]) -> None:
        self.name = stream_topic.strip("/")  # the controller's status name
        self.streaming = streaming
        self.held = ""  # the latest 'held' report, while the arm holds
        self.pending: str | None = None
        self.restarts = 0
        self.restarted_at = 0.0  # [s, monotonic]
        node.create_subscription(DiagnosticArray, interfaces.DIAGNOSTICS, self._on_status, 10)

    def _on_status(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            if status.name != self.name:
                continue
            held = status.message if status.message.startswith("held") else ""
            again = time.monotonic() - self.restarted_at > AGAIN_AFTER
            if held and self.streaming() and (held != self.held or again):
                self.pending = held
            self.held = held

    def take(self) -> str | None:
        """The controller's 'held' report to begin again after, once; None if there is none."""
        why, self.pending = self.pending, None
        if why is not None:
            self.restarts += 1
            self.restarted_at = time.monotonic()
        return why


def measured_pose(msg: JointState) -> np.ndarray:
    """The six joints [rad] (arm, then jaw) from a joint state message: where a blend-in
    starts. ``InvalidInput`` when one is missing."""
    position = dict(zip(msg.name, msg.position, strict=False))
    missing = [m for m in MOTOR_NAMES if m not in position]
    if missing:
        raise InvalidInput(f"joint states lack {missing}")
    return np.array([position[m] for m in MOTOR_NAMES], dtype=float)


def status_message(
    node: Node, name: str, level: bytes, message: str, hardware: str, values: dict[str, float]
) -> DiagnosticArray:
    """One ``/diagnostics`` status of a streaming client, stamped now."""
    status = DiagnosticStatus(
        level=level,
        name=name,
        message=message,
        hardware_id=hardware,
        values=[KeyValue(key=k, value=f"{v:g}") for k, v in values.items()],
    )
    msg = DiagnosticArray(status=[status])
    msg.header.stamp = node.get_clock().now().to_msg()
    return msg
