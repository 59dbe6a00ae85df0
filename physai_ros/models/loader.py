"""Find and load a robot's MJCF as an editable ``mujoco.MjSpec``.

The package ships its own primitive-shape models (``so101.xml``, ``panda.xml`` next to this
file), so it runs on a machine with nothing else installed. A user with a MuJoCo Menagerie
checkout can point ``model_path`` at it to get the meshed originals; both have the same body,
joint, site, camera and actuator names, which is what the rest of the package relies on.
"""

from __future__ import annotations

from pathlib import Path

import mujoco

from physai_ros.errors import InvalidInput, ModelError
from physai_ros.models.joints import PANDA_JOINTS, SO101_JOINTS

EMBEDDED_DIR = Path(__file__).resolve().parent
"""Folder of the embedded MJCF files."""

ROBOTS: dict[str, str] = {
    "so101": "robotstudio_so101",
    "panda": "franka_emika_panda",
    "panda_barrett": "franka_emika_panda",
}
"""Supported robots -> folder name of the same robot in a MuJoCo Menagerie checkout.
``panda_barrett`` is the Panda with the embedded Barrett-like hand on its flange instead of the
Franka Hand (``physai_ros.models.barrett_hand``); its arm is the Panda's (from Menagerie's folder
with
``model_path``)."""

COMPOSED: dict[str, str] = {"panda_barrett": "panda"}
"""Robots built from another robot's file (robot -> the robot whose file holds its arm)."""

REQUIRED_NAMES: dict[str, dict[mujoco.mjtObj, tuple[str, ...]]] = {
    "so101": {
        mujoco.mjtObj.mjOBJ_JOINT: SO101_JOINTS,
        mujoco.mjtObj.mjOBJ_ACTUATOR: ("gripper",),
        mujoco.mjtObj.mjOBJ_SITE: ("gripperframe",),
        mujoco.mjtObj.mjOBJ_CAMERA: ("wrist_cam",),
        mujoco.mjtObj.mjOBJ_BODY: ("base", "gripper", "moving_jaw_so101_v1"),
    },
    "panda": {
        mujoco.mjtObj.mjOBJ_JOINT: PANDA_JOINTS,
        mujoco.mjtObj.mjOBJ_ACTUATOR: ("actuator8",),
        mujoco.mjtObj.mjOBJ_BODY: ("link0", "hand", "left_finger", "right_finger"),
        mujoco.mjtObj.mjOBJ_KEY: ("home",),
    },
}
"""Names the package looks up in each robot model; a model without them is rejected early."""

ADDED_SITES: dict[str, dict[str, tuple[str, tuple[float, ...], tuple[float, ...]]]] = {
    "panda": {
        # Between the Franka Hand's fingertip pads (finger bodies 58.4 mm out of the hand, pads
        # 44.5 mm further): x along the approach (the hand's z), z along the closing (the left
        # finger, at +y of the hand, towards the right one), as the SO-101's gripperframe is
        # used by the pick. Menagerie's Panda has no such site; neither has ours.
        "grasp_site": ("hand", (0.0, 0.0, 0.1029), (0.5, 0.5, -0.5, 0.5)),
    },
}
"""Sites the package adds to a robot model that lacks them: name -> (body, pos [m], quat)."""


def check_robot(robot: str) -> str:
    """Return ``robot`` if supported, else raise ``InvalidInput`` listing the choices."""
    if robot not in ROBOTS:
        raise InvalidInput(f"unknown robot {robot!r}; valid choices: {sorted(ROBOTS)}")
    return robot


def candidate_files(robot: str, model_path: str | Path | None = None) -> list[Path]:
    """Files tried, in order, for ``robot``: the embedded MJCF, or those under ``model_path``.

    ``model_path`` may be an MJCF file, a robot folder holding ``<robot>.xml`` (Menagerie's
    ``robotstudio_so101/``, ``franka_emika_panda/``) or a Menagerie root holding those folders.
    """
    check_robot(robot)
    robot = COMPOSED.get(robot, robot)
    if model_path is None:
        return [EMBEDDED_DIR / f"{robot}.xml"]
    path = Path(model_path).expanduser()
    if path.suffix == ".xml":
        return [path]
    return [path / f"{robot}.xml", path / ROBOTS[robot] / f"{robot}.xml"]


def robot_model_file(robot: str, model_path: str | Path | None = None) -> Path:
    """The MJCF file that ``load_robot_spec`` would read; ``ModelError`` lists what was tried."""
    candidates = candidate_files(robot, model_path)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    tried = ", ".join(str(c) for c in candidates)
    raise ModelError(f"no {robot} model found; looked for: {tried}")


def load_robot_spec(robot: str, model_path: str | Path | None = None) -> mujoco.MjSpec:
    """Load ``robot`` (one of ``ROBOTS``) as an ``MjSpec``, compiled once to prove it is valid.

    Args:
        robot: robot name, one of ``ROBOTS``.
        model_path: ``None`` for the embedded model, else an MJCF file or a (Menagerie-style)
            folder containing ``<robot>.xml``.

    Returns:
        The spec, ready to edit (scene builders add a floor, a cube, change friction) and
        compile. Mesh folders are resolved relative to the file, as MuJoCo does.

    Raises:
        InvalidInput: unknown robot name.
        ModelError: no file found (the message lists the paths tried), the file does not parse
            or compile, or it lacks a body/joint/site/camera/actuator/keyframe the package uses.
    """
    if robot in COMPOSED:  # checks its own names
        from physai_ros.models.barrett_hand import on_panda

        return on_panda(load_robot_spec(COMPOSED[robot], model_path))
    path = robot_model_file(robot, model_path)
    try:
        spec = mujoco.MjSpec.from_file(str(path))
        _add_sites(spec, robot)
        model = spec.compile()
    except ValueError as exc:  # MuJoCo reports parse and compile errors as ValueError
        raise ModelError(f"{robot} model {path} does not load: {exc}") from exc
    missing = [
        f"{mujoco.mju_type2Str(obj)} {name!r}"
        for obj, names in REQUIRED_NAMES[robot].items()
        for name in names
        if mujoco.mj_name2id(model, obj, name) < 0
    ]
    if missing:
        raise ModelError(f"{robot} model {path} lacks {', '.join(missing)}")
    return spec


def _add_sites(spec: mujoco.MjSpec, robot: str) -> None:
    """Add the ``ADDED_SITES`` the file does not define (a body it lacks is reported by the
    name check after compiling)."""
    for name, (body_name, pos, quat) in ADDED_SITES.get(robot, {}).items():
        body = spec.body(body_name)
        if spec.site(name) is None and body is not None:
            body.add_site(name=name, pos=list(pos), quat=list(quat), size=[0.005], group=1)


def load_robot_model(robot: str, model_path: str | Path | None = None) -> mujoco.MjModel:
    """The compiled robot alone (no floor, no cube), as written in its file."""
    return load_robot_spec(robot, model_path).compile()
