"""What users run, run the way they run it: ``ros2 launch``, ``ros2 run --params-file``,
``ros2 lifecycle``, ``ros2 action send_goal``, ``ros2 param`` (ROS 2's own command line,
../shared/ros2_python where no ROS 2 install exists), on a colcon-built install.

A client node in the test process only watches (the pick's outcome, the emulator's witness);
the sim picks are judged again by a witness there (``support.witness``: the cube's own pose,
fresh after the outcome).
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
import rclpy
from physai_ros_interfaces.msg import PickOutcome
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile
from std_msgs.msg import String
from support.processes import ros2_output
from support.witness import JAWS, Witness, shipped

from physai_ros.nodes._pick_outcome import outcome_fields, verdict_of

pytestmark = [pytest.mark.dds, pytest.mark.slow]

ARM_GOAL = (
    "{trajectory: {joint_names: [shoulder_pan, shoulder_lift, elbow_flex, wrist_flex, "
    "wrist_roll], points: [{positions: [0.2, -1.4, 1.4, 0.8, 0.0], time_from_start: {sec: 2}}]}}"
)


class Watcher:
    """Latest pick outcome and emulator witness, and every pick state received (the history: a
    short state may be replaced before a poll reads the latest), seen from another process.
    Created before the graph, it is matched before the pick's first state."""

    def __init__(self, context, outcome_topic: str = "/pick/outcome") -> None:
        self.node = rclpy.create_node("user_path_watcher", context=context)
        self.outcome: dict | None = None
        self.witness: dict | None = None
        self.state: str | None = None
        self.states: list[str] = []  # every state received, in order
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.node.create_subscription(PickOutcome, outcome_topic, self._outcome, latched)
        state_topic = outcome_topic.rsplit("/", 1)[0] + "/state"
        self.node.create_subscription(String, state_topic, self._state, latched)
        self.node.create_subscription(String, "/so101_emulator/witness", self._witness, 10)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)

    def _outcome(self, msg) -> None:
        self.outcome = outcome_fields(msg)

    def _witness(self, msg) -> None:
        self.witness = json.loads(msg.data)

    def _state(self, msg) -> None:
        self.state = msg.data
        self.states.append(msg.data)

    def wait_state(self, state: str, timeout: float) -> bool:
        """Whether ``state`` was received (now or earlier) within ``timeout``."""
        end = time.monotonic() + timeout
        while state not in self.states and time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.05)
        return state in self.states

    def wait_outcome(self, timeout: float) -> dict | None:
        end = time.monotonic() + timeout
        while self.outcome is None and time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.1)
        for _ in range(10):  # the witness right after the outcome
            self.executor.spin_once(timeout_sec=0.05)
        return self.outcome


