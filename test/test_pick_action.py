"""The pick as an action (``/pick``, ``physai_ros_interfaces/action/Pick``), used as users use
it: the shipped launch file on a colcon-built install (``ros2 launch physai_ros pick.launch.py
sim:=true``: one pick at start, then goals), goals from ROS 2's own ``ros2 action send_goal``
and from a Python action client in this process, the cube put back between goals by the sim
bridge's ``/sim/reset``.

What a result says is checked against the simulation's own truth where it matters (the cube's
pose and the jaws' contact forces from the sim bridge), not only against the node's verdict.
"""

from __future__ import annotations

import math
import re
import time

import numpy as np
import pytest
import yaml
from action_msgs.msg import GoalStatus
from scipy.spatial.transform import Rotation
from support.paths import PEERS, shipped
from support.pick_action import (
    CUBE_HALF,
    CUBE_X0,
    GOAL_TIMEOUT,
    GRAPH_UP,
    JAWS,
    MIN_LIFT,
    TOUCH,
    Client,
    Pick,
    launch_graph,
    place_goal,
    readme_block,
    tilt_deg,
)
from support.processes import ros2_output, set_param

from physai_ros.core.pick.judge import PLACE_TOLERANCE
from physai_ros.nodes._pick_outcome import outcome_name

pytestmark = [pytest.mark.dds, pytest.mark.slow]
# place centres [m] inside the reachable square (docs/pick.md, PLACE_SQUARE), and the cube's x
# for the reset before each (the bridge's cube_x): different picks, different places
PLACES = ((0.19, 0.02, 0.22), (0.215, -0.02, 0.22), (0.18, -0.01, 0.2))
STALL_PLACE = 0.015  # [m] where a stall-sensed place rests, at worst (see its test)


def typed_result(out: str) -> dict[str, str]:
    """The fields of the result ``ros2 action send_goal`` printed (after ``Result:``; the
    feedback lines before it have a lift too), with the goal's final status. A name's first
    line is the result's own field: the witnesses' fields (their ``outcome`` too) come after."""
    assert "Result:" in out, out
    result = out.split("Result:", 1)[1]
    fields: dict[str, str] = {}
    for name, value in re.findall(r"^\s*(\w+): (.*)$", result, re.MULTILINE):
        fields.setdefault(name, value)
    status = re.search(r"Goal finished with status: (\w+)", out)
    assert status, out
    return fields | {"status": status.group(1)}


def test_the_readmes_pick_and_place_goals_from_ros2_action_send_goal(ros2, ros_context, tmp_path):
    """After the start's pick, the README's block as a user runs it, line by line: the cube
    reset by ``ros2 service call /sim/reset``, a pick goal from ``ros2 action send_goal`` (HELD,
    lifted at least min_lift, SUCCEEDED), the cube reset again, a place goal (PLACED, judged by
    the cube's pose, SUCCEEDED) -- and the sim bridge's own cube pose says it rests within 1 cm
    of the README's place pose."""
    client = launch_graph(ros2, tmp_path, ros_context)
    goals = []
    try:
        start = client.start_outcome()
        assert start["outcome"] == "held", start
        for command in readme_block("ros2 action send_goal"):
            if command[:2] != ["action", "send_goal"]:
                ros2_output(ros2(*command))
                client.spin_for(1.0)
                continue
            out = ros2_output(ros2(*command), timeout=GOAL_TIMEOUT)
            print(out)
            goals.append((yaml.safe_load(command[-1]), typed_result(out)))
            client.spin_for(1.0)
        _, centre, _ = client.cube_pose
    finally:
        client.close()
    assert [bool(goal.get("place")) for goal, _ in goals] == [False, True], goals
    (_, held), (place, placed) = goals
    assert int(held["outcome"]) == Pick.Result.HELD and held["status"] == "SUCCEEDED", held
    assert float(held["lift"]) >= MIN_LIFT, held
    assert int(placed["outcome"]) == Pick.Result.PLACED, placed
    assert placed["status"] == "SUCCEEDED" and placed["judged_by"] == "cube_pose", placed
    target = place["place_pose"]["pose"]["position"]
    error = math.dist(centre, (target["x"], target["y"], target["z"]))
    print(f"placed: the cube rests {error * 100:.2f} cm from the README's place pose")
    assert error <= 0.01, f"the cube rests {error * 100:.2f} cm from {target}"


