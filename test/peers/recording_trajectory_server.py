"""DDS peer: a fake arm behind a FollowJointTrajectory server that records every goal it gets.

It publishes /joint_states (positions given on the command line, at rest) and, for each goal,
appends one JSON line to RECORD_FILE (joint names, header stamp, every point's time, positions,
velocities and accelerations), then plays the points in real time as its joint states (perfect
tracking) and succeeds; a cancel stops it where it is. So a test can prove what did (or did not)
reach a controller.
Usage: python recording_trajectory_server.py ACTION_NAME RECORD_FILE NAMES POSITIONS
       (NAMES and POSITIONS comma-separated)
"""

import json
import sys
import threading
import time

import rclpy
from control_msgs.action import FollowJointTrajectory
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from sensor_msgs.msg import JointState

RATE = 100.0  # [Hz] joint state rate


def main() -> None:
    action_name, record_file = sys.argv[1], sys.argv[2]
    names = sys.argv[3].split(",")
    state = {"q": [float(v) for v in sys.argv[4].split(",")], "v": [0.0] * len(names)}
    lock = threading.Lock()
    rclpy.init()
    node = rclpy.create_node("recording_trajectory_server")
    pub = node.create_publisher(JointState, "/joint_states", 10)

    def publish() -> None:
        with lock:
            msg = JointState(name=names, position=state["q"], velocity=state["v"])
        msg.header.stamp = node.get_clock().now().to_msg()
        pub.publish(msg)

    node.create_timer(1.0 / RATE, publish)

    def on_goal(goal: FollowJointTrajectory.Goal) -> GoalResponse:
        traj = goal.trajectory
        record = {
            "joint_names": list(traj.joint_names),
            "stamp": traj.header.stamp.sec + traj.header.stamp.nanosec * 1e-9,
            "points": [
                {
                    "t": p.time_from_start.sec + p.time_from_start.nanosec * 1e-9,
                    "positions": list(p.positions),
                    "velocities": list(p.velocities),
                    "accelerations": list(p.accelerations),
                }
                for p in traj.points
            ],
        }
        with open(record_file, "a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")
        if not traj.joint_names or not traj.points:
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def execute(handle) -> FollowJointTrajectory.Result:
        traj = handle.request.trajectory
        index = [traj.joint_names.index(n) for n in names]
        stamp = traj.header.stamp.sec + traj.header.stamp.nanosec * 1e-9
        start = stamp or node.get_clock().now().nanoseconds * 1e-9
        for i, point in enumerate(traj.points):
            t_point = start + point.time_from_start.sec + point.time_from_start.nanosec * 1e-9
            while node.get_clock().now().nanoseconds * 1e-9 < t_point:
                if handle.is_cancel_requested:
                    with lock:
                        state["v"] = [0.0] * len(names)
                    handle.canceled()
                    return FollowJointTrajectory.Result(error_string=f"canceled at point {i}")
                time.sleep(0.001)
            with lock:
                state["q"] = [point.positions[k] for k in index]
                if point.velocities:
                    state["v"] = [point.velocities[k] for k in index]
            fb = FollowJointTrajectory.Feedback(joint_names=list(traj.joint_names))
            fb.desired = fb.actual = point
            fb.index = i
            handle.publish_feedback(fb)
        with lock:
            state["v"] = [0.0] * len(names)
        handle.succeed()
        return FollowJointTrajectory.Result(
            error_code=FollowJointTrajectory.Result.SUCCESSFUL,
            error_string=f"executed {len(traj.points)} points",
        )

    ActionServer(
        node,
        FollowJointTrajectory,
        action_name,
        execute,
        goal_callback=on_goal,
        cancel_callback=lambda _h: CancelResponse.ACCEPT,
        callback_group=ReentrantCallbackGroup(),
    )
    print("ready", flush=True)
    executor = MultiThreadedExecutor(num_threads=3)
    executor.add_node(node)
    try:
        executor.spin()
    except KeyboardInterrupt:
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
