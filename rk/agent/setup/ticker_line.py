"""The tmux config block that starts the ticker with tmux (`rk.core.tickerconf`), as a
Plan: `rk cron ticker install` writes it where there is no systemd user bus, and
`rk uninstall` removes it.

It goes into the file that has it already, else the one rk's status segment goes
into (`rk.agent.setup.tmux.tmux_config_path`: the file the running server loaded,
else tmux's defaults), so a machine has one such block. Written as setup writes:
shown, atomic, 0600, a symlinked dotfile's target replaced.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from rk.agent.setup.plan import Plan, as_text, read_config
from rk.agent.setup.tmux import TMUX, live_tmux, tmux_config_path
from rk.core import tickerconf
from rk.core.environ import home


def _defaults(env: Mapping[str, str]) -> list[Path]:
    """tmux's own list of config files (3.1+ reads each one there is)."""
    base = Path(home(env))
    xdg = env.get("XDG_CONFIG_HOME")
    return [base / ".tmux.conf", *([Path(xdg) / "tmux" / "tmux.conf"] if xdg else []), base / ".config/tmux/tmux.conf"]


def ticker_conf_path(env: Mapping[str, str], loaded: list[str]) -> Path:
    """The file that has rk's block already, else the one the status segment goes into."""
    served = [Path(f) for f in loaded if os.path.isabs(f) and not f.startswith("/etc/") and os.path.isfile(f)]
    for path in dict.fromkeys([*served, *_defaults(env)]):
        data = read_config(path)
        if data is not None and tickerconf.installed(data.decode("utf-8", "replace")):
            return path
    return tmux_config_path(env, loaded)


def plan_ticker_line(env: Mapping[str, str], config_line: str, socket: str | None) -> Plan:
    """rk's block for `config_line` in the tmux config (the running server at `socket`
    says which files it loaded); unchanged when that very line is there."""
    live = live_tmux(socket, env)
    path = ticker_conf_path(env, live.loaded if live else [])
    old = read_config(path)
    text = as_text(path, old)
    before = tickerconf.installed(text)
    if before == config_line:
        return Plan(TMUX, path, old, old, f"{path} already starts the ticker with tmux")
    new = tickerconf.install(text, config_line).encode("utf-8")
    verb = "replaced rk's line in" if before else "added to"
    return Plan(TMUX, path, old, new, f"{verb} {path}: a line that starts the ticker with every tmux server")


def remove_ticker_line(plans: list[Plan], env: Mapping[str, str]) -> None:
    """Take rk's block out of every tmux config that has it: out of the planned new
    bytes when `plans` already edit that file (one plan per file), else in a plan of
    its own appended. A config left with nothing else is deleted."""
    by_path = {p.path: p for p in plans}
    candidates = [p.path for p in plans if p.agent == TMUX] + _defaults(env)
    for path in dict.fromkeys(candidates):
        planned = by_path.get(path)
        if planned is not None and planned.new is None:
            continue  # deleted anyway
        old = planned.new if planned is not None else read_config(path)
        rest, found = tickerconf.strip_block(as_text(path, old))
        if not found:
            continue
        new = rest.encode("utf-8") if rest.strip() else None
        what = f"removed the line that starts the ticker from {path}"
        if new is None:
            what = f"removed {path} (rk's lines: all it held)"
        if planned is None:
            plans.append(Plan(TMUX, path, old, new, f"tmux: {what}"))
            continue
        planned.summary = f"tmux: {what}" if planned.old == planned.new else f"{planned.summary}; {what}"
        planned.new = new


def installed_line(env: Mapping[str, str]) -> tuple[Path, str] | None:
    """(file, line) of rk's block in one of tmux's default config files, if any has it."""
    for path in dict.fromkeys(_defaults(env)):
        try:
            text = path.read_text("utf-8", "replace")
        except OSError:
            continue
        if line := tickerconf.installed(text):
            return path, line
    return None
