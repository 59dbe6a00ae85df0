"""ros2_controllers' controller semantics (joint trajectory, gripper action) as pure code that
every backend shares: one layer, so the sim bridge and the real drivers behave alike."""
