"""The MuJoCo scene behind the emulated SO-101 servos: six position actuators, a free cube, an
obstacle a test can move into the arm's way and, opt-in, the sim bridge's soft object
(``scene_kwargs["soft"]``: the same ``build_scene_spec`` builds it, the same ``SoftBody`` reads
its pose and strain).

Used by the bus emulator (``physai_ros.robots.so101.emulator.bus``); pure numpy + mujoco.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import mujoco
import numpy as np

from physai_ros.core.pick.contact import JawContactSensor
from physai_ros.errors import InvalidInput
from physai_ros.models.joints import SO101_JOINTS
from physai_ros.sim.soft import SOFT_FLEX, SoftBody

JOINTS = SO101_JOINTS
REST_POSE = (0.0, -1.70, 1.60, 0.80, 0.0, 0.0)
"""[rad] the folded pose a powered-down SO-101 is left in; with torque off it settles on the
shoulder_lift stop (within 1e-4 rad of the limit) and stays there."""
JAWS = ("gripper", "moving_jaw_so101_v1")  # (fixed, moving) jaw bodies
OBSTACLE = "obstacle"
PARKED = (0.0, 0.0, -10.0)  # [m] where the obstacle waits when not in use (below the table)


class SoftState(NamedTuple):
    """The soft object's truth: centre of mass in the world [m]; its largest edge strain
    [m/m] (``SoftBody.strain``); whether it touches both jaws; the magnitude of the (fixed,
    moving) jaw's net contact force on it [N] (MuJoCo's contacts; as the sim bridge's jaw
    wrenches; the normal sum differs, the vertex spheres' normals tilting apart)."""

    pos: np.ndarray
    strain: float
    in_jaws: bool
    jaw_force: tuple[float, float]


