"""The ways of closing (``core/pick/closing.py``) each keep the :class:`Closing` contract, under
any sensing at all (hypothesis draws every tick's time step, finger positions and speeds, contact
forces, acknowledgements, touch and gripper result):

* ``done`` and ``aborted`` are final: phase, reason and grip never change once ended; an aborted
  close says why, a done one does not;
* every commanded position is finite, every effort finite and > 0 or nan (the cap; never 0,
  which ``GripperCommand`` reads as the full cap);
* a close never commands a finger more open than before (its distance to the closed position
  never grows), while closing and while holding;

and the pick machines keep it around the close: canceled at any time in close, the jaw (the
fingers) keep exactly the command of the cancel's moment, for good.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from physai_ros.core.motion.kinematics import IKResult
from physai_ros.core.pick.closing import (
    PHASES,
    CapClose,
    Closing,
    ClosingSensing,
    ForceClosing,
    GraspClose,
)
from physai_ros.core.pick.force_close import ForceClose, ForceCloseParams
from physai_ros.core.pick.machine import (
    PickMachine,
    PickSensing,
    force_params,
    load_pick_config,
    load_pick_tree,
    pick_config,
)

CFG = load_pick_config()
TREE = load_pick_tree()
SERVO = force_params(TREE)
FINGERS = [  # a Barrett-like hand's three fingers (levers [m], targets [N])
    ForceCloseParams(target=t, cap=5.0, lever=r, preshape=1.3, jaw_closed=2.44, contact=0.5 * t)
    for t, r in ((0.3, 0.08), (0.35, 0.08), (0.4, 0.095))
]
DT = 0.002  # [s]


def cap_close(t0: float) -> Closing:
    return CapClose(
        t0, CFG.jaw_open, CFG.jaw_closed, CFG.durations["close_ramp"], CFG.still_speed,
        CFG.still_time, CFG.close_timeout,
    )  # fmt: skip


WAYS = {  # name -> (a close started at t0, each finger's closed position [rad])
    "cap": (cap_close, [CFG.jaw_closed]),
    "servo": (lambda t0: ForceClosing([ForceClose(SERVO, t0)]), [SERVO.jaw_closed]),
    "hand": (
        lambda t0: ForceClosing(
            [ForceClose(p, t0) for p in FINGERS], [f" of finger F{k}" for k in (1, 2, 3)]
        ),
        [p.jaw_closed for p in FINGERS],
    ),
    "grasp": (lambda t0: GraspClose(t0, CFG.jaw_closed, 30.0, 3.0), [CFG.jaw_closed]),
}

force = st.floats(0.0, 12.0)
tick = st.tuples(
    st.floats(1e-3, 0.25),  # time step [s]
    st.lists(st.floats(-0.5, 2.5), min_size=3, max_size=3),  # positions [rad]
    st.lists(st.floats(-2.0, 2.0) | st.just(0.0), min_size=3, max_size=3),  # speeds [rad/s]
    st.lists(st.tuples(force, force), min_size=3, max_size=3),  # contact pair forces [N]
    st.lists(st.booleans(), min_size=3, max_size=3),  # acked
    st.booleans(),  # touch
    st.none() | st.none() | st.tuples(st.booleans(), st.sampled_from(["", "width out of range"])),
    st.booleans(),  # hold (after the end) or update
)


def sensing(k: int, draw: tuple) -> ClosingSensing:
    _, q, v, f, acked, touch, result, _ = draw
    return ClosingSensing(tuple(q[:k]), tuple(v[:k]), tuple(f[:k]), tuple(acked[:k]), touch, result)


def assert_command(close: Closing, now: float, fingers: int) -> tuple:
    cmd = close.command(now)
    assert len(cmd) == fingers
    for position, effort in cmd:
        assert math.isfinite(position)
        assert math.isnan(effort) or (math.isfinite(effort) and effort > 0.0), effort
    return cmd


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    way=st.sampled_from(sorted(WAYS)), t0=st.floats(0.0, 100.0), ticks=st.lists(tick, max_size=80)
)
def test_every_way_of_closing_keeps_the_contract_under_any_sensing(way, t0, ticks):
    make, closed = WAYS[way]
    close = make(t0)
    k = len(closed)
    now = t0
    before = assert_command(close, now, k)
    ended = None
    for draw in ticks:
        now += draw[0]
        sensed = sensing(k, draw)
        if close.finished and draw[-1]:
            close.hold(now, sensed)
        else:
            phase = close.update(now, sensed)
            assert phase == close.phase and phase in PHASES
        if ended is not None:  # final: nothing about how it ended changes
            assert (close.phase, close.reason, close.gripped) == ended
        elif close.finished:
            ended = (close.phase, close.reason, close.gripped)
            assert (close.phase == "aborted") == isinstance(close.reason, str)
            assert close.phase != "aborted" or (close.reason and not close.gripped)
        cmd = assert_command(close, now, k)
        for (p0, _), (p1, _), end in zip(before, cmd, closed, strict=True):
            assert abs(end - p1) <= abs(end - p0) + 1e-12, (way, p0, p1)  # never opens
        before = cmd
    report = close.report()
    assert report["phase"] == close.phase and report["gripped"] == close.gripped


def linear_ik(target, q0):
    """A stand-in IK: q = 10·(x, y, z, 0, …) for the arm's joints."""
    q = np.concatenate([10.0 * np.asarray(target), np.zeros(len(q0) - 3)])
    return IKResult(q=q, error=0.0, iterations=1, converged=True)


