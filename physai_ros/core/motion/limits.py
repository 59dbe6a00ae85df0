"""Joint limits as data, and the checks a reference must pass before it is sent (lesson 13).

libfranka rejects a command stream whose per-joint velocity, acceleration or jerk — finite
differences at its 1 ms control period — leave the robot's limits (``rate_limiting.h``). So a
reference is judged *as the robot receives it*: sampled at the control period ``dt``
(:func:`sampled_peaks`). Where a derivative is smooth the sample is its exact value; where it
jumps (a cubic's acceleration at the ends, a linear move's velocity), the jump divided by ``dt``
appears in the next derivative — the finite "∞" of the lesson's table.

:func:`shortest_duration` is the closed form of the same rule: a shape's r-th derivative peaks
at ``|Δq|·peak_r/Tʳ`` and a jump ``J`` of derivative m gives ``|Δq|·J/(Tᵐ·dt^(r-m))``, so each
(joint, limit) pair needs a T that is one power root away; the largest wins. The result is then
verified by sampling. Limits live in ``config/limits_<robot>.yaml`` (several named sets each).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import comb
from pathlib import Path
from typing import NamedTuple, Protocol

import numpy as np
import yaml

from physai_ros.core.motion.time_scaling import JointMove, ShapedMove, TimeScaling, get_shape
from physai_ros.errors import InvalidInput, LimitViolation

__all__ = [
    "JointLimits",
    "Peaks",
    "check_trajectory",
    "check_waypoints",
    "duration_bounds",
    "load_gripper_limits",
    "load_limits",
    "plan_move",
    "sampled_peaks",
    "shortest_duration",
]


RATE_NAMES = ("velocity", "acceleration", "jerk")
"""Limited derivatives, by order 1..3."""

UNITS = {"position": "rad", "velocity": "rad/s", "acceleration": "rad/s²", "jerk": "rad/s³"}

RTOL = 1e-9
"""Relative slack of every comparison against a limit (floating-point noise, not physics)."""


class Reference(Protocol):
    """What the checks need from a reference (``ShapedMove``, ``SplineReference``, ruckig)."""

    joint_names: tuple[str, ...]
    duration: float

    def __call__(self, t: np.ndarray, order: int = 0) -> np.ndarray: ...


@dataclass(frozen=True)
class JointLimits:
    """Per-joint limits of one robot, in ``joint_names`` order; ``inf`` = not limited.

    position_min/max [rad], velocity [rad/s], acceleration [rad/s²], jerk [rad/s³],
    torque [N·m], torque_rate [N·m/s]; control_period [s] is where the rates are measured.
    """

    robot: str
    set_name: str
    joint_names: tuple[str, ...]
    position_min: np.ndarray
    position_max: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    jerk: np.ndarray
    torque: np.ndarray
    torque_rate: np.ndarray
    control_period: float

    @classmethod
    def ranges_only(
        cls, joint_names: Sequence[str], lower: np.ndarray, upper: np.ndarray, period: float
    ) -> JointLimits:
        """Position ranges and no rate limit (a controller that knows only its ranges)."""
        n = len(joint_names)
        free = np.full(n, np.inf)
        return cls(
            "controller",
            "ranges",
            tuple(joint_names),
            np.asarray(lower, float),
            np.asarray(upper, float),
            free,
            free,
            free,
            free,
            free,
            period,
        )

    def rate(self, order: int) -> np.ndarray:
        """The limit on the ``order``-th derivative (1 velocity, 2 acceleration, 3 jerk)."""
        return getattr(self, RATE_NAMES[order - 1])

    def indices(self, joint_names: Sequence[str]) -> np.ndarray:
        """Positions of ``joint_names`` in this robot; unknown names list the valid ones."""
        index = {n: i for i, n in enumerate(self.joint_names)}
        unknown = [n for n in joint_names if n not in index]
        if unknown:
            raise InvalidInput(
                f"unknown joint(s) {unknown} for {self.robot}; valid: {list(self.joint_names)}"
            )
        return np.array([index[n] for n in joint_names], dtype=int)

    def select(self, joint_names: Sequence[str]) -> JointLimits:
        """The limits of ``joint_names`` only, in that order."""
        idx = self.indices(joint_names)
        arrays = {
            k: getattr(self, k)[idx]
            for k in ("position_min", "position_max", "torque", "torque_rate", *RATE_NAMES)
        }
        return JointLimits(
            self.robot,
            self.set_name,
            tuple(joint_names),
            control_period=self.control_period,
            **arrays,
        )


def _vector(data: dict, key: str, n: int, source: str) -> np.ndarray:
    """A per-joint list from YAML (``null`` = unlimited) as a float array."""
    value = data.get(key)
    if value is None:
        return np.full(n, np.inf)
    arr = np.asarray(value, dtype=float)
    if (
        arr.shape != (n,)
        or np.any(np.isnan(arr))
        or (not key.startswith("position") and np.any(arr <= 0))
    ):
        raise InvalidInput(f"{source}: {key} must be {n} positive numbers, got {value!r}")
    return arr


def _limits_file(robot: str, path: str | Path | None) -> Path:
    """``path``, or ``config/limits_<robot>.yaml``; if missing, name the robots that have one.
    A robot built on another's arm (``physai_ros.models.loader.COMPOSED``: the Panda with the
    Barrett hand) has that arm's limits; its hand's joints have none here."""
    from physai_ros.models.loader import COMPOSED
    from physai_ros.paths import share_dir  # colcon, pip and source installs alike

    robot = COMPOSED.get(robot, robot)
    config_dir = share_dir() / "config"
    file = Path(path) if path is not None else config_dir / f"limits_{robot}.yaml"
    if not file.is_file():
        valid = sorted(p.stem.removeprefix("limits_") for p in config_dir.glob("limits_*.yaml"))
        raise InvalidInput(f"no limits file {file} for robot {robot!r}; valid robots: {valid}")
    return file


def load_limits(
    robot: str, set_name: str | None = None, path: str | Path | None = None
) -> JointLimits:
    """Read ``config/limits_<robot>.yaml`` (or ``path``) and pick ``set_name`` (default set)."""
    file = _limits_file(robot, path)
    data = yaml.safe_load(file.read_text())
    sets = data.get("sets", {})
    name = set_name or data.get("default_set")
    if name not in sets:
        raise InvalidInput(f"unknown limit set {name!r} for {robot}; valid: {sorted(sets)}")
    joints = tuple(data["joints"])
    n, src = len(joints), f"{file} set {name!r}"
    pos_min, pos_max = _vector(data, "position_min", n, src), _vector(data, "position_max", n, src)
    if np.any(pos_min >= pos_max):
        raise InvalidInput(f"{src}: position_min must be below position_max")
    period = float(data["control_period"])
    if not period > 0:
        raise InvalidInput(f"{src}: control_period must be > 0 [s], got {period!r}")
    chosen = sets[name]
    return JointLimits(
        robot=str(data.get("robot", robot)),
        set_name=name,
        joint_names=joints,
        position_min=pos_min,
        position_max=pos_max,
        velocity=_vector(chosen, "velocity", n, src),
        acceleration=_vector(chosen, "acceleration", n, src),
        jerk=_vector(chosen, "jerk", n, src),
        torque=_vector(data, "torque", n, src),
        torque_rate=_vector(chosen, "torque_rate", n, src),
        control_period=period,
    )


def load_gripper_limits(
    robot: str, path: str | Path | None = None
) -> dict[str, tuple[float, float]]:
    """Joint -> (velocity, acceleration) of the gripper joints that the limits file keeps apart
    from ``joints`` (its ``gripper`` block: the Panda's fingers, [m/s], [m/s²]); empty if none.

    They are outside ``JointLimits`` because no arm trajectory moves them; the URDF and MoveIt
    still need their speeds.
    """
    file = _limits_file(robot, path)
    data = yaml.safe_load(file.read_text())
    block = data.get("gripper")
    if block is None:
        return {}
    joints = tuple(block["joints"])
    twice = sorted(set(joints) & set(data["joints"]))
    if twice:
        raise InvalidInput(f"{file}: gripper joint(s) {twice} are in `joints` already")
    src = f"{file} gripper"
    velocity = _vector(block, "velocity", len(joints), src)
    acceleration = _vector(block, "acceleration", len(joints), src)
    return {
        name: (float(v), float(a))
        for name, v, a in zip(joints, velocity, acceleration, strict=True)
    }


class Peaks(NamedTuple):
    """Sampled extremes per joint: position min/max [rad] and |velocity|, |acceleration|,
    |jerk| peaks; ``at`` maps each name to the time [s] of its peak per joint."""

    position_min: np.ndarray
    position_max: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    jerk: np.ndarray
    at: dict[str, np.ndarray]


def sampled_peaks(reference: Reference, dt: float) -> Peaks:
    """Extremes of ``reference`` sampled at the control period ``dt`` [s], as a robot sees it.

    Samples run from 3 periods before the start to 3 after the end (rest on both sides). The
    r-th derivative's value at a sample is the largest of its exact value and the r−m-th finite
    difference of every lower derivative m, so jumps count as ``jump/dt``.
    """
    if not dt > 0:
        raise InvalidInput(f"control period dt must be > 0 [s], got {dt!r}")
    if isinstance(reference, ShapedMove):  # every joint is s(t/T) scaled: sample s once
        unit = JointMove(("s",), np.zeros(1), np.ones(1)).shaped(
            reference.shape, reference.duration
        )
        one, dq = _sampled_grid_peaks(unit, dt), reference.move.delta
        ends = reference.move.start + np.outer([one.position_min[0], one.position_max[0]], dq)
        at = {k: np.full(dq.size, v[0]) for k, v in one.at.items()}
        at["position_min"] = np.where(dq >= 0, at["position_min"], at["position_max"])
        at["position_max"] = np.where(dq >= 0, at["position_max"], at["position_min"])
        rates = {name: np.abs(dq) * getattr(one, name)[0] for name in RATE_NAMES}
        return Peaks(ends.min(axis=0), ends.max(axis=0), at=at, **rates)
    return _sampled_grid_peaks(reference, dt)


def _sampled_grid_peaks(reference: Reference, dt: float) -> Peaks:
    """:func:`sampled_peaks` by brute force on the control grid, all joints at once."""
    k_end = int(np.floor(reference.duration / dt + 1e-9))
    t = np.arange(-3, k_end + 4) * dt
    d = [np.asarray(reference(t, r)) for r in range(4)]
    peaks, at = {}, {}
    for r, name in enumerate(RATE_NAMES, start=1):
        best = np.abs(d[r])
        for m in range(r):
            fd = np.abs(np.diff(d[m], n=r - m, axis=0)) / dt ** (r - m)
            best = np.maximum(best, np.vstack([np.zeros((r - m, fd.shape[1])), fd]))
        peaks[name] = best.max(axis=0)
        at[name] = t[best.argmax(axis=0)]
    at["position_min"], at["position_max"] = t[d[0].argmin(axis=0)], t[d[0].argmax(axis=0)]
    return Peaks(d[0].min(axis=0), d[0].max(axis=0), at=at, **peaks)


def _violations(peaks: Peaks, limits: JointLimits) -> list[str]:
    """Human-readable violations (empty if none), each naming the joint and the limit."""
    out = []
    names = limits.joint_names
    for j in np.flatnonzero(peaks.position_min < limits.position_min - RTOL):
        out.append(
            f"joint {names[j]!r} position {peaks.position_min[j]:.4f} rad is below its limit "
            f"{limits.position_min[j]:.4f} rad at t = {peaks.at['position_min'][j]:.3f} s"
        )
    for j in np.flatnonzero(peaks.position_max > limits.position_max + RTOL):
        out.append(
            f"joint {names[j]!r} position {peaks.position_max[j]:.4f} rad is above its limit "
            f"{limits.position_max[j]:.4f} rad at t = {peaks.at['position_max'][j]:.3f} s"
        )
    for r, name in enumerate(RATE_NAMES, start=1):
        value, lim = getattr(peaks, name), limits.rate(r)
        for j in np.flatnonzero(value > lim * (1 + RTOL)):
            out.append(
                f"joint {names[j]!r} {name} {value[j]:.4g} {UNITS[name]} exceeds its limit "
                f"{lim[j]:.4g} {UNITS[name]} (set {limits.set_name!r}) "
                f"at t = {peaks.at[name][j]:.3f} s"
            )
    return out


def followed_limit_use(
    times: np.ndarray,
    velocities: np.ndarray,
    accelerations: np.ndarray,
    limits: JointLimits,
    sample_gap: tuple[float, float] = (0.005, 0.05),
) -> dict[str, float]:
    """The largest share of its limit (1.0 = at it) any joint reached in a reference a
    controller followed, as it reports it (``controller_state``: one row per sample at
    ``times`` [s], joints in ``limits``' order): velocity and acceleration at every sample, jerk
    as the change of acceleration between two consecutive samples ``sample_gap`` [s] apart (the
    mean over the gap, never above the peak; a longer gap is a pause between goals). What the
    controller followed is what the robot was asked to do, whoever planned it."""
    t = np.asarray(times, dtype=float)
    qd, qdd = (np.atleast_2d(np.asarray(v, dtype=float)) for v in (velocities, accelerations))
    if t.size < 2 or qd.shape != (t.size, len(limits.joint_names)) or qdd.shape != qd.shape:
        raise InvalidInput(
            f"need at least two samples of {len(limits.joint_names)} joints' velocity and "
            f"acceleration, got times {t.shape}, velocities {qd.shape}, accelerations {qdd.shape}"
        )
    dt = np.diff(t)
    steady = (dt > sample_gap[0]) & (dt < sample_gap[1])
    jerk = np.abs(np.diff(qdd, axis=0))[steady] / dt[steady, None]
    return {
        "velocity": float((np.abs(qd) / limits.velocity).max()),
        "acceleration": float((np.abs(qdd) / limits.acceleration).max()),
        "jerk": float((jerk / limits.jerk).max()) if jerk.size else 0.0,
    }


def check_trajectory(reference: Reference, limits: JointLimits, dt: float | None = None) -> Peaks:
    """Raise ``LimitViolation`` (naming the joint and the limit) unless ``reference`` stays
    within ``limits`` when sampled at ``dt`` (default: the limits' control period)."""
    sub = limits.select(reference.joint_names)
    peaks = sampled_peaks(reference, dt or limits.control_period)
    problems = _violations(peaks, sub)
    if problems:
        raise LimitViolation("; ".join(problems))
    return peaks


def check_waypoints(
    joint_names: Sequence[str], times: np.ndarray, positions: np.ndarray, limits: JointLimits
) -> None:
    """Raise ``LimitViolation`` unless a piecewise-linear reference stays within ``limits``.

    A positions-only trajectory is linear between its points (``times`` [s], ``positions``
    (k, n), the first at rest): its positions peak at the points, its velocity is each
    segment's slope, and each velocity step is judged as an acceleration over the mean of the
    two segments around it (the reference is at rest before the first and after the last
    point, over a segment as long as its neighbour). Sampling it at a control period instead
    would make every step a spike of step/period, however gentle the motion it describes.
    """
    sub = limits.select(joint_names)
    names = sub.joint_names
    q = np.asarray(positions, dtype=float)
    spans = np.diff(np.asarray(times, dtype=float))
    problems = []
    for j in np.flatnonzero(np.any(q < sub.position_min - RTOL, axis=0)):
        k = int(np.argmin(q[:, j]))
        problems.append(
            f"joint {names[j]!r} position {q[k, j]:.4f} rad is below its limit "
            f"{sub.position_min[j]:.4f} rad at t = {times[k]:.3f} s"
        )
    for j in np.flatnonzero(np.any(q > sub.position_max + RTOL, axis=0)):
        k = int(np.argmax(q[:, j]))
        problems.append(
            f"joint {names[j]!r} position {q[k, j]:.4f} rad is above its limit "
            f"{sub.position_max[j]:.4f} rad at t = {times[k]:.3f} s"
        )
    slopes = np.diff(q, axis=0) / spans[:, None]  # (k-1, n)
    rest = np.zeros((1, q.shape[1]))
    steps = np.diff(np.vstack([rest, slopes, rest]), axis=0)  # at each point (k, n)
    padded = np.concatenate([spans[:1], spans, spans[-1:]])
    accel = np.abs(steps) / (0.5 * (padded[:-1] + padded[1:]))[:, None]
    for name, values, limit, at in (
        ("velocity", np.abs(slopes), sub.velocity, times[:-1]),
        ("acceleration", accel, sub.acceleration, times),
    ):
        for j in np.flatnonzero(np.any(values > limit * (1 + RTOL), axis=0)):
            k = int(np.argmax(values[:, j]))
            problems.append(
                f"joint {names[j]!r} {name} {values[k, j]:.4g} {UNITS[name]} exceeds its limit "
                f"{limit[j]:.4g} {UNITS[name]} (set {sub.set_name!r}) at t = {at[k]:.3f} s"
            )
    if problems:
        raise LimitViolation("; ".join(problems))


def _spike_gain(n: int) -> int:
    """Peak of the n-th finite difference of a unit step (1, 1, 2, 3, 6 …)."""
    return comb(n - 1, (n - 1) // 2)


def duration_bounds(
    move: JointMove, shape: str | TimeScaling, limits: JointLimits, dt: float | None = None
) -> np.ndarray:
    """Closed-form shortest T [s] per (joint, limit): array ``(n_joints, 3)`` over
    velocity/acceleration/jerk; ``inf`` where no duration helps (a step too large for dt)."""
    s, dt = get_shape(shape), dt or limits.control_period
    lim = limits.select(move.joint_names)
    dq = np.abs(move.delta)
    need = np.zeros((dq.size, 3))
    for r in (1, 2, 3):
        L = lim.rate(r)
        with np.errstate(divide="ignore", invalid="ignore"):
            bound = (dq * s.peak(r) / L) ** (1.0 / r)
            for m in range(1, r):
                if s.jump(m):
                    gain = _spike_gain(r - m) * s.jump(m)
                    bound = np.maximum(bound, (dq * gain / (L * dt ** (r - m))) ** (1.0 / m))
            if s.jump(0):
                too_big = dq * s.jump(0) * _spike_gain(r) / dt**r > L * (1 + RTOL)
                bound = np.where(too_big, np.inf, bound)
        need[:, r - 1] = np.nan_to_num(bound, nan=0.0, posinf=np.inf)
    return need


def shortest_duration(
    move: JointMove, shape: str | TimeScaling, limits: JointLimits, dt: float | None = None
) -> float:
    """The shortest duration [s] for which ``move`` timed by ``shape`` passes
    :func:`check_trajectory` at ``dt``: closed form, verified by sampling.

    Raises ``LimitViolation`` naming the joint and limit if no duration works (a step).
    """
    dt = dt or limits.control_period
    need = duration_bounds(move, shape, limits, dt)
    if np.isinf(need).any():
        j, r = np.argwhere(np.isinf(need))[0]
        raise LimitViolation(
            f"joint {move.joint_names[j]!r}: a {get_shape(shape).name} of {move.delta[j]:.4g} rad "
            f"exceeds its {RATE_NAMES[r]} limit at any duration; choose a smooth shape"
        )
    duration = float(need.max())
    sub = limits.select(move.joint_names)
    for _ in range(1000):  # jumps closer than a few dt apart can add up; nudge T until it passes
        if not _violations(sampled_peaks(move.shaped(shape, duration), dt), sub):
            return duration
        duration = max(duration * (1 + 1e-6), duration + 1e-3 * dt)
    raise LimitViolation(f"no duration up to {duration:.4f} s keeps {move.joint_names} in limits")


def plan_move(
    move: JointMove,
    shape: str | TimeScaling,
    limits: JointLimits,
    duration: float | None = None,
    dt: float | None = None,
) -> ShapedMove:
    """Time ``move`` by ``shape``: the shortest duration, or ``duration`` [s] if it is long enough.

    Rejects (``LimitViolation``) end points outside the position range and a requested duration
    shorter than the limits allow; both messages name the joint and the limit.
    """
    sub = limits.select(move.joint_names)
    for label, q in (("start", move.start), ("goal", move.goal)):
        for j in np.flatnonzero((q < sub.position_min) | (q > sub.position_max)):
            raise LimitViolation(
                f"{label} of joint {move.joint_names[j]!r} = {q[j]:.4f} rad is outside its "
                f"position range [{sub.position_min[j]:.4f}, {sub.position_max[j]:.4f}] rad"
            )
    fastest = shortest_duration(move, shape, limits, dt)
    if duration is None:
        return move.shaped(shape, fastest)
    if not np.isfinite(duration) or duration < fastest * (1 - RTOL):
        need = duration_bounds(move, shape, limits, dt or limits.control_period)
        j, r = np.unravel_index(np.argmax(need), need.shape)
        raise LimitViolation(
            f"duration {duration!r} s is too short: joint {move.joint_names[j]!r} needs "
            f"≥ {fastest:.4f} s for its {RATE_NAMES[r]} limit {sub.rate(r + 1)[j]:.4g} "
            f"{UNITS[RATE_NAMES[r]]} (set {limits.set_name!r})"
        )
    return move.shaped(shape, duration)
