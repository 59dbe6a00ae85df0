"""Recording what a graph does: rosbag2 bags with MCAP storage."""
