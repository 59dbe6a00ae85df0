"""rclpy nodes: parameters, topics, actions and timers; the maths lives in ``core``."""
