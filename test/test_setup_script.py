"""Bad set-up input gets a clear message, a sourced ROS is used, and a rerun finishes an
interrupted set-up.

These run the real scripts/setup.sh in scratch locations (PHYSAI_VENV), never touching the
project's own .venv.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from support.paths import REPO_ROOT

SETUP = REPO_ROOT / "scripts" / "setup.sh"


def setup_env(venv: Path, **env: str) -> dict[str, str]:
    """This process's environment without any ROS, virtual environment or PYTHONPATH."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("ROS_", "VIRTUAL_ENV"))}
    full.pop("PYTHONPATH", None)
    full.pop("PHYSAI_SETUP", None)  # the profile: each test says which, or the default
    # No virtual environment on PATH (ours or any other): the script must find Pythons itself.
    full["PATH"] = os.pathsep.join(
        p for p in full["PATH"].split(os.pathsep) if not (Path(p).parent / "pyvenv.cfg").exists()
    )
    # pip byte-compiles every file it installs (torch alone: thousands), half of an install's
    # time; that is pip's work, not the script's, and Python compiles what the test imports.
    full.update(PHYSAI_VENV=str(venv), PIP_COMPILE="0", **env)
    return full


def run_setup(venv: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(SETUP)],
        env=setup_env(venv, **env),
        capture_output=True,
        text=True,
        timeout=900,
    )


def other_python() -> tuple[str, str, dict[str, str]]:
    """A real interpreter other than 3.11 (this machine kind has several under pyenv)."""
    env: dict[str, str] = {}
    if shutil.which("pyenv"):
        bare = subprocess.run(["pyenv", "versions", "--bare"], capture_output=True, text=True)
        env["PYENV_VERSION"] = ":".join(bare.stdout.split())
    for version in ("3.12", "3.13", "3.10"):
        exe = shutil.which(f"python{version}")
        if (
            exe
            and subprocess.run(
                [exe, "-c", "pass"], env={**os.environ, **env}, capture_output=True
            ).returncode
            == 0
        ):
            return exe, version, env
    pytest.fail("this test needs a second Python (3.10, 3.12 or 3.13) to pose as the wrong one")


def test_unsupported_python_is_named(tmp_path):
    exe, version, env = other_python()
    result = run_setup(tmp_path / "venv", PHYSAI_PYTHON=exe, **env)
    assert result.returncode == 1
    assert f"Python {version}" in result.stderr and "CPython 3.11" in result.stderr
    assert "source a ROS 2" in result.stderr
    assert not (tmp_path / "venv").exists(), "a refused set-up must not create anything"


def test_sourced_ros_with_another_python_is_named(tmp_path):
    site = tmp_path / "opt/ros/jazzy/lib/python3.12/site-packages"
    (site / "rclpy").mkdir(parents=True)
    (site / "rclpy" / "__init__.py").write_text("")
    result = run_setup(
        tmp_path / "venv", ROS_DISTRO="jazzy", PYTHONPATH=str(site), PHYSAI_PYTHON="python3.11"
    )
    assert result.returncode == 1
    assert "built for Python 3.12" in result.stderr
    assert "Python 3.11" in result.stderr
    assert not (tmp_path / "venv").exists()


def test_sourced_ros_without_rclpy_is_named(tmp_path):
    result = run_setup(tmp_path / "venv", ROS_DISTRO="kilted", PHYSAI_PYTHON="python3.11")
    assert result.returncode == 1
    assert "cannot import rclpy" in result.stderr
    assert "source /opt/ros/kilted/setup.bash" in result.stderr


def test_no_registry_is_named(tmp_path):
    # Port 9 (discard) on loopback refuses at once: pip can reach no index and no local wheels.
    result = run_setup(
        tmp_path / "venv",
        PIP_CONFIG_FILE=os.devnull,
        PIP_INDEX_URL="http://127.0.0.1:9/simple",
        PIP_EXTRA_INDEX_URL="",
        PIP_FIND_LINKS="",
        PIP_RETRIES="0",
        PIP_TIMEOUT="2",
    )
    assert result.returncode == 1
    assert "could not download" in result.stderr
    assert "rerun" in result.stderr
    assert not (tmp_path / "venv" / ".physai-setup-stamp").exists()


