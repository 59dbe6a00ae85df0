"""Shared test code: helpers that only test modules import (what the trial benches share with
the tests lives in the product, ``physai_ros.experiments.trials`` and
``physai_ros.launching.process_graph``).

``test/`` is on ``sys.path`` (pytest's rootdir conftest insertion), so this package imports as
``support``: ``from support.ros import spin_in_background``. Fixtures and hooks stay in
``test/conftest.py``; nothing imports from conftest.
"""
