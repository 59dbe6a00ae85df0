"""Without LeRobot (the `make demo` set-up leaves it out) the real SO-101 path stops at once with
an error naming the set-up command, not with an ImportError from deep inside."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from physai_ros.errors import PhysaiError
from physai_ros.robots.so101.bus import BusSettings, So101Bus, load_calibration


@pytest.fixture
def no_lerobot(monkeypatch):
    # A None entry makes both importlib.util.find_spec and the import itself miss the package.
    for name in ("lerobot", "lerobot.motors", "lerobot.motors.feetech", "draccus"):
        monkeypatch.setitem(sys.modules, name, None)


def test_the_bus_names_the_setup_command(no_lerobot, tmp_path):
    settings = BusSettings("/dev/null", tmp_path / "cal.json", np.full(6, -1.0), np.full(6, 1.0))
    with pytest.raises(PhysaiError, match=r"not installed.*`make setup`.*requirements/lerobot"):
        So101Bus(settings)
    (tmp_path / "cal.json").write_text("{}")
    with pytest.raises(PhysaiError, match=r"`make setup`"):
        load_calibration(tmp_path / "cal.json")
