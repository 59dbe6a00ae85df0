"""The embedded Barrett-like hand (``barrett.xml``), alone or on the Panda's flange.

Why a separate loader: the hand is not a robot of its own in the package (no Menagerie
counterpart, no ROS driver), so it stays out of ``ROBOTS``; it is loaded the same way as the
robots (embedded MJCF, compiled once, required names checked). The Panda variant replaces the
Panda hand — its body, finger tendon, equality, actuator and flange sensors — by the Barrett
hand on link7's flange; ``load_robot_spec("panda")`` itself is left as it is. That variant is
also a robot of the package, ``panda_barrett`` (``load_robot_spec("panda_barrett")``): the sim
bridge, the TF publisher and the hand pick run it (docs/force_close.md "The three-finger hand").
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np

from physai_ros.errors import ModelError
from physai_ros.models.joints import PANDA_ARM_JOINTS

BARRETT_FILE = Path(__file__).resolve().parent / "barrett.xml"
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


def on_panda(spec: mujoco.MjSpec) -> mujoco.MjSpec:
    """The Panda arm ``spec`` (``load_robot_spec("panda")``, edited in place and returned) with
    the Barrett hand on its flange instead of the Franka Hand (``load_robot_spec("panda_barrett")``
    gives this).

    The hand's joints and sites carry the prefix ``PANDA_PREFIX``. The Panda's ``home``
    keyframe (it sets the removed finger joints) is replaced by one of the same name: the arm
    at the Panda's home, the hand open (every hand joint 0: the fingers straight out).

    Solver: elliptic friction cones and ``impratio`` 10, as the SO-101's own file has them. A
    fingertip holds a light object with a few tenths of a newton; under the Panda's default
    pyramidal cones with impratio 1 such a grip crept 1 cm down the fingers during a 7 cm lift
    and dropped a 50 g soft sphere, with the same forces it held to 6.8 cm of 7 with these.
    """
    home = list(spec.key("home").qpos)[: len(PANDA_ARM_JOINTS)]
    spec.delete(spec.body("hand"))
    gripper = [a for a in spec.actuators if a.name == "actuator8"]
    for element in (*spec.tendons, *spec.equalities, *spec.sensors, *spec.keys, *gripper):
        spec.delete(element)
    hand = load_barrett_spec()
    frame = spec.body("link7").add_frame(pos=list(FLANGE))
    frame.attach_body(hand.body("bh_base"), PANDA_PREFIX, "")
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    spec.option.impratio = 10.0
    try:
        model = spec.compile()
        qpos = np.zeros(model.nq)
        qpos[: len(PANDA_ARM_JOINTS)] = home  # the arm's joints come first, the hand's after them
        spec.add_key(name="home", qpos=qpos.tolist())
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