def test_action_client_goals_rejections_and_cancel(ros2, ros_context, tmp_path):
    """One graph, a Python action client: a goal sent while the start's pick runs is refused
    (busy); an unknown frame is refused with the reason and nothing moves; the cube reset to
    another place (the bridge's cube_x), a goal picks and holds it there (feedback on the way);
    a second goal canceled during lift ends
    CANCELED in lift with the cube still squeezed in the jaws (the sim bridge's truth); a goal
    past its time limit aborts, saying so."""
    client = launch_graph(ros2, tmp_path, ros_context)
    try:
        # busy: the start's pick is running (or waiting to start) when the server is up
        status, result, _ = client.send(Pick.Goal(object_frame="cube"))
        assert result.outcome == Pick.Result.REJECTED, result
        assert "one goal at a time" in result.reason, result
        assert status == GoalStatus.STATUS_ABORTED
        assert client.start_outcome()["outcome"] == "held"

        # an unknown frame: refused with the reason, the arm not moved
        client.reset()
        before = client.arm()
        status, result, _ = client.send(Pick.Goal(object_frame="no_such_object"))
        assert result.outcome == Pick.Result.REJECTED, result
        assert "unknown TF frame 'no_such_object'" in result.reason, result
        assert "cube" in result.reason  # the frames it knows, named
        client.spin_for(1.0)
        moved = max(abs(a - b) for a, b in zip(client.arm(), before, strict=True))
        assert moved < 1e-3, f"the arm moved {moved:.4f} rad for a rejected goal"

        # the cube put elsewhere for the next goal: the bridge's cube_x, then a reset
        set_param(ros2, "/sim_bridge", "cube_x", "0.2")
        client.reset()
        x, _ = client.cube_xz(time.monotonic() - 0.5)
        assert abs(x - 0.2) < 0.002, f"the reset put the cube at x = {x:.4f} m, not 0.2 m"

        # a goal: held, lifted, with feedback on the way
        states: list[str] = []
        status, result, _ = client.send(
            Pick.Goal(object_frame="cube", time_limit=60.0),
            on_feedback=lambda f: states.append(f.feedback.state),
        )
        assert result.outcome == Pick.Result.HELD, result
        assert status == GoalStatus.STATUS_SUCCEEDED
        assert result.lift >= MIN_LIFT and result.state == "done", result
        assert list(result.jaw_names) == list(JAWS) and min(result.jaw_forces) > TOUCH
        assert result.squeeze > 0.0 and result.duration > 0.0, result
        assert {"pre", "down", "close", "lift"} <= set(states), states

        # a second goal, canceled during lift: the arm stops, the jaw keeps the cube
        client.reset()
        _, rest_z = client.cube_xz(time.monotonic() - 0.5)
        canceled: list[float] = []

        def cancel_in_lift(feedback) -> None:
            f = feedback.feedback
            if f.state == "lift" and f.lift >= 0.01 and not canceled:
                canceled.append(time.monotonic())
                handles[0].cancel_goal_async()

        handles: list = []
        goal_future = client.pick.send_goal_async(
            Pick.Goal(object_frame="cube"), feedback_callback=cancel_in_lift
        )
        handles.append(client.wait(goal_future, 30.0))
        answer = client.wait(handles[0].get_result_async(), GOAL_TIMEOUT)
        result = answer.result
        assert canceled, "no lift feedback came to cancel on"
        assert answer.status == GoalStatus.STATUS_CANCELED, answer.status
        assert result.outcome == Pick.Result.CANCELED and result.state == "lift", result
        assert "the object is in both jaws" in result.reason, result
        client.spin_for(2.0)  # the arm held where it stopped; a dropped cube would be down
        _, z = client.cube_xz(canceled[0] + 1.5)
        assert z - rest_z > 0.005, f"the cube is at {z:.4f} m, rest {rest_z:.4f} m: dropped"
        for jaw, (wall, force) in client.forces.items():
            assert wall > canceled[0] + 1.5 and force > TOUCH, (jaw, force)

        # a goal past its time limit aborts (the arm goes home) and says why
        client.reset()
        status, result, _ = client.send(Pick.Goal(object_frame="cube", time_limit=1.0))
        assert status == GoalStatus.STATUS_ABORTED
        assert result.outcome == Pick.Result.ABORTED, result
        assert result.reason == "time limit 1 s reached" and result.state == "aborted", result
        assert result.duration >= 1.0, result
    finally:
        client.close()


