"""The simulated robot: a MuJoCo pick scene driven the way ros2_control drives a real arm.

``MujocoSim`` owns one scene from ``physai_ros.models.build_scene`` (SO-101 or Panda, table,
cube) and gives the sim bridge node what a hardware driver would: joint state (effort = the
actuators' joint-space force), the shared controllers (``physai_ros.core.controllers``: the
joint trajectory controller and the gripper action controller, updated at the controller
rate inside the physics steps), per-jaw contact wrenches, the cube pose, reset and recovery
from a diverged step; with a soft object (``physai_ros.sim.soft``), its pose and strain, and
its contacts in the jaw wrenches and contact points. Goals that end are collected in ``ends``
for the node to report.

How the arm follows a trajectory depends on the robot, as on the real ones:
* SO-101: its position servos (MuJoCo position actuators) get the reference as their target.
* Panda: position actuators off, joint torques ``qfrc_bias + Kp(q_r − q) + Kd(q̇_r − q̇)``
  (+ ``M(q) q̈_r − qfrc_passive`` feedforward) computed every physics step between
  ``mj_step1`` and ``mj_step2`` (state-consistent), clipped at the torque limits (lesson 13).

Pure (numpy + mujoco, no rclpy). Names are looked up once; the step loop works on index arrays
and preallocated buffers, and when nothing needs a per-step update it hands MuJoCo a whole batch
(``mj_step(..., nstep=n)``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import mujoco
import numpy as np

from physai_ros.config import load_scene_config, load_sim_config
from physai_ros.core.controllers.gac import (
    GacParams,
    GripperActionController,
    GripperEnd,
    gac_params,
    goal_effort,
)
from physai_ros.core.controllers.jtc import GoalEnd, JointTrajectoryController, JtcParams
from physai_ros.core.motion.joint_trajectory import JointRanges
from physai_ros.core.motion.time_scaling import minjerk
from physai_ros.core.pick.contact import ContactPoint
from physai_ros.errors import InvalidInput, ModelError
from physai_ros.sim.scene import CUBE_BODY, CUBE_JOINT, build_scene, cube_world_pos
from physai_ros.sim.soft import SoftBody, SoftObject

_BADQACC = int(mujoco.mjtWarning.mjWARN_BADQACC)
_BADQVEL = int(mujoco.mjtWarning.mjWARN_BADQVEL)
_BADQPOS = int(mujoco.mjtWarning.mjWARN_BADQPOS)
"""MuJoCo counts these and resets the data itself (time too) when the state goes non-finite."""


def default_controller_params(
    robot: str, ranges: JointRanges, grippers: dict[str, tuple[str, float, float, float]]
) -> tuple[JtcParams, dict[str, GacParams]]:
    """The controllers' parameters from config/sim_robots.yaml (``arm_controller`` and, for
    each gripper controller, ``gripper_controller`` of ``robot``); ``grippers``: controller name
    -> (joint, lower, upper [rad | m], default effort [N·m | N], the actuator's cap)."""
    cfg = load_sim_config()["robots"][robot]
    jtc = JtcParams.from_config(cfg["arm_controller"], ranges.names, ranges.lower, ranges.upper)
    return jtc, {
        name: gac_params(cfg["gripper_controller"], *joint) for name, joint in grippers.items()
    }


def gripper_channels(cfg: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Controller name -> {joint, actuator} of a simulated robot's gripper controllers: its
    ``hand`` section (a hand with several driven joints: one controller each), else the one
    ``gripper_controller`` on the first of ``gripper_joints`` and ``gripper_actuator``."""
    if "hand" in cfg:
        return {name: dict(channel) for name, channel in cfg["hand"].items()}
    return {
        "gripper_controller": {
            "joint": cfg["gripper_joints"][0],
            "actuator": cfg["gripper_actuator"],
        }
    }


class ArmState(NamedTuple):
    """Measured arm state (controller order): q [rad], qd [rad/s], effort [N·m]."""

    q: np.ndarray
    qd: np.ndarray
    effort: np.ndarray


class GripperStatus(NamedTuple):
    """The jaw now: position [rad | m], actuator effort [N·m | N]; ``active`` = a goal runs."""

    position: float
    effort: float
    active: bool


class Wrench(NamedTuple):
    """Contact force [N] and torque [N·m] on a jaw, about and in its body frame."""

    force: np.ndarray
    torque: np.ndarray
    contacts: int


def _ids(model: mujoco.MjModel, obj: mujoco.mjtObj, names: Sequence[str], kind: str) -> np.ndarray:
    ids = [mujoco.mj_name2id(model, obj, n) for n in names]
    missing = [n for n, i in zip(names, ids, strict=True) if i < 0]
    if missing:
        raise ModelError(f"the scene has no {kind} {missing}")
    return np.array(ids, dtype=int)


class _Servo:
    """The position servo (a MuJoCo position-type actuator) that one gripper controller drives,
    and its joint. A goal's effort becomes the actuator's force range (so a jaw blocked by an
    object pushes with it) and the servo's target ramps to the goal's position along a min-jerk
    blend of ``ramp_time`` [s], as a servo's own trajectory generator does."""

    def __init__(
        self,
        model: mujoco.MjModel,
        joint: str,
        actuator: str,
        ramp_time: float,
        stiffness: dict[str, float] | None,
    ) -> None:
        jid = int(_ids(model, mujoco.mjtObj.mjOBJ_JOINT, [joint], "joint")[0])
        self.joint = joint
        self.q, self.v = int(model.jnt_qposadr[jid]), int(model.jnt_dofadr[jid])
        self.range = (float(model.jnt_range[jid, 0]), float(model.jnt_range[jid, 1]))
        self.act = a = int(_ids(model, mujoco.mjtObj.mjOBJ_ACTUATOR, [actuator], "actuator")[0])
        # A position-type actuator reaches equilibrium where gain·ctrl = kp·length.
        gain, kp = model.actuator_gainprm[a, 0], -model.actuator_biasprm[a, 1]
        if gain <= 0 or kp <= 0:
            raise ModelError(f"gripper actuator {actuator!r} is not a position servo")
        self.ctrl_per_unit = float(kp / gain)  # ctrl per unit of joint position
        if stiffness is not None:
            self._stiffen(model, stiffness)
        self.default_cap = float(model.actuator_forcerange[a, 1])
        self.ramp_time = float(ramp_time)
        self.ramp: tuple[float, float, float] | None = None  # (from, to, t0) servo ctrl
        self.target = math.nan  # [rad | m] the setpoint the ramp heads for
        self.effort = math.nan  # [N·m | N] the effort written as the force range

    def _stiffen(self, model: mujoco.MjModel, servo: dict[str, float]) -> None:
        """Set the servo's stiffness kp [N/m | N·m/rad] and damping kv [N·s/m | N·m·s/rad],
        keeping its command scale: a jaw blocked by an object then pushes with its force cap
        (as a real force-limited gripper does) instead of kp x the little way it is short of
        its goal."""
        kp, kv = float(servo["kp"]), float(servo["kv"])
        if not (kp > 0.0 and kv >= 0.0 and math.isfinite(kp + kv)):
            raise InvalidInput(f"{self.joint}: gripper_servo needs kp > 0 and kv >= 0: {servo}")
        model.actuator_gainprm[self.act, 0] = kp / self.ctrl_per_unit
        model.actuator_biasprm[self.act, 1:3] = (-kp, -kv)

    def command(self, model: mujoco.MjModel, data: mujoco.MjData, position: float, effort: float):
        """Servo to ``position`` [rad | m] with at most ``effort`` [N·m | N]."""
        a = self.act
        model.actuator_forcerange[a] = (-effort, effort)
        low, high = model.actuator_ctrlrange[a]
        target = min(max(position * self.ctrl_per_unit, low), high)
        if position != self.target:
            self.ramp = (float(data.ctrl[a]), float(target), float(data.time))
        self.target, self.effort = position, effort

    def advance(self, data: mujoco.MjData) -> None:
        """Move the servo's target along its min-jerk ramp."""
        if self.ramp is None:
            return
        start, target, t0 = self.ramp
        u = 1.0 if self.ramp_time <= 0.0 else (float(data.time) - t0) / self.ramp_time
        if u >= 1.0:
            data.ctrl[self.act] = target
            self.ramp = None
        else:
            data.ctrl[self.act] = start + minjerk(u) * (target - start)

    def reset(self, model: mujoco.MjModel, data: mujoco.MjData, effort: float) -> None:
        """Hold where the joint is, at the default cap (after ``mj_resetData``)."""
        self.ramp = None
        model.actuator_forcerange[self.act] = (-self.default_cap, self.default_cap)
        data.ctrl[self.act] = data.qpos[self.q] * self.ctrl_per_unit
        self.target, self.effort = float(data.qpos[self.q]), effort


class MujocoSim:
    """One simulated robot and cube; every public method is safe to call between steps.

    Args:
        robot: "so101" or "panda".
        model_path: ``None`` = embedded model, else a Menagerie-style folder or MJCF file.
        base_pos [m], base_yaw_deg [deg]: the robot base in the world (``None`` =
            config/scene.yaml); two bridges side by side each put their arm where TF says.
        cube_pos: cube centre in the base frame [m], (x, y) on the table or (x, y, z).
        cube_size [m], cube_mass [kg], cube_mu, jaw_torque_cap [N·m | N]: as ``build_scene``
            (``None`` = config/scene.yaml).
        timestep: physics step [s] (``None`` = config/scene.yaml, 2 ms).
        soft: a soft object beside the cube (``physai_ros.models.scene_soft_object``);
            ``None`` = none. It switches the scene to the discrete integrator.
        controller_rate: [Hz] how often the controllers run (SO-101 servo targets; the Panda
            torque loop runs every step regardless).

    The arm and gripper controllers' parameters are config/sim_robots.yaml's
    (``default_controller_params``), their joint ranges the model's. A robot has one gripper
    controller (``gripper``), or with a ``hand`` section one per driven joint of the hand
    (``grippers``, by controller name; ``gripper`` is then the first).
    """

    def __init__(
        self,
        robot: str = "so101",
        *,
        model_path: str | Path | None = None,
        base_pos: Sequence[float] | None = None,
        base_yaw_deg: float | None = None,
        cube_pos: Sequence[float] | None = None,
        cube_size: float | None = None,
        cube_mass: float | None = None,
        cube_mu: float | None = None,
        jaw_torque_cap: float | None = None,
        timestep: float | None = None,
        soft: SoftObject | None = None,
        controller_rate: float = 500.0,
    ) -> None:
        config = load_sim_config()
        if robot not in config["robots"]:
            raise InvalidInput(
                f"unknown robot {robot!r}; valid choices: {sorted(config['robots'])}"
            )
        cfg = config["robots"][robot]
        self.robot = robot
        self.model = build_scene(
            robot,
            model_path=model_path,
            base_pos=base_pos,
            base_yaw_deg=base_yaw_deg,
            cube_pos=cube_pos,
            cube_size=cube_size,
            cube_mass=cube_mass,
            cube_mu=cube_mu,
            jaw_torque_cap=jaw_torque_cap,
            timestep=timestep,
            soft=soft,
        )
        self.data = mujoco.MjData(self.model)
        m = self.model
        self.dt = float(m.opt.timestep)
        scene = load_scene_config()["robots"][robot]
        self._base_pos = np.asarray(scene["base_pos"] if base_pos is None else base_pos, float)
        self._base_yaw = float(scene["base_yaw_deg"] if base_yaw_deg is None else base_yaw_deg)
        self.cube_size = float(m.geom_size[m.geom("cube").id][0] * 2.0)

        # --- names to indices, once ---
        self.arm_joints = tuple(cfg["arm_joints"])
        self.gripper_joints = tuple(cfg["gripper_joints"])
        jnt = mujoco.mjtObj.mjOBJ_JOINT
        arm_j = _ids(m, jnt, self.arm_joints, "joint")
        grip_j = _ids(m, jnt, self.gripper_joints, "joint")
        self._arm_q = m.jnt_qposadr[arm_j].copy()
        self._arm_v = m.jnt_dofadr[arm_j].copy()
        self._grip_q = m.jnt_qposadr[grip_j].copy()
        self._grip_v = m.jnt_dofadr[grip_j].copy()
        self.state_names = self.arm_joints + self.gripper_joints
        self._state_q = np.concatenate([self._arm_q, self._grip_q])
        self._state_v = np.concatenate([self._arm_v, self._grip_v])
        self._arm_act = np.array([self._actuator_of(j) for j in arm_j], dtype=int)
        self.ranges = JointRanges(
            self.arm_joints, m.jnt_range[arm_j, 0].copy(), m.jnt_range[arm_j, 1].copy()
        )
        self._servos = {
            name: _Servo(
                m,
                channel["joint"],
                channel["actuator"],
                float(cfg["gripper_ramp_time"]),
                cfg.get("gripper_servo"),
            )
            for name, channel in gripper_channels(cfg).items()
        }
        first = next(iter(self._servos.values()))
        self.gripper_range = first.range
        n = len(self.arm_joints)

        # --- jaws: geom -> jaw index lookup, bodies for the wrench frames ---
        # a jaw is one body, or a list of bodies (a finger's links) whose first is its frame
        jaw_bodies = {
            jaw: [bodies] if isinstance(bodies, str) else list(bodies)
            for jaw, bodies in cfg["jaws"].items()
        }
        self.jaw_names = tuple(jaw_bodies)
        self.jaw_body_names = {jaw: b[0] for jaw, b in jaw_bodies.items()}  # the wrench frames
        self._jaw_body = _ids(
            m, mujoco.mjtObj.mjOBJ_BODY, list(self.jaw_body_names.values()), "body"
        )
        # one extra -1 at the end: a flex contact's geom is -1 and so reads "no jaw" there
        self._jaw_of_geom = np.full(m.ngeom + 1, -1, dtype=int)
        collide = (m.geom_contype != 0) | (m.geom_conaffinity != 0)
        for i, bodies in enumerate(jaw_bodies.values()):
            ids = _ids(m, mujoco.mjtObj.mjOBJ_BODY, bodies, "body")
            self._jaw_of_geom[:-1][np.isin(m.geom_bodyid, ids) & collide] = i
        self._no_jaws = np.zeros((0, 2), dtype=int)
        zero = np.zeros(3)
        zero.flags.writeable = False
        self._zero_wrenches = {name: Wrench(zero, zero, 0) for name in self.jaw_names}
        self._cube_body = m.body(CUBE_BODY).id
        self._cube_q = int(m.joint(CUBE_JOINT).qposadr[0])
        self._cube_v = int(m.joint(CUBE_JOINT).dofadr[0])

        # --- arm control ---
        self.control = cfg["control"]
        if self.control not in ("position", "torque"):
            raise InvalidInput(
                f"{robot}: control must be 'position' or 'torque', got {self.control!r}"
            )
        if self.control == "torque":
            self._setup_torque_mode(cfg)
        if not (math.isfinite(controller_rate) and controller_rate > 0.0):
            raise InvalidInput(f"controller_rate must be > 0 [Hz], got {controller_rate!r}")
        self._steps_per_update = max(1, round(1.0 / controller_rate / self.dt))
        jtc, gacs = default_controller_params(
            robot,
            self.ranges,
            {name: (s.joint, *s.range, s.default_cap) for name, s in self._servos.items()},
        )
        self.arm = JointTrajectoryController(jtc)
        self.grippers = {name: GripperActionController(p) for name, p in gacs.items()}
        self.ends: list[GoalEnd | GripperEnd] = []  # goals that ended, for the node to report
        self._tmp_nv = np.zeros(m.nv)
        self._res_nv = np.zeros(m.nv)
        self._tau = np.zeros(n)
        self._f6 = np.zeros(6)
        self.instabilities = 0
        self.last_instability = ""
        self._warn_seen = 0
        self._home_q = self._home(cfg)
        self._cube_home = self.data.qpos[self._cube_q : self._cube_q + 7].copy()
        self.soft = soft
        self._soft_body = None if soft is None else SoftBody(m)
        self.reset()

    # ------------------------------------------------------------------ set-up helpers
    def _actuator_of(self, joint: int) -> int:
        m = self.model
        hits = np.flatnonzero(
            (m.actuator_trntype == mujoco.mjtTrn.mjTRN_JOINT) & (m.actuator_trnid[:, 0] == joint)
        )
        if hits.size != 1:
            raise ModelError(f"joint {m.joint(joint).name!r} needs exactly one actuator")
        return int(hits[0])

    def _setup_torque_mode(self, cfg: dict[str, Any]) -> None:
        """Turn the arm's position actuators into torque motors (gain 1, no bias): ctrl is then
        the joint torque, clipped at the limits, and actuator_force reports it as effort."""
        from physai_ros.core.motion.limits import load_limits

        limits = load_limits(self.robot).select(self.arm_joints)
        self._kp = np.asarray(cfg["kp"], dtype=float)
        self._kd = np.asarray(cfg["kd"], dtype=float)
        n = len(self.arm_joints)
        if self._kp.shape != (n,) or self._kd.shape != (n,):
            raise InvalidInput(f"{self.robot}: kp and kd need {n} values each")
        self._feedforward = bool(cfg["feedforward"])
        self.torque_limit = limits.torque.copy()
        m, act = self.model, self._arm_act
        m.actuator_gainprm[act] = 0.0
        m.actuator_gainprm[act, 0] = 1.0
        m.actuator_biasprm[act] = 0.0
        m.actuator_biastype[act] = mujoco.mjtBias.mjBIAS_NONE
        m.actuator_ctrllimited[act] = 1
        m.actuator_ctrlrange[act] = np.column_stack([-self.torque_limit, self.torque_limit])
        m.actuator_forcelimited[act] = 1
        m.actuator_forcerange[act] = np.column_stack([-self.torque_limit, self.torque_limit])

    def _home(self, cfg: dict[str, Any]) -> np.ndarray:
        """Full qpos at reset: the keyframe (Panda) or the configured arm and jaw (SO-101)."""
        m = self.model
        qpos = m.qpos0.copy()
        if "home_keyframe" in cfg:
            key = m.key(cfg["home_keyframe"]).id
            robot_nq = self._cube_q  # the cube's free joint comes after the robot's joints
            qpos[:robot_nq] = m.key_qpos[key][:robot_nq]
        else:
            qpos[self._arm_q] = cfg["home"]
            qpos[self._grip_q] = cfg["gripper_home"]
        return qpos

    @property
    def gripper(self) -> GripperActionController:
        """The (first) gripper controller: the jaw of a two-jaw gripper."""
        return next(iter(self.grippers.values()))

    # ------------------------------------------------------------------ state
    @property
    def time(self) -> float:
        """Simulation time [s]; never goes backwards (reset keeps it)."""
        return float(self.data.time)

    def arm_state(self) -> ArmState:
        """Measured arm q [rad], q̇ [rad/s], effort = actuator joint force [N·m] (copies)."""
        d = self.data
        return ArmState(d.qpos[self._arm_q], d.qvel[self._arm_v], d.qfrc_actuator[self._arm_v])

    def joint_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(position, velocity, effort) of ``state_names`` (arm then gripper joints)."""
        d = self.data
        return d.qpos[self._state_q], d.qvel[self._state_v], d.qfrc_actuator[self._state_v]

    def joint_state_into(
        self, position: np.ndarray, velocity: np.ndarray, effort: np.ndarray
    ) -> None:
        """``joint_state`` written into the caller's arrays (no allocation; publish loop)."""
        d = self.data
        d.qpos.take(self._state_q, out=position)  # the methods: half the cost of np.take
        d.qvel.take(self._state_v, out=velocity)
        d.qfrc_actuator.take(self._state_v, out=effort)

    def reference(self) -> np.ndarray:
        """Desired arm (q, q̇, q̈) now, shape (3, n) (copy)."""
        return self.arm.ref.copy()

    def tracking_error(self) -> np.ndarray:
        """q_r − q [rad] per arm joint."""
        return self.arm.ref[0] - self.data.qpos[self._arm_q]

    def tracking_error_into(self, position: np.ndarray, velocity: np.ndarray) -> None:
        """q_r − q [rad] and q̇_r − q̇ [rad/s] written into the caller's arrays."""
        self.data.qpos.take(self._arm_q, out=position)
        np.subtract(self.arm.ref[0], position, out=position)
        self.data.qvel.take(self._arm_v, out=velocity)
        np.subtract(self.arm.ref[1], velocity, out=velocity)

    # ------------------------------------------------------------------ the controllers
    def gripper_status(self, name: str | None = None) -> GripperStatus:
        """Jaw position, actuator effort, and whether a goal runs, of the gripper controller
        ``name`` (None: the first)."""
        name = next(iter(self.grippers)) if name is None else name
        servo = self._servos[name]
        return GripperStatus(
            position=float(self.data.qpos[servo.q]),
            effort=float(self.data.actuator_force[servo.act]),
            active=self.grippers[name].goal_id is not None,
        )

    @property
    def gripper_force_per_effort(self) -> float:
        """Force [N] (or torque) one jaw or finger exerts per unit of the (first) gripper
        actuator's effort: the actuator's moment on its joint (the Panda's finger tendon pulls
        each finger with half its force: 0.5)."""
        servo = next(iter(self._servos.values()))
        d, a, dof = self.data, servo.act, servo.v
        start = int(d.moment_rowadr[a])
        for k in range(start, start + int(d.moment_rownnz[a])):
            if int(d.moment_colind[k]) == dof:
                return abs(float(d.actuator_moment[k]))
        raise ModelError("the gripper actuator does not move the first gripper joint")

    def _control(self) -> None:
        """One controller cycle: measure, update both controllers, command the actuators."""
        d = self.data
        now = float(d.time)
        self.ends += self.arm.update(now, d.qpos[self._arm_q], d.qvel[self._arm_v])
        if self.control == "position":
            d.ctrl[self._arm_act] = self.arm.ref[0]
        for name, grip in self.grippers.items():
            servo = self._servos[name]
            self.ends += grip.update(now, float(d.qpos[servo.q]), float(d.qvel[servo.v]))
            if grip.setpoint != servo.target or grip.effort != servo.effort:
                servo.command(self.model, d, grip.setpoint, grip.effort)
            servo.advance(d)

    def drive_jaw(self, position: float, max_effort: float) -> None:
        """Drive the jaw servo as a gripper goal (``position`` [rad | m], ``max_effort``
        [N·m | N], 0 = the cap: ``goal_effort``) would, now: its force range and min-jerk
        ramp, without the controller's goal bookkeeping. For in-process runners that step
        MuJoCo themselves (``physai lesson soft``) and so squeeze exactly as the bridge
        does; call it before every step."""
        servo = next(iter(self._servos.values()))
        effort = goal_effort(max_effort, servo.default_cap)
        if position != servo.target or effort != servo.effort:
            servo.command(self.model, self.data, position, effort)
        servo.advance(self.data)

    @property
    def _busy(self) -> bool:
        """Whether the controllers need their cycle now (else MuJoCo may take a batch)."""
        return (
            self.arm.following
            or self.arm.streaming
            or any(
                grip.goal_id is not None or grip.travelling or self._servos[name].ramp is not None
                for name, grip in self.grippers.items()
            )
        )

    # ------------------------------------------------------------------ stepping
    def step(self, n: int = 1) -> None:
        """Advance ``n`` physics steps, running the controllers at their rate (the Panda's
        torque loop every step). The controllers run after each step (or batch), so their
        reference belongs to the current sim time: ``tracking_error`` compares like with
        like, and the next step is driven by it."""
        if n < 1:
            return
        t_end = self.data.time + n * self.dt
        m, d = self.model, self.data
        if self.control == "torque":
            for _ in range(n):
                mujoco.mj_step1(m, d)
                self._torque_update()
                mujoco.mj_step2(m, d)
                self._control()
        else:
            every = self._steps_per_update
            left = n
            while left > 0 and self._busy:
                batch = min(every, left)
                mujoco.mj_step(m, d, nstep=batch)
                left -= batch
                self._control()
            if left > 0:  # idle: one batch, then one cycle so the controllers see the state
                mujoco.mj_step(m, d, nstep=left)
                self._control()
        self._after_steps(t_end)

    def advance(self, duration: float) -> int:
        """Advance by ``duration`` [s] (rounded to whole steps, at least one); returns steps."""
        n = max(1, round(duration / self.dt))
        self.step(n)
        return n

    def _torque_update(self) -> None:
        """tau = bias − gravcomp + Kp(q_r − q) + Kd(q̇_r − q̇) [+ M q̈_r − passive + gravcomp],
        clipped (after mj_step1, so bias, M and passive forces belong to the current state)."""
        d = self.data
        tau, ref = self._tau, self.arm.ref
        np.subtract(ref[0], d.qpos[self._arm_q], out=tau)
        tau *= self._kp
        tau += self._kd * (ref[1] - d.qvel[self._arm_v])
        # gravity and Coriolis, less the weight that gravcomp bodies (the Barrett hand's
        # fingers) already carry through passive forces; 0 for a robot without them
        tau += d.qfrc_bias[self._arm_v]
        tau -= d.qfrc_gravcomp[self._arm_v]
        if self._feedforward and self.arm.following:
            self._tmp_nv[self._arm_v] = ref[2]
            mujoco.mj_mulM(self.model, d, self._res_nv, self._tmp_nv)
            tau += self._res_nv[self._arm_v]
            tau -= d.qfrc_passive[self._arm_v]  # springs and dampers (gravcomp included ...)
            tau += d.qfrc_gravcomp[self._arm_v]  # ... and taken off above already)
        np.clip(tau, -self.torque_limit, self.torque_limit, out=tau)
        d.ctrl[self._arm_act] = tau

    def _after_steps(self, t_end: float) -> None:
        number = self.data.warning.number
        warnings = int(number[_BADQACC] + number[_BADQVEL] + number[_BADQPOS])
        if warnings != self._warn_seen:
            self._warn_seen = warnings
            self.instabilities += 1
            self.last_instability = (
                f"simulation diverged (NaN/Inf in qpos, qvel or qacc) near t = {t_end:.3f} s; "
                "reset to home"
            )
            self.data.time = t_end
            self.reset(self.last_instability)
            return
        self.data.time = t_end  # exact: no drift from summing dt

    # ------------------------------------------------------------------ scene
    def reset(self, reason: str = "simulation reset") -> None:
        """Robot home, cube back where it started, velocities zero, sim time unchanged; goals
        end (aborted with ``reason``) and the controllers hold home."""
        m, d = self.model, self.data
        t = d.time
        mujoco.mj_resetData(m, d)
        d.time = t
        d.qpos[:] = self._home_q
        d.qpos[self._cube_q : self._cube_q + 7] = self._cube_home
        for name, servo in self._servos.items():
            servo.reset(m, d, self.grippers[name].p.max_effort)
        mujoco.mj_forward(m, d)
        number = d.warning.number
        self._warn_seen = int(number[_BADQACC] + number[_BADQVEL] + number[_BADQPOS])
        self.ends += self.arm.stop(reason)
        for grip in self.grippers.values():
            self.ends += grip.stop(reason)
        q = d.qpos[self._arm_q].copy()
        self.arm.activate(self.time, q, np.zeros(len(q)))
        for name, grip in self.grippers.items():
            grip.activate(self.time, float(d.qpos[self._servos[name].q]))
        if self.control == "position":
            d.ctrl[self._arm_act] = q

    def place_cube(self, cube_pos: Sequence[float]) -> None:
        """Put the cube at rest at ``cube_pos`` (base frame, (x, y) on the table or (x, y, z))."""
        world = cube_world_pos(cube_pos, self.cube_size, self._base_pos, self._base_yaw)
        d = self.data
        d.qpos[self._cube_q : self._cube_q + 3] = world
        d.qpos[self._cube_q + 3 : self._cube_q + 7] = (1.0, 0.0, 0.0, 0.0)
        d.qvel[self._cube_v : self._cube_v + 6] = 0.0
        self._cube_home = d.qpos[self._cube_q : self._cube_q + 7].copy()
        mujoco.mj_forward(self.model, d)

    def place_soft(self, soft_pos: Sequence[float]) -> None:
        """Move the soft object, at rest and undeformed, to ``soft_pos`` (x, y) [m], base
        frame, on the table: its vertex bodies (children of the world) are shifted in the model
        and their sliders put back to rest, so a later ``reset`` leaves it there too."""
        self._need_soft()
        m, d, verts = self.model, self.data, self._soft_body.verts
        bodies = m.flex_vertbodyid[verts]
        centre = cube_world_pos(soft_pos, self.soft.size, self._base_pos, self._base_yaw)
        rest = self._soft_body.weight @ m.body_pos[bodies]  # its centre of mass at rest
        m.body_pos[bodies, :2] += centre[:2] - rest[:2]
        for body in bodies:
            first, count = m.body_jntadr[body], m.body_jntnum[body]
            for joint in range(first, first + count):
                d.qpos[m.jnt_qposadr[joint]] = m.qpos0[m.jnt_qposadr[joint]]
                d.qvel[m.jnt_dofadr[joint]] = 0.0
        mujoco.mj_forward(m, d)

    def cube_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """Cube centre [m] and orientation quaternion (w, x, y, z) in the world."""
        return self.data.xpos[self._cube_body].copy(), self.data.xquat[self._cube_body].copy()

    def _need_soft(self) -> None:
        if self.soft is None:
            raise InvalidInput("this scene has no soft object (MujocoSim(..., soft=...))")

    def soft_object_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """Soft object: centre of mass [m] and the rotation (w, x, y, z) that best maps its
        rest shape onto the current one, in the world (``SoftBody.pose``)."""
        self._need_soft()
        return self._soft_body.pose(self.data)

    def soft_object_strain(self) -> float:
        """Soft object deformation: the largest edge strain |l / l0 − 1| [m/m]
        (``SoftBody.strain``)."""
        self._need_soft()
        return self._soft_body.strain(self.data)

    # ------------------------------------------------------------------ contacts
    def _jaw_hits(self) -> tuple[np.ndarray, list[int]]:
        """(per-contact jaw indices (ncon, 2), indices k of force-carrying jaw contacts)."""
        d = self.data
        if d.ncon == 0:
            return self._no_jaws, []
        jaws = self._jaw_of_geom[d.contact.geom]  # one vectorised lookup for all contacts
        hits = np.flatnonzero((jaws[:, 0] != jaws[:, 1]) & (d.contact.efc_address >= 0))
        return jaws, hits.tolist()

    def _jaw_contact_forces(self, jaws: np.ndarray, hits: list[int]):
        """Yield (jaw index, contact k, world force on the jaw, world torque, position)."""
        m, d, f6 = self.model, self.data, self._f6
        for k in hits:
            j1, j2 = int(jaws[k, 0]), int(jaws[k, 1])
            mujoco.mj_contactForce(m, d, k, f6)
            contact = d.contact[k]
            frame = contact.frame.reshape(3, 3)
            force = frame.T @ f6[:3]  # on geom2, from geom1 (normal points geom1 -> geom2)
            torque = frame.T @ f6[3:]
            if j2 >= 0:
                yield j2, k, force, torque, contact.pos
            if j1 >= 0:
                yield j1, k, -force, -torque, contact.pos

    def jaw_wrenches(self) -> dict[str, Wrench]:
        """Per jaw: total contact wrench from everything it touches (cube, soft object, table,
        other jaw),
        force [N] and torque about the jaw body origin [N·m], in the jaw body frame."""
        jaws, hits = self._jaw_hits()
        if not hits:
            return self._zero_wrenches
        d = self.data
        sums = np.zeros((len(self.jaw_names), 6))
        counts = [0] * len(self.jaw_names)
        for j, _, force, torque, pos in self._jaw_contact_forces(jaws, hits):
            lever = pos - d.xpos[self._jaw_body[j]]
            sums[j, :3] += force
            sums[j, 3:] += torque + np.cross(lever, force)
            counts[j] += 1
        out = {}
        for j, name in enumerate(self.jaw_names):
            R = d.xmat[self._jaw_body[j]].reshape(3, 3)
            out[name] = Wrench(R.T @ sums[j, :3], R.T @ sums[j, 3:], counts[j])
        return out

    def jaw_force_norms(self) -> np.ndarray:
        """Per jaw (``jaw_names`` order): the magnitude [N] of its ``jaw_wrenches`` force, what
        the pick reads as the jaw's normal force, without the torques (a crushed soft object
        has a hundred jaw contacts, and the torque sums cost 20× the step)."""
        sums = np.zeros((len(self.jaw_names), 3))
        for j, _, force, _, _ in self._jaw_contact_forces(*self._jaw_hits()):
            sums[j] += force
        return np.linalg.norm(sums, axis=1)

    def contact_points(self) -> list[ContactPoint]:
        """Every pressing jaw contact, as the force the jaw applies (for markers)."""
        points = []
        for j, k, force_on_jaw, _, pos in self._jaw_contact_forces(*self._jaw_hits()):
            push = -force_on_jaw
            normal = self.data.contact[k].frame[:3].copy()
            if normal @ push < 0.0:
                normal = -normal
            if np.linalg.norm(push) <= 0.0:
                continue
            mu = float(self.data.contact[k].friction[0])
            points.append(ContactPoint(self.jaw_names[j], pos.copy(), normal, push, mu))
        return points
