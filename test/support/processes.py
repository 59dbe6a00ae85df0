"""Processes a test started: stopping them all, reading a short command's output."""

from __future__ import annotations

import os
import signal
import subprocess
import time


def stop_all(procs: list[subprocess.Popen], grace: float) -> None:
    """Stop every process group still running as Ctrl-C would (SIGINT), then SIGKILL what has
    not ended within ``grace`` seconds, so no test leaves a node behind."""
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
    for proc in procs:
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def ros2_output(proc: subprocess.Popen, timeout: float = 60.0) -> str:
    """Wait for a short ``ros2`` command and return what it printed (fails on a non-zero exit)."""
    out, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, out
    return out


def call_again_if_lost(ros2, *args: str, wait: float = 30.0, attempts: int = 3) -> str:
    """``ros2 service call`` of an idempotent service (a reset), called again when no answer
    comes in ``wait`` seconds: on a loaded machine the server may answer before it has
    discovered the command line's fresh client ("failed to send response (timeout)" in its
    log), and the client then waits for ever. Fails after ``attempts``."""
    for attempt in range(1, attempts + 1):
        proc = ros2("service", "call", *args)
        try:
            return ros2_output(proc, timeout=wait)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            if attempt == attempts:
                raise
    raise AssertionError("unreachable")


def ros2_param(ros2, *args: str, timeout: float = 60.0) -> str:
    """``ros2 param <args>`` and what it printed, again while the command line's discovery has
    not found the node yet ("Node not found": a fresh ``ros2`` process, or its daemon, may not
    have seen a node the test's own client already talks to; on a loaded machine it can take
    seconds)."""
    end = time.monotonic() + timeout
    while True:
        out = ros2("param", *args).communicate(timeout=60)[0]
        if "Node not found" not in out or time.monotonic() > end:
            return out
        time.sleep(1.0)


def set_param(ros2, node: str, name: str, value: str, timeout: float = 60.0) -> None:
    """``ros2 param set`` (:func:`ros2_param`), which must succeed."""
    out = ros2_param(ros2, "set", node, name, value, timeout=timeout)
    assert "Set parameter successful" in out, out
