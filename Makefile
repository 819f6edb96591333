# Two commands for a fresh machine: `make run` (set up + main experiment) and
# `make test` (set up + test suite). Both create .venv and install the project
# editable with its dependencies the first time.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The offline CUDA build of torch 2.14.1 runs on the CPU; its torchvision must match.
TORCH_PINS := torch==2.14.1 torchvision==0.29.1
EXPERIMENT ?= configs/experiments/glasgow_xor.yaml

.PHONY: setup run test test-fast test-slow lint bench tensorboard clean

$(BIN)/featlearn: setup.cfg pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q $(TORCH_PINS)
	$(BIN)/python -m pip install -q -e '.[test,figures]'
	touch $(BIN)/featlearn

setup: $(BIN)/featlearn

run: setup
	$(BIN)/featlearn fit --config $(EXPERIMENT)

# Fast suite, then the slow experiment checks as a separate step.
test: setup
	$(BIN)/python -m ruff check .
	$(BIN)/python -m pytest -m "not slow" -q
	$(BIN)/python -m pytest -m slow -q

test-fast: setup
	$(BIN)/python -m pytest -m "not slow" -q

lint: setup
	$(BIN)/python -m ruff check .

bench: setup
	$(BIN)/python benchmarks/bench_throughput.py
	$(BIN)/python benchmarks/bench_baselines.py
	$(BIN)/python benchmarks/bench_idle_groups.py
	$(BIN)/python benchmarks/bench_step.py

tensorboard: setup
	$(BIN)/tensorboard --logdir runs

clean:
	rm -rf runs lightning_logs .pytest_cache
