# The two commands: `make demo` (set up, then the simulated pick through the ROS node graph)
# and `make test` (set up, then every test). Both set up whatever is missing first: `make demo`
# only what the simulated pick needs (the demo profile of scripts/setup.sh), `make test` and
# `make setup` also LeRobot with torch (the real SO-101, datasets) and the test tools (the full profile).
# `make test` also runs the tests that need no ROS 2 under Python 3.12 with LeRobot 0.6, in a
# second environment (.venv-py312, the py312 profile), as `make test-py312` does alone.
SHELL := /bin/bash
VENV ?= $(CURDIR)/.venv
VENV_PY312 ?= $(CURDIR)/.venv-py312
export PHYSAI_VENV := $(VENV)
RUN := source scripts/env.sh &&
PYTEST_ARGS ?=

.PHONY: help setup setup-demo setup-py312 demo test test-py312 lint shell colcon clean

help:  ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

setup:  ## create/refresh .venv with everything: the sim, LeRobot (real SO-101), test tools
	@PHYSAI_SETUP=full bash scripts/setup.sh

setup-demo:  ## create/refresh .venv with what the simulated pick needs (no LeRobot, no torch)
	@PHYSAI_SETUP=demo bash scripts/setup.sh

setup-py312:  ## create/refresh .venv-py312: Python 3.12, LeRobot 0.6, no ROS 2
	@PHYSAI_SETUP=py312 PHYSAI_VENV=$(VENV_PY312) bash scripts/setup.sh

demo: setup-demo  ## the simulated SO-101 pick through the ROS 2 node graph (separate processes)
	@$(RUN) physai bringup pick

test: setup  ## run lint and all tests (what CI runs)
	@bash scripts/test_tools.sh
	@$(RUN) ruff check . && ruff format --check . && lint-imports
	@# Two halves: the tests that keep no wall-clock timing on two workers, then the ones that do
	@# (ROS graphs in real time, the servo bus on a pty) one at a time. Exit 5: none selected.
	@# Python 3.12's environment is set up meanwhile (mostly downloads: torch is a CUDA build);
	@# what that printed comes after the tests, with the free disk if it failed, and test-py312's
	@# own set-up then tries again (it resumes; a download that failed once may not twice).
	@log=$$(mktemp); PHYSAI_SETUP=py312 PHYSAI_VENV=$(VENV_PY312) bash scripts/setup.sh >$$log 2>&1 & \
	  setup=$$!; $(RUN) python -m pytest -n 2 --dist worksteal -m "not dds and not realtime" \
	  $(PYTEST_ARGS); tests=$$?; wait $$setup; setup=$$?; cat $$log; rm -f $$log; \
	  [ $$setup -eq 0 ] || { echo "make test: the Python 3.12 set-up above failed (exit $$setup)" \
	  "beside the tests; free disk:"; df -h .; }; [ $$tests -eq 0 ] || [ $$tests -eq 5 ]
	@$(MAKE) --no-print-directory test-py312
	@$(RUN) python -m pytest -m "dds or realtime" $(PYTEST_ARGS) || [ $$? -eq 5 ]

# Under Python 3.12 with LeRobot 0.6: the code that meets LeRobot or is named for that leg (the
# streaming core, policies, datasets and their recording, the SO-101 bus and its emulator, the
# stream and record benches). `make test-py312 PY312_TESTS=test` runs every test that needs no
# ROS 2 there (the `ros` marker; the modules that import ROS 2 are reported as skipped).
PY312_TESTS ?= test/test_streaming.py test/test_policies.py test/test_record.py \
  test/test_datasets.py test/test_timeline.py \
  test/test_feetech_protocol.py test/test_feetech_emulator.py test/test_so101_config.py \
  test/test_so101_health_reads.py test/test_so101_jaw_lever.py test/test_so101_leader.py \
  test/test_so101_reports.py test/test_so101_speed.py test/test_so101_stop.py \
  test/test_so101_without_lerobot.py \
  test/test_commands.py::test_bench_record test/test_commands.py::test_bench_stream
test-py312: setup-py312  ## the LeRobot-facing tests under Python 3.12 with LeRobot 0.6 (no ROS 2)
	@export PHYSAI_VENV=$(VENV_PY312) PHYSAI_WITHOUT_ROS=1 && $(RUN) python -m pytest -n 2 --dist worksteal \
	  -m "not ros and not dds and not realtime" $(PYTEST_ARGS) $(PY312_TESTS)
	@export PHYSAI_VENV=$(VENV_PY312) PHYSAI_WITHOUT_ROS=1 && $(RUN) python -m pytest \
	  -m "realtime and not ros and not dds" $(PYTEST_ARGS) $(PY312_TESTS)

lint: setup  ## ruff check, format check and the import layers
	@$(RUN) ruff check . && ruff format --check . && lint-imports

shell: setup-demo  ## an interactive shell with the environment (rclpy, tf2_msgs, control_msgs, physai)
	@bash --rcfile <(echo '[ -f ~/.bashrc ] && source ~/.bashrc; source scripts/env.sh; PS1="(physai) $$PS1"') -i

colcon: setup-demo  ## colcon build of the package into build/ and install/ (the ROS-native path)
	@$(RUN) colcon build --packages-select physai_ros --base-paths . --event-handlers console_direct-

clean:  ## remove the environment and build products
	rm -rf $(VENV) $(VENV_PY312) .cache build install log physai_output .pytest_cache
