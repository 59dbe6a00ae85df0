"""Demonstrations as LeRobot datasets: scripted picks verified by the physics, written with
LeRobot's own dataset API (format v3.0) so LeRobot loads and trains on them as it does on its
own recordings."""