class So101Physics:
    """The SO-101 scene (``build_scene``) with a movable box obstacle (a mocap body).

    scene_kwargs: ``build_scene`` arguments (cube_pos, soft, …); initial: joint angles [rad] at
    power-up; mechanical_margin [rad]: the physical joint stops lie this far beyond the model's
    (calibrated) ranges, so an arm can rest outside the range a driver accepts.
    """

    def __init__(
        self,
        scene_kwargs: dict | None = None,
        initial: Sequence[float] | None = None,
        mechanical_margin: float = 0.0,
    ) -> None:
        from physai_ros.sim.scene import build_scene_spec

        if not (math.isfinite(mechanical_margin) and 0.0 <= mechanical_margin <= 0.5):
            raise InvalidInput(
                f"mechanical_margin must be in [0, 0.5] rad, got {mechanical_margin!r}"
            )
        spec = build_scene_spec("so101", **(scene_kwargs or {}))
        if mechanical_margin > 0.0:
            for name in JOINTS:
                joint = spec.joint(name)
                low, high = joint.range
                joint.range = [low - mechanical_margin, high + mechanical_margin]
        body = spec.worldbody.add_body(name=OBSTACLE, pos=PARKED, mocap=True)
        self._obstacle_geom = body.add_geom(
            name=OBSTACLE, type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.02, 0.02, 0.02]
        )
        self._obstacle_geom.rgba = [0.8, 0.1, 0.1, 0.6]
        self.model = spec.compile()
        self.data = mujoco.MjData(self.model)
        m = self.model
        self.qadr = np.array([m.jnt_qposadr[m.joint(j).id] for j in JOINTS])
        self.dadr = np.array([m.jnt_dofadr[m.joint(j).id] for j in JOINTS])
        self.act = np.array([m.actuator(j).id for j in JOINTS])
        self.kp0 = m.actuator_gainprm[self.act, 0].copy()
        self.cube = m.body("cube").id
        self.cube_qadr = int(m.jnt_qposadr[m.body_jntadr[self.cube]])  # its free joint
        self.cube_dadr = int(m.jnt_dofadr[m.body_jntadr[self.cube]])
        self.site = m.site("gripperframe").id
        self.jaw_sensor = JawContactSensor(m, "cube", *JAWS)
        self.soft: SoftBody | None = None
        self.soft_sensor: JawContactSensor | None = None
        if m.nflex:
            self.soft = SoftBody(m)
            self.soft_sensor = JawContactSensor(m, SOFT_FLEX, *JAWS, flex=True)
        self.mocap = int(m.body_mocapid[m.body(OBSTACLE).id])
        self.obstacle_geom = m.geom(OBSTACLE).id
        q0 = np.zeros(len(JOINTS)) if initial is None else np.asarray(initial, dtype=float)
        if q0.shape != (len(JOINTS),) or not np.all(np.isfinite(q0)):
            raise InvalidInput(f"initial pose must be {len(JOINTS)} finite angles, got {initial!r}")
        self.data.qpos[self.qadr] = q0
        self.data.ctrl[self.act] = q0
        mujoco.mj_forward(m, self.data)
        self.dt = float(m.opt.timestep)

    def apply(self, i: int, target: float, cap: float, gain: float) -> None:
        """Joint ``i``'s servo: position ``target`` [rad] (NaN = torque off), cap [N·m]."""
        a = self.act[i]
        free = math.isnan(target)
        cap = 0.0 if free else cap
        self.model.actuator_forcerange[a] = (-cap, cap)
        kp = self.kp0[i] * gain
        self.model.actuator_gainprm[a, 0] = kp
        self.model.actuator_biasprm[a, 1] = -kp
        if not free:
            self.data.ctrl[a] = target

    def step(self) -> None:
        mujoco.mj_step(self.model, self.data)

    def place_joints(self, q: np.ndarray, qdot: np.ndarray, dt: float) -> None:
        """Put the joints at ``q`` [rad] moving at ``qdot`` [rad/s] and advance the clock by
        ``dt`` [s] without dynamics: a leader arm, moved by a hand (its torque off: nothing but
        the hand moves it)."""
        d = self.data
        d.qpos[self.qadr], d.qvel[self.dadr] = q, qdot
        d.time += dt
        mujoco.mj_kinematics(self.model, d)

    def joint(self, i: int) -> tuple[float, float, float]:
        """(angle [rad], speed [rad/s], actuator torque [N·m]) of joint ``i``."""
        d = self.data
        return (
            float(d.qpos[self.qadr[i]]),
            float(d.qvel[self.dadr[i]]),
            float(d.actuator_force[self.act[i]]),
        )

    def positions(self) -> np.ndarray:
        """True joint angles [rad], ``JOINTS`` order (copy)."""
        return self.data.qpos[self.qadr].copy()

    def velocities(self) -> np.ndarray:
        """True joint speeds [rad/s], ``JOINTS`` order (copy)."""
        return self.data.qvel[self.dadr].copy()

    def cube_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """Cube position [m] and quaternion (w, x, y, z) in the world."""
        return self.data.xpos[self.cube].copy(), self.data.xquat[self.cube].copy()

    def gripper_site(self) -> np.ndarray:
        """World position [m] of the gripper site (between the jaw tips)."""
        return self.data.site_xpos[self.site].copy()

    def cube_in_jaws(self) -> bool:
        """Whether the cube touches both jaws now (the physical success test's second half)."""
        return self.jaw_sensor.read(self.data).both_touch

    def jaw_normal(self) -> tuple[float, float]:
        """True normal force [N] of the (fixed, moving) jaw on the cube now."""
        reading = self.jaw_sensor.read(self.data)
        return reading.fixed_normal, reading.moving_normal

    def soft_state(self) -> SoftState | None:
        """The soft object now (``SoftState``); None in a scene without one."""
        if self.soft is None or self.soft_sensor is None:
            return None
        reading = self.soft_sensor.read(self.data)
        return SoftState(
            self.soft.pose(self.data)[0],
            self.soft.strain(self.data),
            reading.both_touch,
            (reading.fixed_net, reading.moving_net),
        )

    def put_cube(self, centre: Sequence[float]) -> None:
        """Put the cube back on the table with its centre at ``centre`` (world [m]), upright
        and at rest: what an operator does between two picks (whatever held it lets go: a
        jaw closed on it closes on nothing)."""
        pos = np.asarray(centre, dtype=float)
        if np.shape(pos) != (3,) or not np.all(np.isfinite(pos)):
            raise InvalidInput(f"cube centre must be 3 finite numbers [m], got {centre!r}")
        self.data.qpos[self.cube_qadr : self.cube_qadr + 7] = [*pos, 1.0, 0.0, 0.0, 0.0]
        self.data.qvel[self.cube_dadr : self.cube_dadr + 6] = 0.0
        mujoco.mj_forward(self.model, self.data)

    def place_obstacle(self, centre: Sequence[float] | None, half_size: float = 0.02) -> None:
        """Put the box obstacle (half edge ``half_size`` [m]) at ``centre`` (world [m]); None
        parks it out of the way."""
        if not (math.isfinite(half_size) and 0.001 <= half_size <= 0.5):
            raise InvalidInput(f"obstacle half size must be in [0.001, 0.5] m, got {half_size}")
        pos = PARKED if centre is None else np.asarray(centre, dtype=float)
        if np.shape(pos) != (3,) or not np.all(np.isfinite(pos)):
            raise InvalidInput(f"obstacle centre must be 3 finite numbers [m], got {centre!r}")
        self.data.mocap_pos[self.mocap] = pos
        self.model.geom_size[self.obstacle_geom] = half_size
        mujoco.mj_forward(self.model, self.data)
