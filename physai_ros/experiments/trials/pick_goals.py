"""Many pick-and-place goals in one graph, over ROS: the Pick action's judged run as a bench.

Starts the graph ``ros2 launch physai_ros pick.launch.py sim:=true`` starts (``pick_graph``:
sim bridge paced at real time, TF publisher, pick node, each in a process of its own with the
product's parameters), waits for its start pick's outcome, then sends ``--goals`` goals to the
``/pick`` action from a client node here, as any user's client would. Before each goal the
cube is put at the next position of a deterministic walk over the ±``--half`` square around
the centre of the square the top-down grasp reaches (``PLACE_SQUARE``: 17.5–22.5 cm out,
±2.5 cm; the sim bridge's ``cube_x``/``cube_y`` parameters, then ``/sim/reset``);
with ``--place`` (the default) the goal also asks to put it down at a place drawn from the
reachable place square (``PLACE_SQUARE``, seeded by ``--seed``).

Each goal is judged twice: by the action's typed result (PLACED, or HELD without a place), and
by the simulation's truth, the sim bridge's own cube pose a second after the result: placed =
its centre within ``--tolerance`` of the place position on the table and upright (tilt under
10°); held = lifted at least the pick's ``min_lift``. The table gives both counts with their
Wilson 95 % intervals, how often they agree, and the place errors and durations::

    physai bench pick-goals --goals 20
    physai bench pick-goals --goals 5 --no-place --keep /tmp/pick_goals --json /tmp/goals.json
    physai bench pick-goals --table /tmp/goals.json
    physai bench pick-goals --franka fr3 --goals 10

``--franka panda|fr3`` runs the simulated Panda's pick under franka_ros2's names instead
(``pick.launch.py sim:=true robot:=panda franka:=…``: the Franka-shaped sim, the pick on the
profile's joints, controller, limits and franka_gripper Grasp), its cubes around the Panda's
place in config/scene.yaml and its places over ``PANDA_SQUARE``; with ``--stand-in`` the graph
``pick.launch.py sim:=false`` starts beside franka_ros2, the sim bridge standing in for the real
robot. Every run also reports how close what the arm controller followed (its
``controller_state`` reference, every goal's) came to the robot's velocity, acceleration and jerk
limits.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from physai_ros.core.motion.limits import followed_limit_use, load_limits
from physai_ros.errors import InvalidInput
from physai_ros.experiments.trials.force_runs import positions, wilson
from physai_ros.launching.graph import franka_stand_in, pick_graph
from physai_ros.robots.franka.names import franka_profile

HALF = 0.025  # [m] cube positions within ±2.5 cm of the reachable square's centre
TOLERANCE = 0.01  # [m] a placed cube's centre within this of the place position
MAX_TILT = 10.0  # [deg] and upright within this
GRAPH_UP = 150.0  # [s wall] the graph up and its start pick judged, on 2 loaded cores
GOAL_TIMEOUT = 120.0  # [s wall] one goal, sent to its result
# [m] x, y of the Panda's place centres: around its cube (config/scene.yaml), all reached top-down
PANDA_SQUARE = ((0.45, 0.55), (-0.08, 0.08))


@dataclass
class Goal:
    """One goal: cube start and place position [m], the result's outcome and reason, the truth
    (place error [cm], tilt [deg], lift [cm]) and the wall time it took [s]."""

    cube_x: float
    cube_y: float
    place_x: float
    place_y: float
    outcome: str
    reason: str
    truth: bool
    error_cm: float = math.nan
    tilt_deg: float = math.nan
    lift_cm: float = math.nan
    wall_s: float = math.nan


def table(goals: list[Goal], place: bool) -> str:
    """The summary (the result's verdict and the truth, each with its Wilson interval, their
    agreement, the error span) and one row per goal."""
    want = "placed" if place else "held"
    said = sum(g.outcome == want for g in goals)
    true = sum(g.truth for g in goals)
    agree = sum((g.outcome == want) == g.truth for g in goals)
    n = len(goals)
    (lo_s, hi_s), (lo_t, hi_t) = wilson(said, n), wilson(true, n)
    errors = [g.error_cm for g in goals if math.isfinite(g.error_cm)]
    span = f"{min(errors):.2f}–{max(errors):.2f}" if errors else "–"
    walls = [g.wall_s for g in goals if math.isfinite(g.wall_s)]
    lines = [
        f"| goals | {want} (result) | {want} (sim truth) | agree | place error cm | s per goal |",
        "|---|---|---|---|---|---|",
        f"| {n} | **{said}/{n}** [{lo_s:.2f}, {hi_s:.2f}] | **{true}/{n}** [{lo_t:.2f}, "
        f"{hi_t:.2f}] | {agree}/{n} | {span} | {np.median(walls) if walls else math.nan:.1f} |",
        "",
        "| cube x, y m | place x, y m | result | truth | error cm | tilt ° | lift cm | reason |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for g in goals:
        lines.append(
            f"| {g.cube_x:.4f}, {g.cube_y:.4f} | {g.place_x:.4f}, {g.place_y:.4f} | {g.outcome} "
            f"| {g.truth} | {g.error_cm:.2f} | {g.tilt_deg:.1f} | {g.lift_cm:.2f} | "
            f"{g.reason[:70]} |"
        )
    return "\n".join(lines)


class Client:
    """The bench's node: the /pick action client, the sim bridge's reset and parameters, the
    start pick's outcome and the cube's true pose (``cube_topic``: the sim bridge's
    ``cube_pose``, or its ``~/true_cube_pose`` when it stands in for a real robot)."""

    def __init__(
        self,
        context,
        outcome_topic: str = "",
        name: str = "pick_goals_bench",
        cube_topic: str = "/cube_pose",
    ) -> None:
        import rclpy
        from geometry_msgs.msg import PoseStamped
        from physai_ros_interfaces.action import Pick
        from physai_ros_interfaces.msg import PickOutcome
        from rcl_interfaces.srv import SetParameters
        from rclpy.action import ActionClient
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import DurabilityPolicy, QoSProfile
        from std_srvs.srv import Trigger

        from physai_ros import interfaces

        self.node = node = rclpy.create_node(name, context=context)
        self.pick = ActionClient(node, Pick, "/pick")
        self.reset_client = node.create_client(Trigger, interfaces.SIM_RESET)
        self.params = node.create_client(SetParameters, "/sim_bridge/set_parameters")
        self.outcome: dict | None = None  # the latest outcome's fields (``outcome_fields``)
        self.cube: tuple[float, np.ndarray, np.ndarray] | None = None  # wall, pos, quat wxyz
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        topic = outcome_topic or interfaces.PICK_OUTCOME
        node.create_subscription(PickOutcome, topic, self._outcome, latched)
        node.create_subscription(PoseStamped, cube_topic, self._cube, 10)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(node)

    def _outcome(self, msg) -> None:
        from physai_ros.nodes._pick_outcome import outcome_fields

        self.outcome = outcome_fields(msg)

    def _cube(self, msg) -> None:
        p, q = msg.pose.position, msg.pose.orientation
        self.cube = (time.monotonic(), np.array([p.x, p.y, p.z]), np.array([q.w, q.x, q.y, q.z]))

    def spin_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.05)

    def wait(self, future, timeout: float):
        self.executor.spin_until_future_complete(future, timeout_sec=timeout)
        if not future.done():
            raise TimeoutError(f"no answer within {timeout} s")
        return future.result()

    def start_outcome(self) -> dict:
        end = time.monotonic() + GRAPH_UP
        while self.outcome is None and time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.1)
        if self.outcome is None:
            raise TimeoutError(f"the graph's start pick published no outcome in {GRAPH_UP} s")
        return self.outcome

    def put_cube(self, x: float, y: float, what: str = "cube") -> None:
        """The cube (``what`` soft: the soft object) at (x, y) [m] on the table, the robot
        home: the bridge's parameters, then its reset; a second of fresh poses after."""
        from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
        from rcl_interfaces.srv import SetParameters
        from std_srvs.srv import Trigger

        def value(v: float) -> ParameterValue:
            return ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=float(v))

        if not self.params.wait_for_service(timeout_sec=30.0):
            raise TimeoutError("no /sim_bridge/set_parameters service")
        request = SetParameters.Request(
            parameters=[
                Parameter(name=f"{what}_x", value=value(x)),
                Parameter(name=f"{what}_y", value=value(y)),
            ]
        )
        answer = self.wait(self.params.call_async(request), 30.0)
        refused = [r.reason for r in answer.results if not r.successful]
        if refused:
            raise InvalidInput(f"the sim bridge refused the {what} position: {refused}")
        if not self.reset_client.wait_for_service(timeout_sec=30.0):
            raise TimeoutError("no /sim/reset service")
        if not self.wait(self.reset_client.call_async(Trigger.Request()), 30.0).success:
            raise RuntimeError("/sim/reset failed")
        self.spin_for(1.0)

    def send(self, goal, timeout: float = GOAL_TIMEOUT):
        """Send ``goal``; its (status, result) within ``timeout`` [s wall]."""
        if not self.pick.wait_for_server(timeout_sec=30.0):
            raise TimeoutError("no /pick action server")
        handle = self.wait(self.pick.send_goal_async(goal), 30.0)
        answer = self.wait(handle.get_result_async(), timeout)
        return answer.status, answer.result

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()


