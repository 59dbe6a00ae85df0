"""Spinning a test's own ROS nodes while the test waits, as a user's tool would."""

from __future__ import annotations


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
