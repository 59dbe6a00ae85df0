"""The package's exception tree: every error a user can cause derives from ``PhysaiError``.

Messages name the offending item and, where there is a closed set, the valid choices, so a
log line is enough to fix the input.
"""

from __future__ import annotations


class PhysaiError(Exception):
    """Base class of all errors raised deliberately by physai_ros."""


class InvalidInput(PhysaiError, ValueError):
    """An argument, message or file content is malformed (NaN, wrong shape, unknown name)."""


class LimitViolation(InvalidInput):
    """A command or trajectory would leave the robot's position, velocity, acceleration or jerk
    limits."""


class ModelError(PhysaiError):
    """A robot model file is missing, does not compile, or lacks a required element."""
