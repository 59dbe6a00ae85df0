"""The scripted pick as a pure state machine: time and sensed inputs in, arm/jaw targets out.

[home →] settle → pre → down → close → lift → hold → done; abort → aborted on trouble; cancel →
canceled from any state on request (the arm slows to rest on its path and holds, the jaw keeps
its command). Given a place position, lift → carry → descend → lower → open → retreat → placed
instead (:mod:`~physai_ros.core.pick.place`: lower ends on sensed support, not a timer).
Given the arm's joint limits (``config/limits_<robot>.yaml``), every arm move — home, pre, down,
lift, the place's and the way home of an abort — is a min-jerk move timed by them with room to
stop anywhere (:func:`~physai_ros.core.pick.place.stoppable_duration`); the configured durations
are the shortest.
``home`` brings the arm from wherever it was measured to its home pose, slowly enough for the
configured peak speed and acceleration (a real arm starts folded at rest); it is skipped when
the arm already is home, as in the simulation and the lesson's sweeps.
Timed states end after their duration. ``close`` ends on a *sensed* condition — both jaws touch
and the jaw is still for ``still_time`` — because how long a jaw takes to seat depends on its
torque cap and the object (0.9 s to 2.7 s in lesson 16); a fixed timer would either lift too
early or waste time. A timeout lifts anyway; the physical outcome test then tells.
That is ``close_mode: cap``, the default. With ``close_mode: force`` the close squeezes to a
target normal force per jaw, the way the robot's gripper does it (its section's
``force_close``): ``servo``, the SO-101, a :class:`~physai_ros.core.pick.force_close.ForceClose`
that sets the jaw's effort until the force has settled within its tolerance; ``grasp``, the
Panda's Franka Hand, whose own force control squeezes once told to: one franka_gripper
``Grasp`` goal, the close ending on its result (``PickSensing.grasp``). Either ends in lift, or
aborts the pick with the reason (a target beyond the cap aborts before anything moves). Each
way is a :class:`~physai_ros.core.pick.closing.Closing` (:func:`jaw_closing`), and the states
around the close are the pick skeleton's (:mod:`~physai_ros.core.pick.skeleton`), which the
three-finger hand's pick shares.

Nothing here calls MuJoCo or ROS: inverse kinematics is injected as a callable, so the same
machine runs lockstep in-process for sweeps and behind the ROS pick node.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import mujoco
import numpy as np

from physai_ros.config import parameters_tree
from physai_ros.core.motion.kinematics import IKResult, solve_ik
from physai_ros.core.motion.limits import JointLimits
from physai_ros.core.motion.time_scaling import get_shape, minjerk
from physai_ros.core.pick.closing import (
    CapClose,
    Closing,
    ClosingSensing,
    ForceClosing,
    GraspClose,
)
from physai_ros.core.pick.force_close import ForceClose, ForceCloseParams, capacity_fault
from physai_ros.core.pick.place import (
    Brake,
    PlaceParams,
    PlaceTarget,
    along,
    brake,
    descent_duration,
    stoppable_duration,
    support_onset,
)
from physai_ros.core.pick.skeleton import Move, PickSkeleton
from physai_ros.errors import InvalidInput

TIMED = ("settle", "pre", "down", "close_ramp", "lift", "hold", "abort")
NEXT = {"settle": "pre", "pre": "down", "down": "close", "close": "lift", "lift": "hold"}
NEXT.update(home="settle", hold="done", abort="aborted", cancel="canceled")
MOVES = {"settle": ("home", "home"), "pre": ("home", "pre"), "down": ("pre", "down")}
MOVES["home"] = ("start", "home")
MOVES.update(lift=("down", "lift"), hold=("lift", "lift"))
PLACE_MOVES = {"carry": ("lift", "carry"), "descend": ("carry", "approach")}
PLACE_MOVES["retreat"] = ("released", "retreat")
PLACE_MOVES["placed"] = ("retreat", "retreat")
JAW_OPEN_STATES = frozenset({"home", "settle", "pre", "down", "abort", "aborted"})
JAW_OPEN_STATES |= {"retreat", "placed"}
MINJERK_PEAK_SPEED = 1.875  # peak of s'(u) for s = 10u³ − 15u⁴ + 6u⁵
MINJERK_PEAK_ACCEL = 10.0 * math.sqrt(3.0) / 3.0  # peak of |s''(u)|
STALL_DELAY_SAMPLES = 9  # commands over the last stall_delay an arm in free descent may be on
TERMINAL = frozenset({"done", "aborted", "placed", "canceled"})
PLACE_NEXT = {"lift": "carry", "carry": "descend", "descend": "lower", "open": "retreat"}
PLACE_NEXT["retreat"] = "placed"
HELD_STATES = (
    "lift",
    "hold",
    "carry",
    "descend",
    "lower",
)  # a force close keeps its squeeze through these
CLOSE_MODES = ("cap", "force")
FORCE_CLOSES = ("servo", "grasp")  # how a robot's gripper squeezes to a target (module doc)
ROBOT_KEYS = ("site", "arm_joints", "jaw_joint", "jaws", "home", "approach", "closing")
ROBOT_KEYS += ("jaw_lever", "force_close", "gripper_action", "grasp_action")
GRASP_KEYS = ("speed", "epsilon_inner", "epsilon_outer")
IKSolver = Callable[[np.ndarray, np.ndarray], IKResult]


@dataclass(frozen=True)
class PickConfig:
    """Timings [s], offsets [m], jaw targets [rad] and thresholds of the pick (config/pick.yaml)."""

    durations: dict[str, float]
    offsets: dict[str, float]
    close_timeout: float = 4.0
    still_speed: float = 0.05
    still_time: float = 0.1
    pose_timeout: float = 0.5
    pose_wait: float = 2.0
    jaw_open: float = 0.85
    jaw_closed: float = -0.17453
    min_lift: float = 0.04
    empty_margin: float = 0.05
    eject_distance: float = 0.30
    home_speed: float = 1.0
    home_accel: float = 2.0
    ik: dict[str, float] = field(default_factory=dict)
    robot: dict[str, object] = field(default_factory=dict)
    ros: dict[str, float] = field(default_factory=dict)
    close_mode: str = "cap"
    force: ForceCloseParams | None = None  # the force close's, with close_mode force
    grasp: dict[str, float] = field(default_factory=dict)  # speed [m/s], epsilon_* [m]
    place: PlaceParams = field(default_factory=PlaceParams)  # used only with a place target

    def __post_init__(self) -> None:
        if self.close_mode not in CLOSE_MODES:
            raise InvalidInput(f"close_mode {self.close_mode!r} unknown; valid: {CLOSE_MODES}")
        if self.close_mode == "force" and self.force is None:
            raise InvalidInput("close_mode force needs the force section's parameters")
        if self.robot.get("force_close", "servo") not in FORCE_CLOSES:
            raise InvalidInput(
                f"force_close {self.robot['force_close']!r} unknown; valid: {FORCE_CLOSES}"
            )
        if self.grasping:
            bad = {k: self.grasp.get(k) for k in GRASP_KEYS}
            if not all(v is not None and math.isfinite(v) and v >= 0.0 for v in bad.values()):
                raise InvalidInput(f"grasp needs finite {list(GRASP_KEYS)} >= 0, got {bad}")
            if self.grasp["speed"] <= 0.0 or not self.robot.get("grasp_action"):
                raise InvalidInput(
                    "force_close grasp needs grasp.speed > 0 and the robot's grasp_action"
                )
        missing = [k for k in TIMED if k not in self.durations]
        if missing:
            raise InvalidInput(f"pick durations lack {missing}; required: {list(TIMED)}")
        for key, value in self.durations.items():
            if not math.isfinite(value) or value <= 0.0:
                raise InvalidInput(f"duration {key!r} must be > 0 [s], got {value!r}")
        for key in ("pre", "down", "lift"):
            if key not in self.offsets:
                raise InvalidInput(f"pick offsets lack {key!r}; required: ['pre', 'down', 'lift']")
        for key in (
            "close_timeout",
            "still_speed",
            "still_time",
            "pose_timeout",
            "home_speed",
            "home_accel",
        ):
            if getattr(self, key) <= 0.0:
                raise InvalidInput(f"{key} must be > 0, got {getattr(self, key)!r}")
        if not 0.0 <= self.pose_wait < math.inf:
            raise InvalidInput(f"pose_wait must be >= 0 [s], got {self.pose_wait!r}")

    @property
    def grasping(self) -> bool:
        """Whether the close is one franka_gripper Grasp (close_mode force, force_close grasp)."""
        return self.close_mode == "force" and self.robot.get("force_close") == "grasp"


def robot_tree(tree: dict, robot: str) -> dict:
    """``tree`` as the pick of ``robot`` reads it: the robot section's ``overrides`` merged over
    the top-level entries (the SO-101's), and no section's ``overrides`` left (they are
    defaults, not parameters of their own: a params file sets the top-level names)."""

    def merge(base: dict, over: dict) -> dict:
        out = dict(base)
        for key, value in over.items():
            nested = isinstance(value, dict) and isinstance(out.get(key), dict)
            out[key] = merge(out[key], value) if nested else value
        return out

    section = tree.get(robot)
    over = section.get("overrides", {}) if isinstance(section, dict) else {}
    out = merge(tree, over)
    for key, value in out.items():
        if isinstance(value, dict) and "arm_joints" in value:
            out[key] = {k: v for k, v in value.items() if k != "overrides"}
    return out


def load_pick_tree(path: str | Path | None = None, robot: str = "so101") -> dict:
    """The ``/**: ros__parameters`` tree of ``config/pick.yaml`` (or ``path``) for ``robot``
    (``robot_tree``: its overrides applied)."""
    if path is None:
        from physai_ros.paths import config_path

        path = config_path("pick.yaml")
    return robot_tree(parameters_tree(path), robot)


def pick_config(tree: dict, robot: str = "so101") -> PickConfig:
    """A frozen :class:`PickConfig` from a parameters tree (``load_pick_tree``, or the pick
    node's declared parameters, nested again)."""
    if robot not in tree:
        robots = [k for k, v in tree.items() if isinstance(v, dict) and "arm_joints" in v]
        raise InvalidInput(f"pick config has no robot {robot!r}; valid: {robots}")
    nested = ("durations", "offsets", "ik", "robot", "ros", "close_mode", "force", "grasp")
    nested += ("place",)
    scalars = {
        k: float(tree[k]) for k in PickConfig.__dataclass_fields__ if k in tree and k not in nested
    }
    mode = str(tree.get("close_mode", "cap"))
    ros = {k: float(v) for k, v in tree.get("ros", {}).items()}
    missing = [k for k in ROBOT_KEYS if k not in tree[robot]]
    if missing:
        raise InvalidInput(f"pick config section {robot!r} lacks {missing}")
    return PickConfig(
        durations={k: float(v) for k, v in tree["durations"].items()},
        offsets={k: float(v) for k, v in tree["offsets"].items()},
        ik={k: float(v) for k, v in tree.get("ik", {}).items()},
        robot=dict(tree[robot]),
        ros=ros,
        close_mode=mode,
        force=force_params(tree, robot) if mode == "force" else None,
        grasp={k: float(v) for k, v in tree.get("grasp", {}).items()},
        place=PlaceParams.from_tree(tree.get("place")),
        **scalars,
    )


def force_params(tree: dict, robot: str = "so101") -> ForceCloseParams:
    """The force close's parameters from a pick parameters tree: its ``force`` section, the
    cap (``jaw_torque_cap``), the robot's jaw lever, the closed jaw and the touch threshold."""
    try:
        force = {k: float(v) for k, v in tree["force"].items()}
        return ForceCloseParams(
            target=force["target"],
            tolerance=force["tolerance"],
            contact=force["contact"],
            settle_time=force["settle_time"],
            timeout=force["timeout"],
            update_period=force["update_period"],
            gain=force["gain"],
            preshape=force["preshape"],
            cap=float(tree["jaw_torque_cap"]),
            lever=float(tree[robot]["jaw_lever"]),
            jaw_closed=float(tree["jaw_closed"]),
            touch=float(tree["ros"]["touch_force"]),
            still_speed=float(tree["still_speed"]),
        )
    except KeyError as err:
        raise InvalidInput(f"close_mode force: the pick config lacks {err}") from err


def load_pick_config(path: str | Path | None = None, robot: str = "so101") -> PickConfig:
    """Read ``config/pick.yaml`` (or ``path``) into a frozen :class:`PickConfig` for ``robot``."""
    return pick_config(load_pick_tree(path, robot), robot)


class PickCommand(NamedTuple):
    """Targets for one control step: arm joints [rad], the jaw joint [rad] and the jaw's
    effort [N·m] (nan: the jaw torque cap, as the cap-based close uses throughout)."""

    arm: np.ndarray
    jaw: float
    effort: float = math.nan


class PickSensing(NamedTuple):
    """What the sensors say after a step.

    both_touch: both jaws push on the object; jaw_speed: jaw joint speed [rad/s];
    cube_pos: object centre in the IK frame [m] or None if unseen; cube_stamp: when that pose
    was measured [s] (same clock as ``now``); jaw: jaw joint position [rad], jaw_forces:
    (fixed, moving) jaw normal forces [N] and jaw_acked: the jaw controller has taken the last
    jaw command (a goal still in flight has not acted yet), read by the force close only;
    grasp: the Grasp goal's result, (success, error), once it came (force_close grasp only);
    load: the vertical force the jaws carry [N] (nan: not sensed) and arm: the measured arm
    joints [rad] (None: not sensed), read while lowering to place (either tells support:
    :mod:`~physai_ros.core.pick.place`); arm_stamp: when ``arm`` was measured [s], on the
    machine's clock (None: at ``now``), so the arm is compared with what it was commanded at
    that instant (a joint state a few ms old, against the command of now, reads the descent's
    own speed as lag).
    """

    both_touch: bool = False
    jaw_speed: float = 0.0
    cube_pos: np.ndarray | None = None
    cube_stamp: float | None = None
    jaw: float = math.nan
    jaw_forces: tuple[float, float] = (0.0, 0.0)
    jaw_acked: bool = True
    grasp: tuple[bool, str] | None = None
    load: float = math.nan
    arm: np.ndarray | None = None
    arm_stamp: float | None = None


Stamped = tuple[np.ndarray, float]  # a position [m] and when it held [s]


def object_estimate(
    measured: Stamped | None, given: np.ndarray | None, now: float, max_age: float, gripped: bool
) -> Stamped | None:
    """Where the pick takes the object to be: a measured pose no older than ``max_age`` [s],
    else the position the user gave (fresh by definition: it is where they put the object),
    else the last measured one (stale: the machine waits or says so).

    Once ``gripped`` (the close has ended) only a measurement counts: the given position is
    where the object sat before it was picked. Offered at the end of the lift it reads as the
    object hanging a lift height below the jaws, and the place, which shifts its targets by
    where the object sits in them, stopped that much high. Without a measurement the grasp is
    taken as planned."""
    if gripped or given is None:
        return measured
    if measured is not None and now - measured[1] <= max_age:
        return measured
    return np.asarray(given, dtype=float), now


def home_duration(start: np.ndarray, home: np.ndarray, speed: float, accel: float) -> float:
    """Shortest min-jerk move [s] from ``start`` to ``home`` [rad] whose peak joint speed stays
    within ``speed`` [rad/s] and peak acceleration within ``accel`` [rad/s²] (0 if there)."""
    dq = float(np.max(np.abs(np.asarray(home, dtype=float) - np.asarray(start, dtype=float))))
    return max(MINJERK_PEAK_SPEED * dq / speed, math.sqrt(MINJERK_PEAK_ACCEL * dq / accel))


class PickMachine(PickSkeleton):
    """[home →] settle → pre → down → close → lift → hold → done, with a sensed close and an
    abort path.

    config: timings and thresholds; ik: ``ik(target_pos [m], q_init) -> IKResult`` for the arm
    joints (orientation fixed by the caller); home: arm joints at rest [rad]; t0: start [s];
    start: the measured arm joints [rad] (default: at home). Targets for pre/down/lift are
    solved once, from the cube pose seen when settle ends.

    limits: the arm's :class:`JointLimits` (``load_limits(robot, set)``; the arm joints are
    selected from it). With them every arm move is timed within them, and a :meth:`cancel` or an
    :meth:`abort` stops the arm within them; without them (a lift-and-hold only) the moves keep
    their configured durations and a stop adds at most a move's own peak acceleration.

    place: where to put the object, its centre [m] in the IK frame (default None: lift and hold).
    Then lift → carry → descend → lower → open → retreat → placed
    (:mod:`~physai_ros.core.pick.place`), every move of those timed within ``limits`` (the arm's
    :class:`JointLimits`, required with a place). A place that is not finite, below the table or out
    of the IK's reach is refused here (``InvalidInput``), before anything moves.

    The close is the configured way's :class:`~physai_ros.core.pick.closing.Closing`
    (:func:`jaw_closing`); states, stops, abort and cancel are the
    :class:`~physai_ros.core.pick.skeleton.PickSkeleton`'s.
    """

    TERMINAL = TERMINAL
    HOME_TOLERANCE = 1e-3  # [rad] an arm this close to home skips the home move

    def __init__(
        self,
        config: PickConfig,
        ik: IKSolver,
        home: np.ndarray,
        t0: float = 0.0,
        start: np.ndarray | None = None,
        place: Sequence[float] | np.ndarray | None = None,
        limits: JointLimits | None = None,
    ):
        self.cfg, self.ik = config, ik
        self.poses: dict[str, np.ndarray] = {"home": np.asarray(home, dtype=float).copy()}
        self.poses["start"] = self.poses["home"] if start is None else np.asarray(start, float)
        if self.poses["start"].shape != self.poses["home"].shape or not np.all(
            np.isfinite(self.poses["start"])
        ):
            raise InvalidInput(f"start pose {start!r} must match home {home!r} and be finite")
        arm_joints = list(config.robot["arm_joints"])
        lim = None if limits is None else limits.select(arm_joints)
        travel = home_duration(self.poses["start"], home, config.home_speed, config.home_accel)
        if lim is not None:  # a start just outside a joint's range keeps the config's
            with contextlib.suppress(InvalidInput):
                travel = stoppable_duration(self.poses["start"], home, lim, travel)
        first = (
            "home" if np.max(np.abs(self.poses["start"] - home)) > self.HOME_TOLERANCE else "settle"
        )
        self._start_skeleton(first, t0, lim, dict(config.durations, home=travel))
        self.brake_time = config.place.brake_time
        self._abort_jaw = (config.jaw_open, math.nan)  # (jaw [rad], effort [N·m]) of an abort
        self.ik_error = math.nan  # [m] worst IK position error of the pick targets
        self._abort_from, self._abort_to = self.poses["home"], self.poses["home"]
        if config.force is not None and config.close_mode == "force":
            fault = capacity_fault(config.force)
            if fault is not None:  # before anything moves: open the jaw, go (stay) home
                self._abort_from, self.abort_reason = self.poses["start"], fault
                self.state, self.entered = "abort", [("abort", float(t0))]
        # (start [rad], change [rad], duration [s], jaw [rad]) of the current timed state's
        # blend, built on first use: command() runs every physics step of a sweep
        self._segment: tuple[np.ndarray, np.ndarray, float, float] | None = None
        self.place: PlaceTarget | None = None
        self._lift_site = np.full(3, np.nan)  # [m] site target of lift (from the cube pose)
        self.support_by: str | None = None  # "load" | "stall" once lowering sensed support,
        # "height" released at the placing height (sense_support false)
        self._brake: Brake | None = None
        self._load0: float | None = None  # [N] the jaws' load when lowering began
        self._lag0: np.ndarray | None = None  # [rad] command − measured arm then (its sag)
        self._lowering: list[tuple[float, np.ndarray, np.ndarray]] = []  # see support_onset
        self._open_at = 0.0  # [s] into open when the jaw starts opening (after the relief)
        if place is not None:
            self._check_place(place, limits)

    def _check_place(self, place: Sequence[float] | np.ndarray, limits: JointLimits | None) -> None:
        """Refuse a place the arm cannot do before anything moves: not finite, below the table,
        out of the IK's reach or of a joint's range, or no limits to time its moves by."""
        if limits is None:
            raise InvalidInput("a place target needs the arm's joint limits (limits=...)")
        self.place = PlaceTarget.checked(place, self.cfg.place)
        self.grip = np.array([0.0, 0.0, self.cfg.offsets["down"]])  # [m] object → site, planned
        self._place_poses(self.poses["home"], "place target")

    def _place_poses(self, q: np.ndarray, what: str) -> dict[str, np.ndarray]:
        """Arm joints [rad] of the place's site targets, each solved from the previous one's
        (from ``q`` first); ``InvalidInput`` names the target the IK or a joint range refuses."""
        sites = self.place.site_targets(self.cfg.place, self.grip)
        poses = {}
        for name, target in sites.items():
            result = self.ik(target, q)
            if not result.converged:
                raise InvalidInput(
                    f"{what} {np.round(self.place.position, 4).tolist()} m is out of reach: IK did "
                    f"not converge for its {name} target {np.round(target, 4).tolist()} m "
                    f"(error {result.error * 1e3:.1f} mm)"
                )
            q = poses[name] = np.asarray(result.q, dtype=float)
            lim = self.limits
            outside = (q < lim.position_min) | (q > lim.position_max)
            if outside.any():
                j = int(np.flatnonzero(outside)[0])
                raise InvalidInput(
                    f"{what} {np.round(self.place.position, 4).tolist()} m: its {name} pose puts "
                    f"joint {lim.joint_names[j]!r} at {q[j]:.4f} rad, outside "
                    f"[{lim.position_min[j]:.4f}, {lim.position_max[j]:.4f}] rad"
                )
        return poses

    @property
    def force_close(self) -> ForceClose | None:
        """The servo force close's law (``close_mode: force``, ``force_close: servo``), from the
        close on (None before, and for the other ways)."""
        return self.closing.closes[0] if isinstance(self.closing, ForceClosing) else None

    def command(self, now: float) -> PickCommand:
        """Arm and jaw targets at time ``now`` [s]: min-jerk between poses; the closing's jaw
        command in close."""
        cfg, t = self.cfg, now - self.t_state
        if self.state == "close":
            return PickCommand(self.poses["down"], *self.closing.command(now)[0])
        if self.state in ("cancel", "canceled"):
            return PickCommand(self._cancel_arm(now), *self._cancel_grip)
        if self.state in ("abort", "aborted"):
            return PickCommand(self._abort_arm(now), *self._abort_jaw)
        if self.state in ("lower", "open"):
            return self._lower_command(now, t)
        if self._segment is None:
            a, b = PLACE_MOVES.get(self.state) or MOVES.get(self.state, ("lift", "lift"))
            qa = self.poses[a]
            jaw = cfg.jaw_open if self.state in JAW_OPEN_STATES else cfg.jaw_closed
            self._segment = (qa, self.poses[b] - qa, self.durations.get(self.state, 1.0), jaw)
        qa, dq, duration, jaw = self._segment
        return PickCommand(qa + minjerk(t / duration) * dq, jaw, self._held_effort(jaw))

    def _lower_command(self, now: float, t: float) -> PickCommand:
        """The descent (min-jerk carry → bottom, braked to rest once supported) with the jaw
        held closed in lower and opened by a min-jerk ramp in open."""
        cfg, qa = self.cfg, self.poses["approach"]
        dq = self.poses["bottom"] - qa
        if self.state == "lower":
            arm = along(qa, dq, t / self.durations["lower"])
            return PickCommand(arm, cfg.jaw_closed, self._held_effort(cfg.jaw_closed))
        u = minjerk((t - self._open_at) / self.cfg.place.open)
        arm = self._open_arm(now, t)
        return PickCommand(arm, cfg.jaw_closed + u * (cfg.jaw_open - cfg.jaw_closed))

    def _open_arm(self, now: float, t: float) -> np.ndarray:
        """The arm in open, ``t`` [s] after it began: the descent braked, then the relief."""
        qa = self.poses["approach"]
        dq = self.poses["bottom"] - qa
        braked = self.poses["braked"]
        if t < self._brake.D:
            arm = along(qa, dq, self._brake.u(now))
        else:  # the relief: back to where the table stopped the arm, then the jaw opens
            relief = self._open_at - self._brake.D
            u = (t - self._brake.D) / relief if relief > 0.0 else 1.0
            arm = along(braked, self.poses["released"] - braked, u)
        return arm

    def _arm(self, now: float) -> np.ndarray:
        return self.command(now).arm

    def _grip(self, now: float) -> tuple[float, float]:
        cmd = self.command(now)
        return cmd.jaw, cmd.effort

    def _state_move(self) -> Move | None:
        """The min-jerk move under way: (start [rad], change [rad], duration [s], when it
        began [s]), None in a state where the arm rests (settle, close, hold) or follows a path
        of its own (open, a cancel)."""
        state, t0 = self.state, self.t_state
        if state == "lower":
            qa = self.poses["approach"]
            return qa, self.poses["bottom"] - qa, self.durations["lower"], t0
        pair = PLACE_MOVES.get(state) or MOVES.get(state)
        if pair is None or state in TERMINAL or pair[0] == pair[1]:
            return None
        qa = self.poses[pair[0]]
        return qa, self.poses[pair[1]] - qa, self.durations[state], t0

    def _stop_path(self, now: float) -> tuple[Callable[[float], np.ndarray], float] | None:
        """The skeleton's stop (:meth:`PickSkeleton._stop_path`), but open runs its own short
        stop and relief to their end (inside the limits)."""
        if self.state == "open":
            t0 = self.t_state
            end = t0 + self._open_at
            return (lambda time: self._open_arm(time, time - t0), end) if now < end else None
        return super()._stop_path(now)

    def _held_effort(self, jaw: float) -> float:
        """The jaw effort [N·m] after a force close that ended in a grip: the force close's,
        which keeps the squeeze at its target through lift and hold (nan elsewhere: the cap)."""
        if self.closed and self.closing is not None and jaw == self.cfg.jaw_closed:
            return self.closing.held_efforts()[0]
        return math.nan

    def wants_contacts(self, now: float, jaw_speed: float) -> bool:
        """Whether a contact reading can change what :meth:`update` decides at ``now``.

        Only in close, after the jaw ramp, with the jaw slower than ``still_speed``: elsewhere
        ``both_touch`` is ignored, so a lockstep loop may skip reading contacts (the costly
        part of sensing) and pass ``both_touch=False`` with the same result.
        """
        return self.state == "close" and self.closing.needs_contacts(now, (jaw_speed,))

    def update(self, now: float, sensed: PickSensing) -> str:
        """Advance with what the sensors say after a step; returns the (possibly new) state."""
        cfg, t = self.cfg, now - self.t_state
        if self.state in TERMINAL:
            return self.state
        if self.closed and self.state in HELD_STATES:  # the squeeze kept at its target
            self.closing.hold(now, closing_sensing(sensed))
        if self.state == "close":
            self._close_step(now, closing_sensing(sensed), "lift")
        elif self.state == "lower":
            self._lower_update(now, t, sensed)
        elif t >= self.durations[self.state] - 1e-9:
            if self.state == "settle":
                if (
                    not self._pose_fresh(now, sensed)
                    and t < self.durations["settle"] + cfg.pose_wait
                ):
                    return self.state  # the arm rests at home: a late cube pose is waited for
                self._plan(now, sensed)
                if self.state == "abort":
                    return self.state
            if self.state == "lift" and self.place is not None:
                self._plan_place(now, sensed)
                if self.state == "abort":
                    return self.state
            nxt = PLACE_NEXT.get(self.state) if self.place is not None else None
            self._enter(nxt or NEXT[self.state], now)
        return self.state

    def _lower_update(self, now: float, t: float, sensed: PickSensing) -> None:
        """End the descent on a support signal (the brake starts here, then open), or fail it
        when the move has ended and ``support_wait`` passed without one."""
        p = self.cfg.place
        if not p.sense_support:  # lowered to the placing height itself: release there
            if t >= self.durations["lower"] - 1e-9:
                self._release_in_place(now)
            return
        by = None
        if math.isfinite(sensed.load):
            if self._load0 is None:
                self._load0 = sensed.load
            if self._load0 >= p.min_load and sensed.load < p.support_fraction * self._load0:
                by = "load"
        lag = None
        if sensed.arm is not None:
            at = now if sensed.arm_stamp is None else min(now, max(self.t_state, sensed.arm_stamp))
            commanded, lag = self._stall_lag(at, np.asarray(sensed.arm, float))
            self._lowering.append((at, commanded, lag))
            if by is None and float(np.max(np.abs(lag - self._lag0))) > p.stall_lag:
                by = "stall"
        if by is not None:
            self._release(now, t, by, lag)

        elif t > self.durations["lower"] + p.support_wait:
            self.abort(
                now,
                f"no support sensed lowering to place: the descent ended {p.press * 100:.1f} cm "
                f"below the placing height and {p.support_wait:g} s passed",
            )

    def _stall_lag(self, at: float, arm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The lowering's command the measured ``arm`` [rad] at ``at`` [s] is closest to, among
        those of the last ``stall_delay`` [s], and the lag from it (command − measured) [rad].

        Why not the command of ``at`` alone: a servoed arm follows its command some ms behind
        (over ROS, the simulated arm ran 17 ms behind: 7 mrad at the descent's peak speed, most
        of ``stall_lag``); an arm in free descent is on one of its recent commands, an arm the
        table has stopped falls behind all of them."""
        p = self.cfg.place
        best = None
        for delay in np.linspace(0.0, p.stall_delay, STALL_DELAY_SAMPLES):
            commanded = self.command(max(self.t_state, at - delay)).arm
            lag = commanded - arm
            if self._lag0 is None:  # the first reading, at rest: its lag is the arm's sag
                self._lag0 = lag
            off = float(np.max(np.abs(lag - self._lag0)))
            if best is None or off < best[0]:
                best = (off, commanded, lag)
        return best[1], best[2]

    def _release_in_place(self, now: float) -> None:
        """The descent ended at rest at the placing height (``sense_support`` false): no stop and
        no relief, the jaw opens at once; ``support_by`` "height"."""
        T = self.durations["lower"]
        self._brake = Brake(now, 1.0, T, 0.0)
        self.poses["braked"] = self.poses["released"] = self.poses["bottom"]
        self._open_at = 0.0
        self.durations["open"] = self.cfg.place.open
        self.support_by = "height"
        self._enter("open", now)

    def _release(self, now: float, t: float, by: str, lag: np.ndarray | None) -> None:
        """Supported: brake the descent, then (with the arm measured) move back to where the
        object met the table, its free-descent sag kept, so the jaw opens on an arm that no
        longer presses, then open.

        Why back to the onset and not to where the arm was when support was sensed: the
        stall's lag builds while the arm goes on pressing the object into a compliant table,
        pad or servo (in the simulation, 3-4 mm into the soft contact before 0.01 rad of lag);
        opening the jaw on that press springs the object sideways by millimetres
        (:func:`~physai_ros.core.pick.place.support_onset`)."""
        p, lim = self.cfg.place, self.limits
        qa, T = self.poses["approach"], self.durations["lower"]
        dq = self.poses["bottom"] - qa
        self._brake = brake(now, min(1.0, t / T), T, dq, lim, p.brake_time)
        braked = self.poses["braked"] = along(qa, dq, self._brake.u_end)
        released = braked
        if lag is not None:
            delay = p.stall_delay if by == "stall" else 0.0
            released = support_onset(self._lowering, self._lag0, p.stall_lag, delay)
        self.poses["released"] = released
        # timed as every move of the pick (half the limits): at the limits, the relief of a
        # stall sensed late (the arm pressing while the command went on) bound the whole stop
        relief = stoppable_duration(braked, released, lim, p.relief) if lag is not None else 0.0
        self._open_at = self._brake.D + relief
        self.durations["open"] = self._open_at + p.open
        self.support_by = by
        self._enter("open", now)

    def abort(
        self, now: float, reason: str, start: np.ndarray | None = None, empty: bool = False
    ) -> None:
        """Stop the pick and return home from ``start`` [rad] (default: wherever the arm was
        commanded to be; a controller that stopped the arm holds it elsewhere: pass that).

        A move under way is first slowed to rest along its path (:meth:`_stop_path`: a jump
        from a moving lift or carry to a move home that starts at rest would be an acceleration
        spike), then the way home takes at least ``durations.abort`` and, with joint limits, as
        long as they need (an abort from over a place can be far from home).

        The jaw: in lift, hold, carry, descend and lower it may hold the object, and it stays
        closed (with the force close's effort as it was) all the way home and after, because
        opening it would drop the object wherever the arm happens to be; the user takes it
        from the jaw or sends the next goal. ``empty``: the reason is that nothing is held (the
        jaws closed on nothing, the object fell): then the jaw opens. Elsewhere (before the
        grip, in close, placing it down) nothing is held yet or any more, and the jaw opens, as
        the pick's start expects it.

        A cancel under way is not turned into a move home (the arm holds where it stopped);
        an abort then, like one after the end, does nothing."""
        if self.state in TERMINAL or self.state in ("abort", "cancel"):
            return
        cmd = self.command(now)
        held = self.state in HELD_STATES and not empty
        self._abort_jaw = (cmd.jaw, cmd.effort) if held else (self.cfg.jaw_open, math.nan)
        self._plan_abort(now, self.poses["home"], self.cfg.durations["abort"], start)
        self.abort_reason = reason
        self._enter("abort", now)

    def _entered(self, state: str, now: float) -> None:
        self._segment = None
        if state == "retreat":
            self.durations["retreat"] = stoppable_duration(
                self.poses["released"], self.poses["retreat"], self.limits, self.cfg.place.retreat
            )
        if state == "close":
            self.closing = jaw_closing(self.cfg, now)

    def _pose_fresh(self, now: float, sensed: PickSensing) -> bool:
        """Whether the cube pose is there and no older than ``pose_timeout``."""
        return (
            sensed.cube_pos is not None
            and sensed.cube_stamp is not None
            and now - sensed.cube_stamp <= self.cfg.pose_timeout
        )

    def _plan(self, now: float, sensed: PickSensing) -> None:
        """Solve pre/down/lift targets from the latest cube pose, or abort with the reason (after
        ``pose_wait`` at rest for a fresh one: on a loaded machine a pose can come a few hundred
        ms late, which is no reason to give up a pick that has not moved yet). With joint limits
        the three moves are timed by them too (the configured durations are the shortest), so
        every arm reference of the pick is inside them, not only the place's."""
        waited = f"after waiting {self.cfg.pose_wait:g} s for a fresh one"
        if sensed.cube_pos is None or sensed.cube_stamp is None:
            self.abort(now, f"cube pose missing {waited}")
            return
        age = now - sensed.cube_stamp
        if age > self.cfg.pose_timeout:
            self.abort(
                now, f"cube pose stale: {age:.3f} s old > {self.cfg.pose_timeout} s {waited}"
            )
            return
        cube = np.asarray(sensed.cube_pos, dtype=float)
        q = self.poses["home"]
        errors = []
        for name in ("pre", "down", "lift"):
            target = cube + np.array([0.0, 0.0, self.cfg.offsets[name]])
            result = self.ik(target, q)
            if not result.converged:
                self.abort(
                    now,
                    f"IK did not converge for {name} target {np.round(target, 4).tolist()} m "
                    f"(error {result.error * 1e3:.1f} mm): cube out of reach?",
                )
                return
            self.poses[name] = q = np.asarray(result.q, dtype=float)
            errors.append(result.error)
        self.ik_error = max(errors)
        self._lift_site = cube + np.array([0.0, 0.0, self.cfg.offsets["lift"]])
        if self.limits is None:
            return
        for name, before in (("pre", "home"), ("down", "pre"), ("lift", "down")):
            try:  # the configured duration, or as long as a stoppable move needs
                self.durations[name] = stoppable_duration(
                    self.poses[before], self.poses[name], self.limits, self.cfg.durations[name]
                )
            except InvalidInput as err:  # a pose outside a joint's range
                self.abort(now, f"the {name} move is outside the arm's limits: {err}")
                return

    def _plan_place(self, now: float, sensed: PickSensing) -> None:
        """The place's poses, solved on from the lift pose (the arm's branch stays the one it
        picked with), and its moves timed by the joint limits.

        A fresh object pose at the end of lift tells where the object sits in the jaws (closing
        shifts it a few mm towards the fixed jaw): the site targets move by that offset, so the
        object, not the site, lands on the place. Without one the grasp is taken as planned.
        """
        if self._pose_fresh(now, sensed):
            seen = np.asarray(sensed.cube_pos, float) - self._lift_site
            self.grip = np.array([seen[0], seen[1], -seen[2]])  # site → object, z as offsets
        try:
            self.poses.update(self._place_poses(self.poses["lift"], "place"))
        except InvalidInput as err:  # reachable from home was checked: a different branch
            self.abort(now, str(err))
            return
        p, poses, lim = self.cfg.place, self.poses, self.limits
        self.durations["carry"] = stoppable_duration(poses["lift"], poses["carry"], lim, p.carry)
        self.durations["descend"] = stoppable_duration(
            poses["carry"], poses["approach"], lim, p.descend
        )
        depth = p.approach + (p.press if p.sense_support else 0.0)  # approach → bottom [m]
        slow = get_shape("quintic").peak(1) * depth / p.lower_speed
        self.durations["lower"] = descent_duration(poses["approach"], poses["bottom"], lim, slow)


def jaw_closing(config: PickConfig, t0: float) -> Closing:
    """The jaw's way of closing from ``t0`` [s] for ``config``'s ``close_mode`` (module doc):
    the cap close, the servo force close or the gripper's own Grasp."""
    if config.grasping:  # the hand squeezes with the target
        return GraspClose(t0, config.jaw_closed, config.force.target, config.force.timeout)
    if config.close_mode == "force":
        return ForceClosing([ForceClose(config.force, t0)])
    return CapClose(
        t0,
        config.jaw_open,
        config.jaw_closed,
        config.durations["close_ramp"],
        config.still_speed,
        config.still_time,
        config.close_timeout,
    )


def closing_sensing(sensed: PickSensing) -> ClosingSensing:
    """What the jaw's closing reads of the pick's sensing: the jaw is its one finger."""
    return ClosingSensing(
        (sensed.jaw,),
        (sensed.jaw_speed,),
        (sensed.jaw_forces,),
        (sensed.jaw_acked,),
        sensed.both_touch,
        sensed.grasp,
    )


def grasp_quat(config: PickConfig) -> np.ndarray:
    """Gripper-site orientation for the grasp (scalar-first quaternion, world frame).

    The site's x axis points along the approach (down onto the cube) and its z axis along the
    jaw closing direction, so the jaws close across the cube's faces, not its edges.
    """
    x = np.asarray(config.robot["approach"], dtype=float)
    z = np.asarray(config.robot["closing"], dtype=float)
    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, np.column_stack([x, np.cross(z, x), z]).ravel())
    return quat


def arm_ik(model: mujoco.MjModel, config: PickConfig) -> IKSolver:
    """The pick's IK: the arm joints put the gripper site at a point with the grasp orientation.

    Used by the in-process runner and by the pick node with the same model file, so both
    solve the same problem; a scratch ``MjData`` keeps the caller's state untouched.
    """
    rob = config.robot
    arm = list(rob["arm_joints"])
    quat = grasp_quat(config)
    kw = {k: (int(v) if k == "max_iters" else v) for k, v in config.ik.items()}
    data = mujoco.MjData(model)

    def ik(target: np.ndarray, q_init: np.ndarray) -> IKResult:
        return solve_ik(model, data, rob["site"], target, arm, q_init, quat, **kw)

    return ik


def phase_trajectory(machine: PickMachine, now: float, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """The arm motion of the current timed state, sampled for a FollowJointTrajectory goal.

    Returns ``(times, q)``: times [s] from ``now`` (first sample at ``dt``, last at the state's
    end) and the arm targets [rad] there, shape (n, joints). The controller interpolates
    between samples; at ``dt`` = 20 ms the min-jerk blend is followed to well under 0.1 mrad.
    Empty for ``close`` (the arm holds) and for the terminal states; in ``cancel`` the stop
    to rest, in ``abort`` the stop (if any) and the way home.
    """
    if machine.state == "close" or machine.finished:
        return np.empty(0), np.empty((0, len(machine.poses["home"])))
    if dt <= 0.0 or not math.isfinite(dt):
        raise InvalidInput(f"dt must be > 0 [s], got {dt!r}")
    key = "abort" if machine.state == "abort" else machine.state
    end = machine.t_state + machine.durations[key]
    times = np.arange(now + dt, end, dt)
    times = np.append(times, end) if times.size == 0 or end - times[-1] > 1e-9 else times
    q = np.array([machine.command(t).arm for t in times])
    return times - now, q
