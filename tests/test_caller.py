"""Placing a caller from its process tree: the pure decision on made-up chains, the
ancestor chain read from /proc, and real processes below the panes of private tmux
servers, with TMUX/TMUX_PANE spoofed, pointing elsewhere, or absent (Codex's case)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest
from conftest import wait_for
from mcp_client import RelayPane, mcp_session_in_pane

from rk.core.environ import ROLE_OPTION
from rk.core.pane.caller import (
    HINT_QUOTE,
    Hints,
    PaneRow,
    Placed,
    hints,
    is_server,
    place,
    server_index,
    socket_of_argv,
)
from rk.core.pane.program import Proc
from rk.host.process import MAX_DEPTH, MAX_ENVIRON, ancestors, chain_of, environ_of, read_proc
from rk.tmux import caller as tmux_caller
from rk.tmux.server import Server, child_env

# -- the pure decision ------------------------------------------------------------------------

TTY, OTHER_TTY = 34816, 34817
SERVER = Proc(50, 1, 50, 0, -1, "S", "tmux: server", ("tmux", "-L", "work", "new", "-d"))
SHELL = Proc(100, 50, 100, TTY, 200, "S", "bash", ("-bash",))
AGENT = Proc(200, 100, 200, TTY, 200, "S", "node", ("node", "/x/claude"))
MCP = Proc(300, 200, 200, TTY, 200, "S", "python3", ("python3", "-m", "rk", "mcp"))
CHAIN = (MCP, AGENT, SHELL, SERVER)
ROWS = [
    PaneRow("%0", 90, OTHER_TTY, "main", "operator"),
    PaneRow("%3", 100, TTY, "proj", "worker"),
]
SOCKET = "/tmp/tmux-1000/work"


def test_the_pane_is_the_one_whose_process_is_the_servers_child_on_the_chain():
    got = place(CHAIN, SOCKET, ROWS, Hints())
    assert got == Placed("%3", SOCKET, 50, "proj", "worker", proven=True, note="", pane_pid=100)


def test_a_process_tmux_started_directly_in_the_pane_is_its_own_pane_process():
    direct = (Proc(100, 50, 100, TTY, 100, "S", "python3"), SERVER)
    assert place(direct, SOCKET, ROWS, Hints()).pane == "%3"


def test_hints_that_agree_leave_no_note_and_those_that_disagree_are_named_and_ignored():
    agree = Hints(socket=SOCKET, server_pid=50, pane="%3", tmux_set=True, pane_set=True)
    assert place(CHAIN, SOCKET, ROWS, agree).note == ""
    spoofed = place(CHAIN, SOCKET, ROWS, Hints(pane="%0", pane_set=True))
    assert (spoofed.pane, spoofed.role, spoofed.proven) == ("%3", "worker", True)
    assert spoofed.note == "TMUX_PANE='%0' disagrees with the process tree (ignored)"
    target = place(CHAIN, SOCKET, ROWS, Hints(pane="main:op", pane_set=True))
    assert target.pane == "%3" and "is not a pane id (ignored)" in target.note
    elsewhere = place(CHAIN, SOCKET, ROWS, Hints(socket="/tmp/other", server_pid=77, tmux_set=True))
    assert elsewhere.pane == "%3" and "another server than the process tree's (ignored)" in elsewhere.note
    same_socket_other_pid = place(CHAIN, SOCKET, ROWS, Hints(socket=SOCKET, server_pid=77, tmux_set=True))
    assert "another server" in same_socket_other_pid.note


def test_a_caller_outside_tmux_is_unknown_whatever_the_hints_say():
    claims = hints({"TMUX": f"{SOCKET},50,0", "TMUX_PANE": "%0"})
    got = place((MCP, AGENT), SOCKET, ROWS, claims)
    assert (got.pane, got.proven, got.role) == ("", False, "")
    assert got.note.startswith("not in tmux")
    assert "TMUX_PANE='%0' is not proof (ignored)" in got.note and "TMUX=" in got.note


@pytest.mark.parametrize(
    ("socket", "rows", "why"),
    [
        ("", ROWS, "did not answer"),
        (SOCKET, None, "did not answer"),
        (SOCKET, [PaneRow("%0", 90, OTHER_TTY)], "no pane of the tmux server runs process 100"),
        (SOCKET, [PaneRow("%3", 100, TTY), PaneRow("%4", 100, TTY)], "no pane"),  # never a guess between two
        (SOCKET, [PaneRow("%3", 100, OTHER_TTY)], "terminal is not pane %3's"),
        (SOCKET, [PaneRow("%3", 100, 0)], "terminal is not pane %3's"),  # an unknown tty proves nothing
    ],
)
def test_a_caller_that_cannot_be_placed_is_unknown(socket, rows, why):
    got = place(CHAIN, socket, rows, Hints(pane="%3", pane_set=True))
    assert (got.pane, got.proven, got.role, got.session) == ("", False, "", "")
    assert why in got.note


def test_a_process_whose_terminal_is_not_the_panes_is_unknown():
    moved = (MCP, AGENT, dataclasses.replace(SHELL, tty=0), SERVER)  # the pane's pid, reused by a daemon
    assert place(moved, SOCKET, ROWS, Hints()).proven is False
    assert place(moved, SOCKET, [PaneRow("%3", 100, 0)], Hints()).proven is False  # two unknowns are no match


def test_the_first_server_up_the_chain_is_the_callers_and_never_the_process_itself():
    inner = Proc(60, 1, 60, 0, -1, "S", "tmux: server", ("tmux", "-L", "inner"))
    nested = (MCP, AGENT, SHELL, inner, Proc(40, 60, 40, OTHER_TTY, 40, "S", "bash"), SERVER)
    assert server_index(nested) == 3
    assert server_index((SERVER, SHELL)) is None  # a process named like a server is not its own server
    assert server_index((MCP, AGENT)) is None


def test_what_counts_as_a_tmux_server_by_name():
    assert is_server(SERVER)
    assert is_server(Proc(5, comm="tmux", argv=("/usr/local/bin/tmux",)))  # `ps` off Linux
    assert is_server(Proc(5, comm="tmux:", argv=("tmux:", "server", "(/tmp/tmux-501/default)")))  # a BSD title
    assert not is_server(Proc(5, comm="bash", argv=("tmux",)))  # a client's name, on another program
    assert not is_server(Proc(5, comm="tmux", argv=("tmux-helper",)))
    assert not is_server(Proc(5, comm="sh", argv=("sh", "-c", "tmux")))


def test_hints_are_read_as_claims_and_quoted_short():
    assert hints({"TMUX": "/tmp/s,123,0", "TMUX_PANE": "%1"}) == Hints("/tmp/s", 123, "%1", True, True)
    assert hints({"TMUX": "junk"}) == Hints("junk", 0, "", True, False)
    assert hints({"TMUX": "/tmp/a,b/s,123,4"}) == Hints("/tmp/a,b/s", 123, "", True, False)
    assert hints({"TMUX": "/s," + "9" * 40 + ",0"}).server_pid == 0
    assert hints({}) == Hints()
    huge = place(CHAIN, SOCKET, ROWS, Hints(pane="%" + "1" * 1_000_000, pane_set=True))
    assert huge.pane == "%3" and len(huge.note) < HINT_QUOTE + 80


@pytest.mark.parametrize(
    ("argv", "socket"),
    [
        (("tmux",), ("", "default")),
        (("tmux", "new", "-d"), ("", "default")),
        (("tmux", "-L", "work", "new"), ("", "work")),
        (("tmux", "-Lwork", "new"), ("", "work")),
        (("tmux", "-f", "/dev/null", "-S", "/run/x.sock", "new"), ("/run/x.sock", "default")),
        (("tmux", "-uS/run/x.sock"), ("/run/x.sock", "default")),
        (("tmux", "-2", "-u", "-L", "a", "new", "-L", "b"), ("", "a")),  # after the command: its own flags
        (("tmux", "--", "-L", "b"), ("", "default")),
        (("tmux", "-L"), ("", "")),
        (("tmux:", "server", "(/tmp/tmux-501/my", "socket)"), ("/tmp/tmux-501/my socket", "default")),
    ],
)
def test_the_socket_of_a_servers_command_line(argv, socket):
    assert socket_of_argv(argv) == socket


# -- the chain of ancestors ----------------------------------------------------------------------


def test_the_chain_walks_parents_bounded_and_never_round_a_loop():
    procs = {p.pid: p for p in (MCP, AGENT, SHELL, SERVER)}
    assert chain_of(300, procs.get) == CHAIN
    looped = {7: Proc(7, 8), 8: Proc(8, 7)}
    assert [p.pid for p in chain_of(7, looped.get)] == [7, 8]
    deep = {n: Proc(n, n + 1) for n in range(2, 10_000)}
    assert len(chain_of(2, deep.get)) == MAX_DEPTH
    assert chain_of(1, procs.get) == () and chain_of(999, procs.get) == ()


def test_the_chain_of_this_process_from_proc():
    chain = ancestors(os.getpid())
    assert chain[0].pid == os.getpid() and chain[0].ppid == os.getppid()
    assert chain[1].pid == os.getppid()
    assert all(p.pid > 1 for p in chain)
    me = read_proc(os.getpid())
    assert me is not None and me.ppid == os.getppid() and "python" in me.argv[0]


def test_a_fake_proc_is_read_with_bounds(tmp_path):
    root = tmp_path / "proc"
    (root / "self").mkdir(parents=True)
    (root / "self" / "stat").write_text("1 (x) S 0 1 1 0 -1 0")
    for pid, ppid, name in ((30, 20, "python3"), (20, 10, "bash"), (10, 1, "tmux: server")):
        (root / str(pid)).mkdir()
        (root / str(pid) / "stat").write_text(f"{pid} ({name}) S {ppid} {pid} {pid} 0 -1 0")
        (root / str(pid) / "cmdline").write_bytes(name.encode() + b"\0")
    (root / "30" / "environ").write_bytes(b"TMUX=/s,10,0\0TMUX_PANE=%1\0" + b"X=" + b"y" * (2 * MAX_ENVIRON))
    assert [(p.pid, p.comm) for p in ancestors(30, str(root))] == [(30, "python3"), (20, "bash"), (10, "tmux: server")]
    env = environ_of(30, str(root))
    assert env["TMUX"] == "/s,10,0" and env["TMUX_PANE"] == "%1" and len(env["X"]) < MAX_ENVIRON
    assert environ_of(20, str(root)) == {} and read_proc(99, str(root)) is None


# -- real processes below real panes ------------------------------------------------------------

PLACE = (
    "import dataclasses, json, os; from rk.tmux.caller import place; "
    "print(json.dumps(dataclasses.asdict(place(os.environ))))"
)


def placed_in(relay: RelayPane, env, hints=None) -> Placed:
    out = relay.run([sys.executable, "-c", PLACE], env, hints)
    return Placed(**json.loads(out))


@pytest.fixture
def relay(tmux_server):
    """A window of `main` whose pane's program is the relay; role `worker`."""
    pane = RelayPane.start(tmux_server, role="worker")
    yield pane
    pane.stop()


