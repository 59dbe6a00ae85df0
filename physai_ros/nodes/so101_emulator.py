"""SO-101 bus emulator node: six emulated STS3215 servos on a pty, in place of a real arm.

Runs ``physai_ros.robots.so101.emulator.bus`` (MuJoCo physics in real time behind the servos'
serial protocol): the real-arm graph (``pick.launch.py sim:=false port:=<link>``) then runs
unchanged against it; only the serial port is emulated.

What really happens is published for tests and for RViz as an independent witness, never as
an input of the graph: ``~/true_cube_pose`` (PoseStamped, world) and ``~/witness`` (JSON: true
joint angles, gripper site, cube pose, cube in both jaws, each jaw's true normal force on the
cube, torque per servo, power, EPROM writes, error byte per servo; the driver's bus loop as
the servos see it: ``state_reads``, the state reads so far, one per driver cycle, and
``max_goal_step``, each servo's largest step between two goals received in a row [rad]).
With ``mocap:=true`` the cube pose also goes to ``cube_pose``, as a motion-capture system
beside a real arm would publish it.

``soft_object:=cube`` (or sphere, cylinder; the ``soft_*`` parameters as the sim bridge's, from
``physai_ros.nodes._soft``) puts the sim bridge's soft object in the scene at (soft_x, soft_y);
the witness then also gives ``soft``: its centre of mass [m], largest edge strain [m/m], whether
it touches both jaws and each jaw's true normal force on it [N].

Harder than a pty, set at start: ``usb_latency_ms`` (every transaction's reply that much
later: a USB serial adapter's round trip, 1-4 ms for a CH340 or an FTDI) and
``protections_clear_on_enable:=false`` (a latched OVERLOAD / OVERCURRENT / OVERHEAT survives
a torque re-enable; only ``power`` false then true clears it).

Faults, set at run time with ``ros2 param set /so101_emulator <name> <value>``:
``port_connected`` (false = cable pulled), ``pull_at_read`` (a register name: the cable is
pulled as the driver next reads it, once), ``lose_reads`` ("REGISTER SKIP COUNT": of its
next reads SKIP are answered, then COUNT replies are lost, once), ``garble`` ("AFTER TARGET
ID RAW": after the next read of AFTER, the next sync read of TARGET gives servo ID the raw
value RAW, once), ``power`` (false = supply
lost: servos silent and limp, the arm falls; true = back, reset with torque off),
``mute_ids`` (servos that stop
answering), ``corrupt_every`` (bad checksum every n-th reply), ``wrong_data_every`` (zeros with
a right checksum in every n-th sync read: a desynchronised bus), ``stall_every`` and
``stall_ms`` (the replies to every n-th read come that many ms late: a starved bus),
``overload_ids`` (latch
OVERLOAD), ``other_arm`` (true: the port reaches another SO-101, calibrated on its own: every
homing offset differs; set it while the cable is pulled, as a re-plug into the wrong arm),
``encoder_error_ids`` (those servos report a failed encoder; [0] = none), ``adapter_hung``
(true: the USB adapter stops taking bytes, the driver's next write blocks inside its transfer
until false),
``obstacle`` ([x, y, z, half edge] in the world [m] puts a box in the arm's way; [0.0] removes
it).

``cube_pos`` set at run time puts the cube back on the table at (x, y) in the base frame,
upright and at rest, out of the jaws if they held it: the operator's hands between two picks
(``physai trials --emulated`` sets it before each trial).
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import numpy as np
from geometry_msgs.msg import PoseStamped
from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from std_msgs.msg import String

from physai_ros import interfaces
from physai_ros.core.motion.limits import load_limits
from physai_ros.errors import InvalidInput
from physai_ros.nodes._common import declare_schema, load_schema, run_node
from physai_ros.nodes._soft import SOFT_PARAMETERS, declare_soft_object
from physai_ros.robots.so101 import protocol as fp
from physai_ros.robots.so101.emulator.bus import (
    FeetechBusEmulator,
    parse_garble,
    parse_lose_reads,
    write_calibration,
)
from physai_ros.robots.so101.emulator.hand import HandMotion
from physai_ros.robots.so101.emulator.physics import JOINTS
from physai_ros.sim.scene import placed_cube_world


def parse_homing_error(items: list[str]) -> dict[str, int]:
    """``["elbow_flex:60"]`` → ``{"elbow_flex": 60}`` (the ``homing_error`` parameter)."""
    out = {}
    for item in items:
        if not item:
            continue
        joint, sep, steps = item.partition(":")
        if not sep or joint not in JOINTS:
            raise InvalidInput(
                f"homing_error entry {item!r} is not JOINT:STEPS, JOINT one of {JOINTS}"
            )
        out[joint] = int(steps)
    return out


def leader_hand(p: dict) -> HandMotion:
    """The scripted hand that moves a leader (``leader``): reaches of ``leader_amplitude``
    from ``initial_pose`` after ``leader_hold``, kept 0.05 rad inside the model's joint ranges,
    for the next ten hours."""
    limits = load_limits("so101")
    order = [limits.joint_names.index(j) for j in JOINTS]
    return HandMotion(
        np.random.default_rng([p["leader_seed"], 1]),
        [float(v) for v in p["initial_pose"]],
        seconds=36000.0,
        amplitude=p["leader_amplitude"],
        lower=limits.position_min[order] + LEADER_MARGIN,
        upper=limits.position_max[order] - LEADER_MARGIN,
        hold=p["leader_hold"],
    )


LEADER_MARGIN = 0.05  # [rad] the leader's reaches stay this far inside the joint ranges
SCHEMA = load_schema("so101_emulator")  # config/schema/so101_emulator.yaml


class So101Emulator(Node):
    def __init__(self) -> None:
        super().__init__("so101_emulator")

        p = declare_schema(self, SCHEMA.without(*SOFT_PARAMETERS))
        link, cal, cube, baud = p["link"], p["calibration_out"], p["cube_pos"], p["baudrate"]
        initial, torque, calibrated = p["initial_pose"], p["power_on_torque"], p["calibrated"]
        configured, homing, margin = p["configured"], p["homing_error"], p["mechanical_margin"]
        self.mocap, rate = p["mocap"], p["witness_rate"]
        self.trace_file = p["trace_file"]
        try:
            soft = declare_soft_object(self, SCHEMA, "so101")
            hand = leader_hand(p) if p["leader"] else None
            self.emulator = FeetechBusEmulator(
                baudrate=baud,
                link=link or None,
                scene_kwargs={"cube_pos": [float(v) for v in cube], "soft": soft},
                initial=[float(v) for v in initial],
                calibrated=calibrated,
                configured=configured,
                power_on_torque=torque,
                homing_error=parse_homing_error(list(homing)),
                mechanical_margin=margin,
                clamp_torque_limit=p["clamp_torque_limit"],
                dead_zone=p["dead_zone"],
                supply_voltage=p["supply_voltage"],
                rated_voltage=p["rated_voltage"],
                stall_torque=p["stall_torque"],
                load_model=p["load_model"],
                load_sign=p["load_sign"],
                usb_latency_ms=p["usb_latency_ms"],
                protections_clear_on_enable=p["protections_clear_on_enable"],
                hand=hand,
                trace=bool(self.trace_file),
            )
        except InvalidInput as exc:
            raise SystemExit(f"so101_emulator: {exc}") from exc
        if cal:
            write_calibration(Path(cal), self.emulator.calibration)
        # Real servos run on their own microcontrollers and never pause; on a shared machine
        # the emulator asks for a higher scheduling priority so that its physics does not
        # stall behind the nodes it serves (allowed for root; otherwise it runs as it is).
        # (Real-time round-robin priority kept the soft scene on time at load 10, docs/
        # real_so101.md, but would change every emulator test's timing; not adopted yet.)
        with contextlib.suppress(OSError):
            os.nice(-10)
        port = self.emulator.start()
        self.add_on_set_parameters_callback(self.on_parameters)
        self.pub_truth = self.create_publisher(PoseStamped, "~/true_cube_pose", 10)
        self.pub_mocap = self.create_publisher(PoseStamped, interfaces.CUBE_POSE, 10)
        self.pub_witness = self.create_publisher(String, "~/witness", 10)
        self.create_timer(1.0 / rate, self.publish_witness)
        self.behind = (0, 0)  # (late replies dropped, physics lags) already reported
        self.create_timer(1.0, self.report_lag)
        self.get_logger().info(
            f"emulated SO-101 bus on {port}" + (f" (link {link})" if link else "")
        )

    def on_parameters(self, params) -> SetParametersResult:
        emulator = self.emulator
        for param in params:
            name, value = param.name, param.value
            if name == "mute_ids":
                emulator.faults.mute_ids = {int(i) for i in value if int(i) > 0}
            elif name == "corrupt_every":
                if value < 0:
                    return SetParametersResult(successful=False, reason="corrupt_every >= 0")
                emulator.faults.corrupt_every = int(value)
            elif name == "wrong_data_every":
                emulator.faults.wrong_data_every = int(value)
            elif name == "stall_every":
                emulator.faults.stall_every = int(value)
            elif name == "stall_ms":
                emulator.faults.stall_ms = float(value)
            elif name == "port_connected":
                (emulator.open_port if value else emulator.close_port)()
            elif name == "pull_at_read":
                if value:
                    try:
                        fp.register(value)
                    except InvalidInput as exc:
                        return SetParametersResult(successful=False, reason=str(exc))
                emulator.faults.pull_at_read = value
            elif name == "lose_reads":
                if value:
                    try:
                        parse_lose_reads(value)
                    except InvalidInput as exc:
                        return SetParametersResult(successful=False, reason=str(exc))
                emulator.faults.lose_reads = value
            elif name == "garble":
                if value:
                    try:
                        parse_garble(value)
                    except InvalidInput as exc:
                        return SetParametersResult(successful=False, reason=str(exc))
                emulator.faults.garble, emulator.faults.garble_armed = value, False
            elif name == "supply_voltage":
                emulator.set_supply(float(value))
            elif name == "power":
                (emulator.power_on if value else emulator.power_off)()
            elif name == "overload_ids":
                emulator.force_overload(int(i) for i in value if int(i) > 0)
            elif name == "other_arm":
                emulator.swap_arm(bool(value))
            elif name == "encoder_error_ids":
                emulator.force_encoder_error(int(i) for i in value if int(i) > 0)
            elif name == "adapter_hung":
                emulator.hang_adapter(bool(value))
            elif name == "cube_pos":
                try:
                    if len(value) != 2:
                        raise InvalidInput(f"cube_pos must be [x, y] [m], got {list(value)}")
                    self.emulator.put_cube(placed_cube_world("so101", list(value)))
                except InvalidInput as exc:
                    return SetParametersResult(successful=False, reason=str(exc))
                self.get_logger().info(f"cube put back at {list(value)} (base frame) [m]")
                continue
            elif name == "obstacle":
                try:
                    if len(value) == 4:
                        emulator.place_obstacle(list(value[:3]), float(value[3]))
                    else:
                        emulator.place_obstacle(None)
                except InvalidInput as exc:
                    return SetParametersResult(successful=False, reason=str(exc))
            else:
                continue
            shown = value if isinstance(value, (bool, int, float, str)) else list(value)
            self.get_logger().warning(f"fault injection: {name} = {shown}")
        return SetParametersResult(successful=True)

    def publish_witness(self) -> None:
        w = self.emulator.witness()
        msg = PoseStamped()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = "world"
        p, q = msg.pose.position, msg.pose.orientation
        p.x, p.y, p.z = (float(v) for v in w.cube_pos)
        q.w, q.x, q.y, q.z = (float(v) for v in w.cube_quat)
        self.pub_truth.publish(msg)
        if self.mocap:
            self.pub_mocap.publish(msg)
        record = {
            "stamp": msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9,
            "sim_time": w.time,
            "joints": list(JOINTS),
            "positions": w.positions.tolist(),
            "velocities": w.velocities.tolist(),
            "cube_pos": w.cube_pos.tolist(),
            "gripper_site": w.gripper_site.tolist(),
            "cube_in_jaws": w.cube_in_jaws,
            "jaw_normal": list(w.jaw_normal),
            "torque_enabled": list(w.torque_enabled),
            "powered": w.powered,
            "eprom_writes": w.eprom_writes,
            "acceleration": [servo.get("Acceleration") for servo in self.emulator.servos],
            "status": [servo.error for servo in self.emulator.servos],  # error byte per servo
            "torques": list(w.torques),  # [N·m] each joint's true actuator torque
            # the driver's bus loop as the servos see it: state reads so far (one a cycle)
            # and each servo's largest step between two goals received in a row [rad]
            "state_reads": self.emulator.stats.state_reads,
            "max_goal_step": list(self.emulator.stats.max_goal_step),
        }
        if w.soft is not None:
            record["soft"] = {
                "pos": w.soft.pos.tolist(),
                "strain": w.soft.strain,
                "in_jaws": w.soft.in_jaws,
                "jaw_force": list(w.soft.jaw_force),
            }
        self.pub_witness.publish(String(data=json.dumps(record)))

    def report_lag(self) -> None:
        """Warn when the emulator fell behind real time (a busy machine): its physics fell
        more than 100 ms behind, or replies the driver had stopped waiting for were dropped
        (the driver saw those requests time out and retried; a real bus answers in time)."""
        stats = self.emulator.stats
        now = (stats.late_replies_dropped, stats.late_steps)
        dropped, late = now[0] - self.behind[0], now[1] - self.behind[1]
        if dropped or late:
            self.get_logger().warning(
                f"fell behind real time in the last second: {dropped} late replies dropped, "
                f"physics > 100 ms behind {late} times (a busy machine; a real bus keeps time)"
            )
        self.behind = now

    def destroy_node(self) -> None:
        self.emulator.stop()
        if self.trace_file:
            write_trace(Path(self.trace_file), self.emulator)
        super().destroy_node()


def write_trace(path: Path, emulator: FeetechBusEmulator) -> None:
    """The emulator's trace as ``.npz``: ``times`` [s, time.monotonic()] and ``positions``
    [rad] (true angles, ``JOINTS`` order) of every physics step; each goal received:
    ``goal_times`` [s, time.monotonic()], ``goal_ids`` (servo id) and ``goal_angles`` [rad];
    at the end: ``eprom_writes`` (since power-up) and ``torque_enabled`` (per servo)."""
    trace, goals = emulator.trace or [], emulator.stats.goals
    witness = emulator.witness()
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez(
        tmp,
        times=np.array([t for t, _ in trace]),
        positions=np.array([q for _, q in trace]).reshape(-1, len(JOINTS)),
        goal_times=np.array([g.received for g in goals]),
        goal_ids=np.array([g.servo_id for g in goals], dtype=int),
        goal_angles=np.array([g.angle for g in goals]),
        eprom_writes=witness.eprom_writes,
        torque_enabled=np.array(witness.torque_enabled),
    )
    tmp.replace(path)  # whole or absent


def main(args: list[str] | None = None) -> None:
    run_node(So101Emulator, args)


if __name__ == "__main__":
    main()
