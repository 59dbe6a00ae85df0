"""The TF publisher over real DDS: another process rebuilds the whole frame tree from /tf and
/tf_static while joint states change, and every frame matches MuJoCo to 1e-9 m."""

from __future__ import annotations

import time

import mujoco
import numpy as np
import pytest

from physai_ros.core.frames.robot_tf import OPTICAL_SUFFIX, RobotTf
from physai_ros.core.frames.spatial import pose_to_transform
from physai_ros.errors import InvalidInput, ModelError
from physai_ros.models import load_robot_spec, place_robot

BASE_POS, BASE_YAW = (0.10, -0.05, 0.0), 30.0  # lesson 07: world != base
TOL = 1e-9  # [m], [-] for rotation matrix entries


def placed_model(robot: str) -> mujoco.MjModel:
    spec = load_robot_spec(robot)
    place_robot(spec, BASE_POS, BASE_YAW)
    return spec.compile()


def random_q(model: mujoco.MjModel, rng: np.random.Generator) -> np.ndarray:
    lo, hi = model.jnt_range[:, 0], model.jnt_range[:, 1]
    return rng.uniform(lo, hi)


def mujoco_frames(model: mujoco.MjModel, q: np.ndarray) -> dict[str, np.ndarray]:
    data = mujoco.MjData(model)
    data.qpos[:] = q
    mujoco.mj_forward(model, data)
    frames = {}
    for b in range(1, model.nbody):
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = data.xmat[b].reshape(3, 3), data.xpos[b]
        frames[model.body(b).name] = T
    for s in range(model.nsite):
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = data.site_xmat[s].reshape(3, 3), data.site_xpos[s]
        frames[model.site(s).name] = T
    for c in range(model.ncam):
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = data.cam_xmat[c].reshape(3, 3), data.cam_xpos[c]
        frames[model.camera(c).name] = T
    return frames


def resolve(edges: dict[str, tuple[str, np.ndarray]], frame: str) -> np.ndarray:
    """T_world_frame by chaining parent edges, as a tf2 buffer does."""
    T = np.eye(4)
    while frame != "world":
        parent, T_pc = edges[frame]
        T = T_pc @ T
        frame = parent
    return T


@pytest.mark.parametrize("robot", ["so101", "panda"])
def test_edges_chain_to_mujoco_frames(robot):
    model = placed_model(robot)
    tf = RobotTf(model)
    rng = np.random.default_rng(7)
    static = {e.child: (e.parent, e.T) for e in tf.static_edges()}
    for _ in range(100):
        q = random_q(model, rng)
        tf.update(tf.joint_names, q)
        edges = dict(static)
        edges.update({e.child: (e.parent, e.T) for e in tf.dynamic_edges()})
        for name, T_ref in mujoco_frames(model, q).items():
            np.testing.assert_allclose(resolve(edges, name), T_ref, atol=TOL, err_msg=name)


def test_bad_joint_states_change_nothing():
    model = placed_model("so101")
    tf = RobotTf(model)
    tf.update(tf.joint_names, np.zeros(len(tf.joint_names)))
    before = [e.T.copy() for e in tf.dynamic_edges()]
    bad_inputs = [
        (["shoulder_pan", "nope"], [0.1, 0.2]),  # unknown joint
        (["shoulder_pan"], [float("nan")]),  # NaN
        (["shoulder_pan", "shoulder_pan"], [0.1, 0.2]),  # duplicate
        (["shoulder_pan"], [0.1, 0.2]),  # length mismatch
        (["shoulder_pan", "elbow_flex"], [0.3, 9.0]),  # out of range, valid first entry
    ]
    for names, positions in bad_inputs:
        with pytest.raises(InvalidInput):
            tf.update(names, positions)
    after = [e.T for e in tf.dynamic_edges()]
    for a, b in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)


def test_free_joint_model_and_missing_model_are_refused(tmp_path):
    model = mujoco.MjModel.from_xml_string(
        "<mujoco><worldbody><body name='box'><freejoint/><geom size='0.1'/></body>"
        "</worldbody></mujoco>"
    )
    with pytest.raises(ModelError, match="free/ball"):
        RobotTf(model)
    with pytest.raises(ModelError):
        load_robot_spec("so101", tmp_path / "nowhere")


