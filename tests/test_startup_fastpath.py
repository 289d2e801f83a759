"""The fast path (`rk.cli.fastpath`) and typer cannot drift apart:

- its grammar is the typer declarations' (every option of each view and of the
  groups, with its kind, and the arguments), so an option added to a view is one
  it reads or a test fails;
- for a set of command lines on a populated state dir and a live private tmux
  server, it prints what `rk.cli.main` prints (stdout, stderr, exit status);
- what is not plain (--help, `--`, a value that starts with `-`, a repeated or
  unknown option, a missing argument, completion) it leaves to typer (None).
"""

from __future__ import annotations

import contextlib
import io

import pytest
from cli_helpers import run_in

from rk.cli import fastpath

pytestmark = pytest.mark.shell


def _declared(group: str, name: str):
    """The click command typer builds for a view."""
    from rk.cli import root

    table = {"cron": root.CronGroup, "agent": root.AgentGroup, "": root.RootGroup}[group]
    return table.LAZY[name].build(name)


def _grammar_of(params, skip=("--help",)) -> dict:
    """(option → (parameter, kind)), and the arguments, of click parameters."""
    options, arguments = {}, []
    for p in params:
        if p.param_type_name == "argument":
            arguments.append((p.name, p.required))
            continue
        kind = "flag" if p.is_flag else ("number" if _annotation(p) is int else "value")
        if p.multiple or p.nargs != 1 or p.count:
            kind = "several"  # a kind the fast path does not read
        for opt in [*p.opts, *p.secondary_opts]:
            if opt not in skip:
                options[opt] = (p.name, kind)
    return {"options": options, "arguments": arguments}


def _annotation(param):
    """The type a parameter converts to (typer 0.29 describes it; older ones have click's type)."""
    described = getattr(param, "type_descriptor", None)
    if described is not None:
        return described.annotation
    return int if param.type.name == "integer" else str


def _grammar(g: fastpath.Grammar) -> dict:
    options = {o: (p, "flag") for o, p in g.flags.items()}
    options |= {o: (p, "value") for o, p in g.values.items()}
    options |= {o: (p, "number") for o, p in g.numbers.items()}
    arguments = [(a, i < g.required) for i, a in enumerate(g.arguments)]
    return {"options": options, "arguments": arguments}


@pytest.mark.parametrize("key", sorted(fastpath.VIEWS))
def test_the_grammar_is_the_declaration(key):
    group, name = key
    view = fastpath.VIEWS[key]
    command = _declared(group, name)
    assert _grammar_of(command.params) == _grammar(view.grammar)
    assert command.callback.__name__ == view.function


def test_the_groups_grammar_is_theirs():
    import typer.main

    from rk.cli import root

    tree = typer.main.get_command(root.app)
    extra = ("--help", "--version", "--install-completion", "--show-completion")
    assert _grammar_of(tree.params, extra) == _grammar(fastpath.GROUP)
    for name, grammar in fastpath.GROUPS.items():
        assert _grammar_of(tree.commands[name].params) == _grammar(grammar)


@pytest.fixture
def populated(env, tmux_server):
    """Entries of several kinds on the private server (its pane %0), a delivery, a
    mute and an entry on a second server that does not run; the clock fixed."""
    env = {**env, "RK_NOW": "1796550000", "TZ": "Europe/Paris"}
    slug = tmux_server.name
    adds = [
        ["every one", "--every", "1h"],
        ["cron one", "--cron", "0 9 * * 1-5", "--tz", "America/New_York", "--max-per-day", "3"],
        ["backoff", "--backoff", "--min", "2m", "--active-hours", "08:00-19:00"],
        ["at once", "--at", "2026-12-31T10:00:00+01:00", "--name", "a long name that goes on for a while"],
        ["waker", "--wake-on", "agent-state-change", "--max-total", "5", "--only-if-changed", "pane"],
        ["budgeted", "--every", "30m", "--budget", "2M/day", "--turn-timeout", "20m", "--pinned"],
    ]
    ids = []
    for add in adds:
        done = run_in(["cron", "add", *add, "--pane", "%0", "--any-program", "-L", slug, "--json"], env)
        assert done.code == 0, done.err
        ids.append(done.out.split('"id": "')[1].split('"')[0])
    assert run_in(["cron", "add", "elsewhere", "--every", "1h", "--pane", "%3", "-L", "other"], env).code == 0
    assert run_in(["cron", "run", ids[0], "-L", slug], env).code == 0
    assert run_in(["cron", "mute", ids[1], "--for", "2h", "-L", slug], env).code == 0
    return env, slug, ids


