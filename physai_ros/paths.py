"""Where the package's share files (config/, launch/, urdf/) are, however it was installed.

Three installs must work: colcon (files under ``<prefix>/share/physai_ros``, found through the
ament index), pip (the same ``share/physai_ros`` under ``sys.prefix``) and a source checkout or
editable install (the repository root, next to the ``physai_ros`` Python package).
"""

from __future__ import annotations

import contextlib
import sys
from functools import cache
from pathlib import Path

from physai_ros.errors import PhysaiError

PACKAGE = "physai_ros"


@cache
def share_dir() -> Path:
    """The directory that holds ``config/``, ``launch/`` and ``urdf/``."""
    candidates: list[Path] = []
    source_root = Path(__file__).resolve().parents[1]
    candidates.append(source_root)
    try:
        from ament_index_python.packages import (
            PackageNotFoundError,
            get_package_share_directory,
        )

        # Without AMENT_PREFIX_PATH the index raises EnvironmentError (an OSError) instead.
        with contextlib.suppress(PackageNotFoundError, OSError, ValueError):
            candidates.append(Path(get_package_share_directory(PACKAGE)))
    except ImportError:
        pass
    candidates.append(Path(sys.prefix) / "share" / PACKAGE)
    for candidate in candidates:
        if (candidate / "config").is_dir() and (candidate / "package.xml").is_file():
            return candidate
    tried = ", ".join(str(c) for c in candidates)
    raise PhysaiError(f"cannot find the {PACKAGE} share directory (config/); looked in: {tried}")


def config_path(name: str) -> Path:
    """Path of ``config/<name>``; a clear error lists the files that do exist."""
    path = share_dir() / "config" / name
    if not path.is_file():
        present = sorted(p.name for p in (share_dir() / "config").iterdir())
        raise PhysaiError(f"config file {name!r} not found in {path.parent}; present: {present}")
    return path
