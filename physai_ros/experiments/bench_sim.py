"""Benchmark: the sim bridge's real-time factor, free-running, against raw ``mj_step``.

``physai bench sim [--robot so101|panda] [--seconds S] [--no-listener] [--object soft_cube]
[--count-vs N]``

All in one run on the same scene (``MujocoSim``'s compiled model), so the ratios survive a noisy
machine: a plain Python loop of ``mj_step`` with the arm at rest (before and after, averaged as
the baseline), then the bridge node at real_time_factor 0 with every publisher on at its default
SIM-time rate (/clock, /joint_states, tracking error, cube pose, jaw wrenches; markers only go out
when subscribed) twice:

1. with no subscriber: the bridge's own cost, the measure the sim-bridge issue sets the target
   on (>= 0.5 of raw for the SO-101);
2. with a listener process subscribed to every stream the way the standard consumers subscribe
   (/clock best effort depth 1 like rclpy's and rclcpp's time source, /joint_states with the
   sensor-data profile like robot_state_publisher, the rest reliable depth 10 like RViz), so
   every message is really serialised, sent and delivered. On 2 cores the listener occupies one
   of them; its CPU share is printed with it.

Real-time factor = simulated seconds per wall second. Last line: ``sim_bridge_vs_raw = <ratio>``
(measurement 1).

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
import signal
import subprocess
import sys
import threading
import time

import mujoco

LISTEN_TOPICS = (
    "clock",
    "joint_states",
    "tracking_error",
    "cube_pose",
    "jaw_contact",
    "contact_markers",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--robot", choices=("so101", "panda"), default="so101")
    parser.add_argument("--seconds", type=float, default=5.0, help="wall time per measurement [s]")
    parser.add_argument(
        "--no-listener", action="store_true", help="skip the run with a subscriber process"
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
) -> tuple[float, int]:
    """Sim seconds per wall second of a plain ``mj_step`` loop on the bridge's scene (``soft``:
    with the default soft cube, at ``count`` vertices per edge; ``None`` = its default)."""
    from physai_ros.backends.mujoco_sim import MujocoSim
    from physai_ros.models import scene_soft_object

    sim = MujocoSim(robot, soft=scene_soft_object(robot, count=count) if soft else None)
    model, data = sim.model, mujoco.MjData(sim.model)
    data.qpos[:] = sim.data.qpos
    data.ctrl[:] = sim.data.ctrl
    mujoco.mj_forward(model, data)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(500):
            mujoco.mj_step(model, data)
        steps += 500
    return steps * model.opt.timestep / (time.perf_counter() - start), steps


def bridge_rtf(robot: str, seconds: float, soft: bool = False, count: int | None = None) -> float:
    """Sim seconds per wall second of the bridge node at real_time_factor 0 (after 1 s warm-up;
    ``soft``: with the default soft cube, its pose and strain published, at ``count`` vertices
    per edge; ``None`` = its default)."""
    return bridge_run(robot, seconds, soft, count)[0]


def bridge_run(
    robot: str, seconds: float, soft: bool, count: int | None = None, real_time_factor: float = 0.0
) -> tuple[float, float]:
    """(sim seconds per wall second, this process's CPU time per wall second) of the bridge
    node at ``real_time_factor`` over ``seconds`` after 1 s warm-up; see ``bridge_rtf``."""
    import rclpy
    from rclpy.executors import MultiThreadedExecutor

    from physai_ros.nodes.sim_bridge import SimBridge

    args = ["--ros-args", "-p", f"robot:={robot}", "-p", f"real_time_factor:={real_time_factor}"]
    if soft:
        args += ["-p", "soft_object:=cube", "-p", f"soft_count:={count or 0}"]
    with rclpy.init(args=args):
        node = SimBridge()
        executor = MultiThreadedExecutor(num_threads=2)
        executor.add_node(node)
        spinner = threading.Thread(target=executor.spin, daemon=True)
        spinner.start()
        time.sleep(1.0)
        t0, w0, c0 = node.sim.time, time.perf_counter(), time.process_time()
        time.sleep(seconds)
        t1, w1, c1 = node.sim.time, time.perf_counter(), time.process_time()
        node.stop()
        executor.shutdown()
        node.destroy_node()
    return (t1 - t0) / (w1 - w0), (c1 - c0) / (w1 - w0)


def listen() -> int:
    """Subscribe to every bridge stream and print the message counts at SIGINT."""
    import rclpy
    from geometry_msgs.msg import PoseStamped, WrenchStamped
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState
    from visualization_msgs.msg import MarkerArray

    from physai_ros import interfaces as names

    counts = dict.fromkeys(LISTEN_TOPICS, 0)

    def count(key):
        return lambda _msg: counts.__setitem__(key, counts[key] + 1)

    # raw=True: the listener takes the serialised bytes as delivered and skips Python
    # deserialisation, as a C++ subscriber (RViz, a recorder) would; DDS still delivers every
    # message, so the bridge pays the full cost of being listened to.

    from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data

    clock_qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)
    with rclpy.init():
        node = rclpy.create_node("bench_sim_listener")
        node.create_subscription(Clock, names.CLOCK, count("clock"), clock_qos, raw=True)
        node.create_subscription(
            JointState, names.JOINT_STATES, count("joint_states"), qos_profile_sensor_data, raw=True
        )
        node.create_subscription(
            JointState, names.TRACKING_ERROR, count("tracking_error"), 10, raw=True
        )
        node.create_subscription(PoseStamped, names.CUBE_POSE, count("cube_pose"), 10, raw=True)
        node.create_subscription(
            MarkerArray, names.CONTACT_MARKERS, count("contact_markers"), 10, raw=True
        )
        for jaw in ("fixed_jaw", "moving_jaw", "left_finger", "right_finger"):
            topic = f"{names.JAW_CONTACT_PREFIX}/{jaw}"
            node.create_subscription(WrenchStamped, topic, count("jaw_contact"), 10, raw=True)
        print("listening", flush=True)
        try:
            rclpy.spin(node)
        except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException, RuntimeError):
            pass  # SIGINT may land inside a callback conversion: stopping is all we want
        finally:
            cpu = os.times()
            got = ", ".join(f"{k} {v}" for k, v in counts.items())
            print(f"cpu {cpu.user + cpu.system:.2f} s; received {got}", flush=True)
    return 0


def run_soft(robot: str, seconds: float, count_vs: int) -> int:
    """Real-time factors without the soft cube, with it, and with it at ``count_vs`` vertices
    per edge, raw and through the bridge, all in one run (the ratios survive a noisy machine)."""
    from physai_ros.models import scene_soft_object

    count = scene_soft_object(robot, shape="cube").count
    scene_soft_object(robot, shape="cube", count=count_vs)  # a bad --count-vs: InvalidInput now
    measures = {
        "raw mj_step": lambda *soft: raw_rtf(robot, seconds, *soft)[0],
        "sim bridge": lambda *soft: bridge_rtf(robot, seconds, *soft),
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
    paced, cpu = bridge_run(robot, seconds, True, real_time_factor=1.0)
    print(
        f"sim bridge at real_time_factor 1 with the soft cube: {paced:.3f} sim s per wall s, "
        f"{100 * cpu:.0f} % of one core"
    )
    print(f"soft_cube_rtf = {rtf:.3f}")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.listen:
        return listen()
    os.environ.setdefault("ROS_DOMAIN_ID", str(100 + os.getpid() % 100))
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    if args.object == "soft_cube":
        return run_soft(args.robot, args.seconds, args.count_vs)
    raw_before, steps = raw_rtf(args.robot, args.seconds)
    print(f"raw mj_step ({args.robot}): {steps} steps, real-time factor {raw_before:.1f}")
    alone = bridge_rtf(args.robot, args.seconds)
    print(f"sim bridge, no subscriber: real-time factor {alone:.1f}")
    listened = None
    if not args.no_listener:
        cmd = [sys.executable, "-m", "physai_ros.experiments.bench_sim", "--listen"]
        listener = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, start_new_session=True)
        listener.stdout.readline()
        wall = time.monotonic()
        try:
            listened = bridge_rtf(args.robot, args.seconds)
        finally:
            os.killpg(listener.pid, signal.SIGINT)
            out, _ = listener.communicate(timeout=10)
            wall = time.monotonic() - wall
        print(f"sim bridge, listener process subscribed: real-time factor {listened:.1f}")
        print(f"  listener ({wall:.1f} s alive): {out.strip()}")
    raw_after, _ = raw_rtf(args.robot, args.seconds)
    raw = 0.5 * (raw_before + raw_after)
    print(
        f"raw mj_step again: real-time factor {raw_after:.1f} "
        f"(baseline = mean {raw:.1f}, drift {100 * (raw_after / raw_before - 1):+.1f} %)"
    )
    ratio = alone / raw
    if listened is not None:
        print(f"with the listener: {listened / raw:.3f} of raw")
    if args.robot == "so101":
        print(f"target for the SO-101: >= 0.5 of raw; {'met' if ratio >= 0.5 else 'NOT met'}")
    print(f"sim_bridge_vs_raw = {ratio:.3f}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    sys.exit(run(parser.parse_args()))
