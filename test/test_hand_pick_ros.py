"""The three-finger pick over ROS, as users run it: ``ros2 launch physai_ros hand_pick.launch.py``
on a colcon-built install (sim bridge in real time, TF publisher, trajectory node, grasp planner
and hand pick, each its own process), the outcome read from ``/hand_pick/outcome`` by a watcher
in the test process and judged again by a witness there (``support.witness``: the soft
object's pose and the fingers' contact wrenches, as the sim bridge publishes them). The seed's
whole pipeline: plan → pre-grasp through the trajectory node → close to the contacts → force
close → lift. Then the same graph with ``autostart:=false`` serving ``/pick`` goals: from ROS 2's
own ``ros2 action send_goal``, refusals, a cancel."""

from __future__ import annotations

import math
import re
import shlex
import time

import pytest
from action_msgs.msg import GoalStatus
from geometry_msgs.msg import PoseStamped, WrenchStamped
from rclpy.qos import DurabilityPolicy, QoSProfile
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from support.optional import require
from support.paths import REPO_ROOT
from support.processes import call_again_if_lost, ros2_output, set_param
from support.witness import JAWS, Witness, shipped
from test_user_paths import Watcher

from physai_ros import interfaces
from physai_ros.experiments.trials.pick_goals import Client
from physai_ros.models.joints import PANDA_ARM_JOINTS

Pick = require("physai_ros_interfaces.action").Pick
GRAPH_UP = 420.0  # [s wall] the graph up and the plan in, on 2 loaded cores
GOAL_TIMEOUT = 300.0  # [s wall] one hand pick goal, the sim below real time on 2 loaded cores
TOUCH = shipped("hand_pick", "fingers", "touch")  # [N] a finger touches the object above this

pytestmark = [pytest.mark.dds, pytest.mark.slow]


def test_ros2_launch_hand_pick_lifts_the_soft_sphere_at_the_planned_forces(
    ros2, ros_context, tmp_path
):
    log = tmp_path / "launch.log"
    witness = Witness(  # before the graph: sees the object at rest
        ros_context, JAWS["hand"], interfaces.SOFT_OBJECT_POSE, interfaces.HAND_PICK_OUTCOME
    )
    ros2("launch", "physai_ros", "hand_pick.launch.py", "object_x:=0.51", "object_y:=-0.01",
         log=log)  # fmt: skip
    outcome = Watcher(ros_context, "/hand_pick/outcome").wait_outcome(420.0)
    assert outcome is not None, log.read_text()[-4000:]
    print("hand pick outcome:", outcome)  # the numbers, for the record (pytest -s)
    assert outcome["outcome"] == "held", f"{outcome['reason']}: {outcome}"
    fingers, tol = shipped("hand_pick", "fingers"), shipped("hand_pick", "fingers", "tolerance")
    assert outcome["lift"] >= 0.04 and outcome["force_within_tolerance"], outcome
    assert min(outcome["jaw_forces"]) > fingers["touch"], outcome  # all three touch it
    targets = outcome["jaw_targets"]  # the planner's, one per finger
    assert len(targets) == 3 and outcome["force_source"] == "planner", outcome
    for peak, target in zip(outcome["jaw_peaks"], targets, strict=True):
        assert peak <= target * (1.0 + tol), outcome
    assert outcome["strain_peak"] < shipped("hand_pick", "strain_limit"), outcome
    # the outside witness: the object's own pose and the fingers' wrenches after the outcome
    seen, forces = witness.check_pick(shipped("hand_pick", "min_lift"), targets, tol)
    print(f"witness: object rose {100 * seen.rise:.2f} cm, finger forces {forces}")
    witness.close()
    text = log.read_text()
    # the arm went through the trajectory node (limit-checked, then to the bridge's controller)
    assert "[trajectory" in text and "[hand_pick" in text and "[grasp_planner" in text, text[-3000:]


class GoalClient(Client):
    """The bench's ``/pick`` client (``physai bench hand-pick``'s) and the simulation's truth:
    the soft object's pose, each finger's contact force, the arm's joints (from the sim
    bridge's topics), the hand pick's state."""

    def __init__(self, context) -> None:
        super().__init__(context, interfaces.HAND_PICK_OUTCOME, "hand_goal_client")
        node = self.node
        self.object: tuple[float, float] | None = None  # (wall [s], z [m]), latest
        self.forces = dict.fromkeys(JAWS["hand"], (0.0, 0.0))  # finger: (wall [s], force [N])
        self.joints: dict[str, float] = {}
        self.state = ""  # the hand pick's latest state
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        node.create_subscription(String, "/hand_pick/state", self._state, latched)
        node.create_subscription(PoseStamped, "/soft_object_pose", self._object, 10)
        node.create_subscription(JointState, "/joint_states", self._joints, 10)
        for finger in JAWS["hand"]:
            node.create_subscription(
                WrenchStamped, f"/jaw_contact/{finger}", lambda m, f=finger: self._force(f, m), 10
            )

    def _state(self, msg: String) -> None:
        self.state = msg.data

    def _object(self, msg: PoseStamped) -> None:
        self.object = (time.monotonic(), msg.pose.position.z)

    def _joints(self, msg: JointState) -> None:
        self.joints.update(zip(msg.name, msg.position, strict=False))

    def _force(self, finger: str, msg: WrenchStamped) -> None:
        f = msg.wrench.force
        self.forces[finger] = (time.monotonic(), math.sqrt(f.x**2 + f.y**2 + f.z**2))

    def arm(self) -> list[float]:
        return [self.joints[j] for j in PANDA_ARM_JOINTS]


