# sessiontree: one entry point for setting up and testing everything.
#   make run    install the Python package (its runtime dependencies only) and show the session
#               tree of this directory (the bundled demo session when there is none)
#   make test   install everything (the dev extra, Neovim, Node, code-server, Chromium, the agents'
#               own packages for the compatibility suite), run every suite and end with one summary
#               line per suite and a total (scripts/test-summary.sh)
VENV ?= .venv
BIN := $(VENV)/bin
PYTHON ?= python3

SUMMARY := VENV=$(VENV) bash scripts/test-summary.sh

.PHONY: run test setup setup-runtime setup-python setup-system setup-editors setup-compat lint typecheck pytest test-vscode test-nvim test-compat clean

run: setup-runtime
	$(BIN)/sessiontree tree

# Every suite runs even when one fails; the last line is the total "N passed, M failed".
test: setup
	$(SUMMARY)

setup: setup-python setup-system setup-editors setup-compat

# What drawing a tree needs: the package and its runtime dependencies, in a venv (a
# system Python that is "externally managed", as on Debian, refuses a plain pip install).
setup-runtime: $(BIN)/.installed-runtime

$(BIN)/.installed-runtime: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -e .
	touch $@

# The tests' tools on top: the dev extra (pytest, ruff, mypy, Neovim, ...).
setup-python: $(BIN)/.installed

$(BIN)/.installed: pyproject.toml $(BIN)/.installed-runtime
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

setup-system:
	bash scripts/setup-system.sh

setup-editors: setup-python
	bash editors/nvim/scripts/setup.sh
	bash editors/vscode/scripts/setup.sh

# pi 1.6 and oh-my-pi 18 from npm, with Node 22 and Bun, for the compatibility suite
# (tests/compat; it skips, loudly, only when the npm registry cannot be reached).
setup-compat: setup-editors
	bash tests/compat/setup.sh

# One suite each, with its summary line (the commands live in scripts/test-summary.sh).
lint: setup-python
	$(SUMMARY) lint

typecheck: setup-python
	$(SUMMARY) typecheck

pytest: setup-python
	$(SUMMARY) pytest

test-nvim: setup-python
	$(SUMMARY) nvim

test-vscode: setup-python
	$(SUMMARY) vscode

test-compat: setup-compat
	$(SUMMARY) compat

clean:
	rm -rf $(VENV) editors/vscode/node_modules editors/vscode/dist .cache test-artifacts
