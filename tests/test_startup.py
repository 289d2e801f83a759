"""The CLI's views start fast because a view imports only what it uses
(bench/startup.py times them): each check runs a fresh interpreter and names
modules that must still be unloaded after a view has run.

- `rk --version` is answered before typer is imported;
- importing the CLI's tree loads no command's module (`rk.cli.root`'s lazy groups);
- the views with plain arguments load no typer, click, pydantic or rich (`rk.cli.fastpath`);
- `rk cron list` loads no other command's module, no MCP SDK or rich, and no
  screen parser; without --tree, no lineage; with the entries cache warm, no YAML parser;
- `rk --help` loads the root's commands but not the listing, the schedule's
  forecast, the entries or the tmux layer (each command imports those when it runs), and a
  help or usage error prints without rich's markdown and traceback modules;
- `rk agent list` loads no schedule rules (the pane facts import them only to
  resolve an entry's target);
- each view loads only what it draws (`NOT_LOADED`): none loads the token
  counting (`rk.core.cost.usage`: an entry's budget and what it spent today are
  `rk.core.cost.budget`'s) nor the rules of a wake on another host's panes
  (`rk.core.fleet.watch`, which `due()` imports when it judges one);
- every command the lazy tables name exists.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.shell

#: Every command module but the one a check runs (rk.cli.root's lazy tables name them).
COMMAND_MODULES = {
    f"rk.cli.{m}"
    for m in ("agent", "doctor", "entries", "events", "listing", "notifying", "pausing", "running", "panes")
    + ("send", "simulate", "status", "usage", "views", "windows", "flags", "timeline", "preview", "runs")
}
SCHEDULE_RULES = {"rk.core.schedule.entry", "rk.core.schedule.due", "rk.core.schedule.forecast"}

RUN = """
import contextlib, io, json, sys
from rk.__main__ import main
out, err = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "out": out.getvalue(), "err": err.getvalue(), "modules": sorted(sys.modules)}))
"""


def loaded(tmp_path, *args: str, stderr: bool = False, before: str = "") -> tuple[int, str, set[str]]:
    """Run `rk ARGS` in a fresh interpreter (outside tmux, a private state dir), after
    the statement `before`: its exit status, stdout (and stderr), and the modules loaded by the end."""
    env = {"PATH": "/usr/bin:/bin", "RK_STATE_DIR": str(tmp_path / "state"), "TMUX_TMPDIR": str(tmp_path)}
    script = f"{before}\n{RUN}"
    proc = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.splitlines()[-1])
    return result["code"], result["out"] + (result["err"] if stderr else ""), set(result["modules"])


def test_version_is_answered_before_typer(tmp_path):
    from rk import __version__

    code, out, modules = loaded(tmp_path, "--version")
    assert (code, out) == (0, f"rk {__version__}\n")
    assert not {"typer", "rk.cli", "rk.cli.root"} & modules


def test_importing_the_cli_loads_no_command():
    proc = subprocess.run(
        [sys.executable, "-c", "import sys, rk.cli.root; print(' '.join(sys.modules))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    modules = set(proc.stdout.split())
    assert "rk.cli.root" in modules
    assert not (COMMAND_MODULES | SCHEDULE_RULES | {"rk.tmux.server", "rk.core.pane.facts"}) & modules


def test_cron_list_loads_only_the_listing(tmp_path):
    code, out, modules = loaded(tmp_path, "cron", "list")
    assert (code, out) == (0, "no cron entries on server default\n")
    assert "rk.cli.listing" in modules
    assert not (COMMAND_MODULES - {"rk.cli.listing"}) & modules
    assert not {"mcp", "rich", "rk.channels.mcp", "rk.engine.tick"} & modules
    assert not {"typer", "click", "pydantic", "rk.cli.root"} & modules  # the fast path
    assert "rk.core.pane.screen" not in modules  # the screen parsers: a view compares no screens


#: An entries file as `rk cron add` writes it (the server is not running: no target state).
WRITTEN = """entries:
  - id: 84y8
    name: review
    schedule: {kind: cron, expr: '0 */2 * * *'}
    target: {kind: pane, pane: '%1', server_started: 1796593003, server_pid: 22497}
    payload: review the open PRs
    deliver: immediate
    if_absent: skip
    created_by: {at: 1796593004}
