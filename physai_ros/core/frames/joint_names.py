"""Joint names in a goal or a message, checked one way everywhere.

Trajectories, joint states and limits all arrive as (names, values) pairs; the sim bridge, the
SO-101 driver, the trajectory node and the TF publisher must reject the same mistakes with the
same words: no names, a name twice, a name the robot does not have, a joint left out where
all are required. ``JointPrefix`` maps the names on the wire (franka_ros2's ``panda_joint1``) to
the model's (``joint1``) and back.
"""

from __future__ import annotations

import re
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


PREFIX_CHARS = re.compile(r"[A-Za-z0-9_/]*")
MISSING_PREFIX = " (missing the prefix "


class JointPrefix:
    """Joint names on the wire are ``prefix`` + the model's names (franka_ros2 says
    ``panda_joint1`` for the model's ``joint1``): one mapping, applied at the ROS boundary, so
    that controllers, limits and models keep the model's names.

    ``to_model`` turns wire names into model names; a name that is not the prefix plus a model
    name is passed on unchanged, so the controller rejects it as unknown in its own words. A
    bare model name (the prefix left out) would otherwise be accepted: it becomes
    ``"joint1 (missing the prefix 'panda_')"``, unknown too, and says why. ``text`` puts the
    wire names into a message that names model joints (a rejection, a failed goal).
    """

    def __init__(self, prefix: str, model_names: Sequence[str]) -> None:
        if not isinstance(prefix, str) or not PREFIX_CHARS.fullmatch(prefix):
            raise InvalidInput(
                f"joint prefix {prefix!r} may hold only letters, digits, '_' and '/'"
            )
        self.prefix = prefix
        self.model_names = check_joint_names(model_names)
        self._model = {prefix + n: n for n in self.model_names}
        self._wire = {n: prefix + n for n in self.model_names}
        names = "|".join(re.escape(n) for n in sorted(self.model_names, key=len, reverse=True))
        # a model name standing alone (not part of a longer name, not a marked bare name)
        self._pattern = re.compile(rf"(?<![\w/])({names})(?![\w/]|{re.escape(MISSING_PREFIX)})")

    def to_wire(self, names: Sequence[str]) -> list[str]:
        """Model names → names on the wire (unknown names unchanged)."""
        if not self.prefix:
            return list(names)
        return [self._wire.get(n, n) for n in names]

    def to_model(self, names: Sequence[str]) -> list[str]:
        """Names on the wire → model names (see the class docstring for the unknown ones)."""
        if not self.prefix:
            return list(names)
        return [self._model.get(n) or self._unknown(n) for n in names]

    def _unknown(self, name: str) -> str:
        return f"{name}{MISSING_PREFIX}{self.prefix!r})" if name in self._wire else name

    def text(self, message: str) -> str:
        """``message`` with every model joint name replaced by its name on the wire."""
        if not self.prefix:
            return message
        return self._pattern.sub(lambda m: self.prefix + m.group(1), message)
