"""A leader SO-101 driving the follower through its arm controller's stream.

    ros2 launch physai_ros teleop.launch.py sim:=false port:=/dev/ttyACM0 leader_port:=/dev/ttyACM1
    ros2 launch physai_ros teleop.launch.py leader_port:=/dev/ttyACM1    # the simulated follower
    ros2 launch physai_ros teleop.launch.py sim:=false port:=/dev/ttyACM0 \\
        leader_port:=/dev/ttyACM1 record:=demos image_topics:=/front_cam/image_raw

The leader is read through LeRobot's own leader class, never written to (its calibration is
LeRobot's ``<leader_id>.json``; a leader whose servos hold another is refused). Each read is
streamed, arm and jaw, on ``arm_controller/stream``, where the follower's controller follows it
in ``mode`` inside its limits; the follower blends in from where it is first. record:=DIR
writes an episode per ``/dataset_recorder/start_episode`` … ``end_episode`` with the leader's
pose as the action, as LeRobot records teleoperation. sim:=false runs the real follower's driver
(a lifecycle node, activated by the launch unless autostart:=false). The nodes come from
``physai_ros.launching.graph.teleop_graph``, as for ``physai bringup teleop``.
"""

from physai_ros.launching.graph import teleop_graph
from physai_ros.launching.launch_support import (
    SO101_ARGUMENTS,
    as_bool,
    describe,
    optional_float,
)

ARGUMENTS = {
    **SO101_ARGUMENTS,
    "leader_port": ("/dev/ttyACM1", "serial port of the leader arm's own bus adapter"),
    "leader_id": ("leader", "the leader's LeRobot id (its calibration file's name)"),
    "leader_calibration_file": ("", "the leader's LeRobot calibration JSON; empty = LeRobot's"),
    "mode": ("", "stream mode: staircase | linear | limited (empty = the controller's, linear)"),
    "fps": ("60.0", "leader reads and streamed targets per second [Hz]"),
    "record": ("", "a new folder: record teleoperated episodes there as a LeRobot dataset"),
    "cameras": ("", "sim: the simulated cameras recorded (front_cam,wrist_cam)"),
    "image_topics": ("", "real arm: sensor_msgs/Image topics recorded"),
}


def node_specs(values: dict[str, str]) -> list:
    """The teleoperation graph for launch-argument ``values`` (strings, as launch passes them)."""
    return teleop_graph(
        leader_port=values["leader_port"],
        leader_id=values["leader_id"],
        leader_calibration_file=values["leader_calibration_file"],
        mode=values["mode"],
        fps=float(values["fps"]),
        record=values["record"],
        cameras=values["cameras"],
        image_topics=values["image_topics"],
        sim=as_bool(values["sim"]),
        cube_x=optional_float(values["cube_x"]),
        cube_y=optional_float(values["cube_y"]),
        real_time_factor=float(values["real_time_factor"]),
        port=values["port"],
        calibration_file=values["calibration_file"],
        autostart=as_bool(values["autostart"]),
        limits_set=values["limits_set"],
        discovery=values["discovery"],
    )


def generate_launch_description():
    return describe(ARGUMENTS, node_specs, rviz=lambda values: as_bool(values["rviz"]))
