"""Controller conformance: one list of cases, run against both backends of the shared controller
layer (``physai_ros.core.controllers``, matched to ros2_controllers 5.17.0, docs/controllers.md).

"sim": the sim bridge for the SO-101 as ``pick.launch.py sim:=true`` starts it; "emulated":
the SO-101 driver on the Feetech bus emulator as ``pick.launch.py sim:=false`` starts it. Both
node specs come from ``physai_ros.launching.graph.pick_graph`` (the launch file's graph); only the
serial
port is emulated. A ``Backend`` is what a user's tools see of either: the arm's action and
topic, its ``controller_state``, ``/joint_states``, the gripper's action, the node's parameters
and its log (upstream logs why a goal was rejected; the result carries nothing).

Each case sets the parameters it depends on and restores them, so the backends' different
defaults (config/sim_robots.yaml, config/so101_driver.yaml) do not decide the outcome. Where
the physics differ (where the cube stops the jaw, how late a servo answers) a case asserts the
shared contract, with bounds both meet (docs/controllers.md, "Conformance").
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from support.optional import require
from support.paths import shipped
from support.ros import spin_in_background

from physai_ros import interfaces
from physai_ros.launching.bringup import start, start_emulated, stop
from physai_ros.launching.graph import emulator_spec, pick_graph
from physai_ros.models.joints import SO101_ARM_JOINTS

pytestmark = pytest.mark.dds

ARM = list(SO101_ARM_JOINTS)
POSE_A = np.array([-0.4, -0.8, 0.8, 0.9, 0.0])  # the jaw ~9 cm above the table, clear of the cube
POSE_B = np.array([-0.8, -1.0, 1.0, 0.8, 0.4])
STILL = 0.02  # [rad] "nothing moves": no arm joint changes more than this
STOP = 0.05  # [rad] largest travel of an arm stopped from <= 0.3 rad/s (cancel, abort)
JAW_OPEN = 0.85  # [rad] open around the 3 cm cube (config/pick.yaml jaw_open)
JAW_SHUT = 0.0  # [rad] a closing goal the cube keeps the jaw from
KEEP = 3000  # samples of each stream kept: > 30 s at 100 Hz, longer than any case
JOINT_RATE = 100.0  # [Hz] /joint_states of both (sim_bridge.yaml, so101_driver.yaml loop_rate)
CLOCK_STEP = 0.01  # [s] the sim clock advances in physics chunks this long and catches up after a
# lag: a sim-time delay can pass that much sooner on the wall clock
MIN_SHARE = 0.2  # a motion window is judged on at least this share of JOINT_RATE's samples
STARTUP = 90.0  # [s wall] MuJoCo compile / bus scan + DDS discovery, on a loaded 2-core machine

# control_msgs/action/FollowJointTrajectory result codes and ros2_controllers 5.17.0's strings
SUCCESSFUL, INVALID_GOAL, PATH_TOLERANCE_VIOLATED, GOAL_TOLERANCE_VIOLATED = 0, -1, -4, -5
REACHED = "Goal successfully reached!"
PREEMPTED = "Current goal preempted by new incoming action."
PATH_ABORT = "Aborted due to path tolerance violation"
GOAL_TIME_ABORT = "Aborted due to goal_time_tolerance exceeding by"


def duration(seconds: float):
    from builtin_interfaces.msg import Duration

    return Duration(sec=int(seconds), nanosec=round(seconds % 1 * 1e9))


def trajectory(points, joints=ARM, stamp: float = 0.0, at_rest: bool = False):
    """A JointTrajectory from [(time_from_start [s], positions)], header.stamp [s] (0 = now);
    ``at_rest``: every point also gives zero velocities (cubic: starts and ends smoothly)."""
    from builtin_interfaces.msg import Time
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    msg = JointTrajectory(joint_names=list(joints))
    ns = round(stamp * 1e9)
    msg.header.stamp = Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)
    for t, q in points:
        point = JointTrajectoryPoint(positions=[float(v) for v in q], time_from_start=duration(t))
        point.velocities = [0.0] * len(q) if at_rest else []
        msg.points.append(point)
    return msg


class Backend:
    """A client in the test process on the backend's DDS domain, and the backend's processes.

    node_name: the controller node (parameters, log).
    """

    def __init__(self, name: str, tmp: Path, domain: int) -> None:
        import rclpy
        from control_msgs.action import FollowJointTrajectory, GripperCommand
        from control_msgs.msg import JointTrajectoryControllerState
        from diagnostic_msgs.msg import DiagnosticArray
        from rcl_interfaces.srv import GetParameters, SetParameters
        from rclpy.action import ActionClient
        from sensor_msgs.msg import JointState
        from trajectory_msgs.msg import JointTrajectory

        self.name, self.tmp = name, tmp
        if name == "sim":
            specs = pick_graph(sim=True)[:1]
            self.node_name = "sim_bridge"
        else:
            port, cal = str(tmp / "port"), str(tmp / "cal.json")
            specs = pick_graph(sim=False, port=port, calibration_file=cal)[:1]
            emulator = emulator_spec(port, cal)
            self.node_name = "so101_driver"
        for spec in (*specs, *([emulator] if name != "sim" else [])):  # the module's own domain
            spec.env["ROS_DOMAIN_ID"] = str(domain)
        self.procs = start(specs, tmp) if name == "sim" else start_emulated(specs, [emulator], tmp)
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain)
        node = self.node = rclpy.create_node("conformance_client", context=self.context)
        self.lock = threading.Lock()
        # the latest (stamp [s], arm positions) and JointTrajectoryControllerState messages;
        # *_total counts all ever received (an index that survives the trimming)
        self.joints: list[tuple[float, np.ndarray]] = []
        self.states: list = []
        self.joints_total = self.states_total = 0
        self.jaw: float | None = None
        node.create_subscription(JointState, interfaces.JOINT_STATES, self._on_joints, 50)
        node.create_subscription(
            JointTrajectoryControllerState, interfaces.CONTROLLER_STATE, self._on_state, 50
        )
        self.arm = ActionClient(node, FollowJointTrajectory, interfaces.FOLLOW_JOINT_TRAJECTORY)
        self.gripper = ActionClient(node, GripperCommand, interfaces.GRIPPER_COMMAND)
        self.topic = node.create_publisher(JointTrajectory, interfaces.JOINT_TRAJECTORY, 10)
        self.stream = node.create_publisher(JointState, interfaces.STREAM, 10)
        self.diagnostics: dict[str, str] = {}  # name -> the latest message
        node.create_subscription(DiagnosticArray, interfaces.DIAGNOSTICS, self._on_diag, 10)
        self.params = node.create_client(SetParameters, f"/{self.node_name}/set_parameters")
        self.get_params = node.create_client(GetParameters, f"/{self.node_name}/get_parameters")
        self.thread = spin_in_background(node, self.context)

    def _on_joints(self, msg) -> None:
        names = list(msg.name)
        q = np.array([msg.position[names.index(j)] for j in ARM])
        t = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        with self.lock:
            self.joints.append((t, q))
            self.joints_total += 1
            del self.joints[:-KEEP]
            self.jaw = msg.position[names.index("gripper")]

    def _on_diag(self, msg) -> None:
        with self.lock:
            self.diagnostics |= {status.name: status.message for status in msg.status}

    def diagnostic(self, name: str) -> str:
        """The latest /diagnostics message of ``name`` ('' if none yet)."""
        with self.lock:
            return self.diagnostics.get(name, "")

    def _on_state(self, msg) -> None:
        with self.lock:
            self.states.append(msg)
            self.states_total += 1
            del self.states[:-KEEP]

    def close(self) -> None:
        import rclpy

        rclpy.try_shutdown(context=self.context)
        self.thread.join(timeout=2.0)
        stop(self.procs)

    # --- waiting -----------------------------------------------------------------------------
    def wait(self, predicate: Callable[[], bool], timeout: float) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.thread.check()  # a dead client would wait out every timeout for nothing
            if predicate():
                return True
            time.sleep(0.02)
        self.thread.check()
        return bool(predicate())

    def result(self, future, timeout: float = 30.0):
        assert self.wait(future.done, timeout), f"no answer in {timeout} s\n{self.log()[-3000:]}"
        return future.result()

    def wait_ready(self) -> None:
        """Servers discovered, joint states and controller_state flowing (published only by an
        active controller: the driver has armed)."""
        ready = self.wait(
            lambda: (
                self.arm.server_is_ready()
                and self.gripper.server_is_ready()
                and bool(self.joints)
                and bool(self.states)
                and self.params.service_is_ready()
                and self.get_params.service_is_ready()
                and self.topic.get_subscription_count() > 0
                and self.stream.get_subscription_count() > 0
            ),
            STARTUP,
        )
        assert ready, f"{self.name} not ready in {STARTUP} s:\n{self.log()[-3000:]}"

    def log(self) -> str:
        return (self.tmp / f"{self.node_name}.log").read_text(errors="replace")

    # --- what a user's tools see -----------------------------------------------------------------
    def position(self) -> np.ndarray:
        with self.lock:
            return self.joints[-1][1].copy()

    def now(self) -> float:
        """The backend's ROS time [s] (sim time on the bridge), from its latest joint state."""
        with self.lock:
            return self.joints[-1][0]

    def motion_during(self, seconds: float, timeout: float = 15.0) -> float:
        """Largest change of any arm joint [rad] over the next ``seconds`` of the backend's time
        (its joint states' stamps: sim time on the bridge), from the latest sample to the first
        stamped after the window's end. Fails when that one does not arrive within ``seconds``
        + ``timeout`` of wall time or the window holds fewer than MIN_SHARE of JOINT_RATE's
        samples: "nothing moved" on no data is no finding."""
        mark = self.joints_total - 1
        end = self.now() + seconds
        covered = self.wait(lambda: self.now() >= end, seconds + timeout)
        assert covered, f"no joint state stamped after {end:.3f} (newest {self.now():.3f})"
        samples = self.joints_since(mark)
        needed = max(2, int(seconds * JOINT_RATE * MIN_SHARE))
        assert len(samples) >= needed, (
            f"{len(samples)} joint states over {seconds} s, fewer than the {needed} to judge"
        )
        q = np.array([q for _, q in samples])
        return float(np.max(np.abs(q - q[0])))

    def joints_since(self, total: int) -> list[tuple[float, np.ndarray]]:
        """Joint samples received after the ``joints_total``-th."""
        with self.lock:
            return self.joints[max(0, len(self.joints) - (self.joints_total - total)) :]

    def states_since(self, total: int) -> list:
        """controller_state messages received after the ``states_total``-th."""
        with self.lock:
            return self.states[max(0, len(self.states) - (self.states_total - total)) :]

    # --- commands --------------------------------------------------------------------------------
    def send(self, traj, path_tolerance=(), goal_tolerance=(), goal_time: float = 0.0):
        """A FollowJointTrajectory goal; returns its handle (accepted or not)."""
        from control_msgs.action import FollowJointTrajectory

        goal = FollowJointTrajectory.Goal(trajectory=traj)
        goal.path_tolerance, goal.goal_tolerance = list(path_tolerance), list(goal_tolerance)
        goal.goal_time_tolerance = duration(goal_time)
        return self.result(self.arm.send_goal_async(goal))

    def send_gripper(self, position: float, max_effort: float = 0.0):
        from control_msgs.action import GripperCommand

        goal = GripperCommand.Goal()
        goal.command.position, goal.command.max_effort = float(position), float(max_effort)
        return self.result(self.gripper.send_goal_async(goal))

    def outcome(self, handle, timeout: float = 30.0):
        """(status, result) of an accepted goal."""
        answer = self.result(handle.get_result_async(), timeout)
        return answer.status, answer.result

    def set(self, values: dict) -> None:
        """Set parameters of the controller node; each must be accepted."""
        from rcl_interfaces.srv import SetParameters
        from rclpy.parameter import Parameter

        params = [Parameter(k, value=v).to_parameter_msg() for k, v in values.items()]
        answer = self.result(self.params.call_async(SetParameters.Request(parameters=params)))
        for name, r in zip(values, answer.results, strict=True):
            assert r.successful, f"{name}: {r.reason}"

    def get(self, names: list[str]) -> dict:
        """Current values of the controller node's parameters."""
        from rcl_interfaces.srv import GetParameters
        from rclpy.parameter import parameter_value_to_python

        answer = self.result(self.get_params.call_async(GetParameters.Request(names=names)))
        return {n: parameter_value_to_python(v) for n, v in zip(names, answer.values, strict=True)}

    def goto(self, pose: np.ndarray, speed: float = 0.4) -> None:
        """Move to ``pose`` at about ``speed`` [rad/s] and check it succeeded."""
        from action_msgs.msg import GoalStatus

        seconds = max(1.0, float(np.max(np.abs(pose - self.position()))) / speed)
        handle = self.send(trajectory([(seconds, pose)]))
        assert handle.accepted, self.log()[-2000:]
        status, result = self.outcome(handle, seconds + 30.0)
        assert status == GoalStatus.STATUS_SUCCEEDED, result.error_string
        self.settle()

    @contextmanager
    def streaming(
        self, target: Callable[[float], np.ndarray], rate: float = 30.0, jaw: float | None = None
    ):
        """Publish ``target(t)`` [rad] (t: wall seconds since the start) on the arm's stream
        topic at ``rate`` from a thread of this process, as a teleop or policy node would,
        until the block ends; yields the list of what was sent (the last target: ``[-1]``).
        ``jaw`` [rad]: the jaw's target in every message too."""
        from sensor_msgs.msg import JointState

        stop, sent_targets = threading.Event(), []

        def publish() -> None:
            start, sent = time.monotonic(), 0
            while not stop.wait(max(0.0, start + sent / rate - time.monotonic())):
                sent += 1
                q = target(time.monotonic() - start)
                names, positions = list(ARM), [float(v) for v in q]
                if jaw is not None:
                    names, positions = [*names, "gripper"], [*positions, jaw]
                self.stream.publish(JointState(name=names, position=positions))
                sent_targets.append(q)

        thread = threading.Thread(target=publish, daemon=True)
        thread.start()
        try:
            yield sent_targets
        finally:
            stop.set()
            thread.join(timeout=2.0)

    def settle(self, timeout: float = 5.0) -> None:
        """Wait until the arm is still (< 3 mrad over 0.3 s): a goal succeeds inside its
        tolerance, and the servo may still creep towards the point for a moment."""
        assert self.wait(lambda: self.motion_during(0.3) < 0.003, timeout), "the arm keeps moving"

    def other_pose(self) -> np.ndarray:
        """Whichever of the two test poses is farther from the arm (so every move moves)."""
        q = self.position()
        return max((POSE_A, POSE_B), key=lambda p: float(np.max(np.abs(p - q))))

    def logged_since(self, mark: int, text: str, timeout: float = 5.0) -> bool:
        """``text`` appears in the node's log after byte ``mark`` (``len(log())`` taken before)."""
        return self.wait(lambda: text in self.log()[mark:], timeout)


