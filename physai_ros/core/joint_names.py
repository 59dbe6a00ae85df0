"""Joint names in a goal or a message, checked one way everywhere.

Trajectories, joint states and limits all arrive as (names, values) pairs; the sim bridge, the
SO-101 driver, the trajectory node and the TF publisher must reject the same mistakes with the
same words: no names, a name twice, a name the robot does not have, a joint left out where
all are required.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from physai_ros.errors import InvalidInput


def check_joint_names(joint_names: Sequence[str]) -> tuple[str, ...]:
    """Non-empty, no duplicates; returns them as a tuple."""
    names = tuple(joint_names)
    if not names:
        raise InvalidInput("empty goal: no joint names given")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise InvalidInput(f"duplicated joint names {dupes} in {list(names)}")
    return names


def joint_indices(
    joint_names: Sequence[str], valid: Sequence[str], *, require_all: bool = False
) -> np.ndarray:
    """Index in ``valid`` of each of ``joint_names`` (checked as ``check_joint_names`` does);
    every name must be in ``valid`` and, with ``require_all``, every valid joint named."""
    names, valid = check_joint_names(joint_names), list(valid)
    unknown = [n for n in names if n not in valid]
    if unknown:
        raise InvalidInput(f"unknown joint(s) {unknown}; valid joints: {valid}")
    if require_all:
        missing = [n for n in valid if n not in names]
        if missing:
            raise InvalidInput(f"missing joint(s) {missing}: the goal must name all of {valid}")
    return np.array([valid.index(n) for n in names], dtype=int)
