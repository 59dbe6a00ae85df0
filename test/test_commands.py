"""Every ``physai bench`` and ``physai lesson`` leaf runs here once, in its smallest honest form.

``--help`` (test_package.py) imports a leaf's module but never calls its ``run()``: ``physai bench
bus`` crashed on a renamed bus method with CI green. Each test here goes through ``physai_ros.cli``
with small arguments (the options a user has for a quick check), and asserts the printed metric
line -- a benchmark's last line is ``metric = value`` -- and the files written under ``--output``.
The numbers themselves are the benchmarks' business, not asserted beyond being sane.

``RUN_BY`` at the end names the test that runs each user command, here or elsewhere, and
``test_every_command_is_run_by_a_test`` keeps it complete. The judged trial benches
(``physai bench crash`` …, minutes to hours each) are only mounted and asked for ``--help`` here;
their representative runs are tests of their own (test_crash_rejoin.py, test_force_bench.py,
test_net_hosts.py, …).
"""

from __future__ import annotations

import csv
import re
import subprocess
import sys
from pathlib import Path

import pytest

from physai_ros.cli import main


def physai(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """``physai <args>`` in this process; its stdout, after asserting exit status 0."""
    code = main(list(args))
    out, err = capsys.readouterr()
    assert code == 0, out + err
    return out


def metric(out: str, name: str) -> float:
    """The value of the last line, which must read ``<name> = <value>``."""
    last = out.strip().splitlines()[-1]
    found = re.fullmatch(rf"{name} = (\d+(?:\.\d+)?)( \(.*\))?", last)
    assert found is not None, f"last line {last!r} is not '{name} = <value>'"
    return float(found.group(1))


def csv_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_bench_trajectory(capsys, tmp_path):
    out = physai(capsys, "bench", "trajectory", "--moves", "5", "--output", str(tmp_path))
    # the time-optimal move is never longer than the quintic's; the quintic at most ~2x
    assert 1.0 <= metric(out, "quintic_over_ruckig_duration") < 2.5
    assert "| ruckig (time-optimal) |" in out
    rows = csv_rows(tmp_path / "durations.csv")
    assert len(rows) == 5, rows


def test_bench_plan(capsys, tmp_path):
    out = physai(capsys, "bench", "plan", "--points", "300", "--subset", "20")
    assert "same triangle True" in out, out  # pruned search == brute force on the subset
    assert "closing:" in out and "MuJoCo flex" in out
    assert metric(out, "selection_speedup") > 1.0


def test_bench_pick(capsys):
    out = physai(capsys, "bench", "pick", "--positions", "1", "--sweeps", "B")
    assert "grasps: 7," in out, out  # sweep B's 7 rows, one position each
    assert re.search(r"sweep, 2 jobs: \d+\.\d+ s wall", out), out
    assert 0.5 < metric(out, "pick_overhead_ratio") < 5.0


def test_bench_cameras(capsys):
    """Both cameras' images cost more than one camera's, and both add to the physics."""
    out = physai(capsys, "bench", "cameras", "--rate", "2", "--width", "64", "--height", "48")
    one = float(re.search(r"\| front_cam: 2 images \| [\d.]+ \| ([\d.]+) \|", out).group(1))
    both = float(re.search(r"\| 2 cameras: 2 images each \| [\d.]+ \| ([\d.]+) \|", out).group(1))
    assert 0.0 < one < both, out
    assert metric(out, "cameras_vs_physics") == pytest.approx(1.0 + both, abs=0.02), out


@pytest.mark.dds
def test_bench_tf(ros_domain, tmp_path):
    """A subprocess: the bench runs the TF node's callback under its own ``rclpy.init``."""
    cmd = [sys.executable, "-m", "physai_ros.cli", "bench", "tf", "--calls", "50"]
    result = subprocess.run(
        [*cmd, "--output", str(tmp_path)], capture_output=True, text=True, timeout=90
    )
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "| tf_publisher: JointState → /tf (whole callback) |" in out, out
    assert metric(out, "tf_node_message_vs_mj_kinematics") > 1.0
    rows = csv_rows(tmp_path / "bench_tf.csv")
    assert len(rows) == 4, rows


@pytest.mark.realtime
def test_bench_bus(capsys):
    """The driver's So101Bus against the pty servo emulator: opens, cycles, closes."""
    out = physai(capsys, "bench", "bus", "--cycles", "20", "--usb-latency-ms", "1")
    wire = re.search(r"\| max loop rate on the wire alone \| (\d+) Hz \|", out)
    assert wire is not None and "command-to-servo latency" in out, out
    assert "1 sync read + 1 sync write" in out and "(emulated) | 1 ms |" in out, out
    # the emulator adds the packets' byte times: no cycle beats the wire
    assert 0.0 < metric(out, "bus_loop_rate_hz") < float(wire.group(1))


def test_bench_bus_refuses_zero_cycles(capsys):
    assert main(["bench", "bus", "--cycles", "0"]) == 2
    assert "--cycles must be ≥ 1" in capsys.readouterr().err


def test_lesson16_one_sweep(capsys, tmp_path):
    out = physai(
        capsys, "lesson", "16", "--sweep", "A", "--positions", "1", "--output", str(tmp_path)
    )
    assert "### Sweep nominal" in out and "### Sweep A" in out, out
    names = {p.name for p in tmp_path.iterdir()}
    assert {"sweep_nominal.csv", "sweep_A.csv", "sweep_A.md", "lesson16.md"} <= names, names
    assert {"outcomes_per_mu.png", "success_vs_cone_ratio.png"} <= names, names
    assert len(csv_rows(tmp_path / "sweep_A.csv")) == 9  # one row per friction μ
    assert (tmp_path / "lesson16.md").read_text().count("### Sweep") == 2


def test_lesson_soft_one_setting(capsys, tmp_path):
    out = physai(
        capsys,
        "lesson",
        "soft",
        "--positions",
        "1",
        "--youngs",
        "5e4",
        "--masses",
        "0.03",
        "--output",
        str(tmp_path),
    )
    assert re.search(r"^\| 50 \| 30 \| cap \|", out, re.M), out
    assert re.search(r"^\| 50 \| 30 \| planned \|", out, re.M), out
    # the lesson's point on its judged cube: the cap crushes it, the planned close holds it
    assert "planned close does not on E 50 kPa / 30 g (cap: crushed 1/1" in out, out
    assert {p.name for p in tmp_path.iterdir()} == {"lesson_soft.md", "lesson_soft.png"}
    assert (tmp_path / "lesson_soft.md").read_text().strip() in out


# Each judged trial bench -> options its --help must list (a new bench fails here until listed).
TRIAL_OPTIONS = {
    "crash": ("--nodes", "--states", "--domain", "--keep"),
    "force-close": (
        "--runs", "--modes", "--robot", "--young", "--strain-limit", "--domain", "--keep",
        "--json", "--table", "--gain",
    ),
    "hand-pick": ("--runs", "--half", "--domain", "--keep", "--json", "--table"),
    "pick-goals": ("--goals", "--half", "--no-place", "--seed", "--domain", "--keep", "--json"),
    "policy-replay": (
        "--episodes", "--dataset", "--seed", "--repo-id", "--mode", "--domain", "--keep",
    ),
    "so101-force": (
        "--runs", "--target", "--contact", "--planned", "--band", "--positions", "--timeout",
        "--keep",
    ),
    "net": ("--loss", "--picks", "--domain", "--keep", "--listeners", "--seconds", "--levers"),
    "teleop": ("--modes", "--seconds", "--seed", "--domain", "--keep"),
}  # fmt: skip


def test_every_trial_bench_is_mounted_under_bench():
    from physai_ros.cli import TRIALS, _available

    assert set(_available(TRIALS)) == set(TRIAL_OPTIONS)


@pytest.mark.parametrize("name", sorted(TRIAL_OPTIONS))
def test_trial_bench_help_lists_its_options(name, capsys):
    """``physai bench <name> --help`` exits 0 without starting anything and lists its options."""
    with pytest.raises(SystemExit) as done:
        main(["bench", name, "--help"])
    out, err = capsys.readouterr()
    assert done.value.code == 0, err
    assert out.startswith(f"usage: physai bench {name}"), out
    missing = [option for option in TRIAL_OPTIONS[name] if option not in out]
    assert not missing, f"physai bench {name} --help lacks {missing}:\n{out}"


@pytest.mark.slow
def test_bench_record(capsys):
    out = physai(
        capsys, "bench", "record", "--episodes", "1", "--width", "64", "--height", "48",
        "--ray-workers", "1",
    )  # fmt: skip
    assert 0 < metric(out, "verified_episodes_per_hour_per_core") < 1e5
    shares = re.findall(r"\| (-?\d+)% \|", out)  # a part smaller than the noise: negative
    assert len(shares) == 6 and shares[-1] == "100", out  # five parts and the whole
    assert "1 held" in out
    assert re.search(r"Ray, 1 workers .* speed-up over one process \d+\.\d+x", out), out


def test_bench_stream(capsys, tmp_path):
    """One scripted pick and 3 s of the leader through every mode on both backends: the table
    has every row, the plot is written, and the law the bench exists for holds on the sim's
    servos: the staircase's RMS joint jerk is several times the interpolated modes'."""
    plot = tmp_path / "stream.png"
    out = physai(
        capsys, "bench", "stream", "--episodes", "1", "--leader-seconds", "3", "--plot", str(plot)
    )
    assert 0 < metric(out, "linear_vs_staircase_rms_jerk") < 0.25
    rows = re.findall(
        r"^\| (sim|emulator) \| (.+?) \| (\w+) \| .* \| ([\d.]+) \| \d+ \| [\d.]+ \|$", out, re.M
    )
    assert len(rows) == 12, out
    jerk = {(b, stream, mode): float(v) for b, stream, mode, v in rows}
    for mode in ("linear", "limited"):
        assert (
            jerk[("sim", "scripted pick 0", mode)] * 4
            < jerk[("sim", "scripted pick 0", "staircase")]
        )
    assert plot.stat().st_size > 10_000


# Each user command -> (test file, pattern of the call that runs it there): a new lesson, bench,
# graph or command fails here until a test runs it.
RUN_BY = {
    "bench tf": ("test_commands.py", r'"bench", "tf"'),
    "bench trajectory": ("test_commands.py", r'"bench", "trajectory"'),
    "bench sim": ("test_bench_sim.py", r'"bench",\s*"sim"'),
    "bench pick": ("test_commands.py", r'"bench", "pick"'),
    "bench bus": ("test_commands.py", r'"bench", "bus", "--cycles", "20"'),
    "bench plan": ("test_commands.py", r'"bench", "plan"'),
    "bench cameras": ("test_commands.py", r'"bench", "cameras"'),
    "lesson 07": ("test_lesson07.py", r"lesson07\.run\(args\)"),
    "lesson 13": ("test_lesson13.py", r"lesson13\.run\(args\)"),
    "lesson 16": ("test_commands.py", r'"lesson", "16"'),
    "lesson soft": ("test_commands.py", r'"lesson",\s*"soft",\s*"--positions"'),
    "bringup demo": ("test_bringup_cli.py", r'bringup\(tmp_path, "demo"'),
    "bringup trajectory": ("test_bringup_cli.py", r'bringup\(tmp_path, "trajectory"'),
    "bringup hand_pick": ("test_bringup_cli.py", r'bringup\(tmp_path, "hand_pick"'),
    "bringup pick": ("test_pick_ros.py", r'"bringup",\s*"pick"'),
    "bringup pick --emulated": ("test_bringup_cli.py", r'"pick",\s*"--emulated"'),
    "bringup policy": ("test_policy_runner.py", r'"bringup",\s*"policy"'),
    "bringup teleop": ("test_teleop.py", r'"bringup",\s*"teleop",\s*"--emulated"'),
    "plan": ("test_grasp_planning_pipeline.py", r'main\(\s*\[\s*"plan",\s*"--object"'),
    "trials --emulated": ("test_emulated_pick.py", r'"trials", "--emulated"'),
    "record": ("test_record.py", r'\[PHYSAI, "record"'),
    "replay": ("test_record.py", r'\[PHYSAI, "replay"'),
    "convert": ("test_dataset_recorder.py", r'\[PHYSAI, "convert"'),
    "bench record": ("test_commands.py", r'"bench", "record"'),
    "bench stream": ("test_commands.py", r'"bench", "stream"'),
}


def test_every_command_is_run_by_a_test():
    from physai_ros.cli import BENCHMARKS, LESSONS, _available
    from physai_ros.launching.graph import GRAPHS

    commands = {f"lesson {k}" for k in _available(LESSONS)} | {"plan", "trials --emulated"}
    commands |= {"record", "replay", "convert"}
    commands |= {f"bench {k}" for k in _available(BENCHMARKS)} | {"bringup pick --emulated"}
    commands |= {f"bringup {k}" for k in GRAPHS}
    assert commands == set(RUN_BY), (
        f"run by no test: {sorted(commands - set(RUN_BY))}, "
        f"no such command: {sorted(set(RUN_BY) - commands)}"
    )
    here = Path(__file__).parent
    for command, (name, call) in RUN_BY.items():
        text = (here / name).read_text().split("\nRUN_BY = {")[0]  # not the patterns themselves
        assert re.search(call, text), f"{name} does not run physai {command}"
