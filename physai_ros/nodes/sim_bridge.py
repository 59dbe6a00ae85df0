"""sim_bridge: the MuJoCo robot behind ros2_control's interfaces, so every other node (pick,
trajectory, users' tools) runs unchanged on the simulation and on hardware.

Publishes /clock, joint_states, cube_pose, jaw_contact/<jaw>, contact_markers and
arm_controller/tracking_error at configured SIM-time rates, and with ``soft_object`` (cube |
sphere | cylinder, a MuJoCo flex beside the rigid cube) soft_object_pose and
soft_object_strain; with ``cameras.names`` each named camera's <camera>/image_raw and
camera_info (``physai_ros.nodes._sim_cameras``, rendered offscreen only while subscribed); the
shared controllers
(``physai_ros.nodes._controllers``: arm_controller/follow_joint_trajectory, its topic and
controller_state, gripper_controller/gripper_cmd) run inside the physics steps; sim/reset
puts robot, cube and soft object back (the cube at ``cube_x``, ``cube_y``, the soft object at
``soft_x``, ``soft_y``, which a client may set while the bridge runs to start the next trial
elsewhere). Physics runs in its own thread paced by
``real_time_factor``; the maths lives in physai_ros.sim.mujoco_sim and physai_ros.core.

Franka-shaped (``franka_profile`` panda | fr3, or ``joint_prefix``, ``arm_controller_name``,
``franka_gripper`` one by one): joint and controller names as franka_ros2's, the FR3's limits,
and franka_gripper's actions (``physai_ros.nodes._franka_gripper``), so that code written for a
real Franka runs unchanged on the simulated Panda. Under the FR3 profile ``franka_fault`` plays
a libfranka robot error and franka_ros2's recovery from it (``physai_ros.nodes._franka_errors``);
under the Panda profile the bridge ends on it as franka_ros2 v0.1.13 does (libfranka's exception
on stderr, the process terminated), which ends every controller and ``/joint_states`` at once.
With ``stand_in`` it plays a real Franka for the graph ``pick.launch.py sim:=false`` starts (its
nodes on wall time): every stamp it reads and writes is wall time, ``/joint_states`` come at
franka_ros2's rate (its joint_state_publisher's 30 Hz), and it publishes what a real
Franka does not measure (the cube's pose, the jaws' wrenches) only as a witness for tests
(``~/true_cube_pose``), never as an input of that graph.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import threading
import time

import numpy as np
import rclpy
from geometry_msgs.msg import PoseStamped, WrenchStamped
from rcl_interfaces.msg import SetParametersResult
from rclpy._rclpy_pybind11 import RCLError
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64
from std_srvs.srv import Trigger
from visualization_msgs.msg import MarkerArray

from physai_ros import interfaces as names
from physai_ros.config import load_scene_config, load_sim_config
from physai_ros.core.controllers.jtc import Rejected
from physai_ros.core.frames.joint_names import JointPrefix
from physai_ros.core.motion.limits import load_limits
from physai_ros.errors import PhysaiError
from physai_ros.nodes._common import declare_schema, load_schema, run_node
from physai_ros.nodes._controllers import (
    CONTROLLER_NAME,
    ControllerServers,
    GripperSlot,
    declare_gac,
    declare_jtc,
    without_controllers,
)
from physai_ros.nodes._messages import PatchedMessage, contact_markers, stamp
from physai_ros.nodes._sim_cameras import SimCameras
from physai_ros.nodes._soft import SOFT_PARAMETERS, declare_soft_object
from physai_ros.robots.franka.names import (
    JOINT_STATE_PUBLISHER_RATE,
    PANDA_TERMINATE,
    PROFILE_PARAMETERS,
    REFLEX,
    ROBOT_ERRORS,
    franka_profile,
)
from physai_ros.sim.mujoco_sim import MujocoSim
from physai_ros.sim.render import camera_names

MAX_STAMP_AHEAD = 10.0  # [s] a goal stamped further ahead of sim time has a clock mismatch
STREAMS = (
    "clock",
    "joint_states",
    "tracking_error",
    "cube_pose",
    "soft_object",
    "contacts",
    "markers",
    "cameras",
)
STAND_IN_NEEDS = (
    "stand_in stands in for a real Franka: it needs franka_profile panda or fr3 and "
    "real_time_factor 1 (a real robot's stamps are wall time)"
)
NO_ROBOT_ERRORS = "franka_fault needs franka_profile panda or fr3"
PANDA_END_DELAY = 0.2  # [s] the Panda profile ends this long after franka_fault is set (answered)
SCHEMA = load_schema("sim_bridge")  # config/schema/sim_bridge.yaml


class SimBridge(Node):
    def __init__(self) -> None:
        super().__init__("sim_bridge")
        scene = load_scene_config()
        p = declare_schema(self, SCHEMA.only("robot", "franka_profile"))
        robot = p["robot"]
        if robot not in load_sim_config()["robots"]:
            valid = sorted(load_sim_config()["robots"])
            raise SystemExit(f"sim_bridge: unknown robot {robot!r}; choose one of {valid}")
        try:
            profile = franka_profile(p["franka_profile"])
        except PhysaiError as exc:
            raise SystemExit(f"sim_bridge: {exc}") from exc
        place, cube = scene["robots"][robot], scene["cube"]
        defaults = {name: getattr(profile, field) for name, field in PROFILE_PARAMETERS.items()}
        defaults |= {
            "base_pos": place["base_pos"],
            "base_yaw_deg": place["base_yaw_deg"],
            "cube_x": place["cube_pos"][0],
            "cube_y": place["cube_pos"][1],
            "cube_size": cube["size"],
            "cube_mass": cube["mass"],
            "cube_mu": cube["mu"],
        }
        own = without_controllers(SCHEMA).without("robot", "franka_profile", *SOFT_PARAMETERS)
        self.p = p = p | declare_schema(self, own, defaults)
        if robot != "panda" and (p["franka_profile"] != "none" or p["franka_gripper"]):
            raise SystemExit(
                f"sim_bridge: franka_profile and franka_gripper need robot panda, not {robot!r}"
            )
        self.rtf = p["real_time_factor"]
        self.rates = {s: p[f"{s}_rate"] for s in STREAMS}
        self.stand_in = bool(p["stand_in"])
        self.offset = 0.0  # [s] wall time minus sim time on the stamps (stand_in), else 0
        if self.stand_in:
            if p["franka_profile"] == "none" or self.rtf != 1.0:
                raise SystemExit(f"sim_bridge: {STAND_IN_NEEDS}")
            # a real Franka publishes no clock, and measures neither the cube nor jaw wrenches;
            # its /joint_states come from franka_ros2's joint_state_publisher
            self.rates["clock"] = self.rates["contacts"] = 0.0
            self.rates["joint_states"] = JOINT_STATE_PUBLISHER_RATE
        self.marker_cfg = {
            k: p[f"markers.{k}"] for k in ("force_scale", "cone_height", "cone_segments")
        }
        cap = p["markers.max_wall_rate"]
        self.marker_gap = 1.0 / cap if cap > 0 else 0.0  # [s wall] between two marker sends
        self.marker_next = 0.0  # [s wall, monotonic] the next marker send allowed
        try:
            soft = declare_soft_object(self, SCHEMA, robot)
            self.sim = MujocoSim(
                robot,
                model_path=p["model_path"] or None,
                base_pos=p["base_pos"],
                base_yaw_deg=p["base_yaw_deg"],
                cube_pos=(p["cube_x"], p["cube_y"]),
                cube_size=p["cube_size"],
                cube_mass=p["cube_mass"],
                cube_mu=p["cube_mu"],
                jaw_torque_cap=p["jaw_torque_cap"] or None,
                soft=soft,
                controller_rate=p["controller_rate"],
            )
        except PhysaiError as exc:
            raise SystemExit(f"sim_bridge: {exc}") from exc
        if soft is None:
            self.rates["soft_object"] = 0.0
        else:  # where sim/reset puts it (soft_x, soft_y may be set while running)
            self.p |= {"soft_x": soft.pos[0], "soft_y": soft.pos[1]}
        # the controllers' parameters: config/sim_robots.yaml's defaults, declared so that a
        # params file or `ros2 param set` changes them
        jtc = declare_jtc(self, SCHEMA, self.sim.arm.p)
        if p["arm_controller.check_limits"]:  # position, velocity, acceleration (not jerk)
            limits = load_limits(profile.limits or robot).select(self.sim.arm_joints)
            limits = dataclasses.replace(limits, jerk=np.full(len(jtc.joints), math.inf))
            jtc = dataclasses.replace(
                jtc,
                limits=limits,
                limit_period=1.0 / p["controller_rate"],
                # the model's ranges and the limits file's, both (they differ for the FR3)
                lower=np.maximum(jtc.lower, limits.position_min),
                upper=np.minimum(jtc.upper, limits.position_max),
            )
        self.sim.arm.p = jtc
        slots = self._gripper_slots(p)
        for slot in slots:
            slot.controller.p = declare_gac(self, SCHEMA, slot.controller.p, slot.params)
        self.lock = threading.RLock()
        self.instabilities = 0
        try:
            self.prefix = JointPrefix(p["joint_prefix"], self.sim.state_names)
            self.servers = ControllerServers(
                self,
                self.sim.arm,
                slots,
                self.lock,
                now=lambda: self.sim.time,
                to_loop_time=self._stamp_to_sim,
                ros_stamp=self.ros_stamp,
                monitor_rate=p["arm_controller.action_monitor_rate"],
                state_rate=p["arm_controller.state_publish_rate"],
                state_from_loop=True,  # stamped in sim time by the physics loop below
                arrival_delay=p["arm_goal_delay"],
                arm_name=p["arm_controller_name"],
                names=self.prefix,
            )
        except PhysaiError as exc:
            raise SystemExit(f"sim_bridge: {exc}") from exc
        if p["franka_gripper"]:
            self._serve_franka_gripper(p)
        self.robot_errors = self._serve_robot_errors(p)
        depth = int(p["history_depth"])
        self.pub = {
            "joint_states": self.create_publisher(JointState, names.JOINT_STATES, depth),
            "tracking_error": self.create_publisher(
                JointState, names.under(p["arm_controller_name"], names.TRACKING_ERROR), depth
            ),
            # standing in for a real robot, the truth is a witness for tests, not motion capture
            "cube_pose": self.create_publisher(
                PoseStamped, "~/true_cube_pose" if self.stand_in else names.CUBE_POSE, depth
            ),
            "markers": self.create_publisher(MarkerArray, names.CONTACT_MARKERS, 10),
        }
        if not self.stand_in:  # a real robot has no clock of its own on ROS
            self.pub["clock"] = self.create_publisher(Clock, names.CLOCK, depth)
        if soft is not None:
            self.pub["soft_pose"] = self.create_publisher(
                PoseStamped, names.SOFT_OBJECT_POSE, depth
            )
            self.pub["soft_strain"] = self.create_publisher(
                Float64, names.SOFT_OBJECT_STRAIN, depth
            )
        self.cameras = None
        cameras = camera_names(p["cameras.names"])
        if cameras and self.rates["cameras"] > 0:
            try:
                self.cameras = SimCameras(
                    self, self.sim.model, cameras, p["cameras.height"], p["cameras.width"],
                    quality=p["cameras.quality"],
                )  # fmt: skip
            except (ValueError, PhysaiError) as exc:
                raise SystemExit(f"sim_bridge: {exc}") from exc
        else:
            self.rates["cameras"] = 0.0
        self.jaw_pub = {  # (a real Franka Hand measures no contact force)
            jaw: self.create_publisher(WrenchStamped, f"{names.JAW_CONTACT_PREFIX}/{jaw}", depth)
            for jaw in ([] if self.stand_in else self.sim.jaw_names)
        }
        self.create_service(Trigger, names.SIM_RESET, self._on_reset)
        self.add_on_set_parameters_callback(self._on_parameters)
        self.add_post_set_parameters_callback(self._after_parameters)
        self.viewer = self._open_viewer() if p["viewer"] else None
        self.now = self.sim.time
        self.outbox: list[tuple[object, object]] = []  # (publisher, bytes | message), in order
        self._make_messages()
        self.running = True
        self._repace = False
        self.thread = threading.Thread(target=self._physics_loop, name="physics", daemon=True)
        self.thread.start()
        self.get_logger().info(
            f"simulating {robot} ({self.sim.model.nq} qpos, dt {self.sim.dt * 1e3:g} ms, soft "
            f"object {soft.shape if soft else 'none'}) at "
            f"real_time_factor {self.rtf:g}; arm joints {self.prefix.to_wire(self.sim.arm_joints)}"
            f" under {p['arm_controller_name']}; franka_profile {p['franka_profile']}"
        )

    def _gripper_slots(self, p: dict) -> list[GripperSlot]:
        """The gripper controllers as served: a two-jaw gripper's one under
        ``gripper_controller_name`` (the Franka profiles rename it) with its parameters
        ``gripper_controller.*``; a hand's (config/sim_robots.yaml ``hand``) each under its own
        name, parameters included (``f1_controller.stall_timeout``)."""
        grippers = self.sim.grippers
        if len(grippers) == 1:
            name = p["gripper_controller_name"]
            return [GripperSlot(name, "gripper_controller", self.sim.gripper)]
        return [GripperSlot(name, name, grip) for name, grip in grippers.items()]

    def _serve_franka_gripper(self, p: dict) -> None:
        """franka_gripper's actions on the simulated hand (franka_msgs is imported only here:
        a ROS install without franka_ros2 runs the bridge without them)."""
        try:
            from physai_ros.nodes import _franka_gripper as franka
        except ImportError as exc:
            raise SystemExit(
                f"sim_bridge: franka_gripper needs franka_msgs ({exc}); build "
                "ros_interfaces/franka_msgs (make setup does) or franka_ros2's"
            ) from exc
        namespace = p["franka_gripper"]
        if not CONTROLLER_NAME.fullmatch(namespace):
            raise SystemExit(f"sim_bridge: franka_gripper {namespace!r} is not a ROS name")
        self.franka = franka.serve_simulated_hand(
            self,
            self.sim,
            self.lock,
            self.servers,
            franka.franka_settings(p),
            namespace,
            self.prefix.to_wire(self.sim.gripper_joints),
            self.ros_stamp,
        )

    def _serve_robot_errors(self, p: dict):
        """A Franka robot error (``franka_fault``) and franka_ros2's recovery from it, under
        the FR3 profile (``physai_ros.nodes._franka_errors``); None under the others."""
        if p["franka_profile"] != "fr3":
            why = self._panda_error_refused(p["franka_fault"])
            if why:
                raise SystemExit(f"sim_bridge: {why}")
            if p["franka_fault"]:  # a Panda that starts in error: its first read ends it
                self._end_as_franka_ros2_v0113(p["franka_fault"])
            return None
        try:
            from physai_ros.nodes._franka_errors import FrankaRobotErrors
        except ImportError as exc:
            raise SystemExit(
                f"sim_bridge: franka_profile fr3 needs franka_msgs and controller_manager_msgs "
                f"({exc}); build ros_interfaces/ (make setup does)"
            ) from exc
        errors = FrankaRobotErrors(
            self,
            self.sim.arm,
            p["arm_controller_name"],
            self.lock,
            now=lambda: self.sim.time,
            measured=lambda: self.sim.arm_state()[:2],
            deliver=self.servers.deliver,
        )
        why = errors.check(p["franka_fault"])
        if why:
            raise SystemExit(f"sim_bridge: {why}")
        errors.inject(p["franka_fault"])  # a robot that starts in error
        return errors

    def _robot_error_refused(self, value: str) -> str:
        """Why ``franka_fault`` may not become ``value`` now ('' = it may)."""
        if self.robot_errors is not None:
            return self.robot_errors.check(value)
        return self._panda_error_refused(value)

    def _panda_error_refused(self, value: str) -> str:
        """Why ``franka_fault`` may not become ``value`` without the FR3's robot errors."""
        if not value:
            return ""
        if self.p["franka_profile"] != "panda":
            return NO_ROBOT_ERRORS
        if value not in ROBOT_ERRORS:
            return f"franka_fault {value!r} is not one of {list(ROBOT_ERRORS)}"
        return ""

    def _end_as_franka_ros2_v0113(self, error: str) -> None:
        """franka_ros2 v0.1.13 on a robot error (``PANDA_TERMINATE``): libfranka's exception
        on stderr and the process aborted, as C++ ends ros2_control_node; nothing is left to
        answer, and the robot stays where libfranka stopped it."""
        sys.stderr.write(PANDA_TERMINATE.format(reflex=REFLEX.format(error=error)) + "\n")
        sys.stderr.flush()
        os.abort()

    def _stamp_to_sim(self, stamp_s: float) -> float:
        """Goal stamps are sim time here (the nodes run with use_sim_time), or wall time when
        the bridge stands in for a real robot (``stand_in``)."""
        stamp_s -= self.offset
        if stamp_s > self.sim.time + MAX_STAMP_AHEAD:
            clock = "wall" if self.stand_in else "sim"
            raise Rejected(
                f"header.stamp is {stamp_s - self.sim.time:.1f} s ahead of the robot's clock "
                f"({clock} time; leave it zero to start now)"
            )
        return stamp_s

    def ros_stamp(self, t: float):
        """An outgoing header stamp for sim time ``t`` [s]: wall time when standing in."""
        return stamp(t + self.offset)

    def _align_clock(self) -> None:
        """Standing in for a real robot, stamps are wall time: sim time plus the offset taken
        when the physics loop (re)starts its pacing (it fell behind, or started)."""
        if self.stand_in:
            self.offset = time.time() - self.sim.time

    def _on_parameters(self, params) -> SetParametersResult:
        for param in params:
            if param.name == "franka_fault":
                why = self._robot_error_refused(param.value)
                if why:
                    return SetParametersResult(successful=False, reason=why)
            if param.name in ("cube_x", "cube_y", "soft_x", "soft_y"):  # where the next reset
                self.p[param.name] = float(param.value)  # puts the cube or the soft object
                self.get_logger().info(f"{param.name} -> {param.value:g} m at the next reset")
            if param.name == "real_time_factor":
                if self.stand_in and param.value != 1.0:
                    return SetParametersResult(successful=False, reason=STAND_IN_NEEDS)
                self.rtf = float(param.value)
                self._repace = True  # the physics loop restarts its pacing from now
                self.get_logger().info(f"real_time_factor -> {self.rtf:g}")
        return SetParametersResult(successful=True)

    def _after_parameters(self, params) -> None:
        for param in params:
            if param.name == "franka_fault" and self.robot_errors is not None:
                self.robot_errors.inject(param.value)
            elif param.name == "franka_fault" and param.value:  # the Panda's: after the answer
                end = threading.Timer(
                    PANDA_END_DELAY, self._end_as_franka_ros2_v0113, [param.value]
                )
                end.daemon = True
                end.start()

    def _open_viewer(self):
        if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            self.get_logger().warning(
                "viewer requested but no display is available; running headless"
            )
            return None
        import mujoco.viewer

        return mujoco.viewer.launch_passive(self.sim.model, self.sim.data)

    # ------------------------------------------------------------------ physics thread
    def _physics_loop(self) -> None:
        """The physics thread: ``_run_physics``, then the cameras' OpenGL context freed by the
        thread that made it."""
        try:
            self._run_physics()
        finally:
            if self.cameras is not None:
                self.cameras.close()

    def _run_physics(self) -> None:
        """Step to the next due stream, stamp what is due, then send: before sleeping to keep
        the real-time factor, or once the oldest stamped message has waited
        ``max_publish_delay`` wall seconds. Paced runs therefore send every tick at once, and a
        free-running one sends bursts, which costs DDS far less than one send per tick."""
        sim, log = self.sim, self.get_logger()
        periods = {s: 1.0 / r for s, r in self.rates.items() if r > 0}
        due = dict.fromkeys(periods, sim.time)
        wall0, sim0, behind_logged, last_view = time.monotonic(), sim.time, False, 0.0
        self._align_clock()
        oldest = 0.0  # [s wall] when the oldest message in the outbox was stamped
        state_period, state_wall = 1.0 / self.p["arm_controller.state_publish_rate"], -np.inf
        while self.running:
            with self.lock:
                step = min(due.values(), default=sim.time + 0.01) - sim.time
                if step > 1e-9:  # streams due now (the first tick) go out at this very time
                    sim.advance(step)
                now = self.now = sim.time
                if sim.instabilities != self.instabilities:
                    self.instabilities = sim.instabilities
                    log.error(sim.last_instability)
                ends, sim.ends = sim.ends, []
                if not self.outbox:
                    oldest = time.monotonic()
                try:
                    for stream, t in due.items():
                        if t <= now + 1e-9:
                            self.emit[stream]()
                            due[stream] = max(t + periods[stream], now)
                except Exception as exc:  # shutting down: the publishers' context is gone
                    if rclpy.ok(context=self.context):
                        raise
                    log.debug(f"stopping the physics loop after shutdown: {exc}")
                    return
                if self.viewer is not None and time.monotonic() - last_view > 1 / 30:
                    self.viewer.sync()
                    last_view = time.monotonic()
            try:
                if ends:
                    self.servers.deliver(ends)
                # each sim-time period's controller_state: a timer starved on a busy machine
                # left gaps of 130 ms in it, which a dataset recorder rightly refuses. Free-
                # running, at most at its rate in wall time too: at 20x real time each sim
                # period's message would halve the bridge's speed
                if self.rtf > 0 or time.monotonic() - state_wall >= state_period:
                    state_wall = time.monotonic()
                    self.servers.publish_state()
            except Exception as exc:  # shutting down: the publishers' context is gone
                if rclpy.ok(context=self.context) and not isinstance(exc, RCLError):
                    raise
                return
            if self._repace:  # real_time_factor changed: pace from here
                wall0, sim0, self._repace = time.monotonic(), sim.time, False
            wall = time.monotonic()
            ahead = wall0 + (sim.time - sim0) / self.rtf - wall if self.rtf > 0 else -1.0
            if self.outbox and (ahead > 0 or wall - oldest >= self.p["max_publish_delay"]):
                if not self._flush():
                    return
                if ahead > 0:
                    ahead = wall0 + (sim.time - sim0) / self.rtf - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
            elif self.rtf > 0 and ahead < -0.2:
                if not behind_logged:
                    log.warning(f"cannot keep real_time_factor {self.rtf:g}; running slower")
                    behind_logged = True
                wall0, sim0 = time.monotonic(), sim.time
                self._align_clock()
        self._flush()

    def _flush(self) -> bool:
        """Send the outbox in order; False once the context is gone (shutting down)."""
        try:
            for publisher, data in self.outbox:
                publisher.publish(data)
        except Exception as exc:
            if rclpy.ok(context=self.context):
                raise
            self.get_logger().debug(f"publish after shutdown: {exc}")
            return False
        finally:
            self.outbox.clear()
        return True

    def _make_messages(self) -> None:
        """Fixed-layout messages for the periodic streams: the physics loop only writes numbers
        into their serialised bytes (see ``PatchedMessage``)."""
        sim, n, m = self.sim, len(self.sim.state_names), len(self.sim.arm_joints)
        if "clock" in self.pub:
            self.out_clock = PatchedMessage(self.pub["clock"], Clock(), {})
        self.out_joints = PatchedMessage(
            self.pub["joint_states"],
            JointState(name=self.prefix.to_wire(sim.state_names)),
            {"position": n, "velocity": n, "effort": n},
        )
        self.out_error = PatchedMessage(
            self.pub["tracking_error"],
            JointState(name=self.prefix.to_wire(sim.arm_joints)),
            {"position": m, "velocity": m},
        )
        self.out_cube = PatchedMessage(self.pub["cube_pose"], PoseStamped(), {"pose": 7}, "world")
        if "soft_pose" in self.pub:
            self.out_soft = PatchedMessage(
                self.pub["soft_pose"], PoseStamped(), {"pose": 7}, "world"
            )
        self.out_jaw = {
            jaw: PatchedMessage(
                self.jaw_pub[jaw], WrenchStamped(), {"wrench": 6}, sim.jaw_body_names[jaw]
            )
            for jaw in self.jaw_pub
        }
        self.emit = {
            "clock": self._pub_clock,
            "joint_states": self._pub_joints,
            "tracking_error": self._pub_error,
            "cube_pose": self._pub_cube,
            "soft_object": self._pub_soft,
            "contacts": self._pub_contacts,
            "markers": self._pub_markers,
            "cameras": self._pub_cameras,
        }

    def _send(self, out: PatchedMessage) -> None:
        self.outbox.append((out.publisher, out.stamped(self.now + self.offset)))

    def _pub_clock(self) -> None:
        self._send(self.out_clock)

    def _pub_joints(self) -> None:
        slots = self.out_joints.slots
        if self.robot_errors is not None and not self.robot_errors.broadcasting:
            # franka_ros2's joint_state_broadcaster is deactivated by a robot error; its
            # joint_state_publisher repeats the arm's last values beside the live fingers
            fresh = self.sim.joint_state()
            arm = len(self.sim.arm_joints)
            for slot, values in zip(("position", "velocity", "effort"), fresh, strict=True):
                slots[slot][arm:] = values[arm:]
        else:
            self.sim.joint_state_into(slots["position"], slots["velocity"], slots["effort"])
        self._send(self.out_joints)

    def _pub_error(self) -> None:
        out = self.out_error
        self.sim.tracking_error_into(out.slots["position"], out.slots["velocity"])
        self._send(out)

    def _pub_cube(self) -> None:
        pose = self.out_cube.slots["pose"]
        pose[:3], quat = self.sim.cube_pose()
        pose[3:6], pose[6] = quat[1:], quat[0]  # ROS quaternions are (x, y, z, w)
        self._send(self.out_cube)

    def _pub_soft(self) -> None:
        """The soft object's centre of mass and best-fit rotation, and its largest edge strain
        (Float64 has no stamp: it belongs to the pose sent just before it)."""
        pose = self.out_soft.slots["pose"]
        pose[:3], quat = self.sim.soft_object_pose()
        pose[3:6], pose[6] = quat[1:], quat[0]
        self._send(self.out_soft)
        strain = Float64(data=self.sim.soft_object_strain())
        self.outbox.append((self.pub["soft_strain"], strain))

    def _pub_contacts(self) -> None:
        for jaw, wrench in self.sim.jaw_wrenches().items():
            out = self.out_jaw[jaw]
            out.slots["wrench"][:3], out.slots["wrench"][3:] = wrench.force, wrench.torque
            self._send(out)

    def _pub_markers(self) -> None:
        """Only while subscribed (RViz) and at most ``markers.max_wall_rate`` per wall second:
        the one stream still built as Python messages, and a display shows no more."""
        wall = time.monotonic()
        if wall < self.marker_next or not self.pub["markers"].get_subscription_count():
            return
        self.marker_next = wall + self.marker_gap
        markers = contact_markers(
            self.sim.contact_points(), self.marker_cfg, self.ros_stamp(self.now)
        )
        self.outbox.append((self.pub["markers"], markers))

    def _pub_cameras(self) -> None:
        """Every named camera's image and camera_info, rendered here in the physics thread
        from the state just stepped, and only while someone subscribes."""
        if self.cameras.wanted():
            self.outbox += self.cameras.messages(self.sim.data, self.ros_stamp(self.now))

    # ------------------------------------------------------------------ reset
    def _on_reset(self, _request, response):
        with self.lock:
            errors = self.robot_errors
            after_reset = errors.keep_through_reset() if errors is not None else list
            self.sim.reset()
            self.sim.place_cube((self.p["cube_x"], self.p["cube_y"]))
            if self.sim.soft is not None:
                self.sim.place_soft((self.p["soft_x"], self.p["soft_y"]))
            ends, self.sim.ends = self.sim.ends + after_reset(), []
        self.servers.deliver(ends)
        response.success, response.message = True, f"reset at sim time {self.sim.time:.3f} s"
        self.get_logger().info(response.message)
        return response

    def stop(self) -> None:
        self.running = False
        self.thread.join(timeout=2.0)
        if self.viewer is not None:
            self.viewer.close()


def main(args: list[str] | None = None) -> None:
    run_node(SimBridge, args, cleanup=SimBridge.stop)


if __name__ == "__main__":
    main()