@pytest.fixture(scope="module", params=["sim", "emulated"])
def backend(request, tmp_path_factory) -> Iterator[Backend]:
    """One graph per backend for the whole module (pytest runs every case on one, then the
    other); the arm starts each case at one of the two test poses, the jaw open."""
    if request.param == "emulated":
        require("lerobot.motors")
    domain = 1 + (os.getpid() * 41 + 7 + len(request.param)) % 200
    b = Backend(request.param, tmp_path_factory.mktemp(f"conformance_{request.param}"), domain)
    try:
        b.wait_ready()
        # upstream's semantics alone: our blocked-joint check (a deviation, off in the sim's
        # config) off; test_normal_goals_succeed_with_the_shipped_blocked_check runs it shipped
        b.set({"arm_controller.constraints.blocked_error": 0.0})
        b.goto(POSE_A)
        yield b
    finally:
        b.close()


@contextmanager
def parameters(b: Backend, values: dict) -> Iterator[None]:
    """Controller parameters set for one case (``ros2 param set``), then restored."""
    before = b.get(list(values))
    b.set(values)
    try:
        yield
    finally:
        b.set(before)


# --- §2 acceptance -------------------------------------------------------------------------------
REJECTIONS = {
    "unknown joint": (
        lambda q: trajectory([(1.0, q)], joints=[*ARM[:4], "elbow"]),
        "Incoming joint elbow doesn't match the controller's joints.",
    ),
    "empty trajectory": (lambda q: trajectory([]), "Empty trajectory received."),
    "non-increasing times": (
        lambda q: trajectory([(1.0, q + 0.1), (1.0, q + 0.2)]),
        "Time between points 0 and 1 is not strictly increasing",
    ),
    "outside the range": (
        lambda q: trajectory([(2.0, [*q[:2], 3.0, *q[3:]])]),
        "elbow_flex = 3.0000 is beyond its upper limit",  # ours: upstream checks no range
    ),
}


