# The two commands: `make demo` (set up, then the simulated pick through the ROS node graph)
# and `make test` (set up, then every test). Both set up whatever is missing first.
SHELL := /bin/bash
VENV ?= $(CURDIR)/.venv
export PHYSAI_VENV := $(VENV)
RUN := source scripts/env.sh &&
PYTEST_ARGS ?=

.PHONY: help setup demo test lint shell colcon clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-8s %s\n", $$1, $$2}'

setup:  ## create/refresh the project-local environment (.venv); idempotent
	@bash scripts/setup.sh

demo: setup  ## the simulated SO-101 pick through the ROS 2 node graph (separate processes)
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

shell: setup  ## an interactive shell with the environment (rclpy, tf2_msgs, control_msgs, physai)
	@bash --rcfile <(echo '[ -f ~/.bashrc ] && source ~/.bashrc; source scripts/env.sh; PS1="(physai) $$PS1"') -i

colcon: setup  ## colcon build of the package into build/ and install/ (the ROS-native path)
	@$(RUN) colcon build --packages-select physai_ros --base-paths . --event-handlers console_direct-

clean:  ## remove the environment and build products
	rm -rf $(VENV) .cache build install log physai_output .pytest_cache
