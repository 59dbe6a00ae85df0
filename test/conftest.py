"""Shared fixtures: the reference models beside the repository, and isolated DDS domains."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_MODELS = REPO_ROOT.parent / "shared" / "models"


@pytest.fixture(scope="session")
def shared_models() -> Path:
    """The reference MuJoCo models (tests and benchmarks only, never shipped).

    In CI (``CI=true``) a missing folder is an error, not a skip: the parity checks that need
    it are the point of those tests.
    """
    if not SHARED_MODELS.is_dir():
        message = f"reference models not found at {SHARED_MODELS}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return SHARED_MODELS


# --- DDS isolation ------------------------------------------------------------------------------
# Every test that talks over DDS gets its own ROS_DOMAIN_ID, and discovery stays on this host,
# so parallel runs (another CI job, a developer's demo) never see each other's topics.
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
_domains = itertools.count()


@pytest.fixture
def ros_domain(monkeypatch: pytest.MonkeyPatch) -> int:
    """A DDS domain id of this test alone, exported to every process the test starts."""
    domain = 1 + (os.getpid() * 31 + next(_domains)) % 200
    monkeypatch.setenv("ROS_DOMAIN_ID", str(domain))
    return domain


@pytest.fixture
def ros_context(ros_domain: int) -> Iterator[object]:
    """An initialised rclpy context on the test's domain, shut down afterwards."""
    import rclpy

    context = rclpy.Context()
    rclpy.init(context=context, domain_id=ros_domain)
    yield context
    rclpy.try_shutdown(context=context)


@pytest.fixture
def spawn() -> Iterator[Callable[..., subprocess.Popen]]:
    """Start helper processes (Python scripts or modules); all are stopped at teardown."""
    procs: list[subprocess.Popen] = []

    def _spawn(*args: str, module: bool = False) -> subprocess.Popen:
        cmd = [sys.executable, "-m", *args] if module else [sys.executable, *args]
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        procs.append(proc)
        return proc

    yield _spawn
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
    for proc in procs:
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


PEERS = Path(__file__).parent / "peers"
