"""Two hosts on one machine for the multi-host bench and tests: network namespaces joined by a
veth pair.

Each ``two_hosts()`` makes namespaces ``physai-<pid>-<n>-a`` and ``…-b`` (the creating
process's pid in the name: parallel runs never collide, and a run that crashed before its
tear-down leaves namespaces whose pid is dead, which the next run deletes first). The link is
``veth0`` in both, 10.77.0.1/24 ↔ 10.77.0.2/24 (every pair has its own namespaces, so the
same addresses serve them all), with the multicast route DDS discovery needs and ``lo`` up.
Processes run in a host with ``ip netns exec``; FASTDDS_BUILTIN_TRANSPORTS=UDPv4 keeps Fast
DDS off shared memory, which would otherwise carry the samples past the link. Loss on the link
is iptables' ``statistic`` match on veth0 (the kernel here has no netem).
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass

PREFIX = "physai-"
LINK = "veth0"
SUBNET = "10.77.0"
_pairs = itertools.count()


@dataclass(frozen=True)
class Host:
    """One end of the link: its namespace, address and the DDS environment of its processes."""

    netns: str
    address: str
    domain: int

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """This process's environment with the host's DDS settings: the run's domain,
        discovery over the subnet, UDP only. ``extra`` overrides (e.g. static peers)."""
        return {
            **os.environ,
            "ROS_DOMAIN_ID": str(self.domain),
            "ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET",
            "FASTDDS_BUILTIN_TRANSPORTS": "UDPv4",
            **(extra or {}),
        }

    def command(self, *args: str) -> list[str]:
        """``args`` run inside this host (``ip netns exec``)."""
        return ["ip", "netns", "exec", self.netns, *args]

    def run(self, *args: str) -> str:
        """Run a short command inside this host; fails with its output on a non-zero exit."""
        return _run(*self.command(*args))

    def set_loss(self, probability: float) -> None:
        """Drop each packet crossing the link, in and out of this host, with ``probability``
        (0 removes the rule). Loss set on one host is loss on the link in both directions;
        traffic on the host's own loopback is untouched."""
        if not 0.0 <= probability < 1.0:
            raise ValueError(f"loss probability must be in [0, 1), got {probability}")
        for chain in ("INPUT", "OUTPUT"):
            self.run("iptables", "-F", chain)
        if probability == 0.0:
            return
        for chain, direction in (("INPUT", "-i"), ("OUTPUT", "-o")):
            self.run(
                "iptables", "-A", chain, direction, LINK,
                "-m", "statistic", "--mode", "random", "--probability", f"{probability:.4f}",
                "-j", "DROP",
            )  # fmt: skip

    def dropped(self) -> int:
        """Packets the loss rules have dropped so far (both directions)."""
        out = self.run("iptables", "-L", "-v", "-n", "-x")
        return sum(int(m.group(1)) for m in re.finditer(r"^\s*(\d+)\s+\d+\s+DROP", out, re.M))


def _run(*args: str) -> str:
    result = subprocess.run(args, capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed: {result.stdout}{result.stderr}")
    return result.stdout


def missing_tools() -> list[str]:
    """What the hosts need and this machine lacks (root, ``ip``, ``iptables``)."""
    missing = [tool for tool in ("ip", "iptables") if shutil.which(tool) is None]
    return missing + ([] if os.geteuid() == 0 else ["root"])


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_leftovers() -> list[str]:
    """Delete the namespaces of runs whose process is gone (crashed before tear-down)."""
    removed = []
    for line in _run("ip", "netns", "list").splitlines():
        name = line.split()[0] if line.strip() else ""
        match = re.fullmatch(rf"{PREFIX}(\d+)-\d+-[ab]", name)
        if match and not _pid_alive(int(match.group(1))):
            subprocess.run(["ip", "netns", "delete", name], capture_output=True, timeout=30)
            removed.append(name)
    return removed


def _kill_processes_in(netns: str) -> None:
    """SIGKILL whatever still runs in ``netns`` (processes the bench or test did not stop)."""
    pids = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True)
    for pid in pids.stdout.split():
        with suppress(ProcessLookupError):
            os.kill(int(pid), 9)


@contextmanager
def two_hosts(domain: int) -> Iterator[tuple[Host, Host]]:
    """Hosts A (10.77.0.1) and B (10.77.0.2) joined by a veth link; deleted on exit, with
    anything still running in them."""
    remove_leftovers()
    base = f"{PREFIX}{os.getpid()}-{next(_pairs)}"
    hosts = (Host(f"{base}-a", f"{SUBNET}.1", domain), Host(f"{base}-b", f"{SUBNET}.2", domain))
    try:
        for host in hosts:
            _run("ip", "netns", "add", host.netns)
        a, b = hosts
        _run(
            "ip", "link", "add", LINK, "netns", a.netns,
            "type", "veth", "peer", "name", LINK, "netns", b.netns,
        )  # fmt: skip
        for host in hosts:
            host.run("ip", "link", "set", "lo", "up")
            host.run("ip", "addr", "add", f"{host.address}/24", "dev", LINK)
            host.run("ip", "link", "set", LINK, "up")
            host.run("ip", "route", "add", "224.0.0.0/4", "dev", LINK)
        yield hosts
    finally:
        for host in hosts:
            _kill_processes_in(host.netns)
            subprocess.run(["ip", "netns", "delete", host.netns], capture_output=True, timeout=30)
