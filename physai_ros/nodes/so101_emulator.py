"""SO-101 bus emulator node: six emulated STS3215 servos on a pty, plus motion capture.

Runs ``physai_ros.backends.feetech_emulator`` (MuJoCo physics in real time behind the servos'
serial protocol) and publishes the cube's true pose on ``/cube_pose`` (``PoseStamped``, frame
``world``), as a motion-capture system would next to a real arm. Fault parameters can be
changed at run time (``ros2 param set``): ``mute_ids`` (servos that stop answering),
``corrupt_every`` (bad checksum every n-th reply) and ``port_connected`` (false = pull the
cable: the pty closes; true = plug it back in: a new pty behind the same ``link``).
"""

from __future__ import annotations

import argparse

import rclpy
from geometry_msgs.msg import PoseStamped
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node

from physai_ros import interfaces
from physai_ros.backends.feetech_emulator import emulator_from_args, write_calibration


class So101Emulator(Node):
    def __init__(self) -> None:
        super().__init__("so101_emulator")

        def declare(name, default, description, read_only=True):
            desc = ParameterDescriptor(description=description, read_only=read_only)
            return self.declare_parameter(name, default, desc).value

        link = declare("link", "", "symlink kept pointing at the emulator's pty ('' = none)")
        cal = declare("calibration_out", "", "write the arm's LeRobot calibration JSON here")
        cube = declare("cube_pos", [0.22, 0.0], "cube centre in the base frame [m] (x, y)")
        baud = declare("baudrate", 1_000_000, "bus rate of the servos [bit/s]")
        torque = declare("power_on_torque", True, "servos hold the initial pose at power-up")
        rate = declare("cube_pose_rate", 50.0, "motion-capture rate of /cube_pose [Hz]")
        declare("mute_ids", [0], "servo ids that do not answer (0 = none)", read_only=False)
        declare("corrupt_every", 0, "bad checksum on every n-th reply (0 = never)", False)
        declare("port_connected", True, "false = cable pulled (pty closed)", False)
        args = argparse.Namespace(
            baudrate=baud,
            link=link or None,
            calibration_out=None,
            cube_pos=list(cube),
            uncalibrated=False,
            no_power_on_torque=not torque,
            mute_ids=[],
            corrupt_every=0,
        )
        self.emulator = emulator_from_args(args)
        if cal:
            from pathlib import Path

            write_calibration(Path(cal), self.emulator.calibration)
        port = self.emulator.start()
        self.add_on_set_parameters_callback(self.on_parameters)
        self.pub = self.create_publisher(PoseStamped, interfaces.CUBE_POSE, 10)
        self.create_timer(1.0 / rate, self.publish_cube)
        self.behind = (0, 0)  # (late replies dropped, physics lags) already reported
        self.create_timer(1.0, self.report_lag)
        self.get_logger().info(
            f"emulated SO-101 bus on {port}" + (f" (link {link})" if link else "")
        )

    def on_parameters(self, params) -> SetParametersResult:
        faults = self.emulator.faults
        for param in params:
            if param.name == "mute_ids":
                faults.mute_ids = {int(i) for i in param.value if int(i) > 0}
            elif param.name == "corrupt_every":
                if param.value < 0:
                    return SetParametersResult(successful=False, reason="corrupt_every >= 0")
                faults.corrupt_every = int(param.value)
            elif param.name == "port_connected":
                (self.emulator.open_port if param.value else self.emulator.close_port)()
            self.get_logger().warning(f"fault injection: {param.name} = {param.value}")
        return SetParametersResult(successful=True)

    def publish_cube(self) -> None:
        pos, quat = self.emulator.cube_pose()
        msg = PoseStamped()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = "world"
        p, q = msg.pose.position, msg.pose.orientation
        p.x, p.y, p.z = (float(v) for v in pos)
        q.w, q.x, q.y, q.z = (float(v) for v in quat)
        self.pub.publish(msg)

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
        super().destroy_node()


def main(args: list[str] | None = None) -> None:
    try:
        with rclpy.init(args=args):
            node = So101Emulator()
            try:
                rclpy.spin(node)
            finally:
                node.destroy_node()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass


if __name__ == "__main__":
    main()
