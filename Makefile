# langclass — the two commands of the README's Quick start:
#   make serve   virtual environment + install + migrations + API on http://127.0.0.1:8000
#   make test    virtual environment + install + the test suite without the slow tier, in parallel
#                (pytest-xdist, PYTEST_JOBS workers; about 4-5 minutes on a quiet 2-core machine)
#   make test-slow  the slow tier (tests marked slow: full-size examples, Ray clusters, long
#                property runs, the TransformerLens export): installs the `interop` extra, then runs
#                in parallel without Ray, then the Ray tests in one process; .ci/run runs both
#
# The install step is the same one the Dockerfile runs. torch is pinned to its CPU build through
# constraints.txt (a plain `pip install torch` would pull a multi-GB CUDA build). An existing .venv is
# reused: the install runs again only when pyproject.toml or constraints.txt changed (stamp file).

PYTHON ?= python3
VENV ?= .venv
EXTRAS ?= test,ray,bench,automata
HOST ?= $(or $(LANGCLASS_HOST),127.0.0.1)
PORT ?= $(or $(LANGCLASS_PORT),8000)
PYTEST_ARGS ?=
PYTEST_JOBS ?= auto
# constraints.txt pins torch's CPU build; the image installs with constraints-image.txt (every package pinned)
CONSTRAINTS ?= constraints.txt

BIN := $(VENV)/bin
STAMP := $(VENV)/.langclass-install.stamp
INTEROP_STAMP := $(VENV)/.langclass-interop.stamp

.PHONY: serve test test-slow install install-interop migrate bench-api container-check clean-db help

help:
	@echo "make serve    start the API on http://$(HOST):$(PORT) (SQLite ./langclass.db by default)"
	@echo "make test     run the test suite without the slow tier, in parallel (SQLite + PostgreSQL at 127.0.0.1:5432)"
	@echo "make test-slow  run the slow tier (marked slow): in parallel, then the Ray tests in one process"
	@echo "make install  create/refresh $(VENV)"
	@echo "make migrate  apply database migrations (LANGCLASS_DATABASE_URL)"
	@echo "make container-check  build the image with podman on a debootstrap base and check it (bench/container.py)"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml $(CONSTRAINTS) Makefile | $(BIN)/python
	$(BIN)/python -m pip install -c $(CONSTRAINTS) -e '.[$(EXTRAS)]'
	@touch $(STAMP)

install: $(STAMP)

# The slow tier also checks the TransformerLens export (extra `interop`, transformer_lens and its
# dependencies: about 2.5 minutes and 0.5 GB more), so it installs that extra once.
$(INTEROP_STAMP): $(STAMP)
	$(BIN)/python -m pip install -c constraints.txt -e '.[$(EXTRAS),interop]'
	@touch $(INTEROP_STAMP)

install-interop: $(INTEROP_STAMP)

migrate: install
	$(BIN)/langclass db upgrade

serve: migrate
	$(BIN)/langclass serve --host $(HOST) --port $(PORT) --no-migrate

test: install
	$(BIN)/python -m pytest -m "not slow" -n $(PYTEST_JOBS) $(PYTEST_ARGS)

test-slow: install-interop
	$(BIN)/python -m pytest -m "slow and not ray" -n $(PYTEST_JOBS) $(PYTEST_ARGS)
	$(BIN)/python -m pytest -m "slow and ray" $(PYTEST_ARGS)

bench-api: install
	$(BIN)/python bench/api.py

# No Docker engine needed: podman (runc) on a Debian base made with debootstrap; needs root or sudo.
# CONTAINER_ARGS: e.g. --cold, --no-postgres, --postgres-url URL.
CONTAINER_ARGS ?=
container-check:
	$(PYTHON) bench/container.py $(CONTAINER_ARGS)

clean-db:
	rm -f langclass.db langclass.db-wal langclass.db-shm
