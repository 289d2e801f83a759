"""Each view at 80 columns and 24 rows, on a real tmux pane of that size: no line wider
than 80 cells (a wrapped line is joined by the capture, so it shows as one too long),
the columns that tell entries apart kept (NAME and TARGET: three entries named
`status?` on three panes), `status` within one screen with its first line on it,
`status --watch` redrawn in place (nothing piles into the scrollback), `log -f` with
whole outcome names and the names of entries added after it started, and the demo's
closing tables. The screens are saved for the closing note when CAPTURES names a
directory (`CAPTURES=/some/dir pytest tests/test_views_80x24.py`)."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

import pytest
from cli_helpers import T0, log_line, make_env, run_in_pty, run_sub, write_private
from conftest import wait_for

from rk.cli.status import PROMPT_ROWS, redraw
from rk.cli.table import Block, Column, records, screenful
from rk.cli.views import follow_format

COLS, ROWS = 80, 24
ROOT = str(Path(__file__).resolve().parent.parent)  #: where `python -m rk` in a pane finds this rk
#: Entries beside the three `status?` ones, so `list` and `status` have more rows than a screen.
DIGESTS = 27
LONG_FAILURE = "failed: paste: tmux refused the buffer because the pane went away mid-write"


# --------------------------------------------------------------------------- pure parts


def test_screenful_keeps_the_top_of_each_block_and_says_where_the_rest_is():
    blocks = [
        Block([], "", lead=["ticker: running"]),
        Block([[f"failed {i}"] for i in range(6)], "rk status --full", ("failure", "failures")),
        Block([[f"  entry {i}"] for i in range(30)], "rk cron list", ("entry", "entries"), ["", "server x"], ["  ID"]),
    ]
    lines = screenful(blocks, 12, "rk status --full")
    assert len(lines) <= 12 and lines[0] == "ticker: running", lines
    assert "failed 0" in lines and "  entry 0" in lines and "  ID" in lines, lines  # each keeps its top
    assert any(re.fullmatch(r"… \d+ more entries: rk cron list", line) for line in lines), lines
    assert any(re.fullmatch(r"… \d+ more failures: rk status --full", line) for line in lines), lines
    assert screenful(blocks, None, "x") == [line for b in blocks for line in b.lines()]  # piped: all of it
    assert len(screenful(blocks, 100, "x")) == 1 + 6 + 3 + 30  # it fits: nothing cut, no "more" line


def test_screenful_with_no_room_for_any_item_still_fits():
    blocks = [Block([[f"line {i}"] for i in range(10)], "rk cron list", lead=[f"lead {j}" for j in range(5)])]
    lines = screenful(blocks, 4, "rk status --full")
    assert len(lines) == 4 and lines[-1].endswith("rk status --full"), lines


def test_records_put_a_too_wide_table_one_field_a_line_in_the_width():
    columns = [Column("ID"), Column("NAME"), Column("SCHEDULE"), Column("TARGET")]
    rows = [["ab12", "status?", "every 3m", "session:claude:" + "5" * 40], ["cd34", "x" * 20, "cron 0 9 * * 1-5", "p"]]
    lines = records(columns, rows, 40, title=2)
    assert all(len(line) <= 40 for line in lines), lines
    assert lines[0] == "ab12  status?" and "  SCHEDULE  every 3m" in lines and "" in lines, lines


def test_a_redrawn_frame_never_clears_the_screen_and_scrolls_only_once():
    first = redraw(["a", "b"], ROWS, True)
    again = redraw(["a", "b"], ROWS, False)
    for frame in (first, again):
        assert "\x1b[2J" not in frame and "\x1b[3J" not in frame  # a clear-screen pushes a frame into history
    assert first.startswith("\n" * ROWS) and not again.startswith("\n")
    assert again.startswith("\x1b[H") and again.endswith("\x1b[J")


def test_log_follow_columns_fit_80_and_keep_room_for_every_status_word():
    from rk.core.log.delivery import Status

    fmt = follow_format(COLS)
    assert sum(fmt.widths) + 2 * (len(fmt.widths) - 1) + (fmt.room or 0) == COLS
    assert fmt.room is not None and fmt.room >= max(len(s) for s in Status)
    assert follow_format(None).room is None  # piped: whole lines


# --------------------------------------------------------------------------- on a tmux pane 80x24


@pytest.fixture
def scene(tmp_path, tmux_server):
    """Three `status?` entries on three panes, DIGESTS more, three whose targets are
    missing, and a log of every outcome; the server of them runs."""
    server = tmux_server
    env = dict(make_env(tmp_path, RK_NOW=str(T0)), TMUX_TMPDIR=os.environ["TMUX_TMPDIR"], TZ="UTC")
    for _ in range(2):
        server.run("split-window", "-d", "-t", "main", "cat")
    panes = server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()
    for pane in panes:
        server.set_pane_option(pane, "@rk_pane_agent_state", f"idle:{T0}")
    ids = []
    for pane in panes:
        ids.append(_add(env, server.name, "--pane", pane, "--any-program", "--name", "status?", "--every", "3m"))
    digest = _add(env, server.name, "--pane", panes[0], "--any-program", "--name", "nightly digest 0 of everything")
    entries = Path(env["RK_STATE_DIR"]) / f"{server.name}.yaml"
    text = entries.read_text()
    head = re.search(rf"  - id: (['\"]?){digest}\1\n", text)  # an id YAML reads as a number is quoted
    assert head is not None, text
    block = text[head.start() :]
    more = "".join(
        block.replace(head.group(0), f"  - id: d{n:03d}\n").replace("digest 0 of", f"digest {n} of")
        for n in range(1, DIGESTS)
    )
    write_private(entries, text + more)
    session = "claude:565428b4-1f2e-4c3d-9a8b-7c6d5e4f3a2b"
    for where in (["--session", session], ["--role", "operator"], ["--pane", "%99"]):
        ids.append(_add(env, server.name, *where, "--name", "status?", "--every", "3m"))
    outcomes = ["delivered", "skipped-absent", "skipped-unchanged", "notified-absent", LONG_FAILURE]
    log = Path(env["RK_STATE_DIR"]) / f"{server.name}.log"
    lines = [log_line(T0 - 900 + 20 * i, e, panes[i % 3], outcome=outcomes[i % 5]) for i, e in enumerate(ids * 2)]
    write_private(log, "".join(line + "\n" for line in lines))
    return env, server, panes


def _add(env, server, *args):
    if "--every" not in args:
        args = (*args, "--cron", "0 9 * * 1-5")
    res = run_sub(["cron", "add", "-L", server, *args, "--", "status?"], env)
    assert res.code == 0, res
    return res.out.split()[0]


def _pane_env(env):
    keep = ("RK_STATE_DIR", "RK_NOW", "HOME", "XDG_CONFIG_HOME", "TZ", "TMUX_TMPDIR", "PATH", "LANG", "LC_ALL")
    return [f"{k}={env[k]}" for k in keep if k in env]


def _on_screen(server, env, args, name):
    """`rk ARGS` in a new 80x24 tmux window: what it showed once it exited, the rows that
    scrolled into the scrollback first (wrapped lines joined), and how many those are."""
    server.run("set-option", "-g", "remain-on-exit", "on")
    command = ["env", *_pane_env(env), sys.executable, "-m", "rk", *args]
    pane = server.run(
        "new-session", "-d", "-P", "-F", "#{pane_id}", "-c", ROOT, "-s", name, "-x", "80", "-y", "24", *command
    )
    pane = pane.strip()
    wait_for(lambda: server.run("display", "-p", "-t", pane, "#{pane_dead}").strip() == "1", 30, message="rk exits")
    return _screen(server, pane, everything=True), int(server.run("display", "-p", "-t", pane, "#{history_size}"))


def _screen(server, pane, everything=False):
    rows = server.run("capture-pane", "-p", "-J", *(["-S", "-"] if everything else []), "-t", pane).split("\n")
    rows = [row.rstrip() for row in rows if not row.startswith("Pane is dead")]
    while rows and not rows[-1]:
        rows.pop()
    return rows


def _save(name, rows):
    where = os.environ.get("CAPTURES")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        Path(where, f"{name}.txt").write_text("\n".join(rows) + "\n")


def _fits(rows):
    assert rows and all(len(row) <= COLS for row in rows), "\n".join(rows)


def test_list_keeps_name_and_target_so_three_status_entries_stay_apart(scene):
    env, server, panes = scene
    rows, _ = _on_screen(server, env, ["cron", "list", "-L", server.name], "list")
    _save("cron-list", rows[-ROWS:])
    _fits(rows)
    assert len(rows) == 1 + 3 + DIGESTS + 3, rows  # a header and a row each: none wraps
    assert rows[0].split()[:2] == ["ID", "NAME"] and rows[0].split()[-1] == "TARGET", rows[0]
    status_rows = [row for row in rows if " status? " in row and "(idle)" in row]
    assert sorted(re.search(r"pane:(%\d+)", row).group(1) for row in status_rows) == sorted(panes), rows
    missing = [row for row in rows if " status? " in row and "target missing" in row]
    assert len(missing) == 3 and any("session:claude:" in row for row in missing), rows
    assert any(re.search(r"nightly digest( \d+)?…", row) for row in rows), rows  # a long name shortened, marked
    wider = run_in_pty(["cron", "list", "-L", server.name], {k: v for k, v in env.items() if k != "COLUMNS"}, 130)
    assert "session:claude:565428b4… (missing)" in wider, wider  # a session id as git shortens a hash


def test_list_full_at_80_puts_each_entry_a_field_a_line(scene):
    env, server, _ = scene
    rows, _ = _on_screen(server, env, ["cron", "list", "--full", "-L", server.name], "full")
    _save("cron-list-full", rows[:ROWS])
    _fits(rows)
    heads = [row for row in rows if row and not row.startswith(" ")]
    assert len(heads) == 3 + DIGESTS + 3 and heads[0].split()[1] == "status?", heads
    fields = {row.split()[0] for row in rows if row.startswith("  ") and row[2] != " "}  # not a value's next line
    assert fields == {"SCHEDULE", "NEXT", "LEFT", "LAST", "TARGET", "FLAGS"}, fields
    session = "session:claude:565428b4-1f2e-4c3d-9a8b-7c6d5e4f3a2b (missing)"
    assert any(row.startswith("  TARGET") and row.endswith(session) for row in rows), rows  # whole


def test_list_full_through_a_pipe_is_the_whole_table(scene):
    env, server, _ = scene
    out = run_sub(["cron", "list", "--full", "-L", server.name], env).out.splitlines()
    assert out[0].split()[:3] == ["ID", "NAME", "SCHEDULE"] and len(out) == 1 + 3 + DIGESTS + 3, out[:3]
    assert any("session:claude:565428b4-1f2e-4c3d-9a8b-7c6d5e4f3a2b" in line for line in out)


def test_status_fits_one_screen_with_its_first_line_on_it(scene):
    env, server, _ = scene
    rows, _ = _on_screen(server, env, ["status", "-L", server.name], "status")
    _save("status", rows)
    _fits(rows)
    assert len(rows) <= ROWS - PROMPT_ROWS, rows  # with the scrollback: all of it, and room for the prompt
    assert rows[0].startswith("ticker:"), rows
    assert any(re.search(rf"… \d+ more entries: rk cron list -L {server.name}$", row) for row in rows), rows
    assert any(row.split()[:2] == ["ID", "NAME"] and row.split()[-1] == "TARGET" for row in rows), rows
    piped = run_sub(["status", "-L", server.name], env).out.splitlines()
    assert len(piped) > ROWS and not any("more entries" in line for line in piped)  # a pipe gets everything


def test_status_watch_redraws_in_place(scene):
    env, server, _ = scene
    server.run("set-option", "-g", "remain-on-exit", "on")
    command = ["env", *_pane_env(env), sys.executable, "-m", "rk", "status", "--watch", "-L", server.name]
    pane = server.run(
        "new-session", "-d", "-P", "-F", "#{pane_id}", "-c", ROOT, "-s", "watch", "-x", "80", "-y", "24", *command
    )
    pane = pane.strip()

    def more() -> int | None:
        found = [re.search(r"… (\d+) more entries", r) for r in _screen(server, pane)]
        return next((int(m.group(1)) for m in found if m), None)

    shown = wait_for(more, 30, message="a frame")
    before = int(server.run("display", "-p", "-t", pane, "#{history_size}"))
    for n in (1, 2):  # two frames after the first, each with one more entry
        _add(env, server.name, "--pane", "%0", "--any-program", "--name", f"new {n}", "--every", "1h")
        wait_for(lambda n=n: more() == shown + n, 30, message=f"frame {n + 1}")
    rows = _screen(server, pane)
    _save("status-watch", rows)
    _fits(rows)
    assert int(server.run("display", "-p", "-t", pane, "#{history_size}")) == before, rows  # nothing piled up
    assert rows[0].startswith("ticker:") and sum(r.startswith("ticker:") for r in rows) == 1, rows
    assert len(rows) < ROWS, rows
    server.run("send-keys", "-t", pane, "C-c")
    wait_for(lambda: server.run("display", "-p", "-t", pane, "#{pane_dead}").strip() == "1", 30, message="Ctrl-C")


def test_status_watch_through_a_pipe_prints_plain_frames(tmp_path):
    import subprocess
    import threading

    env = make_env(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "rk", "status", "--watch"], env=env, stdout=subprocess.PIPE)
    seen: list[bytes] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)

    threading.Thread(target=read, daemon=True).start()
    try:
        wait_for(lambda: sum(line.startswith(b"ticker:") for line in seen) >= 2, 30, message="two frames")
    finally:
        proc.kill()
        proc.wait(timeout=10)
    assert not any(b"\x1b" in line for line in seen), seen  # no escapes into a file or a pipe


def test_log_follow_fits_keeps_outcomes_whole_and_names_new_entries(scene):
    env, server, panes = scene
    server.run("set-option", "-g", "remain-on-exit", "on")
    command = ["env", *_pane_env(env), sys.executable, "-m", "rk", "cron", "log", "-f", "-n", "8", "-L", server.name]
    pane = server.run(
        "new-session", "-d", "-P", "-F", "#{pane_id}", "-c", ROOT, "-s", "follow", "-x", "80", "-y", "24", *command
    )
    pane = pane.strip()
    wait_for(lambda: any("skipped-unchanged" in r for r in _screen(server, pane)), 30, message="the first lines")
    new = _add(
        env, server.name, "--pane", panes[1], "--any-program", "--name", "added while following", "--every", "1m"
    )
    log = Path(env["RK_STATE_DIR"]) / f"{server.name}.log"
    with log.open("a") as f:
        f.write(log_line(T0 + 5, new, panes[1], outcome="skipped-unchanged") + "\n")
        f.write(log_line(T0 + 6, new, panes[1], outcome=LONG_FAILURE) + "\n")
    wait_for(lambda: sum(f" {new} " in r for r in _screen(server, pane)) == 2, 30, message="the appended lines")
    rows = _screen(server, pane)
    _save("cron-log-follow", rows)
    _fits(rows)
    for status in ("skipped-unchanged", "skipped-absent", "notified-absent", "delivered"):
        assert any(re.search(rf"\b{status}\b", row) for row in rows), (status, rows)
    mine = [row for row in rows if f" {new} " in row]
    assert len(mine) == 2 and all("added while" in row for row in mine), rows  # named, not `-`
    assert " ".join(" ".join(rows).split()).count(" ".join(LONG_FAILURE.split()[:3])) >= 1, rows
    server.run("send-keys", "-t", pane, "C-c")


# --------------------------------------------------------------------------- the demo's closing tables


def test_the_demo_s_closing_tables_fit_80_columns(scene):
    env, server, _ = scene
    spec = importlib.util.spec_from_file_location(
        "demo_run", Path(__file__).resolve().parent.parent / "demo" / "run.py"
    )
    assert spec is not None and spec.loader is not None
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    demo.SERVER = server.name
    out = demo.closing({k: v for k, v in env.items()}, COLS).splitlines()
    _save("demo-closing", out)
    assert "$ rk cron list" in out and "$ rk cron log -n 0" in out, out
    _fits([line for line in out if line])
    logged = out[out.index("$ rk cron log -n 0") + 1].split()
    assert logged[:4] == ["TIME", "(UTC)", "ENTRY", "NAME"] and logged[-1] == "OUTCOME", logged  # which entry it was
    listed = out[out.index("$ rk cron list") + 1 :]
    assert listed[0].split()[:2] == ["ID", "NAME"] and listed[0].split()[-1] == "TARGET", listed
    summary = demo.summary(demo.new_tally()).splitlines()
    _fits(summary)