class FollowedReference:
    """What an arm controller follows, from its ``controller_state``: the reference it
    commands, with velocities and accelerations (50 Hz by ros2_controllers' default), each
    sample with its stamp [s]."""

    def __init__(self, node, controller: str) -> None:
        from control_msgs.msg import JointTrajectoryControllerState

        from physai_ros import interfaces

        self.samples: list[tuple[float, list[float], list[float]]] = []  # t, qd, qdd
        topic = "/" + interfaces.under(controller, interfaces.CONTROLLER_STATE)
        node.create_subscription(JointTrajectoryControllerState, topic, self._on, 100)

    def _on(self, msg) -> None:
        r, stamp = msg.reference, msg.header.stamp
        t = stamp.sec + stamp.nanosec * 1e-9
        self.samples.append((t, list(r.velocities), list(r.accelerations)))

    def use(self, limits) -> dict[str, float]:
        """The largest share of each limit any joint reached (``followed_limit_use``)."""
        t, qd, qdd = zip(*self.samples, strict=True) if self.samples else ((), (), ())
        return followed_limit_use(np.array(t), np.array(qd), np.array(qdd), limits)


def tilt_deg(quat_wxyz: np.ndarray) -> float:
    """The angle [deg] between a body's z axis and the world's."""
    _, x, y, _ = quat_wxyz / np.linalg.norm(quat_wxyz)
    cos = 1.0 - 2.0 * (x * x + y * y)
    return math.degrees(math.acos(max(-1.0, min(1.0, cos))))