def first_pane(server: Server) -> str:
    return server.display("main:0", "#{pane_id}")


def test_placed_from_a_pane_proven_with_its_session_and_role(tmux_server, env, relay):
    got = placed_in(relay, env)
    socket = tmux_server.display(relay.pane, "#{socket_path}")
    assert got.proven and got.note == ""
    assert (got.pane, got.session, got.role, got.socket) == (relay.pane, "main", "worker", socket)
    assert got.server_pid == int(tmux_server.display(relay.pane, "#{pid}"))
    assert got.pane_pid == int(tmux_server.display(relay.pane, "#{pane_pid}"))


def test_without_any_tmux_variable_the_pane_is_still_found(tmux_server, env, relay):
    """Codex starts its MCP servers with no TMUX or TMUX_PANE."""
    got = placed_in(relay, env, {"TMUX": None, "TMUX_PANE": None})
    assert (got.pane, got.proven, got.role, got.note) == (relay.pane, True, "worker", "")


def test_a_spoofed_pane_id_is_ignored_and_said(tmux_server, env, relay):
    operator = first_pane(tmux_server)
    tmux_server.set_window_option("main:0", ROLE_OPTION, "operator")
    got = placed_in(relay, env, {"TMUX_PANE": operator})
    assert (got.pane, got.role, got.proven) == (relay.pane, "worker", True)
    assert got.note == f"TMUX_PANE={operator!r} disagrees with the process tree (ignored)"


