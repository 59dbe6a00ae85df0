"""The pick: the scripted pick's state machine (jaw and three-finger hand), its closes
(cap, force, Franka Grasp), judging, goal chaining, silence watch and grip physics. Pure: no
rclpy.
"""
