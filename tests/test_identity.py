"""Pane identity against real tmux servers: a restart reuses `%0`, `%1`, … for other
panes, and neither an entry nor a crash's delivery journal may follow the id there.

A restart here is what a person (or a script) does: kill the server and start a
new one on the same socket, so the new server hands out the same pane ids."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_helpers import record_intent_writes
from conftest import run_rk, wait_for

from rk.core.log.delivery import LogLine
from rk.core.pane.payload import needle_for
from rk.store.delivery_log import read_live
from rk.tmux.server import Server, child_env

pytestmark = pytest.mark.shell

T0 = 1_800_000_000


def rk(args, env, check=False):
    return run_rk(args, env, check=check)


def start(server: Server) -> None:
    """A server with session `main` whose pane %0 runs `cat` (as the fixture makes it).
    Right after a kill-server, tmux may still refuse ("server exited unexpectedly"):
    tried until the session is there."""
    argv = server.argv("-f", "/dev/null", "new-session", "-d", "-s", "main", "-x", "200", "-y", "50", "cat")

    def started() -> bool:
        has = subprocess.run(server.argv("has-session", "-t", "main"), env=child_env(server.env), capture_output=True)
        if has.returncode == 0:
            return True
        subprocess.run(argv, env=child_env(server.env), capture_output=True)
        return False

    wait_for(started, message="the new server")


def restart(server: Server) -> None:
    """Kill the server and start a new one on the same socket: pane ids start again at %0."""
    before = server.display("%0", "#{pid}")
    subprocess.run(server.argv("kill-server"), env=child_env(server.env), capture_output=True)
    wait_for(lambda: not server.is_live(), message="the old server gone")
    start(server)
    assert server.display("%0", "#{pid}") != before  # another server's life


def split(server: Server, command: str) -> str:
    return server.run("split-window", "-d", "-t", "main", "-P", "-F", "#{pane_id}", command).strip()


def receiver(server: Server, tmp_path: Path, name: str, pane: str | None = None) -> tuple[str, Path]:
    """A pane running `cat > FILE` (a new one, or `pane` respawned): every byte typed and
    submitted there lands in FILE."""
    out = tmp_path / f"{name}.txt"
    out.write_text("")
    command = f"exec cat > {out}"
    if pane is None:
        pane = split(server, command)
    else:
        server.run("respawn-pane", "-k", "-t", pane, command)
    wait_for(lambda: server.display(pane, "#{pane_current_command}") == "cat", message=f"cat in {pane}")
    return pane, out


def add(env, server: Server, *args: str) -> str:
    out = rk(["cron", "add", *args, "--any-program", "--json", "-L", server.name], dict(env, RK_NOW=str(T0)), True)
    return json.loads(out.stdout)["result"]["id"]


def tick(env, server: Server, now: int, *extra: str) -> dict:
    out = rk(["cron", "tick", "-L", server.name, "--json", *extra], dict(env, RK_NOW=str(now)), True)
    return json.loads(out.stdout)["result"]


def log(env, server: Server) -> list[LogLine]:
    return read_live(Path(env["RK_STATE_DIR"]) / f"{server.name}.log")


def entry_file(env, server: Server) -> Path:
    return Path(env["RK_STATE_DIR"]) / f"{server.name}.yaml"


def identity(server: Server) -> tuple[int, int]:
    started, pid = server.display("%0", "#{start_time} #{pid}").split()
    return int(started), int(pid)


def test_an_entry_for_pane_1_is_not_typed_into_the_pane_1_of_a_restarted_server(env, tmux_server, tmp_path):
    server = tmux_server
    pane, first = receiver(server, tmp_path, "a")
    assert pane == "%1"
    entry = add(env, server, "project A: status?", "--every", "1m", "--pane", pane)
    started, pid = identity(server)
    assert f"server_started: {started}, server_pid: {pid}" in entry_file(env, server).read_text()
    assert [d["outcome"] for d in tick(env, server, T0 + 60)["decisions"]] == ["delivered"]
    wait_for(lambda: first.read_text() == "project A: status?\n", message="A's %1 got its prompt")

    restart(server)
    pane_b, second = receiver(server, tmp_path, "b")
    assert pane_b == "%1"  # the id is reused by another project's pane
    result = tick(env, server, T0 + 120)
    assert [(d["entry"], d["outcome"]) for d in result["decisions"]] == [(entry, "skipped-absent: pane replaced")]
    assert log(env, server)[-1] == LogLine(T0 + 120, entry, "", "schedule", "skipped-absent: pane replaced")
    assert "project A" not in server.capture(pane_b)  # nothing typed, not even left unsubmitted

    listing = rk(["cron", "list", "-L", server.name], dict(env, RK_NOW=str(T0 + 130)), True).stdout
    assert "pane replaced" in listing, listing
    shown = rk(["cron", "show", entry, "-L", server.name], dict(env, RK_NOW=str(T0 + 130)), True).stdout
    assert "pane replaced" in shown and "tmux server restarted" in shown, shown
    assert f"pid {pid})" in shown, shown  # which server's pane it means

    # A control: the same pane takes an entry made for it on this server, so its
    # emptiness above is not a slow pane.
    fresh = add(env, server, "project B: status?", "--every", "1m", "--pane", pane_b)
    outcomes = {d["entry"]: d["outcome"] for d in tick(env, server, T0 + 180)["decisions"]}
    assert outcomes == {entry: "skipped-absent: pane replaced", fresh: "delivered"}
    wait_for(lambda: second.read_text() == "project B: status?\n", message="B's %1 got B's prompt only")
    assert first.read_text() == "project A: status?\n"


def test_a_replaced_pane_notifies_as_configured_and_says_why(env, tmux_server, tmp_path):
    server = tmux_server
    pane, _ = receiver(server, tmp_path, "a")
    entry = add(env, server, "ping", "--every", "1m", "--pane", pane, "--if-absent", "notify")
    restart(server)
    receiver(server, tmp_path, "b")
    result = tick(env, server, T0 + 60)
    assert [(d["entry"], d["outcome"]) for d in result["decisions"]] == [(entry, "notified-absent: pane replaced")]


def test_an_old_entry_without_identity_learns_it_at_first_sight_and_then_behaves_the_same(env, tmux_server, tmp_path):
    server = tmux_server
    pane, first = receiver(server, tmp_path, "a")
    state = Path(env["RK_STATE_DIR"])
    state.mkdir(mode=0o700, exist_ok=True)
    old = (
        "# written by an older rk\n"
        "entries:\n"
        "  - id: old1\n"
        "    schedule: {kind: every, interval: 1m0s}\n"
        f'    target: {{kind: pane, pane: "{pane}"}} # the build pane\n'
        "    payload: build status?\n"
        "    any_program: true\n"
        f"    created_by: {{at: {T0}}}\n"
    )
    entry_file(env, server).write_text(old)
    entry_file(env, server).chmod(0o600)

    dry = tick(env, server, T0 + 60, "--dry-run")
    assert [d["outcome"] for d in dry["decisions"]] == ["would-deliver"]
    assert entry_file(env, server).read_text() == old  # a dry run writes nothing

    assert [d["outcome"] for d in tick(env, server, T0 + 60)["decisions"]] == ["delivered"]
    started, pid = identity(server)
    learned = entry_file(env, server).read_text()
    # only the two keys beside the pane id are new: the comments, the Go-form `1m0s`, the quotes stay
    assert learned == old.replace(f'"{pane}"}}', f'"{pane}", server_started: {started}, server_pid: {pid}}}')
    wait_for(lambda: first.read_text() == "build status?\n", message="delivered before the restart")

    restart(server)
    pane_b, second = receiver(server, tmp_path, "b")
    assert pane_b == pane
    result = tick(env, server, T0 + 120)
    assert [d["outcome"] for d in result["decisions"]] == ["skipped-absent: pane replaced"]
    assert entry_file(env, server).read_text() == learned  # never relearned from the new server
    assert second.read_text() == "" and "build status" not in server.capture(pane_b)


def test_a_pane_respawned_in_place_is_the_same_pane(env, tmux_server, tmp_path):
    """A respawn keeps the id in the same server: the entry still reaches it (whether
    the new program may be typed into is the program checks' business)."""
    server = tmux_server
    pane, _ = receiver(server, tmp_path, "a")
    entry = add(env, server, "still here?", "--every", "1m", "--pane", pane)
    _, out = receiver(server, tmp_path, "a2", pane=pane)
    assert [(d["entry"], d["outcome"]) for d in tick(env, server, T0 + 60)["decisions"]] == [(entry, "delivered")]
    wait_for(lambda: out.read_text() == "still here?\n", message="the respawned program got it")


def test_a_restart_between_the_enumeration_and_the_typing_is_caught_by_the_last_look(env, tmux_server, tmp_path):
    """The guard right before the paste reads the server's start time and pid in its frame."""
    from rk.act import deliver as delivery
    from rk.engine.runtime import Runtime
    from rk.engine.tick import sweep

    server = tmux_server
    pane, _ = receiver(server, tmp_path, "a")
    add(env, server, "late restart", "--every", "1m", "--pane", pane)
    holder: dict = {}

    def restart_then_deliver(srv, target, text, guard=None, intent=None):
        restart(srv)
        holder["pane"], holder["out"] = receiver(srv, tmp_path, "b")
        return delivery.deliver(srv, target, text, guard=guard, intent=intent)

    runtime = Runtime.from_environ(dict(env, RK_NOW=str(T0 + 60)), deliver=restart_then_deliver)
    result = sweep(runtime, only=server.name)
    assert [d.outcome for d in result.decisions] == ["skipped-absent: pane replaced"]
    assert holder["pane"] == pane
    assert holder["out"].read_text() == "" and "late restart" not in server.capture(pane)
    assert not list((Path(env["RK_STATE_DIR"]) / f"{server.name}.intents").iterdir())  # nothing to recover


# -- the delivery journal ------------------------------------------------------------------


def journal(env, server: Server, entry: str, pane: str, phase: str, needle: str, **extra) -> Path:
    """An interrupted delivery's journal as `rk.act.deliver.Intent` writes it."""
    intents = Path(env["RK_STATE_DIR"]) / f"{server.name}.intents"
    intents.mkdir(mode=0o700, exist_ok=True)
    record = {"entry": entry, "reason": "schedule", "ts": T0 + 60, "target": pane, "phase": phase, "pane": pane}
    record.update(needle=needle_for(needle), digest="0" * 64, **extra)
    path = intents / f"{entry}.json"
    path.write_text(json.dumps(record, sort_keys=True) + "\n")
    return path


def pane_identity(server: Server, pane: str) -> dict[str, int]:
    started, pid, pane_pid = server.display(pane, "#{start_time} #{pid} #{pane_pid}").split()
    return {"server_started": int(started), "server_pid": int(pid), "pane_pid": int(pane_pid)}


def typed_unsent(server: Server, pane: str, text: str) -> None:
    """Text in the pane's line, not submitted (what a paste before its Enter leaves)."""
    server.run("send-keys", "-t", pane, "-l", text)
    wait_for(lambda: text in server.capture(pane), message="the text shows")


def pasted_fingerprint(server: Server, pane: str) -> str:
    from rk.act.intents import fingerprint
    from rk.act.keys import DEFAULT_BUFFER, Run, Timing

    return fingerprint(Run(server, Timing(), DEFAULT_BUFFER).frame(pane))


@pytest.mark.parametrize("phase", ["paste", "enter"])
def test_a_journal_recovered_after_a_restart_is_dropped_and_nothing_is_typed(env, tmux_server, tmp_path, phase):
    """The crash's journal names A's %0; after the restart B's %0 shows the very text
    (so a recovery by the text alone would press Enter into B's program)."""
    server = tmux_server
    pane = "%0"
    entry = add(env, server, "nightly report", "--every", "1h", "--pane", pane)
    was = pane_identity(server, pane)
    restart(server)
    _, out = receiver(server, tmp_path, "b", pane=pane)
    typed_unsent(server, pane, "nightly report")
    extra = {"before": 0} if phase == "paste" else {"pasted": pasted_fingerprint(server, pane)}
    path = journal(env, server, entry, pane, phase, "nightly report", **was, **extra)

    result = tick(env, server, T0 + 61)
    dropped = "failed: interrupted; pane replaced, not recovered"
    assert [(d["entry"], d["outcome"]) for d in result["decisions"]] == [(entry, dropped)]
    assert log(env, server) == [LogLine(T0 + 60, entry, pane, "schedule", dropped)]
    [diag] = [d for d in result["diagnostics"] if d["reason"] == "intent-recovered"]
    assert "tmux server restarted" in diag["detail"] and "nothing typed" in diag["detail"], diag
    assert not path.exists()
    assert out.read_text() == ""  # no Enter
    assert "nightly report" in server.capture(pane)  # no C-u: the line there is not ours to clear


def test_a_journal_whose_pane_is_gone_after_a_restart_is_dropped_with_a_line_and_its_marker(
    env, tmux_server, tmp_path, monkeypatch
):
    """A's %1 crashed mid-delivery; B has no %1 yet. The line says so (the pane cannot be
    read, so the recovery alone would log nothing for a paste), and the crash's pending
    marker goes too: the next delivery into a new %1 must not clear that pane's line."""
    from rk.act.intents import pending_path

    server = tmux_server
    pane, _ = receiver(server, tmp_path, "a")
    entry = add(env, server, "nightly report", "--every", "1h", "--pane", pane)
    was = pane_identity(server, pane)
    restart(server)
    monkeypatch.setenv("RK_STATE_DIR", env["RK_STATE_DIR"])  # the lock directory the tick uses
    marker = Path(pending_path(server, pane))
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("12345")
    journal(env, server, entry, pane, "paste", "nightly report", before=0, **was)
    result = tick(env, server, T0 + 61)
    assert [d["outcome"] for d in result["decisions"]] == ["failed: interrupted; pane replaced, not recovered"]
    [diag] = [d for d in result["diagnostics"] if d["reason"] == "intent-recovered"]
    assert f"pane {pane} is gone" in diag["detail"], diag
    assert not marker.exists()


def test_a_journal_whose_pane_runs_another_process_is_dropped(env, tmux_server, tmp_path):
    """Same server, same id, but the pane was respawned after the crash: another program."""
    server = tmux_server
    pane, _ = receiver(server, tmp_path, "a")
    entry = add(env, server, "nightly report", "--every", "1h", "--pane", pane)
    was = pane_identity(server, pane)
    _, out = receiver(server, tmp_path, "a2", pane=pane)
    typed_unsent(server, pane, "nightly report")
    journal(env, server, entry, pane, "paste", "nightly report", before=0, **was)
    result = tick(env, server, T0 + 61)
    assert [d["outcome"] for d in result["decisions"]] == ["failed: interrupted; pane replaced, not recovered"]
    [diag] = [d for d in result["diagnostics"] if d["reason"] == "intent-recovered"]
    assert "runs another process" in diag["detail"], diag
    assert out.read_text() == ""


@pytest.mark.parametrize("with_identity", [True, False])
def test_the_same_journal_without_a_restart_still_recovers(env, tmux_server, tmp_path, with_identity):
    """Its pane is the one it typed into (or the journal predates identity): the paste sat
    unsent, so the recovery presses Enter once, as before."""
    server = tmux_server
    pane, out = receiver(server, tmp_path, "a")
    entry = add(env, server, "nightly report", "--every", "1h", "--pane", pane)
    typed_unsent(server, pane, "nightly report")
    was = pane_identity(server, pane) if with_identity else {}
    journal(env, server, entry, pane, "paste", "nightly report", before=0, **was)
    result = tick(env, server, T0 + 61)
    assert [(d["entry"], d["outcome"]) for d in result["decisions"]] == [(entry, "delivered")], result
    wait_for(lambda: out.read_text() == "nightly report\n", message="Enter pressed once")


def test_a_delivery_journals_the_identity_of_the_pane_it_types_into(env, tmux_server, tmp_path, monkeypatch):
    from rk.engine.runtime import Runtime
    from rk.engine.tick import sweep

    server = tmux_server
    pane, out = receiver(server, tmp_path, "a")
    add(env, server, "journaled", "--every", "1m", "--pane", pane)
    writes = record_intent_writes(monkeypatch)
    result = sweep(Runtime.from_environ(dict(env, RK_NOW=str(T0 + 60))), only=server.name)
    assert [d.outcome for d in result.decisions] == ["delivered"]
    wait_for(lambda: out.read_text() == "journaled\n", message="delivered")
    want = pane_identity(server, pane)
    assert [w["phase"] for w in writes] == ["paste", "enter", "done"]
    assert all({k: w[k] for k in want} == want for w in writes), writes


def test_the_recovery_reads_the_identity_in_its_own_frame_too(tmux_server, tmp_path):
    """A restart between the tick's enumeration and the recovery: `recover` itself sees
    the frame of another server's pane and presses nothing."""
    from rk.act.intents import recover

    server = tmux_server
    was = pane_identity(server, "%0")
    restart(server)
    _, out = receiver(server, tmp_path, "b", pane="%0")
    typed_unsent(server, "%0", "nightly report")
    record = {"phase": "paste", "pane": "%0", "needle": needle_for("nightly report"), "before": 0, **was}
    outcome, detail = recover(server, record)
    assert outcome == "failed: interrupted; pane replaced, not recovered"
    assert "tmux server restarted" in detail and "nothing typed" in detail
    assert out.read_text() == "" and "nightly report" in server.capture("%0")