@pytest.mark.parametrize("case", REJECTIONS)
def test_invalid_goal_is_rejected_with_upstreams_reason_and_nothing_moves(backend, case):
    make, reason = REJECTIONS[case]
    backend.settle()
    mark = len(backend.log())
    handle = backend.send(make(backend.position()))
    assert not handle.accepted
    assert backend.motion_during(0.5) < STILL
    assert backend.logged_since(mark, reason), backend.log()[mark:]


def test_trajectory_that_ends_in_the_past_is_rejected(backend):
    assert backend.wait(lambda: backend.now() > 5.0, 10.0)  # a past stamp > 0 exists (sim time)
    backend.settle()
    mark = len(backend.log())
    q = backend.position()
    handle = backend.send(trajectory([(1.0, q + 0.1)], stamp=backend.now() - 3.0))
    assert not handle.accepted
    assert backend.motion_during(0.5) < STILL
    assert backend.logged_since(mark, "that ends in the past"), backend.log()[mark:]


def test_future_stamp_holds_until_the_stamp_then_reaches_the_goal(backend):
    """A first point at t = 0 where the arm is: upstream interpolates from the state now to it
    (no motion) until the stamp, then follows the trajectory."""
    from action_msgs.msg import GoalStatus

    backend.settle()
    q, target = backend.position(), backend.other_pose()
    begin = backend.now() + 1.5
    handle = backend.send(trajectory([(0.0, q), (1.5, target)], stamp=begin))
    assert handle.accepted, backend.log()[-2000:]
    mark = backend.joints_total
    status, result = backend.outcome(handle)
    assert status == GoalStatus.STATUS_SUCCEEDED, result.error_string
    samples = backend.joints_since(mark)
    before = np.array([s[1] for s in samples if s[0] < begin - 0.05])  # 50 ms: one reading late
    after = [s[0] for s in samples if np.max(np.abs(s[1] - q)) > STILL]
    assert len(before) > 5 and float(np.max(np.abs(before - q))) < STILL
    assert after and after[0] >= begin - 0.05, (after[:1], begin)