def test_a_window_target_as_pane_id_is_ignored_and_said(tmux_server, env, relay):
    tmux_server.run("rename-window", "-t", "main:0", "op")
    tmux_server.set_window_option("main:op", ROLE_OPTION, "operator")
    got = placed_in(relay, env, {"TMUX_PANE": "main:op"})
    assert (got.pane, got.role, got.proven) == (relay.pane, "worker", True)
    assert got.note == "TMUX_PANE='main:op' is not a pane id (ignored)"


def test_tmux_pointing_at_another_server_is_ignored_and_said(tmux_server, env, relay):
    other = Server(name=tmux_server.name + "-other", env=tmux_server.env)
    subprocess.run(
        other.argv("-f", "/dev/null", "new-session", "-d", "-s", "main", "cat"), check=True, env=child_env(env)
    )
    try:
        other.set_window_option("main:0", ROLE_OPTION, "operator")
        spoof = other.display("main:0", "#{socket_path},#{pid},0")
        got = placed_in(relay, env, {"TMUX": spoof, "TMUX_PANE": first_pane(other)})
    finally:
        subprocess.run(other.argv("kill-server"), env=child_env(env), capture_output=True)
    assert (got.pane, got.role, got.proven) == (relay.pane, "worker", True)
    assert got.socket == tmux_server.display(relay.pane, "#{socket_path}")
    assert "another server than the process tree's (ignored)" in got.note


