"""Pure core: numpy, scipy and mujoco only. Nothing here may import rclpy."""
