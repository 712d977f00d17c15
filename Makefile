# sessiontree: one entry point for setting up and testing everything.
#   make run    install the Python package and show the session tree (demo session when none)
#   make test   install everything (Python, Neovim, Node, code-server, Chromium) and run all tests
VENV ?= .venv
BIN := $(VENV)/bin
PYTHON ?= python3

.PHONY: run test setup setup-python setup-system setup-editors lint typecheck pytest test-vscode test-nvim clean

run: setup-python
	$(BIN)/sessiontree tree

test: setup lint typecheck pytest test-nvim test-vscode

setup: setup-python setup-system setup-editors

setup-python: $(BIN)/.installed

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

setup-system:
	bash scripts/setup-system.sh

setup-editors: setup-python
	bash editors/nvim/scripts/setup.sh
	bash editors/vscode/scripts/setup.sh

lint: setup-python
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: setup-python
	$(BIN)/mypy

pytest: setup-python
	$(BIN)/pytest -q

test-nvim: setup-python
	bash editors/nvim/scripts/test.sh

test-vscode: setup-python
	bash editors/vscode/scripts/test.sh

clean:
	rm -rf $(VENV) editors/vscode/node_modules editors/vscode/dist .cache test-artifacts
