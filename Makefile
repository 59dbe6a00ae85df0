# The two commands: `make demo` (set up, then the simulated pick through the ROS node graph)
# and `make test` (set up, then every test). Both set up whatever is missing first: `make demo`
# only what the simulated pick needs (the demo profile of scripts/setup.sh), `make test` and
# `make setup` also LeRobot with torch (the real SO-101, datasets) and the test tools (the full profile).
SHELL := /bin/bash
VENV ?= $(CURDIR)/.venv
export PHYSAI_VENV := $(VENV)
RUN := source scripts/env.sh &&
PYTEST_ARGS ?=

.PHONY: help setup setup-demo demo test lint shell colcon clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

setup:  ## create/refresh .venv with everything: the sim, LeRobot (real SO-101), test tools
	@PHYSAI_SETUP=full bash scripts/setup.sh

setup-demo:  ## create/refresh .venv with what the simulated pick needs (no LeRobot, no torch)
	@PHYSAI_SETUP=demo bash scripts/setup.sh

demo: setup-demo  ## the simulated SO-101 pick through the ROS 2 node graph (separate processes)
	@$(RUN) physai bringup pick

test: setup  ## run lint and all tests (what CI runs)
	@bash scripts/test_tools.sh
	@$(RUN) ruff check . && ruff format --check . && lint-imports
	@# Two halves: the tests that keep no wall-clock timing on two workers, then the ones that do
	@# (ROS graphs in real time, the servo bus on a pty) one at a time. Exit 5: none selected.
	@$(RUN) python -m pytest -n 2 --dist worksteal -m "not dds and not realtime" $(PYTEST_ARGS) \
	  || [ $$? -eq 5 ]
	@$(RUN) python -m pytest -m "dds or realtime" $(PYTEST_ARGS) || [ $$? -eq 5 ]

lint: setup  ## ruff check, format check and the import layers
	@$(RUN) ruff check . && ruff format --check . && lint-imports

shell: setup-demo  ## an interactive shell with the environment (rclpy, tf2_msgs, control_msgs, physai)
	@bash --rcfile <(echo '[ -f ~/.bashrc ] && source ~/.bashrc; source scripts/env.sh; PS1="(physai) $$PS1"') -i

colcon: setup-demo  ## colcon build of the package into build/ and install/ (the ROS-native path)
	@$(RUN) colcon build --packages-select physai_ros --base-paths . --event-handlers console_direct-

clean:  ## remove the environment and build products
	rm -rf $(VENV) .cache build install log physai_output .pytest_cache
