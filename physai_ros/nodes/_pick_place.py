"""The pick node's place (``nodes/pick.py``, a goal with ``place``): sensing on the arm's own
goal timeline, the support felt through the jaws' load, where the object was let go, and the
place's verdict for the outcome.

Why a module of its own: a place is the part of the jaw pick that a lift-and-hold never runs
(and the hand pick refuses); it reads the node's measurements (joints, jaw wrenches, TF) but
decides nothing the pick's other states depend on. ``PlaceSensing`` is mixed into ``PickNode``.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np

from physai_ros.core.pick.judge import (
    PlaceVerdict,
    RobotPlaceReading,
    final_place_verdict,
    place_pose_verdict,
    place_robot_verdict,
)
from physai_ros.core.pick.machine import PickMachine

ARM_TIMED = ("lift", "carry", "descend", "lower", "open", "retreat")  # a place's, see arm_time
JOIN_TIME = 0.1  # [s] lowering to place is sensed from then at the latest (see joined)


def on_arm_timeline(machine: PickMachine) -> bool:
    """Whether the machine's state runs on the arm's own goal timeline (a place's states)."""
    return machine.place is not None and machine.state in ARM_TIMED


class PlaceSensing:
    """What a place senses, on the node's readings (``PickNode``'s attributes)."""

    def arm_time(self, machine: PickMachine, now: float) -> float | None:
        """The instant [s] on the machine's clock a place's state is sensed at, or None while
        the arm is not there yet.

        A place senses on the arm's own timeline: the arm runs a state's goal ``shift``
        behind the machine's clock (command_lead, or where the previous goal really ended).
        The end of lift measures where the object sits in the jaws (the arm must be at the
        lift pose, not half way up); the lower goal starts when the descend goal has ended
        (sent earlier, it would replace the descend goal and the controller's blend would
        shake the load the lowering starts from); lowering compares the measured arm with
        what it was commanded at that instant, and a support ends the descent where the arm
        really is. Each place state ends when the arm has done it, so the feedback's state
        is the arm's (open, the jaw opening, would otherwise show for a fraction of its time)."""
        at = now - self.shift
        if at < machine.t_state:  # the arm is still on the previous state's goal
            return None
        if machine.state == "lower" and not self.joined(machine, at):
            return None
        return at

    def joined(self, machine: PickMachine, at: float) -> bool:
        """Whether the arm controller has joined the lower goal: its reference is where the
        machine commands at ``at`` (on the goal's timeline), or ``JOIN_TIME`` has passed.

        Why: a goal that reaches the controller before its stamp replaces the running one,
        and the controller blends to the new goal's first point; the arm then still moves
        towards it, and the lowering's stall signal, which starts from the arm's lag at its
        first reading, would read that blend as a stall."""
        if at - machine.t_state >= JOIN_TIME or self.reference is None:
            return True
        gap = np.abs(machine.command(at).arm - self.reference)
        return float(np.max(gap)) <= 0.5 * self.cfg.place.stall_lag

    def jaw_load(self) -> float:
        """The vertical force [N] the jaws carry (up on the object), for a place's lowering:
        each jaw's wrench turned from its jaw frame into the world by forward kinematics of
        the measured joints. NaN without ``place_load`` (a wrench that is only the grip's
        normal force says nothing about the load), or a wrench frame the model lacks."""
        if not self.place_load or self.jaw_joint not in self.joints or not self.arm_measured():
            return math.nan
        if any(jaw not in self.jaw_wrench for jaw in self.jaws):
            return math.nan
        self.fk_data.qpos[self.fk_qadr] = self.arm_positions()
        self.fk_data.qpos[self.fk_jaw_qadr] = self.joints[self.jaw_joint][0]
        mujoco.mj_kinematics(self.fk_model, self.fk_data)
        load = 0.0
        for jaw in self.jaws:
            force, frame = self.jaw_wrench[jaw]
            body = mujoco.mj_name2id(self.fk_model, mujoco.mjtObj.mjOBJ_BODY, frame)
            if body < 0:
                return math.nan
            on_jaw = self.fk_data.xmat[body].reshape(3, 3) @ force  # world frame
            load -= float(on_jaw[2])  # the object pushes the jaw down as much as it is held up
        return load

    def note_release(self) -> None:
        """Where the gripper site is as the jaw begins to open: the robot's own witness of
        where it set the object down."""
        if self.arm_measured():
            self.released = self.site_position()

    def judge_place(self, now: float, stale_by: float) -> dict:
        """The place's verdict and its numbers for the outcome: from the object's fresh pose
        (its centre within 1 cm of the target and upright, no jaw on it), else from the robot
        (where its site was as the jaw opened, support sensed, no jaw contact now).
        ``stale_by`` as in ``finish``."""
        m = self.machine
        target = m.place.position
        touch = self.cfg.ros["touch_force"]
        if self.jaw_contact:
            jaw_touch = any(self.jaw_force[j] > touch for j in self.jaws)
        else:  # a Franka Hand: only its width says whether it still holds the object
            jaw_touch = self.in_grasp_window()
        reading = None
        if self.released is not None:  # its age: the readings of now (the jaws after the
            # retreat); the release point is a reading of its own instant, kept
            age = max(self.reading_ages(now)) + stale_by
            reading = RobotPlaceReading(self.released, m.support_by is not None, jaw_touch, age)
        robot = place_robot_verdict(reading, target, grip=m.grip, max_age=self.max_age)
        pose = None
        cube, frame = self.object_pose(), self.object.frame
        if cube is not None:
            pose = place_pose_verdict(
                cube[0],
                cube[1],
                now - cube[2] + stale_by,
                target,
                jaw_clear=not jaw_touch,
                max_age=self.max_age,
                source=f"TF frame {frame!r}",
            )
        final, judge = final_place_verdict(robot, pose)

        def cm(value: float) -> float | None:
            return None if math.isnan(value) else round(value * 100.0, 3)

        return {
            "outcome": final.outcome,
            "judged_by": judge,
            "reason": final.reason,
            "target_m": [round(float(v), 4) for v in target],
            "error_cm": cm(final.error),
            "tilt_deg": None if math.isnan(final.tilt) else round(math.degrees(final.tilt), 2),
            "support_by": m.support_by,
            "robot": _verdict(robot),
            "cube_pose": None if pose is None else _verdict(pose),
        }


def _verdict(verdict: PlaceVerdict) -> dict:
    """A place verdict for the outcome report (NaN as None: the log line is JSON), in cm and
    degrees."""
    error, tilt = verdict.error, verdict.tilt
    return {
        "outcome": verdict.outcome,
        "error_cm": None if math.isnan(error) else round(error * 100.0, 3),
        "tilt_deg": None if math.isnan(tilt) else round(math.degrees(tilt), 2),
        "reason": verdict.reason,
    }