def test_goal_succeeds_within_goal_tolerance_of_the_last_point(backend):
    from action_msgs.msg import GoalStatus

    target = backend.other_pose()
    goal_tol = 0.03
    tolerances = {f"arm_controller.constraints.{j}.goal": goal_tol for j in ARM}
    with parameters(backend, tolerances):
        handle = backend.send(trajectory([(1.5, target)]))
        assert handle.accepted
        status, result = backend.outcome(handle)
    assert status == GoalStatus.STATUS_SUCCEEDED, result.error_string
    assert (result.error_code, result.error_string) == (SUCCESSFUL, REACHED)
    np.testing.assert_allclose(backend.position(), target, atol=goal_tol)


@pytest.mark.parametrize("backend", ["emulated"], indirect=True)
def test_normal_goals_succeed_with_the_shipped_blocked_check(backend):
    """The shipped so101_driver config's blocked-joint check (config/so101_driver.yaml:
    blocked_error 0.05 rad, blocked_speed 0.05 rad/s, blocked_time 0.2 s), which the other
    cases turn off, on a healthy emulated arm on this loaded machine: normal goals there and
    back (0.4–0.8 rad/s) succeed, and none is aborted as blocked. (It once false-tripped when
    the driver's loop stalled; the sim bridge ships the check off.)"""
    from action_msgs.msg import GoalStatus

    constraints = shipped("so101_driver", "arm_controller", "constraints")
    names = ("blocked_error", "blocked_speed", "blocked_time")
    values = {f"arm_controller.constraints.{n}": float(constraints[n]) for n in names}
    assert values["arm_controller.constraints.blocked_error"] > 0.0  # shipped on
    mark = len(backend.log())
    with parameters(backend, values):
        for seconds, target in ((1.0, backend.other_pose()), (1.5, POSE_A)):
            handle = backend.send(trajectory([(seconds, target)]))
            assert handle.accepted
            status, result = backend.outcome(handle, seconds + 30.0)
            assert status == GoalStatus.STATUS_SUCCEEDED, result.error_string
            assert (result.error_code, result.error_string) == (SUCCESSFUL, REACHED)
    assert "is blocked" not in backend.log()[mark:], backend.log()[mark:][-2000:]


