"""GoalChain: stamps for chained arm phases that stay consistent with a controller that starts
a late goal when it arrives (and so ends it late by as much)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from physai_ros.core.pick.goal_chain import GoalChain
from physai_ros.errors import InvalidInput

LEAD = 0.5


def test_on_time_goals_are_stamped_lead_ahead_and_phases_join():
    chain = GoalChain(LEAD)
    assert chain.start(10.0) == 10.5 and chain.end(10.0) == -math.inf
    chain.sent(1, 10.5, 1.2)
    chain.accepted(1, 10.01)  # seen well before its stamp: it starts at the stamp
    assert chain.end(10.5) == pytest.approx(11.7)
    # the machine moves on at 11.2 (its phase lasted 1.2 s): the next goal joins at 11.7
    assert chain.start(11.2) == pytest.approx(11.7)


def test_a_late_goal_pushes_the_next_one_back_by_its_lateness():
    chain = GoalChain(LEAD)
    chain.sent(1, 10.5, 1.2)
    chain.accepted(1, 11.4)  # reached the controller 0.9 s after its stamp, at the latest
    assert chain.start(11.2) == pytest.approx(11.4 + 1.2)


def test_an_unanswered_goal_starts_no_earlier_than_now():
    chain = GoalChain(LEAD)
    chain.sent(1, 10.5, 1.2)
    assert chain.start(11.2) == pytest.approx(11.2 + 1.2)
    chain.accepted(1, 11.3)
    assert chain.start(11.35) == pytest.approx(11.3 + 1.2)


def test_only_the_last_goal_counts_and_forget_drops_it():
    chain = GoalChain(LEAD)
    chain.sent(1, 10.5, 1.2)
    chain.sent(2, 11.7, 0.8)
    chain.accepted(1, 30.0)  # a replaced goal's late answer changes nothing
    chain.accepted(2, 11.0)
    assert chain.end(11.0) == pytest.approx(12.5)
    chain.forget()
    assert chain.start(11.0) == 11.5


def test_lag_is_how_far_behind_the_plan_the_running_goal_is():
    """A goal sampled from the plan at 10.0 and stamped 10.5 runs 0.5 s behind it; one that
    reached the controller 0.3 s after its stamp runs 0.8 s behind (a stop sent mid-way joins
    it stamped now + lag); no goal: lead."""
    chain = GoalChain(LEAD)
    assert chain.lag(10.0) == LEAD
    chain.sent(1, 10.5, 1.2, sent_at=10.0)
    assert chain.lag(10.2) == pytest.approx(0.5)  # not answered yet: arrives no earlier than now
    chain.accepted(1, 10.8)
    assert chain.lag(11.0) == pytest.approx(0.8)
    chain.sent(2, 12.0, 1.0, sent_at=11.0)  # pushed back by the late goal: 1 s behind the plan
    chain.accepted(2, 11.1)
    assert chain.lag(11.5) == pytest.approx(1.0)


@pytest.mark.parametrize("lead", [-0.1, math.nan, math.inf])
def test_bad_lead_is_refused(lead):
    with pytest.raises(InvalidInput, match="lead"):
        GoalChain(lead)


@pytest.mark.parametrize("stamp, duration", [(math.nan, 1.0), (1.0, -0.1), (1.0, math.inf)])
def test_bad_goals_are_refused_and_change_nothing(stamp, duration):
    chain = GoalChain(LEAD)
    chain.sent(1, 10.5, 1.0)
    with pytest.raises(InvalidInput):
        chain.sent(2, stamp, duration)
    assert chain.end(10.0) == pytest.approx(11.5)


@given(
    stamp=st.floats(0.0, 100.0),
    duration=st.floats(0.0, 5.0),
    arrival=st.floats(0.0, 5.0),
    seen=st.floats(0.0, 1.0),
    sent_next=st.floats(0.0, 10.0),
)
def test_the_next_goal_never_starts_before_the_controller_is_done(
    stamp, duration, arrival, seen, sent_next
):
    """Whatever the delays: the controller starts a goal at max(stamp, arrival) and is done
    duration later; its acceptance is seen ``seen`` after the arrival. The next goal, sent
    later, is stamped lead ahead of its sending and, when the first goal has arrived by then
    (seen or not), no earlier than the first goal's end; when it has not, no earlier than the
    earliest end it can still have."""
    chain = GoalChain(LEAD)
    sent_at = stamp - LEAD
    chain.sent(1, stamp, duration)
    arrives, now = sent_at + arrival, sent_at + sent_next
    if arrives + seen <= now:
        chain.accepted(1, arrives + seen)
    start = chain.start(now)
    assert start >= now + LEAD
    if arrives <= now:
        assert start >= max(stamp, arrives) + duration - 1e-9
    else:
        assert start >= max(stamp, now) + duration - 1e-9


def test_a_gap_starts_each_chained_goal_that_long_after_the_last_ends_and_late_says_by_how_much():
    """``gap``: a relay forwarding each goal once the one before has ended (the trajectory node
    before a real Franka) needs the time; the next goal starts that long after the last ends,
    still ``lead`` ahead at least. ``late`` is how long after its stamp the last goal arrived."""
    chain = GoalChain(LEAD, gap=0.2)
    assert chain.start(10.0) == 10.5 and chain.late(10.0) == 0.0
    chain.sent(1, 10.5, 1.2)
    chain.accepted(1, 10.01)
    assert chain.start(11.2) == pytest.approx(11.7 + 0.2)
    assert chain.start(12.0) == pytest.approx(12.5)  # lead binds again
    assert chain.late(10.5) == 0.0
    chain.sent(2, 12.5, 1.0)
    chain.accepted(2, 12.8)
    assert chain.late(13.0) == pytest.approx(0.3)
    with pytest.raises(InvalidInput, match="gap"):
        GoalChain(LEAD, gap=-0.1)
