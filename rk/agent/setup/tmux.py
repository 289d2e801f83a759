"""`rk agent setup tmux`: rk's status segment, `#(rk status --format tmux)`, at the end
of tmux's `status-right`.

An rk-marked block at the end of the tmux config file (`rk.core.channels.tmuxconf`:
it appends to the user's value, once, and widens `status-right-length`), in the
file that has it already, else the last one the running server loaded, else the
last of tmux's default list that exists, else ~/.tmux.conf; the segment names `rk`
when the server's PATH finds this same script, else its absolute path. The running
server rk works against (when live) gets the same commands at once. `--uninstall`
removes the block and takes the segment out of the running server's
`status-right`; a segment the user wrote is left alone.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rk.agent.setup.plan import Plan, SetupError, as_text, read_config
from rk.core.environ import home

TMUX = "tmux"  #: the target's name


@dataclass
class LiveTmux:
    """What the running tmux server says: the status line, its PATH, the files it loaded."""

    socket: str
    status_right: str
    length: int
    path: str  #: the server's global PATH (what `#()` commands run with), "" when it has none
    loaded: list[str]  #: `#{config_files}`, in load order


def live_tmux(socket: str | None, env: Mapping[str, str]) -> LiveTmux | None:
    """The server at `socket` when one listens there (a dead socket starts nothing)."""
    from rk.tmux.server import Server, TmuxError, socket_is_live

    if not socket or not socket_is_live(socket):
        return None
    server = Server(socket_path=socket, env=env)
    try:
        right = server.run("show-options", "-gv", "status-right", timeout=2.0).rstrip("\n")
        length = server.run("show-options", "-gv", "status-right-length", timeout=2.0).strip()
        loaded = server.run("display-message", "-p", "#{config_files}", timeout=2.0).strip()
    except TmuxError as exc:
        raise SetupError(f"tmux server {socket}: {exc}") from None
    try:
        path = server.run("show-environment", "-g", "PATH", timeout=2.0).strip().partition("=")[2]
    except TmuxError:  # no PATH in its environment: `#()` finds nothing by name
        path = ""
    files = [f for f in loaded.split(",") if f]
    return LiveTmux(socket, right, int(length) if length.isdigit() else 0, path, files)


def tmux_config_path(env: Mapping[str, str], loaded: list[str]) -> Path:
    """The file rk's block goes into: the one that has it already; else the last file
    the running server loaded (a regular file, not under /etc); else the last of tmux's
    own list that exists (~/.tmux.conf, $XDG_CONFIG_HOME/tmux/tmux.conf,
    ~/.config/tmux/tmux.conf: tmux 3.1+ reads each one there is, in that order);
    else ~/.tmux.conf, which every tmux reads."""
    from rk.core.channels.tmuxconf import strip_block

    home_dir = Path(home(env))
    xdg = env.get("XDG_CONFIG_HOME")
    defaults = [home_dir / ".tmux.conf", *([Path(xdg) / "tmux" / "tmux.conf"] if xdg else [])]
    defaults.append(home_dir / ".config" / "tmux" / "tmux.conf")
    served = [Path(f) for f in loaded if os.path.isabs(f) and not f.startswith("/etc/") and os.path.isfile(f)]
    candidates = list(dict.fromkeys([*served, *defaults]))
    for path in candidates:
        data = read_config(path)
        if data is not None and strip_block(data.decode("utf-8", "replace"))[1]:
            return path
    if served:
        return served[-1]
    existing = [p for p in defaults if p.exists()]
    return existing[-1] if existing else defaults[0]


def tmux_rk(rk: str, path: str) -> str:
    """How the segment names rk: `rk` when tmux's PATH finds this same script, else
    the script's absolute path."""
    found = shutil.which("rk", path=path) if path else None
    if found and os.path.realpath(found) == os.path.realpath(rk):
        return "rk"
    return rk


def plan_tmux(env: Mapping[str, str], rk: str | None, uninstall: bool, socket: str | None) -> Plan:
    """rk's block in the tmux config (`rk.core.channels.tmuxconf`), and the same commands for
    the running server at `socket` when its status line does not show the segment yet
    (or, for an uninstall of rk's block, the segment taken out of its `status-right`)."""
    from rk.core.channels import tmuxconf

    live = live_tmux(socket, env)
    path = tmux_config_path(env, live.loaded if live else [])
    old = read_config(path)
    text = as_text(path, old)
    rest, ours = tmuxconf.strip_block(text)
    server = live.socket if live else ""
    if uninstall:
        if not ours:
            why = "was not written by rk; left as is" if tmuxconf.user_segment(text) else "has no rk status segment"
            return Plan(TMUX, path, old, old, f"tmux: {path} {why}")
        live_cmds = []
        if live and tmuxconf.shows_segment(live.status_right):
            live_cmds = [["set-option", "-g", "status-right", tmuxconf.without_segment(live.status_right)]]
        notes = [] if live else ["a running tmux shows the segment until it restarts"]
        summary = f"tmux: removed rk's status segment from {path}"
        return Plan(TMUX, path, old, rest.encode("utf-8"), summary, notes, live_cmds, server)
    assert rk is not None
    name = tmux_rk(rk, live.path if live else env.get("PATH", ""))
    if not tmuxconf.usable_path(name):
        raise SetupError(
            f"rk path {name!r} has a character tmux's status line cannot carry (a space, #, %…); "
            "put rk on PATH or install it under a plainer path"
        )
    if tmuxconf.user_segment(text) and not ours:
        new, summary = old, f"tmux: {path} already shows rk (a line not written by rk)"
    else:
        new = tmuxconf.install(text, name).encode("utf-8")
        summary = f"tmux: {path} already shows rk" if new == old else f"tmux: added rk's status segment to {path}"
    live_cmds = []
    if live and (not tmuxconf.shows_segment(live.status_right) or live.length < tmuxconf.MIN_LENGTH):
        live_cmds = tmuxconf.commands(name)
    if live_cmds:
        notes = [f"the running tmux server ({server}) shows it now"]
    elif live or new == old:
        notes = []
    else:
        notes = [f"a tmux started from now on shows it; in a running one: tmux source-file {path}"]
    return Plan(TMUX, path, old, new, summary, notes, live_cmds, server)
