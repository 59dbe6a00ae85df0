"""Benchmark: the sim bridge's real-time factor, free-running, against raw ``mj_step``.

``physai bench sim [--robot so101|panda] [--seconds S] [--listeners 0,1,3] [--levers]
[--executor single|multi|events] [--listener-prefix CMD] [--object soft_cube] [--count-vs N]``

All in one run on the same scene (``MujocoSim``'s compiled model), so the ratios survive a noisy
machine: a plain Python loop of ``mj_step`` with the arm at rest (before and after, averaged as
the baseline), then the bridge node at real_time_factor 0 with every publisher on at its default
SIM-time rate (/clock, /joint_states, tracking error, controller state, cube pose, jaw wrenches;
markers only go out when subscribed), spun as ``run_node`` spins it (its DDS profile, a
single-threaded executor unless ``--executor``), once per listener count of ``--listeners``:

- 0: the bridge's own cost, the measure the sim bridge's target is set on (>= 0.5 of raw
  for the SO-101);
- N > 0: N listener processes, each an rclpy node subscribed to every stream the way the
  standard consumers subscribe (/clock best effort depth 1 like rclpy's and rclcpp's time
  source, /joint_states with the sensor-data profile like robot_state_publisher, the rest
  reliable depth 10 like RViz), so every message is really sent and delivered N times. They
  run on the same cores (2 here); their CPU share is printed with them. ``--listener-prefix``
  starts them through a command (``ip netns exec <ns>``, as ``physai bench net --listeners``
  does for another host across a veth link).

``--levers`` measures, in the same run, each way tried to keep pace with listeners:
the executor kinds, per-topic rate policies, burst length; a table gives each one's ratio to
raw per listener count.

Real-time factor = simulated seconds per wall second. Last line: ``sim_bridge_vs_raw = <ratio>``
(0 listeners, product defaults).

``--object soft_cube`` measures instead what the soft object (config/scene.yaml ``soft``: a
flex cube of ``soft.count.cube`` vertices per edge, 30 g, E 5·10⁴ Pa, discrete integrator) costs:
raw ``mj_step`` and the bridge with no subscriber, each without it, with it, and with it at
``--count-vs`` vertices per edge (default 4, the resolution before the bridge was made real time),
in one run; then whether the bridge keeps real time with the soft cube, and by what margin, and
the bridge paced at real_time_factor 1 with it: sim seconds per wall second and its CPU share.
Last line: ``soft_cube_rtf = <bridge real-time factor with the default soft cube>``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import mujoco

from physai_ros.errors import InvalidInput

LISTEN_TOPICS = (
    "clock",
    "joint_states",
    "tracking_error",
    "controller_state",
    "cube_pose",
    "jaw_contact",
    "contact_markers",
    "soft_object",
)
EXECUTORS = ("single", "multi", "events")
MATCH_TIMEOUT = 30.0  # [s wall] for the listeners to discover the bridge (a loaded machine)


@dataclass(frozen=True)
class Lever:
    """One way of running the bridge: an executor kind and bridge parameters (``name:=value``)."""

    name: str
    executor: str = "single"
    params: tuple[str, ...] = field(default=())


def levers(executor: str) -> list[Lever]:
    """The product defaults first (``executor``), then each lever tried on its own."""
    return [
        Lever(f"product defaults ({executor} executor)", executor),
        *(Lever(f"{kind} executor", kind) for kind in EXECUTORS if kind != executor),
        Lever("markers at 0 (off)", executor, ("markers_rate:=0.0",)),
        Lever("markers uncapped (max_wall_rate 0)", executor, ("markers.max_wall_rate:=0.0",)),
        Lever(
            "monitoring at 5 Hz (tracking_error, cube_pose)",
            executor,
            ("tracking_error_rate:=5.0", "cube_pose_rate:=5.0"),
        ),
        Lever(
            "clock, joint_states 50 Hz, contacts 25 Hz",
            executor,
            ("clock_rate:=50.0", "joint_states_rate:=50.0", "contacts_rate:=25.0"),
        ),
        Lever("bursts of 10 ms (max_publish_delay)", executor, ("max_publish_delay:=0.01",)),
    ]


def listener_counts(text: str) -> list[int]:
    """``--listeners`` as a list: "0,1,3" -> [0, 1, 3] (InvalidInput on anything else)."""
    try:
        counts = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        counts = []
    if not counts or any(not 0 <= n <= 16 for n in counts):
        raise InvalidInput(f"--listeners takes counts 0..16 separated by commas, got {text!r}")
    return counts


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--robot", choices=("so101", "panda"), default="so101")
    parser.add_argument("--seconds", type=float, default=5.0, help="wall time per measurement [s]")
    parser.add_argument(
        "--warm-up",
        type=float,
        default=1.5,
        help="wall time between the bridge's start and each measurement: discovery, matching "
        "with the listeners [s]",
    )
    parser.add_argument(
        "--listeners",
        default="0,1",
        help="listener process counts to measure, comma-separated, each subscribed to every "
        "stream (0, the baseline, is always measured)",
    )
    parser.add_argument(
        "--no-listener",
        action="store_true",
        help="only the run without listeners (= --listeners 0)",
    )
    parser.add_argument(
        "--levers",
        action="store_true",
        help="also measure each lever (executor, per-topic rates, bursts) per listener count",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="measure every case this many times, interleaved, and keep each one's best",
    )
    parser.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="single",
        help="the bridge's executor: single-threaded (run_node's), multi-threaded (2), or "
        "rclpy.experimental.EventsExecutor",
    )
    parser.add_argument(
        "--listener-prefix",
        default="",
        help="command the listener processes are started through (e.g. 'ip netns exec B')",
    )
    parser.add_argument(
        "--object",
        choices=("cube", "soft_cube"),
        default="cube",
        help="soft_cube: real-time factor with the soft cube beside the rigid one vs without",
    )
    parser.add_argument(
        "--count-vs",
        type=int,
        default=4,
        help="soft_cube: also measure the cube at this many vertices per edge (3 to 6)",
    )
    parser.add_argument("--listen", action="store_true", help=argparse.SUPPRESS)


def raw_rtf(
    robot: str, seconds: float, soft: bool = False, count: int | None = None
) -> tuple[float, int, float]:
    """Sim seconds per wall second of a plain ``mj_step`` loop on the bridge's scene (``soft``:
    with the default soft cube, at ``count`` vertices per edge; ``None`` = its default), the
    steps taken, and sim seconds per CPU second."""
    from physai_ros.sim.mujoco_sim import MujocoSim
    from physai_ros.sim.scene import scene_soft_object

    sim = MujocoSim(robot, soft=scene_soft_object(robot, count=count) if soft else None)
    model, data = sim.model, mujoco.MjData(sim.model)
    data.qpos[:] = sim.data.qpos
    data.ctrl[:] = sim.data.ctrl
    mujoco.mj_forward(model, data)
    steps, start, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        for _ in range(500):
            mujoco.mj_step(model, data)
        steps += 500
    sim = steps * model.opt.timestep
    return sim / (time.perf_counter() - start), steps, sim / (time.process_time() - cpu)


def _executor(kind: str):
    from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor

    if kind == "events":
        from rclpy.experimental import EventsExecutor

        return EventsExecutor()
    return MultiThreadedExecutor(num_threads=2) if kind == "multi" else SingleThreadedExecutor()


def bridge_rtf(
    robot: str,
    seconds: float,
    soft: bool = False,
    executor: str = "single",
    params: Sequence[str] = (),
    warm_up: float = 1.5,
    listeners: int = 0,
    real_time_factor: float = 0.0,
) -> tuple[float, float]:
    """Sim seconds per wall second of the bridge node at ``real_time_factor`` (0: free-running),
    measured once ``listeners`` subscribers matched its joint states and ``warm_up`` [s] later
    (``soft``: with the default soft cube, its pose and strain published; ``params``: more
    ``name:=value`` bridge parameters), spun by ``executor`` (``EXECUTORS``); and sim seconds per
    CPU second of this process (the bridge's threads: what it pays, whatever the load)."""
    import rclpy

    from physai_ros.nodes.sim_bridge import SimBridge
    from physai_ros.qos import use_dds_profile

    use_dds_profile()
    args = ["--ros-args", "-p", f"robot:={robot}", "-p", f"real_time_factor:={real_time_factor}"]
    for param in (*params, *(["soft_object:=cube"] if soft else [])):
        args += ["-p", param]
    with rclpy.init(args=args):
        node = SimBridge()
        spin = _executor(executor)
        spin.add_node(node)
        stop = threading.Event()

        def spin_until_stopped() -> None:
            # spin_once in a loop, stopped by a flag: the EventsExecutor's shutdown() and a
            # context shutdown (which wakes it) both deadlock against its spin in another thread
            while not stop.is_set():
                spin.spin_once(timeout_sec=0.05)

        spinner = threading.Thread(target=spin_until_stopped, daemon=True)
        spinner.start()
        try:
            deadline = time.monotonic() + MATCH_TIMEOUT
            while node.pub["joint_states"].get_subscription_count() < listeners:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{listeners} listeners not matched in {MATCH_TIMEOUT} s")
                time.sleep(0.05)
            time.sleep(warm_up)
            t0, w0, c0 = node.sim.time, time.perf_counter(), time.process_time()
            time.sleep(seconds)
            t1, w1, c1 = node.sim.time, time.perf_counter(), time.process_time()
        finally:
            node.stop()
            stop.set()
            spinner.join(timeout=2.0)
            spin.shutdown()
            node.destroy_node()
    return (t1 - t0) / (w1 - w0), (t1 - t0) / (c1 - c0)


def listen() -> int:
    """Subscribe to every bridge stream and print the message counts at SIGINT."""
    import rclpy
    from control_msgs.msg import JointTrajectoryControllerState
    from geometry_msgs.msg import PoseStamped, WrenchStamped
    from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64
    from visualization_msgs.msg import MarkerArray

    from physai_ros import interfaces as names
    from physai_ros.qos import use_dds_profile

    counts = dict.fromkeys(LISTEN_TOPICS, 0)

    def count(key):
        return lambda _msg: counts.__setitem__(key, counts[key] + 1)

    # raw=True: the listener takes the serialised bytes as delivered and skips Python
    # deserialisation, as a C++ subscriber (RViz, a recorder) would; DDS still delivers every
    # message, so the bridge pays the full cost of being listened to.
    clock_qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)
    streams = [
        (Clock, names.CLOCK, "clock", clock_qos),
        (JointState, names.JOINT_STATES, "joint_states", qos_profile_sensor_data),
        (JointState, names.TRACKING_ERROR, "tracking_error", 10),
        (JointTrajectoryControllerState, names.CONTROLLER_STATE, "controller_state", 10),
        (PoseStamped, names.CUBE_POSE, "cube_pose", 10),
        (MarkerArray, names.CONTACT_MARKERS, "contact_markers", 10),
        (PoseStamped, names.SOFT_OBJECT_POSE, "soft_object", 10),
        (Float64, names.SOFT_OBJECT_STRAIN, "soft_object", 10),
    ] + [
        (WrenchStamped, f"{names.JAW_CONTACT_PREFIX}/{jaw}", "jaw_contact", 10)
        for jaw in ("fixed_jaw", "moving_jaw", "left_finger", "right_finger")
    ]
    use_dds_profile()
    with rclpy.init():
        node = rclpy.create_node(f"bench_sim_listener_{os.getpid()}")
        for kind, topic, key, qos in streams:
            node.create_subscription(kind, topic, count(key), qos, raw=True)
        print("listening", flush=True)
        start, before = time.monotonic(), os.times()  # from here: not the imports' CPU
        try:
            rclpy.spin(node)
        except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException, RuntimeError):
            pass  # SIGINT may land inside a callback conversion: stopping is all we want
        finally:
            cpu = os.times()
            used = cpu.user + cpu.system - before.user - before.system
            got = ", ".join(f"{k} {v}" for k, v in counts.items())
            alive = time.monotonic() - start
            print(f"cpu {used:.2f} s in {alive:.2f} s; received {got}", flush=True)
    return 0


