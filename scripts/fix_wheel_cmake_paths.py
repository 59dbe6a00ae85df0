"""Point the ROS 2 wheels' CMake exports at this machine's Python and NumPy include dirs.

The Kilted wheels were built in a manylinux container whose interpreter lived under
``/opt/python/cp311-cp311``; their exported CMake targets still name those include directories,
and CMake refuses to use a target whose include directory does not exist. Rewriting the paths
inside the venv (instead of creating ``/opt/python`` as root) keeps the fix project-local.

Usage: python fix_wheel_cmake_paths.py VENV
"""

from __future__ import annotations

import argparse
import sysconfig
from pathlib import Path

import numpy

BUILD_HOST_PREFIX = "/opt/python/cp311-cp311"


def rewrite(venv: Path) -> int:
    """Rewrite the build host's include paths in every CMake file under ``venv/share``."""
    replacements = {
        f"{BUILD_HOST_PREFIX}/include/python3.11": sysconfig.get_paths()["include"],
        f"{BUILD_HOST_PREFIX}/lib/python3.11/site-packages/numpy/_core/include": (
            numpy.get_include()
        ),
    }
    changed = 0
    for path in sorted((venv / "share").glob("*/cmake/*.cmake")):
        text = path.read_text()
        new = text
        for old, repl in replacements.items():
            new = new.replace(old, repl)
        if new != text:
            path.write_text(new)
            changed += 1
    return changed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("venv", type=Path, help="the virtual environment to fix")
    args = parser.parse_args()
    print(f"rewrote build-host include paths in {rewrite(args.venv)} CMake files")


if __name__ == "__main__":
    main()