def jaw_config(way: str):
    if way == "cap":
        return CFG, np.zeros(5)
    robot = "panda" if way == "grasp" else "so101"
    tree = load_pick_tree(robot=robot)
    tree["close_mode"] = "force"
    return pick_config(tree, robot), np.zeros(7 if robot == "panda" else 5)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    way=st.sampled_from(["cap", "servo", "grasp"]),
    into=st.floats(0.0, 0.8),
    touch_at=st.floats(0.0, 1.0),
)
def test_a_jaw_pick_canceled_in_close_keeps_the_closing_command_for_good(way, into, touch_at):
    """The jaw pick in close under each way (touching from ``touch_at`` [s] into close with a
    force of its effort, no grasp result), canceled ``into`` [s] into close: from then on the
    jaw command is the one of the cancel's moment, exactly, and it is not the open jaw."""
    cfg, home = jaw_config(way)
    machine = PickMachine(cfg, linear_ik, home)
    cube = np.array([0.22, 0.0, 0.015])
    lever = cfg.force.lever if cfg.force is not None else 0.01
    t, kept = 0.0, None
    while machine.state != "close" or t - machine.t_state < into:
        assert not machine.finished and t < 30.0, (machine.state, machine.abort_reason)
        cmd = machine.command(t)
        t = round(t + DT, 9)
        in_close = t - machine.t_state if machine.state == "close" else -1.0
        touching = in_close >= touch_at
        effort = cmd.effort if math.isfinite(cmd.effort) else 1.0
        forces = (effort / lever,) * 2 if touching else (0.0, 0.0)
        jaw = cfg.force.preshape if cfg.force is not None and in_close < touch_at else cmd.jaw
        machine.update(t, PickSensing(touching, 0.0, cube, t, jaw, forces))
        if machine.state == "lift":
            return  # the close ended before the cancel's time: nothing to cancel in close
    cmd = machine.command(t)
    kept = (cmd.jaw, cmd.effort)
    machine.cancel(t)
    assert machine.state == "canceled" and machine.canceled_in == "close"
    assert abs(kept[0] - cfg.jaw_closed) <= abs(cfg.jaw_open - cfg.jaw_closed)
    for later in np.arange(t, t + 5.0, 0.05):
        machine.update(later, PickSensing(False, 0.0, None, None, math.nan, (0.0, 0.0)))
        cmd = machine.command(later)
        assert cmd.jaw == kept[0]
        assert cmd.effort == kept[1] or (math.isnan(cmd.effort) and math.isnan(kept[1]))
    report = machine.report()
    ended = (report["state"], report["canceled_in"], report["closed"])
    assert ended == ("canceled", "close", False)
    assert report["closing"]["phase"] == "closing" and not report["closing"]["gripped"]
