"""Property tests of the joint trajectory controller: nothing accepted leaves the ranges or the
limits.

``physai_ros.core.controllers.jtc`` against the behaviour of ros2_controllers 5.17.0 (Kilted)
joint_trajectory_controller as docs/controllers.md describes it (its sections cited as §n),
except the deviations listed there. The controller is driven like a backend does
(``support/jtc.py``). Every test names the law it pins.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from support.jtc import ARM, DT, LIMITS, LOWER, NAMES, UPPER, ideal, make_arm, make_jtc, msg, pt

from physai_ros.core.controllers.jtc import (
    GoalTolerances,
    JointTrajectoryController,
    Rejected,
    TrajectoryMsg,
)


# === 13. property: nothing accepted leaves the ranges or the limits ==========================
class Goal(NamedTuple):
    """A random goal: start position, waypoint times [s], positions, and the optional
    velocities/accelerations (``None`` = not given)."""

    q0: tuple[float, ...]
    times: tuple[float, ...]
    positions: tuple[tuple[float, ...], ...]
    velocities: tuple[tuple[float, ...], ...] | None
    accelerations: tuple[tuple[float, ...], ...] | None

    def message(self, names) -> TrajectoryMsg:
        points = []
        for i, t in enumerate(self.times):
            v = self.velocities[i] if self.velocities else ()
            a = self.accelerations[i] if self.accelerations else ()
            points.append(pt(t, self.positions[i], v, a))
        return msg(points, names=names)


@st.composite
def goals(draw, lower, upper, window: float, kinds=("positions", "velocities", "accelerations")):
    """Waypoints within the ranges (within ``window`` of a random centre, so that some are
    feasible), 1-4 points at 0.2-3 s (steps of 10 ms), of the given interpolation kinds."""
    n = len(lower)
    centre = [draw(st.floats(lo, hi)) for lo, hi in zip(lower, upper, strict=True)]
    box = [
        (max(lo, c - window), min(hi, c + window))
        for lo, hi, c in zip(lower, upper, centre, strict=True)
    ]

    def position():
        return tuple(draw(st.floats(lo, hi)) for lo, hi in box)

    ticks = [draw(st.integers(20, 100))]
    for step in draw(st.lists(st.integers(10, 100), max_size=3)):
        ticks.append(ticks[-1] + step)
    times = tuple(k / 100 for k in ticks if k <= 300)
    kind = draw(st.sampled_from(kinds))
    rates = st.floats(-2.0, 2.0)
    velocities = accelerations = None
    if kind != "positions":
        velocities = tuple(
            tuple(0.0 if i == len(times) - 1 else draw(rates) for _ in range(n))
            for i in range(len(times))
        )
    if kind == "accelerations":
        accelerations = tuple(tuple(5 * draw(rates) for _ in range(n)) for _ in range(len(times)))
    return Goal(position(), times, tuple(position() for _ in times), velocities, accelerations)


def emitted(c: JointTrajectoryController, goal: Goal, names, step: float) -> np.ndarray:
    """The reference positions the controller emits on a ``step`` grid under ideal tracking,
    from one period before the goal to a few after its end (shape (K, n))."""
    traj, _ = c.prepare(goal.message(names), 0.0)
    c.accept("g", (traj, 0.0), GoalTolerances())
    refs = [c.ref[0].copy(), c.ref[0].copy()]  # held at -step and at 0
    for k in range(1, round((traj.duration + 3 * step) / step) + 2):
        q, qd = ideal(k * step, c)
        c.update(k * step, q, qd)
        refs.append(c.ref[0].copy())
    return np.array(refs)


PROPERTY = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
)
SHORT_FAST_SEGMENT = Goal(
    (0.0,) * 5,
    (1.0, 1.2, 2.2, 3.0),
    ((0.0,) * 5, (1.2, 0, 0, 0, 0), (1.2, 0, 0, 0, 0), (1.2, 0, 0, 0, 0)),
    None,
    None,
)
TWO_POINT_FAST_SEGMENT = Goal(  # wrist_roll 0.5 rad in 0.1 s (5 rad/s), sampled every 0.15 s
    (0.0,) * 5, (0.2, 0.3), ((0.0,) * 5, (0, 0, 0, 0, 0.5)), None, None
)
CUBIC_OVERSHOOT = Goal(
    (0.0, 0.0, 0.0), (0.5, 1.0), ((0.9, 0, 0), (0.9, 0, 0)), ((3.0, 0, 0), (0, 0, 0)), None
)


# The properties judge accepted goals only (a rejected one is assume(False), and
# filter_too_much is off), so each counts the goals it judged: at least MIN_ACCEPTED of its
# max_examples (40, derandomized: the same goals each run), or it proved little.
MIN_ACCEPTED = 20


def judged(strategy, check, *examples: Goal) -> int:
    """Run ``check`` as a PROPERTY over ``strategy``'s goals and ``examples``; returns how many
    goals it accepted and judged (it returns True for those)."""
    accepted: list[Goal] = []

    def run(goal: Goal) -> None:
        if check(goal):
            accepted.append(goal)

    run = given(goal=strategy)(run)
    for goal in reversed(examples):
        run = example(goal=goal)(run)
    PROPERTY(run)()
    return len(accepted)


def _assert_within_limits(goal: Goal) -> bool:
    c = make_arm(q=goal.q0)
    try:
        c.prepare(goal.message(ARM), 0.0)
    except Rejected:
        assume(False)
    refs = emitted(make_arm(q=goal.q0), goal, ARM, DT)
    slack = 1e-9
    assert np.all(refs >= LIMITS.position_min - slack) and np.all(
        refs <= LIMITS.position_max + slack
    )
    velocity = np.abs(np.diff(refs, axis=0)) / DT
    assert np.all(velocity <= LIMITS.velocity * (1 + 1e-6)), velocity.max(axis=0)
    traj, _ = c.prepare(goal.message(ARM), 0.0)
    period = DT if traj.degree > 1 else max(DT, float(np.median(np.diff(traj.knots))))
    coarse = refs if period == DT else emitted(make_arm(q=goal.q0), goal, ARM, period)
    acceleration = np.abs(np.diff(coarse, n=2, axis=0)) / period**2
    assert np.all(acceleration <= LIMITS.acceleration * (1 + 1e-6)), acceleration.max(axis=0)
    return True


def test_property_accepted_smooth_goals_stay_within_ranges_and_limits():
    """Deviation (limits), property: for every accepted goal with velocities (cubic) or
    accelerations (quintic), the reference the controller emits every 10 ms under ideal
    tracking stays within the joint ranges and its finite-difference velocity and
    acceleration within the limits."""
    smooth = goals(LIMITS.position_min, LIMITS.position_max, 0.8, ("velocities", "accelerations"))
    assert judged(smooth, _assert_within_limits) >= MIN_ACCEPTED


def test_property_accepted_goals_stay_within_ranges_and_limits():
    """Deviation (limits), property: for every accepted goal of any kind the emitted reference
    stays within the ranges; its velocity (10 ms differences) within the velocity limit; its
    acceleration within the limit at the controller's period (limit_period, or the points'
    median spacing for a positions-only goal)."""
    strategy = goals(LIMITS.position_min, LIMITS.position_max, 0.8)
    examples = (SHORT_FAST_SEGMENT, TWO_POINT_FAST_SEGMENT)
    assert judged(strategy, _assert_within_limits, *examples) >= MIN_ACCEPTED


def _assert_within_ranges(goal: Goal) -> bool:
    try:
        make_jtc(q=goal.q0).prepare(goal.message(NAMES), 0.0)
    except Rejected:
        assume(False)
    refs = emitted(make_jtc(q=goal.q0), goal, NAMES, DT)
    assert np.all(refs >= LOWER - 1e-9) and np.all(refs <= UPPER + 1e-9)
    return True


def test_property_positions_only_goals_stay_within_ranges():
    """Deviation (ranges), property: without limits, every accepted positions-only goal keeps
    the emitted reference within the joint ranges."""
    strategy = goals(LOWER, UPPER, 10.0, ("positions",))
    assert judged(strategy, _assert_within_ranges) >= MIN_ACCEPTED


def test_property_accepted_goals_stay_within_ranges():
    """Deviation (ranges), property: without limits, no accepted goal (any kind) makes the
    emitted reference leave the joint ranges ("goals are checked against the joint position
    ranges")."""
    strategy = goals(LOWER, UPPER, 10.0)
    assert judged(strategy, _assert_within_ranges, CUBIC_OVERSHOOT) >= MIN_ACCEPTED
