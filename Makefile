# One command for the demo, one for the tests; everything they need is built here.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SAMPLE := examples/memory

.PHONY: all demo test test-fast zipapp docs man completions bench clean

all: test

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $@

## demo: run mem on the sample memory directory (no API key needed)
demo: $(STAMP)
	@echo '$$ mem scan --dir $(SAMPLE)'
	@$(BIN)/mem scan --dir $(SAMPLE)
	@echo; echo '$$ mem index --dir $(SAMPLE)      # MEMORY.md as the agent is given it'
	@$(BIN)/mem index --dir $(SAMPLE)
	@echo; echo '$$ mem index --check --dir $(SAMPLE)'
	@$(BIN)/mem index --check --dir $(SAMPLE)
	@echo; echo '$$ mem scan --check --dir $(SAMPLE)'
	@$(BIN)/mem scan --check --dir $(SAMPLE)
	@echo; echo '$$ mem scan --json --dir $(SAMPLE) | head -14'
	@$(BIN)/mem scan --json --dir $(SAMPLE) | head -14

## test: the whole test suite
test: $(STAMP)
	$(BIN)/python -m pytest -q

## test-fast: everything but the slow artefact builds
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m 'not slow'

## zipapp: dist/mem.pyz, compiled and reproducible
zipapp: $(STAMP)
	$(BIN)/python scripts/build_zipapp.py dist/mem.pyz

## docs: regenerate man pages and shell completions from the commands
docs: $(STAMP)
	$(BIN)/python scripts/gendocs.py

man completions: docs

## bench: start-up and scale benchmarks, written to bench/RESULTS.md
bench: $(STAMP) zipapp
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis
