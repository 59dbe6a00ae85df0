"""A Franka's recovery from a robot error, on the user's request only (not a node itself).

After a reflex or another libfranka error, franka_ros2 (v3.4 on Jazzy or later) has logged
libfranka's text, stopped the robot and deactivated the controllers on its hardware; the pick's
running arm goal ended aborted ("Current goal cancelled during deactivate transition."). The pick
then ends without another arm goal and leaves the robot as franka_ros2 left it. ``~/recover``
(std_srvs/Trigger) is the user's way back, franka_hardware's documented sequence: the
ErrorRecovery action (libfranka's ``automaticErrorRecovery``), the hardware component set active
(``set_hardware_component_state``), the arm controller and the others activated
(``switch_controller``, BEST_EFFORT: a controller the robot does not run is skipped). Each step
gets ``recovery.timeout`` to answer; the first that fails ends the call with its reason and
nothing after it is tried. It is refused while a pick runs.

``RobotErrorLog`` keeps the ERROR lines starting "libfranka" on ``/rosout``: the abort of a pick
names the error libfranka reported, which the controller's abort does not.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NamedTuple

from rcl_interfaces.msg import Log
from rclpy.action import ActionClient
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_srvs.srv import Trigger

from physai_ros.errors import InvalidInput

ACTIVE = 3  # lifecycle_msgs/State PRIMARY_STATE_ACTIVE
LIBFRANKA = "libfranka"


class RecoverySettings(NamedTuple):
    """The pick's ``recovery.*`` parameters and the arm controller's name."""

    error_recovery: str
    hardware_component: str
    controllers: tuple[str, ...]
    controller_manager: str
    timeout: float  # [s, wall]

    @classmethod
    def from_parameters(cls, p: dict, arm_controller: str) -> RecoverySettings:
        return cls(
            p["recovery.error_recovery"],
            p["recovery.hardware_component"],
            (arm_controller, *p["recovery.controllers"]),
            p["recovery.controller_manager"].rstrip("/"),
            float(p["recovery.timeout"]),
        )


class RobotErrorLog:
    """libfranka's ERROR lines on /rosout, with when they came [s, wall monotonic]."""

    def __init__(self, node: Node) -> None:
        self.lines: list[tuple[float, str]] = []
        qos = QoSProfile(
            depth=100,
            reliability=ReliabilityPolicy.RELIABLE,
            durability=DurabilityPolicy.TRANSIENT_LOCAL,  # /rosout's own: late joiners see it
        )
        node.create_subscription(Log, "/rosout", self._heard, qos)

    def _heard(self, msg: Log) -> None:
        if msg.level >= Log.ERROR and msg.msg.startswith(LIBFRANKA):
            self.lines = [*self.lines[-9:], (time.monotonic(), msg.msg)]

    def since(self, wall: float) -> str:
        """The last libfranka error logged after ``wall`` ('' = none)."""
        recent = [line for at, line in self.lines if at >= wall]
        return recent[-1] if recent else ""


class FrankaRecovery:
    """``~/recover``: franka_hardware's recovery sequence, when the user asks for it.

    busy: why a recovery may not start now ('' = it may: no pick runs).
    """

    def __init__(self, node: Node, settings: RecoverySettings, busy: Callable[[], str]) -> None:
        from controller_manager_msgs.srv import SetHardwareComponentState, SwitchController
        from franka_msgs.action import ErrorRecovery

        self.node, self.settings, self.busy = node, settings, busy
        self.log = node.get_logger()
        # one reentrant group for the service and what it waits on: in the node's default
        # (mutually exclusive) group, the answers could not be taken while the service waits
        self.group = group = ReentrantCallbackGroup()
        self.error_recovery = ActionClient(
            node, ErrorRecovery, settings.error_recovery, callback_group=group
        )
        manager = settings.controller_manager
        self.set_hardware = node.create_client(
            SetHardwareComponentState,
            f"{manager}/set_hardware_component_state",
            callback_group=group,
        )
        self.switch = node.create_client(
            SwitchController, f"{manager}/switch_controller", callback_group=group
        )
        self.types = (ErrorRecovery, SetHardwareComponentState, SwitchController)
        self.running = False
        node.create_service(Trigger, "~/recover", self._recover, callback_group=group)

    async def _recover(self, _request, response):
        why = self.busy() or ("a recovery is running" if self.running else "")
        if why:
            response.success, response.message = False, f"recover refused: {why}"
            self.log.error(response.message)
            return response
        self.running = True
        try:
            done = await self._sequence()
        except InvalidInput as exc:
            response.success, response.message = False, f"recover failed: {exc}"
            self.log.error(response.message)
        else:
            response.success, response.message = True, done
            self.log.info(done)
        finally:
            self.running = False
        return response

    async def _sequence(self) -> str:
        """The three steps; raises ``InvalidInput`` naming the one that failed."""
        error_recovery, set_state, switch = self.types
        s = self.settings
        if not self.error_recovery.wait_for_server(timeout_sec=0.0):
            raise InvalidInput(f"{s.error_recovery} is not served (is franka_ros2 running?)")
        sent = await self._within(
            self.error_recovery.send_goal_async(error_recovery.Goal()), s.error_recovery
        )
        if not sent.accepted:
            raise InvalidInput(f"{s.error_recovery} refused the goal")
        result = await self._within(sent.get_result_async(), s.error_recovery)
        if result.status != 4:  # action_msgs GoalStatus SUCCEEDED
            raise InvalidInput(
                f"{s.error_recovery} did not succeed (status {result.status}): the robot is "
                "still in error; see franka_hardware's log"
            )
        request = set_state.Request(name=s.hardware_component)
        request.target_state.id, request.target_state.label = ACTIVE, "active"
        answer = await self._call(self.set_hardware, request)
        if not answer.ok:
            raise InvalidInput(
                f"{s.hardware_component} could not be set active (it is "
                f"{answer.state.label or answer.state.id}); the robot error is cleared"
            )
        request = switch.Request(
            activate_controllers=list(s.controllers), strictness=switch.Request.BEST_EFFORT
        )
        answer = await self._call(self.switch, request)
        if not answer.ok:
            raise InvalidInput(
                f"the controllers {list(s.controllers)} could not be activated: "
                f"{answer.message or 'see the controller manager log'}"
            )
        return (
            f"recovered: robot error cleared, {s.hardware_component} active, "
            f"{', '.join(s.controllers)} activated"
        )

    async def _call(self, client, request):
        if not client.wait_for_service(timeout_sec=0.0):
            raise InvalidInput(f"{client.srv_name} is not served (is the controller manager up?)")
        return await self._within(client.call_async(request), client.srv_name)

    async def _within(self, future, what: str):
        """``future``'s result, or ``InvalidInput`` after ``timeout`` of wall time."""
        deadline = time.monotonic() + self.settings.timeout
        while not future.done():
            if time.monotonic() > deadline:
                future.cancel()
                raise InvalidInput(f"{what} did not answer within {self.settings.timeout:g} s")
            await self._pause()
        return future.result()

    async def _pause(self) -> None:
        """Let the executor run other callbacks for a moment (a coroutine cannot block it)."""
        node = self.node
        future = node.executor.create_future()
        timer = node.create_timer(
            0.02,
            lambda: future.set_result(None) if not future.done() else None,
            callback_group=self.group,
            clock=Clock(clock_type=ClockType.STEADY_TIME),  # not sim time: a stopped /clock
        )
        try:
            await future
        finally:
            node.destroy_timer(timer)
