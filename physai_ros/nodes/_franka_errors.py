"""A Franka robot error and franka_ros2's recovery from it, on the simulated FR3 (not a node
itself).

What a real FR3 under franka_ros2 v3.4.0 on Jazzy or later does when libfranka reports an error
(a reflex on a collision, a communication constraint violation), as the sim bridge's
``franka_fault`` parameter injects it (checked against franka_ros2 v3.4.0 and ros2_control):

* ``FrankaHardwareInterface::read`` catches libfranka's ``ControlException``, logs its text at
  ERROR (``libfranka: Move command aborted: motion aborted by reflex! ["cartesian_reflex"]``),
  stops the robot and returns ERROR; the robot holds where it stopped;
* the controller manager deactivates the controllers on that hardware: the arm controller
  aborts its goal with INVALID_GOAL, "Current goal cancelled during deactivate transition."
  (joint_trajectory_controller's ``on_deactivate``), refuses new goals ("Can't accept new
  action goals. Controller is not running.") and publishes no ``controller_state``; the
  ``joint_state_broadcaster`` stops too: franka_ros2's joint_state_publisher, which merges it
  with the fingers onto ``/joint_states``, repeats the arm's last values (stale, freshly
  stamped) while the fingers stay live;
* recovery is the user's, in franka_hardware's documented order: the ErrorRecovery action
  (``/action_server/error_recovery``, libfranka's ``automaticErrorRecovery``), the hardware
  component back to active (``/controller_manager/set_hardware_component_state``, name
  ``FrankaHardwareInterface``), the controllers activated again
  (``/controller_manager/switch_controller``). Activating the arm controller also clears a
  robot error still there, as franka_hardware does when starting control.

The franka_gripper actions are another connection to the hand and carry on. franka_ros2 v0.1.13
(the Panda's last release, on Humble) does not survive such an error: its ``read`` does not
catch the exception and Humble's controller manager neither, so ``ros2_control_node`` ends,
and with it franka_ros2's launch: under the Panda profile the sim bridge ends the same way
(``physai_ros.nodes.sim_bridge``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from controller_manager_msgs.srv import SetHardwareComponentState, SwitchController
from franka_msgs.action import ErrorRecovery
from lifecycle_msgs.msg import State
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.node import Node
from rclpy.parameter import Parameter

from physai_ros.core.controllers.jtc import JointTrajectoryController
from physai_ros.errors import InvalidInput
from physai_ros.robots.franka.names import ERROR_RECOVERY, REFLEX
from physai_ros.robots.franka.names import HARDWARE_COMPONENT as HARDWARE
from physai_ros.robots.franka.names import ROBOT_ERRORS as ERRORS

BROADCASTER = "joint_state_broadcaster"
SWITCH_CONTROLLER = "/controller_manager/switch_controller"
SET_HARDWARE_STATE = "/controller_manager/set_hardware_component_state"
PARAMETER = "franka_fault"
STATE_LABELS = {
    State.PRIMARY_STATE_UNCONFIGURED: "unconfigured",
    State.PRIMARY_STATE_INACTIVE: "inactive",
    State.PRIMARY_STATE_ACTIVE: "active",
}


class FrankaRobotErrors:
    """The robot's error, the hardware component's state and the controllers' activity.

    arm: the bridge's arm controller, under ``lock``; arm_name: its name as served;
    measured: the arm's (positions, velocities) now, for an activation to hold; deliver: ends
    the goals an error aborts (``ControllerServers.deliver``); now: the loop clock [s].
    """

    def __init__(
        self,
        node: Node,
        arm: JointTrajectoryController,
        arm_name: str,
        lock: threading.RLock,
        now: Callable[[], float],
        measured: Callable[[], tuple[Sequence[float], Sequence[float]]],
        deliver: Callable[[list], None],
    ) -> None:
        self.node, self.arm, self.arm_name, self.lock = node, arm, arm_name, lock
        self.now, self.measured, self.deliver = now, measured, deliver
        self.log = node.get_logger()
        self.error = ""  # libfranka's error name while the robot is in error
        self.hardware = State.PRIMARY_STATE_ACTIVE
        self.broadcasting = True  # the joint_state_broadcaster is active
        ActionServer(
            node,
            ErrorRecovery,
            ERROR_RECOVERY,
            self._recover,
            goal_callback=lambda _goal: GoalResponse.ACCEPT,
            cancel_callback=lambda _handle: CancelResponse.ACCEPT,
        )
        node.create_service(SwitchController, SWITCH_CONTROLLER, self._switch)
        node.create_service(SetHardwareComponentState, SET_HARDWARE_STATE, self._set_hardware)

    # --- the fault --------------------------------------------------------------------
    def check(self, value: str) -> str:
        """Why ``franka_fault`` may not be set to ``value`` ('' = it may)."""
        if value and value not in ERRORS:
            return f"{PARAMETER} {value!r} is not one of {list(ERRORS)}"
        if not value and self.error:
            return (
                f"the robot is in error ({self.error}); recover with {ERROR_RECOVERY} "
                f"(franka_msgs/action/ErrorRecovery), which clears {PARAMETER}"
            )
        return ""

    def inject(self, error: str) -> None:
        """libfranka reports ``error`` while the arm moves or holds: as franka_ros2 ends it."""
        if not error or error == self.error:
            return
        with self.lock:
            self.error = error
            ends = self.arm.deactivate(stopped_by_hardware=True)
            self.hardware, self.broadcasting = State.PRIMARY_STATE_UNCONFIGURED, False
        self.log.error(REFLEX.format(error=error))
        self.log.info(
            f"{HARDWARE} read failed: {self.arm_name} and {BROADCASTER} deactivated (as "
            f"ros2_control does); recover with {ERROR_RECOVERY}, then {HARDWARE} to active "
            f"({SET_HARDWARE_STATE}) and the controllers ({SWITCH_CONTROLLER})"
        )
        self.deliver(ends)

    def keep_through_reset(self) -> Callable[[], list]:
        """Call before a simulation reset (under ``lock``); the function it returns, after it:
        the reset moves the robot home and starts its controller, but a robot in error, or
        whose arm controller the user has not yet activated again, stays so: only the recovery
        brings it back, as on the real robot. Returns the goals it ends."""
        stopped = not self.arm.active
        return lambda: self.arm.deactivate(stopped_by_hardware=True) if stopped else []

    # --- recovery ---------------------------------------------------------------------
    def _recover(self, handle):
        """libfranka's automaticErrorRecovery: the robot out of its error (controllers and
        hardware stay as they are)."""
        with self.lock:
            had, self.error = self.error, ""
        self._clear_parameter()
        handle.succeed()
        self.log.info(f"Automatic recovery succeeded{f' ({had})' if had else ''}")
        return ErrorRecovery.Result()

    def _clear_parameter(self) -> None:
        if self.node.get_parameter(PARAMETER).value:
            self.node.set_parameters([Parameter(PARAMETER, value="")])

    def _set_hardware(self, request, response):
        target = request.target_state
        label = target.label or STATE_LABELS.get(target.id, "")
        response.ok = False
        if request.name != HARDWARE:
            self.log.error(f"hardware component '{request.name}' is not in the storage")
        elif label not in ("active", "inactive"):
            self.log.error(f"{HARDWARE}: target state {label or target.id!r} is not served")
        else:
            with self.lock:
                if label == "active":
                    self.hardware = State.PRIMARY_STATE_ACTIVE
                else:
                    self.deliver(self.arm.deactivate(stopped_by_hardware=True))
                    self.hardware, self.broadcasting = State.PRIMARY_STATE_INACTIVE, False
            response.ok = True
            self.log.info(f"{HARDWARE} is {label}")
        response.state = State(id=self.hardware, label=STATE_LABELS[self.hardware])
        return response

    def _switch(self, request, response):
        """Activate and deactivate the arm controller and the joint state broadcaster; an
        unknown name fails a STRICT switch and is skipped by a BEST_EFFORT one."""
        known = (self.arm_name, BROADCASTER)
        names = [*request.activate_controllers, *request.deactivate_controllers]
        unknown = [name for name in names if name not in known]
        strict = request.strictness != SwitchController.Request.BEST_EFFORT
        response.ok, response.message = False, ""
        try:
            if unknown and strict:
                raise InvalidInput(f"no controller named {unknown} is loaded")
            if request.activate_controllers and self.hardware != State.PRIMARY_STATE_ACTIVE:
                raise InvalidInput(
                    f"{HARDWARE} is {STATE_LABELS[self.hardware]}: set it active first "
                    f"({SET_HARDWARE_STATE})"
                )
        except InvalidInput as exc:
            response.message = str(exc)
            self.log.error(f"switch_controller failed: {exc}")
            return response
        with self.lock:
            ends = []
            for name in request.deactivate_controllers:
                if name == self.arm_name and self.arm.active:
                    ends += self.arm.deactivate()
                elif name == BROADCASTER:
                    self.broadcasting = False
            for name in request.activate_controllers:
                if name == self.arm_name and not self.arm.active:
                    if self.error:  # franka_hardware recovers when control cannot start
                        self.log.info(f"starting control recovered the robot ({self.error})")
                        self.error = ""
                    q, qd = self.measured()
                    self.arm.activate(self.now(), q, qd)
                elif name == BROADCASTER:
                    self.broadcasting = True
        self.deliver(ends)
        self._clear_parameter()
        response.ok = True
        self.log.info(
            f"switch_controller: activated {list(request.activate_controllers)}, deactivated "
            f"{list(request.deactivate_controllers)}"
        )
        return response
