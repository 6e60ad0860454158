# The two set-up commands of the README. Both create .venv if it is missing.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo test lint bench

$(PY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	$(PY) demo.py

test: $(VENV)/.installed-dev
	$(PY) -m ruff check .
	$(VENV)/bin/lint-imports
	$(PY) -m pytest

lint: $(VENV)/.installed-dev
	$(PY) -m ruff check .
	$(VENV)/bin/lint-imports
	$(PY) -m ruff format --check .

bench: $(VENV)/.installed
	$(PY) benchmarks/speed.py
