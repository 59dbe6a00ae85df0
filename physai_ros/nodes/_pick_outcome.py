"""A pick's typed outcome -- the ``/pick`` action's result, or the latched ``pick/outcome``
topic's ``physai_ros_interfaces/msg/PickOutcome`` (the same fields, the same constants) -- in the
judge's words, for the tools that read it.

Why here: the node turns the judge's outcomes (``held``, ``not closed`` ...) into the result's
constants; a bench, the graph monitor or a test reading the topic turns them back with the same
table, and gets the message's fields as plain values to print, compare or write as JSON.
"""

from __future__ import annotations

from typing import Any

from physai_ros_interfaces.action import Pick
from physai_ros_interfaces.msg import PickOutcome
from rosidl_runtime_py.convert import message_to_ordereddict

Result = Pick.Result
# the judge's outcomes (``physai_ros.core.pick.judge``) and the node's own, as result constants
OUTCOMES = {
    "held": Result.HELD,
    "placed": Result.PLACED,
    "dropped": Result.DROPPED,
    "not closed": Result.MISSED,
    "no measurement": Result.UNJUDGED,
    "aborted": Result.ABORTED,
    "canceled": Result.CANCELED,
    "rejected": Result.REJECTED,
}
NAMES = {code: name for name, code in OUTCOMES.items()}


def outcome_name(code: int) -> str:
    """The judge's word for a result's outcome constant (``Result.MISSED`` -> ``not closed``)."""
    return NAMES.get(code, f"outcome {code}")


def as_outcome(result: Pick.Result) -> PickOutcome:
    """The action's ``result`` as the outcome topic's message: the same fields (``PickOutcome``
    is the Result section of ``Pick.action``, cut out by the interface package's build)."""
    return PickOutcome(
        **{name: getattr(result, name) for name in PickOutcome.get_fields_and_field_types()}
    )


def outcome_fields(result: Pick.Result | PickOutcome) -> dict[str, Any]:
    """Every field of ``result`` (the action's, or the topic's) as plain values (the
    witnesses as dicts, the stamp in seconds), its outcome in the judge's word."""
    fields = {k: v for k, v in message_to_ordereddict(result).items()}
    fields["outcome"] = outcome_name(result.outcome)
    fields["witnesses"] = [dict(w) for w in fields["witnesses"]]
    fields["stamp"] = result.stamp.sec + result.stamp.nanosec * 1e-9
    return fields


def verdict_of(fields: dict[str, Any], name: str, judges: str = "pick") -> dict[str, Any] | None:
    """The verdict of witness ``name`` (robot, cube_pose, object_pose) on the pick or its
    place (``judges``) in an outcome's ``outcome_fields``; None: it did not look."""
    return next(
        (w for w in fields["witnesses"] if (w["name"], w["judges"]) == (name, judges)), None
    )
