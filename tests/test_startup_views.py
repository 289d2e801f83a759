"""What the read-only views leave unloaded, beyond tests/test_startup.py (bench/startup.py
times them; each module is milliseconds of every start):

- no view loads what only a writer, a lock or a screen comparison uses: the
  random names of tempfile and secrets, hashlib (OpenSSL's library), shutil;
- `rk cron log` reads files only: no forecast, no listing, no tmux layer, also
  inside tmux ($TMUX names the server);
- `rk --help` loads `send` and `uninstall` without the flags' rules or the setup plans.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from test_startup import RUN

pytestmark = pytest.mark.shell

#: The standard library a write (`atomic_write`, a new id), a lock or a screen hash needs.
WRITERS_ONLY = {"tempfile", "secrets", "hashlib", "_hashlib", "shutil", "random"}
VIEWS = [
    ["cron", "list"],
    ["cron", "list", "--json", "--all"],
    ["cron", "show", "abcd"],
    ["cron", "next", "abcd", "-n", "3"],
    ["cron", "log", "-n", "5"],
    ["status"],
    ["status", "--json"],
    ["agent", "list"],
]


def loaded(tmp_path, *args: str, tmux: str = "") -> tuple[int, str, set[str]]:
    """`rk ARGS` in a fresh interpreter (a private state dir, $TMUX as given): its exit
    status, stdout, and the modules loaded by the end (`test_startup.loaded`)."""
    env = {"PATH": "/usr/bin:/bin", "RK_STATE_DIR": str(tmp_path / "state"), "TMUX_TMPDIR": str(tmp_path)}
    if tmux:
        env["TMUX"] = tmux
    proc = subprocess.run([sys.executable, "-c", RUN, *args], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.splitlines()[-1])
    return result["code"], result["out"], set(result["modules"])


@pytest.mark.parametrize("args", VIEWS)
def test_views_load_nothing_only_writers_use(tmp_path, args):
    _, _, modules = loaded(tmp_path, *args)
    assert not WRITERS_ONLY & modules


@pytest.mark.parametrize("tmux", ["", "/tmp/tmux-1000/work,123,0"])
def test_cron_log_loads_no_forecast_and_no_tmux(tmp_path, tmux):
    code, out, modules = loaded(tmp_path, "cron", "log", *(["--json"] if tmux else []), tmux=tmux)
    assert code == 0 and out
    assert "rk.cli.views" in modules
    forecast = {"rk.cli.listing", "rk.cli.preview", "rk.core.schedule.forecast", "rk.core.schedule.due"}
    assert not (forecast | {"rk.tmux.server", "rk.core.pane.facts", "subprocess"}) & modules


def test_help_loads_no_flags_and_no_setup_plans(tmp_path):
    """`rk --help` lists `send` and `uninstall` (their modules load for their short
    help): what they use only when they run stays unloaded."""
    code, out, modules = loaded(tmp_path, "--help")
    assert code == 0 and "Usage: rk" in out
    assert {"rk.cli.send", "rk.cli.uninstalling"} <= modules
    assert not {"rk.cli.flags", "rk.cli.store", "rk.agent.setup", "rk.agent.setup.plan"} & modules
