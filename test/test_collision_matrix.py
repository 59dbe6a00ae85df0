"""The SRDF's disabled collision pairs (physai_ros.export.collision_matrix): the Setup
Assistant's rules checked against the URDF (yourdfpy) and against MuJoCo contacts sampled here
independently, MuJoCo's own exclusions honoured, the sampler's filter, determinism."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest
import yourdfpy
from support.paths import REPO_ROOT
from test_moveit_config import ROBOTS, committed_urdf, disabled

from physai_ros.export.collision_matrix import ContactSampler, disabled_collisions, parse_urdf
from physai_ros.export.urdf import urdf_from_model
from physai_ros.models import load_robot_model, load_robot_spec

SAMPLES = 10_000  # independent states per robot for the "Never" check (another seed)


def through_bare_links(urdf: yourdfpy.URDF, a: str, b: str) -> bool:
    """``a`` and ``b`` joined by a joint, or by a path whose inner links have no geometry."""
    neighbours: dict[str, set[str]] = {link: set() for link in urdf.link_map}
    for joint in urdf.robot.joints:
        neighbours[joint.parent].add(joint.child)
        neighbours[joint.child].add(joint.parent)
    frontier, seen = [a], {a}
    while frontier:
        for link in neighbours[frontier.pop()]:
            if link == b:
                return True
            if link not in seen and not urdf.link_map[link].collisions:
                seen.add(link)
                frontier.append(link)
    return False


def with_mimics(urdf: yourdfpy.URDF, q: dict[str, float]) -> dict[str, float]:
    """``q`` of the active joints plus each mimic joint from its master (as MoveIt sets it)."""
    for joint in urdf.robot.joints:
        if joint.mimic is not None:
            q[joint.name] = joint.mimic.multiplier * q[joint.mimic.joint] + joint.mimic.offset
    return q


def touching(robot: str, states: list[dict[str, float]]) -> list[set[tuple[str, str]]]:
    """Per state, the link pairs MuJoCo finds in contact (every geom pair tested: the parent
    filter off, as MoveIt checks links that MuJoCo's filter would skip)."""
    model = load_robot_model(robot)
    model.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_FILTERPARENT)
    data = mujoco.MjData(model)
    names = [model.body(b).name for b in range(model.nbody)]
    found = []
    for state in states:
        for name, value in state.items():
            data.qpos[model.joint(name).qposadr[0]] = value
        mujoco.mj_kinematics(model, data)
        mujoco.mj_collision(model, data)
        found.append(model.geom_bodyid[data.contact.geom])
    return [{tuple(sorted((names[i], names[j]))) for i, j in bodies} for bodies in found]


@pytest.mark.parametrize("robot", ROBOTS)
def test_disabled_pairs_follow_the_setup_assistant_rules(robot: str, tmp_path: Path) -> None:
    urdf = committed_urdf(robot, tmp_path)
    pairs = disabled(robot)
    assert all(a < b for a, b in pairs) and set(pairs.values()) <= {"Adjacent", "Default", "Never"}
    for joint in urdf.robot.joints:  # every pair of neighbours with geometry: Adjacent
        if urdf.link_map[joint.parent].collisions and urdf.link_map[joint.child].collisions:
            assert pairs[tuple(sorted((joint.parent, joint.child)))] == "Adjacent"
    for (a, b), reason in pairs.items():
        assert (reason == "Adjacent") == through_bare_links(urdf, a, b), (a, b)
    # Default: exactly the non-adjacent pairs touching at MoveIt's default state
    default = {}
    for name in urdf.actuated_joint_names:
        low, high = urdf.joint_map[name].limit.lower, urdf.joint_map[name].limit.upper
        default[name] = 0.0 if low <= 0.0 <= high else 0.5 * (low + high)
    (at_default,) = touching(robot, [with_mimics(urdf, default)])
    expected = {p for p in at_default if pairs.get(p) != "Adjacent"}
    assert expected == {p for p, reason in pairs.items() if reason == "Default"}


@pytest.mark.parametrize("robot", ROBOTS)
def test_no_pair_seen_touching_is_disabled_as_never(robot: str, tmp_path: Path) -> None:
    """Independent states (another seed, another sampler): a pair MuJoCo finds in contact in
    any of them must not be disabled as Never, and some checked pairs do touch (the matrix
    still guards real self-collisions)."""
    urdf = committed_urdf(robot, tmp_path)
    names = urdf.actuated_joint_names
    low = np.array([urdf.joint_map[n].limit.lower for n in names])
    high = np.array([urdf.joint_map[n].limit.upper for n in names])
    draws = np.random.default_rng(2026).uniform(low, high, (SAMPLES, len(names)))
    states = [with_mimics(urdf, dict(zip(names, q, strict=True))) for q in draws]
    touched = set().union(*touching(robot, states))
    pairs = disabled(robot)
    never = {p for p, reason in pairs.items() if reason == "Never"}
    assert not touched & never, sorted(touched & never)
    assert touched - set(pairs), "no checked pair ever touches: the test would prove nothing"