def _fast(args, env):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = fastpath.run(list(args), environ=dict(env), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _lines(slug: str, ids: list[str]) -> list[list[str]]:
    first = ids[0]
    return [
        ["cron", "list", "-L", slug],
        ["cron", "list", "-L", slug, "--json"],
        ["cron", "ls", f"--server={slug}", "--full"],
        ["cron", "list", "--all"],
        ["cron", "list", "--all", "--json"],
        ["--json", "cron", "list", "-L", slug],
        ["-L", slug, "cron", "--json", "list", "-l"],
        ["cron", f"-L{slug}", "list"],
        ["cron", "list", "-L", "nosuch"],
        ["cron", "list", "-L", "bad/slug", "--json"],
        ["cron", "list", "--all", "-L", slug],
        ["cron", "list", "-L", "other"],
        ["cron", "show", first, "-L", slug],
        ["cron", "show", "--json", ids[3], "-L", slug],
        ["cron", "show", ids[5], "-L", slug],
        ["cron", "show", "zzzz", "-L", slug],
        ["cron", "show", "zzzz", "-L", slug, "--json"],
        ["cron", "next", ids[1], "-L", slug],
        ["cron", "next", ids[1], "-n", "3", "-L", slug, "--json"],
        ["cron", "next", ids[2], "-n", "0", "-L", slug],
        ["cron", "next", first, "-n7", "--full", "-L", slug],
        ["cron", "log", "-L", slug],
        ["cron", "log", first, "-L", slug, "--json"],
        ["cron", "log", "-n", "1", "--outcome", "deliv", "-L", slug],
        ["cron", "log", "--since", "7d", "-L", slug],
        ["cron", "log", "--outcome", "nonsense", "-L", slug],
        ["cron", "log", "--gaps", ids[1], "-L", slug],
        ["status", "-L", slug],
        ["status", "--json"],
        ["status", "--full"],
        ["status", "--format", "json"],
        ["agent", "list", "-L", slug],
        ["agent", "list", "-L", slug, "--json"],
        ["agent", "list", "--all", "-L", slug],
        ["agent", "list", "-L", "other"],
    ]


def test_the_fast_path_prints_what_typer_prints(populated):
    env, slug, ids = populated
    answered = failed = 0
    for args in _lines(slug, ids):
        fast = _fast(args, env)
        assert fast[0] is not None, f"not taken: {args}"
        typer = run_in(args, env)
        assert fast == (typer.code, typer.out, typer.err), args
        answered += fast[0] == 0 and fast[1] != ""
        failed += fast[0] != 0 and fast[2] + fast[1] != ""
    assert answered >= 20 and failed >= 6  # views that show something, and their errors


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["cron", "list", "--help"],
        ["cron", "list", "--", "x"],
        ["cron", "list", "--bogus"],
        ["cron", "list", "-L"],
        ["cron", "list", "-L", "--json"],
        ["cron", "list", "--all", "--all"],
        ["cron", "list", "-l", "--full"],
        ["cron", "list", "--json=1"],
        ["cron", "list", "-la"],
        ["cron", "list", "extra"],
        ["cron", "show"],
        ["cron", "show", "a", "b"],
        ["cron", "next", "a", "-n", "x"],
        ["cron", "next", "a", "-n", "-1"],
        ["cron", "next", "a", "-n", "07"],
        ["cron", "next", "a", "-n", "٣"],
        ["cron", "log", "-n=3"],
        ["--version", "cron", "list"],
        ["agent", "-L", "x", "list"],
        ["cron", "add", "x", "--every", "1h"],
        ["doctor"],
        ["list"],
        ["cron"],
        [],
    ],
)
def test_what_is_not_plain_goes_to_typer(args):
    assert fastpath.parse(args) is None


def test_completion_goes_to_typer(monkeypatch):
    monkeypatch.setenv("_RK_COMPLETE", "bash_complete")
    assert fastpath.run(["cron", "list"]) is None


def test_a_plain_line_is_parsed_as_click_parses_it():
    call = fastpath.parse(["-L", "a", "cron", "--json", "next", "-n5", "ID", "--server=b", "-l"])
    assert call is not None
    assert call.groups == [("a", False), (None, True)]
    assert (call.view.function, call.path) == ("cmd_next", "rk cron next")
    assert call.params == {"n": 5, "entry_id": "ID", "server": "b", "full": True}
