"""The pick split across two hosts (``netns.two_hosts``): the sim bridge on host A, TF and the
pick on host B, each share started by the product's own ``physai bringup pick``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from physai_ros.experiments.trials import netns

TIMEOUT = 120.0  # [s wall] a pick takes ≈ 10 s of sim time; the graph ≈ 30 s to start under load


def split_pick(
    a: netns.Host,
    b: netns.Host,
    out: Path,
    env_a: dict[str, str] | None = None,
    env_b: dict[str, str] | None = None,
) -> tuple[list[int], dict | None]:
    """One pick with the sim bridge on ``a`` and TF + pick on ``b``: the two bringups' exit
    codes and the outcome B's bringup received (None: none within ``TIMEOUT``). Logs go to
    ``out/{a,b}.out`` and ``out/{a,b}.logs/<node>.log``."""
    procs = []
    for host, share, tag, env in ((a, "--only", "a", env_a), (b, "--skip", "b", env_b)):
        cmd = host.command(
            sys.executable, "-m", "physai_ros.cli", "bringup", "pick", share, "sim_bridge",
            "--duration", str(TIMEOUT),
            "--outcome-json", str(out / f"{tag}.json"),
            "--log-dir", str(out / f"{tag}.logs"),
        )  # fmt: skip
        log = open(out / f"{tag}.out", "w")  # noqa: SIM115 - closed below
        procs.append(
            (subprocess.Popen(cmd, env=host.env(env), stdout=log, stderr=subprocess.STDOUT), log)
        )
    try:
        codes = [p.wait(TIMEOUT + 60) for p, _ in procs]
    finally:
        for p, log in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            log.close()
    path = out / "b.json"
    return codes, json.loads(path.read_text()) if path.exists() else None