def test_place_goals_put_the_cube_down_where_asked(ros2, ros_context, tmp_path):
    """On the launched graph, after the start's pick: bad place poses (below the table, out
    of reach, another frame) are refused with the reason and the arm does not move; then
    the cube, reset each time, is picked and placed at three positions: each goal ends PLACED
    (SUCCEEDED), judged by the cube's pose, and the sim bridge's own cube pose says it rests
    within 1 cm of the place pose, tilted less than 10 degrees, no jaw touching it."""
    client = launch_graph(ros2, tmp_path, ros_context)
    try:
        assert client.start_outcome()["outcome"] == "held"
        client.reset()
        before = client.arm()
        refused = {
            "below the table top": place_goal(0.2, 0.0, -0.02),
            "out of reach": place_goal(0.45, 0.0, CUBE_HALF),
            "in frame 'camera'": place_goal(0.2, 0.0, CUBE_HALF, frame="camera"),
        }
        for why, goal in refused.items():
            status, result, _ = client.send(goal)
            assert result.outcome == Pick.Result.REJECTED, result
            assert status == GoalStatus.STATUS_ABORTED
            assert why in result.reason, (why, result.reason)
            print(f"refused: {result.reason}")
        client.spin_for(1.0)
        moved = max(abs(a - b) for a, b in zip(client.arm(), before, strict=True))
        assert moved < 1e-3, f"the arm moved {moved:.4f} rad for a rejected goal"

        # both signals are read; whichever comes first ends the lowering (on a loaded machine
        # the stall may come first every time: a CI run saw stall, stall, stall). Under the
        # test suite's load a load-sensed place also rested 1.25 cm away once: STALL_PLACE for
        # both here; the 1 cm of a quiet machine is physai bench pick-goals' (docs/pick.md)
        place_all(client, ros2, {"load": STALL_PLACE, "stall": STALL_PLACE}, CUBE_X0)
    finally:
        client.close()


def place_all(client: Client, ros2, within: dict[str, float], cube_x0: float) -> list[str]:
    """Reset the cube (at each PLACES' cube_x; the bridge starts with ``cube_x0``) and place it
    at each of PLACES: the support sensed by one of the signals in ``within``, the sim bridge's
    own cube pose within that signal's distance [m] of the place pose, upright, no jaw touching
    it, the same outcome on the latched ``pick/outcome`` as in the result, and the goal's
    verdict, judged by the cube's pose, the truth's: PLACED and SUCCEEDED within 1 cm, DROPPED
    (for its distance alone) beyond. Returns which signal sensed each support."""
    signals = []
    for x, y, cube_x in PLACES:
        if cube_x != cube_x0:
            set_param(ros2, "/sim_bridge", "cube_x", str(cube_x))
            cube_x0 = cube_x
        client.reset()
        states: list[str] = []
        status, result, _ = client.send(
            place_goal(x, y, CUBE_HALF),
            on_feedback=lambda f, seen=states: seen.append(f.feedback.state),
        )
        assert result.state == "placed" and result.judged_by == "cube_pose", result
        # (lower can end within one feedback period: its support shows in the outcome)
        assert {"carry", "descend", "open", "retreat"} <= set(states), states
        done = time.monotonic()
        client.spin_for(1.0)
        outcome = client.outcome  # the same outcome on the latched topic (came by now)
        assert outcome["outcome"] == outcome_name(result.outcome), (outcome, result)
        assert outcome["place_error"] == result.place_error, (outcome, result)
        assert outcome["support_by"] in within, outcome
        signals.append(outcome["support_by"])
        wall, centre, quat = client.cube_pose
        assert wall > done + 0.5, "no fresh cube pose from the sim bridge"
        error = math.dist(centre, (x, y, CUBE_HALF))
        tilt = tilt_deg(quat)
        print(f"place ({x}, {y}) by {signals[-1]}: truth {error * 100:.2f} cm, tilt {tilt:.2f} deg")
        print(f"  result: {result.reason}")
        assert error <= within[signals[-1]], f"the cube rests {error * 100:.2f} cm from ({x}, {y})"
        # the typed result carries the place's numbers (the judge's pose, before the truth's)
        assert result.support_by == outcome["support_by"], result
        assert abs(result.place_error - error) < 1e-3 and result.place_tilt < math.radians(10)
        assert tilt < 10.0, f"the cube is tilted {tilt:.1f} deg"
        for jaw, (_, force) in client.forces.items():
            assert force <= TOUCH, f"{jaw} still touches the cube: {force:.3f} N"
        if error <= PLACE_TOLERANCE:
            assert result.outcome == Pick.Result.PLACED, result
            assert status == GoalStatus.STATUS_SUCCEEDED
        else:  # the verdict agrees with the truth, and says why
            assert result.outcome == Pick.Result.DROPPED, result
            assert "from the place position" in result.reason, result.reason
    return signals