def test_an_agent_started_from_the_panes_shell_is_placed(tmux_server, env):
    relay = RelayPane.start(tmux_server, under_shell=True)
    try:
        got = placed_in(relay, env, {"TMUX": None, "TMUX_PANE": None})
        shell = int(tmux_server.display(relay.pane, "#{pane_pid}"))
    finally:
        relay.stop()
    assert (got.pane, got.proven, got.pane_pid) == (relay.pane, True, shell)


def test_a_process_outside_tmux_is_unknown_even_with_a_panes_variables(tmux_server, env, tmp_path):
    """A process reparented away from any tmux (a daemon), told the real pane and server."""
    out = tmp_path / "placed.json"
    spoof = dict(env, TMUX=tmux_server.display("main:0", "#{socket_path},#{pid},0"), TMUX_PANE=first_pane(tmux_server))
    code = (
        PLACE.replace("print(", f"open({str(out)!r} + '.tmp', 'w').write(")
        + f"; os.rename({str(out)!r} + '.tmp', {str(out)!r})"
    )
    subprocess.run(
        ["/bin/sh", "-c", f'{sys.executable} -c "$CODE" </dev/null >/dev/null 2>&1 &'],
        env=dict(spoof, CODE=code),
        check=True,
    )
    got = Placed(**json.loads(wait_for(lambda: out.exists() and out.read_text(), timeout=20, message="the daemon")))
    assert (got.pane, got.proven, got.role) == ("", False, "")
    assert got.note.startswith("not in tmux") and "is not proof (ignored)" in got.note
    assert tmux_caller.place(spoof).proven is False  # this test process too: not below any pane


def test_the_socket_is_found_from_the_servers_command_line_or_its_directory(tmux_server, env, tmp_path):
    """When neither the caller's nor the pane process's TMUX names it."""
    pid = int(tmux_server.display("main:", "#{pid}"))
    server = ancestors(pid)[0]
    nobody = Proc(os.getpid())  # a pane process without TMUX in its environment
    socket = tmux_server.display("main:", "#{socket_path}")
    found, rows = tmux_caller.find_server(Hints(), server, nobody, env)
    assert found == socket and rows and rows[0].pane_id == first_pane(tmux_server)
    renamed = dataclasses.replace(server, argv=("tmux",))  # `-L` not visible: the directory is read
    assert tmux_caller.find_server(Hints(), renamed, nobody, env)[0] == socket
    elsewhere = dict(env, TMUX_TMPDIR=str(tmp_path))
    hidden = tmux_caller.find_server(Hints(), renamed, nobody, elsewhere)  # the server's own TMUX_TMPDIR still
    assert hidden[0] == socket


