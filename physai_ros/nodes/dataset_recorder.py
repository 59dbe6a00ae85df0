"""Dataset recorder: a live graph's picks as a LeRobot dataset.

Subscribes to the joint states, the arm's and the jaw's ``controller_state`` (their
``reference`` is what the servos are commanded: the frames' ``action``) and any image topics,
keeps their samples on their header stamps, and makes one episode per pick: the pick's outcome
(``pick/outcome``) says when its goal was accepted and when it ended, and whether it held. An
episode can also be delimited by hand: ``~/start_episode`` (std_srvs/Trigger), then
``~/end_episode`` (std_srvs/SetBool, ``data`` = whether it succeeded).

Each frame takes every stream's latest sample at or before its time (``datasets.timeline``);
a stream silent for longer than ``max_gap`` drops the episode, with the reason in the log and
in ``physai_sync.json`` beside the dataset's ``meta/``. Episodes are written by LeRobot's own
API in a thread of their own, so the next pick is recorded while one is encoded. Ctrl-C
writes what has ended and finishes the dataset. ``~/status`` (latched JSON) says whether every
stream has been heard and what became of the last episode.

Works on any graph that serves these topics: the simulated pick (sim time) and the real SO-101
driver (wall time) with any camera driver's images.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from control_msgs.msg import JointTrajectoryControllerState
from physai_ros_interfaces.msg import PickOutcome
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import String
from std_srvs.srv import SetBool, Trigger

from physai_ros.core.pick.hand_machine import TERMINAL as HAND_TERMINAL
from physai_ros.core.pick.machine import TERMINAL
from physai_ros.datasets.features import TASK
from physai_ros.datasets.from_ros import (
    ACTION,
    ARM_REFERENCE,
    GRIPPER_REFERENCE,
    JOINT_STATES,
    DatasetSink,
    RosEpisode,
    Sources,
    Timeline,
    jaw_range,
    make_frames,
    pick_episode,
)
from physai_ros.datasets.lerobot_io import lerobot_version
from physai_ros.datasets.timeline import NS, Dropped
from physai_ros.errors import InvalidInput
from physai_ros.nodes._common import LATCHED, declare_schema, load_schema, run_node

SCHEMA = load_schema("dataset_recorder")  # config/schema/dataset_recorder.yaml
IDLE_KEEP = 1.0  # [s] of samples kept between picks (+ max_gap): a goal's start is in them
ENDED = TERMINAL | HAND_TERMINAL  # pick states after which nothing runs
# [messages] queued per stream while this process is busy (the writer thread encoding the last
# episode holds the interpreter now and then): a queue that overflows loses its oldest samples,
# and a hole longer than max_gap drops the episode being recorded. 3 s of a 30 Hz camera, 2 s of
# 500 Hz states; memory is taken only while a backlog lasts.
IMAGE_QUEUE = 90
STATE_QUEUE = 1000


class DatasetRecorder(Node):
    def __init__(self) -> None:
        super().__init__("dataset_recorder")
        p = declare_schema(self, SCHEMA, {"task": TASK})
        if not p["output"]:
            raise SystemExit("dataset_recorder: set 'output', the dataset folder to write")
        images = tuple(t.strip() for t in p["image_topics"].split(",") if t.strip())
        try:
            lerobot_version()
            self.sources = Sources(
                p["joint_states_topic"],
                p["arm_state_topic"],
                p["gripper_state_topic"],
                images,
                action=p["action_topic"],
            )
            cameras = self.sources.cameras
            self.sink = DatasetSink(
                Path(p["output"]).expanduser().resolve(),
                p["repo_id"],
                p["fps"],
                cameras,
                p["task"],
                p["vcodec"],
                p["keep_failures"],
                settings={
                    **{k: p[k] for k in ("fps", "max_gap", "task")},
                    "topics": self.sources.streams(),
                },
            )
        except InvalidInput as exc:
            raise SystemExit(f"dataset_recorder: {exc}") from exc
        self.fps, self.max_gap = p["fps"], round(p["max_gap"] * NS)
        self.max_duration, self.settle = round(p["max_duration"] * NS), p["settle"]
        self.jaw = jaw_range()
        self.timeline = Timeline(self.sources)
        self.running = False  # a pick runs (its samples are kept)
        self.manual: int | None = None  # [ns] start of an episode begun by the service
        self.pending: list[tuple[RosEpisode, float]] = []  # ended, waiting for late samples
        self.writer = ThreadPoolExecutor(1, thread_name_prefix="dataset_writer")
        self.lock = threading.Lock()  # the sink: the writer thread and shutdown

        kinds = {JOINT_STATES: JointState, ARM_REFERENCE: JointTrajectoryControllerState,
                 GRIPPER_REFERENCE: JointTrajectoryControllerState, ACTION: JointState}  # fmt: skip
        for stream, topic in self.sources.streams().items():
            kind = kinds.get(stream, Image)
            # reliable, unlike the nodes' state streams: a recorder wants every sample (a lost
            # one would make a frame take an older one; the gap check only catches long holes)
            qos = QoSProfile(
                depth=IMAGE_QUEUE if kind is Image else STATE_QUEUE,
                reliability=ReliabilityPolicy.RELIABLE,
            )
            self.create_subscription(kind, topic, lambda msg, s=stream: self._sample(s, msg), qos)
        self.create_subscription(PickOutcome, p["outcome_topic"], self._outcome, LATCHED)
        self.create_subscription(String, p["state_topic"], self._state, LATCHED)
        self.pub_status = self.create_publisher(String, "~/status", LATCHED)
        self.ready = False  # every stream has sent a sample
        self.create_service(Trigger, "~/start_episode", self._start_episode)
        self.create_service(SetBool, "~/end_episode", self._end_episode)
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(0.05, self._tick, clock=steady)
        self.get_logger().info(
            f"recording {list(self.sources.streams().values())} at {self.fps} fps into "
            f"{self.sink.root}; an episode per pick outcome on '{p['outcome_topic']}' or per "
            "~/start_episode … ~/end_episode"
        )

    # --- samples -----------------------------------------------------------------------------
    def _sample(self, stream: str, msg) -> None:
        self.timeline.add(stream, msg)

    def _state(self, msg: String) -> None:
        """A pick runs: keep its samples until its outcome comes (an ended state alone does
        not release them: the outcome, which says when the pick began, follows it)."""
        if msg.data not in ENDED:
            self.running = True

    def _forget(self) -> None:
        """Keep what an episode may still need: everything of a running or pending one (up to
        ``max_duration``), else the last ``IDLE_KEEP`` plus ``max_gap``."""
        busy = self.running or self.manual is not None or self.pending
        keep = self.max_duration if busy else round(IDLE_KEEP * NS) + self.max_gap
        for samples in self.timeline.streams.values():
            if samples.newest is not None:
                samples.forget_before(samples.newest - keep)

    # --- episodes ----------------------------------------------------------------------------
    def _outcome(self, msg: PickOutcome) -> None:
        episode = pick_episode(msg)
        if episode is None:  # a refused goal: the pick that runs, if any, goes on
            return
        self.running = False
        if not self.timeline.heard_all_by(episode.start):
            self.get_logger().info(
                f"not recorded: a pick ({episode.outcome}) that began at "
                f"{episode.start / NS:.3f} s, before the recorder had heard every stream"
            )
            return
        self._ended(episode)

    def _start_episode(self, _request, response):
        if self.manual is not None:
            response.success, response.message = False, "an episode is being recorded already"
            return response
        self.manual = self.get_clock().now().nanoseconds
        response.success, response.message = True, f"episode started at {self.manual / NS:.3f} s"
        self.get_logger().info(response.message)
        return response

    def _end_episode(self, request, response):
        if self.manual is None:
            response.success, response.message = False, "no episode is being recorded"
            return response
        end = self.get_clock().now().nanoseconds
        outcome = "success" if request.data else "failure"
        self._ended(RosEpisode(self.manual, end, bool(request.data), outcome))
        self.manual = None
        response.success, response.message = True, f"episode ended at {end / NS:.3f} s"
        return response

    def _ended(self, episode: RosEpisode) -> None:
        self.pending.append((episode, time.monotonic()))

    def _tick(self) -> None:
        """Hand each ended episode to the writer once every stream has reached its end (or
        ``settle`` has passed: the gap check then judges what came)."""
        waiting = []
        for episode, since in self.pending:
            if self.timeline.passed(episode.end) or time.monotonic() - since > self.settle:
                self._submit(episode)
            else:
                waiting.append((episode, since))
        self.pending = waiting
        self._forget()
        if not self.ready and len(self.timeline.first) == len(self.timeline.streams):
            self.ready = True
            self._publish_status()

    def _publish_status(self, last: str = "") -> None:
        """``~/status`` (latched JSON): whether every stream has sent a sample (a pick that
        begins later can be recorded), how many episodes were written and left out, the last."""
        with self.lock:
            record = self.sink.record
            status = {
                "ready": self.ready,
                "written": len(record["episodes"]),
                "episodes": len(record["episodes"]) + len(record["left_out"]),
                "last": last,
            }
        self.pub_status.publish(String(data=json.dumps(status)))

    def _submit(self, episode: RosEpisode) -> None:
        """Resample and write ``episode`` in the writer thread (its errors logged there)."""
        self.writer.submit(self._write, episode, self.timeline.snapshot())

    def _write(self, episode: RosEpisode, timeline: Timeline) -> None:
        log = self.get_logger()
        try:
            try:
                make_frames(timeline, episode, self.fps, self.max_gap, self.jaw)
            except Dropped as exc:
                episode.reason = f"dropped: {exc}"
            with self.lock:
                said = self.sink.add(episode)
            log.info(said)
            self._publish_status(said)
        except Exception as exc:  # in a thread: nobody else would see it
            log.error(f"could not write the episode: {exc!r}")
            raise

    def close(self) -> None:
        """Write what has ended, then finish the dataset. Ctrl-C and SIGTERM are held off
        meanwhile: a launch passes the user's Ctrl-C on as a second SIGINT, then escalates, and
        either would leave the dataset unfinished (only SIGKILL still stops it)."""
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for episode, _ in self.pending:
            self._submit(episode)
        self.pending = []
        self.writer.shutdown(wait=True)
        with self.lock:
            count = self.sink.close()
        print(f"dataset_recorder: {count} episodes in {self.sink.root}", flush=True)


def main(args=None) -> None:
    run_node(DatasetRecorder, args, cleanup=lambda node: node.close())


if __name__ == "__main__":
    main()
