"""How an rk process ends and what it collects: a view runs without the cyclic collector
and ends with the interpreter's teardown; what may run long keeps the collector; a view
whose reader went away exits 1 as click does, and the hook still exits 0."""

from __future__ import annotations

import gc
import os
import subprocess
import sys

import pytest

from rk.cli import fastpath


@pytest.fixture
def collector():
    """The collector off, as a process's run starts (`rk/__main__.py`), and restored after."""
    was = gc.isenabled()
    gc.disable()
    yield
    if was:
        gc.enable()


@pytest.mark.parametrize(
    ("args", "module", "function", "collects"),
    [
        (["cron", "log", "-f"], "views", "cmd_log", True),
        (["cron", "log", "--follow"], "views", "cmd_log", True),
        (["status", "--watch"], "status", "cmd_status", True),
        (["cron", "log"], "views", "cmd_log", False),
        (["status"], "status", "cmd_status", False),
        (["cron", "list"], "listing", "cmd_list", False),
    ],
)
def test_a_view_that_runs_until_stopped_collects_its_cycles(
    collector, monkeypatch, tmp_path, args, module, function, collects
):
    seen: list[bool] = []
    monkeypatch.setattr(f"rk.cli.{module}.{function}", lambda _invocation, **_params: seen.append(gc.isenabled()))
    environ = {"RK_STATE_DIR": str(tmp_path), "TMUX_TMPDIR": str(tmp_path), "HOME": str(tmp_path)}
    assert fastpath.run(args, environ) == 0
    assert seen == [collects]


def _env() -> dict[str, str]:
    """The suite's environment, with stdout block-buffered as an rk process's is in a pipe."""
    return {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE", "PYTHONUNBUFFERED")}


def as_rk(stand_ins: str, *args: str) -> str:
    """A program that runs `rk ARGS` as the process does (`rk.__main__.main()`, argv from
    sys.argv), with some of rk's functions replaced first (`stand_ins`)."""
    run = "from rk.__main__ import main\nsys.exit(main())\n"
    return f"import gc, sys\n{stand_ins}\nsys.argv = ['rk', *{list(args)!r}]\n{run}"


def test_a_process_runs_a_view_without_the_collector_and_a_command_with_it():
    view = as_rk("import rk.cli.fastpath as f\nf.run = lambda args: print('view', gc.isenabled()) or 0", "cron", "list")
    done = subprocess.run([sys.executable, "-c", view], capture_output=True, text=True, timeout=60, env=_env())
    assert (done.returncode, done.stdout) == (0, "view False\n"), done.stderr
    command = as_rk(
        "import rk.cli.fastpath as f, rk.cli as c\nf.run = lambda args: None\n"
        "c.main = lambda args: print('command', gc.isenabled()) or 0",
        "cron",
        "ticker",
    )
    done = subprocess.run([sys.executable, "-c", command], capture_output=True, text=True, timeout=60, env=_env())
    assert (done.returncode, done.stdout) == (0, "command True\n"), done.stderr


def test_in_process_calls_leave_the_collector_alone(monkeypatch):
    from rk import __main__ as entry

    monkeypatch.setattr(fastpath, "run", lambda args: 0)
    assert gc.isenabled()
    assert entry.main(["cron", "list"]) == 0
    assert gc.isenabled()


def _closed_reader(code: str) -> subprocess.CompletedProcess[bytes]:
    """Run `code` as rk's process with a stdout pipe whose reader is already gone."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [sys.executable, "-c", code], stdout=write, stderr=subprocess.PIPE, timeout=60, env=_env()
        )
    finally:
        os.close(write)


def test_a_view_whose_reader_went_away_exits_1_quietly_and_the_hook_0():
    view = as_rk("import rk.cli.fastpath as f\nf.run = lambda args: sys.stdout.write('row\\n') and 0", "cron", "list")
    done = _closed_reader(view)
    assert (done.returncode, done.stderr) == (1, b"")
    hook = as_rk(
        "import rk.agent.hook as h\nh.main = lambda args: sys.stdout.write('x\\n') and 0", "agent", "hook", "idle"
    )
    done = _closed_reader(hook)
    assert (done.returncode, done.stderr) == (0, b"")


def test_a_view_keeps_the_teardown():
    """A view that is a pane's only process and ends at once can lose the tail of its
    output to tmux (`tests/test_views_80x24.py` lost 10 of 33 rows so): it exits as a
    Python program does, its atexit handlers run."""
    view = as_rk(
        "import atexit, rk.cli.fastpath as f\nf.run = lambda args: atexit.register(print, 'torn down') and 0",
        "cron",
        "list",
    )
    done = subprocess.run([sys.executable, "-c", view], capture_output=True, text=True, timeout=60, env=_env())
    assert (done.returncode, done.stdout) == (0, "torn down\n"), done.stderr
