"""How a turn ended (`@rk_pane_turn_end`), `rk agent await` and `rk events`:
the pure rules, then real tmux panes with hooks fired through `rk agent hook`."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import child_env, wait_for

from rk.core.channels.awaiting import (
    ALL,
    ANY,
    PaneView,
    Spec,
    conditions_of,
    departures,
    observe,
    outcome,
    parse_until,
    start,
)
from rk.core.log import states as journal
from rk.core.log.delivery import LogLine
from rk.core.log.events import Replay, merged, selected
from rk.core.pane.identity import ServerIdentity
from rk.core.pane.turn import hook_turn_end, parse_turn_end, screen_turn_end
from rk.store import state_journal as statejournal
from rk.store.delivery_log import append_lines, rotate_if_needed

# -- the turn end, pure ------------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "state", "event", "end"),
    [
        ("idle", "idle", "Stop", "ok"),
        ("idle", "idle", "AfterAgent", "ok"),
        ("idle", "idle", None, "ok"),  # OpenCode's session.idle: no payload event
        ("idle", "idle", "Interrupt", "interrupted"),  # Codex's Esc, with an older install's token
        ("interrupted", "idle", "Interrupt", "interrupted"),
        ("failed", "idle", "StopFailure", "failed"),
        ("failed", "limited", "StopFailure", "limited"),
        ("failed", None, "PostModelRequest", ""),  # a request that did not fail ends nothing
        ("limited", "limited", None, "limited"),
        ("idle", "idle", "SessionEnd", ""),
        ("idle", "idle", "Notification", ""),
        ("stamp", "idle", "SessionStart", ""),
        ("active", "active", "UserPromptSubmit", ""),
        ("waiting", "waiting", "PermissionRequest", ""),
    ],
)
def test_hook_turn_end(token, state, event, end):
    assert hook_turn_end(token, state, event) == end


@pytest.mark.parametrize(
    ("before", "after", "text", "end"),
    [
        ("active", "idle", "● Done.\n\n> \n", "ok"),
        ("active", "idle", "  ⎿  Interrupted · What should Claude do instead?\n\n>\n", "interrupted"),
        ("active", "idle", "■ Conversation interrupted - tell the model what to do differently.\n› \n", "interrupted"),
        ("waiting", "idle", "✕ Request cancelled.\n> \n", "interrupted"),
        ("active", "limited", "You've hit your usage limit\n", "limited"),
        ("limited", "limited", "still limited\n", ""),
        ("idle", "idle", "Interrupted\n", ""),  # no turn ran: nothing ended
        ("limited", "idle", "> \n", ""),  # a limit that passed is no turn's end
        ("idle", "active", "", ""),
    ],
)
def test_screen_turn_end(before, after, text, end):
    assert screen_turn_end(before, after, text) == end


def test_a_reply_that_says_interrupted_far_up_is_not_an_interrupt():
    text = "Interrupted\n" + "".join(f"line {i}\n" for i in range(20)) + "> \n"
    assert screen_turn_end("active", "idle", text) == "ok"


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("ok:10", ("ok", 10)),
        ("failed:1796224375", ("failed", 1796224375)),
        ("bogus:1", ("", 0)),
        ("ok:", ("", 0)),
        ("", ("", 0)),
    ],
)
def test_parse_turn_end(value, parsed):
    assert parse_turn_end(value) == parsed


def test_journal_lines_round_trip_and_refuse_foreign_values():
    raw = journal.render(5, "%3", "idle", "ok", "hook", "claude")
    assert journal.parse(raw) == {"ts": 5, "pane": "%3", "to": "idle", "end": "ok", "source": "hook", "agent": "claude"}
    assert journal.render(5, "%3", 'idle","x":"1', "", "hook") == b""
    assert journal.render(5, "%3\n", "idle") == b""
    assert journal.parse(b'{"ts":1,"pane":"%3"') is None
    assert journal.parse(b'{"ts":"1","pane":"%3","to":"idle"}') is None


# -- the await decision, pure ----------------------------------------------------------

IDLE = PaneView("%1", True, "idle", 100)
ACTIVE = PaneView("%1", True, "active", 90)


def test_parse_until():
    assert parse_until("idle,gone") == frozenset({"idle", "gone"})
    for bad in ("", "idle,", "idel", "idle,,waiting"):
        with pytest.raises(ValueError):
            parse_until(bad)


def test_conditions_of_a_pane():
    assert conditions_of(IDLE) == {"idle"}
    assert conditions_of(PaneView("%1", True, "idle", 100, "failed", 100)) == {"idle", "failed"}
    # a failed end older than the rest belongs to an older turn
    assert conditions_of(PaneView("%1", True, "idle", 100, "failed", 50)) == {"idle"}
    assert conditions_of(PaneView("%1", False)) == {"gone"}
    assert conditions_of(ACTIVE) == frozenset()
    assert conditions_of(PaneView("%1", True, "limited", 1, "limited", 1)) == {"limited"}


def test_the_most_specific_condition_is_reported():
    spec = Spec(frozenset({"idle", "failed"}))
    p = observe(spec, start(["%1"]), [PaneView("%1", True, "idle", 100, "failed", 100)])
    assert [r.condition for r in outcome(spec, p)] == ["failed"]


def test_after_active_waits_for_the_turn():
    spec = Spec(frozenset({"idle"}), after_active=True)
    p = observe(spec, start(["%1"]), [IDLE])
    assert outcome(spec, p) is None, "idle before the turn was seen active does not count"
    p = observe(spec, p, [ACTIVE, IDLE])
    assert outcome(spec, p)[0].condition == "idle"
    assert outcome(Spec(frozenset({"idle"})), observe(Spec(frozenset({"idle"})), start(["%1"]), [IDLE]))


def test_gone_counts_even_before_active():
    spec = Spec(frozenset({"idle", "gone"}), after_active=True)
    assert outcome(spec, observe(spec, start(["%1"]), [PaneView("%1", False)]))[0].condition == "gone"


def test_any_and_all():
    views = [PaneView("%1", True, "active", 1), PaneView("%2", True, "idle", 2)]
    for mode, expected in ((ANY, ["%2"]), (ALL, None)):
        spec = Spec(frozenset({"idle"}), mode=mode)
        done = outcome(spec, observe(spec, start(["%1", "%2"]), views))
        assert (done and [r.view.pane for r in done]) == expected if expected else done is None
    spec = Spec(frozenset({"idle"}), mode=ALL)
    p = observe(spec, start(["%1", "%2"]), views)
    p = observe(spec, p, [PaneView("%1", True, "idle", 3), PaneView("%2", True, "active", 3)])
    assert [r.view.pane for r in outcome(spec, p)] == ["%1", "%2"], "a pane that reached it stays done"


SERVER = ServerIdentity(1_700_000_000, 4242)


def test_gone_ends_any_wait_whatever_until_says():
    for mode in (ANY, ALL):
        spec = Spec(frozenset({"idle"}), after_active=True, mode=mode)
        views = [PaneView("%1", True, "active", 1), PaneView("%2", False, why="pane closed")]
        done = outcome(spec, observe(spec, start(["%1", "%2"]), views))
        assert done is not None, f"{mode}: a pane that can never be idle ends the wait"
        assert (done[0].condition, done[0].view.pane, done[0].to_dict()["why"]) == ("gone", "%2", "pane closed")


def test_all_reports_the_gone_pane_first_and_the_done_ones():
    spec = Spec(frozenset({"idle"}), mode=ALL)
    views = [PaneView("%1", True, "idle", 5), PaneView("%2", True, "active", 5), PaneView("%3", False)]
    done = outcome(spec, observe(spec, start(["%1", "%2", "%3"]), views))
    assert [(r.view.pane, r.condition) for r in done] == [("%3", "gone"), ("%1", "idle")]


@pytest.mark.parametrize(
    ("later", "why"),
    [
        (PaneView("%1", True, "idle", 9, pid=77, server=ServerIdentity(1_700_000_500, 5151)), "tmux server restarted"),
        (PaneView("%1", True, "idle", 9, pid=77, server=ServerIdentity(1_700_000_000, 5151)), "tmux server restarted"),
        (PaneView("%1", True, "idle", 9, pid=78, server=SERVER), "pane runs another process (pid 77, now 78)"),
    ],
)
def test_a_pane_whose_identity_changed_is_gone(later, why):
    spec = Spec(frozenset({"idle"}))
    p = observe(spec, start(["%1"]), [PaneView("%1", True, "active", 1, pid=77, server=SERVER)])
    assert outcome(spec, p) is None
    assert departures(p, [later]) == [later], "looked at before the journal"
    done = outcome(spec, observe(spec, p, [later]))
    assert done[0].condition == "gone" and done[0].view.why.startswith(why), "the new %1 never answers the wait"


def test_the_same_pane_or_an_unknown_identity_is_no_change():
    spec = Spec(frozenset({"idle"}))
    p = observe(spec, start(["%1"]), [PaneView("%1", True, "active", 1, pid=77, server=SERVER)])
    assert departures(p, [PaneView("%1", True, "idle", 2, pid=77, server=SERVER)]) == []
    journal_line = PaneView("%1", True, "idle", 2)  # no pid, no server: no evidence either way
    assert outcome(spec, observe(spec, p, [journal_line]))[0].condition == "idle"
    first_from_journal = observe(spec, start(["%1"]), [PaneView("%1", True, "active", 1)])
    assert not first_from_journal.first, "a journal line fixes no identity"


def test_untargeted_panes_are_ignored():
    spec = Spec(frozenset({"idle"}))
    assert outcome(spec, observe(spec, start(["%1"]), [PaneView("%9", True, "idle", 1)])) is None


# -- events, pure ----------------------------------------------------------------------


def test_events_replay_from_and_merge_oldest_first():
    lines = [
        {"ts": 10, "pane": "%1", "to": "active", "end": "", "source": "hook", "agent": "claude"},
        {"ts": 12, "pane": "%2", "to": "active", "end": "", "source": "hook", "agent": ""},
        {"ts": 15, "pane": "%1", "to": "active", "end": "", "source": "hook", "agent": "claude"},  # a tool call
        {"ts": 20, "pane": "%1", "to": "idle", "end": "ok", "source": "hook", "agent": "claude"},
        {"ts": 30, "pane": "%1", "to": "idle", "end": "ok", "source": "hook", "agent": "claude"},  # a turn ended
    ]
    states = Replay().feed(lines)
    assert [(e.pane, e.from_, e.to) for e in states] == [
        ("%1", "", "active"),
        ("%2", "", "active"),
        ("%1", "active", "idle"),
        ("%1", "idle", "idle"),
    ], "a repeated state is no change unless it ends a turn"
    states = states[:3]
    from rk.core.log.events import log_events

    log = log_events(
        [LogLine(11, "e1", "%1", "schedule", "delivered"), LogLine(20, "e1", "%1", "schedule", "skipped-busy")]
    )
    events = merged(states, log)
    assert [(e.ts, e.kind) for e in events] == [(10, "state"), (11, "log"), (12, "state"), (20, "state"), (20, "log")]
    assert [e.ts for e in selected(events, since=12)] == [12, 20, 20]
    assert {e.pane for e in selected(events, panes=frozenset({"%2"}))} == {"%2"}


# -- tmux: the hook's turn end and journal -----------------------------------------------


def pane_of(server) -> str:
    return server.run("display-message", "-p", "-t", "main", "#{pane_id}").strip()


def option(server, pane: str, name: str) -> str:
    return server.run("show-options", "-p", "-v", "-t", pane, name).strip() if _has(server, pane, name) else ""


def _has(server, pane, name) -> bool:
    return name in server.run("show-options", "-p", "-t", pane)


def hook_env(server, pane: str, state: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(TMUX=f"{server.path},{os.getpid()},0", TMUX_PANE=pane, RK_STATE_DIR=str(state))
    env.update(extra)
    return env


def fire(server, pane: str, state: Path, token: str, event: str | None = None, agent: str = "claude", **payload):
    """One hook, as an agent runs it: `rk agent hook` with the payload on stdin."""
    env = hook_env(server, pane, state)
    body = {"session_id": "s1", **({"hook_event_name": event} if event else {}), **payload}
    proc = subprocess.run(
        [sys.executable, "-m", "rk", "agent", "hook", "--agent", agent, token],
        input=json.dumps(body),
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    ("token", "event", "payload", "state", "end"),
    [
        ("idle", "Stop", {}, "idle", "ok"),
        ("failed", "StopFailure", {"error": "server_error"}, "idle", "failed"),
        ("failed", "StopFailure", {"error": "rate_limit"}, "limited", "limited"),
        ("interrupted", "Interrupt", {}, "idle", "interrupted"),
        ("idle", "Interrupt", {}, "idle", "interrupted"),
        ("stamp", "SessionStart", {}, "idle", ""),
    ],
)
def test_the_hook_records_how_the_turn_ended(tmux_server, tmp_path, token, event, payload, state, end):
    pane = pane_of(tmux_server)
    fire(tmux_server, pane, tmp_path / "state", "active", "UserPromptSubmit")
    fire(tmux_server, pane, tmp_path / "state", token, event, agent="codex", **payload)
    assert option(tmux_server, pane, "@rk_pane_agent_state").split(":")[0] == state
    recorded, when = parse_turn_end(option(tmux_server, pane, "@rk_pane_turn_end"))
    assert recorded == end
    journal_file = tmp_path / "state" / f"{tmux_server.name}.events"
    lines = [json.loads(x) for x in journal_file.read_text().splitlines()]
    assert [x["to"] for x in lines] == ["active", state]
    assert lines[-1]["end"] == end and lines[-1]["source"] == "hook" and lines[-1]["agent"] == "codex"
    assert journal_file.stat().st_mode & 0o777 == 0o600
    if end:
        assert when == lines[-1]["ts"]


def test_an_idle_notice_is_not_journaled_as_a_turn_end(tmux_server, tmp_path):
    pane = pane_of(tmux_server)
    fire(tmux_server, pane, tmp_path / "state", "idle", "Stop")
    fire(tmux_server, pane, tmp_path / "state", "idle-notice", "Notification", notification_type="idle_prompt")
    lines = (tmp_path / "state" / f"{tmux_server.name}.events").read_text().splitlines()
    assert len(lines) == 1


def test_agent_list_shows_the_turn_end(tmux_server, tmp_path, env):
    pane = pane_of(tmux_server)
    fire(tmux_server, pane, Path(env["RK_STATE_DIR"]), "failed", "StopFailure", error="server_error")
    proc = run(["-L", tmux_server.name, "agent", "list", "--json"], env)
    row = next(r for r in json.loads(proc.stdout)["result"] if r["pane"] == pane)
    assert row["turn_end"] == "failed" and row["turn_end_at"] > 0
    human = run(["-L", tmux_server.name, "agent", "list"], env).stdout
    assert "TURN END" in human and "failed 20" in human


def _correct(server, state_dir: Path, pane: str, read_epoch: int, to: str = "idle") -> None:
    """A screen look's correction of `pane` (read `active` at `read_epoch`) to `to` at 9,
    over a screen that says the turn was interrupted."""
    from rk.core.pane.facts import PaneFact
    from rk.core.pane.look import Correction
    from rk.tmux import observe
    from rk.tmux.server import Server

    looker = Server(socket_path=str(server.path), env={**os.environ, "RK_STATE_DIR": str(state_dir)})
    screen = "  ⎿  Interrupted · What should Claude do instead?\n"
    read = PaneFact(pane, state="active", epoch=read_epoch)
    observe._record_turn(looker, read, Correction(to, 9, 0), screen)


def _journal(state_dir: Path, server) -> list[dict]:
    return [json.loads(x) for x in (state_dir / f"{server.name}.events").read_text().splitlines()]


def test_a_screen_correction_records_the_turn_end_and_journals_it(tmux_server, tmp_path):
    pane = pane_of(tmux_server)
    tmux_server.run("set-option", "-p", "-t", pane, "@rk_pane_agent_state", "active:5:77")
    _correct(tmux_server, tmp_path, pane, read_epoch=5)
    assert option(tmux_server, pane, "@rk_pane_turn_end") == "interrupted:9"
    assert option(tmux_server, pane, "@rk_pane_agent_state") == "idle:9"
    assert option(tmux_server, pane, "@rk_pane_agent_source") == "screen:9"
    (line,) = _journal(tmp_path, tmux_server)
    assert line == {"ts": 9, "pane": pane, "to": "idle", "end": "interrupted", "source": "screen", "agent": ""}


def test_a_state_read_from_the_older_option_alone_is_corrected(tmux_server, tmp_path):
    pane = pane_of(tmux_server)
    tmux_server.run("set-option", "-p", "-t", pane, "@rk_agent_state", "active:5")
    _correct(tmux_server, tmp_path, pane, read_epoch=5)
    assert option(tmux_server, pane, "@rk_pane_agent_state") == option(tmux_server, pane, "@rk_agent_state") == "idle:9"
    assert option(tmux_server, pane, "@rk_pane_turn_end") == "interrupted:9"


@pytest.mark.parametrize("hooked", ["idle:6", "active:50", "active:55:77"])
@pytest.mark.parametrize("to", ["idle", "active"])
def test_a_hooks_state_and_turn_end_written_after_the_look_read_the_pane_stand(tmux_server, tmp_path, hooked, to):
    """Two races the real CLIs showed: the watch read Kilo's pane active, the Esc's hook then
    wrote idle with `interrupted`, and the look's settled screen wrote `ok` over that end; and
    a tick captured Vibe's busy frame just before its `post_agent` hook wrote idle, then wrote
    `active` over it (nothing looked again without a ticker). A hook that wrote after the look
    read the pane is newer than the look's frame: its state and end stand, and the look
    journals nothing."""
    pane = pane_of(tmux_server)
    tmux_server.run("set-option", "-p", "-t", pane, "@rk_pane_agent_state", hooked)
    tmux_server.run("set-option", "-p", "-t", pane, "@rk_pane_turn_end", "ok:6")
    _correct(tmux_server, tmp_path, pane, read_epoch=5, to=to)
    assert option(tmux_server, pane, "@rk_pane_turn_end") == "ok:6"
    assert option(tmux_server, pane, "@rk_pane_agent_state") == hooked
    assert not (tmp_path / f"{tmux_server.name}.events").exists()


def test_a_limit_the_look_read_is_written_over_a_later_hook_without_its_end(tmux_server, tmp_path):
    """No hook tells a limit (Copilot's late `agentStop` wrote idle while a look read its
    limit banner): the limit is written all the same, journaled without an end of its own."""
    pane = pane_of(tmux_server)
    tmux_server.run("set-option", "-p", "-t", pane, "@rk_pane_agent_state", "idle:6")
    tmux_server.run("set-option", "-p", "-t", pane, "@rk_pane_turn_end", "ok:6")
    _correct(tmux_server, tmp_path, pane, read_epoch=5, to="limited")
    assert option(tmux_server, pane, "@rk_pane_agent_state") == "limited:9"
    assert option(tmux_server, pane, "@rk_pane_turn_end") == "ok:6"
    (line,) = _journal(tmp_path, tmux_server)
    assert (line["to"], line["end"], line["source"]) == ("limited", "", "screen")


# -- tmux: rk agent await ----------------------------------------------------------------


def run(args, env, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rk", *args], env=env, capture_output=True, text=True, timeout=timeout)


def start_await(server, env, *args: str) -> subprocess.Popen:
    """`rk agent await …` in the background, returned once its wake socket is bound."""
    wakes = Path(env["RK_STATE_DIR"]) / "await"
    before = set(wakes.iterdir()) if wakes.exists() else set()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rk", "-L", server.name, "agent", "await", "--json", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(
        lambda: proc.poll() is not None or (wakes.exists() and set(wakes.iterdir()) - before),
        timeout=30,
        message="the await's wake socket",
    )
    return proc


def finish(proc: subprocess.Popen) -> tuple[int, dict]:
    out, err = proc.communicate(timeout=30)
    return proc.returncode, (json.loads(out)["result"] if out.strip() else {"stderr": err})


def still_waiting(proc: subprocess.Popen) -> bool:
    return proc.poll() is None


def test_await_returns_on_idle(tmux_server, env):
    pane = pane_of(tmux_server)
    state = Path(env["RK_STATE_DIR"])
    fire(tmux_server, pane, state, "active", "UserPromptSubmit")
    proc = start_await(tmux_server, env, "--pane", pane, "--until", "idle")
    assert still_waiting(proc)
    fire(tmux_server, pane, state, "idle", "Stop")
    code, result = finish(proc)
    assert code == 0
    assert result["condition"] == "idle"
    assert result["panes"][0]["pane"] == pane and result["panes"][0]["state"] == "idle"
    assert result["panes"][0]["turn_end"] == "ok"


def test_await_returns_at_once_when_already_there(tmux_server, env):
    pane = pane_of(tmux_server)
    fire(tmux_server, pane, Path(env["RK_STATE_DIR"]), "waiting", "PermissionRequest")
    proc = run(["-L", tmux_server.name, "agent", "await", "--pane", pane, "--until", "waiting,idle"], env)
    assert proc.returncode == 0
    assert proc.stdout.startswith(f"waiting {pane} state=waiting since=")


def test_await_after_active_ignores_the_rest_before_the_turn(tmux_server, env):
    pane = pane_of(tmux_server)
    state = Path(env["RK_STATE_DIR"])
    fire(tmux_server, pane, state, "idle", "Stop")
    proc = start_await(tmux_server, env, "--pane", pane, "--until", "idle", "--after-active")
    fire(tmux_server, pane, state, "stamp", "SessionStart")  # a wake, still idle: not the turn
    assert still_waiting(proc)
    fire(tmux_server, pane, state, "active", "UserPromptSubmit")
    fire(tmux_server, pane, state, "idle", "Stop")
    code, result = finish(proc)
    assert code == 0 and result["condition"] == "idle"


def test_await_reports_failed_and_interrupted(tmux_server, env):
    pane = pane_of(tmux_server)
    state = Path(env["RK_STATE_DIR"])
    fire(tmux_server, pane, state, "active", "UserPromptSubmit")
    proc = start_await(tmux_server, env, "--pane", pane, "--until", "failed,interrupted,idle")
    fire(tmux_server, pane, state, "interrupted", "Interrupt", agent="codex")
    code, result = finish(proc)
    assert (code, result["condition"]) == (0, "interrupted")


def test_await_waiting(tmux_server, env):
    pane = pane_of(tmux_server)
    state = Path(env["RK_STATE_DIR"])
    fire(tmux_server, pane, state, "active", "UserPromptSubmit")
    proc = start_await(tmux_server, env, "--pane", pane, "--until", "waiting")
    fire(tmux_server, pane, state, "idle", "Stop")
    assert still_waiting(proc)
    fire(tmux_server, pane, state, "waiting", "PermissionRequest")
    code, result = finish(proc)
    assert (code, result["condition"]) == (0, "waiting")


def test_await_gone(tmux_server, env):
    other = tmux_server.run("split-window", "-d", "-P", "-F", "#{pane_id}", "-t", "main", "cat").strip()
    fire(tmux_server, other, Path(env["RK_STATE_DIR"]), "active", "UserPromptSubmit")
    proc = start_await(tmux_server, env, "--pane", other, "--until", "idle,gone")
    tmux_server.run("kill-pane", "-t", other)
    code, result = finish(proc)
    assert (code, result["condition"]) == (0, "gone")
    assert result["panes"][0]["state"] == ""


def test_await_times_out(tmux_server, env):
    pane = pane_of(tmux_server)
    fire(tmux_server, pane, Path(env["RK_STATE_DIR"]), "active", "UserPromptSubmit")
    proc = run(["-L", tmux_server.name, "agent", "await", "--pane", pane, "--until", "idle", "--timeout", "1s"], env)
    assert proc.returncode == 1
    assert proc.stdout.strip() == "timeout"
    proc = run(
        ["-L", tmux_server.name, "agent", "await", "--pane", pane, "--until", "idle", "--timeout", "1s", "--json"], env
    )
    assert proc.returncode == 1 and json.loads(proc.stdout)["result"]["condition"] == "timeout"
    assert not list((Path(env["RK_STATE_DIR"]) / "await").iterdir()), "the wake socket is removed"


def _workers(server, env) -> list[str]:
    panes = [pane_of(server)]
    panes.append(server.run("split-window", "-d", "-P", "-F", "#{pane_id}", "-t", "main", "cat").strip())
    server.run("set-option", "-w", "-t", "main", "@rk_win_role", "worker")
    for p in panes:
        fire(server, p, Path(env["RK_STATE_DIR"]), "active", "UserPromptSubmit")
    return panes


def test_await_all_waits_for_every_worker(tmux_server, env):
    a, b = _workers(tmux_server, env)
    state = Path(env["RK_STATE_DIR"])
    proc = start_await(tmux_server, env, "--role", "worker", "--all", "--until", "idle")
    fire(tmux_server, a, state, "idle", "Stop")
    fire(tmux_server, a, state, "active", "UserPromptSubmit")  # a started again: it stays done
    assert still_waiting(proc)
    fire(tmux_server, b, state, "idle", "Stop")
    code, result = finish(proc)
    assert code == 0 and sorted(p["pane"] for p in result["panes"]) == sorted([a, b])


def test_await_any_returns_on_the_first_worker(tmux_server, env):
    _, b = _workers(tmux_server, env)
    proc = start_await(tmux_server, env, "--role", "worker", "--any", "--until", "idle")
    fire(tmux_server, b, Path(env["RK_STATE_DIR"]), "idle", "Stop")
    code, result = finish(proc)
    assert code == 0 and [p["pane"] for p in result["panes"]] == [b]


def test_await_session_waits_for_the_panes_of_that_session(tmux_server, env):
    a, b = _workers(tmux_server, env)
    other = tmux_server.run("new-session", "-d", "-P", "-F", "#{pane_id}", "-s", "elsewhere", "cat").strip()
    state = Path(env["RK_STATE_DIR"])
    fire(tmux_server, other, state, "active", "UserPromptSubmit")
    proc = start_await(tmux_server, env, "--session", "main", "--all", "--until", "idle")
    fire(tmux_server, other, state, "idle", "Stop")  # another session's pane: not awaited
    fire(tmux_server, a, state, "idle", "Stop")
    assert still_waiting(proc)
    fire(tmux_server, b, state, "idle", "Stop")
    code, result = finish(proc)
    assert code == 0 and sorted(p["pane"] for p in result["panes"]) == sorted([a, b])


@pytest.mark.parametrize(
    "args",
    [
        ["--pane", "%0"],  # no --until
        ["--pane", "%0", "--until", "idel"],
        ["--pane", "%0", "--until", "idle,"],
        ["--until", "idle"],  # no target
        ["--pane", "0", "--until", "idle"],
        ["--pane", "%0", "--until", "idle", "--any", "--all"],
        ["--pane", "%0", "--until", "idle", "--timeout", "soon"],
        ["--pane", "%0", "--until", "idle", "--bogus"],
    ],
)
def test_await_usage_errors(tmux_server, env, args):
    proc = run(["-L", tmux_server.name, "agent", "await", *args], env)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_await_on_a_missing_pane(tmux_server, env):
    proc = run(["-L", tmux_server.name, "agent", "await", "--pane", "%99", "--until", "idle"], env)
    assert proc.returncode == 1 and "no pane matches" in proc.stderr
    proc = run(["-L", tmux_server.name, "agent", "await", "--pane", "%99", "--until", "idle,gone"], env)
    assert proc.returncode == 0 and proc.stdout.startswith("gone %99")


# -- rk events -----------------------------------------------------------------------------


def test_events_merge_state_changes_and_log_outcomes(tmux_server, env):
    pane = pane_of(tmux_server)
    state = Path(env["RK_STATE_DIR"])
    other = "%77"
    for i, (p, to) in enumerate([(pane, "active"), (other, "active"), (pane, "idle")]):
        statejournal.append(
            env, tmux_server.name, journal.render(1000 + 10 * i, p, to, "ok" if to == "idle" else "", "hook")
        )
    append_lines(state / f"{tmux_server.name}.log", [LogLine(1005, "e1", pane, "schedule", "delivered")])
    proc = run(["-L", tmux_server.name, "events", "--json"], env)
    events = [json.loads(x) for x in proc.stdout.splitlines()]
    assert [(e["ts"], e["kind"]) for e in events] == [(1000, "state"), (1005, "log"), (1010, "state"), (1020, "state")]
    assert events[-1]["from"] == "active" and events[-1]["turn_end"] == "ok"
    only = [
        json.loads(x)
        for x in run(["-L", tmux_server.name, "events", "--json", "--pane", other], env).stdout.splitlines()
    ]
    assert [e["pane"] for e in only] == [other]
    env2 = dict(env, RK_NOW="1015")
    recent = [
        json.loads(x)
        for x in run(["-L", tmux_server.name, "events", "--json", "--since", "5s"], env2).stdout.splitlines()
    ]
    assert [e["ts"] for e in recent] == [1010, 1020]
    assert recent[1]["from"] == "active", "from is replayed over the whole journal, before --since"
    human = run(["-L", tmux_server.name, "events"], env).stdout.splitlines()
    assert human[1].endswith("log e1 delivered (schedule)") and "state active -> idle (ok)" in human[3]


def test_events_usage_errors(tmux_server, env):
    for args in (["--since", "later"], ["--pane", "3"]):
        proc = run(["-L", tmux_server.name, "events", *args], env)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1


def test_events_follow_across_rotations_without_repeats_or_gaps(tmux_server, env):
    state = Path(env["RK_STATE_DIR"])
    slug = tmux_server.name
    log = state / f"{slug}.log"
    state.mkdir(parents=True, exist_ok=True)
    statejournal.append(env, slug, journal.render(1, "%1", "active"))
    append_lines(log, [LogLine(1, "e1", "%1", "schedule", "delivered")])
    proc = subprocess.Popen(
        [sys.executable, "-m", "rk", "-L", slug, "events", "-f", "--json"],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    got: list[dict] = []

    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout], daemon=True).start()

    def read_until(n: int) -> None:
        """Read until `n` events came (a guard fails the test rather than hang it)."""
        while len(got) < n:
            try:
                got.append(json.loads(lines.get(timeout=30)))
            except queue.Empty:
                raise AssertionError(f"rk events -f stopped at {len(got)} of {n} events") from None

    try:
        read_until(2)
        n = 2
        for i in range(2, 60):
            # small cap: the journal rotates every few lines while it is followed
            statejournal.append(env, slug, journal.render(i, "%1", "active" if i % 2 else "idle"), cap=300)
            n += 1
            if i % 10 == 0:
                append_lines(log, [LogLine(i, "e1", "%1", "schedule", "delivered")])
                rotate_if_needed(log, i, backoff={}, max_bytes=100, keep_archives=0, live={"e1"})
                n += 1
            if i % 2 == 0:
                read_until(n)  # the follower keeps up: at most one rotation between two of its looks
        read_until(n)
    finally:
        proc.kill()
        proc.wait()
    states = [e["ts"] for e in got if e["kind"] == "state"]
    logs = [e["ts"] for e in got if e["kind"] == "log"]
    assert states == list(range(1, 60)), "every state change once, in order"
    assert logs == [1, 10, 20, 30, 40, 50], "every log line once"
    assert (state / f"{slug}.events.1").exists(), "the journal did rotate"


def test_every_state_write_pings_the_waiting_awaits(tmux_server, tmp_path):
    """The wake is what makes an await answer within a second of the hook."""
    import socket

    wakes = tmp_path / "state" / "await"
    wakes.mkdir(parents=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(str(wakes / "1-test.sock"))
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    dead.bind(str(wakes / "2-dead.sock"))
    dead.close()  # an await killed -9 leaves its socket behind
    try:
        listener.settimeout(10)
        fire(tmux_server, pane_of(tmux_server), tmp_path / "state", "idle", "Stop")
        assert listener.recv(16) == b"w"
        assert not (wakes / "2-dead.sock").exists(), "a dead await's socket is removed"
    finally:
        listener.close()


# -- tmux: a wait ends at once when its pane or server is gone --------------------------


def _ends_gone(proc: subprocess.Popen, act, limit: float = 5.0) -> tuple[float, dict]:
    """Do `act` to an await's pane or server; the seconds until the await exited, and its result."""
    assert still_waiting(proc)
    begun = time.monotonic()
    act()
    proc.wait(timeout=30)
    took = time.monotonic() - begun
    code, result = finish(proc)
    assert (code, result["condition"]) == (1, "gone"), "gone, unasked: exit 1, and the result says so"
    assert took < limit, f"the await took {took:.2f} s to end"
    return took, result