def test_new_goal_preempts_the_running_one_without_a_jump(backend):
    """The first goal ends ABORTED, INVALID_GOAL, upstream's text; the second starts from the
    state and succeeds; the reference (controller_state) never moves faster than 0.5 rad/s
    (+ 0.01 rad per sample): both trajectories ask below 0.3 rad/s, a jump back to where the
    preempted goal started would be 0.13 rad in one sample."""
    from action_msgs.msg import GoalStatus

    start, far = backend.position(), backend.other_pose()
    count = backend.states_total
    first = backend.send(trajectory([(3.0, far)]))
    assert first.accepted
    time.sleep(1.0)
    second = backend.send(trajectory([(1.5, start)]))
    assert second.accepted
    status, result = backend.outcome(first)
    assert status == GoalStatus.STATUS_ABORTED
    assert (result.error_code, result.error_string) == (INVALID_GOAL, PREEMPTED)
    status, result = backend.outcome(second)
    assert status == GoalStatus.STATUS_SUCCEEDED, result.error_string
    states = backend.states_since(count)
    refs = np.array([s.reference.positions for s in states])
    stamps = np.array([s.header.stamp.sec + s.header.stamp.nanosec * 1e-9 for s in states])
    assert len(refs) > 10  # 50 Hz; fewer when the machine is loaded
    steps = np.max(np.abs(np.diff(refs, axis=0)), axis=1)
    allowed = 0.5 * np.diff(stamps) + 0.01
    assert np.all(steps < allowed), np.max(steps - allowed)
    np.testing.assert_allclose(backend.position(), start, atol=0.03)


