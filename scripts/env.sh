# Source this file to get the project's environment in the current shell:
#     source scripts/env.sh
# (or run `make shell`). It activates the venv that scripts/setup.sh made, and, when a ROS 2
# install is sourced, puts the interface packages generated into the venv on the library path.
_physai_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
_physai_venv=${PHYSAI_VENV:-$_physai_root/.venv}
if [ ! -x "$_physai_venv/bin/python" ]; then
  echo "physai: no environment at $_physai_venv; run 'make setup' (or 'bash scripts/setup.sh') first" >&2
  return 1 2>/dev/null || exit 1
fi
# shellcheck disable=SC1091
source "$_physai_venv/bin/activate"
# The wheels' .pth puts <venv>/lib on LD_LIBRARY_PATH when Python starts; colcon-built
# interfaces land in the same place, and AMENT_PREFIX_PATH lets ament_index find them.
export LD_LIBRARY_PATH="$_physai_venv/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export AMENT_PREFIX_PATH="$_physai_venv${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
export CMAKE_PREFIX_PATH="$_physai_venv${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export MPLBACKEND=${MPLBACKEND:-Agg}
unset _physai_root _physai_venv