def test_await_ends_gone_when_its_pane_is_killed(tmux_server, env):
    other = tmux_server.run("split-window", "-d", "-P", "-F", "#{pane_id}", "-t", "main", "cat").strip()
    fire(tmux_server, other, Path(env["RK_STATE_DIR"]), "active", "UserPromptSubmit")
    proc = start_await(tmux_server, env, "--pane", other, "--until", "idle")
    _, result = _ends_gone(proc, lambda: tmux_server.run("kill-pane", "-t", other))
    assert result["panes"][0]["why"] == "pane closed"


@pytest.mark.parametrize(
    ("token", "event", "until"),
    [
        ("active", "UserPromptSubmit", ("--until", "idle", "--after-active")),  # the wait looks 4 times a second
        ("idle", "Stop", ("--until", "waiting")),  # it looks every 10 s: only the server's exit wakes it in time
    ],
    ids=["active", "idle"],
)
def test_await_ends_gone_when_the_server_is_killed(tmux_server, env, token, event, until):
    """Its pane's process ignores the hangup and lives on: the server's own exit wakes the wait."""
    hardy = "trap '' HUP; exec sleep 300"
    pane = tmux_server.run("split-window", "-d", "-P", "-F", "#{pane_id}", "-t", "main", "sh", "-c", hardy).strip()
    pid = int(tmux_server.display(pane, "#{pane_pid}").strip())
    fire(tmux_server, pane, Path(env["RK_STATE_DIR"]), token, event)
    proc = start_await(tmux_server, env, "--pane", pane, *until)
    try:
        _, result = _ends_gone(proc, lambda: subprocess.run(tmux_server.argv("kill-server"), env=child_env(env)))
        assert result["panes"][0]["why"] == "tmux server gone"
    finally:
        os.kill(pid, signal.SIGKILL)


