"""Recording over ROS as users run it: ``ros2 launch physai_ros pick.launch.py sim:=true
record:=DIR`` (the dataset recorder in the pick's graph, a simulated camera), pick goals from
``ros2 action send_goal``, the dataset read back by LeRobot.

Each frame is checked against a witness that is not the recorder: a rosbag2 bag of the same
topics written by this process's own subscriber (the package's bag recorder, as the trials
record). Every frame's action must be the controllers' reference last published at or before
the frame's time (to 1e-6 rad), and no observation may be stamped later than its frame. An
episode delimited by the recorder's own services follows the picks. Then ``physai convert`` of
that bag must give the same picks. The pure frame clock is
test_timeline.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from support.pick_action import GOAL_TIMEOUT
from support.processes import call_again_if_lost, ros2_output, set_param
from support.recordings import wait_for_episodes

from physai_ros.datasets.features import ARM_MOTORS, GRIPPER, from_lerobot
from physai_ros.datasets.from_ros import jaw_range
from physai_ros.datasets.timeline import NS

pytestmark = [pytest.mark.dds, pytest.mark.slow]

PHYSAI = str(Path(sys.executable).parent / "physai")
REPO = "physai/so101_pick_ros"
FPS = 30
PICK = "physai_ros_interfaces/action/Pick"
# five picks, the cube put back at a different x each time (the sim bridge's cube_x), the
# fourth placed instead of held
GOALS = (
    (0.2, "{object_frame: cube, time_limit: 60.0}"),
    (0.22, "{object_frame: cube, time_limit: 60.0}"),
    (0.21, "{object_frame: cube, time_limit: 60.0}"),
    (0.2, "{object_frame: cube, place: true, place_pose: {header: {frame_id: world}, "
     "pose: {position: {x: 0.19, y: 0.02, z: 0.015}}}}"),
    (0.22, "{object_frame: cube, time_limit: 60.0}"),
)  # fmt: skip
IMAGES = "/front_cam/image_raw"
WITNESSED = (
    "/joint_states",
    "/arm_controller/controller_state",
    "/gripper_controller/controller_state",
    IMAGES,
    "/pick/outcome",
)
WRITTEN = 180.0  # [s wall] the last episode encoded after its pick ended


def load(root: Path):
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    return LeRobotDataset(REPO, root=root)


def columns(dataset) -> dict[str, np.ndarray]:
    table = dataset.hf_dataset.with_format("numpy")
    keys = ("observation.state", "action", "episode_index", "timestamp", "next.success")
    return {key: np.asarray(table[key]) for key in keys}


def bag_messages(bag: Path) -> dict[str, tuple[np.ndarray, list]]:
    """topic → (header stamps [ns], messages in stamp order) of the witness bag."""
    from rosbags.highlevel import AnyReader

    out: dict[str, list] = {}
    with AnyReader([bag]) as reader:
        wanted = [c for c in reader.connections if c.topic != IMAGES]
        for connection, _, raw in reader.messages(connections=wanted):
            msg = reader.deserialize(raw, connection.msgtype)
            if hasattr(msg, "header"):
                t = msg.header.stamp.sec * NS + msg.header.stamp.nanosec
                out.setdefault(connection.topic, []).append((t, msg))
    return {
        topic: (np.array([t for t, _ in pairs]), [m for _, m in pairs])
        for topic, pairs in ((k, sorted(v, key=lambda p: p[0])) for k, v in out.items())
    }


@pytest.fixture
def witness_bag(ros_context, tmp_path):
    """The package's bag recorder in this process, subscribed before the graph starts."""
    from rclpy.executors import SingleThreadedExecutor

    from physai_ros.recording.bags import BagRecorder

    recorder = BagRecorder(ros_context, tmp_path / "witness", WITNESSED)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(recorder.node)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    yield recorder
    executor.shutdown()
    thread.join(timeout=10)