def plan(profile: str | None, venv: Path, **env: str) -> list[str]:
    """The profile's pip install groups (``--plan``), with Python 3.11 unless ``env`` says."""
    chosen = {"PHYSAI_SETUP": profile} if profile else {}
    if profile != "py312":  # that profile finds its Python 3.12 itself
        chosen["PHYSAI_PYTHON"] = "python3.11"
    result = subprocess.run(
        ["bash", str(SETUP), "--plan"],
        env=setup_env(venv, **chosen, **env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_the_demo_profile_installs_no_lerobot_and_no_torch(tmp_path):
    """`make demo` sets up the demo profile: nothing of LeRobot (torch alone
    is gigabytes) nor the test tools. Checked on the script's plan (the groups its installs are
    made from), which costs nothing; test_setup_with_a_sourced_ros_… installs both profiles."""
    demo, full = plan("demo", tmp_path / "venv"), plan("full", tmp_path / "venv")
    assert not (tmp_path / "venv").exists(), "a plan must not create anything"
    assert demo == [
        "ROS 2 Kilted wheels: -r requirements/ros-kilted-wheels.txt",
        "Python dependencies: -r requirements/base.txt",
    ]
    for name in ("ros-kilted-wheels.txt", "base.txt"):
        pins = (REPO_ROOT / "requirements" / name).read_text().lower()
        wanted = [line.split("#")[0].strip() for line in pins.splitlines()]
        assert not [w for w in wanted if w.startswith(("torch", "lerobot", "pytest"))], name
    assert full[: len(demo)] == demo, "the full profile builds on the demo one"
    assert full[len(demo) :] == [
        "test and lint tools: -r requirements/test.txt",
        "LeRobot dependencies (torch, datasets, Feetech SDK): -r requirements/lerobot.txt",
        "LeRobot: --no-deps -r requirements/lerobot-nodeps.txt",
    ]
    assert plan("full", tmp_path / "venv") == full == plan(None, tmp_path / "venv"), (
        "full is the default (make setup, make test, a bare scripts/setup.sh)"
    )


def test_the_py312_profile_is_python_3_12_with_lerobot_0_6_and_no_ros(tmp_path):
    """`make test-py312`'s environment: no ROS wheels even with a ROS install sourced (none is
    built for that Python), LeRobot 0.6 with its own dependencies, and Python 3.12 only. Checked
    on the plan; `make test` builds the environment itself and runs the tests in it."""
    venv = tmp_path / "venv"
    for sourced in ({}, {"ROS_DISTRO": "kilted"}):
        assert plan("py312", venv, **sourced) == [
            "Python dependencies: -r requirements/base.txt",
            "LeRobot 0.6 (torch, datasets, Feetech SDK, training): -r requirements/lerobot-0.6.txt",
            "test and lint tools: -r requirements/test.txt",
        ]
    pins = (REPO_ROOT / "requirements" / "lerobot-0.6.txt").read_text()
    assert "lerobot[feetech,training,diffusion]==0.6.1" in pins.splitlines()
    wrong = run_setup(venv, PHYSAI_SETUP="py312", PHYSAI_PYTHON="python3.11")
    assert wrong.returncode == 1 and "needs Python 3.12" in wrong.stderr, wrong.stderr
    assert not venv.exists(), "a plan or a refused set-up must not create anything"


def test_an_unknown_profile_is_named(tmp_path):
    result = run_setup(tmp_path / "venv", PHYSAI_SETUP="real")
    assert result.returncode == 1
    assert "PHYSAI_SETUP=real" in result.stderr and "demo" in result.stderr
    assert not (tmp_path / "venv").exists()


def imports(venv: Path, env: dict[str, str], module: str) -> bool:
    return (
        subprocess.run(
            [str(venv / "bin" / "python"), "-c", f"import {module}"], env=env, capture_output=True
        ).returncode
        == 0
    )


def ros_prefix(root: Path) -> dict[str, str]:
    """A sourced ROS 2 install as a shell sees it. None exists on this machine kind, so one is
    made: a prefix holding rclpy and the message packages (the Kilted wheels, no
    tf2_msgs/control_msgs), on PYTHONPATH, LD_LIBRARY_PATH and AMENT_PREFIX_PATH, ROS_DISTRO set.
    Returns those variables."""
    base = setup_env(root / "unused")
    subprocess.run(["python3.11", "-m", "venv", str(root)], env=base, check=True)
    wheels = REPO_ROOT / "requirements" / "ros-kilted-wheels.txt"
    python = root / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "-r", str(wheels)],
        env=base,
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [str(python), str(REPO_ROOT / "scripts" / "fix_wheel_cmake_paths.py"), str(root)],
        env=base,
        check=True,
        capture_output=True,
    )
    site = root / "lib" / "python3.11" / "site-packages"
    libs = [str(root / "lib"), *map(str, sorted(site.glob("ros_*.libs")))]
    return {
        "ROS_DISTRO": "kilted",
        "PYTHONPATH": str(site),
        "LD_LIBRARY_PATH": os.pathsep.join(libs),
        "AMENT_PREFIX_PATH": str(root),
        "CMAKE_PREFIX_PATH": str(root),
    }