def test_camera_optical_frame_looks_along_plus_z():
    model = placed_model("so101")
    tf = RobotTf(model)
    optical = {e.child: e for e in tf.static_edges()}["wrist_cam" + OPTICAL_SUFFIX]
    # MuJoCo cameras look along -z; the optical frame's +z must be that same direction.
    np.testing.assert_allclose(optical.T[:3, 2], [0.0, 0.0, -1.0], atol=1e-15)
    np.testing.assert_allclose(optical.T[:3, 1], [0.0, -1.0, 0.0], atol=1e-15)


@pytest.mark.dds
def test_tf_tree_over_dds_matches_mujoco(ros_context, spawn):
    import rclpy
    from geometry_msgs.msg import PoseStamped
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    from tf2_msgs.msg import TFMessage

    node_proc = spawn(
        "physai_ros.nodes.tf_publisher",
        "--ros-args",
        "-p",
        "robot:=so101",
        "-p",
        f"base_pos:=[{BASE_POS[0]}, {BASE_POS[1]}, {BASE_POS[2]}]",
        "-p",
        f"base_yaw_deg:={BASE_YAW}",
        module=True,
    )
    model = placed_model("so101")
    names = [model.joint(j).name for j in range(model.njnt)]
    node = rclpy.create_node("tf_checker", context=ros_context)
    edges: dict[str, tuple[str, np.ndarray]] = {}
    stamps: list[int] = []

    def on_tf(msg: TFMessage) -> None:
        for t in msg.transforms:
            p, r = t.transform.translation, t.transform.rotation
            T = pose_to_transform([p.x, p.y, p.z], [r.w, r.x, r.y, r.z])
            edges[t.child_frame_id] = (t.header.frame_id, T)
            if t.child_frame_id == "gripper":
                stamps.append(t.header.stamp.sec * 10**9 + t.header.stamp.nanosec)

    latched = QoSProfile(
        depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE
    )
    node.create_subscription(TFMessage, "/tf", on_tf, 100)
    node.create_subscription(TFMessage, "/tf_static", on_tf, latched)
    pub = node.create_publisher(JointState, "/joint_states", 10)
    cube_pub = node.create_publisher(PoseStamped, "/cube_pose", 10)
    executor = rclpy.executors.SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)

    def spin(seconds: float, until=lambda: False) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end and not until():
            executor.spin_once(timeout_sec=0.02)

    rng = np.random.default_rng(3)
    spin(20.0, until=lambda: pub.get_subscription_count() > 0 and "wrist_cam_optical" in edges)
    assert "wrist_cam_optical" in edges, node_proc.stdout.read() if node_proc.poll() else "no TF"
    for k in range(5):
        q = random_q(model, rng)
        msg = JointState(name=names, position=list(q))
        msg.header.stamp.sec = 100 + k
        stamps.clear()
        pub.publish(msg)
        spin(10.0, until=lambda k=k: bool(stamps) and stamps[-1] == (100 + k) * 10**9)
        assert stamps and stamps[-1] == (100 + k) * 10**9, "TF must carry the joint state stamp"
        for name, T_ref in mujoco_frames(model, q).items():
            np.testing.assert_allclose(resolve(edges, name), T_ref, atol=TOL, err_msg=name)

    # Bad input: an unknown joint is logged and dropped; the last good TF stays.
    good = {k: v[1].copy() for k, v in edges.items()}
    stamps.clear()
    pub.publish(JointState(name=["shoulder_pan", "bogus"], position=[0.5, 0.1]))
    spin(1.0)
    assert not stamps
    for k, T in good.items():
        np.testing.assert_array_equal(edges[k][1], T)

    # Objects become frames when their pose is published.
    cube = PoseStamped()
    cube.header.frame_id = "world"
    cube.pose.position.x, cube.pose.position.y, cube.pose.position.z = 0.2905, 0.06, 0.015
    cube.pose.orientation.w = 1.0
    cube_pub.publish(cube)
    spin(5.0, until=lambda: "cube" in edges)
    assert edges["cube"][0] == "world"
    np.testing.assert_allclose(edges["cube"][1][:3, 3], [0.2905, 0.06, 0.015])
    node.destroy_node()
    node_proc.send_signal(2)
    out, _ = node_proc.communicate(timeout=10)
    assert "unknown joint(s) ['bogus']" in out