FOLDING_MJCF = """
<mujoco>
  <compiler angle="radian"/>
  <worldbody>
    <body name="a">
      <geom name="a" type="box" size="0.15 0.15 0.05"/>
      <body name="b" pos="0 0 0.2"><joint name="j1" axis="1 0 0" range="-3 3"/>
        <geom name="b" type="capsule" fromto="0 0 0 0 0 0.2" size="0.02"/>
        <body name="c" pos="0 0 0.2"><joint name="j2" axis="1 0 0" range="-3.1 3.1"/>
          <geom name="c" type="capsule" fromto="0 0 0 0 0 0.38" size="0.02" EXTRA/>
        </body>
      </body>
    </body>
  </worldbody>
  CONTACT
</mujoco>
"""


@pytest.mark.parametrize(
    ("extra", "contact", "reason"),
    [
        ("", "", None),  # c folds back onto a in some states: stays checked
        ("", '<contact><exclude body1="a" body2="c"/></contact>', "User"),
        ('contype="2" conaffinity="2"', "", "User"),  # never matches a's 1/1
        ("", '<contact><exclude body1="a" body2="c"/><pair geom1="c" geom2="a"/></contact>', None),
    ],
)
def test_mujoco_exclusions_are_honoured(extra: str, contact: str, reason: str | None) -> None:
    """A pair MuJoCo never collides (exclude, contype/conaffinity) is disabled as User; an
    explicit <pair> still collides it. The same seed gives the same matrix."""
    spec = mujoco.MjSpec.from_string(
        FOLDING_MJCF.replace("EXTRA", extra).replace("CONTACT", contact)
    )
    urdf = parse_urdf(urdf_from_model(spec.compile(), "folding"))
    pairs = disabled_collisions(spec, urdf, samples=2000)
    assert pairs[("a", "b")] == pairs[("b", "c")] == "Adjacent"
    assert pairs.get(("a", "c")) == reason
    assert disabled_collisions(spec, urdf, samples=2000) == pairs


def test_sampler_checks_pairs_that_mujoco_filters_by_parent() -> None:
    """MuJoCo skips a body against its parent's weld body (the SO-101's camera mount, welded to
    the gripper, against the moving jaw); MoveIt checks every pair that is not adjacent, so the
    sampler switches that filter off. Shown on the gripper and the moving jaw, which touch at
    zero but which MuJoCo's filter hides."""
    spec = load_robot_spec("so101")
    urdf = parse_urdf((REPO_ROOT / "urdf" / "so101.urdf").read_text(encoding="utf-8"))
    sampler = ContactSampler(spec, urdf)
    zero = np.zeros((1, len(urdf.movable)))
    assert ("gripper", "moving_jaw_so101_v1") in sampler.pairs(sampler.counts(zero) > 0)
    model = spec.compile()  # the caller's spec is left as it was: filter on
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    mujoco.mj_collision(model, data)
    jaw = {model.body("gripper").id, model.body("moving_jaw_so101_v1").id}
    assert not any(set(model.geom_bodyid[g]) == jaw for g in data.contact.geom)
    assert disabled("so101")[("camera_mount", "moving_jaw_so101_v1")] == "Never"


def test_collision_matrix_is_deterministic() -> None:
    spec = load_robot_spec("panda")
    urdf = parse_urdf((REPO_ROOT / "urdf" / "panda.urdf").read_text(encoding="utf-8"))
    assert disabled_collisions(spec, urdf, samples=3000) == disabled_collisions(
        spec, urdf, samples=3000
    )


SLIDER_MJCF = """
<mujoco>
  <worldbody>
    <body name="r">
      <geom type="box" size="0.05 0.05 0.05" pos="5 0 0"/>
      <body name="b"><joint name="s" type="slide" axis="1 0 0" range="-1 1"/>
        <geom type="sphere" size="0.01"/></body>
      <body name="c">
        <geom type="box" size="0.6 0.05 0.05" pos="0.64 0 0"/>
        <geom type="box" size="0.6 0.05 0.05" pos="-0.64 0 0"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_a_pair_touching_almost_always_is_always() -> None:
    """The slider's ball touches the rail except within 3 cm of the middle (97 % of the
    states, not the default state 0): Always. The rail is welded to the slider's parent, so
    MuJoCo's parent filter would have hidden the pair."""
    spec = mujoco.MjSpec.from_string(SLIDER_MJCF)
    urdf = parse_urdf(urdf_from_model(spec.compile(), "slider"))
    pairs = disabled_collisions(spec, urdf, samples=2000)
    assert pairs == {("b", "r"): "Adjacent", ("c", "r"): "Adjacent", ("b", "c"): "Always"}