def test_await_ends_gone_when_the_pane_runs_another_process(tmux_server, env):
    pane = pane_of(tmux_server)
    fire(tmux_server, pane, Path(env["RK_STATE_DIR"]), "active", "UserPromptSubmit")
    proc = start_await(tmux_server, env, "--pane", pane, "--until", "idle")
    _, result = _ends_gone(proc, lambda: tmux_server.run("respawn-pane", "-k", "-t", pane, "cat"))
    assert result["panes"][0]["why"].startswith("pane runs another process")


def _restart(server, env) -> str:
    """Kill the server and start another on its socket; its first pane (the reused id), idle."""
    subprocess.run(server.argv("kill-server"), env=child_env(env), check=True)
    wait_for(lambda: not server.is_live(), message="the old server gone")
    argv = server.argv("-f", "/dev/null", "new-session", "-d", "-s", "main", "-P", "-F", "#{pane_id}", "cat")
    done = subprocess.run(argv, env=child_env(env), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_await_across_a_tmux_restart_never_hears_the_new_pane(tmux_server, env):
    pane = pane_of(tmux_server)
    state = Path(env["RK_STATE_DIR"])
    fire(tmux_server, pane, state, "active", "UserPromptSubmit")
    proc = start_await(tmux_server, env, "--pane", pane, "--all", "--until", "idle")

    def restart():
        assert _restart(tmux_server, env) == pane, "the new server reuses the pane id"
        fire(tmux_server, pane, state, "idle", "Stop")  # the new %N goes idle at once

    _, result = _ends_gone(proc, restart)
    assert result["panes"][0]["why"] in ("tmux server gone", "pane closed") or result["panes"][0]["why"].startswith(
        "tmux server restarted"
    )


def test_a_wait_that_first_looks_after_a_restart_sees_the_server_changed(tmux_server, env):
    """The identity check itself: the targets' listing is from the old server, every look after
    it from the new one, whose reused pane id goes idle (in the journal too) as the wait begins."""
    from rk.channels.waiter import await_panes, listing

    pane = pane_of(tmux_server)
    state = Path(env["RK_STATE_DIR"])
    fire(tmux_server, pane, state, "active", "UserPromptSubmit")
    first = listing(tmux_server)
    assert _restart(tmux_server, env) == pane
    spec = Spec(frozenset({"idle"}))

    def new_pane_idle():
        fire(tmux_server, pane, state, "idle", "Stop")

    result = await_panes(tmux_server, [pane], spec, timeout=10, env=env, first=first, on_ready=new_pane_idle)
    assert not result.timed_out and result.condition == "gone"
    assert result.reached[0].view.why.startswith("tmux server restarted")


def test_a_process_that_exited_between_the_listing_and_the_watch_means_look_again():
    from rk.channels.waiter import Listed, _pidfds

    child = subprocess.Popen(["true"])
    child.wait()  # reaped: its pid names no process
    listed = {"%1": Listed(PaneView("%1", True, "active", 1, pid=child.pid), child.pid, "main", "")}
    fds, exited = _pidfds(listed, ("%1",))
    assert (fds, exited) == ([], True)
    listed = {"%1": Listed(PaneView("%1", True, "active", 1, pid=os.getpid()), os.getpid(), "main", "")}
    fds, exited = _pidfds(listed, ("%1",))
    assert len(fds) == 1 and not exited
    os.close(fds[0])
