"""`pane_read` (rk mcp) hands an agent the words on a pane's screen, never the
terminal's escapes: a coloured line, a title sequence and a bell arrive as text."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import wait_for
from test_mcp import serve

pytestmark = [pytest.mark.tmux, pytest.mark.shell]

SCRIPT = r"printf '\033[31mred alert\033[0m\n\033]0;a title\007plain \033[1mbold\033[0m\a\n'; exec sleep 600"


def test_pane_read_strips_colours_titles_and_bells(tmux_server, env):
    pane = subprocess.run(
        tmux_server.argv("new-window", "-d", "-t", "main", "-P", "-F", "#{pane_id}", SCRIPT),
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout.strip()
    wait_for(lambda: "plain" in tmux_server.capture(pane), message="the script's output")
    socket = tmux_server.display("main:", "#{socket_path}").strip()
    caller = dict(env, TMUX=f"{socket},1,0", TMUX_PANE=tmux_server.display("main:", "#{pane_id}").strip())
    tmux_server.run("set-option", "-w", "-t", "main:", "@rk_win_role", "operator")  # it reads its session's panes

    def body(s):
        reply = s.call("pane_read", pane=pane, lines=5)
        assert not reply.error, reply
        return json.loads(reply.text)

    lines = serve(caller, body)["result"]["lines"]
    assert lines[-2:] == ["red alert", "plain bold"]
    assert not any(ch < " " for line in lines for ch in line)
