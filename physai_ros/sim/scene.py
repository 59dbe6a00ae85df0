"""Build a pick scene around a robot with ``MjSpec``: table, free cube, jaw-pad friction, jaw cap,
and optionally a soft object beside the cube (``physai_ros.sim.soft``).

Mirrors the lessons' set-up (lesson 16: the robot's own file plus a floor, as Menagerie's
``scene.xml`` does, then a 3 cm cube with condim 4 and priority 2 so that *its* μ governs every
jaw contact, pads at μ 1 / priority 1, the jaw torque cap as the gripper actuator's force range;
lesson 07: the base moved and yawed so that world ≠ base). The robot file's own solver options
(cone, impratio, iterations) are kept; only the timestep is set. Defaults come from
``config/scene.yaml``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from physai_ros.config import load_scene_config
from physai_ros.errors import InvalidInput, ModelError
from physai_ros.models.loader import check_robot, load_robot_spec
from physai_ros.models.placement import finite_vector, place_robot, yaw_quat
from physai_ros.sim.soft import SoftObject, add_soft_object, soft_object

CUBE_BODY = "cube"
CUBE_GEOM = "cube"
CUBE_JOINT = "cube"  # free joint; MuJoCo keeps joint and body names apart


def scene_preset(name: str) -> dict[str, Any]:
    """Keyword arguments (with ``robot``) of a named lesson set-up from ``config/scene.yaml``."""
    presets = load_scene_config()["presets"]
    if name not in presets:
        raise InvalidInput(f"unknown scene preset {name!r}; valid choices: {sorted(presets)}")
    return dict(presets[name])


def _positive(name: str, value: float) -> float:
    if not (math.isfinite(value) and value > 0.0):
        raise InvalidInput(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def scene_soft_object(robot: str, pos: Sequence[float] | None = None, **values: Any) -> SoftObject:
    """A checked soft object for ``robot``'s scene: ``values`` (shape, young [Pa], poisson,
    damping [s], mass [kg], mu, size [m], count [vertices per edge]; ``None`` =
    config/scene.yaml ``soft``) at ``pos`` (x, y) [m] in the base frame (``None`` = the robot's
    ``soft_pos``, beside the cube)."""
    check_robot(robot)
    config = load_scene_config()
    xy = finite_vector(
        "soft_pos", config["robots"][robot]["soft_pos"] if pos is None else pos, (2,)
    )
    return soft_object(config["soft"], (float(xy[0]), float(xy[1])), **values)


def cube_world_pos(
    cube_pos: Sequence[float], cube_size: float, base_pos: Sequence[float], base_yaw_deg: float
) -> np.ndarray:
    """Cube centre in the world [m] from its position in the base frame.

    ``cube_pos`` is (x, y) -- the cube rests on the table, centre at z = size/2 in the world --
    or (x, y, z) in the base frame.
    """
    local = finite_vector("cube_pos", cube_pos, (2, 3))
    base = finite_vector("base_pos", base_pos, (3,))
    rotated = np.zeros(3)
    mujoco.mju_rotVecQuat(
        rotated, np.append(local[:2], local[2] if local.size == 3 else 0.0), yaw_quat(base_yaw_deg)
    )
    world = base + rotated
    if local.size == 2:
        world[2] = cube_size / 2.0
    return world


def placed_cube_world(robot: str, cube_xy: Sequence[float]) -> np.ndarray:
    """The scene's cube resting on the table at ``cube_xy`` (x, y in ``robot``'s base frame,
    the robot where config/scene.yaml places it): its centre in the world [m]. What the real
    arm's pick is told (its ``cube_position``, a goal's ``object_pose``) and where the bus
    emulator puts its cube back."""
    config = load_scene_config()
    placement = config["robots"][robot]
    size = float(config["cube"]["size"])
    return cube_world_pos(cube_xy, size, placement["base_pos"], placement["base_yaw_deg"])


def build_scene_spec(
    robot: str,
    *,
    model_path: str | Path | None = None,
    base_pos: Sequence[float] | None = None,
    base_yaw_deg: float | None = None,
    cube_pos: Sequence[float] | None = None,
    cube_size: float | None = None,
    cube_mass: float | None = None,
    cube_mu: float | None = None,
    jaw_mu: float | None = None,
    jaw_torque_cap: float | None = None,
    timestep: float | None = None,
    soft: SoftObject | None = None,
) -> mujoco.MjSpec:
    """The scene as an editable spec; see ``build_scene`` for the arguments."""
    check_robot(robot)
    config = load_scene_config()
    defaults = config["robots"][robot]
    cube_cfg, jaw_cfg = config["cube"], config["jaw"]
    base_pos = finite_vector(
        "base_pos", defaults["base_pos"] if base_pos is None else base_pos, (3,)
    )
    base_yaw_deg = float(defaults["base_yaw_deg"] if base_yaw_deg is None else base_yaw_deg)
    cube_size = _positive("cube_size", cube_cfg["size"] if cube_size is None else cube_size)
    cube_mass = _positive("cube_mass", cube_cfg["mass"] if cube_mass is None else cube_mass)
    cube_mu = _positive("cube_mu", cube_cfg["mu"] if cube_mu is None else cube_mu)
    jaw_mu = _positive("jaw_mu", jaw_cfg["mu"] if jaw_mu is None else jaw_mu)
    timestep = _positive("timestep", config["timestep"] if timestep is None else timestep)
    if jaw_torque_cap is None:
        jaw_torque_cap = defaults["jaw_torque_cap"]
    if jaw_torque_cap is not None:
        jaw_torque_cap = _positive("jaw_torque_cap", jaw_torque_cap)
    cube_world = cube_world_pos(
        defaults["cube_pos"] if cube_pos is None else cube_pos, cube_size, base_pos, base_yaw_deg
    )

    spec = load_robot_spec(robot, model_path)
    spec.option.timestep = timestep

    place_robot(spec, base_pos, base_yaw_deg)

    _add_table(spec, config["table"]["name"])
    for name, camera in defaults.get("cameras", {}).items():
        _add_camera(spec, name, camera["pos"], camera["target"], base_pos, base_yaw_deg)
    _set_jaw(spec, robot, defaults, jaw_mu, int(jaw_cfg["priority"]), jaw_torque_cap)

    cube = spec.worldbody.add_body(name=CUBE_BODY, pos=cube_world)
    cube.add_freejoint(name=CUBE_JOINT)
    half = cube_size / 2.0
    cube.add_geom(
        name=CUBE_GEOM,
        type=mujoco.mjtGeom.mjGEOM_BOX,
        size=[half, half, half],
        mass=cube_mass,
        friction=[cube_mu, cube_cfg["torsional"], cube_cfg["rolling"]],
        condim=int(cube_cfg["condim"]),
        priority=int(cube_cfg["priority"]),
        rgba=cube_cfg["rgba"],
    )
    if soft is not None:  # after the cube: the robot's and the cube's qpos indices stay
        centre = cube_world_pos(soft.pos, soft.size, base_pos, base_yaw_deg)
        add_soft_object(spec, soft, centre.tolist(), config["soft"])
    return spec


def build_scene(robot: str, **kwargs: Any) -> mujoco.MjModel:
    """Compile the pick scene for ``robot`` ("so101" or "panda").

    Keyword arguments (``None`` = the value in ``config/scene.yaml``):
        model_path: ``None`` for the embedded model, else a Menagerie-style folder or MJCF file.
        base_pos: robot base position in the world [m], (x, y, z).
        base_yaw_deg: robot base rotation about the world z axis [deg].
        cube_pos: cube centre in the base frame [m]: (x, y) resting on the table, or (x, y, z).
        cube_size: cube edge [m]. cube_mass: [kg]. cube_mu: sliding friction of the cube.
        jaw_mu: sliding friction of the jaw collision geoms (priority 1, below the cube's 2).
        jaw_torque_cap: symmetric force range of the gripper actuator [N m for the SO-101 jaw
            servo, N for the Panda finger tendon]; ``None`` keeps the model's own.
        timestep: physics step [s].
        soft: a deformable object beside the cube (``scene_soft_object``); ``None`` = none.
            A scene with one steps with the discrete integrator (``physai_ros.sim.soft``);
            one without keeps the robot file's integrator.

    Returns:
        The compiled model: robot joints first (same qpos/qvel indices as the robot alone),
        then the cube's free joint ``cube``, then the soft object's vertex sliders (flex
        ``soft``); the table plane is geom ``floor`` at z = 0.
        Use ``build_scene_spec`` to edit the scene further before compiling.
    """
    spec = build_scene_spec(robot, **kwargs)
    try:
        return spec.compile()
    except ValueError as exc:
        raise ModelError(f"{robot} scene does not compile: {exc}") from exc


def _add_table(spec: mujoco.MjSpec, name: str) -> None:
    """Infinite checkered plane at z = 0 and a light, as Menagerie's scene.xml has."""
    spec.add_texture(
        name=f"{name}_grid",
        type=mujoco.mjtTexture.mjTEXTURE_2D,
        builtin=mujoco.mjtBuiltin.mjBUILTIN_CHECKER,
        mark=mujoco.mjtMark.mjMARK_EDGE,
        rgb1=[0.2, 0.3, 0.4],
        rgb2=[0.1, 0.2, 0.3],
        markrgb=[0.8, 0.8, 0.8],
        width=300,
        height=300,
    )
    material = spec.add_material(
        name=f"{name}_grid", texrepeat=[5, 5], texuniform=True, reflectance=0.2
    )
    material.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = f"{name}_grid"
    spec.worldbody.add_geom(
        name=name, type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0.0, 0.0, 0.05], material=f"{name}_grid"
    )
    spec.worldbody.add_light(
        pos=[0.0, 0.0, 3.5], dir=[0.0, 0.0, -1.0], type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL
    )


