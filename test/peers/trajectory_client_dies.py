"""DDS peer: sends one FollowJointTrajectory goal, says "accepted", then waits to be killed.

Used to prove that a client dying mid-goal leaves the arm following the accepted trajectory
to its end and holding there (the controller must not depend on the client being alive).
Usage: python trajectory_client_dies.py ACTION_NAME J1,J2,... Q1,Q2,... SECONDS
"""

import sys
import time

import rclpy
from builtin_interfaces.msg import Duration
from control_msgs.action import FollowJointTrajectory
from rclpy.action import ActionClient
from trajectory_msgs.msg import JointTrajectoryPoint


def main() -> None:
    action, joints, target, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    rclpy.init()
    node = rclpy.create_node("trajectory_client_dies")
    client = ActionClient(node, FollowJointTrajectory, action)
    while not client.server_is_ready():
        rclpy.spin_once(node, timeout_sec=0.1)
    goal = FollowJointTrajectory.Goal()
    goal.trajectory.joint_names = joints.split(",")
    q = [float(v) for v in target.split(",")]
    sec = int(seconds)
    goal.trajectory.points = [
        JointTrajectoryPoint(
            positions=[0.5 * v for v in q],
            time_from_start=Duration(sec=int(seconds / 2), nanosec=round((seconds / 2 % 1) * 1e9)),
        ),
        JointTrajectoryPoint(
            positions=q, time_from_start=Duration(sec=sec, nanosec=round((seconds - sec) * 1e9))
        ),
    ]
    future = client.send_goal_async(goal)
    rclpy.spin_until_future_complete(node, future, timeout_sec=30.0)
    print("accepted" if future.result() and future.result().accepted else "rejected", flush=True)
    while True:  # the test kills this process (SIGKILL) while the goal runs
        time.sleep(1.0)


if __name__ == "__main__":
    main()