def test_cancel_ends_canceled_and_the_arm_holds(backend):
    """CANCELED, error_code 0, empty string; the arm, moving at ~0.13 rad/s, stops within
    STOP of where it was when the result came (a position servo told to hold its measured
    position overshoots by a fraction of that), and then holds: less than STILL over 0.5 s."""
    from action_msgs.msg import GoalStatus

    start = backend.position()
    handle = backend.send(trajectory([(3.0, backend.other_pose())]))
    assert handle.accepted
    time.sleep(1.0)
    backend.result(handle.cancel_goal_async())
    status, result = backend.outcome(handle)
    assert status == GoalStatus.STATUS_CANCELED
    assert (result.error_code, result.error_string) == (SUCCESSFUL, "")
    assert float(np.max(np.abs(backend.position() - start))) > 0.05  # it was moving
    assert backend.motion_during(0.5) < STOP
    assert backend.motion_during(0.5) < STILL


def test_path_tolerance_violation_aborts_naming_the_joint(backend):
    """A path tolerance of 2 mrad on shoulder_pan, above its error at rest (< 1.5 mrad, the
    servo's resolution) and below its lag on a smooth (cubic) 0.6 s move of 0.4 rad, up to
    1 rad/s: -4, upstream's text, the joint named; then it holds."""
    from action_msgs.msg import GoalStatus

    start, target = backend.position(), backend.other_pose()
    count = backend.states_total
    time.sleep(0.3)
    rest = [abs(s.error.positions[0]) for s in backend.states_since(count)]
    assert rest and max(rest) < 0.002, rest  # at rest the tolerance holds: the move breaks it
    tight = {"arm_controller.constraints.shoulder_pan.trajectory": 0.002}
    with parameters(backend, tight):
        handle = backend.send(trajectory([(0.0, start), (0.6, target)], at_rest=True))
        assert handle.accepted, backend.log()[-1000:]
        status, result = backend.outcome(handle)
        assert status == GoalStatus.STATUS_ABORTED, result.error_string
        assert result.error_code == PATH_TOLERANCE_VIOLATED
        assert result.error_string.startswith(PATH_ABORT)
        assert "shoulder_pan" in result.error_string, result.error_string
        assert backend.motion_during(0.5) < STOP
        assert backend.motion_during(0.5) < STILL  # holds where it stopped
    backend.goto(target)


def test_goal_tolerance_not_met_within_goal_time_aborts(backend):
    """A goal tolerance no servo can meet (1e-9 rad) and goal_time 0.2 s: -5 with upstream's
    text, after the last point + 0.2 s."""
    from action_msgs.msg import GoalStatus

    target = backend.other_pose()
    unreachable = {
        "arm_controller.constraints.goal_time": 0.2,
        "arm_controller.constraints.wrist_flex.goal": 1e-9,
    }
    with parameters(backend, unreachable):
        t0 = time.monotonic()
        handle = backend.send(trajectory([(1.0, target)]))
        assert handle.accepted
        status, result = backend.outcome(handle)
        took = time.monotonic() - t0
    assert status == GoalStatus.STATUS_ABORTED
    assert result.error_code == GOAL_TOLERANCE_VIOLATED
    assert result.error_string.startswith(GOAL_TIME_ABORT), result.error_string
    assert took > 1.2 - CLOCK_STEP, took  # not at the last point: 0.2 s after it
    backend.goto(target)


