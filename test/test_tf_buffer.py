"""The pure TF buffer (``physai_ros.core.frames.tf_buffer``): properties against transforms
composed by hand with SciPy's rotations, over random trees of links received in any order.

Tolerance: 1e-9 on every entry of a composed transform (a few dozen products of unit
quaternions' matrices; the errors are round-off)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from physai_ros.core.frames.tf_buffer import FrameLookupError, TfBuffer
from physai_ros.errors import InvalidInput

WORLD = "world"
TOL = 1e-9

numbers = st.floats(-2.0, 2.0, allow_nan=False)
quats = st.tuples(numbers, numbers, numbers, numbers).filter(
    lambda q: math.sqrt(sum(v * v for v in q)) > 0.1
)


@st.composite
def trees(draw) -> dict[str, tuple[str, tuple, tuple, float, bool]]:
    """A random tree under the world: child → (parent, translation, quat, stamp, static);
    each new frame hangs off the world or a frame drawn before it."""
    links: dict = {}
    for i in range(draw(st.integers(1, 8))):
        parent = draw(st.sampled_from([WORLD, *links]))
        translation = draw(st.tuples(numbers, numbers, numbers))
        stamp = draw(st.floats(0.0, 100.0))
        links[f"f{i}"] = (parent, translation, draw(quats), stamp, draw(st.booleans()))
    return links


def by_hand(links: dict, frame: str) -> tuple[np.ndarray, float | None]:
    """world ← frame composed by hand (SciPy's rotation of each link, multiplied from the world
    down), and the oldest dynamic stamp on the way."""
    T, stamp = np.eye(4), None
    path = []
    while frame != WORLD:
        path.append(frame)
        frame = links[frame][0]
    for child in reversed(path):
        _, t, (w, x, y, z), s, static = links[child]
        link = np.eye(4)
        link[:3, :3] = Rotation.from_quat([x, y, z, w]).as_matrix()
        link[:3, 3] = t
        T = T @ link
        if not static:
            stamp = s if stamp is None else min(stamp, s)
    return T, stamp


def filled(links: dict, order: list[str]) -> TfBuffer:
    buffer = TfBuffer(WORLD)
    for child in order:
        parent, t, q, stamp, static = links[child]
        buffer.set(parent, child, t, q, stamp, static)
    return buffer


@settings(max_examples=150)
@given(data=st.data(), links=trees())
def test_every_frame_of_a_tree_is_its_chain_composed_by_hand(data, links):
    """Received in any order, every frame's world pose is the product of its links, its stamp
    the oldest dynamic link's (None when all are static), its age 0 when static."""
    order = data.draw(st.permutations(list(links)))
    buffer = filled(links, order)
    assert buffer.known() == sorted(links)
    for frame in links:
        chained = buffer.lookup(frame)
        T, stamp = by_hand(links, frame)
        np.testing.assert_allclose(chained.T, T, atol=TOL)
        np.testing.assert_allclose(chained.position, T[:3, 3], atol=TOL)
        rotation = Rotation.from_quat(chained.quat[[1, 2, 3, 0]]).as_matrix()
        np.testing.assert_allclose(rotation, T[:3, :3], atol=TOL)
        assert chained.stamp == stamp
        assert chained.age(200.0) == (0.0 if stamp is None else 200.0 - stamp)


@settings(max_examples=100)
@given(data=st.data(), links=trees(), translation=st.tuples(numbers, numbers, numbers))
def test_a_newer_link_moves_its_subtree_and_an_older_one_is_ignored(data, links, translation):
    """Replacing one link changes the frames below it (composed by hand again) and nothing
    else; a dynamic link older than the one kept changes nothing."""
    buffer = filled(links, list(links))
    child = data.draw(st.sampled_from(list(links)))
    parent, _, q, stamp, static = links[child]
    before = {frame: buffer.lookup(frame) for frame in links}
    if not static:
        buffer.set(parent, child, translation, q, stamp - 1.0)
        for frame in links:
            np.testing.assert_array_equal(buffer.lookup(frame).T, before[frame].T)
    links = {**links, child: (parent, translation, q, stamp + 1.0, static)}
    buffer.set(parent, child, translation, q, stamp + 1.0, static)
    for frame in links:
        T, expected_stamp = by_hand(links, frame)
        np.testing.assert_allclose(buffer.lookup(frame).T, T, atol=TOL)
        assert buffer.lookup(frame).stamp == expected_stamp
        if child not in buffer.chain(frame):
            np.testing.assert_array_equal(buffer.lookup(frame).T, before[frame].T)


@settings(max_examples=100)
@given(links=trees(), orphan=st.integers(0, 7))
def test_a_disconnected_subtree_is_refused_naming_where_its_chain_ends(links, orphan):
    """A frame whose chain ends at a frame with no parent: refused, naming that root; the
    frames still connected are unaffected and listed."""
    root = f"f{orphan % len(links)}"
    del links[root]
    buffer = filled(links, list(links))
    below = {f for f in links if root in by_chain(links, f)}
    assert buffer.known() == sorted(set(links) - below)
    for frame in links:
        if frame in below:
            with pytest.raises(FrameLookupError, match=f"ends at '{root}', which has no parent"):
                buffer.lookup(frame)
        else:
            np.testing.assert_allclose(buffer.lookup(frame).T, by_hand(links, frame)[0], atol=TOL)


def by_chain(links: dict, frame: str) -> list[str]:
    """The frames above ``frame`` in ``links`` (parents that are missing included)."""
    up = []
    while frame in links:
        frame = links[frame][0]
        up.append(frame)
    return up


def test_a_cycle_an_unknown_frame_and_bad_links_are_refused_clearly():
    buffer = TfBuffer(WORLD)
    buffer.set(WORLD, "base", (0.0, 0.0, 0.1), (1.0, 0.0, 0.0, 0.0), 1.0, static=True)
    buffer.set("b", "a", (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0), 1.0)
    buffer.set("a", "b", (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0), 1.0)
    with pytest.raises(FrameLookupError, match="'a' is in a cycle: a → b → a"):
        buffer.lookup("a")
    with pytest.raises(FrameLookupError, match="unknown TF frame 'nothing'"):
        buffer.lookup("nothing")
    assert buffer.known() == ["base"]
    np.testing.assert_array_equal(buffer.lookup(WORLD).T, np.eye(4))
    assert buffer.lookup(WORLD).stamp is None
    for bad in (
        ("", "x", (0, 0, 0), (1, 0, 0, 0)),
        ("x", "x", (0, 0, 0), (1, 0, 0, 0)),
        (WORLD, "x", (0, math.nan, 0), (1, 0, 0, 0)),
        (WORLD, "x", (0, 0, 0), (0, 0, 0, 0)),
        (WORLD, "x", (0, 0), (1, 0, 0, 0)),
    ):
        with pytest.raises(InvalidInput):
            buffer.set(*bad, 1.0)
    assert buffer.known() == ["base"]  # nothing changed
