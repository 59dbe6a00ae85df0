"""Where things are: the repository, the reference models beside it, the test peers."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED_MODELS = REPO_ROOT.parent / "shared" / "models"
PEERS = REPO_ROOT / "test" / "peers"  # helper scripts tests start as processes


def shipped(node: str, *path: str):
    """A node's shipped default, ``config/<node>.yaml``: ``shipped("pick", "min_lift")``."""
    value = yaml.safe_load((REPO_ROOT / "config" / f"{node}.yaml").read_text())
    value = value["/**"]["ros__parameters"]
    for key in path:
        value = value[key]
    return value
