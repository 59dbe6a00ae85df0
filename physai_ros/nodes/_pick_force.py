"""The jaw pick's force target (``nodes/pick.py``, ``close_mode: force``): the gripper's least
squeeze (the SO-101 jaw's friction, the Franka Hand's floor), a target beyond the cap refused
before anything moves, the target asked of the grasp planner (``plan.source: planner``, through
``PlannerCall``), and the force section of the outcome. ``ForceTarget`` is mixed into
``PickNode`` and works on its configuration.

Why a module of its own: this decides what the force close squeezes for, once, before a pick
moves; the pick's states never come back to it.
"""

from __future__ import annotations

import dataclasses
import math

from physai_ros_interfaces.srv import PlanGrasp
from std_msgs.msg import String

from physai_ros.core.pick.force_close import capacity_fault
from physai_ros.core.pick.force_plan import NO_SERVICE, JawFloor, planned_params
from physai_ros.errors import InvalidInput
from physai_ros.robots.franka.hand import HandFloor


class ForceTarget:
    """The force target of ``PickNode`` (see the module docstring)."""

    def floor(self) -> JawFloor | HandFloor:
        """The least squeeze the gripper sets (see ``__init__``), whatever the close of the
        running pick (a goal may ask for a force close of a node configured for the cap)."""
        if self.cfg.robot.get("force_close") == "grasp":  # the hand's data, one place
            from physai_ros.config import load_sim_config  # (config/sim_robots.yaml)

            hand = load_sim_config()["robots"][self.robot]["franka_hand"]
            return HandFloor(float(hand["min_force"]))
        p = self.cfg.force or self.force_base
        return JawFloor(self.jaw_friction, p.lever, p.tolerance)

    def raise_to_hand_floor(self) -> None:
        """A Franka Hand squeezes with at least its floor whatever it is told: a parameter
        target below it is raised, and the log and the outcome say so."""
        p, floor = self.cfg.force, self.floor()
        if not self.cfg.grasping or p.target >= floor.force:
            return
        self.raised = {"from_N": p.target, "to_N": floor.force, "why": floor.why}
        self.cfg = dataclasses.replace(self.cfg, force=dataclasses.replace(p, target=floor.force))
        self.get_logger().warning(
            f"force.target {p.target:g} N {floor.why}: squeezing with {floor.force:g} N"
        )

    def check_capacity(self) -> None:
        """Refuse a target beyond the cap, or a contact force the jaw's friction swallows,
        before anything moves: say so, send nothing."""
        p = self.cfg.force
        self.refused = capacity_fault(p) or self.floor().contact_fault(p.contact)
        if self.refused is not None:
            self.refuse(self.refused)

    # --- the force target from the planner ----------------------------------------------
    def planning(self) -> bool:
        """Whether the pick still waits for its planned force target."""
        return self.plan_fields is not None and self.plan is None and self.refused is None

    def ask_planner(self) -> None:
        """Send the plan request once the service is there; abort on the deadline (run from
        the steady-clock watchdog too: it ticks without a sim clock)."""
        if self.planning():
            self.planner.poll()

    def plan_failed(self, asked: bool) -> None:
        """No plan by the deadline: the pick is refused before it moves."""
        why = (
            f"plan_grasp gave no answer within {self.plan_src.timeout:.1f} s"
            if asked
            else NO_SERVICE
        )
        self.refused = why
        self.refuse(why)

    def on_plan(self, answer: PlanGrasp.Response) -> None:
        if not self.planning():  # answered after the pick was refused
            return
        self.plan = {
            "force_targets_N": [round(v, 4) for v in answer.force_targets],
            "basis": answer.force_target_basis,
            "simulated_squeeze_N": [round(v, 4) for v in answer.simulated_squeeze],
            "message": answer.message,
            "request": self.plan_fields,
            "raised": None,  # {from_N, to_N, why}: the plan was below the jaw's least squeeze
        }
        try:
            targets = list(answer.force_targets)
            p = self.cfg.force
            force, raised = planned_params(p, answer.success, answer.message, targets, self.floor())
        except InvalidInput as exc:
            self.refused = str(exc)
            self.refuse(self.refused)
            return
        self.plan["raised"] = self.raised = raised
        self.cfg = self.configured = dataclasses.replace(self.configured, force=force)
        raise_note = (
            "" if raised is None else f" (raised from {raised['from_N']} N: {raised['why']})"
        )
        self.get_logger().info(
            f"planned force targets {self.plan['force_targets_N']} N "
            f"({self.plan['basis']}; simulated squeeze {self.plan['simulated_squeeze_N']} N): "
            f"squeezing with {force.target:.4f} N per jaw{raise_note}"
        )
        self.check_capacity()

    def refuse(self, reason: str) -> None:
        """Publish an aborted outcome at once for a pick that cannot be done as configured
        (the force target beyond the cap): the robot is never commanded, nothing measured."""
        report = dict.fromkeys(
            ("judged_by", "lift_cm", "robot", "cube_pose", "close_s", "squeeze_N", "ik_error_mm")
        )
        report.update(
            outcome="aborted",
            reason=reason,
            state="aborted",
            abort_reason=reason,
            jaw_forces_N=None,
            time_s=round(self.now(), 3),
            close_mode=self.cfg.close_mode,
            force=self.force_report(),
        )
        self.get_logger().error(f"{reason}; the pick does not start")
        self.pub_state.publish(String(data="aborted"))
        self.server.finish(report, self.now())
        self.pending = False  # the start's pick; goals are still served, each checked

    def force_report(self) -> dict:
        """The force close's numbers for the outcome: target and band, the squeeze per jaw
        (mean of the two jaws) measured now (None before a pick started) and when the close
        ended, whether the final one is within tolerance, the last effort commanded and the
        peak jaw force while closing."""
        p = self.cfg.force
        close = None if self.machine is None else self.machine.force_close
        final = 0.5 * sum(self.jaw_force.values()) if self.machine is not None else math.nan
        at_close = self.squeeze / 2.0
        return {
            "target_N": p.target,
            "tolerance": p.tolerance,
            "capacity_N": round(p.capacity, 3),
            "squeeze_per_jaw_N": None if math.isnan(final) else round(final, 3),
            "within_tolerance": p.band[0] <= final <= p.band[1],
            "squeeze_at_close_end_N": None if math.isnan(at_close) else round(at_close, 3),
            "peak_while_closing_N": round(self.peak_force, 3),
            "effort_Nm": None if close is None else round(close.effort, 4),
            "phase": None if close is None else close.phase,
            "source": self.plan_src.source,
            "raised": self.raised,
            "plan": self.plan,
        }
