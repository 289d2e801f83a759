"""The tmux config block that starts rk's ticker with every tmux server, for a machine
with no systemd user bus (`rk cron ticker install`). Text in, text out.

One `run-shell -b` line under rk's header. It names rk by its absolute path (tmux's
PATH is whatever it was when the server started, often from before rk was installed),
sets the settings the ticker must share with the shell (its state directory, tmux's
socket directory) in front of the command, discards what the command prints and
writes its errors over `ticker-start.log` in the state directory at each run: that
file holds the last run's errors, and nothing once a run succeeds (`rk doctor` reads
it). A start beside a running ticker is a no-op, so every server may run the line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rk.core.channels.tmuxconf import strip_marked

HEADER = "# rk: start the ticker with tmux, written by `rk cron ticker install`; removed by `rk uninstall`"
#: What a line that starts the ticker holds, rk's or the user's own.
MARK = "cron ticker start"
#: The characters a path or value may have here: it lands unquoted in a `/bin/sh`
#: command inside a single-quoted tmux string that tmux expands as a format, so no
#: quote, space, `#`, `$`, `~`, `:`, backslash or anything else a shell reads.
SAFE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./+@=,-")


def unsafe(words: Sequence[str]) -> str:
    """The first of `words` the line cannot carry as it is ("" when all can)."""
    return next((w for w in words if not w or any(c not in SAFE_CHARS for c in w)), "")


def command(argv: Sequence[str], settings: Mapping[str, str], log: str) -> str:
    """The shell command: `umask 077` (the log is private), `K=V …` then `argv`, its
    output discarded and its errors written over `log`. Every word must pass `unsafe`."""
    assigned = [f"{k}={v}" for k, v in settings.items()]
    return " ".join(["umask 077;", *assigned, *argv, ">/dev/null", f"2>{log}"])


def line(shell_command: str) -> str:
    return f"run-shell -b '{shell_command}'"


def block(config_line: str) -> str:
    """The header and its line, each ending in a newline."""
    return f"{HEADER}\n{config_line}\n"


def _ours(text: str) -> bool:
    return text.strip().startswith("run-shell ") and MARK in text


def strip_block(text: str) -> tuple[str, bool]:
    """`text` without rk's block (the header and the line after it, when that line starts
    the ticker), and whether there was one; the blank lines the install put before it go too."""
    return strip_marked(text, HEADER, _ours, most=1)


def installed(text: str) -> str:
    """The line of rk's block in `text` ("" when it has none)."""
    lines = text.splitlines()
    for n, each in enumerate(lines[:-1]):
        if each == HEADER and _ours(lines[n + 1]):
            return lines[n + 1]
    return ""


def install(text: str, config_line: str) -> str:
    """`text` with rk's block for `config_line` at its end, in place of any earlier one."""
    rest, _ = strip_block(text)
    rest = rest.rstrip("\n")
    return (rest + "\n\n" if rest else "") + block(config_line)


def user_lines(text: str) -> list[tuple[int, str]]:
    """(number, line) of each line outside rk's block that starts the ticker (not a
    comment): the user's own, which rk says and never edits."""
    lines = text.splitlines()
    after_header = {n + 1 for n, each in enumerate(lines) if each == HEADER}
    return [
        (n + 1, each)
        for n, each in enumerate(lines)
        if MARK in each and not each.lstrip().startswith("#") and not (n in after_header and _ours(each))
    ]