def robot_squares(franka: str) -> tuple[tuple[float, float], tuple[tuple[float, float], ...]]:
    """Where the cubes' walk is centred [m] and the square the places are drawn from: the
    SO-101's reachable square, or (``franka`` not none) the Panda's cube and ``PANDA_SQUARE``."""
    from physai_ros.experiments.lesson16.place import PLACE_SQUARE
    from physai_ros.sim.scene import load_scene_config

    if franka == "none":
        (x0, x1), (y0, y1) = PLACE_SQUARE  # where the top-down grasp reaches: picks and places
        return ((x0 + x1) / 2, (y0 + y1) / 2), PLACE_SQUARE
    x, y = load_scene_config()["robots"]["panda"]["cube_pos"][:2]
    return (float(x), float(y)), PANDA_SQUARE


def one_goal(
    client: Client, cube: tuple[float, float], place: np.ndarray | None, robot: str = ""
) -> Goal:
    """Put the cube, send the goal, judge it by its result and by the sim's truth. ``robot``
    given: the goal says where the cube was put (``object_pose``, world), as a user of a real
    arm does; else it names the cube's TF frame, which the simulation publishes."""
    from geometry_msgs.msg import PoseStamped
    from physai_ros_interfaces.action import Pick

    from physai_ros.config import node_tree
    from physai_ros.nodes._pick_outcome import outcome_name
    from physai_ros.sim.scene import placed_cube_world

    client.put_cube(*cube)
    rest = client.cube[1].copy() if client.cube is not None else np.full(3, math.nan)
    goal = Pick.Goal(object_frame="" if robot else "cube", time_limit=GOAL_TIMEOUT - 10.0)
    if robot:
        goal.object_pose.header.frame_id = "world"
        at = goal.object_pose.pose.position
        at.x, at.y, at.z = (float(v) for v in placed_cube_world(robot, cube))
    if place is not None:
        target = PoseStamped()
        target.header.frame_id = "world"
        target.pose.position.x, target.pose.position.y = float(place[0]), float(place[1])
        target.pose.position.z = float(place[2])
        goal.place, goal.place_pose = True, target
    began = time.monotonic()
    try:
        _, result = client.send(goal)
        outcome, reason = outcome_name(result.outcome), str(result.reason)
    except TimeoutError as exc:
        outcome, reason = "no result", str(exc)
    wall = time.monotonic() - began
    client.spin_for(1.0)  # the cube comes to rest where it is left
    px, py = (math.nan, math.nan) if place is None else (float(place[0]), float(place[1]))
    row = Goal(cube[0], cube[1], px, py, outcome, reason, False, wall_s=wall)
    if client.cube is None or client.cube[0] < time.monotonic() - 0.5:
        row.reason += " (no fresh cube pose from the sim bridge: judged not done)"
        return row
    pos, quat = client.cube[1], client.cube[2]
    row.tilt_deg = tilt_deg(quat)
    row.lift_cm = 100.0 * float(pos[2] - rest[2])
    if place is not None:
        row.error_cm = 100.0 * float(np.linalg.norm(pos - place))
        row.truth = row.error_cm <= 100.0 * TOLERANCE and row.tilt_deg < MAX_TILT
    else:
        min_lift = float(node_tree("pick.yaml")["min_lift"])
        row.truth = row.lift_cm >= 100.0 * min_lift
    return row


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--goals", type=int, default=20, help="goals sent to the one graph")
    parser.add_argument(
        "--half", type=float, default=HALF, help="half side of the cube's square [m]"
    )
    parser.add_argument(
        "--no-place", dest="place", action="store_false", help="pick and hold (no place pose)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the place positions")
    parser.add_argument(
        "--franka",
        choices=("none", "panda", "fr3"),
        default="none",
        help="none: the SO-101; panda | fr3: the simulated Panda under franka_ros2's names",
    )
    parser.add_argument(
        "--stand-in",
        action="store_true",
        help="with --franka: the graph pick.launch.py sim:=false starts beside franka_ros2, "
        "the sim bridge standing in for the real robot (goals give the cube's position)",
    )
    parser.add_argument("--domain", type=int, default=83, help="ROS_DOMAIN_ID of the graph")
    parser.add_argument("--keep", type=Path, default=None, help="keep the node logs here")
    parser.add_argument("--json", type=Path, default=None, help="write every goal's numbers here")
    parser.add_argument(
        "--table", type=Path, default=None, help="print the table of a --json file; run nothing"
    )


