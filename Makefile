# rk — two commands do all the set-up on a fresh machine:
#   make demo   creates .venv, installs rk, runs the demo (ARGS=--attach to watch)
#   make test   creates .venv if needed, runs the whole test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: venv demo test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/python demo/run.py $(ARGS)

test: $(STAMP)
	$(BIN)/python -m pytest -q $(ARGS)

bench: $(STAMP)
	$(BIN)/python bench/due.py
	$(BIN)/python bench/hook.py
	$(BIN)/python bench/tick.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
