# One command for the demo, one for the tests; everything they need is built here.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SAMPLE := examples/memory

.PHONY: install uninstall all demo test test-fast e2e zipapp docs man completions bench bench-recall bench-toolcall bench-team bench-grep bench-lint bench-history bench-extract bench-verify bench-secrets bench-poison bench-claude-code clean

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
	@echo; echo '$$ mem recall --offline --dir $(SAMPLE) how should I write the integration tests'
	@$(BIN)/mem recall --offline --dir $(SAMPLE) how should I write the integration tests
	@echo; echo '$$ mem lint --dir $(SAMPLE)'
	@$(BIN)/mem lint --dir $(SAMPLE)
	@echo; echo '$$ mem scan --json --dir $(SAMPLE) | head -14'
	@$(BIN)/mem scan --json --dir $(SAMPLE) | head -14

# The team-memory tests need a real PostgreSQL: scripts/ci-postgres.sh starts a private one on
# a Unix socket (installing Debian's package when root), idempotent and fast once running. Without it
# those tests skip, except under CI=true, where they fail.
# After the tests, a server the script started for them is stopped (one already running stays);
# MEM_TEST_PG_KEEP=1 keeps it for the next run, `bash scripts/ci-postgres.sh stop` stops it any time.
PG_URL = $${MEM_TEST_PG_URL:-$$(MEM_TEST_PG_MARK=1 bash scripts/ci-postgres.sh || true)}
PG_STOP = if [ -z "$$MEM_TEST_PG_KEEP" ]; then bash scripts/ci-postgres.sh stop-started || true; fi
#: pytest's arguments: make test TESTS=tests/test_cron.py runs those alone.
TESTS ?=

# Two workers per core (at most 16): part of the suite's time is waiting (pip's index, child processes, servers'
# timeouts), which a second worker per core fills (2 cores: 145.5 s with WORKERS=2, 133.1 s with 4; bench/RESULTS.md).
# A file's tests stay on one worker, so a module's fixture (a zipapp build) is made once. make test WORKERS=1 ...
WORKERS ?= $$(n=$$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1); n=$$((2 * n)); [ $$n -gt 16 ] && n=16; echo $$n)
PARALLEL = -n $(WORKERS) --dist loadfile

## test: the whole test suite
test: $(STAMP)
	MEM_TEST_PG_URL="$(PG_URL)" $(BIN)/python -m pytest -q $(PARALLEL) $(TESTS); status=$$?; $(PG_STOP); exit $$status

## test-fast: everything but the slow artefact builds
test-fast: $(STAMP)
	MEM_TEST_PG_URL="$(PG_URL)" $(BIN)/python -m pytest -q $(PARALLEL) -m 'not slow' $(TESTS); status=$$?; $(PG_STOP); exit $$status

## zipapp: dist/mem-pyX.Y.pyz for the venv's Python X.Y, reproducible (another: scripts/build_zipapp.py --python python3.12)
zipapp: $(STAMP)
	$(BIN)/python scripts/build_zipapp.py

## install: the zipapp as $(PREFIX)/bin/mem, the man pages and the shell completions (PREFIX=~/.local for you alone; DESTDIR for packagers)
PREFIX ?= /usr/local
DEST    = $(DESTDIR)$(PREFIX)
INSTALLED = $(DEST)/bin/mem $(DEST)/share/bash-completion/completions/mem \
	$(DEST)/share/zsh/site-functions/_mem $(DEST)/share/fish/vendor_completions.d/mem.fish
