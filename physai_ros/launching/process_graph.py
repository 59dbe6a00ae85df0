"""A graph of the product's node processes (``physai_ros.launching.bringup.start``) run by a
trial bench or a test: one that can lose a node and start it again (``physai bench crash``), or
one run until an outcome (``physai bench force-close``, ``physai bench hand-pick``)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from physai_ros.launching.bringup import start, stop
from physai_ros.launching.graph import NodeSpec


class Graph:
    """A graph of node processes (``bringup.start``) that can lose and regain a node."""

    def __init__(
        self, specs: list[NodeSpec], log_dir: Path, domain: int, held_back: tuple[str, ...] = ()
    ) -> None:
        """Start every node of ``specs`` but those ``held_back`` (started by ``start``), so an
        observer can be connected before a node whose transient states it must see."""
        self.specs = {s.name: s for s in specs}
        for spec in specs:
            spec.env["ROS_DOMAIN_ID"] = str(domain)
        self.log_dir = log_dir
        self.log_dirs = {name: log_dir for name in self.specs}  # each node's newest process's
        self.starts = 0
        now = [s for s in specs if s.name not in held_back]
        self.procs = dict(zip([s.name for s in now], start(now, log_dir), strict=True))

    def start(self, name: str) -> None:
        """Start a node held back at construction, logs beside the others'."""
        self.procs[name] = start([self.specs[name]], self.log_dir)[0]

    def kill(self, name: str) -> None:
        """SIGKILL: no handler runs, nothing is said goodbye to."""
        proc = self.procs[name]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)

    def restart(self, name: str) -> None:
        """Start ``name`` again (its old process stopped first if alive), logs in a new dir."""
        stop([self.procs[name]])
        self.starts += 1
        logs = self.log_dir / f"restart{self.starts}"
        logs.mkdir()
        self.procs[name] = start([self.specs[name]], logs)[0]
        self.log_dirs[name] = logs

    def log(self, name: str) -> str:
        """The output of ``name``'s newest process."""
        return (self.log_dirs[name] / f"{name}.log").read_text(errors="replace")

    def close(self) -> None:
        stop(list(self.procs.values()))


def run_graph(specs: list[NodeSpec], log_dir: Path, watcher, timeout: float) -> list[str]:
    """Start ``specs`` (``bringup.start``, logs in ``log_dir``), wait until ``watcher.outcome``
    is set, a node exits or ``timeout`` [s wall] passes, stop them; the nodes that died."""
    log_dir.mkdir(parents=True, exist_ok=True)
    procs = start(specs, log_dir)
    try:
        end = time.monotonic() + timeout
        while watcher.outcome is None and time.monotonic() < end:
            if any(p.poll() is not None for p in procs):
                break
            time.sleep(0.2)
    finally:
        stop(procs)
    return [p.args[2] for p in procs if p.returncode not in (None, 0, -2)]
