"""Shared fixtures and hooks: the reference models beside the repository, isolated DDS domains,
helper processes and ROS 2's command line. Shared helpers (functions, classes, constants) are
in ``support/``, never imported from here."""

from __future__ import annotations

import importlib.util
import itertools
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from support.paths import REPO_ROOT, SHARED_MODELS
from support.processes import stop_all


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


# --- Order and property-test settings -------------------------------------------------------------
# Hypothesis's 200 ms deadline per example is a timing assertion; these machines are shared and
# noisy, and make test runs half the tests on two workers. The properties themselves stay.
settings.register_profile("physai", deadline=None)
settings.load_profile("physai")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that use a ROS fixture need ROS 2 (the ``ros`` marker, which ``make test-py312``
    deselects). On pytest-xdist workers (make test's parallel half), the slow tests first: one
    started last would leave a single worker running alone at the end."""
    for item in items:
        if ROS_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.ros)
    if os.environ.get("PYTEST_XDIST_WORKER"):  # the workers collect; the controller follows
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)


# --- Without ROS 2 (make test-py312) -------------------------------------------------------------
# Python 3.12 with LeRobot 0.6 has no rclpy: no ROS 2 release builds it for that Python. There
# (make test-py312 sets PHYSAI_WITHOUT_ROS=1, and rclpy must be absent), a test module that
# imports ROS 2 at its top is reported as skipped with that reason instead of failing to import;
# any other import error still fails. Anywhere else a missing ROS 2 fails, so a broken ROS
# environment in make test can never turn into skips. Other tests that need ROS 2 carry the
# `ros` marker (by hand, or through a ROS fixture) and are deselected by `-m "not ros"`.
ROS_FIXTURES = {"ros_domain", "ros_context", "ros2", "colcon_install"}
ROS_PACKAGES = {"rclpy", "launch", "launch_ros", "ament_index_python", "rosidl_runtime_py"}
WITHOUT_ROS = (
    os.environ.get("PHYSAI_WITHOUT_ROS") == "1" and importlib.util.find_spec("rclpy") is None
)
MISSING_MODULE = re.compile(r"No module named '([\w]+)")


def is_ros_package(name: str) -> bool:
    """Whether ``name`` is a ROS 2 package (rclpy, launch, a message or interface package)."""
    return name in ROS_PACKAGES or name.endswith(("_msgs", "_srvs", "_interfaces"))


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[pytest.CollectReport]:
    report = yield
    if WITHOUT_ROS and report.failed and isinstance(collector, pytest.Module):
        missing = MISSING_MODULE.search(str(report.longrepr))
        if missing and is_ros_package(missing.group(1)):
            report.outcome = "skipped"
            report.longrepr = (
                str(collector.path),
                0,
                f"Skipped: needs ROS 2 (imports {missing.group(1)}); make test runs it",
            )
    return report


# --- Test-side ROS clients ---------------------------------------------------------------------
SPINNING = "physai_ros.experiments.trials.spinning"  # the spinners' module: SPIN_ERRORS


@pytest.fixture(autouse=True)
def spinners_alive() -> Iterator[None]:
    """Fail the test during which a test-side spinner (``physai_ros.experiments.trials.spinning
    .Spinner``) died of an exception: after it, no sample arrives, and a check over "the samples
    since" would judge nothing. (The module is looked up, not imported: pure tests never load
    rclpy.)"""
    ros = sys.modules.get(SPINNING)
    before = len(ros.SPIN_ERRORS) if ros else 0
    yield
    ros = sys.modules.get(SPINNING)
    if ros is not None and len(ros.SPIN_ERRORS) > before:
        pytest.fail(
            "a test-side ROS client stopped spinning:\n" + "\n".join(ros.SPIN_ERRORS[before:])
        )


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
    stop_all(procs, grace=5.0)


# --- ROS 2's own tools, on a colcon-built install (as a user runs the package) ----------------
@pytest.fixture(scope="session")
def colcon_install(tmp_path_factory) -> Path:
    """``colcon build`` of the package into a fresh install space (once per session)."""
    base = tmp_path_factory.mktemp("colcon")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "colcon",
            "--log-base",
            str(base / "log"),
            "build",
            "--base-paths",
            str(REPO_ROOT),
            "--packages-select",
            "physai_ros",
            "--build-base",
            str(base / "build"),
            "--install-base",
            str(base / "install"),
            "--event-handlers",
            "console_direct-",
        ],
        cwd=base,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return base / "install"


@pytest.fixture
def ros2(colcon_install, ros_domain) -> Iterator[Callable[..., subprocess.Popen]]:
    """Run ``ros2 <args>`` as a user would: in a shell that sourced the install's setup.bash.
    Needs ROS 2's command line (a ROS install, or ``scripts/test_tools.sh``); in CI its absence
    is an error. Every process started is stopped (SIGINT, as Ctrl-C) at teardown."""
    import shutil

    if shutil.which("ros2") is None:
        message = "the ros2 command line is not installed (scripts/test_tools.sh)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    procs: list[subprocess.Popen] = []
    setup = colcon_install / "setup.bash"

    def _ros2(*args: str, log: Path | None = None) -> subprocess.Popen:
        command = " ".join(shlex.quote(a) for a in ("ros2", *args))
        out = open(log, "w") if log else subprocess.PIPE  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(
            ["bash", "-c", f"source {shlex.quote(str(setup))} && exec {command}"],
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        procs.append(proc)
        return proc

    yield _ros2
    stop_all(procs, grace=15.0)
