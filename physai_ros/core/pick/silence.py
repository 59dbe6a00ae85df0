"""Has the robot gone silent? A watch on two things a running graph always shows: joint states
arriving, and the node's clock advancing (under ``use_sim_time`` the clock is the sim bridge's:
it stops when the bridge dies, and with it every timer on that clock, so this runs on the
steady clock). Pure: the caller passes both clocks' readings.
"""

from __future__ import annotations


class SilenceWatch:
    """timeout [s, wall clock]; clock: the node clock's reading now [s]; wall: the steady clock
    now [s]; sim_time: the node clock is the simulation's (the reason then says "sim time")."""

    def __init__(self, timeout: float, clock: float, wall: float, sim_time: bool) -> None:
        self.timeout = float(timeout)
        self.sim_time = sim_time
        self.heard_at = float(wall)  # [s, steady] the last joint state arrived
        self.clock_seen = (float(clock), float(wall))  # the node clock's reading, when it changed

    def heard(self, wall: float) -> None:
        """A joint state arrived at ``wall`` [s, steady]."""
        self.heard_at = float(wall)

    def check(self, clock: float, wall: float) -> tuple[str, float] | None:
        """Why the robot counts as silent now, and for how long [s, wall clock], or None."""
        if clock != self.clock_seen[0]:
            self.clock_seen = (clock, wall)
        quiet, still = wall - self.heard_at, wall - self.clock_seen[1]
        reasons = []
        if quiet > self.timeout:
            reasons.append(f"robot silent: no joint states for {quiet:.1f} s (wall clock)")
        if still > self.timeout:
            sim = "sim " if self.sim_time else ""
            reasons.append(
                f"clock stopped: {sim}time stood still at {clock:.3f} s for {still:.1f} s "
                "(wall clock)"
            )
        return ("; ".join(reasons), max(quiet, still)) if reasons else None
