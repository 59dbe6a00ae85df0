"""Frames from timestamped messages: each topic's samples on their header stamps, resampled to
the dataset's frame clock.

Why here and pure: the live recorder (``nodes/dataset_recorder``) and the bag converter
(``physai convert``) must pair the same action with the same observation, so both hand their
samples to this one function. A frame at time ``t`` takes, from every stream, the latest sample
stamped at or before ``t`` -- never a later one, which is the common way a dataset pairs an
action with an observation it caused. A stream whose latest sample is older than ``max_gap``
at some frame drops the episode with that reason instead of repeating stale data.

Times are integer nanoseconds (a header stamp's ``sec * 1e9 + nanosec``), so a frame clock that
starts on a stamp lands on stamps exactly.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

NS = 1_000_000_000  # nanoseconds per second


def time_ns(stamp) -> int:
    """``builtin_interfaces/Time`` (``sec``, ``nanosec``) as integer nanoseconds."""
    return int(stamp.sec) * NS + int(stamp.nanosec)


class Dropped(Exception):
    """An episode that cannot make a dataset episode; the message says why."""


@dataclass
class Samples:
    """One stream's samples in stamp order (a late message is put in its place)."""

    name: str
    stamps: list[int] = field(default_factory=list)
    values: list[Any] = field(default_factory=list)

    def add(self, stamp: int, value: Any) -> None:
        i = bisect.bisect_right(self.stamps, stamp)
        self.stamps.insert(i, stamp)
        self.values.insert(i, value)

    @property
    def newest(self) -> int | None:
        return self.stamps[-1] if self.stamps else None

    def forget_before(self, stamp: int) -> None:
        """Drop the samples no frame at or after ``stamp`` can take: all older than the latest
        one at or before ``stamp``."""
        keep_from = max(bisect.bisect_right(self.stamps, stamp) - 1, 0)
        del self.stamps[:keep_from], self.values[:keep_from]


def frame_times(start: int, end: int, fps: int) -> np.ndarray:
    """The frame clock [ns]: ``start`` and every ``1/fps`` after it, up to ``end``."""
    if end < start:
        raise Dropped(f"the episode ends before it starts ({(end - start) / NS:.3f} s)")
    count = (end - start) * fps // NS + 1
    return start + (np.arange(count, dtype=np.int64) * NS) // fps


@dataclass(frozen=True)
class Resampled:
    """Per frame: its time [ns], and for every stream the index and stamp of its sample."""

    times: np.ndarray
    index: dict[str, np.ndarray]
    stamps: dict[str, np.ndarray]


def resample(
    streams: Mapping[str, Samples], start: int, end: int, fps: int, max_gap: int
) -> Resampled:
    """Frames at ``fps`` over ``[start, end]`` [ns]: each takes every stream's latest sample at
    or before its time. ``Dropped`` when a stream has no sample at or before a frame, or its
    latest is more than ``max_gap`` [ns] older."""
    times = frame_times(start, end, fps)
    index, stamps = {}, {}
    for name, samples in streams.items():
        at = np.asarray(samples.stamps, dtype=np.int64)
        i = np.searchsorted(at, times, side="right") - 1
        if len(at) == 0 or i[0] < 0:
            raise Dropped(f"{name}: no sample at or before the first frame")
        age = times - at[i]
        worst = int(np.argmax(age))
        if age[worst] > max_gap:
            raise Dropped(
                f"{name}: {age[worst] / 1e6:.0f} ms without a sample before frame {worst} "
                f"(limit {max_gap / 1e6:.0f} ms)"
            )
        index[name], stamps[name] = i, at[i]
    return Resampled(times, index, stamps)
