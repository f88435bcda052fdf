# The README's two commands: `make demo` (main job, offline) and `make test`.
# Both create the virtualenv and install the project first; no manual steps.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SHARED_DATA := $(abspath ../shared/datasets/tau-bench)

# On machines without internet (development, CI) the benchmark data sits beside the
# repository; elsewhere the product pulls it into the user cache on first use.
ifeq ($(TAU_BENCH_DATA),)
ifneq ($(wildcard $(SHARED_DATA)/MANIFEST.json),)
export TAU_BENCH_DATA := $(SHARED_DATA)
endif
endif
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: setup browser demo test lint typecheck unit bench clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev,report]"
	touch $@

setup: $(BIN)/.installed

demo: setup
	$(BIN)/python -m tau_bench.demo

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: setup
	$(BIN)/mypy tau_adapters tau_bench adapters run.py

# The HTML report is checked in headless Chromium (Debian's package). As root (CI, the
# development machines) it is installed when missing; elsewhere install it yourself or
# set TAU_SKIP_BROWSER_TESTS=1.
browser:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then :; \
	elif [ -n "$$TAU_SKIP_BROWSER_TESTS" ]; then echo "TAU_SKIP_BROWSER_TESTS set: no browser check"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Debian's chromium for the report rendering test"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "the report test needs Chromium: apt-get install chromium, or set TAU_SKIP_BROWSER_TESTS=1"; exit 1; fi

unit: setup browser
	$(BIN)/pytest

test: lint typecheck unit

bench: setup
	$(BIN)/tau bench core

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
