"""``sensor_msgs/PointCloud2`` → (N, 3) points, as a pure function of the message's fields.

Why pure: the planner's core must not import rclpy, and the byte layout (``point_step``,
``row_step``, field offsets, endianness) is where clouds go wrong, so it is tested here on bytes
built by hand. ``points_from_msg`` is the thin adapter for a real message object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from physai_ros.errors import InvalidInput

FLOAT32 = 7  # sensor_msgs/PointField.FLOAT32
FLOAT64 = 8  # sensor_msgs/PointField.FLOAT64
_DTYPES = {FLOAT32: "f4", FLOAT64: "f8"}


def points_from_cloud2(
    data: bytes,
    fields: Mapping[str, tuple[int, int]],
    point_step: int,
    width: int,
    height: int = 1,
    row_step: int | None = None,
    is_bigendian: bool = False,
) -> np.ndarray:
    """Finite (x, y, z) points [m] of a PointCloud2's raw buffer.

    fields: name → (byte offset, PointField datatype); x, y and z must be FLOAT32 or FLOAT64.
    point_step, row_step: bytes per point and per row (row_step defaults to
    ``point_step * width``). Points with a NaN or infinite coordinate (no return) are dropped,
    as organised clouds mark them.
    """
    missing = [a for a in "xyz" if a not in fields]
    if missing:
        raise InvalidInput(f"PointCloud2 lacks field(s) {missing}; fields: {sorted(fields)}")
    row_step = point_step * width if row_step is None else row_step
    if point_step <= 0 or width < 0 or height < 0 or row_step < point_step * width:
        raise InvalidInput(
            f"inconsistent PointCloud2 layout: point_step {point_step}, width {width}, "
            f"row_step {row_step}"
        )
    if len(data) < row_step * height:
        raise InvalidInput(f"PointCloud2 data has {len(data)} bytes, needs {row_step * height}")
    order = ">" if is_bigendian else "<"
    columns = []
    for axis in "xyz":
        offset, datatype = fields[axis]
        if datatype not in _DTYPES:
            raise InvalidInput(f"field {axis!r} has datatype {datatype}; need FLOAT32 or FLOAT64")
        size = np.dtype(_DTYPES[datatype]).itemsize
        if offset < 0 or offset + size > point_step:
            raise InvalidInput(f"field {axis!r} at offset {offset} exceeds point_step {point_step}")
        dtype = np.dtype(
            {
                "names": [axis],
                "formats": [order + _DTYPES[datatype]],
                "offsets": [offset],
                "itemsize": point_step,
            }
        )
        rows = [
            np.frombuffer(data, dtype, width, r * row_step)[axis].astype(float)
            for r in range(height)
        ]
        columns.append(np.concatenate(rows) if rows else np.zeros(0))
    points = np.column_stack(columns) if columns[0].size else np.zeros((0, 3))
    return points[np.all(np.isfinite(points), axis=1)]


def points_from_msg(msg: Any) -> np.ndarray:
    """Adapter for a ``sensor_msgs.msg.PointCloud2`` object (no rclpy needed, only its fields)."""
    fields = {f.name: (int(f.offset), int(f.datatype)) for f in msg.fields}
    return points_from_cloud2(
        bytes(msg.data),
        fields,
        int(msg.point_step),
        int(msg.width),
        int(msg.height),
        int(msg.row_step),
        bool(msg.is_bigendian),
    )
