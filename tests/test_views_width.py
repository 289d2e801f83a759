"""Views for 80 columns: columns shrink, then drop by priority; nothing is cut mid-word;
one time format with the zone named once; `--full` and pipes show everything."""

from __future__ import annotations

import os
import re

import pytest
from cli_helpers import T0, log_line, make_env, run_in_pty, run_sub, write_private

from rk.cli.table import Column, layout, shorten


def test_shorten_ends_after_a_whole_word():
    assert shorten("server not running", 14) == "server not…"
    assert shorten("server not running", 18) == "server not running"
    assert shorten("supercalifragilistic", 8) == "superca…"  # one word wider than the column: cut, marked


def test_layout_drops_the_lowest_priority_column_before_shrinking_a_kept_one():
    columns = [Column("ID"), Column("LEFT", shrink_to=6), Column("NAME", priority=1, shrink_to=10)]
    rows = [["ab12", "server not running", "a long entry name"]]
    lines = layout(columns, rows, 30)
    assert lines[0].split() == ["ID", "LEFT"]
    assert lines[1].split() == ["ab12", "server", "not", "running"]
    assert all(len(line) <= 30 for line in lines)


def test_layout_shrinks_a_droppable_column_when_that_is_enough():
    columns = [Column("ID"), Column("NAME", priority=1, shrink_to=6)]
    lines = layout(columns, [["ab12", "a long entry name"]], 16)
    assert lines[1] == "ab12  a long…"


def test_layout_without_width_shows_every_column_whole():
    columns = [Column("ID"), Column("NAME", priority=1, shrink_to=4)]
    assert layout(columns, [["ab12", "a long entry name"]], None)[1] == "ab12  a long entry name"


