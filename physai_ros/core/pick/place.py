"""Placing what the jaw pick holds: the target, its parameters and the arm motion of the place.

After lift the pick machine (:class:`~physai_ros.core.pick.machine.PickMachine`) carries the
object over the place position at a safe height, descends to just above it, lowers it slowly
until it is *sensed* to be supported,
opens the jaw and retreats straight up. Two signals tell that the table carries the object, and
a robot passes whichever it can measure:

* **load**: the vertical force the jaws carry [N] falls below ``support_fraction`` of what they
  carried when the descent began (the simulation's jaw contact forces; a driver's load estimate);
* **stall**: the measured arm joints lag their command by ``stall_lag`` [rad] more than at the
  start of the descent (any position-servoed arm: the table stops the arm, the command goes on),
  against the nearest of the commands of the last ``stall_delay`` [s] (a servo follows some ms
  behind its command; an arm in free descent is on one of them).

The descent is a min-jerk move to ``press`` below the placing height, so a missed signal presses
at most that far; its end plus ``support_wait`` without a signal fails the place with the reason.
When support is sensed mid-move the arm cannot stop at once without an acceleration spike: the
move's clock is slowed to rest along the same path (:class:`Brake`), within the joint limits.

Without sensing (``sense_support`` false) the descent ends at the placing height itself and the
jaw opens there: for a stiff arm that a press into the table would trip (a Franka's Cartesian
reflex), and whose place height is known. The object is then released where it was told to go,
and a table higher than that is met by the arm's own collision detection, not by a sensed stop.

Pure: no ROS; MuJoCo only through the IK callable the machine is given.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from physai_ros.core.motion.limits import JointLimits, plan_move
from physai_ros.core.motion.time_scaling import JointMove, get_shape, minjerk, poly_from_boundary
from physai_ros.errors import InvalidInput

PLACE_STATES = ("carry", "descend", "lower", "open", "retreat")
SHAPE = "quintic"  # the min-jerk of every pick move (``minjerk`` is its scalar fast path)
# Brake b(x) on x ∈ [0, 1]: b(0) = 0, b'(0) = 1, b''(0) = 0 (joins the move's clock smoothly),
# b'(1) = b''(1) = 0 (at rest). b = x − x³ + x⁴/2: travels 1/2, |b''| peaks at 3/2 (x = 1/2).
_BRAKE = poly_from_boundary(
    [(0.0, 0, 0.0), (0.0, 1, 1.0), (0.0, 2, 0.0), (1.0, 1, 0.0), (1.0, 2, 0.0)], 4
)
BRAKE_TRAVEL = float(np.polyval(_BRAKE[::-1], 1.0))
BRAKE_PEAK_ACCEL = 1.5
# The support's onset while lowering: the arm's lag from its nearest recent command still within
# this fraction of stall_lag (over ROS the free descent's stayed within 3.4 mrad of 10).
ONSET_FRACTION = 0.5


@dataclass(frozen=True)
class PlaceParams:
    """How the pick places (``place`` section of the pick parameters; these are the defaults).

    carry_height, retreat_height [m]: gripper site above the place position while carrying and after
    the release (clear of the object and the table); approach [m]: the sensed descent starts this
    far above the placing height (short, so its joint-space path stays within a fraction of a mm of
    the vertical; a long one bows by millimetres); press [m]: how far below the placing height the
    descent may go without a support signal; lower_speed [m/s]: peak descent speed of the site (a
    slow touch keeps the object upright and the sensing ahead of the press); support_fraction [-],
    min_load [N], stall_lag [rad]: the support signals (module doc; a load below ``min_load`` is too
    small to judge by); stall_delay [s]: how far behind its command a servoed arm in free descent
    may run (the stall is the lag from the nearest of the commands of that last while);
    support_wait [s]: after the descent ends, how long a signal is waited for before the place
    fails; brake_time [s]: shortest stop of the descent once supported; relief [s]:
    shortest move back to where the table stopped the arm (its press relieved) before the jaw opens;
    table_z [m]: the table top in the base frame (a place position below it is inside the table);
    carry, descend, open, retreat [s]: shortest durations of those moves (lengthened to what the
    joint limits need); sense_support: false lowers to the placing height itself and opens there
    (module doc), with no press and no stop.
    """

    carry_height: float = 0.05
    retreat_height: float = 0.07
    approach: float = 0.01
    press: float = 0.015
    lower_speed: float = 0.05
    support_fraction: float = 0.5
    min_load: float = 0.05
    stall_lag: float = 0.01
    stall_delay: float = 0.04
    support_wait: float = 0.3
    brake_time: float = 0.05
    relief: float = 0.15
    table_z: float = 0.0
    carry: float = 1.2
    descend: float = 0.6
    open: float = 0.4
    retreat: float = 0.8
    sense_support: bool = True

    def __post_init__(self) -> None:
        bad = {k: v for k, v in vars(self).items() if not math.isfinite(v)}
        if bad:
            raise InvalidInput(f"place parameters must be finite, got {bad}")
        positive = (
            "carry_height",
            "retreat_height",
            "approach",
            "press",
            "lower_speed",
            "min_load",
        )
        positive += (
            "stall_lag",
            "support_wait",
            "brake_time",
            "relief",
            "carry",
            "descend",
            "open",
        )
        positive += ("retreat",)
        bad = {k: getattr(self, k) for k in positive if getattr(self, k) <= 0.0}
        if bad:
            raise InvalidInput(f"place parameters {sorted(bad)} must be > 0, got {bad}")
        if self.stall_delay < 0.0:
            raise InvalidInput(f"stall_delay must be >= 0 s, got {self.stall_delay}")
        if not 0.0 < self.support_fraction < 1.0:
            raise InvalidInput(f"support_fraction must be in (0, 1), got {self.support_fraction}")

    @classmethod
    def from_tree(cls, section: dict | None) -> PlaceParams:
        """From a parameters tree's ``place`` section (missing keys: the defaults); unknown keys
        are refused with the valid ones, so a typo does not fall back silently."""
        section = section or {}
        unknown = sorted(set(section) - set(cls.__dataclass_fields__))
        if unknown:
            raise InvalidInput(
                f"unknown place parameters {unknown}; valid: {list(cls.__dataclass_fields__)}"
            )
        return cls(**{k: bool(v) if k == "sense_support" else float(v) for k, v in section.items()})


class PlaceTarget(NamedTuple):
    """Where to put the object: its centre [m] in the robot base frame (the IK frame) once it
    rests there. The grasp's orientation is kept (a top-down jaw sets the object down as it
    was picked), so there is no yaw."""

    position: np.ndarray

    @classmethod
    def checked(cls, position: object, params: PlaceParams) -> PlaceTarget:
        """A target from any 3-sequence, refused (``InvalidInput``) if not finite or below the
        table top."""
        try:
            pos = np.asarray(position, dtype=float)
        except (TypeError, ValueError) as err:
            raise InvalidInput(f"place position {position!r} is not 3 numbers [m]") from err
        if pos.shape != (3,) or not np.all(np.isfinite(pos)):
            raise InvalidInput(f"place position must be 3 finite numbers [m], got {position!r}")
        if pos[2] < params.table_z:
            raise InvalidInput(
                f"place position z {pos[2]:.4f} m is below the table top (table_z "
                f"{params.table_z:.4f} m): the object's centre would be inside the table"
            )
        return cls(pos.copy())

    def site_targets(self, params: PlaceParams, grip: np.ndarray) -> dict[str, np.ndarray]:
        """Gripper-site positions [m] of the place: over it (carry), ``approach`` above the
        placing height (where the sensed descent starts), the descent's lowest end (bottom: the
        placing height less ``press``; the placing height itself without sensing) and after
        the release (retreat).

        grip: the object's centre seen from the site, xy [m], and the site's height above the
        centre, z [m] (as the pick's ``offsets.down``): the site goes where the object lands on
        the place with that grip.
        """
        up = np.array([0.0, 0.0, 1.0])
        over = self.position - np.array([grip[0], grip[1], 0.0])
        return {
            "carry": over + up * params.carry_height,
            "approach": over + up * (grip[2] + params.approach),
            "bottom": over + up * (grip[2] - (params.press if params.sense_support else 0.0)),
            "retreat": over + up * params.retreat_height,
        }


def move_duration(
    start: np.ndarray, goal: np.ndarray, limits: JointLimits, shortest: float = 0.0
) -> float:
    """Duration [s] of the min-jerk move ``start → goal`` [rad]: at least ``shortest``, and as
    long as the joint ``limits`` need (their velocity and acceleration at their control period;
    a goal outside a joint's range raises ``LimitViolation`` naming the joint)."""
    move = JointMove(limits.joint_names, start, goal)
    if float(np.max(np.abs(move.delta))) < 1e-12:  # no motion: nothing for the limits to time
        return shortest
    return max(shortest, plan_move(move, SHAPE, limits).duration)


def stoppable_duration(
    start: np.ndarray, goal: np.ndarray, limits: JointLimits, shortest: float = 0.0
) -> float:
    """Duration [s] of a min-jerk move ``start → goal`` [rad] that can be stopped anywhere:
    at least ``shortest`` and √2 times what the limits need, so the move uses at most half of
    each joint's acceleration limit (and 1/√2 of its velocity limit) and a stop anywhere along
    it (:func:`brake`) fits in the other half. Every arm move of the pick is timed so: a cancel
    or an abort can then always slow the arm to rest along its path within the limits, where a
    move timed at the limits could only run to its end."""
    return max(shortest, math.sqrt(2.0) * move_duration(start, goal, limits))


def descent_duration(
    start: np.ndarray, goal: np.ndarray, limits: JointLimits, shortest: float = 0.0
) -> float:
    """Duration [s] of the sensed descent ``start → goal`` [rad]: a :func:`stoppable_duration`,
    since support can be sensed anywhere along it."""
    return stoppable_duration(start, goal, limits, shortest)


class Brake(NamedTuple):
    """A min-jerk move ``qa + s(σ) dq`` slowed to rest from its clock at ``t0`` [s]: the move
    ran ``σ = (t − start) / T`` until ``t0``, then ``σ = u0 + (D / T) b((t − t0) / D)`` with
    ``b`` the module's brake, so velocity and acceleration stay continuous and shrink to zero.
    """

    t0: float
    u0: float
    T: float
    D: float

    def u(self, t: float) -> float:
        """The move's clock σ at ``t`` [s] (before ``t0``: the move as it ran, so the rates of
        a stop sampled from its start are the move's)."""
        if t < self.t0:
            return self.u0 + (t - self.t0) / self.T
        x = min(1.0, (t - self.t0) / self.D)
        return self.u0 + self.D / self.T * float(np.polyval(_BRAKE[::-1], x))

    @property
    def u_end(self) -> float:
        return self.u0 + self.D / self.T * BRAKE_TRAVEL


def brake(
    t0: float, u0: float, T: float, dq: np.ndarray, limits: JointLimits, shortest: float
) -> Brake:
    """The stop of a min-jerk move of ``dq`` [rad] over ``T`` [s] at clock ``u0``, lasting the
    longer of ``shortest`` [s] and what the acceleration limit needs.

    Why the bound holds: q'' = dq (s''(σ) σ'² + s'(σ) σ''), with σ' ≤ 1/T and |σ''| ≤ 1.5/(T D),
    so |q''| ≤ |dq| (peak s''/T² + 1.5 peak s'/(T D)); the move alone is inside the limit (it was
    timed by them), and D is chosen so the second term fits the rest. Velocity only falls.
    """
    shape = get_shape(SHAPE)
    dq = np.abs(np.asarray(dq, dtype=float))
    spare = limits.acceleration - dq * shape.peak(2) / T**2
    with np.errstate(divide="ignore"):
        need = np.where(dq > 0.0, BRAKE_PEAK_ACCEL * shape.peak(1) * dq / (T * spare), 0.0)
    if np.any(spare <= 0.0):
        raise InvalidInput(f"the descent of {T:.3f} s leaves no acceleration to stop it with")
    return Brake(t0, u0, T, max(shortest, float(np.max(need))))


def own_brake(t0: float, u0: float, T: float, shortest: float) -> Brake:
    """The stop of a min-jerk move over ``T`` [s] at clock ``u0`` when no joint limits are
    known: it adds at most the move's own peak acceleration (so the arm stays within twice what
    its configured duration asks), lasting the longer of ``shortest`` [s] and 1.5 s'ₘₐₓ T / s''ₘₐₓ
    (about half the move; :func:`brake`'s bound with the move's peak as the spare)."""
    shape = get_shape(SHAPE)
    return Brake(t0, u0, T, max(shortest, BRAKE_PEAK_ACCEL * shape.peak(1) * T / shape.peak(2)))


def support_onset(
    lowering: Sequence[tuple[float, np.ndarray, np.ndarray]],
    lag0: np.ndarray,
    stall_lag: float,
    stall_delay: float,
) -> np.ndarray:
    """Where the arm [rad] was, its free-descent sag kept, when the object met the support,
    from the lowering's samples (when [s], the command the arm was nearest [rad], the lag from
    it [rad]; the newest last, taken when support was sensed).

    The newest sample whose lag was within ``ONSET_FRACTION`` of ``stall_lag`` of ``lag0``
    (the lag when lowering began), then ``stall_delay`` [s] further back: the lag is taken
    from the nearest of the last ``stall_delay`` of commands, so it starts to grow that much
    after the arm was stopped (0 for support sensed by the load, which is sensed where the arm
    is). Its measured pose plus ``lag0`` is a command under which the servos push as in the
    free descent, so the arm neither presses nor lifts the object."""
    if not lowering:
        raise InvalidInput("no lowering samples to find the support's onset in")
    bound = ONSET_FRACTION * stall_lag
    off = [float(np.max(np.abs(lag - lag0))) for _, _, lag in lowering]
    free = next((i for i in reversed(range(len(lowering))) if off[i] <= bound), 0)
    before = lowering[free][0] - stall_delay
    onset = next((i for i in reversed(range(free + 1)) if lowering[i][0] <= before), 0)
    _, command, lag = lowering[onset]
    return command - (lag - lag0)


def along(qa: np.ndarray, dq: np.ndarray, u: float) -> np.ndarray:
    """The min-jerk move ``qa + s(u) dq`` [rad] at clock ``u``."""
    return qa + minjerk(u) * dq
