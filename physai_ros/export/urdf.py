"""Generate a URDF from a compiled MuJoCo model, so RViz/TF and MuJoCo share one geometry source.

Mapping (MuJoCo -> URDF):
    body            -> link (same name); its joint -> revolute (hinge with range), continuous
                       (hinge without), prismatic (slide), fixed (no joint)
    inertial        -> <inertial> in the principal frame (body_ipos, body_iquat, diagonal inertia)
    box/sphere/cylinder/capsule geom -> <visual> (groups 0-2) and/or <collision> (colliding);
                       a capsule becomes a cylinder plus two end spheres (URDF has no capsule)
    site            -> fixed child link (same name)
    camera          -> fixed child link (same name, MuJoCo convention: looks along -z, +y up) and
                       ``<camera>_optical`` (ROS optical convention: +z forward, +y down, +x right)
    joint equality  -> ``<mimic>`` on the joint that follows (the Panda's ``finger_joint2``)
    actuators       -> ``<limit effort>`` and a ``<ros2_control>`` block of the actuated joints

Every link named after a body, site or camera is exactly that MuJoCo frame, so TF from the URDF
equals ``xpos/xmat``, ``site_xpos``, ``cam_xpos``. A URDF joint rotates its child about an axis
through the child's origin, a MuJoCo hinge about an anchor ``jnt_pos``: an anchor off the body
origin gets an extra ``<body>_anchor`` link. Joint reference positions (``qpos0``) other than
zero have no URDF form and are rejected, as are ball/free joints and several joints per body.

Run ``python -m physai_ros.export.urdf --robot so101 --output urdf/so101.urdf``.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from xml.etree import ElementTree as ET

import mujoco
import numpy as np
from scipy.spatial.transform import Rotation

from physai_ros.errors import ModelError
from physai_ros.export.urdf_ros import (
    Mimic,
    joint_effort,
    joint_mimics,
    joint_velocity_limits,
    ros2_control_element,
)
from physai_ros.export.urdf_ros import number_text as _num
from physai_ros.models.loader import ROBOTS, load_robot_model

OPTICAL_SUFFIX = "_optical"
OPTICAL_RPY = (math.pi, 0.0, 0.0)
"""MuJoCo camera -> optical frame, a half turn about x: (x, y, z)_mujoco = (x, -y, -z)_optical."""

_VISUAL_GROUPS = (0, 1, 2)


def _vec(values: np.ndarray | tuple[float, ...]) -> str:
    return " ".join(_num(v) for v in values)


def quat_to_rpy(quat: np.ndarray) -> np.ndarray:
    """URDF roll-pitch-yaw [rad] (R = Rz(yaw) Ry(pitch) Rx(roll)) of a (w, x, y, z) quaternion."""
    with warnings.catch_warnings():
        # At pitch = ±90° SciPy warns and sets yaw = 0; the returned angles still give R exactly.
        warnings.simplefilter("ignore", UserWarning)
        return Rotation.from_quat(np.asarray(quat, float), scalar_first=True).as_euler("xyz")


def _origin(parent: ET.Element, pos: np.ndarray, quat: np.ndarray | None = None) -> None:
    rpy = np.zeros(3) if quat is None else quat_to_rpy(quat)
    ET.SubElement(parent, "origin", xyz=_vec(pos), rpy=_vec(rpy))


def _anchor(model: mujoco.MjModel, body: int) -> np.ndarray:
    """Hinge anchor of ``body`` in its own frame [m] (zero for slide joints and fixed bodies)."""
    if model.body_jntnum[body] == 1:
        joint = model.body_jntadr[body]
        if int(model.jnt_type[joint]) == mujoco.mjtJoint.mjJNT_HINGE:
            return model.jnt_pos[joint].copy()
    return np.zeros(3)


def _add_geom(link: ET.Element, model: mujoco.MjModel, geom: int, materials: dict) -> None:
    """Append <visual>/<collision> elements for one primitive geom (meshes/planes are skipped)."""
    kind, size = int(model.geom_type[geom]), model.geom_size[geom]
    pos, quat = model.geom_pos[geom], model.geom_quat[geom]
    shapes: list[tuple[str, dict[str, str], np.ndarray]] = []
    if kind == mujoco.mjtGeom.mjGEOM_BOX:
        shapes.append(("box", {"size": _vec(2.0 * size)}, pos))
    elif kind == mujoco.mjtGeom.mjGEOM_SPHERE:
        shapes.append(("sphere", {"radius": _num(size[0])}, pos))
    elif kind in (mujoco.mjtGeom.mjGEOM_CYLINDER, mujoco.mjtGeom.mjGEOM_CAPSULE):
        cylinder = {"radius": _num(size[0]), "length": _num(2.0 * size[1])}
        shapes.append(("cylinder", cylinder, pos))
        if kind == mujoco.mjtGeom.mjGEOM_CAPSULE:
            axis = np.zeros(3)
            mujoco.mju_rotVecQuat(axis, np.array([0.0, 0.0, size[1]]), quat)
            shapes += [("sphere", {"radius": _num(size[0])}, pos + s * axis) for s in (1.0, -1.0)]
    else:
        return
    visual = model.geom_group[geom] in _VISUAL_GROUPS
    collision = bool(model.geom_contype[geom] or model.geom_conaffinity[geom])
    material = ""
    if visual:
        rgba = _vec([round(float(c), 4) for c in model.geom_rgba[geom]])
        material = materials.setdefault(rgba, f"color_{len(materials)}")
    for tag, use in (("visual", visual), ("collision", collision)):
        if not use:
            continue
        for shape, attrs, shape_pos in shapes:
            element = ET.SubElement(link, tag)
            _origin(element, shape_pos, quat)
            ET.SubElement(ET.SubElement(element, "geometry"), shape, attrs)
            if tag == "visual":
                ET.SubElement(element, "material", name=material)


def _fixed(
    robot: ET.Element, name: str, parent: str, pos: np.ndarray, quat: np.ndarray | None
) -> ET.Element:
    joint = ET.SubElement(robot, "joint", name=f"{name}_joint", type="fixed")
    _origin(joint, pos, quat)
    ET.SubElement(joint, "parent", link=parent)
    ET.SubElement(joint, "child", link=name)
    return joint


def urdf_from_model(
    model: mujoco.MjModel, name: str, velocity_limits: Mapping[str, float] | None = None
) -> str:
    """URDF text of ``model``'s kinematic tree.

    Args:
        model: compiled robot (one root body under the world).
        name: robot name written in ``<robot name=...>``.
        velocity_limits: joint name -> speed limit [rad/s or m/s] for ``<limit velocity>``
            (MuJoCo has none); key ``default`` for the rest; missing -> 0 (= unspecified).
    """
    limits = dict(velocity_limits or {})
    robot = ET.Element("robot", name=name)
    robot.append(ET.Comment(" Generated by physai_ros.export.urdf from the MJCF; do not edit. "))
    materials: dict[str, str] = {}
    roots = [b for b in range(1, model.nbody) if model.body_parentid[b] == 0]
    if len(roots) != 1:
        raise ModelError(f"{name}: URDF needs one root body under the world, found {len(roots)}")
    names: set[str] = set()
    mimics = joint_mimics(model)

    def claim(link_name: str) -> str:
        if not link_name or link_name in names:
            raise ModelError(f"{name}: URDF link name {link_name!r} is empty or used twice")
        names.add(link_name)
        return link_name

    for body in range(1, model.nbody):
        body_name = claim(model.body(body).name)
        link = ET.SubElement(robot, "link", name=body_name)
        if model.body_mass[body] > 0.0:
            inertial = ET.SubElement(link, "inertial")
            _origin(inertial, model.body_ipos[body], model.body_iquat[body])
            ET.SubElement(inertial, "mass", value=_num(model.body_mass[body]))
            ixx, iyy, izz = model.body_inertia[body]
            ET.SubElement(
                inertial,
                "inertia",
                ixx=_num(ixx),
                ixy="0",
                ixz="0",
                iyy=_num(iyy),
                iyz="0",
                izz=_num(izz),
            )
        for geom in range(
            model.body_geomadr[body], model.body_geomadr[body] + model.body_geomnum[body]
        ):
            _add_geom(link, model, geom, materials)
        if body != roots[0]:
            _add_joint(robot, model, body, limits, claim, mimics)
        elif np.any(model.body_pos[body]) or np.any(model.body_quat[body] != [1, 0, 0, 0]):
            ET.SubElement(robot, "link", name=claim("world"))
            joint = _fixed(robot, body_name, "world", model.body_pos[body], model.body_quat[body])
            joint.set("name", f"world_to_{body_name}")

    for site in range(model.nsite):
        body = model.site_bodyid[site]
        ET.SubElement(robot, "link", name=claim(model.site(site).name))
        _fixed(
            robot,
            model.site(site).name,
            model.body(body).name,
            model.site_pos[site],
            model.site_quat[site],
        )
    for cam in range(model.ncam):
        body, cam_name = model.cam_bodyid[cam], model.cam(cam).name
        ET.SubElement(robot, "link", name=claim(cam_name))
        _fixed(robot, cam_name, model.body(body).name, model.cam_pos[cam], model.cam_quat[cam])
        optical = claim(cam_name + OPTICAL_SUFFIX)
        ET.SubElement(robot, "link", name=optical)
        joint = _fixed(robot, optical, cam_name, np.zeros(3), None)
        joint.find("origin").set("rpy", _vec(OPTICAL_RPY))

    control = ros2_control_element(model, name)
    if control is not None:
        robot.append(control)
    for index, (rgba, material) in enumerate(materials.items()):
        element = ET.Element("material", name=material)
        ET.SubElement(element, "color", rgba=rgba)
        robot.insert(1 + index, element)  # after the comment, before the first link
    ET.indent(robot)
    return '<?xml version="1.0"?>\n' + ET.tostring(robot, encoding="unicode") + "\n"


def _add_joint(
    robot: ET.Element,
    model: mujoco.MjModel,
    body: int,
    limits: dict,
    claim: Callable[[str], str],
    mimics: Mapping[str, Mimic],
) -> None:
    """The URDF joint from the parent body's link to ``body``'s link.

    A hinge whose anchor is off the body origin gets an extra link ``<body>_anchor`` at the
    anchor (the joint's child) and a fixed joint back to the body frame, so that every link
    named after a body is exactly that MuJoCo body frame.
    """
    parent = model.body_parentid[body]
    child, parent_name = model.body(body).name, model.body(parent).name
    count = model.body_jntnum[body]
    if count == 0:
        joint = _fixed(robot, child, parent_name, model.body_pos[body], model.body_quat[body])
        joint.set("name", f"{parent_name}_to_{child}")
        return
    joint = model.body_jntadr[body]
    kind, joint_name = int(model.jnt_type[joint]), model.joint(joint).name
    movable = (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE)
    if count > 1 or kind not in movable:
        raise ModelError(f"joint {joint_name!r}: URDF supports one hinge or slide joint per body")
    if model.qpos0[model.jnt_qposadr[joint]] != 0.0:
        raise ModelError(
            f"joint {joint_name!r}: a nonzero reference position (ref) has no URDF form"
        )
    anchor = _anchor(model, body)
    pos = np.zeros(3)
    mujoco.mju_rotVecQuat(pos, anchor, model.body_quat[body])
    pos += model.body_pos[body]
    joint_child = child
    if np.any(anchor):
        joint_child = claim(f"{child}_anchor")
        ET.SubElement(robot, "link", name=joint_child)
        _fixed(robot, child, joint_child, -anchor, None)
    limited = bool(model.jnt_limited[joint])
    if kind == mujoco.mjtJoint.mjJNT_SLIDE:
        urdf_type = "prismatic"
    else:
        urdf_type = "revolute" if limited else "continuous"
    element = ET.SubElement(robot, "joint", name=joint_name, type=urdf_type)
    _origin(element, pos, model.body_quat[body])
    ET.SubElement(element, "parent", link=parent_name)
    ET.SubElement(element, "child", link=joint_child)
    ET.SubElement(element, "axis", xyz=_vec(model.jnt_axis[joint]))
    limit = {
        "effort": _num(joint_effort(model, joint)),
        "velocity": _num(limits.get(joint_name, limits.get("default", 0.0))),
    }
    if limited:
        limit.update(lower=_num(model.jnt_range[joint, 0]), upper=_num(model.jnt_range[joint, 1]))
    ET.SubElement(element, "limit", limit)
    dof = model.jnt_dofadr[joint]
    ET.SubElement(
        element,
        "dynamics",
        damping=_num(model.dof_damping[dof]),
        friction=_num(model.dof_frictionloss[dof]),
    )
    if joint_name in mimics:
        mimic = mimics[joint_name]
        ET.SubElement(
            element,
            "mimic",
            joint=mimic.joint,
            multiplier=_num(mimic.multiplier),
            offset=_num(mimic.offset),
        )


def generate_urdf(robot: str, model_path: str | Path | None = None) -> str:
    """URDF of ``robot``'s model (embedded by default), velocity limits from the config."""
    return urdf_from_model(load_robot_model(robot, model_path), robot, joint_velocity_limits(robot))


def main(argv: list[str] | None = None) -> int:
    """Command line: write (or print) the URDF of a robot model."""
    parser = argparse.ArgumentParser(
        prog="python -m physai_ros.export.urdf",
        description="Generate a URDF (links, joints, inertials, primitive shapes, site and camera "
        "frames with ROS optical frames) from the package's MJCF model.",
    )
    parser.add_argument("--robot", choices=sorted(ROBOTS), required=True, help="robot model")
    parser.add_argument("--output", type=Path, help="URDF file to write (default: stdout)")
    parser.add_argument(
        "--model-path",
        type=Path,
        help="Menagerie-style folder or MJCF file instead of the embedded model",
    )
    args = parser.parse_args(argv)
    text = generate_urdf(args.robot, args.model_path)
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
