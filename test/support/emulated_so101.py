"""An emulated SO-101 bench for tests: the bus emulator in place of the arm's serial port, the
real-arm graph's nodes exactly as ``pick.launch.py sim:=false`` starts them (same specs from
``physai_ros.launching.graph.pick_graph``), and a client node in the test process that sees what a
user's tools would -- plus the emulator's witness of what really happened.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import rclpy
from builtin_interfaces.msg import Duration
from control_msgs.action import FollowJointTrajectory, GripperCommand
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetState
from physai_ros_interfaces.action import Pick
from physai_ros_interfaces.msg import PickOutcome
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from rclpy.action import ActionClient
from rclpy.qos import DurabilityPolicy, QoSProfile
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectoryPoint

from physai_ros import interfaces
from physai_ros.launching.bringup import start_emulated, stop
from physai_ros.launching.graph import NodeSpec, emulated_pick_graph
from physai_ros.models.joints import SO101_ARM_JOINTS
from physai_ros.nodes._pick_outcome import outcome_fields
from support.ros import spin_in_background

ARM = list(SO101_ARM_JOINTS)
WITNESS_RATE = 50.0  # [Hz] the emulator's witness_rate (config/so101_emulator.yaml)
# a window of witness records is judged only with at least this share of the rate (a starved
# machine delays the timer, never by 5x) and with a record stamped after the window's end
MIN_WITNESS_SHARE = 0.2
TRANSITIONS = {
    "configure": Transition.TRANSITION_CONFIGURE,
    "activate": Transition.TRANSITION_ACTIVATE,
    "deactivate": Transition.TRANSITION_DEACTIVATE,
    "cleanup": Transition.TRANSITION_CLEANUP,
}


def duration(seconds: float) -> Duration:
    return Duration(sec=int(seconds), nanosec=round(seconds % 1 * 1e9))


class Bench:
    """Emulator + the real-arm graph (driver only, or the whole pick graph) + a client.

    ``driver``: extra driver parameters (written into the graph's spec as a launch file or a
    params file would pass them); ``driver_env``: extra environment of the driver's process;
    ``emulator``: emulator parameters (faults at power-up); ``pick_spec``: the pick node's spec
    from (port, calibration file), in place of the graph's; ``graph``: more ``pick_graph``
    arguments (``limits_set``, ``start_pick``: the launch file's arguments of the same names).
    """

    def __init__(
        self,
        tmp: Path,
        domain: int,
        *,
        driver: dict | None = None,
        driver_env: dict[str, str] | None = None,
        emulator: dict | None = None,
        pick: bool = False,
        cube: tuple[float, float] = (0.22, 0.0),
        pick_spec: Callable[[str, str], NodeSpec] | None = None,
        graph: dict | None = None,
    ) -> None:
        self.tmp = tmp
        tmp.mkdir(parents=True, exist_ok=True)
        specs, emu = emulated_pick_graph(tmp, cube, **(graph or {}))
        emu.parameters.update(emulator or {})
        specs[0].parameters.update(driver or {})
        specs[0].env.update(driver_env or {})
        if pick_spec is not None:  # (port, calibration file) -> the pick node's spec
            specs[-1] = pick_spec(emu.parameters["link"], emu.parameters["calibration_out"])
        self.specs = specs if pick else specs[:1]
        for spec in (*self.specs, emu):  # the bench's own DDS domain
            spec.env["ROS_DOMAIN_ID"] = str(domain)
        self.procs = start_emulated(self.specs, [emu], tmp)
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain)
        node = self.node = rclpy.create_node("bench_client", context=self.context)
        self.lock = threading.Lock()
        self.joints: JointState | None = None
        self.joint_count = 0
        self.joint_stamp = 0.0  # [s, system clock] the newest /joint_states header stamp
        self.diag: DiagnosticArray | None = None
        self.witness: list[dict] = []
        self.outcome: dict | None = None  # the pick's latest outcome (``outcome_fields``)
        node.create_subscription(JointState, interfaces.JOINT_STATES, self._on_joints, 10)
        node.create_subscription(DiagnosticArray, interfaces.DIAGNOSTICS, self._on_diag, 10)
        node.create_subscription(String, "/so101_emulator/witness", self._on_witness, 100)
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        node.create_subscription(PickOutcome, interfaces.PICK_OUTCOME, self._on_outcome, latched)
        self.arm = ActionClient(node, FollowJointTrajectory, interfaces.FOLLOW_JOINT_TRAJECTORY)
        self.gripper = ActionClient(node, GripperCommand, interfaces.GRIPPER_COMMAND)
        self.pick_action = ActionClient(node, Pick, "/" + interfaces.PICK_ACTION)
        self.emu_params = node.create_client(SetParameters, "/so101_emulator/set_parameters")
        self.driver_params = node.create_client(SetParameters, "/so101_driver/set_parameters")
        self.services = {
            name: node.create_client(Trigger, f"/so101_driver/{name}")
            for name in ("stop", "resume", "release")
        }
        self.change_state = node.create_client(ChangeState, "/so101_driver/change_state")
        self.get_state = node.create_client(GetState, "/so101_driver/get_state")
        self.thread = spin_in_background(node, self.context)

    # --- plumbing --------------------------------------------------------------------------
    def _on_joints(self, msg: JointState) -> None:
        with self.lock:
            self.joints, self.joint_count = msg, self.joint_count + 1
            stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
            self.joint_stamp = max(self.joint_stamp, stamp)

    def _on_diag(self, msg: DiagnosticArray) -> None:
        with self.lock:
            self.diag = msg

    def _on_witness(self, msg: String) -> None:
        with self.lock:
            self.witness.append(json.loads(msg.data))

    def _on_outcome(self, msg: PickOutcome) -> None:
        with self.lock:
            self.outcome = outcome_fields(msg)

    def close(self) -> None:
        rclpy.try_shutdown(context=self.context)
        self.thread.join(timeout=2.0)
        stop(self.procs)

    def log(self, name: str = "so101_driver") -> str:
        return (self.tmp / f"{name}.log").read_text(errors="replace")

    def wait(self, predicate: Callable[[], bool], timeout: float) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.thread.check()  # a dead client would wait out every timeout for nothing
            if predicate():
                return True
            time.sleep(0.02)
        self.thread.check()
        return bool(predicate())

    def result(self, future, timeout: float = 20.0):
        assert self.wait(future.done, timeout), "no answer in time"
        return future.result()

    # --- what the client sees ----------------------------------------------------------------
    def truth(self) -> dict:
        """The emulator's latest witness record (true state of the bench)."""
        assert self.wait(lambda: bool(self.witness), 30.0), self.log("so101_emulator")
        with self.lock:
            return self.witness[-1]

    def truth_since(self, t0: float, timeout: float = 10.0) -> list[dict]:
        """The witness records stamped from ``t0`` [s, system clock] to now, once a record
        stamped after now has arrived: the window is covered to its end. Fails (naming the
        gap) when none arrives in ``timeout`` or the window holds too few records to judge
        (fewer than MIN_WITNESS_SHARE of the witness rate): "nothing moved" on no data is no
        finding."""
        end = time.time()
        with self.lock:
            first = self.witness[0]["stamp"] if self.witness else end
        covered = self.wait(lambda: self.witness and self.witness[-1]["stamp"] >= end, timeout)
        with self.lock:
            records = [w for w in self.witness if w["stamp"] >= t0]
            newest = self.witness[-1]["stamp"] if self.witness else None
        assert covered, (
            f"no witness record stamped after the window's end ({end:.3f}) within {timeout} s; "
            f"the newest is {newest}"
        )
        span = end - max(t0, first)
        needed = max(2, int(span * WITNESS_RATE * MIN_WITNESS_SHARE))
        assert len(records) >= needed, (
            f"{len(records)} witness records over {span:.2f} s since {t0:.3f}, "
            f"fewer than the {needed} needed to judge"
        )
        return records

    def state(self) -> str:
        response = self.call(self.get_state, GetState.Request())
        return response.current_state.label

    def transition(self, name: str) -> bool:
        request = ChangeState.Request()
        request.transition.id = TRANSITIONS[name]
        return self.call(self.change_state, request).success

    def call(self, client, request, timeout: float = 20.0):
        assert client.wait_for_service(timeout_sec=timeout), client.srv_name
        return self.result(client.call_async(request), timeout)

    def service(self, name: str) -> Trigger.Response:
        return self.call(self.services[name], Trigger.Request())

    def arm_position(self) -> np.ndarray:
        assert self.wait(lambda: self.joints is not None, 30.0), self.log()
        with self.lock:
            names = list(self.joints.name)
            return np.array([self.joints.position[names.index(j)] for j in ARM])

    def diagnostics(self, level: int) -> list[DiagnosticStatus]:
        with self.lock:
            return [] if self.diag is None else [s for s in self.diag.status if s.level == level]

    def wait_active(self, timeout: float = 60.0) -> None:
        assert self.wait(lambda: self.state() == "active", timeout), self.log()

    # --- commands ----------------------------------------------------------------------------
    def send_arm(self, positions, seconds: float = 1.0, stamp=None):
        """Send a one-point goal; returns the goal handle (accepted or not)."""
        goal = FollowJointTrajectory.Goal()
        goal.trajectory.joint_names = ARM
        goal.trajectory.points = [
            JointTrajectoryPoint(
                positions=[float(v) for v in positions], time_from_start=duration(seconds)
            )
        ]
        assert self.arm.wait_for_server(timeout_sec=20.0)
        return self.result(self.arm.send_goal_async(goal))

    def pick(self, goal: Pick.Goal, timeout: float = 150.0) -> Pick.Result:
        """Send ``goal`` to ``/pick`` as ``ros2 action send_goal`` would; its typed result."""
        assert self.pick_action.wait_for_server(timeout_sec=60.0), self.log("pick")
        handle = self.result(self.pick_action.send_goal_async(goal), 30.0)
        assert handle.accepted, "the pick node refused the goal"
        return self.result(handle.get_result_async(), timeout).result

    def arm_result(self, handle, timeout: float = 30.0):
        return self.result(handle.get_result_async(), timeout)

    def set_emulator(self, name: str, value) -> None:
        if isinstance(value, bool):
            pv = ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=value)
        elif isinstance(value, int):
            pv = ParameterValue(type=ParameterType.PARAMETER_INTEGER, integer_value=value)
        elif isinstance(value, float):
            pv = ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=value)
        elif isinstance(value, str):
            pv = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=value)
        elif isinstance(value, list) and all(isinstance(v, int) for v in value):
            pv = ParameterValue(
                type=ParameterType.PARAMETER_INTEGER_ARRAY, integer_array_value=value
            )
        else:
            pv = ParameterValue(
                type=ParameterType.PARAMETER_DOUBLE_ARRAY,
                double_array_value=[float(v) for v in value],
            )
        request = SetParameters.Request(parameters=[Parameter(name=name, value=pv)])
        assert self.call(self.emu_params, request).results[0].successful

    def set_driver(self, name: str, value: float):
        """``ros2 param set /so101_driver <name> <value>`` (a double); returns the result
        (``successful``, ``reason``)."""
        pv = ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=float(value))
        request = SetParameters.Request(parameters=[Parameter(name=name, value=pv)])
        return self.call(self.driver_params, request).results[0]


def _enough(records: list[dict]) -> None:
    if len(records) < 2:  # one record or none: no motion could be seen, none is claimed
        raise ValueError(f"{len(records)} witness record(s): too few to judge a motion")


def largest_motion(records: list[dict]) -> float:
    """Largest change of any joint [rad] over witness records (at least two)."""
    _enough(records)
    q = np.array([r["positions"] for r in records])
    return float(np.max(np.abs(q - q[0])))


def largest_fall(records: list[dict]) -> float:
    """Largest drop of the gripper site [m] below its first height over witness records (at
    least two)."""
    _enough(records)
    z = np.array([r["gripper_site"][2] for r in records])
    return float(z[0] - z.min())