# What the sourced-ROS venv runs beside the DDS round trip and the interfaces' type hashes: the
# streaming path on both backends and the policy runner replaying picks over ROS.
ON_THE_SOURCED_ROS = (
    "test_controller_conformance.py::test_a_stream_moves_the_arm_and_the_arm_holds_when_it_stops",
    "test_controller_conformance.py::test_a_stream_far_from_the_arm_is_refused_and_nothing_moves",
    "test_controller_conformance.py::test_a_stream_may_carry_the_jaw",
    "test_policy_runner.py::test_replayed_picks_hold_the_cube_again_over_ros",
)


# dds: it runs test_dds_roundtrip.py (ROS processes on the default domain); realtime: it asserts
# the rerun's wall time. Both keep it out of make test's parallel half.
@pytest.mark.slow
@pytest.mark.dds
@pytest.mark.realtime
def test_setup_with_a_sourced_ros_uses_it_and_a_rerun_finishes_an_interrupted_one(tmp_path):
    """ROS mode end to end, interrupted on the way, as a Ctrl-C or a lost SSH would. The set-up
    must take rclpy from the sourced install (installing none of the ROS wheels), generate the
    missing interfaces, and the package must then talk over DDS with them. (The wheels mode's
    whole set-up is what CI's own `make setup` runs on a clean clone; one interrupted set-up
    covers the resume, which is the same code in both modes.) It is set up as `make demo` does
    (the demo profile: no LeRobot, no torch), then as `make test` does (the full profile), which
    must add only the rest."""
    sourced = ros_prefix(tmp_path / "ros")
    venv = tmp_path / "venv"
    demo = {"PHYSAI_PYTHON": "python3.11", "PHYSAI_SETUP": "demo", **sourced}
    proc = subprocess.Popen(
        ["bash", str(SETUP)],
        env=setup_env(venv, **demo),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    # Killed in the middle of installing packages: pip's log of the first install has begun.
    first = venv / ".physai-setup-logs" / "pip-Python dependencies.log"
    deadline = time.monotonic() + 120
    while not (first.exists() and first.stat().st_size) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(2.0)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert first.exists(), "the set-up never reached its first install"
    assert not (venv / ".physai-setup-stamp").exists()

    result = run_setup(venv, **demo)
    assert result.returncode == 0, result.stderr
    assert "resuming an unfinished set-up" in result.stderr
    assert "(ros-kilted, Python 3.11, the demo profile)" in result.stderr
    assert "ROS 2 Kilted wheels" not in result.stderr, "a sourced ROS must be used, not wheels"
    assert not list((venv / "lib" / "python3.11" / "site-packages").glob("rclpy")), (
        "rclpy must come from the sourced install"
    )
    env = {**setup_env(venv, **sourced)}
    assert imports(venv, env, "mujoco") and imports(venv, env, "physai_ros_interfaces.srv")
    # (not pytest: this ROS-mode venv sees the system Python's packages, and this one has it)
    for absent in ("torch", "lerobot"):
        assert not imports(venv, env, absent), f"the demo profile installed {absent}"

    full = run_setup(venv, PHYSAI_PYTHON="python3.11", **sourced)  # the default: full
    assert full.returncode == 0, full.stderr
    assert "adding LeRobot" in full.stderr and "installing LeRobot" in full.stderr
    for redone in (
        "installing Python",
        "interface packages",
        "installing physai_ros",
        "resum",
        "creat",
    ):
        assert redone not in full.stderr, f"the full profile redid the base: {full.stderr}"
    for present in (
        "torch",
        "lerobot.motors.feetech",
        "lerobot.datasets.lerobot_dataset",
        "pytest",
    ):
        assert imports(venv, env, present), f"the full profile lacks {present}"
    check = subprocess.run(
        [
            "bash",
            "-c",
            f"source {REPO_ROOT}/scripts/env.sh && "
            "python -c 'import mujoco; print(mujoco.__version__)' && python -m pytest -q "
            f"-p no:cacheprovider {REPO_ROOT}/test/test_dds_roundtrip.py "
            f"{REPO_ROOT}/test/test_interfaces.py "
            # the streaming path on both backends, and the policy runner replaying picks
            + " ".join(f"{REPO_ROOT}/test/{test}" for test in ON_THE_SOURCED_ROS),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        cwd=REPO_ROOT,
    )
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-2000:]
    assert check.stdout.startswith("3.17.0\n") and " passed" in check.stdout

    for profile in ("full", "demo"):  # a full venv is a demo one too
        start = time.monotonic()
        again = run_setup(venv, **{**demo, "PHYSAI_SETUP": profile})
        assert again.returncode == 0 and again.stderr == ""
        assert time.monotonic() - start < 10.0, "an up-to-date environment must be a no-op"
