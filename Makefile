# rk — two commands do all the set-up on a fresh machine:
#   make demo   creates .venv, installs rk, runs the demo (ARGS=--attach to watch)
#   make test   creates .venv if needed, runs the whole test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: venv install uninstall demo lint test test-fast test-agents bench mutants clean

# A regular (not editable) install, redone whenever the sources change: the
# `rk` that agent hooks run starts in ~20 ms this way; an editable install's
# import hook alone costs ~20 ms on every agent event.
SOURCES := pyproject.toml $(shell find rk -name "*.py")

$(STAMP): $(SOURCES)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	rm -rf build  # setuptools would put modules since moved or deleted back into the wheel
	$(BIN)/python -m pip install --quiet '.[test]'
	touch $(STAMP)

venv: $(STAMP)

# rk on your PATH: pipx when present, else a venv in ~/.local/share/rk with a
# link in ~/.local/bin (contrib/install.sh says what to add to PATH if needed).
install:
	PYTHON=$(PYTHON) sh contrib/install.sh

# `rk uninstall $(ARGS)` (hooks, MCP, status segment, ticker; ARGS=--purge: state and
# config too), then the program as install put it there; asks first unless YES=1.
uninstall:
	ARGS="$(ARGS)" YES="$(YES)" sh contrib/uninstall.sh

demo: $(STAMP)
	$(BIN)/python demo/run.py $(ARGS)

# ruff (style and bugs), mypy (strict, all of rk/), and the import contracts
# (the core imports nothing of the shell; the hook path stays light).
lint: $(STAMP)
	$(BIN)/ruff check rk tests bench demo tools
	$(BIN)/ruff format --check rk tests bench demo tools
	$(BIN)/mypy
	$(BIN)/lint-imports

# The suite spread over TEST_WORKERS processes (pytest-xdist), two per core: its tests
# mostly wait (on tmux, sshd, agents' hooks, the real clock). On 2 quiet cores, measured
# in one session: 2 workers 10 min 33 s (CPU 0.92 of a core), 3 workers 8 min 09 s,
# 4 workers 7 min 14 s (1.41 cores). `make test TEST_WORKERS=0` runs it in this one process.
TEST_WORKERS ?= $(shell echo $$((2 * $$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1))))

test: $(STAMP)
	@echo "make test: lint, then ~5800 tests on $(TEST_WORKERS) workers: about 7-8 min on 2 quiet cores (longer on a busy machine)"
	@$(MAKE) --no-print-directory lint
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist worksteal $(ARGS)

# The pure core's suite in seconds: no tmux server, no CLI, no processes, no long
# property runs (those are marked tmux, shell and slow; make test runs them all).
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m 'not tmux and not shell and not slow and not agents' $(ARGS)

# The real agent CLIs (Claude Code, Codex, Gemini CLI, OpenCode, Copilot CLI, Qwen Code, Kilo
# Code, Mistral Vibe), offline against local mocks of their model APIs (installed by npm and pip
# into ~/.cache/rk-test-agents, under a lock; an install that fails fails the run, it never skips).
# A test mostly waits (on an agent's start, its turns, the ticks it checks): its CPU is a fifth
# to a third of its time, so AGENT_WORKERS processes share 2 cores; each test has its own tmux
# server, mock port, HOME, state dir and a short tmp_path (rk's sockets live below it). Two, not
# three: at three the agents' own TUIs keep 2 cores at a load of 6-12, and CI failed 2-4 of ~158
# tests a run, each a different one, each a real CLI starved past a test's patience. The eight
# tests that wait minutes on the real clock with an idle agent (`long`) run beside them, in a
# run of their own on AGENT_CLOCK_WORKERS (tools/agents_run.py).
# `make test-agents AGENT_WORKERS=0` runs them one by one.
AGENT_WORKERS ?= 2
AGENT_CLOCK_WORKERS ?= 2

test-agents: $(STAMP)
	@echo "make test-agents: ~155 tests of the real agent CLIs on $(AGENT_WORKERS) workers, the real clock's on $(AGENT_CLOCK_WORKERS) beside them: ~16 min on 2 cores (longer on a busy machine)"
	AGENT_WORKERS=$(AGENT_WORKERS) AGENT_CLOCK_WORKERS=$(AGENT_CLOCK_WORKERS) $(BIN)/python tools/agents_run.py $(ARGS)

# The README's figures; `make bench ARGS=--quick` is CI's short round (a few seconds each).
bench: $(STAMP)
	$(BIN)/python bench/due.py $(ARGS)
	$(BIN)/python bench/hook.py $(ARGS)
	$(BIN)/python bench/notify.py $(ARGS)
	$(BIN)/python bench/startup.py $(ARGS)
	$(BIN)/python bench/statusline.py $(ARGS)
	$(BIN)/python bench/tick.py $(ARGS)
	$(BIN)/python bench/usage.py $(ARGS)
	$(BIN)/python bench/watch.py $(ARGS)

# One-line breakages of the rules (tools/mutants.py), each run against its narrow tests in a
# copy of the checkout: prints killed/SURVIVED per mutant and the kill ratio (~20 min; not in
# make test). `make mutants ARGS="-k ladder"` runs a few.
mutants: $(STAMP)
	$(BIN)/python tools/mutants.py $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