"""


def written(tmp_path: Path) -> Path:
    """The state dir under `tmp_path` with `WRITTEN` as server default's entries file."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    path = state / "default.yaml"
    path.write_text(WRITTEN)
    path.chmod(0o600)
    return path


@pytest.mark.parametrize("args", [["cron", "list"], ["cron", "list", "--json"], ["cron", "show", "84y8"]])
def test_views_read_entries_without_the_lineage(tmp_path, args):
    written(tmp_path)
    code, out, modules = loaded(tmp_path, *args)
    assert code == 0 and "84y8" in out
    assert not {"rk.cli.tree", "rk.core.schedule.lineage"} & modules  # only --tree draws who made what
    _, tree, modules = loaded(tmp_path, "cron", "list", "--tree")
    assert "84y8" in tree and "rk.core.schedule.lineage" in modules


def test_views_with_a_warm_entries_cache_load_no_yaml_parser(tmp_path, monkeypatch):
    """An entries file unchanged since a load wrote its parsed data to
    `<slug>.entries.json` (rk.store.entries_cache) is read without ruamel.yaml."""
    import time

    from rk.store import entries_cache
    from rk.store.entries import load_entries

    path = written(tmp_path)
    _, out, modules = loaded(tmp_path, "cron", "list")
    assert "84y8" in out and "ruamel.yaml" in modules  # just written: parsed, and not cached
    real = time.time_ns
    monkeypatch.setattr(entries_cache, "time_ns", lambda: real() + 3_000_000_000)  # as if 3 s later
    load_entries(path)
    for args in (["cron", "list"], ["cron", "list", "--json"], ["cron", "show", "84y8"], ["cron", "next", "84y8"]):
        _, out, modules = loaded(tmp_path, *args)
        assert "84y8" in out or "TIME" in out, args
        assert not {m for m in modules if m.split(".")[0] in ("ruamel", "_ruamel_yaml")}, args


@pytest.mark.parametrize(
    "args",
    [
        ["cron", "list", "--json"],
        ["--json", "cron", "-L", "default", "list", "--all"],
        ["cron", "show", "abcd"],
        ["cron", "next", "abcd", "-n", "3"],
        ["cron", "log", "-n", "5"],
        ["status", "--json"],
        ["agent", "list"],
    ],
)
def test_views_run_without_typer(tmp_path, args):
    _, _, modules = loaded(tmp_path, *args)
    assert not {"typer", "click", "pydantic", "rich", "rk.cli.root"} & modules
    assert not {"rk.engine.ticker", "rk.engine.tick", "rk.channels.notify"} & modules  # status reads the records only


#: What each view leaves unloaded beyond the fast path's rule above: the token counting (an
#: entry's budget is `rk.core.cost.budget`'s), a wake on another host's rules, the screens
#: only_if_changed compares, and what only another view draws.
NOT_FOR_VIEWS = {
    "rk.core.cost.usage",
    "rk.store.transcripts",
    "rk.core.fleet.watch",
    "rk.core.fleet.hosts",
    "rk.core.cost.unchanged",  # the screens only_if_changed compares: a view reads the key's values only
}
NOT_LOADED = {
    ("cron", "list"): NOT_FOR_VIEWS | {"rk.cli.views", "rk.cli.preview", "rk.core.schedule.gaps"},
    ("cron", "show", "84y8"): NOT_FOR_VIEWS | {"rk.core.schedule.lineage", "rk.cli.flags"},
    ("cron", "next", "84y8"): NOT_FOR_VIEWS | {"rk.core.schedule.lineage", "rk.cli.flags"},
    ("cron", "log"): NOT_FOR_VIEWS | {"rk.core.schedule.forecast", "rk.core.pane.facts", "rk.tmux.server"},
    ("status",): NOT_FOR_VIEWS | {"rk.cli.views", "rk.cli.preview", "rk.core.pane.screen", "rk.core.channels.mcpguard"},
    ("agent", "list"): NOT_FOR_VIEWS | {"rk.store.entries", "ruamel.yaml", "rk.core.log.delivery"},
}