def run(args: argparse.Namespace) -> int:
    if args.goals < 1:
        raise InvalidInput(f"--goals must be at least 1, got {args.goals}")
    if args.stand_in and args.franka == "none":
        raise InvalidInput("--stand-in stands in for a real Franka: give --franka panda|fr3")
    if not 0.0 <= args.half <= HALF:
        raise InvalidInput(
            f"--half must be in [0, {HALF}] m (the reachable square), got {args.half}"
        )
    if args.table is not None:
        rows = [Goal(**row) for row in json.loads(args.table.read_text())]
        print(table(rows, place=all(math.isfinite(g.place_x) for g in rows)))
        return 0
    import rclpy
    from tqdm import tqdm

    from physai_ros.experiments.lesson16.place import square_places
    from physai_ros.launching.bringup import start, stop

    os.environ["ROS_DOMAIN_ID"] = str(args.domain)
    robot = "so101" if args.franka == "none" else "panda"
    if args.stand_in:  # the real-robot graph, and the simulated robot standing in for it
        specs = [*pick_graph(robot, sim=False, franka=args.franka), franka_stand_in(args.franka)]
    else:
        specs = pick_graph(robot, sim=True, franka=args.franka)
    os.environ.update(specs[0].env)  # this client discovers as the graph does
    centre, square = robot_squares(args.franka)
    cubes = positions(args.goals, centre, lambda x, y: True, args.half)
    places = square_places(args.goals, args.seed, square) if args.place else [None] * args.goals
    load = os.getloadavg()
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {load[0]:.1f}, "
          f"{os.cpu_count()} cores; {args.goals} goals in one {robot} graph, franka "
          f"{args.franka}{', stand-in' if args.stand_in else ''}", file=sys.stderr)  # fmt: skip
    context = rclpy.Context()
    rclpy.init(context=context)
    goals: list[Goal] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="pick-goals-") as tmp:
        base = args.keep or Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        truth = "/sim_bridge/true_cube_pose" if args.stand_in else "/cube_pose"
        client = Client(context, cube_topic=truth)  # first: it sees the start pick's outcome
        profile = franka_profile(args.franka)
        followed = FollowedReference(client.node, profile.arm_controller)
        procs = start(specs, base)
        try:
            first = client.start_outcome()
            tqdm.write(f"start pick: {first['outcome']}")
            client.spin_for(1.0)  # its last arm goal ends (as after every goal) before a reset
            for cube, place in tqdm(list(zip(cubes, places, strict=True)), unit="goal"):
                goals.append(one_goal(client, cube, place, robot if args.stand_in else ""))
                g = goals[-1]
                tqdm.write(f"goal {len(goals)}: {g.outcome} (truth {g.truth}, {g.error_cm:.2f} cm)")
                if args.json is not None:
                    args.json.write_text(json.dumps([asdict(r) for r in goals], indent=1))
        finally:
            client.close()
            stop(procs)
            rclpy.shutdown(context=context)
    print(table(goals, args.place))
    if followed.samples:
        limits = load_limits(profile.limits or robot)
        use = followed.use(limits)
        shares = ", ".join(f"{name} {share * 100:.1f} %" for name, share in use.items())
        print(f"\nwhat {profile.arm_controller} followed ({len(followed.samples)} samples of its "
              f"controller_state): at most {shares} of the '{limits.set_name}' limits")  # fmt: skip
    print(f"\nload {load[0]:.1f} at start, {os.getloadavg()[0]:.1f} at end; "
          f"{time.monotonic() - started:.0f} s for {len(goals)} goals")  # fmt: skip
    return 0
