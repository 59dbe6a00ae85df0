"""Two hosts on one machine (network namespaces joined by a veth link): the pick split across
them under packet loss, or ``physai bench sim``'s listeners across the link.

The hosts are ``netns.two_hosts``'s. Host A runs ``physai bringup pick --only sim_bridge``,
host B ``--skip sim_bridge``: each its share of ``pick_graph(sim=True)``, with the product's own
command and parameters.

Run the sweep (root; ``ip`` and ``iptables``)::

    physai bench net --loss 5 10 20 --picks 10

It prints, per loss level, how many picks held, ended otherwise with an outcome (its reason),
or hung (no outcome within the timeout).

Many listeners across the link: ``physai bench sim`` on host A, its listener processes on host
B (``--listener-prefix 'ip netns exec <B>'``), every sample crossing the veth::

    physai bench net --listeners 1,3 [--seconds 5] [--levers]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from physai_ros.experiments.trials import netns
from physai_ros.experiments.trials.two_host_pick import split_pick


def sweep(losses: list[float], picks: int, domain: int, keep: Path) -> list[str]:
    """``picks`` picks (each a fresh pair of hosts and graph) per loss level [%]; one line
    per level."""
    lines = []
    for loss in losses:
        tally: Counter[str] = Counter()
        reasons: list[str] = []
        for i in range(picks):
            out = keep / f"loss{loss:g}-{i}"
            out.mkdir(parents=True)
            with netns.two_hosts(domain) as (a, b):
                b.set_loss(loss / 100)
                _, outcome = split_pick(a, b, out)
            if outcome is None:
                tally["hung"] += 1
            elif outcome["outcome"] == "held":
                tally["held"] += 1
            else:
                tally["not held"] += 1
                reasons.append(f"{outcome['outcome']}: {outcome['reason']}")
            print(f"  {loss:g} % pick {i}: {outcome and outcome['outcome']}", flush=True)
        line = (
            f"loss {loss:g} %: held {tally['held']}/{picks}, ended otherwise "
            f"{tally['not held']}, hung {tally['hung']}"
        )
        lines.append(line + "".join(f"\n    {r}" for r in reasons))
    return lines


def listeners_across(counts: str, seconds: float, levers: bool, domain: int) -> int:
    """``physai bench sim --listeners counts`` with the bridge on host A and the listeners on
    host B; its table goes to stdout. Returns its exit code."""
    with netns.two_hosts(domain) as (a, b):
        cmd = a.command(
            sys.executable, "-m", "physai_ros.cli", "bench", "sim",
            "--listeners", counts, "--seconds", str(seconds),
            "--listener-prefix", " ".join(b.command()),
            *(["--levers"] if levers else []),
        )  # fmt: skip
        return subprocess.run(cmd, env=a.env(), timeout=3600).returncode


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--loss", type=float, nargs="+", default=[5.0, 10.0, 20.0], help="[%%]")
    parser.add_argument("--picks", type=int, default=10, help="picks per loss level")
    parser.add_argument("--domain", type=int, default=77, help="ROS_DOMAIN_ID of the hosts")
    parser.add_argument("--keep", type=Path, default=None, help="keep the logs here")
    parser.add_argument(
        "--listeners",
        default="",
        help="instead of the sweep: bench sim with these listener counts (e.g. 1,3) on host B",
    )
    parser.add_argument("--seconds", type=float, default=5.0, help="per bench sim case [s]")
    parser.add_argument("--levers", action="store_true", help="bench sim --levers across")


def run(args: argparse.Namespace) -> int:
    missing = netns.missing_tools()
    if missing:
        print(f"needs {missing}", file=sys.stderr)
        return 2
    if args.listeners:
        return listeners_across(args.listeners, args.seconds, args.levers, args.domain)
    with tempfile.TemporaryDirectory(prefix="physai-net-") as tmp:
        lines = sweep(args.loss, args.picks, args.domain, args.keep or Path(tmp))
    print("\n".join(lines))
    return 0