@pytest.mark.parametrize("args", sorted(NOT_LOADED))
def test_each_view_loads_only_what_it_draws(tmp_path, args):
    written(tmp_path)
    _, _, modules = loaded(tmp_path, *args)
    assert "rk.cli.fastpath" in modules  # the view ran (the fast path imports its module)
    assert not NOT_LOADED[args] & modules


def test_help_loads_no_view_machinery(tmp_path):
    code, out, modules = loaded(tmp_path, "--help")
    assert code == 0 and "Usage: rk" in out
    assert {"rk.cli.status", "rk.cli.events", "rk.cli.windows"} <= modules  # listed, so loaded
    view = {"rk.cli.listing", "rk.cli.panes", "rk.core.schedule.forecast", "rk.core.schedule.due"}
    sending = {"rk.core.schedule.entry", "rk.store.entries"}  # `rk send` imports them when it runs
    assert not (view | sending | {"rk.tmux.server", "rk.core.pane.facts"}) & modules


@pytest.mark.parametrize("args", [("--help",), ("cron", "add", "--help"), ("cron", "add"), ("--bogus",)])
def test_help_and_usage_errors_print_the_same_without_markdown_and_pygments(tmp_path, args):
    """typer's rich help imports rich.markdown and rich.traceback, which rk never uses
    (`rk.cli.rich_deferred` stands in for them): the same text and exit status as
    with the real modules loaded first, and neither markdown-it nor pygments loaded."""
    code, out, modules = loaded(tmp_path, *args, stderr=True)
    assert not {m for m in modules if m.split(".")[0] in ("markdown_it", "pygments")}
    real = loaded(tmp_path, *args, stderr=True, before="import rich.markdown, rich.traceback")
    assert {"markdown_it", "pygments"} <= real[2]
    assert (code, out) == real[:2] and out.strip()


def test_a_deferred_rich_module_is_the_real_one_once_used():
    script = """
import sys
from rk.cli.rich_deferred import defer
defer()
from rich.markdown import Markdown
from rich.traceback import Traceback
assert "markdown_it" not in sys.modules
md = Markdown("# title")
import rich.markdown
assert type(md) is rich.markdown.Markdown and sys.modules["rich.markdown"] is rich.markdown
assert "markdown_it" in sys.modules
try:
    raise ValueError("x")
except ValueError as exc:
    tb = Traceback.from_exception(type(exc), exc, exc.__traceback__)
assert type(tb).__module__ == "rich.traceback" and type(tb).__name__ == "Traceback"
defer()  # the real modules stay
assert sys.modules["rich.markdown"] is rich.markdown and hasattr(sys.modules["rich.traceback"], "install")
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "ok", proc.stderr


def test_agent_list_loads_no_schedule_rules(tmp_path):
    code, _, modules = loaded(tmp_path, "agent", "list", "--json")
    assert code == 1  # no tmux server in the test's TMUX_TMPDIR
    assert "rk.cli.panes" in modules and "rk.core.pane.facts" in modules
    assert not (SCHEDULE_RULES | (COMMAND_MODULES - {"rk.cli.panes"})) & modules


def test_the_lazy_tables_name_real_commands():
    """Every name in a lazy table builds (its module and function exist), and the
    flag `main` rewrites without importing the flags is the flags' own."""
    from rk.cli import flags, root

    for group in (root.RootGroup, root.CronGroup, root.AgentGroup, root.NotifyGroup):
        for name, lazy in group.LAZY.items():
            assert lazy.build(name).name == name
    assert root.ONLY_IF_CHANGED == flags.ONLY_IF_CHANGED
