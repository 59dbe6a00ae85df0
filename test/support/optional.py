"""Optional dependencies of a test: skipped where absent, except in CI, where absent fails."""

from __future__ import annotations

import os

import pytest


def require(module: str):
    """Import ``module`` for a test, as ``pytest.importorskip`` does, except in CI
    (``CI=true``), where its absence is an error: a skipped check in CI proves nothing."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{module} is not installed: {exc}")
        pytest.skip(f"{module} is not installed", allow_module_level=True)
