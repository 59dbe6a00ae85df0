"""Spinning a bench's (or a test's) own ROS client nodes while it waits, as a user's tool would,
and waiting for what they receive."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

# Every exception a client's spinner died of (callbacks included: an assertion in a subscription
# callback ends up here). The tests' ``spinners_alive`` fixture (test/conftest.py) fails the test
# during which one was added; a waiting loop raises it at once (``Spinner.check``).
SPIN_ERRORS: list[str] = []


class Spinner(threading.Thread):
    """Spins ``node`` on a daemon thread until ``context`` shuts down or ``stop`` is called. An
    exception while the context is still up (a callback's, an assertion's) is no shutdown: it is
    kept in ``error`` and SPIN_ERRORS, and the thread ends, so that ``check`` (and a test's
    teardown) report it instead of a later, silent lack of samples."""

    def __init__(self, node, context, period: float = 0.05) -> None:
        from rclpy.executors import SingleThreadedExecutor

        super().__init__(daemon=True, name=f"spin {node.get_name()}")
        self.node, self.context, self.period = node, context, period
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(node)
        self.running = True
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        import traceback

        import rclpy

        while self.running and rclpy.ok(context=self.context):
            try:
                self.executor.spin_once(timeout_sec=self.period)
            except Exception as error:
                if not rclpy.ok(context=self.context) or not self.running:
                    return  # shutting down
                self.error = error
                SPIN_ERRORS.append(
                    f"{self.name}: " + "".join(traceback.format_exception(error)).strip()
                )
                return

    def check(self) -> None:
        """Raise if the spinner died of an exception: nothing arrives any more."""
        if self.error is not None:
            raise AssertionError(
                f"the ROS client ({self.name}) stopped spinning: {self.error!r}"
            ) from self.error

    def stop(self, timeout: float = 2.0) -> None:
        self.running = False
        self.join(timeout)


class Spinning:
    """A client node spun on a thread of its own until ``close`` (which destroys it)."""

    def __init__(self, context, node) -> None:
        self.node = node
        self.spinner = Spinner(node, context, period=0.02)
        self.executor = self.spinner.executor

    def close(self) -> None:
        self.spinner.stop()
        self.executor.remove_node(self.node)
        self.node.destroy_node()


def wait(predicate: Callable[[], object], timeout: float) -> bool:
    """Poll ``predicate`` every 10 ms until it is true or ``timeout`` [s wall] passes; its
    last value."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return bool(predicate())