@dataclass
class Heard:
    """What the listener processes of one measurement reported."""

    cpu: float = 0.0  # [cores] their CPU time over the time they listened, summed
    lines: list[str] = field(default_factory=list)


@contextmanager
def listeners(count: int, prefix: Sequence[str] = ()) -> Iterator[Heard]:
    """``count`` listener processes (through the command ``prefix``), running once each has
    subscribed; stopped with SIGINT on exit, their reports in the yielded ``Heard``."""
    heard = Heard()
    cmd = [*prefix, sys.executable, "-m", "physai_ros.experiments.bench_sim", "--listen"]
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, start_new_session=True)
        for _ in range(count)
    ]
    try:
        for proc in procs:
            if proc.stdout.readline().strip() != "listening":
                raise RuntimeError(f"listener {' '.join(cmd)} did not start")
        yield heard
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGINT)
        for proc in procs:
            try:
                out, _ = proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                out, _ = proc.communicate()
            heard.lines.append(out.strip())
            words = out.split()  # "cpu <s> s in <s> s; received ..."
            if len(words) > 4 and words[0] == "cpu":
                heard.cpu += float(words[1]) / max(float(words[4]), 1e-3)


def run_soft(robot: str, seconds: float, count_vs: int) -> int:
    """Real-time factors without the soft cube, with it, and with it at ``count_vs`` vertices
    per edge, raw and through the bridge, all in one run (the ratios survive a noisy machine)."""
    from physai_ros.sim.scene import scene_soft_object

    count = scene_soft_object(robot, shape="cube").count
    scene_soft_object(robot, shape="cube", count=count_vs)  # a bad --count-vs: InvalidInput now
    measures = {
        "raw mj_step": lambda soft=False, n=None: raw_rtf(robot, seconds, soft, n)[0],
        "sim bridge": lambda soft=False, n=0: bridge_rtf(
            robot, seconds, soft, params=[f"soft_count:={n}"] if soft else ()
        )[0],
    }
    rtf = 0.0
    for where, measure in measures.items():
        rigid, rtf, other = measure(), measure(True), measure(True, count_vs)
        print(f"{where} ({robot}): real-time factor {rigid:.2f} rigid cube only")
        for n, factor in ((count, rtf), (count_vs, other)):
            print(f"{where} ({robot}): real-time factor {factor:.2f} with the soft cube, count {n}")
        print(
            f"{where}: soft cube / rigid = {rtf / rigid:.4f} (1/{rigid / rtf:.0f}); "
            f"count {count} / count {count_vs} = {rtf / other:.2f}"
        )
    verdict = f"kept, {100 * (rtf - 1.0):.0f} % margin" if rtf >= 1.0 else "NOT kept"
    print(f"real time with the soft cube (bridge, count {count}): {verdict}")
    paced, per_cpu = bridge_rtf(robot, seconds, True, real_time_factor=1.0)
    print(
        f"sim bridge at real_time_factor 1 with the soft cube: {paced:.3f} sim s per wall s, "
        f"{100 * paced / per_cpu:.0f} % of one core"
    )
    print(f"soft_cube_rtf = {rtf:.3f}")
    return 0