def docs_command(start: str) -> list[str]:
    """docs/hand_pick.md's command line that begins with ``start``, as ``ros2``'s arguments."""
    for line in (REPO_ROOT / "docs" / "hand_pick.md").read_text().splitlines():
        if line.startswith(start):
            return shlex.split(line)[1:]
    raise AssertionError(f"docs/hand_pick.md has no line starting {start!r}")


def put_object(ros2, x: float, y: float) -> None:
    """The soft object at (x, y) [m], base frame, the arm home: the sim bridge's parameters,
    then its reset (as docs/hand_pick.md tells users)."""
    for name, value in (("soft_x", x), ("soft_y", y)):
        set_param(ros2, "/sim_bridge", name, str(value))
    call_again_if_lost(ros2, "/sim/reset", "std_srvs/srv/Trigger")


def test_hand_pick_action_goals_refusals_and_cancel(ros2, ros_context, tmp_path):
    """``ros2 launch physai_ros hand_pick.launch.py autostart:=false``, then ``/pick`` goals:
    an unknown frame and a place are refused (REJECTED with the reason, the arm unmoved); the
    object put elsewhere by the sim bridge, ``ros2 action send_goal`` (docs/hand_pick.md's line)
    picks it: HELD, SUCCEEDED, three finger forces; a goal canceled during lift ends CANCELED
    in lift, the object still up in the fingers (the sim's truth); a goal past its time limit
    ends ABORTED, saying so."""
    client = GoalClient(ros_context)
    log = tmp_path / "launch.log"
    ros2("launch", "physai_ros", "hand_pick.launch.py", "autostart:=false", log=log)
    try:
        end = time.monotonic() + GRAPH_UP  # the plan in: the node says "ready" (latched)
        while client.state != "ready" and time.monotonic() < end:
            client.spin_for(0.2)
        assert client.state == "ready", (client.state, log.read_text()[-3000:])
        before = client.arm()
        for goal, why in (
            (Pick.Goal(object_frame="nowhere"), "unknown TF frame 'nowhere'"),
            (Pick.Goal(object_frame="grasp_object", place=True), "the hand lifts and holds"),
            (Pick.Goal(object_frame="grasp_object", close=1), "close cap refused"),
        ):
            handle = client.wait(client.pick.send_goal_async(goal), 30.0)
            answer = client.wait(handle.get_result_async(), 30.0)
            assert answer.status == GoalStatus.STATUS_ABORTED, answer.status
            assert answer.result.outcome == Pick.Result.REJECTED, answer.result
            assert why in answer.result.reason, (why, answer.result.reason)
        client.spin_for(1.0)
        moved = max(abs(a - b) for a, b in zip(client.arm(), before, strict=True))
        assert moved < 1e-3, f"the arm moved {moved:.4f} rad for a refused goal"

        put_object(ros2, 0.51, -0.01)
        out = ros2_output(ros2(*docs_command("ros2 action send_goal")), timeout=GOAL_TIMEOUT)
        assert "Result:" in out, out
        out = out.split("Result:", 1)[1]
        outcome = re.search(r"^\s*outcome: (\d+)$", out, re.MULTILINE)
        assert outcome and int(outcome.group(1)) == Pick.Result.HELD, out
        assert "SUCCEEDED" in out and "- F3" in out, out
        # each finger's planned target and the object's peak strain, as typed fields
        block = re.search(r"^jaw_targets:\n((?:- .*\n)+)", out, re.MULTILINE)
        assert block, out
        targets = [float(line[2:]) for line in block.group(1).splitlines()]
        assert len(targets) == 3 and min(targets) > 0.0, targets
        strain = re.search(r"^strain_peak: (\S+)$", out, re.MULTILINE)
        assert strain and 0.0 < float(strain.group(1)) < 1.0, out

        put_object(ros2, 0.5, 0.0)
        client.spin_for(2.0)
        rest = client.object[1]
        canceled: list[float] = []
        handles: list = []

        def cancel_in_lift(feedback) -> None:
            f = feedback.feedback
            if f.state == "lift" and f.lift >= 0.01 and not canceled:
                canceled.append(time.monotonic())
                handles[0].cancel_goal_async()

        goal = Pick.Goal(object_frame="grasp_object")
        handles.append(client.wait(client.pick.send_goal_async(goal, cancel_in_lift), 30.0))
        answer = client.wait(handles[0].get_result_async(), GOAL_TIMEOUT)
        assert canceled, "no lift feedback came to cancel on"
        assert answer.status == GoalStatus.STATUS_CANCELED, answer.status
        assert answer.result.outcome == Pick.Result.CANCELED, answer.result
        assert answer.result.state == "lift", answer.result
        client.spin_for(3.0)  # the arm holds where it stopped; a dropped object would be down
        wall, z = client.object
        assert wall > canceled[0] + 2.5 and z - rest > 0.01, (z, rest)
        for finger, (wall, force) in client.forces.items():
            assert wall > canceled[0] + 2.5 and force > TOUCH, (finger, force)

        # a goal past its time limit aborts (the fingers open, the arm backs off) and says why
        put_object(ros2, 0.5, 0.0)
        status, result = client.send(Pick.Goal(object_frame="grasp_object", time_limit=1.0))
        assert status == GoalStatus.STATUS_ABORTED, status
        assert result.outcome == Pick.Result.ABORTED and result.state == "aborted", result
        assert result.reason.startswith("time limit 1 s reached"), result
        assert result.duration >= 1.0, result
    finally:
        client.close()