def _add_camera(
    spec: mujoco.MjSpec,
    name: str,
    pos: Sequence[float],
    target: Sequence[float],
    base_pos: np.ndarray,
    base_yaw_deg: float,
) -> None:
    """A fixed world camera at ``pos`` looking at ``target`` (both in the base frame [m]), its
    image's up toward the world's up (MuJoCo's cameras look along their -z, y up)."""
    quat = yaw_quat(base_yaw_deg)
    eye, at = np.zeros(3), np.zeros(3)
    mujoco.mju_rotVecQuat(eye, finite_vector(f"{name} pos", pos, (3,)), quat)
    mujoco.mju_rotVecQuat(at, finite_vector(f"{name} target", target, (3,)), quat)
    forward = at - eye
    right = np.cross(forward, [0.0, 0.0, 1.0])
    if np.linalg.norm(forward) < 1e-9 or np.linalg.norm(right) < 1e-9:
        raise ModelError(f"camera {name}: looks at its own position or straight up or down")
    forward /= np.linalg.norm(forward)
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    spec.worldbody.add_camera(name=name, pos=base_pos + eye, xyaxes=[*right, *up], fovy=45.0)


def _set_jaw(
    spec: mujoco.MjSpec,
    robot: str,
    defaults: dict[str, Any],
    jaw_mu: float,
    priority: int,
    torque_cap: float | None,
) -> None:
    """Pad friction/priority on every colliding geom of the jaw bodies; actuator force cap."""
    for body_name in defaults["jaw_bodies"]:
        body = spec.body(body_name)
        if body is None:
            raise ModelError(f"{robot} model has no jaw body {body_name!r}")
        for geom in body.geoms:
            if geom.contype or geom.conaffinity:
                geom.friction[0] = jaw_mu
                geom.priority = priority
    if torque_cap is not None:
        actuator = spec.actuator(defaults["gripper_actuator"])
        if actuator is None:
            raise ModelError(
                f"{robot} model has no gripper actuator {defaults['gripper_actuator']!r}"
            )
        actuator.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
        actuator.forcerange = [-torque_cap, torque_cap]
