"""The pick across two hosts: the sim bridge in one network namespace, the TF publisher and the
pick in another, joined by a veth link (``netns.two_hosts``).

Each host starts its share of ``pick_graph(sim=True)`` with the product's own command,
``physai bringup pick --only sim_bridge`` on A and ``--skip sim_bridge`` on B, so the nodes,
parameters and remaps are the single-host graph's; only discovery crosses the link.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from physai_ros.experiments.trials import netns, two_host_pick

pytestmark = [pytest.mark.dds, pytest.mark.slow]


@pytest.fixture
def hosts(ros_domain):
    missing = netns.missing_tools()
    if missing:
        message = f"the two-host tests need {missing} (scripts/test_tools.sh installs iptables)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    with netns.two_hosts(ros_domain) as pair:
        yield pair


def split_pick(a, b, out: Path, env_a=None, env_b=None) -> dict:
    """``two_host_pick.split_pick``, asserting both bringups saw the pick end: B received the
    outcome, and A, which runs only the sim bridge, saw the same one across the link."""
    codes, outcome = two_host_pick.split_pick(a, b, out, env_a, env_b)
    pick_log = (out / "b.logs" / "pick.log").read_text(errors="replace")[-3000:]
    outputs = [(out / f"{tag}.out").read_text()[-2000:] for tag in "ab"]
    assert codes == [0, 0], (codes, *outputs, pick_log)
    # as text: the outcome's NaN fields (not measured) are equal only as written
    assert json.dumps(json.loads((out / "a.json").read_text())) == json.dumps(outcome)
    return outcome


def test_split_pick_holds_with_multicast_discovery(hosts, tmp_path):
    a, b = hosts
    outcome = split_pick(a, b, tmp_path)
    assert outcome["outcome"] == "held", outcome
    assert outcome["lift"] == pytest.approx(0.073, abs=0.003), outcome  # the one-host lift


def test_split_pick_holds_with_static_peers(hosts, tmp_path):
    """No multicast across the link: LOCALHOST discovery plus the other host in
    ROS_STATIC_PEERS (rcl reads the peers unless the range is OFF, which disables discovery
    altogether, this host's own nodes included)."""
    a, b = hosts
    outcome = split_pick(
        a,
        b,
        tmp_path,
        {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST", "ROS_STATIC_PEERS": b.address},
        {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST", "ROS_STATIC_PEERS": a.address},
    )
    assert outcome["outcome"] == "held", outcome
    assert outcome["lift"] == pytest.approx(0.073, abs=0.003), outcome


def test_split_pick_holds_at_ten_percent_loss(hosts, tmp_path):
    """10 % of the packets crossing the link dropped, both ways: state streams are read best
    effort and reliable goals are repaired within 0.1 s (docs/qos.md), so the pick holds as on
    one host."""
    a, b = hosts
    b.set_loss(0.10)
    outcome = split_pick(a, b, tmp_path)
    dropped = b.dropped()
    assert dropped > 200, f"only {dropped} packets dropped: the loss rules are not in the path"
    assert outcome["outcome"] == "held", outcome
    assert outcome["lift"] == pytest.approx(0.073, abs=0.003), outcome


PROBE = Path(__file__).parent / "peers" / "topic_probe.py"


def probes(a, b, env_a: dict[str, str], env_b: dict[str, str]) -> tuple[list, list]:
    """A's and B's ``topic_probe`` run side by side (both with the package's DDS profile, as
    our nodes): what each discovered of the other."""
    runs = [
        subprocess.Popen(
            host.command(sys.executable, str(PROBE), tag, "5", "--profile"),
            env=host.env(env),
            stdout=subprocess.PIPE,
            text=True,
        )
        for host, tag, env in ((a, "a", env_a), (b, "b", env_b))
    ]
    outputs = [run.communicate(timeout=60)[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    return tuple(json.loads(out.strip().splitlines()[-1]) for out in outputs)


def test_the_dds_profile_keeps_a_localhost_node_on_its_host(hosts):
    """config/fastdds.xml names its own UDP locators (all interfaces) and multicast group, so
    that no node opens shared-memory ports (docs/faults.md). A real arm's graph runs with
    discovery:=localhost: its nodes must still stay invisible to another host, and see
    nothing of it. The same pair over SUBNET discover each other: the probe can see."""
    a, b = hosts
    local = {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    subnet = {"ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET"}
    assert probes(a, b, local, subnet) == ([], [])
    assert probes(a, b, subnet, subnet) == (["/probe_b"], ["/probe_a"])


def test_a_hand_started_so101_driver_is_invisible_from_another_host(hosts, tmp_path):
    """``ros2 run physai_ros so101_driver`` (its ``main``) in a shell with no discovery range
    set, where ROS's default is the whole subnet: the driver keeps itself to its computer, so
    a node on another host cannot see it, let alone call ``~/release``. With the range opened
    by the user (SUBNET), the same probe sees it: the probe can see."""
    a, b = hosts
    for chosen, visible in (("", False), ("SUBNET", True)):
        env = a.env({"ROS_AUTOMATIC_DISCOVERY_RANGE": chosen})
        log = tmp_path / f"driver_{chosen or 'default'}.log"
        with log.open("w") as out:
            driver = subprocess.Popen(
                a.command(
                    sys.executable,
                    "-c",
                    "from physai_ros.nodes.so101_driver import main; main()",
                    "--ros-args",
                    "-p",
                    f"port:={tmp_path / 'no_arm'}",
                ),
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            probe = subprocess.run(
                b.command(sys.executable, str(PROBE), "b", "6", "--watch", "/so101_driver"),
                env=b.env(),
                stdout=subprocess.PIPE,
                text=True,
                timeout=60,
                check=True,
            )
        finally:
            driver.terminate()
            driver.wait(timeout=20)
        seen = json.loads(probe.stdout.strip().splitlines()[-1])
        text = log.read_text()
        assert driver.returncode is not None and "discovery range" in text, text[-2000:]
        assert ("/so101_driver/transition_event" in seen) == visible, (chosen, seen, text[-2000:])
        expected = "SUBNET" if chosen else "LOCALHOST (this computer only"
        assert f"discovery range {expected}" in text, text[-2000:]
