# benchbook — `make` lists the targets. Every target sets up .venv on first use.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DATA ?= data
REPORTS ?= reports

.DEFAULT_GOAL := help
.PHONY: help setup report test test-fast lint lab notebook-filter bench check-offline clean browser-deps prometheus-deps engine fixtures

help: ## list the targets
	@echo "benchbook — make targets:"
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | awk -F'\t' '{printf "  make %-14s %s\n", $$1, $$2}'

# the first set-up takes about a minute: a line per step, and pip's own line per package (no --quiet)
PIP_PROGRESS := --progress-bar off --disable-pip-version-check
$(STAMP): pyproject.toml
	@echo "setup [1/4]: creating $(VENV) with $(PY)"
	$(PY) -m venv $(VENV)
	@echo "setup [2/4]: upgrading pip"
	$(BIN)/pip install $(PIP_PROGRESS) --upgrade pip
	@echo "setup [3/4]: installing benchbook and its dependencies (pyproject.toml; about a minute the first time)"
	$(BIN)/pip install $(PIP_PROGRESS) -e '.[test]'
	@echo "setup [4/4]: registering the python3 kernel the notebooks run on"
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 > /dev/null
	touch $(STAMP)
	@echo "setup: $(VENV) ready"

setup: $(STAMP) ## create .venv and install benchbook with its dependencies

report: $(STAMP) ## render every campaign under data/ to reports/ (+ reports/index.html)
	$(BIN)/benchbook render --all $(DATA) --out $(REPORTS)

browser-deps: ## install Debian's chromium for the browser tests (needs root or sudo)
	@if ! command -v chromium > /dev/null; then \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium > /dev/null; \
	fi

prometheus-deps: ## install Debian's prometheus + promtool for the Prometheus-source tests (root or sudo)
	@if ! [ -x /usr/bin/prometheus ] || ! [ -x /usr/bin/promtool ]; then \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends prometheus > /dev/null; \
	  $$SUDO systemctl disable --now prometheus 2>/dev/null || true; \
	fi

ENGINE_VENV := .venv-engine
ENGINE_STAMP := $(ENGINE_VENV)/.installed

$(ENGINE_STAMP): tests/engine_setup.sh
	PY=$(PY) bash tests/engine_setup.sh $(ENGINE_VENV)

engine: ## build .venv-engine: vLLM's CPU build for the engine tests (~3.4 GiB; skipped with the reason if it fails, except CI=true)
	@set -o pipefail; rm -f $(ENGINE_VENV).error; \
	if ! $(MAKE) --no-print-directory $(ENGINE_STAMP) 2>&1 | tee $(ENGINE_VENV).log; then \
	  tail -n 3 $(ENGINE_VENV).log > $(ENGINE_VENV).error; \
	  if [ "$$CI" = true ]; then echo "make engine: vLLM's CPU build could not be installed (CI=true: failing)" >&2; exit 1; fi; \
	  echo "make engine: vLLM's CPU build could not be installed; the engine tests will skip (reason in $(ENGINE_VENV).error)" >&2; \
	fi

lint: $(STAMP) ## ruff: lint and format check (part of make test)
	$(BIN)/ruff check lib tests bench
	$(BIN)/ruff format --check lib tests bench

# loadgroup: conftest puts the engine tests in one group (one worker, scheduled first) and every other file in a
# group of its own (as --dist loadfile); --no-loadscope-reorder keeps conftest's order; --wait-worker: the last
# worker runs only the files whose tests mostly wait (tests/marks.py WAITS), beside the two that compute
# (docs/testing.md)
PYTEST_SCHED := --dist loadgroup --no-loadscope-reorder --wait-worker
PYTEST_DIST := -n 3 $(PYTEST_SCHED)
FAST := not engine and not browser and not slow and not prometheus_server

# the suite keeps its bytecode even where the shell sets PYTHONDONTWRITEBYTECODE (this project's machines do):
# otherwise every xdist worker rewrites every test module's asserts again, and every kernel and `benchbook`
# subprocess of a test compiles benchbook again (collection 12.6 s a worker, 5.3 s with it; 0.4 s a process).
# It goes under .cache/pycache (git-ignored), never beside the sources: a .pyc names this machine's paths
TEST_ENV := PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(CURDIR)/.cache/pycache

