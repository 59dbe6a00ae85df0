"""``physai convert``: rosbag2 bags (MCAP) of picks into a LeRobot dataset.

The same episodes the live dataset recorder would have written from the same messages: each
``/pick/outcome`` in a bag is an episode from its goal's acceptance to its end, resampled on
the header stamps by ``datasets.timeline`` and written by ``datasets.from_ros``. A bag needs the
joint states, both controllers' ``controller_state`` (the action) and the outcome; a bag
without a commanded reference is refused rather than converted with a guessed action. Bags are
read with ``rosbags``, which takes each message's definition from the bag itself.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from physai_ros.datasets.features import TASK
from physai_ros.errors import InvalidInput


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("bags", type=Path, nargs="+", help="rosbag2 folders (MCAP), in order")
    parser.add_argument(
        "--output", type=Path, required=True, help="folder of the new dataset (must not exist)"
    )
    parser.add_argument("--repo-id", default="physai/so101_pick_ros", help="its LeRobot id")
    parser.add_argument("--fps", type=int, default=30, help="frames per second [Hz] (30)")
    parser.add_argument(
        "--image-topics", default="", help="sensor_msgs/Image topics to take, comma-separated"
    )
    parser.add_argument(
        "--max-gap",
        type=float,
        default=0.1,
        help="a stream silent longer than this before a frame drops the episode [s] (0.1)",
    )
    parser.add_argument("--outcome-topic", default="/pick/outcome", help="PickOutcome topic")
    parser.add_argument("--task", default=TASK, help=f"the episodes' task string ({TASK!r})")
    parser.add_argument("--keep-failures", action="store_true", help="write failed picks too")
    parser.add_argument("--vcodec", default="h264", help="h264 | libsvtav1 (h264)")


def run(args: argparse.Namespace) -> int:
    from rosbags.highlevel import AnyReader

    from physai_ros.datasets.from_ros import (
        DatasetSink,
        Sources,
        Timeline,
        jaw_range,
        make_frames,
        pick_episode,
    )
    from physai_ros.datasets.timeline import NS, Dropped

    if not 1 <= args.fps <= 120:
        raise InvalidInput(f"--fps {args.fps}: choose 1 to 120")
    if not 0 < args.max_gap <= 10:
        raise InvalidInput(f"--max-gap {args.max_gap}: choose (0, 10] s")
    missing = [str(b) for b in args.bags if not (b / "metadata.yaml").is_file()]
    if missing:
        raise InvalidInput(f"not rosbag2 folders (no metadata.yaml): {missing}")
    images = tuple(t.strip() for t in args.image_topics.split(",") if t.strip())
    sources = Sources(images=images)
    sink = DatasetSink(
        args.output, args.repo_id, args.fps, sources.cameras, args.task, args.vcodec,
        args.keep_failures,
        settings={"fps": args.fps, "max_gap": args.max_gap, "task": args.task,
                  "topics": sources.streams(), "bags": [str(b) for b in args.bags]},
    )  # fmt: skip
    jaw, max_gap = jaw_range(), round(args.max_gap * NS)
    for bag in args.bags:
        timeline = Timeline(sources)
        stream_of = {topic: name for name, topic in timeline.topics.items()}
        outcomes = []
        with AnyReader([bag]) as reader:
            have = {c.topic for c in reader.connections}
            absent = sorted(set(stream_of) - have) + sorted({args.outcome_topic} - have)
            if absent:
                raise InvalidInput(f"{bag} has no {absent}: it cannot make a dataset episode")
            wanted = [c for c in reader.connections if c.topic in (*stream_of, args.outcome_topic)]
            for connection, _, raw in reader.messages(connections=wanted):
                msg = reader.deserialize(raw, connection.msgtype)
                if connection.topic == args.outcome_topic:
                    outcomes.append(msg)
                else:
                    timeline.add(stream_of[connection.topic], msg)
        for outcome in outcomes:
            episode = pick_episode(outcome)
            if episode is None:
                continue  # a goal refused before anything moved
            if not timeline.heard_all_by(episode.start):
                print(f"{bag.name}: not converted: a pick ({episode.outcome}) that began "
                      "before every stream was in the bag", flush=True)  # fmt: skip
                continue
            try:
                make_frames(timeline, episode, args.fps, max_gap, jaw)
            except Dropped as exc:
                episode.reason = f"dropped: {exc}"
            print(f"{bag.name}: {sink.add(episode)}", flush=True)
    count = sink.close()
    print(f"episodes = {count}")
    return 0
