"""Grasp planning for deformable objects (seed 003: Zaidi et al., Applied Sciences 10(23):8736).

Four steps, one module each, all pure (numpy/scipy/mujoco, never rclpy):

- ``objects``: the object as surface points, outward normals and a centre of mass;
- ``contacts``: contact selection (three fingers: Q1/Q2, two jaws: antipodal) and quality;
- ``pregrasp``: arm IK of the two-jaw hands; ``barrett``: finger IK of the Barrett-like hand
  (2° per joint, TCP-line retry), then the Panda's arm IK;
- ``lattice``, ``contact_law``, ``closing``: the mass–spring body, the Hunt–Crossley and
  stick–slip contact laws, and the closing simulation to static equilibrium;
- ``flex_check``: the same squeeze in MuJoCo's own deformable bodies (flexcomp);
- ``plan``: the pipeline and its JSON-ready result.
"""