def wait_for(path: Path, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < end, f"{path} never appeared"
        time.sleep(0.1)


def start_emulator(ros2, tmp_path: Path) -> tuple[Path, Path]:
    """``ros2 run physai_ros so101_emulator`` as a user stands in for the arm: returns the port
    (a symlink to its pty) and the calibration file it wrote, once written."""
    arm, cal = tmp_path / "arm", tmp_path / "cal.json"
    ros2(
        "run", "physai_ros", "so101_emulator", "--ros-args",
        "-p", f"link:={arm}", "-p", f"calibration_out:={cal}",
        log=tmp_path / "emulator.log",
    )  # fmt: skip
    wait_for(cal)
    return arm, cal


def test_ros2_launch_sim_pick_holds(ros2, ros_context, tmp_path):
    """The shipped launch, as shipped (the bridge at real_time_factor 1): held by the pick's
    verdicts and by the witness (the cube rose min_lift, fresh after the outcome)."""
    witness = Witness(ros_context, JAWS["so101"])  # before the graph: sees the cube at rest
    launch = ros2("launch", "physai_ros", "pick.launch.py", "sim:=true", log=tmp_path / "log")
    outcome = Watcher(ros_context).wait_outcome(120.0)
    assert outcome is not None, (tmp_path / "log").read_text()[-3000:]
    assert outcome["outcome"] == "held" and outcome["judged_by"] == "cube_pose", outcome
    assert verdict_of(outcome, "robot")["outcome"] == "held"  # the robot's own verdict agrees
    assert launch.poll() is None  # still running, as a launch does
    seen, _ = witness.check_pick(shipped("pick", "min_lift"))
    print(f"witness: cube rose {100 * seen.rise:.2f} cm")
    assert 0.2 < witness.sim_rate() < 1.15, witness.sim_rate()  # real time, as shipped
    witness.close()


def launched(launch, name: str) -> int:
    """PID of the node process ``name`` that ``launch`` (a session of its own) started."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            if name in cmdline and os.getsid(int(entry.name)) == launch.pid:
                return int(entry.name)
        except (OSError, ProcessLookupError):
            continue  # gone meanwhile
    raise AssertionError(f"no {name} process under the launch")


def test_pick_ends_within_a_second_when_the_sim_bridge_is_killed(ros2, ros_context, tmp_path):
    """The issue-15 hang: SIGKILL of the sim bridge while the pick holds the cube stops the
    sim clock, so nothing on the node's clock fires. The pick's steady-clock watchdog ends it:
    an aborted outcome naming the stopped clock, within silence_timeout (1 s) + 1 s of the kill."""
    watcher = Watcher(ros_context)  # before the graph: discovered before the pick can move
    launch = ros2("launch", "physai_ros", "pick.launch.py", "sim:=true", log=tmp_path / "log")
    assert watcher.wait_state("hold", 120.0), (tmp_path / "log").read_text()[-3000:]
    # seen from before it: the watcher was matched in time (not handed the latched last state)
    assert watcher.states[0] != "hold", watcher.states
    assert watcher.outcome is None, watcher.outcome  # killed while holding, before the outcome
    os.kill(launched(launch, "sim_bridge"), signal.SIGKILL)
    killed = time.monotonic()
    outcome = watcher.wait_outcome(10.0)
    waited = time.monotonic() - killed
    assert outcome is not None, (tmp_path / "log").read_text()[-3000:]
    assert outcome["outcome"] == "aborted" and outcome["state"] == "aborted", outcome
    # both fall silent with the bridge, its joint states and its clock; whichever is first
    reason = outcome["reason"]
    assert "robot silent" in reason or "clock stopped" in reason, outcome
    assert waited < 2.0, f"the outcome came {waited:.2f} s after the kill"
    # the last readings look fresh on the stopped clock; they are not: nothing judges
    robot, pose = verdict_of(outcome, "robot"), verdict_of(outcome, "cube_pose")
    assert robot["outcome"] != "held" and pose["outcome"] != "held", outcome
    assert "stale" in robot["reason"] + pose["reason"], outcome


def test_ros2_launch_two_arms_each_pick_their_own_cube(ros2, ros_context, tmp_path):
    """Two SO-101 side by side (namespaces left/right, one TF tree, a clock each): both hold,
    each judged by its own cube's pose (or by the robot, when that pose came too late to judge),
    and each cube where that arm's launch put it; each arm's witness sees its cube rise,
    fresh after that arm's outcome."""
    log = tmp_path / "log"
    arms = ("left", "right")
    witnesses = {a: Witness(ros_context, JAWS["so101"], namespace=f"/{a}") for a in arms}
    ros2(
        "launch", "physai_ros", "two_arms.launch.py", "right_cube_x:=0.2", "right_cube_y:=0.03",
        log=log,
    )  # fmt: skip
    outcomes = {}
    for arm in ("left", "right"):
        outcome = Watcher(ros_context, f"/{arm}/pick/outcome").wait_outcome(180.0)
        assert outcome is not None, f"{arm}: no outcome\n" + log.read_text()[-3000:]
        outcomes[arm] = outcome
    for arm, outcome in outcomes.items():
        assert outcome["outcome"] == "held", (arm, outcome)
        assert verdict_of(outcome, "robot")["outcome"] == "held", (arm, outcome)
        # each arm saw its own cube's frame; two bridges on 2 loaded cores can deliver the last
        # pose more than max_age late (seen in CI: 0.61 s), and a stale pose judges nothing
        pose = verdict_of(outcome, "cube_pose")
        assert pose["reason"].startswith(f"TF frame '{arm}/cube'"), outcome
        fresh = pose["outcome"] == "held" and outcome["judged_by"] == "cube_pose"
        assert fresh or "stale" in pose["reason"], (arm, outcome)
        witnesses[arm].check_pick(shipped("pick", "min_lift"))  # stale or not, the cube rose
        witnesses[arm].close()


def test_ros2_launch_real_arm_graph_on_the_emulator(ros2, ros_context, tmp_path):
    """The issue's own reproduction: the emulator on a port, then ``pick.launch.py sim:=false``.
    The pick holds, judges so from the robot's own measurements, and the emulator's true cube
    pose agrees (lifted ≥ 4 cm and in both jaws)."""
    arm, cal = start_emulator(ros2, tmp_path)
    ros2(
        "launch", "physai_ros", "pick.launch.py", "sim:=false", f"port:={arm}",
        f"calibration_file:={cal}", log=tmp_path / "launch.log",
    )  # fmt: skip
    watcher = Watcher(ros_context)
    outcome = watcher.wait_outcome(150.0)
    assert outcome is not None, (tmp_path / "launch.log").read_text()[-3000:]
    assert outcome["outcome"] == "held" and outcome["judged_by"] == "robot", outcome
    truth = watcher.witness
    assert truth is not None
    assert truth["cube_pos"][2] - 0.015 >= 0.04 and truth["cube_in_jaws"], truth
    assert abs(100 * outcome["lift"] - 100 * (truth["cube_pos"][2] - 0.015)) < 1.0


def test_driver_through_ros2_lifecycle_action_and_param(ros2, tmp_path, colcon_install):
    """``ros2 run ... --params-file`` the shipped config, then a user's session: lifecycle
    get/set, a goal with ``ros2 action send_goal``, parameters set live or refused."""
    arm, cal = start_emulator(ros2, tmp_path)
    params = colcon_install / "physai_ros" / "share" / "physai_ros" / "config" / "so101_driver.yaml"
    ros2(
        "run", "physai_ros", "so101_driver", "--ros-args", "--params-file", str(params),
        "-p", f"port:={arm}", "-p", f"calibration_file:={cal}",
        log=tmp_path / "driver.log",
    )  # fmt: skip
    deadline = time.monotonic() + 60.0
    while True:  # the node takes a few seconds to start (LeRobot imports torch)
        state = ros2("lifecycle", "get", "/so101_driver").communicate(timeout=60)[0]
        if "unconfigured" in state or time.monotonic() > deadline:
            break
        time.sleep(1.0)
    assert "unconfigured" in state, state + (tmp_path / "driver.log").read_text()
    for transition, reached in (("configure", "inactive"), ("activate", "active")):
        out = ros2_output(ros2("lifecycle", "set", "/so101_driver", transition))
        assert "Transitioning successful" in out, out + (tmp_path / "driver.log").read_text()
        assert reached in ros2_output(ros2("lifecycle", "get", "/so101_driver"))
    action = "/arm_controller/follow_joint_trajectory"
    kind = "control_msgs/action/FollowJointTrajectory"
    out = ros2_output(ros2("action", "send_goal", action, kind, ARM_GOAL), timeout=90)
    assert "SUCCEEDED" in out and "Goal successfully reached!" in out, out
    out = ros2_output(ros2("param", "set", "/so101_driver", "gripper_controller.max_effort", "2.0"))
    assert "Set parameter successful" in out  # live: the next gripper goal uses it
    refused = ros2("param", "set", "/so101_driver", "grasp.mu", "0.4").communicate(60)[0]
    assert "read-only" in refused or "failed" in refused.lower(), refused  # set at start only
    refused = ros2("param", "set", "/so101_driver", "port", "/dev/ttyUSB9").communicate(60)[0]
    assert "read-only" in refused or "failed" in refused.lower(), refused
    described = ros2_output(ros2("param", "describe", "/so101_driver", "loop_rate"))
    assert "[Hz]" in described and "Min value: 1.0" in described and "Max value: 500.0" in described
    out = ros2_output(ros2("lifecycle", "set", "/so101_driver", "deactivate"))
    assert "Transitioning successful" in out


PANDA_GOAL = (
    "{trajectory: {joint_names: [joint1, joint2, joint4], "
    "points: [{positions: [0.3, 0.2, -2.2]}]}}"  # untimed: the node times it within the limits
)


def wait_param(ros2, node: str, name: str, timeout: float = 90.0) -> str:
    """``ros2 param get`` until the node is up (its imports take seconds)."""
    end = time.monotonic() + timeout
    while True:
        out = ros2("param", "get", node, name).communicate(timeout=60)[0]
        if "value is" in out or time.monotonic() > end:
            return out
        time.sleep(1.0)


def test_ros2_launch_panda_trajectory_with_a_params_file(ros2, tmp_path):
    """``trajectory_sim.launch.py`` (the Panda) with a user's ``params_file``: its entries
    reach the nodes they name, and an untimed goal sent with ``ros2 action send_goal`` is timed
    and executed by the simulated arm."""
    params = tmp_path / "mine.yaml"
    params.write_text(
        "trajectory:\n  ros__parameters:\n    shape: trapezoid\n"
        "sim_bridge:\n  ros__parameters:\n    real_time_factor: 2.0\n"
    )
    ros2(
        "launch", "physai_ros", "trajectory_sim.launch.py", f"params_file:={params}",
        log=tmp_path / "launch.log",
    )  # fmt: skip
    shape = wait_param(ros2, "/trajectory", "shape")
    assert "trapezoid" in shape, shape + (tmp_path / "launch.log").read_text()[-3000:]
    assert "2.0" in wait_param(ros2, "/sim_bridge", "real_time_factor")
    action = "/trajectory/follow_joint_trajectory"
    kind = "control_msgs/action/FollowJointTrajectory"
    out = ros2_output(ros2("action", "send_goal", action, kind, PANDA_GOAL), timeout=120)
    assert "SUCCEEDED" in out, out + (tmp_path / "launch.log").read_text()[-3000:]


def test_ros2_launch_trajectory_franka_against_a_franka_shaped_sim(ros2, tmp_path):
    """``trajectory_franka.launch.py`` exactly as on a real Panda, the Franka-shaped sim bridge
    standing in for franka_ros2 (its controller ``panda_arm_controller``, joints
    ``panda_joint1..7``); the one change a user makes to try it on the simulation is the
    sim's clock, given in a ``params_file``. A goal in franka_ros2's joint names is timed within
    the limits and executed."""
    ros2(
        "run", "physai_ros", "sim_bridge", "--ros-args", "-p", "robot:=panda",
        "-p", "franka_profile:=panda", "-p", "real_time_factor:=2.0",
        log=tmp_path / "bridge.log",
    )  # fmt: skip
    params = tmp_path / "sim_clock.yaml"
    params.write_text("trajectory:\n  ros__parameters:\n    use_sim_time: true\n")
    log = tmp_path / "launch.log"
    ros2("launch", "physai_ros", "trajectory_franka.launch.py", f"params_file:={params}", log=log)
    assert "panda_" in wait_param(ros2, "/trajectory", "joint_prefix"), log.read_text()[-3000:]
    # franka_ros2 joins the arm as it measures it to the first sample, sent 0.1 s in
    assert "0.1" in wait_param(ros2, "/trajectory", "first_point"), log.read_text()[-3000:]
    goal = (
        "{trajectory: {joint_names: [panda_joint1, panda_joint2, panda_joint4], "
        "points: [{positions: [2.5, 0.2, -2.2]}]}}"
    )
    action = "/trajectory/follow_joint_trajectory"
    kind = "control_msgs/action/FollowJointTrajectory"
    # A move of about 2 s, not 0.6 s. Once in CI the node's 0.6 s goal succeeded but the CLI
    # never got the result and waited for good. Likely cause (not proven): the CLI asks for the
    # result as soon as the goal is accepted, and under load Fast DDS had not yet matched that
    # new process's result reader when the move ended, so the response was dropped.
    out = ros2_output(ros2("action", "send_goal", action, kind, goal), timeout=120)
    assert "SUCCEEDED" in out, (
        out + log.read_text()[-3000:] + (tmp_path / "bridge.log").read_text()[-2000:]
    )
    # then a motion already sampled every 20 ms with its rates (as a pick sends one): taken as
    # it is, not stopped at every sample (which would be refused for its acceleration)
    out = ros2_output(ros2("action", "send_goal", action, kind, sampled_goal()), timeout=120)
    assert "SUCCEEDED" in out, out + log.read_text()[-3000:]
    assert "goal samples" in log.read_text(), log.read_text()[-3000:]


def test_trajectory_franka_starts_a_goal_that_reached_the_robot_after_its_end(ros2, tmp_path):
    """A goal that reaches the robot's controller after it was to end (the first goal to a
    controller just discovered, a starved computer) is rejected there as ending in the past,
    as joint_trajectory_controller does; the trajectory node of ``trajectory_franka.launch.py``
    sends it once more unstamped and it runs from where the arm is. The adversary: the stand-in
    Panda takes each arm goal 1.5 s after it arrives, longer than the goal's 0.3 s start delay
    and its duration together."""
    ros2(
        "run", "physai_ros", "sim_bridge", "--ros-args", "-p", "robot:=panda",
        "-p", "franka_profile:=panda", "-p", "stand_in:=true", "-p", "arm_goal_delay:=1.5",
        log=tmp_path / "bridge.log",
    )  # fmt: skip
    log = tmp_path / "launch.log"
    ros2("launch", "physai_ros", "trajectory_franka.launch.py", log=log)
    assert "0.3" in wait_param(ros2, "/trajectory", "start_delay"), log.read_text()[-3000:]
    goal = "{trajectory: {joint_names: [panda_joint1], points: [{positions: [0.02]}]}}"
    action = "/trajectory/follow_joint_trajectory"
    kind = "control_msgs/action/FollowJointTrajectory"
    out = ros2_output(ros2("action", "send_goal", action, kind, goal), timeout=120)
    bridge = (tmp_path / "bridge.log").read_text()
    assert "SUCCEEDED" in out, out + log.read_text()[-3000:] + bridge[-2000:]
    assert "that ends in the past" in bridge, bridge[-2000:]
    assert "sent again, unstamped, to start on arrival" in log.read_text(), log.read_text()[-3000:]


def sampled_goal() -> str:
    """panda_joint1 from 2.5 back to 2.0 rad as a 1.5 s minimum-jerk move, every 20 ms, each
    point with its position, velocity and acceleration (YAML for ``ros2 action send_goal``)."""
    points = []
    for k in range(1, 76):
        t, s = 0.02 * k, 0.02 * k / 1.5
        q = 2.5 - 0.5 * (10 * s**3 - 15 * s**4 + 6 * s**5)
        v = -0.5 * (30 * s**2 - 60 * s**3 + 30 * s**4) / 1.5
        a = -0.5 * (60 * s - 180 * s**2 + 120 * s**3) / 1.5**2
        sec, nanosec = divmod(round(t * 1e9), 1_000_000_000)
        points.append(
            f"{{positions: [{q:.9f}], velocities: [{v:.9f}], accelerations: [{a:.9f}], "
            f"time_from_start: {{sec: {sec}, nanosec: {nanosec}}}}}"
        )
    return f"{{trajectory: {{joint_names: [panda_joint1], points: [{', '.join(points)}]}}}}"


def test_ros2_launch_display_without_rviz_serves_the_frame_tree(ros2, tmp_path):
    """``display.launch.py rviz:=false`` on a machine without RViz: the sim bridge and the TF
    publisher run, the robot's frames are on /tf (``ros2 topic echo``, a user's check), and a
    goal sent with ``ros2 action send_goal`` moves the displayed arm."""
    log = tmp_path / "launch.log"
    ros2("launch", "physai_ros", "display.launch.py", "rviz:=false", log=log)
    assert "so101" in wait_param(ros2, "/tf_publisher", "robot")
    # The type and the latched QoS given, echo waits for the publisher: without them it guesses
    # both from the graph at that instant and fails if the TF publisher is not yet discovered.
    latched = ("--qos-durability", "transient_local", "--qos-reliability", "reliable")
    echo = ("topic", "echo", "--once", *latched, "/tf_static", "tf2_msgs/msg/TFMessage")
    out = ros2_output(ros2(*echo), timeout=60)
    assert "child_frame_id" in out and "base" in out, out
    action = "/arm_controller/follow_joint_trajectory"
    kind = "control_msgs/action/FollowJointTrajectory"
    out = ros2_output(ros2("action", "send_goal", action, kind, ARM_GOAL), timeout=120)
    assert "SUCCEEDED" in out, out + log.read_text()[-3000:]
