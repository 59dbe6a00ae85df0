"""Waiting for the dataset recorder of a launched graph, as a test reading its folder does."""

from __future__ import annotations

import json
import time
from pathlib import Path

from physai_ros.datasets.from_ros import SYNC_FILE


def wait_for_episodes(root: Path, count: int, timeout: float) -> dict:
    """The recorder's ``physai_sync.json`` once it lists ``count`` episodes, written or left
    out; fails after ``timeout`` seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        path = root / SYNC_FILE
        if path.is_file():
            record = json.loads(path.read_text())
            if len(record["episodes"]) + len(record["left_out"]) >= count:
                return record
        time.sleep(1.0)
    raise AssertionError(f"the recorder did not write {count} episodes in {timeout:g} s")
