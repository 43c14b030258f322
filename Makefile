# skill-registry developer tasks. `make help` lists them.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
RUN_STAMP := $(VENV)/.run-stamp

# Every dependency, direct and transitive, is pinned in uv.lock (docs/development.md,
# "Dependencies"); pyproject.toml keeps the ranges the wheel declares. uv installs from the
# lock; it is bootstrapped into the virtualenv by pip, pinned here and in pyproject.toml's
# `[tool.uv] required-version` (tests/packaging/test_lock.py keeps the two equal).
UV_VERSION := 0.13.9
UV := $(BIN)/uv
UV_STAMP := $(VENV)/.uv-$(UV_VERSION)
# uv works on $(VENV), whatever it is called, and never downloads a Python of its own:
# the virtualenv's interpreter is the $(PYTHON) that made it.
export UV_PROJECT_ENVIRONMENT := $(VENV)
export UV_PYTHON_DOWNLOADS := never
# uv trusts the machine's certificate store, as Python, pip and curl do here, rather than
# the roots compiled into it: a machine that reaches the index through a TLS proxy has the
# proxy's CA there (and nowhere else, without SSL_CERT_FILE set).
export UV_SYSTEM_CERTS := 1
# What `make lint` compares with deploy/requirements.txt, and `make lock` writes there: the
# runtime dependencies pinned with their hashes, for the container image (deploy/install.sh).
EXPORT := $(UV) export --frozen --no-emit-project --no-header --quiet

.PHONY: help install run test test-fast lint lock upgrade format typecheck db-check openapi bench bench-quick docs \
	clean browser-deps console-screenshots

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | \
	  awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}'

$(UV_STAMP):
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	@touch $@

# The whole lock: the package (editable), its dependencies and the dev and bench extras.
# An exact sync: whatever the lock no longer names leaves the virtualenv. `--locked` stops
# here when pyproject.toml has changed since the lock (run `make lock`).
$(STAMP): pyproject.toml uv.lock $(UV_STAMP)
	$(UV) sync --locked --quiet --extra dev --extra bench
	@touch $@ $(RUN_STAMP)

# Running needs the package and its runtime dependencies: no test or benchmark tools. An
# inexact sync, so that `make run` in a development virtualenv removes nothing.
$(RUN_STAMP): pyproject.toml uv.lock $(UV_STAMP)
	$(UV) sync --locked --quiet --inexact
	@touch $@

# The suite tests the benchmark harness and its report too, so the bench extra is part of it.
install: $(STAMP) ## create .venv and install the locked package with its dev and bench extras

run: $(RUN_STAMP) ## the main job: install what running needs, init the embedded default, publish the examples
	@$(BIN)/skillreg init
	@$(BIN)/skillreg demo
	@echo
	@echo "Made: the registry above, with the example skills in workspace 'demo'. Try next:"
	@echo "  $(BIN)/skillreg show demo/pdf-report          # the head version and its files"
	@echo "  $(BIN)/skillreg history demo/pdf-report       # versions, newest first"
	@echo "  $(BIN)/skillreg serve --port 8080             # the HTTP API (docs/http.md)"

# Four workers, whatever the machine: much of the suite waits on processes, servers and the
# databases, so two workers per core of a 2-CPU machine keep it busy (docs/development.md).
# Bytecode is written as modules are first imported, whatever the caller's environment says:
# with PYTHONDONTWRITEBYTECODE set (and uv installs none), each of the suite's processes, the
# workers and every `skillreg` a test starts, compiled SQLAlchemy, FastAPI and botocore again.
test: install browser-deps ## run the whole suite (the harness starts PostgreSQL and an S3 endpoint)
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/pytest --numprocesses=4

test-fast: install ## unit tests only (no services, no browser)
	$(BIN)/pytest -m "not postgres and not s3 and not slow and not browser"

# The console's browser tests drive Debian's Chromium (never a browser a tool downloads) and
# check each page with axe-core, installed from npm into the virtualenv.
CHROMIUM := /usr/bin/chromium
AXE := $(VENV)/npm/node_modules/axe-core/axe.min.js

browser-deps: ## Debian's Chromium (apt-get, as root) and axe-core (npm) for the console's browser tests
	@test -x $(CHROMIUM) || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get > /dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	  else echo "the console's browser tests need Chromium: sudo apt-get install -y chromium" >&2; exit 1; fi; }
	@test -f $(AXE) || { \
	  command -v npm > /dev/null || { \
	    if [ "$$(id -u)" = 0 ] && command -v apt-get > /dev/null; then \
	      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm; \
	    else echo "the console's browser tests need npm (for axe-core): sudo apt-get install -y npm" >&2; exit 1; fi; }; \
	  npm install --silent --no-audit --no-fund --prefix $(VENV)/npm axe-core@4; }

console-screenshots: install browser-deps ## regenerate the screenshots of docs/console.md (docs/console/*.png)
	rm -f docs/console/*.png
	SKILLREG_CONSOLE_SCREENSHOTS=docs/console $(BIN)/pytest -q tests/console/browser -k "not postgresql"

lint: install ## ruff; the import contracts (import-linter); uv.lock agrees with pyproject.toml and deploy/requirements.txt
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(UV) lock --check
	@$(EXPORT) | diff -u deploy/requirements.txt - \
	  || { echo "deploy/requirements.txt is not uv.lock's export: run make lock" >&2; exit 1; }

lock: $(UV_STAMP) ## after editing pyproject.toml: update uv.lock (keeping every other pin) and its export
	$(UV) lock
	$(EXPORT) --output-file deploy/requirements.txt

upgrade: $(UV_STAMP) ## move every pin to the newest release pyproject.toml allows (PACKAGE=name: that one only)
	$(UV) lock $(if $(PACKAGE),--upgrade-package $(PACKAGE),--upgrade)
	$(EXPORT) --output-file deploy/requirements.txt

format: install ## apply ruff's formatter and autofixes
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

typecheck: install ## mypy --strict over registry, blobstore and bench
	$(BIN)/mypy

db-check: install ## migrate fresh PostgreSQL and SQLite databases to head, then `alembic check`
	$(BIN)/python -m tests.harness.dbcheck

bench: install ## every benchmark scenario (< 15 min); regenerates docs/benchmarks.md and its plots
	$(BIN)/python -m bench.run --report

bench-quick: install ## smoke run of every benchmark scenario, tiny repetitions (CI); JSON only
	$(BIN)/python -m bench.run --quick --out bench/results/quick.json

openapi: install ## regenerate docs/openapi.json from the HTTP app (a test compares them)
	$(BIN)/python -m registry.http.openapi docs/openapi.json

clean: ## remove the virtualenv, caches and the embedded default's data
	rm -rf $(VENV) .skillreg .mypy_cache .ruff_cache .pytest_cache .hypothesis
