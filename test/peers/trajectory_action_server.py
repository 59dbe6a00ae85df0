"""DDS peer: a FollowJointTrajectory action server that executes goals trivially.

It walks through the trajectory's points, publishing each as feedback (desired = actual), and
answers SUCCESSFUL with a summary; goals without joint names are rejected, as
joint_trajectory_controller does.
Usage: python trajectory_action_server.py ACTION_NAME
"""

import sys

import rclpy
from control_msgs.action import FollowJointTrajectory
from rclpy.action import ActionServer, GoalResponse


def main() -> None:
    action_name = sys.argv[1]
    rclpy.init()
    node = rclpy.create_node("trajectory_action_server")

    def on_goal(goal: FollowJointTrajectory.Goal) -> GoalResponse:
        if not goal.trajectory.joint_names:
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def execute(handle) -> FollowJointTrajectory.Result:
        traj = handle.request.trajectory
        for i, point in enumerate(traj.points):
            fb = FollowJointTrajectory.Feedback()
            fb.joint_names = list(traj.joint_names)
            fb.desired = point
            fb.actual = point
            fb.index = i
            handle.publish_feedback(fb)
        handle.succeed()
        last = traj.points[-1].positions if traj.points else []
        return FollowJointTrajectory.Result(
            error_code=FollowJointTrajectory.Result.SUCCESSFUL,
            error_string=f"executed {len(traj.points)} points, final {list(last)}",
        )

    ActionServer(node, FollowJointTrajectory, action_name, execute, goal_callback=on_goal)
    print("ready", flush=True)
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
