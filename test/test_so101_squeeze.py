"""A cube carried by the real-arm pick graph stays squeezed through a stop, a resume, a
deactivation, a re-arm and a held servo fault.

The emulated servos model a position dead band (``dead_zone``, the CW/CCW_Dead_Zone
registers): a jaw stalled on the cube and told to go where it already is applies no torque
inside the band, and the squeeze relaxes. The driver must keep the jaw's last goal and torque
limit there (it holds the arm joints at their present pose); the bar is the squeeze (the
emulator's true jaw normal forces) within 15 % of before, the cube still in both jaws and not
lowered in them.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticStatus
from support.emulated_so101 import Bench
from support.optional import require

require("lerobot.motors")
pytestmark = [pytest.mark.slow, pytest.mark.dds]

DEAD_ZONE = 5  # [step] each servo's dead band (a few encoder steps)
SQUEEZE = 0.15  # the squeeze (mean true jaw normal force) stays within this share of before
SLIP = 0.005  # [m] the cube sinks no further than this in the jaws (gripper site - cube)
WINDOW = 1.0  # [s] each phase's measured window, after SETTLE
SETTLE = 0.5  # [s]


def carrying(tmp_path, domain: int) -> Bench:
    """The pick graph on the emulator with the dead band on, once the pick held the cube."""
    bench = Bench(tmp_path, domain, pick=True, emulator={"dead_zone": DEAD_ZONE})
    assert bench.wait(lambda: bench.outcome is not None, 150.0), bench.log("pick")[-3000:]
    assert bench.outcome["outcome"] == "held", bench.outcome
    return bench


def measure(bench: Bench) -> dict:
    """Squeeze [N] (the mean of both jaws' true normal force), the cube below the gripper site
    [m] and whether it stayed in both jaws, over WINDOW after SETTLE."""
    time.sleep(SETTLE)
    t0 = time.time()
    time.sleep(WINDOW)
    records = bench.truth_since(t0)
    normal = np.array([r["jaw_normal"] for r in records])
    drop = [r["gripper_site"][2] - r["cube_pos"][2] for r in records]
    return {
        "squeeze": float(normal.mean()),
        "drop": float(np.mean(drop)),
        "in_jaws": all(r["cube_in_jaws"] for r in records),
    }


def judge(phases: list[tuple[str, dict]]) -> None:
    """Every phase after the first (the carried cube) against it; all printed first."""
    (_, before), *after = phases
    for name, m in phases:
        ratio = m["squeeze"] / before["squeeze"]
        print(
            f"{name}: squeeze {m['squeeze']:.3f} N ({ratio:.3f} of before), cube "
            f"{m['drop'] * 100:.2f} cm below the site, in both jaws {m['in_jaws']}"
        )
    for name, m in after:
        assert m["in_jaws"], (name, phases)
        assert abs(m["squeeze"] / before["squeeze"] - 1.0) <= SQUEEZE, (name, phases)
        assert m["drop"] - before["drop"] < SLIP, (name, phases)


def test_stop_resume_deactivate_and_rearm_keep_the_squeeze_on_a_carried_cube(tmp_path, ros_domain):
    bench = carrying(tmp_path, ros_domain)
    try:
        phases = [("carried", measure(bench))]
        assert bench.service("stop").success
        phases.append(("stopped", measure(bench)))
        assert bench.service("resume").success
        phases.append(("resumed", measure(bench)))
        assert bench.transition("deactivate"), bench.log()[-3000:]
        phases.append(("deactivated", measure(bench)))
        assert bench.transition("activate"), bench.log()[-3000:]
        phases.append(("re-armed", measure(bench)))
        judge(phases)
    finally:
        bench.close()


def test_a_held_elbow_overload_keeps_the_squeeze_on_a_carried_cube(tmp_path, ros_domain):
    bench = carrying(tmp_path, ros_domain)
    try:
        phases = [("carried", measure(bench))]
        bench.set_emulator("overload_ids", [3])  # elbow_flex

        def faulted():
            return any("OVERLOAD" in s.message for s in bench.diagnostics(DiagnosticStatus.ERROR))

        assert bench.wait(faulted, 5.0), bench.log()[-3000:]
        phases.append(("elbow overload held", measure(bench)))
        judge(phases)
    finally:
        bench.close()
