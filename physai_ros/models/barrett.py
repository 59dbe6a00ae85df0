"""The embedded Barrett-like hand (``barrett.xml``), alone or on the Panda's flange.

Why a separate loader: the hand is not a robot of its own in the package (no Menagerie
counterpart, no ROS driver), so it stays out of ``ROBOTS``; it is loaded the same way as the
robots (embedded MJCF, compiled once, required names checked). The Panda variant replaces the
Panda hand — its body, finger tendon, equality, actuator and flange sensors — by the Barrett
hand on link7's flange; ``load_robot_spec("panda")`` itself is left as it is.
"""

from __future__ import annotations

import mujoco

from physai_ros.errors import ModelError
from physai_ros.models.loader import EMBEDDED_DIR, load_robot_spec

BARRETT_FILE = EMBEDDED_DIR / "barrett.xml"
FINGERS = ("f1", "f2", "f3")
JOINTS = (
    "bh_spread_f1",
    "bh_spread_f2",
    *(f"bh_{f}_{link}" for f in FINGERS for link in ("inner", "outer")),
)
SITES = ("bh_palm", *(f"bh_{f}_tip" for f in FINGERS))
PANDA_PREFIX = "barrett/"
"""Prefix of the hand's names in the Panda variant (MuJoCo's attach needs one)."""
FLANGE = (0.0, 0.0, 0.107)
"""Panda flange on link7 [m] (where the Franka Hand is mounted)."""
PANDA_ARM = tuple(f"joint{i}" for i in range(1, 8))


def load_barrett_spec() -> mujoco.MjSpec:
    """The hand alone (base fixed to the world at the mounting face), as an ``MjSpec``.

    Raises ModelError when the file does not compile or lacks a joint or site the planner uses.
    """
    try:
        spec = mujoco.MjSpec.from_file(str(BARRETT_FILE))
        model = spec.compile()
    except ValueError as exc:
        raise ModelError(f"barrett model {BARRETT_FILE} does not load: {exc}") from exc
    _require(model, "")
    return spec


def load_panda_barrett_spec() -> mujoco.MjSpec:
    """The embedded Panda arm with the Barrett hand on its flange instead of the Franka Hand.

    The hand's joints and sites carry the prefix ``PANDA_PREFIX``. The Panda's ``home``
    keyframe is dropped (it sets the removed finger joints); start the arm from the qpos
    values you need.
    """
    spec = load_robot_spec("panda")
    spec.delete(spec.body("hand"))
    gripper = [a for a in spec.actuators if a.name == "actuator8"]
    for element in (*spec.tendons, *spec.equalities, *spec.sensors, *spec.keys, *gripper):
        spec.delete(element)
    hand = load_barrett_spec()
    frame = spec.body("link7").add_frame(pos=list(FLANGE))
    frame.attach_body(hand.body("bh_base"), PANDA_PREFIX, "")
    try:
        model = spec.compile()
    except ValueError as exc:
        raise ModelError(f"Panda with the Barrett hand does not compile: {exc}") from exc
    _require(model, PANDA_PREFIX)
    return spec


def _require(model: mujoco.MjModel, prefix: str) -> None:
    missing = [
        f"{kind} {prefix + name!r}"
        for kind, obj, names in (
            ("joint", mujoco.mjtObj.mjOBJ_JOINT, JOINTS),
            ("site", mujoco.mjtObj.mjOBJ_SITE, SITES),
        )
        for name in names
        if mujoco.mj_name2id(model, obj, prefix + name) < 0
    ]
    if missing:
        raise ModelError(f"barrett model lacks {', '.join(missing)}")
