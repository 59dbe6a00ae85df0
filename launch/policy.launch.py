"""A LeRobot policy, or a recorded episode, driving the SO-101 through its stream.

    ros2 launch physai_ros policy.launch.py policy:=outputs/act/checkpoints/last/pretrained_model
    ros2 launch physai_ros policy.launch.py policy:=replay dataset:=picks episode:=3 mode:=limited
    ros2 launch physai_ros policy.launch.py sim:=false port:=/dev/ttyACM0 policy:=... \\
        image_topics:=/front_cam/image_raw,/wrist_cam/image_raw

sim:=true (default) runs the simulated arm, rendering the cameras the policy reads at the size
it was trained on; sim:=false the real SO-101 driver (a lifecycle node, activated by the launch
unless autostart:=false). The policy runner streams one target per frame on
``arm_controller/stream``, where the arm controller follows it in ``mode`` inside its limits;
its inference timing, queue depth and dropped frames are on ``/diagnostics``.
The nodes come from ``physai_ros.launching.graph.policy_graph``, as for ``physai bringup policy``.
"""

from physai_ros.launching.graph import policy_graph
from physai_ros.launching.launch_support import (
    SO101_ARGUMENTS,
    as_bool,
    describe,
    optional_float,
)

ARGUMENTS = {
    **SO101_ARGUMENTS,
    "policy": ("", "a LeRobot pretrained_model folder, or replay (with dataset, episode)"),
    "dataset": ("", "replay: the LeRobot dataset folder"),
    "episode": ("0", "replay: the episode index"),
    "repo_id": ("local/so101_pick", "replay: the dataset's LeRobot repo id"),
    "mode": ("", "stream mode: staircase | linear | limited (empty = the controller's, linear)"),
    "fps": ("0.0", "frames per second [Hz]; 0 = the replayed dataset's, else 30"),
    "duration": ("0.0", "stop streaming after this long [s]; 0 = when the policy ends"),
    "device": ("cpu", "torch device: cpu | cuda | mps"),
    "image_topics": ("", "real arm: sensor_msgs/Image topics of the cameras the policy reads"),
}


def node_specs(values: dict[str, str]) -> list:
    """The policy graph for launch-argument ``values`` (strings, as launch passes them)."""
    return policy_graph(
        policy=values["policy"],
        dataset=values["dataset"],
        episode=int(values["episode"]),
        repo_id=values["repo_id"],
        mode=values["mode"],
        fps=float(values["fps"]),
        duration=float(values["duration"]),
        device=values["device"],
        sim=as_bool(values["sim"]),
        image_topics=values["image_topics"],
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
