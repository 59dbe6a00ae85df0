"""Where things are: the repository, the reference models beside it, the test peers."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED_MODELS = REPO_ROOT.parent / "shared" / "models"
PEERS = REPO_ROOT / "test" / "peers"  # helper scripts tests start as processes
