"""The lessons' tables, sweeps, plots and benchmarks behind ``physai lesson`` and ``physai bench``.

Each lesson or benchmark module exposes ``add_arguments(parser)`` and ``run(args) -> int``
so that ``physai`` can mount it as a subcommand without importing it until it is used.
"""
