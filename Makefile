# The default target runs exactly what CI runs.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test test-fast check demo app install clean bench

test: $(STAMP)
	$(BIN)/python -m pytest -q tests memstore

# Development lane: no servers, browsers, notebooks, clusters or services (tests/lanes.py marks them).
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not process" tests memstore

# Lint and types, as CI runs them.
check: $(STAMP)
	$(BIN)/ruff check memstore tests bench scripts
	$(BIN)/mypy

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev,app]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/python scripts/demo.py

app: $(STAMP)
	$(BIN)/memstore ui

bench: $(STAMP)
	$(BIN)/python bench/write_path.py
	$(BIN)/python bench/locomo_retrieval.py
	$(BIN)/python bench/search_latency.py

clean:
	rm -rf $(VENV) .pytest_cache
