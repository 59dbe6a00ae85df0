"""The package's configuration files (``config/``), read one way everywhere.

Every node's defaults are a ROS 2 parameters file (``/**: ros__parameters``), the same file a
user passes with ``--params-file``; the scene and the simulated robots are plain YAML. This is
the one reader of both, so a node, an in-process experiment and a test read the same numbers.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

from physai_ros.errors import InvalidInput
from physai_ros.paths import config_path


def parameters_tree(path: str | Path) -> dict[str, Any]:
    """The ``/**: ros__parameters`` section of the parameters file ``path`` as nested dicts."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise InvalidInput(f"cannot read parameters file {path}: {err}") from err
    except yaml.YAMLError as err:
        raise InvalidInput(f"{path} is not valid YAML: {err}") from err
    try:
        return dict(data["/**"]["ros__parameters"])
    except (KeyError, TypeError) as err:
        raise InvalidInput(f"{path} is not a ROS parameters file with a '/**' section") from err


def node_tree(file_name: str) -> dict[str, Any]:
    """``parameters_tree`` of the shipped ``config/<file_name>`` (a node's defaults)."""
    return parameters_tree(config_path(file_name))


@cache
def _yaml(file_name: str) -> dict[str, Any]:
    with config_path(file_name).open(encoding="utf-8") as stream:
        return yaml.safe_load(stream)


def load_scene_config() -> dict[str, Any]:
    """``config/scene.yaml`` as a dict (read once): the pick scene's defaults and presets."""
    return _yaml("scene.yaml")


def load_sim_config() -> dict[str, Any]:
    """``config/sim_robots.yaml`` as a dict (read once): each simulated robot's joints,
    control, gains and controller defaults."""
    return _yaml("sim_robots.yaml")
