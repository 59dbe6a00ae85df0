"""``physai record --ray``: episodes recorded as Ray tasks, each writing a shard, merged with
LeRobot's own aggregation into one dataset.

The draws are cut into fixed blocks of ``BLOCK`` consecutive episodes, whatever the number of
workers: a task records one block into its own shard (a LeRobot dataset), with one MuJoCo and
one renderer in the worker process. The driver keeps every worker busy with the next blocks in
order, and stops once the blocks it has, in draw order, hold the episodes asked for; the last
block is recorded again with a cap if it holds more (the physics is deterministic: the same
episodes, cut short). The shards are merged in block order by ``aggregate_datasets``, so the
dataset is the serial recording's: the same episodes, in the same order, for one worker or
fifty.

On several machines the shards must land on a folder every worker sees (``--shards``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from physai_ros.errors import InvalidInput

BLOCK = 4  # episodes per task: small enough to share out, large enough to amortise a task


def record_block(settings: dict, shard: str, block: int, limit: int | None) -> list[dict]:
    """Record draws ``block * BLOCK`` … into a new dataset at ``shard``; at most ``limit``
    episodes written (None: the whole block). Returns each draw's entry (``written`` says
    whether it went into the shard). Runs in a Ray worker, or anywhere."""
    from physai_ros.core.pick.machine import load_pick_config
    from physai_ros.datasets import lerobot_io
    from physai_ros.datasets.episodes import (
        camera_factory,
        episode_entry,
        randomisation_of,
        write_episode,
    )
    from physai_ros.datasets.features import ROBOT_TYPE, dataset_features
    from physai_ros.datasets.randomise import draw
    from physai_ros.datasets.scripted import record_episode

    path = Path(shard)
    if path.exists():
        shutil.rmtree(path)  # a task run again (a lost worker, or the capped last block)
    features = dataset_features(
        settings["cameras"], settings["height"], settings["width"], settings["videos"]
    )
    dataset = lerobot_io.create_dataset(  # LeRobot (torch) before OpenGL: see lerobot_io
        path, "physai/shard", settings["fps"], features, ROBOT_TYPE, settings["vcodec"]
    )
    cfg, randomisation = load_pick_config(), randomisation_of(settings)
    cameras = camera_factory(settings)
    entries, written = [], 0
    try:
        for index in range(block * BLOCK, (block + 1) * BLOCK):
            if limit is not None and written >= limit:
                break
            episode, _ = record_episode(
                draw(randomisation, settings["seed"], index), cfg, settings["fps"], cameras
            )
            keep = episode.success or settings["keep_failures"]
            if keep:
                write_episode(dataset, episode.frames, episode.success)
                written += 1
            entries.append({"draw": index, "written": keep, **episode_entry(episode)})
    finally:
        dataset.finalize()
    return entries


def record_on_ray(
    address: str | None, workers: int | None, settings: dict, root: Path, repo_id: str,
    episodes: int, max_attempts: int, shards: Path, progress,
) -> dict:  # fmt: skip
    """Record ``episodes`` into a new dataset at ``root`` on the Ray cluster at ``address``
    (None: a local one with ``workers`` CPUs); returns the record (``physai_record.json``)."""
    try:
        import ray
    except ImportError:
        raise InvalidInput("--ray needs Ray: 'pip install ray' (the full set-up has it)") from None
    from physai_ros.datasets import lerobot_io

    ray.init(address=address, num_cpus=None if address else workers, log_to_driver=False)
    try:
        task = ray.remote(num_cpus=1)(record_block)
        slots = int(ray.cluster_resources().get("CPU", 1))
        blocks_max = -(-max_attempts // BLOCK)
        done: dict[int, list[dict]] = {}
        running: dict = {}
        next_block = 0

        def enough() -> int | None:
            """The last block needed, once the finished blocks in order hold the episodes."""
            total = 0
            for block in range(next_block):
                if block not in done:
                    return None
                total += sum(e["written"] for e in done[block])
                if total >= episodes:
                    return block
            return None

        last = None
        while last is None:
            while len(running) < slots and next_block < blocks_max and enough() is None:
                ref = task.remote(settings, str(shards / f"{next_block:05d}"), next_block, None)
                running[ref] = next_block
                next_block += 1
            if not running:
                break
            ready, _ = ray.wait(list(running), num_returns=1)
            block = running.pop(ready[0])
            done[block] = ray.get(ready[0])
            progress(sum(sum(e["written"] for e in done[b]) for b in done))
            last = enough()
        for ref in running:
            ray.cancel(ref, force=True)
        if last is None:  # the attempts ran out: every finished block in order
            last = max((b for b in range(next_block) if b in done), default=-1)
        used = sum(sum(e["written"] for e in done[b]) for b in range(last))
        if last >= 0 and used + sum(e["written"] for e in done[last]) > episodes:
            cap = episodes - used  # the last block holds more than needed: record it capped
            done[last] = ray.get(task.remote(settings, str(shards / f"{last:05d}"), last, cap))
    finally:
        ray.shutdown()

    state = {"settings": settings, "attempts": 0, "episodes": [], "failures": []}
    parts = []
    for block in range(last + 1):
        shard = shards / f"{block:05d}"
        if any(e["written"] for e in done[block]):
            parts.append(shard)
        for entry in done[block]:
            written = entry.pop("written")
            if written:
                state["episodes"].append({"episode_index": len(state["episodes"]), **entry})
            else:
                state["failures"].append(entry)
            state["attempts"] += 1
    if not parts:
        raise InvalidInput("no episode was recorded: every pick failed (see --keep-failures)")
    lerobot_io.merge_datasets(parts, root, repo_id)
    shutil.rmtree(shards, ignore_errors=True)
    return state
