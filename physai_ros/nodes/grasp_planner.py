"""Grasp planner node: the seed-003 planner as a ROS service, its result as TF frames and markers.

Service ``plan_grasp`` (``physai_ros_interfaces/srv/PlanGrasp``): an object (a primitive shape,
or a ``sensor_msgs/PointCloud2`` of its surface), a hand (barrett, panda, so101) and a material
in; the contacts, Q1/Q2/ε, the pre-grasp joints and tool pose, where the plan put the object
(``object_pose``: the pre-grasp is for the object there), the force targets and whether a grasp
exists out. Everything per contact is per finger: F1, F2, F3 for the Barrett hand. A request the
planner refuses (bad values, no grasp in the band, nothing reachable, no equilibrium) answers
``success: false`` with the planner's reason.

Each plan is also drawn: ``/tf_static`` gets ``<object_frame>/contact_<i>`` (z along the force
on the object, into it) under ``object_frame`` (place that frame where the object is, e.g. with
a static transform from the cube's frame), and ``grasp_planner/markers`` (latched) spheres at
the contacts and arrows of the force targets, 1 cm per newton ``marker_scale``.

The planning itself runs in the service call; a plan takes seconds (two jaws) to minutes (the
three-finger hand at fine lattices), during which the node answers nothing else.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
from geometry_msgs.msg import Point, Pose, TransformStamped, Vector3
from physai_ros_interfaces.srv import PlanGrasp
from rclpy.node import Node
from rclpy.serialization import serialize_message
from tf2_msgs.msg import TFMessage
from visualization_msgs.msg import Marker, MarkerArray

from physai_ros import interfaces
from physai_ros.core.frames.spatial import quat_z_along
from physai_ros.core.grasp_planning.closing import NoEquilibrium
from physai_ros.core.grasp_planning.plan import plan, to_json
from physai_ros.core.grasp_planning.point_cloud2 import points_from_msg
from physai_ros.core.grasp_planning.pregrasp import Unreachable
from physai_ros.core.grasp_planning.request import pregrasp_joints, request_inputs
from physai_ros.errors import InvalidInput
from physai_ros.nodes._common import LATCHED, declare_schema, load_schema, run_node

SCHEMA = load_schema("grasp_planner")  # config/schema/grasp_planner.yaml


class GraspPlannerNode(Node):
    def __init__(self) -> None:
        super().__init__("grasp_planner")
        self.p = declare_schema(self, SCHEMA)
        self.pub_tf = self.create_publisher(TFMessage, interfaces.TF_STATIC, LATCHED)
        self.pub_markers = self.create_publisher(MarkerArray, interfaces.GRASP_MARKERS, LATCHED)
        self.create_service(PlanGrasp, interfaces.PLAN_GRASP, self.on_request)
        # request bytes -> (response, what was drawn): a repeated request (the same object asked
        # for again, e.g. by the next pick) is answered in microseconds instead of re-planned
        self.cache: OrderedDict[bytes, tuple[PlanGrasp.Response, tuple]] = OrderedDict()
        self.get_logger().info(f"serving {self.resolve_service_name(interfaces.PLAN_GRASP)}")

    def on_request(self, request: PlanGrasp.Request, response: PlanGrasp.Response):
        """Answer from the cache, or plan (successful plans are cached, refusals are not:
        their reason may be the machine's, a timeout, not the object's)."""
        key = serialize_message(request)
        if key in self.cache:
            self.cache.move_to_end(key)
            cached, drawn = self.cache[key]
            self.get_logger().info(
                f"planned (the same request again, from the cache): {cached.message}"
            )
            self.draw(*drawn)
            return cached
        response = self.on_plan(request, response)
        if response.success and self.p["cache_size"] > 0:
            self.cache[key] = (response, self.drawn)
            while len(self.cache) > self.p["cache_size"]:
                self.cache.popitem(last=False)
        return response

    def on_plan(self, request: PlanGrasp.Request, response: PlanGrasp.Response):
        cloud = None if request.shape else points_from_msg(request.cloud)
        try:
            obj, req = request_inputs(
                request.shape,
                request.size,
                request.spacing,
                cloud,
                request.hand,
                request.young,
                request.poisson,
                request.mu,
                request.mass,
                request.cells,
                request.lift_accel,
                request.force_margin,
            )
            self.get_logger().info(
                f"planning: {obj.name}, {len(obj.points)} points, hand {req.hand}"
            )
            result = plan(obj, req)
        except (InvalidInput, Unreachable, NoEquilibrium) as exc:
            response.success, response.message = False, str(exc)
            self.get_logger().warning(f"no grasp: {exc}")
            return response
        data = to_json(result)
        response.success = True
        response.contacts = [Point(x=x, y=y, z=z) for x, y, z in result.contacts.tolist()]
        response.normals = [Vector3(x=x, y=y, z=z) for x, y, z in result.normals.tolist()]
        response.q1 = float("nan") if result.q1 is None else float(result.q1)
        response.q2 = float(result.q2)
        response.force_closure = bool(result.force_closure)
        response.epsilon = float(result.epsilon)
        response.joint_names, response.joint_positions = pregrasp_joints(result)
        pre = result.pregrasp
        response.tool_pose = Pose()
        (p := response.tool_pose.position).x, p.y, p.z = map(float, pre.position)
        o = response.tool_pose.orientation
        o.w, o.x, o.y, o.z = map(float, pre.quat)
        response.object_pose = Pose()  # identity rotation: the object frame is not turned
        (p := response.object_pose.position).x, p.y, p.z = map(float, result.object_position)
        response.force_targets = [float(v) for v in result.force_targets]
        response.simulated_squeeze = [float(v) for v in result.closing.squeeze]
        response.force_target_basis = result.target_basis
        response.finger_forces = [
            Vector3(x=x, y=y, z=z) for x, y, z in result.closing.finger_forces.tolist()
        ]
        response.max_deformation = float(data["max_deformation_m"])
        response.message = (
            f"{len(result.contacts)} contacts, force targets "
            f"{np.round(result.force_targets, 3).tolist()} N ({result.target_basis}); "
            f"{data['pregrasp_note']}"
        )
        self.get_logger().info(f"planned: {response.message}")
        self.drawn = (result.contacts, result.closing.finger_forces, result.force_targets)
        self.draw(*self.drawn)
        return response

    def draw(self, contacts: np.ndarray, forces: np.ndarray, targets: np.ndarray) -> None:
        """Contact frames on /tf_static and markers: spheres and force-target arrows."""
        frame = self.p["object_frame"]
        stamp = self.get_clock().now().to_msg()
        transforms, markers = [], [Marker(action=Marker.DELETEALL)]
        for i, (c, f, target) in enumerate(zip(contacts, forces, targets, strict=True)):
            into = f / max(float(np.linalg.norm(f)), 1e-12)  # the force on the object
            t = TransformStamped()
            t.header.stamp, t.header.frame_id = stamp, frame
            t.child_frame_id = f"{frame}/contact_{i}"
            t.transform.translation = Vector3(x=float(c[0]), y=float(c[1]), z=float(c[2]))
            r = t.transform.rotation
            r.w, r.x, r.y, r.z = map(float, quat_z_along(into))
            transforms.append(t)
            length = float(target) * self.p["marker_scale"]
            for kind, points in (
                (Marker.SPHERE, None),
                (Marker.ARROW, [c - into * length, c]),
            ):
                m = Marker(type=kind, action=Marker.ADD, id=len(markers), ns="grasp_plan")
                m.header.stamp, m.header.frame_id = stamp, frame
                m.pose.orientation.w = 1.0
                if points is None:
                    m.pose.position = Point(x=float(c[0]), y=float(c[1]), z=float(c[2]))
                    m.scale = Vector3(x=0.008, y=0.008, z=0.008)
                    m.color.r, m.color.a = 1.0, 1.0
                else:
                    m.points = [Point(x=float(a), y=float(b), z=float(z)) for a, b, z in points]
                    m.scale = Vector3(x=0.003, y=0.006, z=0.008)
                    m.color.g, m.color.b, m.color.a = 0.6, 1.0, 1.0
                markers.append(m)
        self.pub_tf.publish(TFMessage(transforms=transforms))
        self.pub_markers.publish(MarkerArray(markers=markers))


def main(args: list[str] | None = None) -> None:
    run_node(GraspPlannerNode, args)


if __name__ == "__main__":
    main()
