"""Views for 80 columns: columns shrink, then drop by priority; nothing is cut mid-word;
one time format with the zone named once; `--full` and pipes show everything."""

from __future__ import annotations

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
    full = run_in_pty(["cron", "list", "--full"], env, 80)
    piped = run_sub(["cron", "list"], env).out
    for out in (full, piped):
        header = next(line for line in out.splitlines() if line.startswith("ID"))
        assert header.split() == ["ID", "NAME", "SCHEDULE", "NEXT", "(UTC)", "LEFT", "LAST", "TARGET", "FLAGS"]
        assert all(name in out for name in names)