def test_place_by_the_arms_stall_alone(ros2, ros_context, tmp_path):
    """The nodes run one by one (``ros2 run``), the pick with ``place_load`` false, as on a
    robot whose jaw wrenches are only the grip's squeeze: the support is sensed by the arm's
    stall, the cube rests upright within STALL_PLACE of each place pose, and each goal's
    verdict is the truth's (placed within 1 cm, dropped beyond).

    Why not 1 cm: the stall shows only once the arm has pressed the cube into the simulation's
    soft contact, a few mm past the touch, and how far depends on when the joint states
    arrive; over ROS the stall-sensed places rest 0.4-1.2 cm from the target (the load-sensed
    ones, the launch's default in the sim, 0.34-0.41 cm). docs/pick.md states it."""
    client = Client(ros_context)
    sim = ("--ros-args", "-p", "use_sim_time:=true")
    ros2("run", "physai_ros", "sim_bridge", log=tmp_path / "sim_bridge.log")
    ros2("run", "physai_ros", "tf_publisher", *sim, log=tmp_path / "tf_publisher.log")
    ros2(
        "run",
        "physai_ros",
        "pick",
        *sim,
        "-p",
        "place_load:=false",
        "-p",
        "autostart:=false",
        log=tmp_path / "pick.log",
    )
    try:
        assert client.pick.wait_for_server(timeout_sec=GRAPH_UP), "no /pick action server"
        assert client.reset_client.wait_for_service(timeout_sec=GRAPH_UP), "no sim bridge"
        # nodes started one by one: the pick may serve goals before it has heard the cube's TF
        # frame (a goal then is REJECTED as an unknown frame, nothing moves); wait until it has
        known_by = time.monotonic() + GRAPH_UP
        while True:
            probe = Pick.Goal(object_frame="cube", close=Pick.Goal.CLOSE_FORCE, force_target=-1.0)
            _, result, _ = client.send(probe)  # refused for its force target once cube is known
            if "unknown TF frame" not in result.reason or time.monotonic() > known_by:
                break
            client.spin_for(0.5)
        assert "force_target > 0" in result.reason, f"the pick never knew the cube: {result.reason}"
        place_all(client, ros2, {"stall": STALL_PLACE}, CUBE_X0)
    finally:
        client.close()


PRE = shipped("pick", "offsets", "pre")  # [m] the gripper site above the object at pre


def test_an_object_frame_anywhere_in_the_tf_tree(ros2, ros_context, tmp_path, spawn):
    """The nodes run one by one (``ros2 run``), frames published on /tf_static below the sim's
    cube by another process (``peers/tf_marker_talker.py``): an unknown frame is refused
    listing them; ``far`` (30 cm along the cube, two links from the world) is refused out of
    reach at the point the chain puts it (the sim's cube pose and 30 cm along its x, within
    1 mm); a goal naming ``marker_back`` (three links deep, back on the cube's centre) picks
    the cube and holds it, lifted by the sim's own pose."""
    client = Client(ros_context)
    sim = ("--ros-args", "-p", "use_sim_time:=true")
    ros2("run", "physai_ros", "sim_bridge", log=tmp_path / "sim_bridge.log")
    ros2("run", "physai_ros", "tf_publisher", *sim, log=tmp_path / "tf_publisher.log")
    ros2("run", "physai_ros", "pick", *sim, "-p", "autostart:=false", log=tmp_path / "pick.log")
    spawn(str(PEERS / "tf_marker_talker.py"), "300")
    try:
        assert client.pick.wait_for_server(timeout_sec=GRAPH_UP), "no /pick action server"
        client.reset()
        end = time.monotonic() + 60.0
        while True:  # until the pick node has the talker's latched frames
            _, result, _ = client.send(Pick.Goal(object_frame="no_such_object"))
            assert result.outcome == Pick.Result.REJECTED, result
            if "'marker_back'" in result.reason or time.monotonic() > end:
                break
            client.spin_for(1.0)
        print(result.reason)
        assert "unknown TF frame 'no_such_object'" in result.reason, result
        for frame in ("cube", "marker", "marker_back", "far", "wrist_cam_optical"):
            assert f"'{frame}'" in result.reason, (frame, result.reason)

        _, result, _ = client.send(Pick.Goal(object_frame="far"))
        _, cube, (w, x, y, z) = client.cube_pose
        print(result.reason)
        assert result.outcome == Pick.Result.REJECTED and "out of reach" in result.reason
        point = re.search(r"at the pre point \[([^\]]+)\] m", result.reason)
        assert point, result.reason
        where = [float(v) for v in point.group(1).split(",")]
        expected = np.add(cube, Rotation.from_quat([x, y, z, w]).apply([0.3, 0.0, 0.0]))
        expected[2] += PRE
        assert math.dist(where, expected) < 0.001, (where, expected)

        _, rest_z = client.cube_xz(time.monotonic() - 0.5)
        status, result, _ = client.send(Pick.Goal(object_frame="marker_back", time_limit=60.0))
        assert result.outcome == Pick.Result.HELD, result
        assert status == GoalStatus.STATUS_SUCCEEDED and result.lift >= MIN_LIFT, result
        client.spin_for(1.0)
        _, z = client.cube_xz(time.monotonic() - 0.5)
        assert z - rest_z >= MIN_LIFT, f"the sim's cube is at {z:.4f} m, rest {rest_z:.4f} m"
    finally:
        client.close()
