#!/usr/bin/env bash
# Tools the tests use as a user's client, never the package at run time: ROS 2's own launch,
# launch_ros and `ros2` command line (../shared/ros2_python, upstream sources). A sourced ROS 2
# install has them already. Idempotent; called by `make test`, not by `make demo`.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${PHYSAI_VENV:-$ROOT/.venv}
SHARED="$ROOT/../shared/ros2_python"
# The two-host tests and `physai bench net` (physai_ros/experiments/trials/netns.py) make network
# namespaces with `ip` and drop packets on their veth link with `iptables`: as root on a
# Debian-like system (CI), install what is missing.
MISSING=""
command -v ip >/dev/null 2>&1 || MISSING="$MISSING iproute2"
command -v iptables >/dev/null 2>&1 || MISSING="$MISSING iptables"
if [ -n "$MISSING" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "physai test tools: installing$MISSING (the two-host tests)" >&2
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $MISSING; } >/dev/null
fi
if [ -n "${ROS_DISTRO:-}" ] && command -v ros2 >/dev/null 2>&1; then
  exit 0  # the sourced ROS 2 install brings ros2, launch and launch_ros
fi
if [ ! -x "$SHARED/install.sh" ]; then
  if [ "${CI:-}" = true ]; then
    echo "physai test tools: $SHARED is missing (CI needs it: the ros2 CLI tests run what users run)" >&2
    exit 1
  fi
  echo "physai test tools: no $SHARED; the tests that run ros2 launch/run/lifecycle will skip" >&2
  exit 0
fi
bash "$SHARED/install.sh" "$VENV" >&2