def test_five_launched_picks_are_a_dataset_aligned_to_the_controllers_reference(
    ros2, witness_bag, tmp_path
):
    root = tmp_path / "picks"
    # The recorder keeps its default max_gap (0.1 s): the sim bridge stamps controller_state in
    # its physics loop, every 20 ms of sim time, however busy the machine (from a timer, it went
    # silent for up to 133 ms on a busy two-core machine, and episodes were rightly dropped).
    launch = ros2(
        "launch", "physai_ros", "pick.launch.py", "sim:=true", "start_pick:=false",
        "cameras:=front_cam", f"record:={root}", log=tmp_path / "launch.log",
    )  # fmt: skip
    results = []
    for cube_x, goal in GOALS:
        set_param(ros2, "/sim_bridge", "cube_x", str(cube_x))
        call_again_if_lost(ros2, "/sim/reset", "std_srvs/srv/Trigger")
        out = ros2_output(ros2("action", "send_goal", "/pick", PICK, goal), timeout=GOAL_TIMEOUT)
        results.append(out.split("Goal finished with status:")[-1].strip())
    assert results == ["SUCCEEDED"] * len(GOALS), results
    # and an episode by hand: the recorder's services around a few seconds of the held arm
    service = "/dataset_recorder/start_episode", "std_srvs/srv/Trigger"
    ros2_output(ros2("service", "call", *service))
    time.sleep(3.0)
    service = "/dataset_recorder/end_episode", "std_srvs/srv/SetBool", "{data: true}"
    ros2_output(ros2("service", "call", *service))
    episodes = len(GOALS) + 1
    record = wait_for_episodes(root, episodes, WRITTEN)
    os.killpg(launch.pid, signal.SIGINT)  # Ctrl-C: the recorder finishes the dataset
    launch.wait(timeout=60)
    witness_bag.close()
    log = (tmp_path / "launch.log").read_text()
    assert not record["left_out"], record["left_out"]  # each with the recorder's reason
    assert f"dataset_recorder: {episodes} episodes in {root}" in log, log[-3000:]

    # LeRobot loads it: five held or placed picks and the one by hand, frame counts as
    # recorded, images decode
    dataset = load(root)
    assert dataset.num_episodes == episodes
    outcomes = [e["outcome"] for e in record["episodes"]]
    assert outcomes == ["held"] * 3 + ["placed", "held", "success"], outcomes
    # 3 s of wall time between the services: at least a third of a sim second even when a
    # loaded machine runs the sim at a third of real time (30 fps)
    assert record["episodes"][-1]["frames"] >= 10
    got = columns(dataset)
    lengths = np.bincount(got["episode_index"])
    assert lengths.tolist() == [e["frames"] for e in record["episodes"]]
    assert dataset[0]["observation.images.front_cam"].shape == (3, 240, 320)
    assert dataset[len(dataset) - 1]["observation.images.front_cam"].shape == (3, 240, 320)

    bag = bag_messages(tmp_path / "witness")
    jaw = jaw_range()
    worst = 0.0
    for e, entry in enumerate(record["episodes"]):
        mine = got["episode_index"] == e
        stamps = got["timestamp"][mine]
        assert np.allclose(np.diff(stamps), 1 / FPS, atol=1e-4) and stamps[0] == 0  # monotonic
        assert got["next.success"][mine][-1] and not got["next.success"][mine][:-1].any()
        times = entry["start_ns"] + np.arange(entry["frames"], dtype=np.int64) * NS // FPS
        for stream, chosen in entry["sources"].items():  # no observation later than its frame
            assert np.all(np.asarray(chosen) <= times), stream
        for topic, stream, names in (
            ("/arm_controller/controller_state", "arm_reference", list(ARM_MOTORS)),
            ("/gripper_controller/controller_state", "gripper_reference", [GRIPPER]),
        ):
            at, msgs = bag[topic]
            latest = np.searchsorted(at, times, side="right") - 1
            assert np.array_equal(at[latest], entry["sources"][stream]), (
                f"episode {e}: {stream} is not the last reference at or before each frame"
            )
            by_name = [
                dict(zip(msgs[i].joint_names, msgs[i].reference.positions, strict=True))
                for i in latest
            ]
            reference = np.array([[joints[n] for n in names] for joints in by_name])
            arm, grip = zip(*(from_lerobot(a, jaw) for a in got["action"][mine]), strict=True)
            recorded = np.array(arm) if stream == "arm_reference" else np.array(grip)[:, None]
            error = np.abs(recorded - reference).max()
            worst = max(worst, float(error))
            assert error <= 1e-6, f"episode {e}: {stream} off by {error:.2e} rad"
        at, msgs = bag["/joint_states"]
        latest = np.searchsorted(at, times, side="right") - 1
        assert np.array_equal(at[latest], entry["sources"]["joint_states"])
    print(f"actions against the controllers' reference: worst {worst:.1e} rad")

    # the witness bag converts to the same dataset
    converted = tmp_path / "converted"
    result = subprocess.run(
        [PHYSAI, "convert", str(tmp_path / "witness"), "--output", str(converted),
         "--image-topics", IMAGES],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"episodes = {len(GOALS)}" in result.stdout, result.stdout  # the picks only
    again = columns(load(converted))
    picks = got["episode_index"] < len(GOALS)
    for key, values in got.items():
        assert np.array_equal(again[key], values[picks]), key


def test_the_recorder_refuses_an_existing_folder_and_a_missing_output(ros2, tmp_path):
    existing = tmp_path / "taken"
    existing.mkdir()
    for params, says in (([f"output:={existing}"], "exists already"), ([], "set 'output'")):
        args = [a for p in params for a in ("-p", p)]
        proc = ros2("run", "physai_ros", "dataset_recorder", "--ros-args", *args)
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode != 0 and says in out, out
    assert not any(existing.iterdir())


def test_convert_refuses_what_cannot_make_a_dataset(tmp_path):
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_KILTED)
    bag = tmp_path / "no_reference"
    with Writer(bag, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        JointState = store.types["sensor_msgs/msg/JointState"]
        Header, Time = (
            store.types["std_msgs/msg/Header"],
            store.types["builtin_interfaces/msg/Time"],
        )
        connection = writer.add_connection("/joint_states", JointState.__msgtype__, typestore=store)
        msg = JointState(
            header=Header(stamp=Time(sec=1, nanosec=0), frame_id=""),
            name=["gripper"], position=np.zeros(1), velocity=np.zeros(0), effort=np.zeros(0),
        )  # fmt: skip
        writer.write(connection, NS, store.serialize_cdr(msg, JointState.__msgtype__))
    cases = (
        ([str(bag)], "has no ['/arm_controller/controller_state'"),
        ([str(tmp_path / "absent")], "not rosbag2 folders"),
        ([str(bag), "--fps", "0"], "--fps 0"),
    )
    for args, says in cases:
        result = subprocess.run(
            [PHYSAI, "convert", *args, "--output", str(tmp_path / "out")],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert result.returncode == 2 and says in result.stderr, result.stderr
        assert not (tmp_path / "out").exists()
