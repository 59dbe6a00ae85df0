"""Shared test code: helpers that test modules and the trial benches import.

``test/`` is on ``sys.path`` (pytest's rootdir conftest insertion; a bench run as
``python test/<bench>.py`` has it as its script folder), so this package imports as
``support``: ``from support.ros import spin_in_background``. Fixtures and hooks stay in
``test/conftest.py``; nothing imports from conftest.
"""
