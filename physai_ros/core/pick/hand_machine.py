"""The three-finger pick of a soft object as a pure state machine: the seed's real-hand step.

plan → settle → approach → reach → close → lift → hold → done; abort → aborted on trouble;
cancel → canceled from any state on request (the arm slows to rest on its path within the
limits and holds, the fingers keep their command).

The seed (003) ends its pipeline on the real hand: position-control the fingers to the planned
initial contacts, close under force control until the measured contact forces equal the
simulated ones, then lift. Here, with the Barrett-like hand on the Panda:

* ``plan``: nothing moves until the planner's grasp is in (``planned``; ``plan_failed`` ends
  the pick, aborted, having moved nothing); a force target above what a finger can apply (its
  motor cap / its lever) is refused the same way;
* ``settle``: the arm rests; at its end the object's pose must be fresh (waited for up to
  ``pose_wait``), and the approach, grasp and lift poses are solved for the object where it
  lies (``solve_poses``: an unreachable object aborts before anything moves);
* ``approach``: the arm goes to the palm backed off ``approach_distance`` along its normal; the
  spread goes to the plan's, each finger to its planned inner angle less ``preshape_open``
  (open of its contact, so it reaches around the object);
* ``reach``: the arm moves the palm in along its normal to the planned pose;
* ``close``: each finger a :class:`~physai_ros.core.pick.force_close.ForceClose` of its own (its
  target, its lever): preshape, contact at ``contact_fraction`` of the target, squeeze, settle
  within ``tolerance``; the close ends when all three have settled; a finger that aborts (lost
  contact, never settled, touched early) aborts the pick;
* ``lift`` and ``hold``: the arm raises the palm by ``lift_height`` and holds, the three force
  laws keeping each finger at its target;
* ``abort``: the fingers open to their preshape, and an arm that had left home backs off to the
  approach pose (an abort before any motion ends at once).

Arm moves are requested (:attr:`arm_move`: an id, the joints and a duration) and the pick waits
for each one's result (``HandSensing.move``): over ROS they go through the trajectory node. Given
the Panda's joint limits, each move's duration is the one the jaw pick's moves get (the
configured one at least, and as long as a min-jerk move that can be stopped anywhere within the
limits needs: :func:`~physai_ros.core.pick.place.stoppable_duration`), so the whole pick's arm
reference (:meth:`HandPickMachine.arm_command`), its abort and its cancel stay within them. A
move that fails or gives no result within its duration plus ``move_margin`` aborts the pick
with the reason.

Pure: time and sensed values in, commands out; kinematics injected as ``solve_poses``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from physai_ros.core.motion.limits import JointLimits
from physai_ros.core.pick.closing import ClosingSensing, ForceClosing
from physai_ros.core.pick.force_close import ForceClose, ForceCloseParams
from physai_ros.core.pick.hand_grasp import HandPoses, PlannedGrasp
from physai_ros.core.pick.place import along
from physai_ros.core.pick.skeleton import Move, PickSkeleton
from physai_ros.errors import InvalidInput, PhysaiError

TERMINAL = frozenset({"done", "aborted", "canceled"})
MOVES = {"approach": "reach", "reach": "close", "lift": "hold"}  # a move's state -> the next
MOVE_POSES = {"approach": "approach", "reach": "grasp", "lift": "lift"}  # ... -> its goal pose
DURATIONS = ("settle", "approach", "reach", "lift", "hold", "retreat")
FINGER_KEYS = (
    "preshape_open",
    "contact_fraction",
    "tolerance",
    "settle_time",
    "timeout",
    "update_period",
    "gain",
    "touch",
    "still_speed",
)
SHARED_KEYS = ("tolerance", "settle_time", "timeout", "update_period", "touch", "gain")
SHARED_KEYS += ("still_speed",)  # the ForceCloseParams every finger takes as configured
HAND_KEYS = ("cap", "closed")  # the hand's own facts, from its model (HandKinematics.finger_limits)


@dataclass(frozen=True)
class HandPickConfig:
    """durations [s] (``DURATIONS``; settle and hold timed, the rest the arm moves'); offsets
    [m]; fingers: the force close's per-finger values (``FINGER_KEYS``: preshape_open [rad],
    contact_fraction [-] of the target, tolerance [-], settle_time, timeout, update_period [s],
    gain [-], touch [N], still_speed [rad/s]; and ``HAND_KEYS``, the hand model's: cap [N·m], a
    finger motor's torque limit, closed [rad]: the inner joint's upper limit, where a closing
    finger heads); spread_effort [N·m]; pose_timeout, pose_wait, move_margin [s]."""

    durations: dict[str, float]
    approach_distance: float
    lift_height: float
    fingers: dict[str, float]
    spread_effort: float
    pose_timeout: float = 0.5
    pose_wait: float = 2.0
    move_margin: float = 5.0

    def __post_init__(self) -> None:
        missing = [k for k in DURATIONS if k not in self.durations]
        missing += [f"fingers.{k}" for k in FINGER_KEYS + HAND_KEYS if k not in self.fingers]
        if missing:
            raise InvalidInput(f"hand pick config lacks {missing}")
        values = {
            **{f"durations.{k}": v for k, v in self.durations.items()},
            "approach_distance": self.approach_distance,
            "lift_height": self.lift_height,
            "spread_effort": self.spread_effort,
            "pose_timeout": self.pose_timeout,
            "move_margin": self.move_margin,
            **{f"fingers.{k}": self.fingers[k] for k in ("cap", "preshape_open", "timeout")},
        }
        bad = {k: v for k, v in values.items() if not (math.isfinite(v) and v > 0.0)}
        if not (math.isfinite(self.pose_wait) and self.pose_wait >= 0.0):
            bad["pose_wait"] = self.pose_wait
        if not 0.0 < self.fingers["contact_fraction"] < 1.0 - self.fingers["tolerance"]:
            bad["fingers.contact_fraction"] = self.fingers["contact_fraction"]
        if bad:
            raise InvalidInput(
                f"hand pick values must be finite and > 0 (pose_wait >= 0; contact_fraction in "
                f"(0, 1 - tolerance)): {bad}"
            )

    @classmethod
    def from_tree(cls, tree: dict, hand: dict[str, float]) -> HandPickConfig:
        """From a parameters tree (config/hand_pick.yaml, or the node's parameters nested) and
        the hand model's finger limits ``hand`` (``HAND_KEYS``)."""
        try:
            return cls(
                durations={k: float(tree["durations"][k]) for k in DURATIONS},
                approach_distance=float(tree["approach_distance"]),
                lift_height=float(tree["lift_height"]),
                fingers={k: float(tree["fingers"][k]) for k in FINGER_KEYS}
                | {k: float(hand[k]) for k in HAND_KEYS},
                spread_effort=float(tree["spread_effort"]),
                pose_timeout=float(tree["pose_timeout"]),
                pose_wait=float(tree["pose_wait"]),
                move_margin=float(tree["move_margin"]),
            )
        except KeyError as err:
            raise InvalidInput(f"hand pick config lacks {err}") from err


class HandSensing(NamedTuple):
    """What the pick knows now: fingers' inner joints [rad] and speeds [rad/s] and normal
    forces [N] (F1..F3); acked: each finger's controller has taken its last command (a goal in
    flight has not acted yet); object_pos [m] and object_stamp [s] (same clock as ``now``), or
    None; move: (id, succeeded, message) of the last arm move that ended, or None."""

    fingers: np.ndarray
    speeds: np.ndarray
    forces: np.ndarray
    acked: tuple[bool, bool, bool] = (True, True, True)
    object_pos: np.ndarray | None = None
    object_stamp: float | None = None
    move: tuple[int, bool, str] | None = None


class ArmMove(NamedTuple):
    """An arm move to send: id (new id = a new move), target joints [rad], duration [s]."""

    id: int
    q: np.ndarray
    duration: float


class HandPickMachine(PickSkeleton):
    """The pick (module docstring). ``solve_poses(grasp, object_pos) -> HandPoses`` solves the
    approach, grasp and lift joints (raising ``PhysaiError`` when unreachable); ``home``: the
    arm's joints now [rad]; ``t0``: start [s]; ``limits``: the arm's :class:`JointLimits`, its
    seven joints in ``home``'s order (``load_limits("panda")``): every arm move is then timed
    within them with room to stop anywhere, and an abort or a :meth:`cancel` stops the arm
    within them (None: the configured durations, as a trajectory node would stretch them).

    The fingers' close is a :class:`~physai_ros.core.pick.closing.ForceClosing` of three;
    states, stops, abort and cancel are the
    :class:`~physai_ros.core.pick.skeleton.PickSkeleton`'s. :meth:`arm_command` is the arm's
    reference the moves follow (min-jerk from rest to rest, as the trajectory node shapes one
    timed point)."""

    TERMINAL = TERMINAL

    def __init__(
        self,
        config: HandPickConfig,
        solve_poses: Callable[[PlannedGrasp, np.ndarray], HandPoses],
        home: np.ndarray,
        t0: float,
        limits: JointLimits | None = None,
    ) -> None:
        self.cfg, self.solve_poses = config, solve_poses
        self.home = np.asarray(home, dtype=float)
        if limits is not None and len(limits.joint_names) != self.home.size:
            raise InvalidInput(
                f"hand pick limits name {len(limits.joint_names)} joints "
                f"{list(limits.joint_names)}, the arm has {self.home.size}"
            )
        self._start_skeleton("plan", t0, limits, dict(config.durations))
        self.grasp: PlannedGrasp | None = None
        self.levers = np.full(3, math.nan)
        self.poses: HandPoses | None = None
        self.moved = False  # the arm was sent somewhere (an abort then backs off)
        self.arm_move: ArmMove | None = None
        self._move_count = 0
        self._spread = 0.0
        self._preshape = np.zeros(3)
        self._open = np.zeros(3)  # the fingers' command outside the close
        self._released = False  # an abort let go of the close (the fingers open)
        self._from = self._at = self.home  # [rad] the current move's start and end (or rest)

    @property
    def closes(self) -> list[ForceClose]:
        """Each finger's force close law, from the close on (none after an abort)."""
        if isinstance(self.closing, ForceClosing) and not self._released:
            return self.closing.closes
        return []

    # ------------------------------------------------------------------ the plan
    def planned(self, now: float, grasp: PlannedGrasp, levers: np.ndarray) -> None:
        """The planner's grasp and the fingers' levers [m] (``HandKinematics.levers``): settle
        next, or abort before anything moves if a target is beyond a finger's capacity."""
        if self.state != "plan":
            return
        f = self.cfg.fingers
        capacity = f["cap"] / np.asarray(levers, dtype=float)
        over = [k for k in range(3) if grasp.targets[k] > capacity[k]]
        if over:
            k = over[0]
            self.plan_failed(
                now,
                f"force target {grasp.targets[k]:.3f} N of finger F{k + 1} is above what it can "
                f"apply at its cap: {f['cap']:.3f} N m / lever {levers[k]:.4f} m = "
                f"{capacity[k]:.3f} N",
            )
            return
        self.grasp, self.levers = grasp, np.asarray(levers, dtype=float)
        self._spread = grasp.spread
        self._preshape = np.maximum(grasp.inner - f["preshape_open"], 0.0)
        self._enter("settle", now)

    def plan_failed(self, now: float, reason: str) -> None:
        """No plan (the planner's reason, no service, a bad answer): aborted, nothing moved."""
        self.abort_reason = reason
        self._enter("aborted", now)

    # ------------------------------------------------------------------ commands
    def finger_commands(self) -> list[tuple[float, float]]:
        """Per finger F1..F3: the inner joint's (position [rad], effort [N·m])."""
        if self.state in ("cancel", "canceled"):
            return list(self._cancel_grip)
        if self.closes and self.state in ("close", "lift", "hold", "done"):
            return [tuple(c) for c in self.closing.command(self.t_state)]
        cap = self.cfg.fingers["cap"]
        return [(float(q), cap) for q in self._open]

    def spread_command(self) -> tuple[float, float]:
        """The spread's (position [rad], effort [N·m])."""
        return self._spread, self.cfg.spread_effort

    def arm_command(self, now: float) -> np.ndarray:
        """The arm's reference [rad] at ``now`` [s]: at rest, on a min-jerk move, on an
        abort's stop and way back, or on a cancel's stop."""
        return self._arm(now)

    def _arm(self, now: float) -> np.ndarray:
        state = self.state
        if state in ("cancel", "canceled"):
            return self._cancel_arm(now)
        if state == "abort" or (state == "aborted" and self._abort_to is not None):
            return self._abort_arm(now)
        move = self._state_move()
        if move is None:
            return self._at
        qa, dq, T, began = move
        return along(qa, dq, (now - began) / T)

    def _grip(self, now: float) -> list[tuple[float, float]]:
        return self.finger_commands()

    def _state_move(self) -> Move | None:
        if self.state not in MOVES:
            return None
        return self._from, self._at - self._from, self.durations[self.state], self.t_state

    # ------------------------------------------------------------------ the loop
    def update(self, now: float, sensed: HandSensing) -> str:
        """Advance with what is sensed now; returns the (possibly new) state."""
        if self.state in TERMINAL or self.state == "plan":
            return self.state
        if self.state == "cancel":
            self._cancel_update(now)
        elif self.state == "settle":
            self._settle(now, sensed)
        elif self.state == "close":
            self._close_step(now, finger_sensing(sensed), "lift")
        elif self.state == "hold":
            self.closing.hold(now, finger_sensing(sensed))
            if now - self.t_state >= self.cfg.durations["hold"] - 1e-9:
                self._enter("done", now)
        else:  # approach, reach, lift, abort: wait for the arm move's result
            if self.state == "lift":
                self.closing.hold(now, finger_sensing(sensed))
            self._wait_move(now, sensed)
        return self.state

    def _settle(self, now: float, sensed: HandSensing) -> None:
        """At the end of settle, with a fresh object pose: solve the poses and time the moves
        by the limits (an object out of reach or a pose outside a joint's range aborts before
        anything moves), then approach."""
        cfg, t = self.cfg, now - self.t_state
        if t < cfg.durations["settle"] - 1e-9:
            return
        fresh = (
            sensed.object_pos is not None
            and sensed.object_stamp is not None
            and now - sensed.object_stamp <= cfg.pose_timeout
        )
        if not fresh:
            if t < cfg.durations["settle"] + cfg.pose_wait:
                return  # the arm rests: a late pose is waited for
            what = "missing" if sensed.object_pos is None else "stale"
            self.abort(now, f"object pose {what} after waiting {cfg.pose_wait:g} s for a fresh one")
            return
        try:
            poses = self.solve_poses(self.grasp, np.asarray(sensed.object_pos, float))
        except PhysaiError as exc:
            self.abort(now, str(exc))
            return
        before = self.home
        for name in MOVES:
            goal = getattr(poses, MOVE_POSES[name])
            try:
                self.durations[name] = self._timed(before, goal, cfg.durations[name])
            except InvalidInput as err:
                self.abort(now, f"the {name} move is outside the arm's limits: {err}")
                return
            before = goal
        self.poses = poses
        self._open = self._preshape.copy()
        self._enter("approach", now)

    def _wait_move(self, now: float, sensed: HandSensing) -> None:
        move = self.arm_move
        if sensed.move is not None and sensed.move[0] == move.id:
            _, ok, message = sensed.move
            if self.state == "abort":
                note = "" if ok else f"; backing off failed: {message}"
                self.abort_reason = f"{self.abort_reason}{note}"
                self._enter("aborted", now)
            elif ok:
                self._enter(MOVES[self.state], now)
            else:
                self.abort(now, f"the {self.state} move failed: {message}")
        elif now - self.t_state > move.duration + self.cfg.move_margin:
            what = f"no result for the {self.state} move within {move.duration:g} + "
            what += f"{self.cfg.move_margin:g} s"
            if self.state == "abort":
                self.abort_reason = f"{self.abort_reason}; {what}"
                self._enter("aborted", now)
            else:
                self.abort(now, what)

    def abort(self, now: float, reason: str) -> None:
        """Open the fingers to their preshape and, if the arm has moved, back off to the
        approach pose (a move under way first slowed to rest along its path, the way back
        timed by the limits); nothing moved yet: aborted at once. During a cancel, or after
        the end, it does nothing."""
        if self.state in TERMINAL or self.state in ("abort", "cancel"):
            return
        self.abort_reason = reason
        self._open = self._preshape.copy()
        self._released = True
        if self.moved:
            self._plan_abort(now, self.poses.approach, self.cfg.durations["retreat"])
        self._enter("abort" if self.moved else "aborted", now)

    def cancel(self, now: float) -> None:
        """The skeleton's cancel (:meth:`PickSkeleton.cancel`: the arm slowed to rest within
        the limits, the fingers keeping their command); a stop under way is sent as a new
        :attr:`arm_move` to where it rests, over the stop's duration (its path, to follow it
        exactly: :meth:`~physai_ros.core.pick.skeleton.PickSkeleton.arm_trajectory`)."""
        super().cancel(now)
        if self.state == "cancel":
            self._new_move(self._cancel_arm(self._cancel_rest), self.durations["cancel"])

    def _new_move(self, q: np.ndarray, duration: float) -> None:
        self._move_count += 1
        self.arm_move = ArmMove(self._move_count, q, duration)
        self.moved = True

    def _entered(self, state: str, now: float) -> None:
        if state in MOVES:
            self._from, self._at = self._at, getattr(self.poses, MOVE_POSES[state])
            self._new_move(self._at, self.durations[state])
        if state == "abort":
            self._new_move(self.poses.approach, self.durations["abort"])
        if state == "close":
            self.closing = ForceClosing(
                [self._finger_close(k, now) for k in range(3)],
                [f" of finger F{k + 1}" for k in range(3)],
            )

    def _finger_close(self, k: int, now: float) -> ForceClose:
        f, grasp = self.cfg.fingers, self.grasp
        target = float(grasp.targets[k])
        params = ForceCloseParams(
            target=target,
            cap=f["cap"],
            lever=float(self.levers[k]),
            preshape=float(self._preshape[k]),
            jaw_closed=f["closed"],
            contact=f["contact_fraction"] * target,
            **{key: f[key] for key in SHARED_KEYS},
        )
        return ForceClose(params, now)


def finger_sensing(sensed: HandSensing) -> ClosingSensing:
    """What the fingers' closing reads of the hand's sensing (a finger's one normal force
    stands for both of its contact pair)."""
    forces = [float(f) for f in sensed.forces]
    return ClosingSensing(
        tuple(float(q) for q in sensed.fingers),
        tuple(float(v) for v in sensed.speeds),
        tuple((f, f) for f in forces),
        tuple(sensed.acked),
    )


def plan_request(obj: dict, plan: dict) -> dict:
    """The ``PlanGrasp`` request's fields for the Barrett hand grasping the soft object ``obj``
    (config/hand_pick.yaml ``object``) with the planner settings ``plan`` (its ``plan``)."""
    from physai_ros.core.pick.force_plan import PLANNER_SHAPES

    shape = PLANNER_SHAPES.get(str(obj["shape"]))
    if shape is None:
        raise InvalidInput(
            f"object shape {obj['shape']!r} has no planner primitive; valid: {list(PLANNER_SHAPES)}"
        )
    return {
        "shape": shape,
        "size": float(obj["size"]),
        "spacing": float(plan["spacing"]),
        "hand": "barrett",
        "young": float(obj["young"]),
        "poisson": float(obj["poisson"]),
        "mu": float(obj["mu"]),
        "mass": float(obj["mass"]),
        "cells": int(plan["cells"]),
        "lift_accel": float(plan["lift_accel"]),
        "force_margin": float(plan["force_margin"]),
    }


class HandVerdict(NamedTuple):
    """outcome: held | crushed (held, but strained past the limit) | dropped | not closed |
    no measurement; reason: why, in words."""

    outcome: str
    reason: str


def hand_verdict(
    closed: bool,
    rise: float,
    touching: int,
    strain_peak: float,
    age: float,
    *,
    min_lift: float,
    strain_limit: float,
    max_age: float,
) -> HandVerdict:
    """Lesson 16's test for three fingers, from the object's pose: its centre of mass rose at
    least ``min_lift`` [m] since the close (``rise``) with all three fingers touching it, and
    (not crushed) its largest edge strain from the close on stayed under ``strain_limit``.
    ``age`` [s]: of the oldest reading; older than ``max_age`` judges nothing."""
    if age > max_age or not math.isfinite(age):
        return HandVerdict("no measurement", f"the readings are {age:.2f} s old > {max_age} s")
    if not closed:
        return HandVerdict("not closed", "the force close never settled on all three fingers")
    if not (rise >= min_lift and touching == 3):
        return HandVerdict(
            "dropped",
            f"the object rose {rise * 100:.2f} cm (>= {min_lift * 100:g} needed) with "
            f"{touching} of 3 fingers on it",
        )
    if not strain_peak < strain_limit:
        return HandVerdict(
            "crushed", f"held, but its edge strain reached {strain_peak:.3f} >= {strain_limit}"
        )
    return HandVerdict(
        "held", f"rose {rise * 100:.2f} cm in all three fingers, strain {strain_peak:.3f}"
    )