def test_partial_goal_follows_allow_partial_joints_goal(backend):
    """Without the parameter a goal naming 4 of 5 joints is rejected (upstream's text); with
    it, the named joints move, the fifth holds."""
    from action_msgs.msg import GoalStatus

    q, target = backend.position(), backend.other_pose()
    partial = trajectory([(1.5, target[:4])], joints=ARM[:4])
    mark = len(backend.log())
    assert not backend.send(partial).accepted
    reason = "Joints on incoming trajectory don't match the controller joints."
    assert backend.logged_since(mark, reason), backend.log()[mark:]
    with parameters(backend, {"arm_controller.allow_partial_joints_goal": True}):
        handle = backend.send(partial)
        assert handle.accepted
        status, result = backend.outcome(handle)
    assert status == GoalStatus.STATUS_SUCCEEDED, result.error_string
    now = backend.position()
    np.testing.assert_allclose(now[:4], target[:4], atol=0.03)
    assert abs(now[4] - q[4]) < STILL


def test_topic_trajectory_moves_the_arm_and_an_empty_one_is_ignored(backend):
    from trajectory_msgs.msg import JointTrajectory

    backend.settle()
    mark = len(backend.log())
    backend.topic.publish(JointTrajectory())  # idle: nothing moves
    assert backend.motion_during(0.5) < STILL
    ignored = "message ignored: Joints on incoming trajectory don't match the controller joints."
    assert backend.logged_since(mark, ignored), backend.log()[mark:]
    target = backend.other_pose()
    backend.topic.publish(trajectory([(2.0, target)]))
    time.sleep(0.7)
    backend.topic.publish(JointTrajectory())  # mid-motion: the arm does not stop
    assert backend.wait(lambda: np.max(np.abs(backend.position() - target)) < 0.03, 10.0), (
        backend.position() - target
    )


def test_controller_state_reports_names_reference_and_feedback(backend):
    count = backend.states_total
    time.sleep(1.0)
    states = backend.states_since(count)
    assert len(states) >= 10  # 50 Hz (sim time on the bridge)
    last = states[-1]
    assert list(last.joint_names) == ARM
    ref, fb = np.array(last.reference.positions), np.array(last.feedback.positions)
    assert ref.shape == fb.shape == (5,)
    np.testing.assert_allclose(fb, backend.position(), atol=0.01)  # feedback = measured
    np.testing.assert_allclose(np.array(last.error.positions), ref - fb, atol=1e-9)
    assert float(np.max(np.abs(ref - fb))) < 0.05  # the held reference, where the arm is


# --- §10 gripper ---------------------------------------------------------------------------------
def cube_poses() -> tuple[np.ndarray, np.ndarray]:
    """Arm joints [rad] with the open jaw above the cube and around it, solved as the pick node
    solves them (config/pick.yaml's offsets and IK, the cube where ``pick_graph`` puts it on
    both backends: (0.22, 0) m in the base frame)."""
    from physai_ros.core.pick.machine import arm_ik, load_pick_config
    from physai_ros.models import load_robot_spec, place_robot
    from physai_ros.sim.scene import cube_world_pos, load_scene_config

    scene = load_scene_config()
    placement = scene["robots"]["so101"]
    cfg = load_pick_config()
    spec = load_robot_spec("so101")
    place_robot(spec, placement["base_pos"], placement["base_yaw_deg"])
    ik = arm_ik(spec.compile(), cfg)
    cube = cube_world_pos(
        (0.22, 0.0), scene["cube"]["size"], placement["base_pos"], placement["base_yaw_deg"]
    )
    q, poses = np.asarray(cfg.robot["home"], dtype=float), []
    for name in ("pre", "down"):
        result = ik(cube + np.array([0.0, 0.0, cfg.offsets[name]]), q)
        assert result.converged, (name, result.error)
        poses.append(q := np.asarray(result.q, dtype=float))
    return poses[0], poses[1]


def test_gripper_goal_reached_opening_and_closing_on_nothing(backend):
    from action_msgs.msg import GoalStatus

    for position in (JAW_OPEN, 0.3, JAW_OPEN):
        handle = backend.send_gripper(position)
        assert handle.accepted
        status, result = backend.outcome(handle)
        assert status == GoalStatus.STATUS_SUCCEEDED
        assert result.reached_goal and not result.stalled, result
        assert abs(result.position - position) < 0.03, result
        # /joint_states agrees once the latest state has reached this client
        assert backend.wait(lambda p=position: abs(backend.jaw - p) < 0.03, 2.0), backend.jaw