@pytest.fixture
def busy_env(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    names = ["a rather long name for an entry", "standup", "nightly digest of everything"]
    for name, sched in zip(names, (["--every", "5m"], ["--cron", "0 9 * * 1-5"], ["--every", "1h"]), strict=True):
        res = run_sub(["cron", "add", "--pane", "%1", "--name", name, *sched, "--", "check in please"], env)
        assert res.code == 0, res
    entries = run_sub(["cron", "list", "--json"], env).json()["result"]
    log = tmp_path / "state" / "default.log"
    write_private(log, "".join(log_line(T0 - 60, e["id"], "%1") + "\n" for e in entries))
    return env, names


@pytest.mark.shell
def test_list_and_log_fit_80_columns_through_a_pty(busy_env):
    env, names = busy_env
    for args in (["cron", "list"], ["cron", "log"]):
        out = run_in_pty(args, {k: v for k, v in env.items() if k != "COLUMNS"}, 80)
        lines = [line for line in out.splitlines() if line.strip() and not line.startswith("rk: warning")]
        assert len(lines) == 4, out  # a header and three rows: no row wraps
        assert all(len(line) <= 80 for line in lines), out
        words = {w for name in names for w in name.split()} | {"check", "in", "please"}
        for line in lines[1:]:  # a shortened cell ends after a whole word (…), never inside one
            for token in line.split():
                if token.endswith("…") and token[:-1].isalpha():
                    assert any(w == token[:-1] for w in words), (token, out)
        assert "(UTC)" in lines[0] and lines[1:] and all("+00:00" not in line for line in lines), out


@pytest.mark.shell
def test_full_and_a_pipe_show_every_column(busy_env):
    env, names = busy_env
    full = run_in_pty(["cron", "list", "--full"], env, 80)  # too wide for 80: a record per entry
    piped = run_sub(["cron", "list"], env).out
    header = next(line for line in piped.splitlines() if line.startswith("ID"))
    assert header.split() == ["ID", "NAME", "SCHEDULE", "NEXT", "(UTC)", "LEFT", "LAST", "TARGET", "FLAGS"]
    fields = {line.split()[0] for line in full.splitlines() if line.startswith("  ") and line[2] != " "}
    assert fields == {"SCHEDULE", "NEXT", "LEFT", "LAST", "TARGET", "FLAGS"}, full
    assert all(len(line) <= 80 for line in full.splitlines()), full
    for out in (full, piped):
        assert all(name in out for name in names)


# --------------------------------------------------------------------------- every other human view

#: Any other time format than the views' one (`2027-01-15 08:00:00`): an offset, a `T`, a `Z`.
OTHER_FORMATS = re.compile(r"\d\d:\d\d(:\d\d)?([+-]\d\d:\d\d|Z)|\d{4}-\d\d-\d\dT\d\d")


def _screen(args, env, cols=80) -> list[str]:
    out = run_in_pty(args, {k: v for k, v in env.items() if k != "COLUMNS"}, cols)
    return [line for line in out.splitlines() if line.strip()]


def _fits(lines: list[str], cols: int = 80) -> None:
    assert lines and all(len(line) <= cols for line in lines), "\n".join(lines)
    assert not any(OTHER_FORMATS.search(line) for line in lines), "\n".join(lines)


def _whole_words(lines: list[str], words: set[str]) -> None:
    """A token ending in `…` is a whole word of the text it shortens, never a cut one."""
    for line in lines:
        for token in line.split():
            if token.endswith("…") and token[:-1].isalpha():
                assert token[:-1] in words, (token, line)


def test_show_next_gaps_status_doctor_and_pause_fit_80_columns_in_one_time_format(busy_env):
    env, names = busy_env
    entries = run_sub(["cron", "list", "--json"], env).json()["result"]
    cron = next(e["id"] for e in entries if e["schedule"]["kind"] == "cron")
    long_prompt = "please look at the open pull requests and summarise what changed since yesterday, briefly"
    added = run_sub(["cron", "add", "--pane", "%1", "--in", "2h", "--", long_prompt], env)
    assert added.code == 0, added
    at_entry = added.out.split()[0]
    words = {w.strip(",") for text in [*names, long_prompt] for w in text.split()}
    for args in (
        ["cron", "show", at_entry],
        ["cron", "show", cron],
        ["cron", "next", cron, "-n", "3"],
        ["cron", "log", cron, "--gaps", "--since", "3d"],
        ["status"],
        ["doctor"],
    ):
        lines = [line for line in _screen(args, env) if not line.startswith("rk: warning")]
        _fits(lines)
        _whole_words(lines, words)
    show = _screen(["cron", "show", at_entry], env)
    assert show[0] == "times in:   UTC", show  # the zone, once, first
    assert any(line.startswith("schedule:   at 2027-01-15 10:00:00") for line in show), show
    assert any(line.startswith(" " * 12) for line in show), show  # the long payload goes on under its key
    assert " ".join(" ".join(show).split()).count(long_prompt) >= 1, show  # wrapped between words, all of it
    status = _screen(["status"], env)
    assert any(line.split()[:3] == ["ID", "NAME", "NEXT"] and "(UTC)" in line for line in status), status
    nxt = _screen(["cron", "next", cron, "-n", "3"], env)
    assert nxt[0].split() == ["TIME", "(UTC)", "UTC"] and len(nxt) == 4, nxt
    paused = run_sub(["cron", "pause", "--for", "90m"], env)
    assert paused.out == "paused default until 2027-01-15 09:30:00 UTC\n", paused
    assert _screen(["cron", "next", cron, "-n", "1"], env)[0].startswith("server paused until 2027-01-15 09:30:00 UTC")


def test_status_and_agent_list_fit_80_columns_with_a_live_server(tmp_path, tmux_server):
    env = dict(make_env(tmp_path, RK_NOW=str(T0)), TMUX_TMPDIR=os.environ["TMUX_TMPDIR"], TZ="UTC")
    pane = tmux_server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"idle:{T0}")
    script = "sleep 86400; : the shell waits, so the pane shows a program that is not an agent"
    tmux_server.run("split-window", "-d", "-t", "main", "sh", "-c", script)
    name = "an entry name long enough to need shrinking at eighty columns"
    add = ["cron", "add", "--every", "5m", "--pane", pane, "--any-program", "--name", name, "-L", tmux_server.name]
    assert run_sub([*add, "--", "check in"], env).code == 0
    words = set(name.split())
    for args in (["status", "-L", tmux_server.name], ["agent", "list", "-L", tmux_server.name]):
        lines = _screen(args, env)
        _fits(lines)
        _whole_words(lines, words)
        full = run_in_pty([*args, "--full"], env, 80)
        assert name in full or args[0] == "agent", full  # --full: every column whole
    agents = _screen(["agent", "list", "-L", tmux_server.name], env)
    assert len(agents) == 3 and agents[0].split()[-1] == "HOOKS", agents  # the process column went first
    piped = run_sub(["agent", "list", "-L", tmux_server.name], env).out.splitlines()
    assert piped[0].split() == [
        "SERVER",
        "PANE",
        "KIND",
        "PROGRAM",
        "STATE",
        "SINCE",
        "(UTC)",
        "FROM",
        "HOOKS",
        "TURN",
        "END",
        "(UTC)",
        "PROCESS",
    ]
    assert len(piped) == 3 and any(line.endswith(")") and "(pid " in line for line in piped), piped


VIEWS = (
    ["cron", "list"],
    ["cron", "show"],
    ["cron", "log"],
    ["cron", "next"],
    ["status"],
    ["agent", "list"],
    ["doctor"],
    ["cron", "simulate"],
)


@pytest.mark.parametrize("view", VIEWS, ids=" ".join)
def test_each_view_s_help_and_the_reference_say_what_it_reads(view, tmp_path):
    from pathlib import Path

    res = run_sub([*view, "--help"], dict(make_env(tmp_path), COLUMNS="200"))
    text = " ".join(res.out.split())
    assert res.code == 0 and "Reads " in text and "tmux" in text, res.out
    readme = (Path(__file__).parent.parent / "docs" / "reference.md").read_text()
    table = readme[readme.index("| view | entries file | log | live tmux |") :]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert any(f"`{' '.join(view)}" in row.split("|")[1] for row in rows), view
