"""The jaw pick node's side of the ``/pick`` action (``PickServer`` serves it): what it makes
of a goal -- checked before anything moves -- how a goal starts, is canceled and ends, and the
feedback it sends. ``PickGoals`` is mixed into ``PickNode`` (``nodes/pick.py``) and works on its
readings and machine; what a goal's fields mean is ``physai_ros.nodes._pick_action``'s.
"""

from __future__ import annotations

import numpy as np
from physai_ros_interfaces.action import Pick
from std_msgs.msg import String

from physai_ros.core.pick.machine import PickConfig, PickMachine
from physai_ros.errors import InvalidInput
from physai_ros.nodes._pick_action import PickObject, goal_config, goal_object, goal_place


class PickGoals:
    """The goals of ``PickNode`` (see the module docstring)."""

    def begin_goal(
        self, checked: tuple[PickObject, PickConfig, np.ndarray | None], now: float
    ) -> None:
        """A goal accepted (``PickServer``): pick its object with its close (and place), from
        where the arm is, as soon as the next tick finds everything ready."""
        self.object, self.cfg, self.place = checked
        self.pending = True
        where = "" if self.place is None else f", place at {np.round(self.place, 4).tolist()} m"
        self.get_logger().info(f"pick goal accepted: {self.object.describe()}{where}")

    def check_goal(
        self, goal: Pick.Goal, now: float
    ) -> tuple[PickObject, PickConfig, np.ndarray | None] | str:
        """The goal's object, configuration and place position (None: lift and hold), or why
        it is refused: busy, an unknown or stale object, a close the gripper cannot do, a time
        limit below zero, an object the arm cannot reach, a place position in another frame,
        not finite, below the table or out of reach (the machine's own checks), an arm
        controller deactivated under the last pick and not running since."""
        if self.stopped_by is not None:
            return (
                f"the arm controller has not run since it was deactivated ({self.stopped_by}); "
                "bring it back first"
                + (f" ({self.get_fully_qualified_name()}/recover)" if self.recovery else "")
            )
        place = goal_place(goal, self.world)
        if isinstance(place, str):
            return place
        target = goal_object(goal, self.world, self.tf.buffer, now, self.max_age)
        if isinstance(target, str):
            return target
        if goal.close == Pick.Goal.CLOSE_CONFIGURED and self.refused is not None:
            return self.refused
        if goal.close == Pick.Goal.CLOSE_CONFIGURED and self.planning():
            return "the planned force target has not come from the grasp planner yet"
        planned = self.configured if self.plan is not None else None
        cfg = goal_config(
            goal, self.configured, self.force_base, planned, self.floor().contact_fault
        )
        if isinstance(cfg, str):
            return cfg
        position = target.position
        if target.frame is not None:  # (looked up a moment ago: it chains to the world)
            position = self.tf.buffer.lookup(target.frame).position
        home = np.asarray(cfg.robot["home"], dtype=float)
        for name in ("pre", "down", "lift"):  # as the machine will solve them, from home
            point = position + np.array([0.0, 0.0, cfg.offsets[name]])
            result = self.ik(point, home)
            if not result.converged:
                return (
                    f"out of reach: no arm pose puts the gripper at the {name} point "
                    f"{np.round(point, 4).tolist()} m (IK error {result.error * 1e3:.1f} mm)"
                )
        if place is not None:
            if self.limits is None:
                return str(self.limits_fault)
            try:  # the machine refuses a place it cannot do, before anything moves
                PickMachine(cfg, self.ik, home, t0=now, place=place, limits=self.limits)
            except InvalidInput as exc:
                return f"place_pose refused: {exc}"
        return target, cfg, place

    def cancel_pick(self, now: float) -> None:
        """The client canceled: the machine slows the arm to rest along its path within the
        limits (``PickMachine.cancel``), sent as one more arm goal that joins the running one
        command_lead ahead of where the arm is on it (``GoalChain.lag``), its points with their
        velocities and accelerations (``send_phase``); the jaw is left as commanded (a held
        object stays squeezed; a close's jaw command already scheduled still goes out, as the
        close under way keeps its target). The goal ends CANCELED, with the state the pick
        stopped in, once the arm is at rest (``tick``)."""
        self.pending = False
        machine = self.machine
        if machine is None:  # not started yet
            self.end_goal(
                {"outcome": "canceled", "reason": "canceled before it started", "state": "waiting"},
                now,
            )
            return
        if machine.state in ("cancel", "canceled"):
            return
        self.get_logger().info(f"pick canceled in state {machine.state}: slowing to rest")
        lag = self.chain.lag(now)
        # the stop joins the running goal command_lead ahead of where the arm is on it (the arm
        # runs the state ``shift`` behind the machine; a place's states run on its timeline,
        # see tick): stamped now + lead, it reaches the controller before it starts. Stamped
        # now, a short stop ended before it arrived, was rejected, and the arm went on
        at = max(now - self.shift, machine.t_state) + self.lead
        machine.cancel(at)
        self.phase += 1
        self.pub_state.publish(String(data=machine.state))
        self.send_phase(at, at + lag, rates=True)
        if machine.finished:
            self.report_at = max(now, self.chain.end(now))

    def end_goal(self, report: dict, now: float, judged: bool = False) -> None:
        """End the goal being served (if any) with the outcome ``report``, ``judged``: of a
        pick that ran, then also published on the outcome topic (``PickServer.finish``); the
        next pick starts from the node's own close."""
        (self.server.finish if judged else self.server.end)(report, now)
        self.cfg, self.place = self.configured, None

    def send_feedback(self, now: float) -> None:
        """The state, the jaw forces and the lift since the close (``PickServer.feedback``)."""

        def feedback(elapsed: float) -> Pick.Feedback:
            lift = 0.0
            if self.machine.closed and self.arm_joints[0] in self.joints:
                lift = self.site_height() - self.site_at_grip
            return Pick.Feedback(
                state=self.machine.state,
                jaw_names=list(self.jaws),
                jaw_forces=[float(self.jaw_force[j]) for j in self.jaws],
                lift=float(lift),
                elapsed=float(elapsed),
            )

        self.server.feedback(now, feedback)
