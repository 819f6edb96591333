# Two commands for a fresh machine: `make run` (set up + main experiment) and
# `make test` (set up + test suite). Both create .venv and install the project
# editable with its dependencies the first time.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The offline CUDA build of torch 2.14.1 runs on the CPU; its torchvision must match.
TORCH_PINS := torch==2.14.1 torchvision==0.29.1
EXPERIMENT ?= configs/experiments/glasgow_xor.yaml
# The docs site's builder (NO_MKDOCS_2_WARNING: Material's banner about its successor, printed on every build).
MKDOCS := NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs

.PHONY: setup run test test-fast test-slow lint docs bench tensorboard clean data report browser

$(BIN)/featlearn: setup.cfg pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q $(TORCH_PINS)
	$(BIN)/python -m pip install -q -e '.[test,docs]'
	touch $(BIN)/featlearn

setup: $(BIN)/featlearn

# featlearn, tensorboard and the README's commands live in .venv: the last line says how to reach them.
run: setup
	@status=0; $(BIN)/featlearn fit --config $(EXPERIMENT) || status=$$?; \
		echo ""; echo "To run featlearn and tensorboard in this shell: source $(VENV)/bin/activate"; exit $$status

# The reproduction report's and the docs site's screenshot tests render their HTML in a real
# headless browser: Debian's chromium, installed when missing and apt-get works (as root);
# otherwise those tests skip and say why.
browser:
	@command -v chromium >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1 || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null 2>&1 || \
		echo "could not install chromium: the screenshot tests (report, docs site) will skip"

# pytest-xdist workers, one per CPU core ("auto"); 0 runs the tests in this process. tests/conftest.py gives
# each worker its share of the cores. On 2 cores: fast suite 648 s in one process, 363 s so; slow checks 2075 s
# with two 2-thread workers, 1476 s with two 1-thread ones.
TEST_WORKERS ?= auto
# worksteal: the slow checks differ in length by 100x; an idle worker takes queued tests from a busy one.
PYTEST := $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist worksteal

# Lint, the docs site, the fast suite, then the slow experiment checks as a separate step.
test: setup browser
	$(BIN)/python -m ruff check .
	VENV=$(VENV) .ci/lint-imports
	$(MKDOCS) build --strict --quiet
	$(PYTEST) -m "not slow"
	$(PYTEST) -m slow

test-fast: setup
	$(PYTEST) -m "not slow"

# ruff, then the import contracts between the parts (setup.cfg's [importlinter]).
lint: setup
	$(BIN)/python -m ruff check .
	VENV=$(VENV) .ci/lint-imports

# The documentation site (mkdocs.yml, docs/) into site/; --strict fails on any warning: a
# broken link or anchor, a docstring the API reference cannot read. `$(BIN)/mkdocs serve` previews it.
docs: setup
	$(MKDOCS) build --strict

bench: setup
	$(BIN)/python benchmarks/bench_throughput.py
	$(BIN)/python benchmarks/bench_baselines.py
	$(BIN)/python benchmarks/bench_idle_groups.py
	$(BIN)/python benchmarks/bench_step.py
	$(BIN)/python benchmarks/bench_samples.py

# The reproduction report of a paper at a scale (smoke: minutes; cpu: about 45 min on 2
# cores; full: the paper's sizes, for a GPU or a cluster). The committed cpu report is
# docs/reproduction/shi2022-cpu: `make report OUT=docs/reproduction/shi2022-cpu` regenerates it.
PAPER ?= shi2022
SCALE ?= cpu
OUT ?= runs/reproduce/$(PAPER)-$(SCALE)
report: setup
	$(BIN)/featlearn reproduce --paper $(PAPER) --scale $(SCALE) --out $(OUT)

# Full Fashion-MNIST (70000 images) from Debian's dataset-fashion-mnist, installed under
# /usr/share/datasets/fashion-mnist (the default data.root of source: fashion_mnist).
# Without apt: place the four *-ubyte.gz files anywhere and set data.init_args.root.
data:
	@if command -v apt-get >/dev/null; then \
		apt-get update -qq && apt-get install -y -qq dataset-fashion-mnist; \
	else \
		echo "apt-get is not available: download Fashion-MNIST's four *-ubyte.gz files and pass their folder as --data.init_args.root"; exit 1; \
	fi

tensorboard: setup
	$(BIN)/tensorboard --logdir runs

clean:
	rm -rf runs lightning_logs .pytest_cache site
