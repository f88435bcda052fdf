# The README's two commands: `make demo` (main job, offline) and `make test`.
# Both install exactly the versions pinned in uv.lock into .venv first; no manual steps.
# Needs only Python 3.11+ and make: when `uv` is missing it is installed from PyPI into a
# small bootstrap venv (.tools/uv), which works as root and as a normal user alike.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
UV_VERSION := 0.13.9
UV_BOOTSTRAP := .tools/uv
SHARED_DATA := $(abspath ../shared/datasets/tau-bench)
SHARED_TAU3_DATA := $(abspath ../shared/datasets/tau2-bench)

# One environment for the demo and the tests: every extra plus the dev group, so switching
# between the two targets never reinstalls anything. Compiled to bytecode at install: a
# machine with PYTHONDONTWRITEBYTECODE set (containers, CI) otherwise compiles litellm & co
# from source in every process, ~7 of the ~14 s of CPU a `tau` start-up took on 2 cores,
# and the tests start hundreds of processes (the CLI's, Ray's workers, local servers).
SYNC_FLAGS := --locked --all-extras --group dev --compile-bytecode
OWN_PACKAGES := tau_adapters tau_bench adapters

# A uv on PATH is used as it is (the lock file asks for uv >= 0.9); else the pinned one.
UV ?= $(or $(shell command -v uv 2>/dev/null),$(UV_BOOTSTRAP)/bin/uv)

# uv must use this machine's Python, never download one (only PyPI may be reachable).
export UV_PYTHON_DOWNLOADS := never
export UV_PROJECT_ENVIRONMENT := $(VENV)

# On machines without internet (development, CI) the benchmark data sits beside the
# repository; elsewhere the product pulls it into the user cache on first use.
ifeq ($(TAU_BENCH_DATA),)
ifneq ($(wildcard $(SHARED_DATA)/MANIFEST.json),)
export TAU_BENCH_DATA := $(SHARED_DATA)
endif
endif
ifeq ($(TAU3_BENCH_DATA),)
ifneq ($(wildcard $(SHARED_TAU3_DATA)/MANIFEST.json),)
export TAU3_BENCH_DATA := $(SHARED_TAU3_DATA)
endif
endif
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: setup lock browser demo test lint typecheck unit bench clean

$(UV_BOOTSTRAP)/bin/uv:
	$(PYTHON) -m venv $(UV_BOOTSTRAP)
	$(UV_BOOTSTRAP)/bin/python -m pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"

# `uv sync --locked` refuses to run when pyproject.toml and uv.lock disagree: after editing
# the dependencies run `make lock` and commit uv.lock with them.
setup: $(if $(filter $(UV_BOOTSTRAP)/bin/uv,$(UV)),$(UV_BOOTSTRAP)/bin/uv)
	$(UV) sync $(SYNC_FLAGS) --python $(PYTHON)
	$(BIN)/python -m compileall -q -j 0 $(OWN_PACKAGES)

lock: $(if $(filter $(UV_BOOTSTRAP)/bin/uv,$(UV)),$(UV_BOOTSTRAP)/bin/uv)
	$(UV) lock --python $(PYTHON)

demo: setup
	$(BIN)/python -m tau_bench.demo

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

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
	rm -rf $(VENV) .tools .pytest_cache .mypy_cache .ruff_cache
