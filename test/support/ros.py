"""Spinning a test's own ROS node in the background while the test waits (the spinner itself is
the product's, ``physai_ros.experiments.trials.spinning``, shared with the trial benches)."""

from __future__ import annotations

from physai_ros.experiments.trials.spinning import Spinner


def spin_in_background(node, context) -> Spinner:
    """Spin ``node`` on a daemon thread until ``context`` shuts down, as a user's tool would
    while the test waits; returns the Spinner (join it after the shutdown, ``check`` it while
    waiting)."""
    return Spinner(node, context)
