"""At most once, pinned: a tick killed (-9) at each moment of a delivery, then a
restart, into an app that behaves like an agent TUI (`tests/fixtures/composer_app.py`:
it clears its composer on Enter and records each submission). The tests count
submissions, not occurrences on screen, so a second Enter, a retyped prompt or a
prompt left unsent in the composer all show.

Each moment is reached deterministically (`tests/fixtures/stalling_rk.py` stops
the tick there for good), never by a timed kill. A restart comes either at once
(the fire is still due: a prompt that may have gone in must not be typed again)
or after the cron grace (the fire is missed: a prompt the journal says sits
unsent must still be submitted, once, by the recovery)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_rk, wait_for

from rk.core.log.delivery import LogLine
from rk.core.schedule.grace import CRON_GRACE
from rk.store.delivery_log import read_live

FIXTURES = Path(__file__).resolve().parent / "fixtures"
T0 = 1_800_000_000  # on the hour (2027-01-15 08:00 UTC)
FIRE = T0 + 1800  # the entry's one occurrence in these tests: `30 * * * *`
PROMPT = "deploy status?"

pytestmark = [pytest.mark.shell, pytest.mark.slow]


def submissions(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def composer(server, pane) -> str:
    """What the app's composer holds (its last line, after `> `)."""
    last = [line.rstrip() for line in server.capture(pane).splitlines() if line.strip()][-1]
    assert last.startswith(">"), last
    return last[2:]


def log_lines(env) -> list[LogLine]:
    return [line for p in Path(env["RK_STATE_DIR"]).glob("*.log") for line in read_live(p)]


def intents(env) -> list[Path]:
    return [p for d in Path(env["RK_STATE_DIR"]).glob("*.intents") for p in d.iterdir()]


@pytest.fixture
def app(tmux_server, tmp_path):
    """The first pane runs the composer app; yields (pane, the submissions file)."""
    received = tmp_path / "submitted.txt"
    pane = tmux_server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]
    tmux_server.run(
        "respawn-pane", "-k", "-t", pane, f"exec {sys.executable} {FIXTURES / 'composer_app.py'} {received}"
    )
    wait_for(lambda: tmux_server.capture(pane).startswith("> "), message="the composer drawn")
    return pane, received


def add_entry(env, server, pane) -> str:
    out = run_rk(
        ["cron", "add", PROMPT, "--cron", "30 * * * *", "--tz", "UTC", "--pane", pane, "--any-program", "--json"]
        + ["-L", server.name],
        dict(env, RK_NOW=str(T0)),
        check=True,
    )
    return json.loads(out.stdout)["result"]["id"]


def stalled_tick(env, server, tmp_path, moment: str) -> None:
    """A tick at FIRE that stops at `moment` of its delivery, killed -9 there."""
    flag = tmp_path / f"stalled-{moment}"
    victim = subprocess.Popen(
        [sys.executable, str(FIXTURES / "stalling_rk.py"), "cron", "tick", "-L", server.name],
        env=dict(env, RK_NOW=str(FIRE), RK_TEST_STALL=moment, RK_TEST_STALL_FLAG=str(flag)),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: flag.exists() or victim.poll() is not None, timeout=30, message=f"the tick at {moment}")
        assert flag.exists(), f"the tick ended without reaching {moment}"
    finally:
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait(10)


def restart(env, server, late: bool) -> dict:
    now = FIRE + (CRON_GRACE + 300 if late else 0)
    out = run_rk(["cron", "tick", "-L", server.name, "--json"], dict(env, RK_NOW=str(now)), check=True)
    return json.loads(out.stdout)["result"]


#: (moment, late): how many submissions the app must have received after the restart.
#: Before the paste nothing was typed: at once the fire comes again, late it is missed.
#: From the paste on, the prompt is in the pane: exactly one submission, whenever.
CASES = [
    ("before-paste", False, 1),
    ("before-paste", True, 0),
    ("pasted", False, 1),
    ("pasted", True, 1),
    ("before-enter", False, 1),
    ("before-enter", True, 1),
    ("entered", False, 1),
    ("entered", True, 1),
    ("done", False, 1),
    ("done", True, 1),
]


@pytest.mark.parametrize(
    ("moment", "late", "want"), CASES, ids=[f"{m}-{'late' if la else 'at-once'}" for m, la, _ in CASES]
)
def test_a_tick_killed_at_each_moment_of_a_delivery_submits_at_most_once(
    env, tmux_server, app, tmp_path, moment, late, want
):
    pane, received = app
    entry = add_entry(env, tmux_server, pane)
    stalled_tick(env, tmux_server, tmp_path, moment)
    if moment in ("entered", "done"):
        wait_for(lambda: submissions(received) == [PROMPT], message="the Enter landed before the kill")
    else:
        assert submissions(received) == []
    if moment == "pasted":  # what the kill left: the prompt in the composer, unsent
        wait_for(lambda: composer(tmux_server, pane) == PROMPT, message="the paste drawn")
    assert log_lines(env) == []  # killed before its outcome was logged
    assert [p.name for p in intents(env)] == [f"{entry}.json"]  # the journal survived the kill
    restart(env, tmux_server, late)
    wait_for(lambda: len(submissions(received)) >= want, message=f"{want} submission(s)")
    assert submissions(received) == [PROMPT] * want  # never twice, never glued to a leftover
    outcomes = [line.outcome for line in log_lines(env) if line.entry == entry]
    assert outcomes == (["delivered"] if want else ["missed"]), outcomes
    assert intents(env) == []  # the journal did its work
    # A later tick types nothing more, and nothing is left in the composer.
    restart(env, tmux_server, late)
    assert composer(tmux_server, pane) == ""
    assert submissions(received) == [PROMPT] * want


def test_a_paste_whose_journal_was_lost_is_cleared_before_the_refire(env, tmux_server, app, tmp_path):
    """A kill between paste and Enter whose journal is gone (a journal write cut short
    leaves only its temporary file, which the restart sweeps): the pending marker
    alone says our text may sit in the composer, so the refire clears it first,
    and the app gets one clean submission, not the prompt glued to itself."""
    pane, received = app
    entry = add_entry(env, tmux_server, pane)
    stalled_tick(env, tmux_server, tmp_path, "pasted")
    wait_for(lambda: composer(tmux_server, pane) == PROMPT, message="the paste drawn")
    (journal,) = intents(env)
    journal.rename(journal.with_name(f".{journal.name}.cut.tmp"))
    restart(env, tmux_server, late=False)
    wait_for(lambda: submissions(received), message="a submission")
    assert submissions(received) == [PROMPT]
    assert [line.outcome for line in log_lines(env) if line.entry == entry] == ["delivered"]


def test_a_delivery_that_finished_leaves_no_pending_marker(env, tmux_server, app):
    """The pending marker lives only while our text may sit unsent: after a clean
    delivery it is gone, or the next fire would clear (C-u) whatever the composer
    holds then, a human's draft typed since included."""
    pane, received = app
    add_entry(env, tmux_server, pane)
    restart(env, tmux_server, late=False)
    wait_for(lambda: submissions(received) == [PROMPT], message="delivered")
    locks = Path(env["RK_STATE_DIR"]) / "locks"
    assert locks.is_dir() and list(locks.glob("*.pending")) == []
