"""Starting graphs: one definition of each node graph for launch files and ``physai bringup``,
the bringup itself, the monitor that watches a running graph.
"""
