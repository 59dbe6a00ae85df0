"""Joint names on the wire vs the model's: the prefix mapping every ROS boundary uses."""

from __future__ import annotations

import pytest

from physai_ros.core.frames.joint_names import JointPrefix
from physai_ros.errors import InvalidInput
from physai_ros.models.joints import PANDA_JOINTS

PANDA = list(PANDA_JOINTS)


def test_prefixed_names_round_trip_and_unknown_names_stay_unknown():
    names = JointPrefix("panda_", PANDA)
    wire = names.to_wire(PANDA)
    assert wire[0] == "panda_joint1" and wire[-1] == "panda_finger_joint2"
    assert names.to_model(wire) == PANDA
    # not the prefix + a model name: passed on as it is, so the controller refuses it
    assert names.to_model(["fr3_joint1", "panda_joint9", "elbow"]) == [
        "fr3_joint1",
        "panda_joint9",
        "elbow",
    ]
    # a bare model name must not slip through as the model joint it names
    (bare,) = names.to_model(["joint1"])
    assert bare not in PANDA and "missing the prefix 'panda_'" in bare
    assert names.to_wire(["elbow"]) == ["elbow"]


def test_messages_name_the_wire_joints():
    names = JointPrefix("fr3_", PANDA)
    text = "joint 'joint1' acceleration 13.86 rad/s²; joint2 is 0.1 rad from the reference"
    assert names.text(text) == (
        "joint 'fr3_joint1' acceleration 13.86 rad/s²; fr3_joint2 is 0.1 rad from the reference"
    )
    # whole names only: finger_joint1 is not joint1 with a finger_ in front
    assert names.text("finger_joint1 stalled") == "fr3_finger_joint1 stalled"
    # a marked bare name keeps saying what was sent
    (bare,) = names.to_model(["joint3"])
    rejected = f"Incoming joint {bare} doesn't match the controller's joints."
    assert names.text(rejected) == rejected


def test_no_prefix_is_the_identity():
    names = JointPrefix("", PANDA)
    assert names.to_model(["joint1", "x"]) == ["joint1", "x"]
    assert names.to_wire(PANDA) == PANDA
    assert names.text("joint1 moved") == "joint1 moved"


@pytest.mark.parametrize("prefix", ["panda joint", "a.b", "x-"])
def test_a_prefix_that_cannot_be_a_name_is_refused(prefix):
    with pytest.raises(InvalidInput, match="may hold only"):
        JointPrefix(prefix, PANDA)
