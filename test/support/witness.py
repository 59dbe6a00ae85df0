"""An outside witness of a pick, in the test process: the object's pose and the per-jaw contact
wrenches straight from the sim bridge's topics (``cube_pose`` / ``soft_object_pose``,
``jaw_contact/<jaw>``), judged by the test itself, not read from the pick's outcome.

The pick's own verdict can be right for the wrong reason (a stale cube pose, a squeeze number it
computed itself); a test that also asks the simulation what happened catches that. A witness
with no fresh data judges nothing, and ``lift``/``squeeze`` then fail the test: "fresh" is a
sample received after the outcome arrived and stamped later than any sample received before it.
"""

from __future__ import annotations

import math
import statistics
import threading
import time
from dataclasses import dataclass

import rclpy
from geometry_msgs.msg import PoseStamped, WrenchStamped
from physai_ros_interfaces.msg import PickOutcome

from physai_ros import interfaces
from physai_ros.experiments.trials.spinning import Spinning, wait
from physai_ros.qos import LATCHED, stream_qos
from support.paths import shipped  # noqa: F401  (the tests' one import)

JAWS = {
    "so101": ("fixed_jaw", "moving_jaw"),
    "panda": ("left_finger", "right_finger"),
    "hand": ("f1", "f2", "f3"),
}
FRESH_TIMEOUT = 10.0  # [s wall] for a fresh sample after the outcome, on a loaded 2-core machine
FORCE_WINDOW = 0.5  # [s sim] jaw force: the median of each jaw's fresh samples over this long