test: $(STAMP) lint browser-deps prometheus-deps engine ## run the whole test suite (ruff first; the engine tests too)
	$(TEST_ENV) $(BIN)/python -m pytest $(PYTEST_DIST) $(PYTEST_ARGS)

# the quick loop: the cores' workers and the waiting worker (--wait-worker in PYTEST_SCHED), 50 examples a fuzzed
# property (make test: 200; BENCHBOOK_FUZZ_EXAMPLES=N sets either)
FAST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
test-fast: $(STAMP) ## the quick loop: unit and analysis tests, no engine, Chromium, notebook or Prometheus (under 2 min on 2 cores)
	BENCHBOOK_FUZZ_EXAMPLES=$${BENCHBOOK_FUZZ_EXAMPLES:-50} $(TEST_ENV) $(BIN)/python -m pytest -n $(FAST_WORKERS) $(PYTEST_SCHED) -m '$(FAST)' $(PYTEST_ARGS)

# Jupyter refuses to start as root without --allow-root (containers, CI boxes): pass it only then
LAB_ROOT = $(if $(filter 0,$(shell id -u)),--allow-root)

lab: $(STAMP) notebook-filter ## JupyterLab on the notebooks (outputs you make stay out of git: notebook-filter)
	@echo "lab: installing the lab extra (JupyterLab, pandas, pyarrow) when missing"
	$(BIN)/pip install $(PIP_PROGRESS) -e '.[lab]'
	$(BIN)/jupyter lab notebooks/ $(LAB_ROOT)

# .gitattributes names the filter for notebooks/*.ipynb; this defines it in the clone's git config:
# git stores a notebook as nbstripout leaves it (no outputs, no execution counts, cell ids kept), so
# running cells in JupyterLab never dirties or commits the tracked notebooks
NBSTRIP = '$(abspath $(BIN))/python' -m nbstripout --keep-id
notebook-filter: $(STAMP) ## set up the nbstripout git filter that keeps tracked notebooks free of outputs
	@if git rev-parse --git-dir > /dev/null 2>&1; then \
	  git config filter.nbstripout.clean "$(NBSTRIP)"; \
	  git config filter.nbstripout.smudge cat; \
	  git config diff.ipynb.textconv "$(NBSTRIP) -t"; \
	  echo "notebook-filter: git strips notebook outputs on commit (filter.nbstripout in .git/config)"; \
	fi

bench: $(STAMP) ## measure speed and memory; prints a table, writes reports/bench.json
	$(BIN)/python bench/run.py --out $(REPORTS)/bench.json

check-offline: $(STAMP) ## fail if any rendered page references an outside URL
	$(BIN)/python -m benchbook.pipeline.offline $(REPORTS)

GUIDELLM_VERSION ?= 0.8.1
AIPERF_VERSION ?= 0.13.0
INFERENCE_PERF_VERSION ?= 0.7.0
PY312 ?= python3.12  # inference-perf requires Python >= 3.12

# the peers live in their own venvs, outside CI; GuideLLM gets the local CPU torch wheel first so pip does
# not fetch a multi-GB CUDA build for it
.venv-guidellm/.installed:
	$(PY) -m venv .venv-guidellm
	.venv-guidellm/bin/pip install --quiet torch==2.13.0
	.venv-guidellm/bin/pip install --quiet guidellm==$(GUIDELLM_VERSION)
	touch $@

.venv-aiperf/.installed:
	$(PY) -m venv .venv-aiperf
	.venv-aiperf/bin/pip install --quiet aiperf==$(AIPERF_VERSION)
	touch $@

.venv-inference-perf/.installed:
	$(PY312) -m venv .venv-inference-perf
	.venv-inference-perf/bin/pip install --quiet inference-perf==$(INFERENCE_PERF_VERSION)
	touch $@

fixtures: $(STAMP) $(ENGINE_STAMP) .venv-guidellm/.installed .venv-aiperf/.installed .venv-inference-perf/.installed ## regenerate tests/fixtures/tools: vllm bench serve, GuideLLM, AIPerf, inference-perf against the real engine (not part of make test)
	ENGINE_VENV=$(ENGINE_VENV) $(BIN)/python tests/make_tool_fixtures.py
	ENGINE_VENV=$(ENGINE_VENV) $(BIN)/python tests/make_tool_fixtures.py inference-perf

clean: ## remove rendered reports and caches (keeps .venv)
	rm -rf $(REPORTS)/*/ $(REPORTS)/index.html .pytest_cache .hypothesis
