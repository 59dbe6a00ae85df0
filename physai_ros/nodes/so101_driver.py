"""SO-101 driver: a real arm through LeRobot's Feetech bus, as a ROS 2 lifecycle node.

    configure   open the port, find the servos, verify the calibration and the registers,
                read the present pose -- no torque change; joint_states start
    activate    arm: torque on at the present pose; refused, with the joint and its value or
                the register named, when the pose is outside the limits, the calibration
                differs from the servos, or a servo reports an error
    deactivate  stop following and hold the present pose (goals refused); the gripper keeps
                its goal and torque limit (a held object stays squeezed), as on a stop
    cleanup     close the port; shutdown / Ctrl-C: ``on_exit`` (hold: torque stays on and the
                servos keep their last goal; release: torque off) -- said in the log either way

``autostart:=true`` (the launch files) configures and activates by itself, retrying the port.
Interfaces: ``joint_states`` (effort = servo load [N·m]), the shared controllers
(``arm_controller/follow_joint_trajectory`` + topic + ``controller_state``,
``gripper_controller/gripper_cmd``), the jaw contact estimate on ``jaw_contact/<jaw>``,
``/diagnostics``, and the services ``~/stop`` (hold, refuse goals), ``~/resume`` and
``~/release`` (torque off: the arm goes limp). A fault (see ``physai_ros.robots.so101.loop``)
aborts goals with the reason, is reported as ERROR on /diagnostics and deactivates the node:
a person re-arms it (``ros2 lifecycle set /so101_driver activate``).
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
import traceback
from collections.abc import MutableMapping

import rclpy
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import WrenchStamped
from rclpy._rclpy_pybind11 import RCLError
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

from physai_ros import interfaces
from physai_ros.core.controllers.gac import GripperActionController, gac_params
from physai_ros.core.controllers.jtc import JointTrajectoryController, JtcParams
from physai_ros.core.motion.limits import load_limits
from physai_ros.errors import PhysaiError
from physai_ros.nodes._common import declare_schema, load_schema, run_node, unflatten
from physai_ros.nodes._controllers import (
    ControllerServers,
    GripperSlot,
    declare_gac,
    declare_jtc,
    without_controllers,
)
from physai_ros.robots.so101.bus import ARM, JOINTS, BusError, So101Bus
from physai_ros.robots.so101.config import arm_limits, bus_settings, loop_settings
from physai_ros.robots.so101.loop import GRIPPER_SLACK, Refused, ServoLoop, Snapshot, reports

OK, FAILURE = TransitionCallbackReturn.SUCCESS, TransitionCallbackReturn.FAILURE
LEVELS = {
    "ok": DiagnosticStatus.OK,
    "warn": DiagnosticStatus.WARN,
    "error": DiagnosticStatus.ERROR,
    "stale": DiagnosticStatus.STALE,
}
JAW_FRAMES = {"fixed_jaw": "gripper", "moving_jaw": "moving_jaw_so101_v1"}
SCHEMA = load_schema("so101_driver")  # config/schema/so101_driver.yaml
BUS_STALL = 1.0  # [s] no bus cycle for this long: the bus thread is stuck (the watchdog acts)


class So101Driver(LifecycleNode):
    def __init__(self) -> None:
        super().__init__("so101_driver")
        self.p = p = declare_schema(self, without_controllers(SCHEMA))
        if p["on_exit"] not in ("hold", "release"):
            raise SystemExit(f"so101_driver: on_exit must be hold or release, not {p['on_exit']!r}")
        try:
            limits = load_limits("so101", p["limits_set"] or None)
            self.bus = So101Bus(bus_settings(p, limits))
            period = 1.0 / p["loop_rate"]
            tree = unflatten(SCHEMA.fixed.defaults())  # the controllers' defaults
            arm_cfg = tree["arm_controller"]  # with the every-joint tolerances as declared
            arm_cfg["constraints"] |= {
                k: p[f"arm_controller.constraints.{k}"] for k in ("trajectory", "goal")
            }
            jtc = JtcParams.from_config(arm_cfg, ARM, self.bus.lower[:5], self.bus.upper[:5])
            jtc = declare_jtc(self, SCHEMA, jtc)
            jtc = dataclasses.replace(jtc, stop_mode=p["arm_controller.stop_mode"])
            if p["arm_controller.check_limits"]:
                jtc = dataclasses.replace(jtc, limits=arm_limits(p), limit_period=period)
            low, high = self.bus.lower[5] - GRIPPER_SLACK, self.bus.upper[5] + GRIPPER_SLACK
            stall = self.bus.s.stall_torque  # the gripper's default cap: its rated stall torque
            grip = gac_params(tree["gripper_controller"], JOINTS[5], low, high, stall)
            gac = declare_gac(self, SCHEMA, grip)
            self.loop = ServoLoop(
                self.bus,
                JointTrajectoryController(jtc),
                GripperActionController(gac),
                loop_settings(p, limits),
                self._log,
            )
        except PhysaiError as exc:
            raise SystemExit(f"so101_driver: {exc}") from exc
        self.servers = ControllerServers(
            self,
            self.loop.arm,
            [GripperSlot(interfaces.GRIPPER_CONTROLLER, "gripper_controller", self.loop.gripper)],
            self.loop.lock,
            now=time.monotonic,
            to_loop_time=self._to_loop_time,
            ros_stamp=self._ros_stamp,
            monitor_rate=p["arm_controller.action_monitor_rate"],
            state_rate=p["arm_controller.state_publish_rate"],
            tighten_only=True,
            state_from_loop=True,
        )
        self.pub_js = self.create_publisher(JointState, interfaces.JOINT_STATES, 10)
        self.pub_jaw = {
            jaw: self.create_publisher(WrenchStamped, f"{interfaces.JAW_CONTACT_PREFIX}/{jaw}", 10)
            for jaw in JAW_FRAMES
        }
        self.pub_diag = self.create_publisher(DiagnosticArray, interfaces.DIAGNOSTICS, 10)
        self.create_service(Trigger, "~/stop", self._on_stop)
        self.create_service(Trigger, "~/resume", self._on_resume)
        self.create_service(Trigger, "~/release", self._on_release)
        self.create_timer(0.1, self._supervise)
        self.snapshot: Snapshot | None = None
        self.running = True
        self.bus_death = ""  # the exception that ended the bus thread ('' = none)
        self.watchdog_held: bool | None = None  # the watchdog's hold (None = not acted)
        self.stale_stamp: float | None = None  # an old snapshot's stamp the watchdog saw
        self.watch_lock = threading.Lock()  # one watchdog at a time (this and the bus thread)
        self.thread = threading.Thread(target=self._bus_thread, name="so101-bus", daemon=True)
        self.thread.start()
        self.watcher = threading.Thread(
            target=self._watch, args=(1.0 / p["diagnostics_rate"],), name="so101-watch", daemon=True
        )
        self.watcher.start()
        self.autostart = p["autostart"]
        self._next_configure = 0.0
        self._configure_error = ""
        self._activation_retries = 3  # autostart: tries when the bus fails while arming
        domain = os.environ.get("ROS_DOMAIN_ID", "0")
        scope = os.environ.get(DISCOVERY_RANGE) or "SUBNET (ROS default)"
        if scope == "LOCALHOST":
            scope += f" (this computer only; {DISCOVERY_RANGE}=SUBNET opens it to the network)"
        self.get_logger().info(
            f"SO-101 driver on {p['port']}, ROS_DOMAIN_ID={domain}, discovery range {scope}: "
            + ("configuring and activating" if self.autostart else "waiting for ros2 lifecycle set")
        )

    # --- clocks --------------------------------------------------------------------------
    def _to_loop_time(self, stamp: float) -> float:
        return stamp - self.get_clock().now().nanoseconds * 1e-9 + time.monotonic()

    def _ros_stamp(self, loop_time: float) -> Time:
        ns = self.get_clock().now().nanoseconds - round((time.monotonic() - loop_time) * 1e9)
        return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)

    def _log(self, level: str, message: str) -> None:
        # one call site per severity: rclpy refuses a severity change at one call site
        logger = self.get_logger()
        if level == "error":
            logger.error(message)
        elif level == "warn":
            logger.warning(message)
        else:
            logger.info(message)

    # --- lifecycle -----------------------------------------------------------------------
    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        try:
            self.get_logger().info(self.loop.configure(time.monotonic()))
        except (BusError, PhysaiError) as exc:
            text = f"configure failed: {exc}"
            if text != self._configure_error:  # autostart retries: say it once
                self.get_logger().error(text)
                self._configure_error = text
            return FAILURE
        self._configure_error = ""
        return OK

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        if problem := self._bus_problem():
            self.get_logger().error(f"activation refused: {problem}; restart the driver")
            self._activation_retries = 0
            return FAILURE
        try:
            self.get_logger().info(self.loop.activate(time.monotonic()))
        except Refused as exc:  # the arm is not safe to arm: a person must act
            self.get_logger().error(f"activation refused: {exc}")
            self._activation_retries = 0
            return FAILURE
        except (BusError, PhysaiError) as exc:  # the bus: autostart tries again
            self.get_logger().error(f"activation failed: {exc}")
            return FAILURE
        self._activation_retries = 0
        return super().on_activate(state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.get_logger().info(f"deactivated: {self.loop.deactivate()}")
        self.servers.deliver(self.loop.take_ends())
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.loop.cleanup()
        self.servers.deliver(self.loop.take_ends())
        return OK

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.exit_policy()
        return OK

    def exit_policy(self) -> None:
        """What happens to torque when the driver goes away: announced either way."""
        loop = self.loop
        if not loop.bus.connected:
            return
        if self.p["on_exit"] == "release" and loop.armed:
            try:
                self.get_logger().warning(f"on_exit=release: {loop.release('driver exiting')}")
            except BusError as exc:
                self.get_logger().error(f"on_exit=release failed: {exc}")
        elif loop.armed:
            self.get_logger().warning(
                "on_exit=hold: the servos keep holding their last goal with torque on; power "
                "them off, or run with on_exit:=release to let the arm go limp"
            )
        loop.cleanup()

    def _supervise(self) -> None:
        """Autostart, and a fault that needs a re-arm → deactivate (in the executor)."""
        label = self._state_machine.current_state[1]
        if self.loop.rearm_needed and label == "active":
            self.trigger_deactivate()
        if not self.autostart or time.monotonic() < self._next_configure:
            return
        if label == "unconfigured":
            if self.trigger_configure() != OK:
                self._next_configure = time.monotonic() + self.loop.s.reconnect_period
                return
            label = "inactive"
        if label == "inactive":
            self.trigger_activate()
            self._activation_retries -= 1
            if self._activation_retries <= 0:  # once armed, or refused, or given up: a later
                self.autostart = False  # deactivation is the user's (or a fault's)
            else:
                self._next_configure = time.monotonic() + self.loop.s.reconnect_period

    # --- the bus thread ------------------------------------------------------------------
    def _bus_thread(self) -> None:
        """The bus loop; an unexpected exception ends it as a fault named after it (the
        watchdog holds the arm), never a silent death."""
        try:
            self._bus_cycles()
        except Exception as exc:
            if not self.running or not rclpy.ok(context=self.context):
                return  # shutting down
            self.bus_death = f"{type(exc).__name__}: {exc}"
            self.get_logger().error(
                f"bus thread stopped by {self.bus_death}\n{traceback.format_exc()}"
            )
            try:  # hold now; the goals' ends are delivered from the executor
                self._watchdog()
            except Exception as again:  # the diagnostics timer tries again
                self.get_logger().error(f"watchdog failed: {type(again).__name__}: {again}")

    def _bus_cycles(self) -> None:
        period = 1.0 / self.p["loop_rate"]
        next_t = time.monotonic()
        while self.running and rclpy.ok(context=self.context):
            snap = self.snapshot = self.loop.cycle(time.monotonic())
            ends = self.loop.take_ends()
            try:
                if ends:
                    self.servers.deliver(ends)
                self._publish(snap)
                self.servers.publish_state()  # what this cycle commanded
            except RCLError:  # the context went down under us (shutdown)
                return
            next_t += period
            delay = next_t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                next_t = time.monotonic()

    def _publish(self, snap: Snapshot) -> None:
        if snap.mode == "unconfigured":
            return
        stamp = self.get_clock().now().to_msg()
        if snap.reading is not None:
            r = snap.reading
            js = JointState(
                name=list(JOINTS),
                position=r.position.tolist(),
                velocity=r.velocity.tolist(),
                effort=r.torque.tolist(),
            )
            js.header.stamp = stamp
            self.pub_js.publish(js)
        for jaw, frame in JAW_FRAMES.items():
            msg = WrenchStamped()
            msg.header.stamp, msg.header.frame_id = stamp, frame
            # squeeze along the jaw's closing axis: fixed jaw pushes +z, moving jaw -z
            msg.wrench.force.z = snap.jaw.normal_n * (1.0 if jaw == "fixed_jaw" else -1.0)
            self.pub_jaw[jaw].publish(msg)

    def _watch(self, period: float) -> None:
        """/diagnostics and the watchdog every ``period`` [s], on a thread of their own: the
        executor's callbacks (the controllers' feedback and state timers, goal callbacks) wait
        for the loop's lock, which a bus thread stuck inside a transfer never gives back -- a
        watchdog run by the executor would be stuck with it and /diagnostics would go quiet."""
        while self.running and rclpy.ok(context=self.context):
            time.sleep(period)
            if not self.running:  # the node is going away: publish nothing more
                return
            try:
                self._publish_diagnostics()
            except RCLError:  # the context went down under us (shutdown)
                return
            except Exception as exc:  # never a silent death: the next period tries again
                self.get_logger().error(f"diagnostics failed: {type(exc).__name__}: {exc}")

    def _bus_problem(self) -> str:
        """Why the bus thread does not cycle ('' = it does)."""
        if self.bus_death:
            return f"bus thread stopped by {self.bus_death}"
        if not self.thread.is_alive():
            return "bus thread stopped"
        snap = self.snapshot
        # the same old snapshot at two diagnostics ticks: one old snapshot alone may be a cycle
        # that waited for a lifecycle step (activation holds the loop for a while)
        if snap is not None and snap.stamp == self.stale_stamp:
            return f"bus thread stuck: no bus cycle for {time.monotonic() - snap.stamp:.1f} s"
        return ""

    def _watchdog(self) -> str:
        """The bus thread stopped or stuck: once, a fault that aborts goals and holds the
        present pose (retried while the stuck thread keeps the loop's lock). Returns the
        /diagnostics message ('' = the thread cycles)."""
        with self.watch_lock:
            snap = self.snapshot
            old = snap is not None and time.monotonic() - snap.stamp > BUS_STALL
            problem = self._bus_problem()
            self.stale_stamp = snap.stamp if old else None
            if not problem:
                self.watchdog_held = None
                return ""
            if not self.watchdog_held:
                self.watchdog_held = self.loop.watchdog(problem)
        effect = (
            "the servos hold the present pose"
            if self.watchdog_held
            else "cannot command the servos (they keep their last goal; goals end and the arm "
            "holds if it cycles again)"
        )
        return f"{problem}: {effect}; joint_states stopped; restart the driver"

    def _publish_diagnostics(self) -> None:
        snap = self.snapshot
        if snap is None:
            return
        if problem := self._watchdog():  # the snapshot is old: say so, not what it said
            snap = snap._replace(fault=problem, reading=None)
            if self.watchdog_held:  # (else the stuck thread holds the loop's lock)
                self.servers.deliver(self.loop.take_ends())
        array = DiagnosticArray()
        array.header.stamp = self.get_clock().now().to_msg()
        age = time.monotonic() - snap.stamp
        for report in reports(snap, self.loop.rearm_needed, self.loop.stopped):
            if report.name == "so101/driver":
                report = report._replace(values={**report.values, "state_age_s": age})
            status = DiagnosticStatus(
                name=report.name,
                hardware_id=report.hardware_id,
                level=LEVELS[report.level],
                message=report.message,
            )
            status.values = [KeyValue(key=k, value=f"{v:.4g}") for k, v in report.values.items()]
            array.status.append(status)
        self.pub_diag.publish(array)

    # --- services ------------------------------------------------------------------------
    def _service(self, action, response: Trigger.Response) -> Trigger.Response:
        try:
            response.message, response.success = action(), True
        except (BusError, PhysaiError) as exc:
            response.message, response.success = str(exc), False
        self.servers.deliver(self.loop.take_ends())
        self._log("warn" if response.success else "error", response.message)
        return response

    def _on_stop(self, _request, response):
        return self._service(self.loop.stop, response)

    def _on_resume(self, _request, response):
        return self._service(lambda: self.loop.resume(time.monotonic()), response)

    def _on_release(self, _request, response):
        return self._service(self.loop.release, response)

    def destroy_node(self) -> None:
        self.running = False
        # rclpy's shutdown destroys a node whose __init__ was interrupted (Ctrl-C while LeRobot
        # imports torch) before the bus thread existed
        for name in ("thread", "watcher"):
            if (thread := getattr(self, name, None)) is not None:
                thread.join(timeout=1.0)
        super().destroy_node()


DISCOVERY_RANGE = "ROS_AUTOMATIC_DISCOVERY_RANGE"


def keep_discovery_on_this_computer(environ: MutableMapping[str, str] = os.environ) -> None:
    """A real arm obeys whoever reaches its services: unless the user chose a discovery range
    (``ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET`` to run RViz or the planner on another
    computer), the driver is reachable from this computer only -- on every start path, ``ros2
    run`` included, where ROS's own default would be the whole subnet. Set before rclpy
    reads it; the start-up log line says which range is in effect."""
    if not environ.get(DISCOVERY_RANGE, ""):
        environ[DISCOVERY_RANGE] = "LOCALHOST"


def main(args: list[str] | None = None) -> None:
    keep_discovery_on_this_computer()
    run_node(So101Driver, args, cleanup=So101Driver.exit_policy)


if __name__ == "__main__":
    main()