def test_gripper_closing_on_the_cube_stalls_per_allow_stalling(backend):
    """The jaw closes on the cube (3 cm, where the pick finds it) short of its goal: stalled,
    not reached; SUCCEEDED with allow_stalling, ABORTED without (GAC), after stall_timeout."""
    from action_msgs.msg import GoalStatus

    pre, down = cube_poses()
    assert backend.outcome(backend.send_gripper(JAW_OPEN))[0] == GoalStatus.STATUS_SUCCEEDED
    backend.goto(pre)
    backend.goto(down, speed=0.2)
    try:
        for allow_stalling in (True, False):
            stall = {
                "gripper_controller.allow_stalling": allow_stalling,
                "gripper_controller.stall_timeout": 0.3,
                "gripper_controller.goal_tolerance": 0.02,
            }
            with parameters(backend, stall):
                t0 = time.monotonic()
                handle = backend.send_gripper(JAW_SHUT)
                assert handle.accepted
                status, result = backend.outcome(handle)
                took = time.monotonic() - t0
            expected = GoalStatus.STATUS_SUCCEEDED if allow_stalling else GoalStatus.STATUS_ABORTED
            assert status == expected, (allow_stalling, result)
            assert result.stalled and not result.reached_goal, result
            assert result.position > JAW_SHUT + 0.05, result.position  # held open by the cube
            assert took > 0.3, took  # not before stall_timeout
            opened = backend.outcome(backend.send_gripper(JAW_OPEN))
            assert opened[0] == GoalStatus.STATUS_SUCCEEDED, opened
    finally:
        backend.goto(pre, speed=0.2)
        backend.goto(POSE_A)


# --- the streaming path (our addition: arm_controller/stream, docs/streaming.md) ----------------
def test_a_stream_moves_the_arm_and_the_arm_holds_when_it_stops(backend):
    """30 Hz targets on arm_controller/stream move the arm along them (here a 0.3 rad/s sine on
    two joints); a trajectory meanwhile is refused; the stream stopping brakes the arm to a
    hold with the reason logged, nothing moves after, and trajectories are taken again."""
    backend.settle()
    start = backend.position()
    wave = np.array([0.25, 0.0, 0.0, 0.25, 0.0])

    def target(t: float) -> np.ndarray:
        return start + wave * np.sin(1.2 * t)

    mark = len(backend.log())
    with backend.streaming(target) as sent:
        time.sleep(1.5)
        moved = float(np.max(np.abs(backend.position() - start)))
        assert moved > 0.1, f"the arm moved {moved:.3f} rad on the stream\n{backend.log()[mark:]}"
        refused = backend.send(trajectory([(2.0, start)]))
        assert not refused.accepted
        assert backend.logged_since(mark, "following a target stream"), backend.log()[mark:]
        time.sleep(1.0)
    last = sent[-1]
    assert backend.logged_since(mark, "stream stopped", timeout=5.0), backend.log()[mark:]
    # and in /diagnostics, where a streaming client (a policy runner) learns the arm holds
    said = lambda: backend.diagnostic("arm_controller/stream")  # noqa: E731
    assert backend.wait(lambda: said().startswith("held: stream stopped"), 5.0), said()
    backend.settle()
    held = backend.position()
    assert np.max(np.abs(held - last)) < 0.05, held - last  # the servo's sag and lag
    assert backend.motion_during(1.0) < STILL
    backend.goto(POSE_A)


def test_a_stream_far_from_the_arm_is_refused_and_nothing_moves(backend):
    """A stream whose first target is 0.5 rad from the arm is refused target by target, with
    the reason logged; the arm does not jump to it."""
    backend.settle()
    far = backend.position() + np.array([0.0, 0.0, 0.5, 0.0, 0.0])
    mark = len(backend.log())
    with backend.streaming(lambda t: far):
        assert backend.motion_during(1.0) < STILL
    assert backend.logged_since(mark, "from the held pose"), backend.log()[mark:]


def test_a_stream_may_carry_the_jaw(backend):
    """A target naming the jaw beside the arm moves the jaw there (the jaw of a leader arm or
    of a policy's action), where it stays once the stream stops; a message whose jaw is
    outside its range is refused whole, the arm and the jaw staying where they are."""
    backend.settle()
    here = backend.position()
    goal = 0.3 if abs(backend.jaw - 0.3) > 0.1 else JAW_OPEN
    with backend.streaming(lambda t: here, jaw=goal):
        assert backend.wait(lambda: abs(backend.jaw - goal) < 0.03, 5.0), backend.jaw
    backend.settle()
    mark = len(backend.log())
    with backend.streaming(lambda t: here + np.array([0.1, 0, 0, 0, 0]), jaw=5.0):
        assert backend.motion_during(1.0) < STILL
    assert backend.logged_since(mark, "gripper position 5.0 outside"), backend.log()[mark:]
    assert abs(backend.jaw - goal) < 0.03, backend.jaw