PYVER  := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')
ZIPAPP ?= dist/mem-py$(PYVER).pyz
install: $(ZIPAPP)
	install -d $(DEST)/bin $(DEST)/share/man/man1 $(DEST)/share/bash-completion/completions \
		$(DEST)/share/zsh/site-functions $(DEST)/share/fish/vendor_completions.d
	install -m 755 $(ZIPAPP) $(DEST)/bin/mem
	install -m 644 man/*.1 $(DEST)/share/man/man1/
	install -m 644 completions/mem.bash $(DEST)/share/bash-completion/completions/mem
	install -m 644 completions/_mem $(DEST)/share/zsh/site-functions/_mem
	install -m 644 completions/mem.fish $(DEST)/share/fish/vendor_completions.d/mem.fish
	@# zsh reads _mem only from its fpath, which holds /usr/local/share/zsh/site-functions but no home directory
	@if [ -z "$(DESTDIR)" ] && command -v zsh >/dev/null && \
	    ! zsh -fc 'print -rl -- $$fpath' | grep -qxF '$(PREFIX)/share/zsh/site-functions'; then \
	  echo 'zsh: add this line before compinit in ~/.zshrc: fpath=($(PREFIX)/share/zsh/site-functions $$fpath)'; fi

# Hooks and the nightly job name the binary by its path: removing it leaves them failing, so say so.
uninstall:
	rm -f $(INSTALLED) $(addprefix $(DEST)/share/man/man1/,$(notdir $(wildcard man/*.1)))
	@echo "removed $(DEST)/bin/mem. Hooks and a nightly job that name it now fail: run 'mem hooks uninstall' (each --client and --scope you used) and 'mem cron uninstall' with a mem still installed, or remove them by hand (~/.claude/settings.json, crontab -e)."

dist/mem-py$(PYVER).pyz: $(STAMP) pyproject.toml $(shell find mem -name '*.py')
	$(BIN)/python scripts/build_zipapp.py $@

## docs: regenerate man pages and shell completions from the commands
docs: $(STAMP)
	$(BIN)/python scripts/gendocs.py

man completions: docs

## bench: start-up and scale benchmarks, grep speed, lint and secret-detection accuracy, written to bench/RESULTS.md
# Every benchmark runs even when an earlier one misses its goal; the status says whether any did.
bench: $(STAMP) zipapp
	@status=0; \
	$(BIN)/python bench/grep.py || status=1; \
	$(BIN)/python bench/lint.py || status=1; \
	$(BIN)/python bench/run.py || status=1; \
	$(BIN)/python bench/history.py || status=1; \
	$(BIN)/python bench/extract_coverage.py || status=1; \
	$(BIN)/python bench/secret_detection.py || status=1; \
	exit $$status

## bench-recall: recall quality on the labelled set and recall latency, into bench/RESULTS.md
bench-recall: $(STAMP) zipapp
	$(BIN)/python bench/recall.py

## bench-toolcall: which feedback the PreToolUse hook surfaces on the labelled tool calls, into bench/RESULTS.md
bench-toolcall: $(STAMP)
	$(BIN)/python bench/toolcall.py

## bench-team: team server load test (20 clients × 10 s on loopback, SQLite and PostgreSQL), into bench/RESULTS.md
bench-team: $(STAMP)
	MEM_TEST_PG_URL="$(PG_URL)" $(BIN)/python bench/team.py

## bench-grep: mem grep --transcripts against grep -rn -F and rg -F on generated 280 MB and 1 GB corpora (~5 min, 1 GB of /tmp), into bench/RESULTS.md
bench-grep: $(STAMP)
	$(BIN)/python bench/grep.py

## bench-history: what recording every change costs a write, on 200 and 10,000 memories, into bench/RESULTS.md
bench-history: $(STAMP)
	$(BIN)/python bench/history.py

## bench-claude-code: the claude-code backend's start-up per job with each pinned Claude Code (installs them from npm once)
bench-claude-code: $(STAMP)
	PYTHONPATH=$(CURDIR) $(BIN)/python bench/claude_code_startup.py

## bench-extract: share of planted facts reaching the model from 1, 5 and 20 MB sessions, tokens, requests; extract of a 4 MB session and the agent dream through every backend against its local server (the real claude from npm as make e2e installs it; ~2 min), into bench/RESULTS.md
bench-extract: $(STAMP)
	@status=0; \
	$(BIN)/python bench/extract_coverage.py || status=1; \
	$(BIN)/python bench/extract_backends.py || status=1; \
	exit $$status

## bench-verify: mem verify precision and recall on the labelled claims, and its speed on 200 memories in a 10,000-file repository, into bench/RESULTS.md
bench-verify: $(STAMP)
	$(BIN)/python bench/verify.py

## bench-secrets: secrets caught, missed and false positives per kind on the labelled set, into bench/RESULTS.md
bench-secrets: $(STAMP)
	$(BIN)/python bench/secret_detection.py

## bench-poison: the poisoning guard's ms per MB, verdict and full report, on 1, 4 and 16 MB of memory prose and hostile text (~6 min), into bench/RESULTS.md
bench-poison: $(STAMP)
	$(BIN)/python bench/poison.py

## bench-lint: mem lint precision and recall on the labelled memories, into bench/RESULTS.md
bench-lint: $(STAMP)
	$(BIN)/python bench/lint.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis

## e2e: the real Claude Code and qwen-code (oldest and newest pinned) with mem's hooks, against a local model server (~2 min once installed)
# The clients come from npm into ~/.cache/mem-e2e; the runs then go inside a network namespace with
# loopback only where the kernel allows one (unshare -rn), so nothing can reach a real model.
e2e: $(STAMP)
	PYTHONPATH=$(CURDIR) $(BIN)/python -c 'from tests.e2e import driver; [driver.install(c, v) for c, vs in driver.PINNED.items() for v in vs]'
	@if unshare -rn true 2>/dev/null; then \
	  unshare -rn sh -c 'ip link set lo up && MEM_E2E=1 PYTHONPATH=$(CURDIR) $(BIN)/python -m pytest -q -p no:cacheprovider tests/e2e'; \
	else echo "make e2e: no network namespace here (unshare -rn refused): running on the host's loopback"; \
	  MEM_E2E=1 PYTHONPATH=$(CURDIR) $(BIN)/python -m pytest -q -p no:cacheprovider tests/e2e; fi