def _table(rows: dict[str, dict[int, float]], counts: list[int], raw: float) -> list[str]:
    """Markdown: one row per lever; per listener count the real-time factor over raw
    ``mj_step``'s and, in brackets, over the same lever's with no listener."""
    head = ["lever"] + [f"{n} listener{'s' if n != 1 else ''}" for n in counts]
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for name, by_count in rows.items():
        cells = [f"{by_count[n] / raw:.3f} ({by_count[n] / by_count[0]:.2f})" for n in counts]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def run(args: argparse.Namespace) -> int:
    if args.listen:
        return listen()
    os.environ.setdefault("ROS_DOMAIN_ID", str(100 + os.getpid() % 100))
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    if args.object == "soft_cube":
        return run_soft(args.robot, args.seconds, args.count_vs)
    counts = [0] if args.no_listener else sorted({0, *listener_counts(args.listeners)})
    if args.seconds <= 0 or args.warm_up < 0:
        raise InvalidInput(
            f"--seconds must be > 0 and --warm-up >= 0, got {args.seconds}, {args.warm_up}"
        )
    if args.rounds < 1:
        raise InvalidInput(f"--rounds must be at least 1, got {args.rounds}")
    prefix = shlex.split(args.listener_prefix)
    tried = levers(args.executor)[: None if args.levers else 1]
    total = len(tried) * len(counts) * args.rounds
    eta = (total + 2) * (args.seconds + args.warm_up + 0.5)
    print(f"{total} bridge runs + 2 raw, about {eta:.0f} s", file=sys.stderr, flush=True)
    raw_before, steps, cpu_before = raw_rtf(args.robot, args.seconds)
    print(f"raw mj_step ({args.robot}): {steps} steps, real-time factor {raw_before:.1f}")
    rows: dict[str, dict[int, float]] = {lever.name: {} for lever in tried}
    cpu_rows: dict[str, dict[int, float]] = {lever.name: {} for lever in tried}
    done = 0
    for rnd in range(args.rounds):  # interleaved, the best of each kept: load spikes only slow
        for lever in tried:
            for n in counts:
                done += 1
                step = f"[{done}/{total}] round {rnd + 1}: {lever.name}, {n} listeners"
                print(step, file=sys.stderr, flush=True)
                with listeners(n, prefix) as heard:
                    rtf, per_cpu = bridge_rtf(
                        args.robot,
                        args.seconds,
                        False,
                        lever.executor,
                        lever.params,
                        args.warm_up,
                        n,
                    )
                rows[lever.name][n] = max(rtf, rows[lever.name].get(n, 0.0))
                cpu_rows[lever.name][n] = max(per_cpu, cpu_rows[lever.name].get(n, 0.0))
                extra = f"; listeners' CPU {heard.cpu:.2f} cores" if n else ""
                print(
                    f"{lever.name}, {n} listeners: real-time factor {rtf:.1f}, "
                    f"{per_cpu:.1f} sim s per CPU s{extra}"
                )
                for line in heard.lines[:1]:
                    print(f"  listener 1 of {n}: {line}")
    raw_after, _, cpu_after = raw_rtf(args.robot, args.seconds)
    raw, raw_cpu = 0.5 * (raw_before + raw_after), 0.5 * (cpu_before + cpu_after)
    print(
        f"raw mj_step again: real-time factor {raw_after:.1f} "
        f"(baseline = mean {raw:.1f}, drift {100 * (raw_after / raw_before - 1):+.1f} %)"
    )
    where = f"listeners through {args.listener_prefix!r}" if prefix else "listeners on this host"
    best = f", best of {args.rounds}" if args.rounds > 1 else ""
    print(f"\nsim bridge real-time factor / raw mj_step ({args.robot}, {where}{best}):\n")
    print("\n".join(_table(rows, counts, raw)) + "\n")
    print("(in brackets: over the same lever with no listener)\n")
    print("the same in CPU time: sim seconds per CPU second of the bridge / of raw mj_step\n")
    print("\n".join(_table(cpu_rows, counts, raw_cpu)) + "\n")
    ratio = rows[tried[0].name][0] / raw
    if args.robot == "so101":
        print(f"target for the SO-101: >= 0.5 of raw; {'met' if ratio >= 0.5 else 'NOT met'}")
    print(f"sim_bridge_vs_raw = {ratio:.3f}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    sys.exit(run(parser.parse_args()))
