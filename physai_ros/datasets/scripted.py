"""One scripted pick recorded frame by frame, lockstep with MuJoCo.

The pick is the package's own sensed pick (:class:`~physai_ros.core.pick.machine.PickMachine` on
the rigid-cube world the pick lessons use), so a recorded demonstration is what the pick node
does, with real contact and no weld. A frame is taken on every ``1/fps`` of simulated time:

* ``observation.state``: the joints as they are at the frame's instant, before the step;
* ``action``: the servo targets the script commands at that same instant -- the targets the
  step after the frame acts on, never a later sample;
* one image per camera, rendered from the same instant.

The physics step is the scene's, shortened just enough that a whole number of steps makes one
frame (2 ms → 1.96 ms at 30 fps), so every frame falls exactly on a step and its timestamp is
the simulation's time, not a rounding of it.

Success is the cube's: at the end, the cube's bottom is at least ``min_lift`` above the table
and both jaws touch it (``pick_outcome``). The script's own view (its close sensed, its
states run) does not decide.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import mujoco
import numpy as np

from physai_ros.core.pick.grip import pick_outcome
from physai_ros.core.pick.machine import PickCommand, PickConfig, PickMachine
from physai_ros.datasets.features import from_lerobot, to_lerobot
from physai_ros.datasets.randomise import EpisodeSetup
from physai_ros.sim.lockstep_pick import run_lockstep_pick
from physai_ros.sim.rigid_cube import RigidCubeWorld
from physai_ros.sim.scene import CUBE_GEOM, build_scene


@dataclass
class Frame:
    """One frame: LeRobot-unit vectors (see ``features``) and the cameras' images."""

    state: np.ndarray
    action: np.ndarray
    images: dict[str, np.ndarray]


@dataclass
class Episode:
    """A recorded pick: its frames, the physics' verdict and why."""

    setup: EpisodeSetup
    frames: list[Frame] = field(default_factory=list)
    outcome: str = "not run"  # held | dropped | not closed | aborted
    reason: str = ""
    lift: float = math.nan  # [m] cube bottom above the table at the end
    sim_seconds: float = 0.0

    @property
    def success(self) -> bool:
        return self.outcome == "held"


def frame_timestep(timestep: float, fps: float) -> tuple[float, int]:
    """The largest step ≤ ``timestep`` [s] that divides a frame, and the steps per frame."""
    if not (math.isfinite(fps) and fps > 0):
        raise ValueError(f"fps must be positive, got {fps}")
    steps = max(1, math.ceil(1.0 / (fps * timestep) - 1e-9))
    return 1.0 / (fps * steps), steps


def scene_for(setup: EpisodeSetup, fps: float) -> tuple[mujoco.MjModel, int]:
    """The episode's scene, its step fitted to the frame rate; returns it and the steps per
    frame. The arm's base is at the world origin, so the setup's base-frame cube is world."""
    base = build_scene("so101", base_pos=(0.0, 0.0, 0.0), base_yaw_deg=0.0)
    timestep, steps = frame_timestep(base.opt.timestep, fps)
    model = build_scene(
        "so101",
        base_pos=(0.0, 0.0, 0.0),
        base_yaw_deg=0.0,
        cube_pos=setup.cube_xy,
        cube_size=setup.size,
        cube_mass=setup.mass,
        cube_mu=setup.mu,
        timestep=timestep,
    )
    if setup.rgba is not None:
        model.geom(CUBE_GEOM).rgba = setup.rgba
    model.light_diffuse[:] = setup.light
    for cam in range(model.ncam):
        if model.cam_bodyid[cam] == 0:  # a fixed camera of the scene, not the wrist's
            model.cam_pos[cam] += setup.camera_offset
    return model, steps


class RecordingWorld(RigidCubeWorld):
    """The rigid-cube world, taking a frame whenever the step about to run starts a frame."""

    def __init__(
        self,
        model: mujoco.MjModel,
        setup: EpisodeSetup,
        cfg: PickConfig,
        steps_per_frame: int,
        render,  # (data) -> dict[camera, image], or None for no images
    ) -> None:
        cube = (*setup.cube_xy, setup.size / 2)
        super().__init__(model, cube, cfg, cube_yaw_deg=setup.yaw_deg)
        self.steps_per_frame, self.render = steps_per_frame, render
        self.jaw_q = model.joint(cfg.robot["jaw_joint"]).qposadr[0]
        self.jaw_range = tuple(model.joint(cfg.robot["jaw_joint"]).range)
        self.frames: list[Frame] = []
        self._step = 0

    def actuate(self, machine: PickMachine, command: PickCommand) -> None:
        super().actuate(machine, command)
        if self._step % self.steps_per_frame == 0:
            self.frames.append(self.frame(command))
        self._step += 1

    def frame(self, command: PickCommand) -> Frame:
        """The frame at this instant: the joints now, the command now, the cameras now."""
        data = self.data
        state = to_lerobot(data.qpos[self.arm_q], data.qpos[self.jaw_q], self.jaw_range)
        action = to_lerobot(command.arm, command.jaw, self.jaw_range)
        images = self.render(data) if self.render is not None else {}
        return Frame(state, action, images)


def record_episode(
    setup: EpisodeSetup, cfg: PickConfig, fps: float, cameras=None
) -> tuple[Episode, mujoco.MjModel]:
    """Run and record the episode ``setup`` describes. ``cameras``: a callable making a
    renderer for the episode's model (``model -> Cameras``), or None for no images; the
    renderer is closed when the episode ends (its OpenGL context must go before the next)."""
    model, steps = scene_for(setup, fps)
    renderer = cameras(model) if cameras is not None else None
    try:
        render = renderer.render if renderer is not None else None
        world = RecordingWorld(model, setup, cfg, steps, render)
        run = run_lockstep_pick(world, cfg, world.home)
    finally:
        if renderer is not None:
            renderer.close()
    data, machine = world.data, run.machine
    lift = float(data.xpos[world.cube_body][2] - setup.size / 2)
    touching = world.sensor.read(data).both_touch
    outcome = pick_outcome(lift, touching, machine.closed, cfg.min_lift)
    reason = machine.abort_reason or run.stopped or ""
    if machine.abort_reason and outcome != "held":
        outcome = "aborted"
    episode = Episode(setup, world.frames, outcome, reason, lift, float(data.time))
    return episode, model


def replay_episode(
    setup: EpisodeSetup, actions: Sequence[np.ndarray], cfg: PickConfig, fps: float
) -> Episode:
    """Play recorded actions (LeRobot units) back from the episode's initial state, each held
    for one frame, and judge the cube as the recording did: the proof that each action belongs
    to its frame. Returns the replay as an episode (its frames' actions are the ones played)."""

    model, steps = scene_for(setup, fps)
    world = RecordingWorld(model, setup, cfg, steps, None)
    data = world.data
    for action in actions:
        arm, jaw = from_lerobot(action, world.jaw_range)
        data.ctrl[world.arm_act] = arm
        data.ctrl[world.jaw_act] = jaw
        for _ in range(steps):
            mujoco.mj_step(model, data)
    lift = float(data.xpos[world.cube_body][2] - setup.size / 2)
    touching = world.sensor.read(data).both_touch
    outcome = pick_outcome(lift, touching, True, cfg.min_lift)
    return Episode(setup, [], outcome, "", lift, float(data.time))
