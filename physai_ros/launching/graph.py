"""The node graphs, defined once for both ways of starting them.

``launch/*.launch.py`` (launch_ros, on a ROS 2 install) and ``physai bringup`` (where
launch_ros is absent: pip-only installs, CI) both build their process lists from these
functions, so the nodes, their names and their parameters cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from physai_ros import interfaces
from physai_ros.config import node_tree
from physai_ros.core.motion.limits import load_limits
from physai_ros.errors import InvalidInput
from physai_ros.robots.franka.names import (
    ERROR_RECOVERY,
    FRANKA_PROFILES,
    PANDA_SILENCE_HINT,
    franka_profile,
)


@dataclass(frozen=True)
class NodeSpec:
    """One node of a graph: ``executable`` is both the console entry point
    (``ros2 run physai_ros <executable>``) and the module ``physai_ros.nodes.<executable>``;
    ``env``: environment variables the node's process gets (discovery range); ``namespace``:
    the node's namespace ('' = the root; the launch files push it with ``PushRosNamespace``);
    ``remaps``: name remappings (from → to) of the node, as ``--ros-args -r from:=to``."""

    executable: str
    name: str
    parameters: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    namespace: str = ""
    remaps: dict[str, str] = field(default_factory=dict)

    @property
    def module(self) -> str:
        return f"physai_ros.nodes.{self.executable}"

    @property
    def full_name(self) -> str:
        """``/<namespace>/<name>``: the node as ``ros2 node list`` shows it."""
        return f"/{self.namespace}/{self.name}" if self.namespace else f"/{self.name}"


ROBOTS = ("so101", "panda")


def _check_robot(robot: str) -> None:
    if robot not in ROBOTS:
        raise InvalidInput(f"unknown robot {robot!r}; choose one of {ROBOTS}")


def demo_graph(robot: str = "so101", use_sim_time: bool = True) -> list[NodeSpec]:
    """The smallest end-to-end graph: the simulated robot publishing joint states and /clock,
    and the TF publisher turning them into the frame tree."""
    _check_robot(robot)
    common = {"robot": robot, "use_sim_time": use_sim_time}
    return [
        NodeSpec("sim_bridge", "sim_bridge", {"robot": robot}),
        NodeSpec("tf_publisher", "tf_publisher", common),
    ]


DISCOVERY = ("localhost", "subnet")
"""Who may talk to a real arm's graph: ``localhost`` (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST,
only processes on this computer) or ``subnet`` (ROS's default: every host on the network with
the same ROS_DOMAIN_ID -- opt in to run RViz or the planner on a second computer)."""


def discovery_env(discovery: str) -> dict[str, str]:
    if discovery not in DISCOVERY:
        raise InvalidInput(f"discovery must be one of {DISCOVERY}, got {discovery!r}")
    return {"ROS_AUTOMATIC_DISCOVERY_RANGE": discovery.upper()}


FRANKA_GRIPPER = "franka_gripper"
"""Where the Panda pick's sim bridge serves franka_gripper's actions (franka_ros2 v2.0 on; the
pick's ``panda.gripper_action`` and ``panda.grasp_action`` in config/pick.yaml name them)."""


def pick_graph(
    robot: str = "so101",
    sim: bool = True,
    *,
    cube_x: float | None = None,
    cube_y: float | None = None,
    cube_mu: float = 1.0,
    cube_mass: float = 0.03,
    jaw_torque_cap: float | None = None,
    real_time_factor: float = 1.0,
    model_path: str = "",
    port: str = "/dev/ttyACM0",
    calibration_file: str = "",
    autostart: bool = True,
    discovery: str = "localhost",
    limits_set: str = "",
    start_pick: bool = True,
    cameras: str = "",
    record: str = "",
    image_topics: str = "",
    franka: str = "none",
) -> list[NodeSpec]:
    """The pick: a robot (sim bridge, or the real SO-101 driver), the TF publisher and the pick
    (and, with ``record``, the dataset recorder).

    robot: ``so101``, or ``panda`` (the Franka Hand through franka_gripper's actions, served
    in the simulation by the sim bridge under ``FRANKA_GRIPPER``; config/pick.yaml ``panda``;
    a real one under franka_ros2, ``franka``).
    cube_x, cube_y: cube centre in the base frame [m] (None: the robot's place in
    config/scene.yaml); cube_mu: its friction; cube_mass [kg]; jaw_torque_cap: gripper cap
    [N m SO-101 | N Panda], both the sim actuator's and the pick's GripperCommand max_effort
    (None: the model's and config/pick.yaml's); real_time_factor: sim pacing (0 = as fast as
    possible); port, calibration_file: the real arm's serial port and LeRobot calibration ("" =
    LeRobot's default path); autostart: the driver configures and activates itself (false: use
    ``ros2 lifecycle set``); discovery: who may reach the real arm's graph (``DISCOVERY``).
    limits_set: the joint-limit set of ``config/limits_<robot>.yaml`` the pick times its moves
    within; on the real arm the driver checks goals against the same set ("" = the driver's
    configured ``limits_set``, config/so101_driver.yaml), so the two always agree; in sim ""
    is the file's default set. An unknown set is refused here, before anything starts.
    start_pick: the pick node picks the configured cube once at start (its ``autostart``);
    false: it waits for goals on the ``/pick`` action. cameras: the simulated cameras whose
    images the sim bridge publishes (its ``cameras.names``: ``front_cam,wrist_cam``; "" = none).
    record: a folder: the dataset recorder writes every pick there as a LeRobot episode, with
    the simulated cameras' images (published at the dataset's frame rate) or, on the real arm,
    ``image_topics`` (comma-separated, any camera driver's); "" = no recorder.
    franka: with the simulated Panda, franka_ros2's names (``panda`` or ``fr3``, as
    ``trajectory_graph``): the bridge Franka-shaped under that profile, the pick and the TF
    publisher on its joint and controller names; ``fr3`` also the FR3's limits, and the robot
    error the bridge can inject with the pick's ``~/recover`` (franka_ros2 v3.4's recovery).
    On the real arm the cube's pose is not measured unless a detector or motion capture
    publishes it: the pick is given where it was placed (``cube_position``, from cube_x,
    cube_y) and judges the outcome from the robot's own measurements.
    """
    _check_robot(robot)
    profile = franka_profile(franka)
    if franka != "none" and robot != "panda":
        raise InvalidInput(f"franka={franka!r} needs robot 'panda', not {robot!r}")
    if robot == "panda" and not sim and franka == "none":
        raise InvalidInput(
            "a real Panda runs under franka_ros2: name its robot, franka:=panda (franka_ros2 "
            "v0.1.13) or franka:=fr3 (v3.4)"
        )
    if robot not in ("so101", "panda") and not sim:
        raise InvalidInput(f"the pick runs a real 'so101' or 'panda', not {robot!r}")
    if cameras and not sim:
        raise InvalidInput(
            f"cameras {cameras!r} are the simulation's: a real arm's images come from its own "
            "camera driver (the dataset recorder takes any sensor_msgs/Image topic)"
        )
    from physai_ros.sim.scene import load_scene_config, placed_cube_world

    placement = load_scene_config()["robots"][robot]
    cube_x = float(placement["cube_pos"][0] if cube_x is None else cube_x)
    cube_y = float(placement["cube_pos"][1] if cube_y is None else cube_y)
    cap = {} if jaw_torque_cap is None else {"jaw_torque_cap": float(jaw_torque_cap)}
    shared = {"robot": robot, "model_path": model_path}
    # the sim's jaw wrenches carry the full contact force: a place senses the jaws' load too
    pick = {**shared, "use_sim_time": sim, "place_load": sim, "autostart": bool(start_pick), **cap}
    if not sim and not limits_set and robot == "so101":  # the driver's own set, named, so the
        limits_set = str(node_tree("so101_driver.yaml")["limits_set"])  # pick's is the same
    if limits_set:
        load_limits(profile.limits or robot, limits_set)  # InvalidInput naming the valid sets
        pick["limits_set"] = limits_set
    env: dict[str, str] = {}
    tf = {**shared, "use_sim_time": sim}
    if franka != "none":
        pick |= franka_pick(franka)
        tf["joint_prefix"] = profile.joint_prefix
    if sim:
        driver = NodeSpec(
            "sim_bridge",
            "sim_bridge",
            {
                **shared,
                # float(): a ROS double parameter refuses an integer such as `1`.
                "real_time_factor": float(real_time_factor),
                "cube_x": cube_x,
                "cube_y": cube_y,
                "cube_mu": float(cube_mu),
                "cube_mass": float(cube_mass),
                **cap,
                **({"franka_profile": franka} if franka != "none" else {}),
                # the plain simulated Panda's hand under franka_gripper's v2+ name (a profile
                # names it itself)
                **(
                    {"franka_gripper": FRANKA_GRIPPER}
                    if (robot, franka) == ("panda", "none")
                    else {}
                ),
                **({"cameras.names": cameras} if cameras else {}),
                **({"cameras_rate": float(RECORD_FPS)} if cameras and record else {}),
            },
        )
    elif robot == "panda":  # franka_ros2 runs the robot: the trajectory node stands before it
        pick["cube_position"] = [float(v) for v in placed_cube_world(robot, (cube_x, cube_y))]
        env = discovery_env(discovery)
        pick["arm_action"] = FRANKA_PICK_ACTION
        pick["jaw_contact"] = False  # a Franka Hand measures no contact: its width judges
        pick["ros.chain_gap"] = FRANKA_CHAIN_GAP
        pick["ros.stop_lead"] = FRANKA_STOP_LEAD
        # a stiff arm: released at the place's height, never pressed onto the table to sense it
        pick["place.sense_support"] = False
        driver = trajectory_graph(robot, sim=False, franka=franka, limits_set=limits_set or None)[0]
        driver = replace(driver, env=env)
    else:
        world = placed_cube_world(robot, (cube_x, cube_y))
        pick["cube_position"] = [float(v) for v in world]  # world frame [m]
        env = discovery_env(discovery)
        driver = NodeSpec(
            "so101_driver",
            "so101_driver",
            {
                "port": port,
                "calibration_file": calibration_file,
                "autostart": bool(autostart),
                "limits_set": limits_set,
            },
            env,
        )
    nodes = [
        driver,
        NodeSpec("tf_publisher", "tf_publisher", tf, env),
        NodeSpec("pick", "pick", pick, env),
    ]
    if record:
        if robot != "so101":
            raise InvalidInput(
                f"record: datasets are of the SO-101 (LeRobot's so101_follower), not {robot!r}"
            )
        if sim and image_topics:
            raise InvalidInput("image_topics are a real arm's; in sim:=true name the cameras")
        images = image_topics or ",".join(
            f"{name.strip()}/image_raw" for name in cameras.split(",") if name.strip()
        )
        recorder = {"output": record, "fps": RECORD_FPS, "image_topics": images}
        nodes.append(
            NodeSpec("dataset_recorder", "dataset_recorder", {**recorder, "use_sim_time": sim}, env)
        )
    return nodes


RECORD_FPS = 30  # [Hz] a recorded dataset's frames: LeRobot's default for the SO-101
SIM_STREAM_GRACE = 0.05
"""[s sim time] the simulated arm's stream deadman in the policy graph (the controller's default
is 0.02 s): the runner's frame clock is sim time, which arrives in /clock's 10 ms steps, and a
Python process rendering-bound beside the physics is tens of ms late now and then; at 0.02 s
one frame in ten tripped the deadman on a busy two-core machine. Braking at full acceleration
still holds a 1.5 rad/s joint within 0.09 s of the target that did not come."""


def policy_cameras(policy: str) -> dict[str, tuple[int, int]]:
    """The cameras a LeRobot pretrained folder's policy reads, by name, with the image size
    (width, height) [px] it was trained on: its ``config.json``'s image input features (plain
    JSON, read without LeRobot). None for ``replay``, and none for a folder without one (the
    runner then says what is wrong)."""
    import json

    config = Path(policy).expanduser() / "config.json"
    if policy in ("", "replay") or not config.is_file():
        return {}
    features = json.loads(config.read_text()).get("input_features") or {}
    prefix = "observation.images."
    return {
        key[len(prefix) :]: (int(spec["shape"][2]), int(spec["shape"][1]))
        for key, spec in features.items()
        if key.startswith(prefix)
    }


def policy_graph(
    policy: str = "",
    dataset: str = "",
    episode: int = 0,
    repo_id: str = "local/so101_pick",
    sim: bool = True,
    mode: str = "",
    fps: float = 0.0,
    duration: float = 0.0,
    device: str = "cpu",
    image_topics: str = "",
    cube_x: float | None = None,
    cube_y: float | None = None,
    real_time_factor: float = 1.0,
    port: str = "/dev/ttyACM0",
    calibration_file: str = "",
    autostart: bool = True,
    limits_set: str = "",
    discovery: str = "localhost",
) -> list[NodeSpec]:
    """A LeRobot policy (``policy``: a pretrained_model folder) or a dataset episode's actions
    (``policy="replay"``, ``dataset``, ``episode``) driving the SO-101 through its arm
    controller's stream: the robot and the TF publisher as ``pick_graph`` starts them (the
    simulated arm, or the real one's driver), and the policy runner. mode: the stream mode
    (``staircase`` | ``linear`` | ``limited``; "" = the controller's default). In the
    simulation the cameras the policy reads are rendered at the size it was trained on and
    at the policy's rate; on the real arm ``image_topics`` name its camera driver's images.
    """
    cameras = policy_cameras(policy)
    if cameras and not sim and not image_topics:
        raise InvalidInput(
            f"the policy reads cameras {sorted(cameras)}: on the real arm name their "
            "sensor_msgs/Image topics in image_topics"
        )
    if sim and image_topics:
        raise InvalidInput("image_topics are a real arm's; the simulation renders the cameras")
    if len(set(cameras.values())) > 1:
        raise InvalidInput(
            f"the policy's cameras have different image sizes {cameras}: the simulation "
            "renders one size"
        )
    robot, *rest = pick_graph(
        robot="so101",
        sim=sim,
        cube_x=cube_x,
        cube_y=cube_y,
        real_time_factor=real_time_factor,
        port=port,
        calibration_file=calibration_file,
        autostart=autostart,
        limits_set=limits_set,
        discovery=discovery,
        start_pick=False,
        cameras=",".join(cameras),
    )
    extra: dict[str, Any] = {"arm_controller.stream.mode": mode} if mode else {}
    if fps:  # the controller interpolates over the period it expects between targets
        extra["arm_controller.stream.rate"] = float(fps)
    if sim:  # sim time reaches the runner in /clock's 10 ms steps, on top of its own latency
        extra["arm_controller.stream.grace"] = SIM_STREAM_GRACE
    if cameras and sim:
        width, height = next(iter(cameras.values()))
        rate = float(fps or RECORD_FPS)
        extra |= {"cameras.width": width, "cameras.height": height, "cameras_rate": rate}
    robot = replace(robot, parameters={**robot.parameters, **extra})
    tf = next(spec for spec in rest if spec.name == "tf_publisher")
    images = image_topics or ",".join(f"{name}/image_raw" for name in cameras)
    runner = {
        "policy": policy,
        "dataset": dataset,
        "repo_id": repo_id,
        "episode": int(episode),
        "fps": float(fps),
        "duration": float(duration),
        "device": device,
        "image_topics": images,
        "use_sim_time": sim,
    }
    return [robot, tf, NodeSpec("policy_runner", "policy_runner", runner, tf.env)]


def teleop_graph(
    leader_port: str = "/dev/ttyACM1",
    leader_id: str = "leader",
    leader_calibration_file: str = "",
    sim: bool = True,
    mode: str = "",
    fps: float = 60.0,
    record: str = "",
    cameras: str = "",
    image_topics: str = "",
    cube_x: float | None = None,
    cube_y: float | None = None,
    real_time_factor: float = 1.0,
    port: str = "/dev/ttyACM0",
    calibration_file: str = "",
    autostart: bool = True,
    limits_set: str = "",
    discovery: str = "localhost",
) -> list[NodeSpec]:
    """A leader SO-101 on ``leader_port`` driving the follower through its arm controller's
    stream: the follower and the TF publisher as ``pick_graph`` starts them (the simulated arm,
    or the real one's driver on ``port``), and the teleop node. mode: the stream mode ("" = the
    controller's default). record: a folder: the dataset recorder writes an episode per
    ``/dataset_recorder/start_episode`` … ``end_episode``, its action the leader's pose (as
    LeRobot records teleoperation), with the simulated ``cameras``' images or, on the real arm,
    ``image_topics``."""
    robot, *rest = pick_graph(
        robot="so101",
        sim=sim,
        cube_x=cube_x,
        cube_y=cube_y,
        real_time_factor=real_time_factor,
        port=port,
        calibration_file=calibration_file,
        autostart=autostart,
        limits_set=limits_set,
        discovery=discovery,
        start_pick=False,
        cameras=cameras,
        record=record,
        image_topics=image_topics,
    )
    extra: dict[str, Any] = {"arm_controller.stream.mode": mode} if mode else {}
    # the controller interpolates over the period it expects between targets: the leader's
    extra["arm_controller.stream.rate"] = float(fps)
    extra["arm_controller.stream.grace"] = TELEOP_STREAM_GRACE
    robot = replace(robot, parameters={**robot.parameters, **extra})
    tf = next(spec for spec in rest if spec.name == "tf_publisher")
    teleop = {
        "leader_port": leader_port,
        "leader_id": leader_id,
        "leader_calibration_file": leader_calibration_file,
        "fps": float(fps),
        "use_sim_time": sim,
    }
    recorders = [
        replace(spec, parameters={**spec.parameters, "action_topic": TELEOP_ACTION})
        for spec in rest
        if spec.name == "dataset_recorder"
    ]
    return [robot, tf, *recorders, NodeSpec("teleop", "teleop", teleop, tf.env)]


TELEOP_ACTION = "leader/joint_states"  # the teleop node's leader pose: a recording's action
TELEOP_STREAM_GRACE = 0.05
"""[s] the follower's stream deadman in teleoperation, on both backends (the controller's default
is 0.02 s): each target waits on a read of the leader's bus, whose Feetech SDK polls for the
reply, so on a busy computer a frame is tens of ms late now and then, and at 0.02 s the follower
paused for a hold and a fresh blend-in several times a minute (two emulated arms on two cores).
A stopped stream still holds within 0.09 s of the target that did not come."""


ARMS = {"left": 0.2, "right": -0.2}
"""The two-arm pick's namespaces and each arm's base y in the world [m]: 0.4 m apart, the
SO-101's reach (≈ 0.3 m at table height) keeping them clear of each other."""


def two_arm_graph(
    cubes: dict[str, tuple[float, float]] | None = None,
    *,
    real_time_factor: float = 1.0,
    cube_mu: float = 1.0,
    cube_mass: float = 0.03,
) -> list[NodeSpec]:
    """Two simulated SO-101 side by side, each the whole ``pick_graph(sim=True)`` in its own
    namespace (``left``, ``right``: ``/left/joint_states``, ``/left/pick/outcome`` …), its frames
    under ``<arm>/`` in the one shared TF tree, its base at ``ARMS[arm]`` on the world's y axis,
    picking its own cube (``cubes[arm]``: x, y in its base frame [m]).

    Each arm has its own MuJoCo world (a sim bridge per arm), hence its own sim clock: the
    bridge's ``/clock`` is remapped to ``/<arm>/clock`` for the arm's nodes, so neither arm's
    nodes see time jump back and forth between two clocks."""
    cubes = {arm: (0.22, 0.0) for arm in ARMS} if cubes is None else cubes
    if set(cubes) != set(ARMS):
        raise InvalidInput(f"cubes must name exactly the arms {sorted(ARMS)}, got {sorted(cubes)}")
    specs = []
    for arm, base_y in ARMS.items():
        x, y = cubes[arm]
        graph = pick_graph(
            cube_x=x, cube_y=y, cube_mu=cube_mu, cube_mass=cube_mass,
            real_time_factor=real_time_factor,
        )  # fmt: skip
        placement = {"base_pos": [0.0, base_y, 0.0]}
        frames = {"frame_prefix": f"{arm}/"}
        extra = {
            "sim_bridge": placement,
            "tf_publisher": placement | frames,
            "pick": placement | frames,
        }
        for spec in graph:
            specs.append(
                NodeSpec(
                    spec.executable,
                    spec.name,
                    spec.parameters | extra[spec.name],
                    spec.env,
                    namespace=arm,
                    remaps={interfaces.CLOCK: f"/{arm}{interfaces.CLOCK}"},
                )
            )
    return specs


def emulator_spec(
    port_link: str,
    calibration_file: str,
    *,
    cube_x: float = 0.22,
    cube_y: float = 0.0,
    discovery: str = "localhost",
    name: str = "so101_emulator",
    **emulator: Any,
) -> NodeSpec:
    """The Feetech bus emulator standing in for a real SO-101: it serves the servos on a pty
    kept behind ``port_link`` and writes the arm's LeRobot calibration to
    ``calibration_file`` -- the real-arm graph (``pick_graph(sim=False, port=port_link,
    calibration_file=...)``) then runs unchanged; only the serial port is emulated.
    ``emulator`` sets more of its parameters (faults at start, ``mocap``, ``leader``); name:
    the node's (a second emulator, a leader, needs its own)."""
    params = {
        "link": port_link,
        "calibration_out": calibration_file,
        "cube_pos": [float(cube_x), float(cube_y)],
        **emulator,
    }
    return NodeSpec("so101_emulator", name, params, discovery_env(discovery))


def franka_stand_in(franka: str, discovery: str = "localhost") -> NodeSpec:
    """The sim bridge standing in for a real Panda or FR3 under franka_ros2 (``franka``: its
    profile) beside the graph ``pick_graph(sim=False, franka=franka)`` starts, which then runs
    unchanged: the robot's names, controllers, franka_gripper and (FR3) robot errors, its stamps
    on wall time, and nothing a real Franka does not measure (``stand_in``)."""
    franka_profile(franka)  # InvalidInput naming the profiles
    if franka == "none":
        raise InvalidInput("a stand-in for a real Franka needs its profile: panda or fr3")
    params = {"robot": "panda", "franka_profile": franka, "stand_in": True}
    return NodeSpec("sim_bridge", "sim_bridge", params, discovery_env(discovery))


def emulated_pick_graph(
    directory: Path, cube: tuple[float, float] = (0.22, 0.0), **graph: Any
) -> tuple[list[NodeSpec], NodeSpec]:
    """The real-arm pick graph (``pick_graph(sim=False, ...)``, more of its arguments in
    ``graph``) on the bus emulator: its port and calibration file in ``directory``, the cube at
    ``cube`` (base frame [m]) for both; the graph's specs and the emulator's (with no
    parameters of its own beyond those: add them to its ``parameters``)."""
    port, cal = str(directory / "port"), str(directory / "cal.json")
    x, y = (float(v) for v in cube)
    specs = pick_graph(sim=False, port=port, calibration_file=cal, cube_x=x, cube_y=y, **graph)
    return specs, emulator_spec(port, cal, cube_x=x, cube_y=y)


def franka_pick(franka: str) -> dict[str, Any]:
    """The pick's parameters for franka_ros2's robot ``franka`` (panda | fr3): its joint,
    controller and gripper names, its limits, and (FR3: franka_ros2 v3.x) the error recovery
    ``~/recover`` runs, or (Panda: v0.1.13, which ends on a robot error) what its silence means."""
    profile = franka_profile(franka)
    gripper = profile.franka_gripper
    params: dict[str, Any] = {
        "joint_prefix": profile.joint_prefix,
        "arm_controller": profile.arm_controller,
        "limits_robot": profile.limits,
        "close_mode": "force",  # one franka_gripper Grasp of the object's width, judged by it
        "panda.gripper_action": f"{gripper}/gripper_action",
        "panda.grasp_action": f"{gripper}/grasp",
    }
    if franka == "fr3":
        params["recovery.error_recovery"] = ERROR_RECOVERY
    else:  # franka_ros2 v0.1.13 ends on a robot error: the pick learns it as silence
        params["silence_hint"] = PANDA_SILENCE_HINT
    return params


def franka_action(profile: str) -> str:
    """The FollowJointTrajectory action of franka_ros2's arm controller for ``profile``."""
    controller = franka_profile(profile).arm_controller
    return "/" + interfaces.under(controller, interfaces.FOLLOW_JOINT_TRAJECTORY)


FRANKA_CONTROLLER_ACTION = franka_action("panda")
"""franka_ros2's Panda arm controller (``panda_ros_controllers.yaml``: a
joint_trajectory_controller named ``panda_arm_controller`` on joints ``panda_joint1..7``).
FR3 releases name it ``fr3_arm_controller`` on ``fr3_joint1..7`` (``franka="fr3"``)."""

FRANKA_JOINT_PREFIX = FRANKA_PROFILES["panda"].joint_prefix
"""franka_ros2 names the Panda's joints ``panda_joint1``…; our limits file says ``joint1``…"""


FRANKA_PICK_ACTION = "/" + interfaces.under("trajectory", interfaces.FOLLOW_JOINT_TRAJECTORY)
"""Where the pick on a real Franka sends its arm goals: the trajectory node's action, which
checks each against libfranka's limits (jerk included, as the controller follows it) before
franka_ros2's arm controller gets it."""

FRANKA_CHAIN_GAP = 0.2
"""[s] the pick's ``ros.chain_gap`` before a real Franka: the trajectory node sends each chained
arm goal once the one before has ended (its result in), and this leaves it the time to do so
by the goal's stamp, so the arm runs each phase when the pick planned it."""

FRANKA_STOP_LEAD = 0.2
"""[s] the pick's ``ros.stop_lead`` before a real Franka, for a place that senses support (the
graph's ``place.sense_support`` false releases at the place height instead; a user may turn it
back on): a place's stop on sensed support goes through the trajectory node, which plans it
from where the descent will be as the controller gets it; the controller joins it from there
to its stamp, and at the direct controller's 0.1 s the relay's tens of ms left a join too short
for libfranka's acceleration limit."""

FRANKA_FIRST_POINT = 0.1
"""[s] the trajectory node's ``first_point`` in front of franka_ros2 (and the Franka-shaped sim
that stands in for it): its controller starts a goal from the state it measures then, and an
arm still settling by a fraction of a mrad, joined to a first sample 10 ms in, leaves
libfranka's acceleration limit; over 0.1 s the join is gentle."""


def trajectory_graph(
    robot: str = "panda", sim: bool = True, franka: str = "none", **trajectory: Any
) -> list[NodeSpec]:
    """The trajectory node, with the sim bridge and TF publisher when ``sim``, or alone, pointed
    at franka_ros2's controller, on a real Panda. ``trajectory`` overrides the trajectory node's
    parameters (shape, duration, controller_action, joint_prefix, limits_set, …).

    franka: franka_ros2's names (``physai_ros.robots.franka.names``): in sim, ``panda`` or ``fr3``
    makes the
    bridge Franka-shaped and points the trajectory node at it; on a real robot it says which
    franka_ros2 robot runs (``none`` = ``panda``), fr3 also choosing the FR3's limits."""
    _check_robot(robot)
    profile = franka_profile(franka)
    if franka != "none" and robot != "panda":
        raise InvalidInput(f"franka={franka!r} needs robot 'panda', not {robot!r}")
    if not sim and robot == "panda" and franka == "none":
        franka, profile = "panda", franka_profile("panda")
    params: dict[str, Any] = {"robot": profile.limits or robot, "use_sim_time": sim}
    if sim:
        params["controller_action"] = interfaces.under(
            profile.arm_controller, interfaces.FOLLOW_JOINT_TRAJECTORY
        )
    elif franka != "none":
        params["controller_action"] = franka_action(franka)
    if profile.joint_prefix:
        params["joint_prefix"] = profile.joint_prefix
    if franka != "none":
        params["first_point"] = FRANKA_FIRST_POINT
    if franka == "panda":
        params["silence_hint"] = PANDA_SILENCE_HINT
    params.update({k: v for k, v in trajectory.items() if v is not None})
    node = NodeSpec("trajectory", "trajectory", params)
    if not sim:
        return [node]
    bridge: dict[str, Any] = {"robot": robot}
    tf: dict[str, Any] = {"robot": robot, "use_sim_time": True}
    if franka != "none":
        bridge["franka_profile"] = franka
        tf["joint_prefix"] = profile.joint_prefix
    return [
        NodeSpec("sim_bridge", "sim_bridge", bridge),
        NodeSpec("tf_publisher", "tf_publisher", tf),
        node,
    ]


def hand_pick_defaults() -> dict[str, Any]:
    """config/hand_pick.yaml's ``object`` section: the soft object the hand pick plans for and
    the sim bridge builds (one place for both)."""
    return dict(node_tree("hand_pick.yaml")["object"])


HAND_OBJECT_FRAME = "grasp_object"
"""The soft object's TF frame in the hand pick's graph: the TF publisher puts it at the
object's centre of mass, the grasp planner hangs its contact frames under it."""


def hand_pick_graph(
    robot: str = "panda_barrett",
    *,
    object_x: float | None = None,
    object_y: float | None = None,
    young: float | None = None,
    mass: float | None = None,
    real_time_factor: float = 1.0,
    model_path: str = "",
    autostart: bool = True,
) -> list[NodeSpec]:
    """The seed's pipeline with the Barrett-like hand on the simulated Panda: the sim
    bridge (``panda_barrett`` with the soft object of config/hand_pick.yaml, beside the rigid
    cube), the TF publisher (the object as frame ``HAND_OBJECT_FRAME``), the trajectory node
    (the arm's moves inside the Panda's limits), the grasp planner and the hand pick.

    object_x, object_y: where the object lies, base frame [m]; young [Pa], mass [kg]: its
    material (None: config/hand_pick.yaml's); real_time_factor: sim pacing; autostart: the
    hand pick picks once at start (else it waits for ``/pick`` goals)."""
    if robot != "panda_barrett":
        raise InvalidInput(f"the hand pick runs robot 'panda_barrett', not {robot!r}")
    obj = hand_pick_defaults()
    given = {"x": object_x, "y": object_y, "young": young, "mass": mass}
    obj |= {k: float(v) for k, v in given.items() if v is not None}
    soft = {f"soft_{k}": obj[k] for k in ("young", "poisson", "damping", "mass", "mu", "size")}
    shared = {"robot": robot, "model_path": model_path}
    bridge = {
        **shared,
        "real_time_factor": float(real_time_factor),
        "soft_object": obj["shape"],
        **{k: float(v) for k, v in soft.items()},
        "soft_count": int(obj["count"]),
        "soft_x": float(obj["x"]),
        "soft_y": float(obj["y"]),
    }
    tf = {
        **shared,
        "use_sim_time": True,
        "object_topics": [interfaces.CUBE_POSE, interfaces.SOFT_OBJECT_POSE],
        "object_frames": ["cube", HAND_OBJECT_FRAME],
    }
    trajectory = trajectory_graph("panda", sim=True)[-1]
    pick = {**shared, "use_sim_time": True, **{f"object.{k}": v for k, v in obj.items()}}
    pick["autostart"] = bool(autostart)
    return [
        NodeSpec("sim_bridge", "sim_bridge", bridge),
        NodeSpec("tf_publisher", "tf_publisher", tf),
        trajectory,
        NodeSpec("grasp_planner", "grasp_planner", {"object_frame": HAND_OBJECT_FRAME}),
        NodeSpec("hand_pick", "hand_pick", pick),
    ]


GRAPHS = {
    "demo": demo_graph,
    "pick": pick_graph,
    "trajectory": trajectory_graph,
    "hand_pick": hand_pick_graph,
    "policy": policy_graph,
    "teleop": teleop_graph,
}