def test_a_socket_counts_only_when_its_listener_is_the_ancestor(tmux_server, env):
    pid = int(tmux_server.display("main:", "#{pid}"))
    socket = tmux_server.display("main:", "#{socket_path}")
    assert tmux_caller.listener(socket) == pid
    impostor = dataclasses.replace(ancestors(pid)[0], pid=pid + 100_000)  # the same socket, another pid
    assert tmux_caller.find_server(Hints(socket=socket), impostor, Proc(os.getpid()), env) == ("", None)
    assert tmux_caller.listener("/nonexistent/socket") == 0


FORGER = """#!/bin/sh
# a `tmux` that answers any listing with made-up rows: the format's fields, filled in
exec {python} -c '
import re, sys
fmt = sys.argv[sys.argv.index("-F") + 1] if "-F" in sys.argv else sys.argv[-1]
values = dict(pid="{pid}", pane_id="%0", pane_pid="{pane_pid}", pane_tty="/dev/null", session_name="main")
print(re.sub(r"#\\{{([^}}]*)\\}}", lambda m: values.get(m.group(1), "operator"), fmt))
' "$@"
"""


def test_a_forged_answer_on_another_listeners_socket_is_never_asked(tmux_server, env, tmp_path, monkeypatch):
    """A program that speaks tmux's protocol could print any pid; the kernel names the listener."""
    import socket as sockets

    pid = int(tmux_server.display("main:", "#{pid}"))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "tmux").write_text(FORGER.format(python=sys.executable, pid=pid, pane_pid=os.getpid()))
    (bindir / "tmux").chmod(0o755)
    forged = dict(env, PATH=f"{bindir}:{env['PATH']}")
    directory = tempfile.mkdtemp(prefix="imp")  # short: a unix socket's path has ~107 bytes
    impostor = os.path.join(directory, "s")
    listening = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
    listening.bind(impostor)
    listening.listen(1)
    with listening, contextlib.ExitStack() as cleanup:
        cleanup.callback(shutil.rmtree, directory, ignore_errors=True)
        assert tmux_caller.listener(impostor) == os.getpid()
        assert tmux_caller._rows(impostor, pid, forged) is None
        monkeypatch.setattr(tmux_caller, "listener", lambda socket: None)  # a system that cannot tell
        assert tmux_caller._rows(impostor, pid, forged)[0].role == "operator"  # the forger's word only
        assert tmux_caller._rows(impostor, pid + 1, forged) is None  # and tmux's pid must still be the ancestor's


def test_refresh_reads_the_role_again_and_drops_a_pane_that_is_gone(tmux_server, env, relay):
    got = placed_in(relay, env)
    tmux_server.set_window_option(relay.window, ROLE_OPTION, "operator")
    assert tmux_caller.refresh(got, env).role == "operator"
    moved = dataclasses.replace(got, server_pid=got.server_pid + 100_000)  # its socket now another's
    assert tmux_caller.refresh(moved, env).proven is False
    relay.stop()
    gone = tmux_caller.refresh(got, env)
    assert (gone.pane, gone.proven) == ("", False) and "gone" in gone.note


def test_the_relay_runs_rk_mcp_below_the_pane_for_the_sdk_client(tmux_server, env, relay):
    """tests/mcp_client.py: `rk mcp` as a descendant of the pane, spoofed variables passed."""
    seen = relay.run([sys.executable, "-c", "import os; print(os.environ.get('TMUX_PANE'))"], env, {"TMUX_PANE": "%77"})
    assert seen == b"%77\n"
    names = mcp_session_in_pane(tmux_server, env, lambda s: {t.name for t in s.tools()}, session="other")
    assert {"cron_add", "cron_list", "send"} <= names
    own = RelayPane.start(tmux_server, session="other")
    try:
        assert (placed_in(own, env).session, placed_in(own, env).pane) == ("other", own.pane)
    finally:
        own.stop()
    assert relay.serve(env, lambda s: s.call("cron_list").result()) == []
    hello = {"clientInfo": {"name": "raw", "version": "1"}, "protocolVersion": "2025-06-18", "capabilities": {}}
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}) + "\n"
    raw = relay.run([sys.executable, "-m", "rk", "mcp"], env, input=line.encode())  # raw JSON-RPC, stdin then closed
    assert json.loads(raw.splitlines()[0])["result"]["serverInfo"]["name"]
