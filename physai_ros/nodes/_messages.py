"""Message helpers the nodes share (not a node itself): stamps from seconds, pre-serialised
messages patched in place for the high-rate streams, and the RViz contact markers.

Kept out of the node modules so that each node stays a thin shell over its backend, and so that
the byte-patching trick is written (and reviewed) once.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping

import numpy as np
from builtin_interfaces.msg import Duration, Time
from geometry_msgs.msg import Point
from rclpy.serialization import serialize_message
from visualization_msgs.msg import Marker, MarkerArray

from physai_ros.core.pick.contact import ContactPoint, friction_cone_mesh
from physai_ros.errors import PhysaiError


def seconds(d) -> float:
    """A ``builtin_interfaces`` Time or Duration as seconds [s]."""
    return d.sec + d.nanosec * 1e-9


def stamp_fields(t: float) -> tuple[int, int]:
    """Sim time [s] as (sec, nanosec), rounded to the nanosecond."""
    return divmod(round(t * 1e9), 1_000_000_000)


def stamp(t: float) -> Time:
    sec, nanosec = stamp_fields(t)
    return Time(sec=sec, nanosec=nanosec)


def duration_msg(t: float) -> Duration:
    """A duration [s] as ``builtin_interfaces/Duration`` (a trajectory point's time)."""
    sec, nanosec = stamp_fields(t)
    return Duration(sec=sec, nanosec=nanosec)


def measured_at(header_stamp, received: float) -> float:
    """When a message's measurement was taken [s]: its header stamp, not when a busy node got
    round to it (a backlog of old poses would otherwise look fresh), never later than its
    receipt; an unstamped message (stamp 0) counts from its receipt."""
    taken = seconds(header_stamp)
    return min(taken, received) if taken > 0.0 else received


class PatchedMessage:
    """A message whose serialised layout never changes (same names, same array lengths), sent
    by overwriting its numbers in the CDR bytes: about 4x cheaper than rclpy converting the
    message object on every publish, which dominates the bridge's loop at its rates.

    ``slots`` maps a field to how many float64 values it holds in one contiguous run
    ("position": 6 of a JointState; "pose": 7 of a PoseStamped = position then orientation;
    "wrench": 6 = force then torque); ``self.slots[name]`` is a writable view into the bytes.
    The offsets are found by serialising once with sentinel numbers, so no layout is assumed.
    """

    SEC, NSEC = 0x5EC0DE01, 0x2BADF00D  # stamp sentinels (valid int32 / uint32)

    def __init__(self, publisher, template, slots: dict[str, int], frame_id: str = "") -> None:
        stamp_parent = template.header.stamp if hasattr(template, "header") else template.clock
        stamp_parent.sec, stamp_parent.nanosec = self.SEC, self.NSEC
        if frame_id:
            template.header.frame_id = frame_id
        sentinel = iter(range(1, 1000))
        patterns = {}
        for name, count in slots.items():
            values = [1e300 / (next(sentinel) * 7.0) for _ in range(count)]
            _fill(template, name, values)
            patterns[name] = np.array(values, dtype="<f8").tobytes()
        self.buffer = bytearray(serialize_message(template))
        if self.buffer[1] != 1:
            raise PhysaiError("expected little-endian CDR from the rmw")
        self.stamp_at = bytes(self.buffer).index(struct.pack("<iI", self.SEC, self.NSEC))
        self.slots = {
            name: np.frombuffer(
                self.buffer, dtype="<f8", count=slots[name], offset=bytes(self.buffer).index(pat)
            )
            for name, pat in patterns.items()
        }
        for view in self.slots.values():
            view[:] = 0.0
        self.publisher = publisher

    def stamped(self, t: float) -> bytes:
        """The serialised message with stamp ``t`` [s], as ``publisher.publish`` takes it (a
        copy, so the slots can be overwritten for the next message before this one is sent)."""
        struct.pack_into("<iI", self.buffer, self.stamp_at, *stamp_fields(t))
        return bytes(self.buffer)


def _fill(msg, name: str, values: list[float]) -> None:
    """Put ``values`` into field ``name`` of a JointState / PoseStamped / WrenchStamped."""
    if name == "pose":
        p, o = msg.pose.position, msg.pose.orientation
        p.x, p.y, p.z, o.x, o.y, o.z, o.w = values
    elif name == "wrench":
        f, t = msg.wrench.force, msg.wrench.torque
        f.x, f.y, f.z, t.x, t.y, t.z = values
    else:
        setattr(msg, name, values)


def contact_markers(
    contacts: Iterable[ContactPoint], cfg: Mapping, header_stamp: Time
) -> MarkerArray:
    """RViz markers of jaw contacts in ``world``: a force arrow (``force_scale`` [m/N]) and a
    friction cone (``cone_height`` [m], ``cone_segments``) per contact, after a DELETEALL so
    contacts that ended disappear. ``cfg`` holds the sim bridge's ``markers.*`` parameters."""
    markers = [Marker(action=Marker.DELETEALL)]
    markers[0].header.frame_id = "world"
    for i, c in enumerate(contacts):
        arrow = Marker(type=Marker.ARROW, ns="force", id=i, action=Marker.ADD)
        arrow.points = [
            Point(x=a, y=b, z=z)
            for a, b, z in (c.position, c.position + cfg["force_scale"] * c.force)
        ]
        arrow.scale.x, arrow.scale.y, arrow.scale.z = 0.002, 0.004, 0.004
        arrow.color.r, arrow.color.a = 1.0, 1.0
        cone = Marker(type=Marker.TRIANGLE_LIST, ns="friction_cone", id=i, action=Marker.ADD)
        mesh = friction_cone_mesh(
            c.position, c.normal, c.mu, cfg["cone_height"], int(cfg["cone_segments"])
        )
        cone.points = [Point(x=a, y=b, z=z) for a, b, z in mesh.tolist()]
        cone.scale.x = cone.scale.y = cone.scale.z = 1.0
        cone.color.g, cone.color.b, cone.color.a = 0.8, 1.0, 0.35
        for m in (arrow, cone):
            m.header.stamp, m.header.frame_id = header_stamp, "world"
            markers.append(m)
    return MarkerArray(markers=markers)
