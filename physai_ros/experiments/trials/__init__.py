"""Judged trial benches behind ``physai bench crash|force-close|hand-pick|so101-force|net``.

Each starts the product's node graphs as the launch files start them (one process per node),
runs trials against them from a client node in its own process, and prints a table: k/n with
Wilson 95 % intervals where a rate is judged. Minutes to hours of CPU; none runs in CI (their
representative runs are tests). The helper modules hold what they share with the tests: the
client nodes (``observers``, ``spinning``), the force bench's pure parts (``force_runs``), two
hosts on one machine (``netns``, ``two_host_pick``).
"""
