"""Spinning a test's own ROS nodes while the test waits, as a user's tool would, and waiting
for what they receive."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile

LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def spin_in_background(node, context):
    """Spin ``node`` on a daemon thread until ``context`` shuts down, as a user's tool would
    while the test waits; returns the thread (join it after the shutdown)."""
    import threading

    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)

    def spin() -> None:
        while rclpy.ok(context=context):
            try:
                executor.spin_once(timeout_sec=0.05)
            except Exception:  # shutting down
                return

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    return thread


class Spinning:
    """A test-side node spun on a thread of its own until ``close`` (which destroys it)."""

    def __init__(self, context, node) -> None:
        self.node = node
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(node)
        self.running = True
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self) -> None:
        while self.running:
            self.executor.spin_once(timeout_sec=0.02)

    def close(self) -> None:
        self.running = False
        self.thread.join(2.0)
        self.executor.remove_node(self.node)
        self.node.destroy_node()


def wait(predicate: Callable[[], object], timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return bool(predicate())