def _seconds(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


@dataclass
class Lift:
    rest_z: float  # [m] the object's height in its first sample (before the pick touched it)
    z: float  # [m] its height in the first fresh sample after the outcome
    stamp: float  # [s sim] that sample's stamp

    @property
    def rise(self) -> float:
        return self.z - self.rest_z


class Witness:
    """Spun on a thread of its own from construction: create it before the graph starts, so its
    first pose sample is the object at rest."""

    def __init__(
        self,
        context,
        jaws: tuple[str, ...],
        pose_topic: str = interfaces.CUBE_POSE,
        outcome_topic: str = interfaces.PICK_OUTCOME,
        namespace: str = "/",
    ) -> None:
        ns = namespace.rstrip("/") + "/"
        name = "pick_witness" + ns.replace("/", "_").rstrip("_")
        self.node = node = rclpy.create_node(name, context=context)
        self.lock = threading.Lock()
        self.jaws = jaws
        self.poses: list[tuple[float, float, float]] = []  # (wall, stamp [s sim], z [m])
        self.forces: dict[str, list[tuple[float, float, float]]] = {j: [] for j in jaws}
        self.outcome_at: tuple[float, float] | None = None  # (wall, newest pose stamp then)
        node.create_subscription(PoseStamped, ns + pose_topic, self._pose, stream_qos(50))
        for jaw in jaws:
            node.create_subscription(
                WrenchStamped,
                f"{ns}{interfaces.JAW_CONTACT_PREFIX}/{jaw}",
                lambda m, j=jaw: self._wrench(j, m),
                stream_qos(50),
            )
        node.create_subscription(PickOutcome, ns + outcome_topic, self._outcome, LATCHED)
        self.spinning = Spinning(context, node)

    def close(self) -> None:
        self.spinning.close()

    def _pose(self, msg: PoseStamped) -> None:
        sample = (time.monotonic(), _seconds(msg.header.stamp), msg.pose.position.z)
        with self.lock:
            self.poses.append(sample)

    def _wrench(self, jaw: str, msg: WrenchStamped) -> None:
        f = msg.wrench.force
        sample = (time.monotonic(), _seconds(msg.header.stamp), math.sqrt(f.x**2 + f.y**2 + f.z**2))
        with self.lock:
            self.forces[jaw].append(sample)

    def _outcome(self, msg: PickOutcome) -> None:
        with self.lock:
            if self.outcome_at is None:
                newest = max((s for _w, s, _z in self.poses), default=-math.inf)
                self.outcome_at = (time.monotonic(), newest)

    def _fresh(self, samples: list[tuple[float, float, float]]) -> list[tuple[float, float, float]]:
        if self.outcome_at is None:
            return []
        wall, stamp = self.outcome_at
        return [s for s in samples if s[0] > wall and s[1] > stamp]

    def lift(self, timeout: float = FRESH_TIMEOUT) -> Lift:
        """The object's rise: its first fresh height after the outcome minus its resting one.
        AssertionError when the witness never saw the object at rest, or nothing fresh."""
        assert wait(lambda: self.outcome_at is not None, timeout), "witness: no outcome seen"
        with self.lock:
            assert self.poses and self.poses[0][0] < self.outcome_at[0], (
                "witness: no object pose before the outcome (its resting height unknown)"
            )
        got = wait(lambda: self._locked_fresh(self.poses), timeout)
        with self.lock:
            assert got, (
                f"witness: no fresh object pose within {timeout} s of the outcome "
                f"({len(self.poses)} samples, the newest at {self.poses[-1][:2]}, "
                f"outcome at {self.outcome_at})"
            )
            _w, stamp, z = self._fresh(self.poses)[0]
            return Lift(self.poses[0][2], z, stamp)

    def _locked_fresh(self, samples) -> bool:
        with self.lock:
            return bool(self._fresh(samples))

    def squeeze(self, timeout: float = FRESH_TIMEOUT) -> dict[str, float]:
        """Each jaw's contact force [N] after the outcome: the median of its fresh samples over
        ``FORCE_WINDOW`` of sim time. AssertionError when a jaw has no fresh sample."""
        assert wait(lambda: self.outcome_at is not None, timeout), "witness: no outcome seen"

        def spanned() -> bool:
            with self.lock:
                fresh = [self._fresh(self.forces[j]) for j in self.jaws]
            return all(f and f[-1][1] - f[0][1] >= FORCE_WINDOW for f in fresh)

        wait(spanned, timeout)
        out = {}
        with self.lock:
            for jaw in self.jaws:
                fresh = self._fresh(self.forces[jaw])
                assert fresh, f"witness: no fresh jaw_contact/{jaw} within {timeout} s"
                window = [f for _w, s, f in fresh if s - fresh[0][1] <= FORCE_WINDOW]
                out[jaw] = statistics.median(window)
        return out

    def sim_rate(self) -> float:
        """Sim seconds per wall second over the object poses received (the bridge's achieved
        real-time factor: at most its ``real_time_factor``, less when starved)."""
        with self.lock:
            (w0, s0, _), (w1, s1, _) = self.poses[0], self.poses[-1]
        # 2 s of poses tell 1 from 5 (an RTF-5 bridge) with the receipt jitter (tens of ms) well
        # inside the bounds; a quiet machine picks in about 4 s of poses
        assert w1 - w0 > 2.0, f"witness: only {w1 - w0:.1f} s of object poses"
        return (s1 - s0) / (w1 - w0)

    def check_pick(
        self, min_lift: float, target: float | list[float] | None = None, band: float = 0.15
    ) -> tuple[Lift, dict[str, float] | None]:
        """The witness's verdict, asserted: the object rose at least ``min_lift`` [m] above its
        resting height, fresh after the outcome; with a ``target`` [N per jaw, or one per jaw],
        every jaw's force within ``band`` of it. Returns what it saw (for the record)."""
        seen = self.lift()
        assert seen.rise >= min_lift, (
            f"witness: the object rose {100 * seen.rise:.2f} cm (z {seen.rest_z:.4f} → "
            f"{seen.z:.4f} m at t = {seen.stamp:.3f} s), less than the pick's min_lift "
            f"{100 * min_lift:.1f} cm"
        )
        if target is None:
            return seen, None
        forces = self.squeeze()
        targets = target if isinstance(target, list) else [target] * len(self.jaws)
        for (jaw, force), want in zip(forces.items(), targets, strict=True):
            assert abs(force - want) <= band * want, (
                f"witness: jaw_contact/{jaw} reads {force:.2f} N, outside {want:.2f} N "
                f"± {band:.0%} ({forces})"
            )
        return seen, forces
