"""No tmux format expansion of rk's data: with a real client attached (a pty
running `tmux attach`), `--if-absent notify` shows every entry name, default
name, program name, window name and role as text. tmux 3.3 has no
`display-message -l`, so rk doubles every `#` (`rk.tmux.server.literal`): `#(cmd)` is
never run, `#{…}` and `#[…]` arrive as they were written."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import struct
import subprocess
import termios
import threading
from pathlib import Path

import pytest
from conftest import run_rk, wait_for

from rk.tmux.server import Command, literal, tmux_word, tmux_words
from rk.tmux.server import child_env as tmux_env

T0 = 1_800_000_000


@pytest.fixture
def client(tmux_server, tmp_path, monkeypatch):
    """A tmux client in a pty (80x24) attached to session `lit`, whose directory
    `tmp_path/cwd` is where a `#()` job would run; the pty is drained so the
    client never blocks."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    tmux_server.run("new-session", "-d", "-s", "lit", "-c", str(cwd), "cat")
    monkeypatch.chdir(cwd)  # a job runs in the cwd of the tmux command that expands it: rk's, or ours
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = dict(tmux_env(tmux_server.env), TERM="xterm-256color")
    proc = subprocess.Popen(
        tmux_server.argv("attach", "-t", "lit"),
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    os.close(slave)
    seen = bytearray()

    def drain():
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            seen.extend(data)

    threading.Thread(target=drain, daemon=True).start()
    wait_for(lambda: tmux_server.run("list-clients", "-F", "#{client_name}").strip(), message="an attached client")
    try:
        yield cwd, seen
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        os.close(master)


_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>78]|[\x0e\x0f]")


def plain(drawn: bytearray) -> str:
    """What the client drew, without its escape sequences."""
    return _ESCAPES.sub("", drawn.decode("utf-8", "replace"))


def messages(server) -> str:
    return server.run("show-messages")


@pytest.mark.tmux
@pytest.mark.shell
def test_the_control_an_unescaped_job_does_run_in_the_clients_cwd(tmux_server, client):
    """What the other tests rule out happens without the escaping: tmux runs the
    job (in the cwd of the command's client, killed when that client goes: the
    sleep keeps it long enough) and the message loses the text."""
    cwd, _ = client
    name = tmux_server.run("list-clients", "-F", "#{client_name}").strip()
    tmux_server.run("display-message", "-c", name, "unescaped: #(touch control-ran).", ";", "run-shell", "sleep 1")
    wait_for((cwd / "control-ran").exists, message="the job ran")
    assert "message: unescaped: ." in messages(tmux_server)


@pytest.mark.tmux
@pytest.mark.shell
def test_notify_shows_rks_text_literally_and_runs_nothing(env, tmux_server, client, tmp_path):
    cwd, drawn = client
    # run from the client's directory (where a job would land), with this tree's rk
    env = dict(env, RK_NOW=str(T0), PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    srv = ["-L", tmux_server.name]
    # a program named like a job, in a window named like one, with a role like one
    program = tmp_path / "#(date>F3)"
    shutil.copy(shutil.which("sleep"), program)
    pane = tmux_server.run(  # `-n` is expanded by tmux itself: `##` makes the name `#(touch F4)`
        "new-window", "-d", "-t", "lit:", "-n", "##(touch F4)", "-P", "-F", "#{pane_id}", f"'{program}' 600"
    ).strip()
    assert tmux_server.display(pane, "#{window_name}") == "#(touch F4)"
    wait_for(lambda: tmux_server.display(pane, "#{pane_current_command}") == "#(date>F3)", message="the program")
    window = tmux_server.display(pane, "#{window_id}")
    tmux_server.set_window_option(window, "@rk_win_role", "#(touch F5)")

    def add(*args):
        out = run_rk(["cron", "add", *args, "--every", "30s", "--if-absent", "notify", "--json", *srv], env, check=True)
        return json.loads(out.stdout)["result"]["id"]

    named = add("hello", "--name", "#(touch F1) #{pane_id} #[fg=red]", "--pane", "%999")
    unnamed = add("#(touch F2) is the start of this prompt", "--pane", "%998")
    program_entry = add("to a program", "--name", "prog", "--pane", pane)
    role_entry = add("to a role", "--name", "role", "--role", "#(date>F6)")

    out = run_rk(["cron", "tick", *srv, "--json"], dict(env, RK_NOW=str(T0 + 30)), check=True)
    decisions = {d["entry"]: d["outcome"] for d in json.loads(out.stdout)["result"]["decisions"]}
    assert decisions[program_entry] == "notified-absent: no agent in pane (#(date>F3))"
    assert {decisions[e].split(":")[0] for e in (named, unnamed, role_entry)} == {"notified-absent"}

    shown = wait_for(lambda: (m := messages(tmux_server)).count("rk cron:") >= 4 and m, message="the messages")
    # the message log keeps tmux's own spelling of a literal `#[` (`##[`); the client draws `#[`
    assert "rk cron: #(touch F1) #{pane_id} ##[fg=red]:" in shown
    wait_for(lambda: "#(touch F1) #{pane_id} #[fg=red]: target absent" in plain(drawn), message="the drawn message")
    assert "rk cron: #(touch F2) is the start of this prompt:" in shown
    assert "no agent in pane (#(date>F3))" in shown
    # and nothing ran: not in the client's cwd, nor the server's, nor home
    for where in (cwd, Path(__file__).parent.parent, Path(env["HOME"]), tmp_path):
        assert not [p.name for p in where.iterdir() if p.name.startswith("F") and len(p.name) == 2]


def test_the_quoting_of_tmux_command_strings():
    assert literal("#(x) #{y} #[z] ##") == "##(x) ##{y} ##[z] ####"
    assert Command.message("/dev/pts/1", "#(x)") == ["display-message", "-c", "/dev/pts/1", "##(x)"]
    assert tmux_word("%12") == "%12" and tmux_word("Enter") == "Enter" and tmux_word("C-u") == "C-u"
    assert tmux_word('a "b" $HOME \\ ;') == '"a \\"b\\" \\$HOME \\\\ ;"'
    assert tmux_words(["send-keys", "-t", "%1", "Enter"], ["x", ""]) == 'send-keys -t %1 Enter ; x ""'


@pytest.mark.tmux
@pytest.mark.shell
def test_a_buffer_name_with_tmux_syntax_is_passed_through_if_shell_intact(tmux_server):
    """The keystroke commands run as `if-shell` branches, which tmux parses as
    command strings: a buffer name with quotes, `;`, `$` or `#{` still names itself."""
    from rk.act.deliver import deliver

    pane = tmux_server.display("main:0.0", "#{pane_id}")
    result = deliver(tmux_server, pane, "via an odd buffer", buffer='rk "odd"; $HOME #{pane_id}')
    assert str(result.outcome) == "delivered", result
    wait_for(lambda: tmux_server.capture(pane).count("via an odd buffer") == 2, message="echo and cat's copy")
    assert 'rk "odd"; $HOME #{pane_id}' not in tmux_server.run("list-buffers", "-F", "#{buffer_name}")
