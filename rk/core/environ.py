"""The rules rk applies to its environment, each written once: where the state
lives, what a tmux child sees, how `RK_NOW` reads, what a pane id looks like.

They are pure functions of the environment mapping they are given. The hook
(`rk agent hook`, on every agent event) imports this module, so it imports
only cheap parts of the standard library; `datetime` only for an ISO time.
"""

from __future__ import annotations

import os
from _collections_abc import Mapping  # what collections.abc re-exports, loaded with os: no `collections` import

from rk.core.bounds import MAX_DIGITS, MAX_EPOCH, MAX_WORD, quote
from rk.core.errors import ExitStatus, RkError

#: The ticker's nudge socket, in the state directory.
NUDGE_SOCKET = "ticker.sock"

#: The pane and window options of the convention (specs/cron.md, "The pane").
STATE_OPTION = "@rk_pane_agent_state"  #: `<state>:<epoch>[:<pid>]`
LEGACY_STATE_OPTION = "@rk_agent_state"  #: the same value, for older readers
SESSION_OPTION = "@rk_pane_agent_session"  #: `<provider>:<session id>`
#: The agent's own record of the session (the hook payload's `transcript_path`): where
#: `rk cron usage` and the budgets read the tokens each turn spent (`rk.core.cost.usage`)
TRANSCRIPT_OPTION = "@rk_pane_transcript"
#: `<source>:<state epoch>[:<reset epoch>]` beside a state that did not come from a hook
SOURCE_OPTION = "@rk_pane_agent_source"
ROLE_OPTION = "@rk_win_role"  #: a window's role (`operator`, …)
#: The pane as a look last found its screen unreadable (`<state>:<epoch>:<pid>:<command>`):
#: no tick looks again until that changes, so a one-shot tick costs no capture either
UNREAD_OPTION = "@rk_pane_unread"
#: The cursor's line as the pane showed it when rk last saw it idle (`rk.core.pane.idle_line`)
IDLE_LINE_OPTION = "@rk_pane_idle_line"
#: `<ok|failed|interrupted|limited>:<epoch>`: how the pane's last turn ended, and when
TURN_END_OPTION = "@rk_pane_turn_end"

#: In the state directory: the per-server journal of state changes (`<slug>` + this,
#: one archive `.1`), and the directory of the wake sockets of waiting `rk agent await`s.
JOURNAL_SUFFIX = ".events"
AWAIT_DIR = "await"


class ClockError(RkError, ValueError, status=ExitStatus.USAGE):
    """A time (an `RK_NOW` value, a flag) that cannot be read."""


def home(env: Mapping[str, str]) -> str:
    """`$HOME`, else the password database's home."""
    return env.get("HOME") or os.path.expanduser("~")


def state_dir(env: Mapping[str, str]) -> str:
    """`$RK_STATE_DIR`, else `$XDG_STATE_HOME/rk/cron`, else `~/.local/state/rk/cron`."""
    if env.get("RK_STATE_DIR"):
        return env["RK_STATE_DIR"]
    if env.get("XDG_STATE_HOME"):
        return os.path.join(env["XDG_STATE_HOME"], "rk", "cron")
    return os.path.join(home(env), ".local", "state", "rk", "cron")


def nudge_socket(env: Mapping[str, str]) -> str:
    return os.path.join(state_dir(env), NUDGE_SOCKET)


def _utf8(value: str) -> bool:
    return "UTF8" in value.upper().replace("-", "")


def child_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment of a tmux child: no `TMUX`/`TMUX_PANE` (they would point a
    command at the caller's server), and a UTF-8 locale (else tmux mangles text)."""
    out = dict(env)
    out.pop("TMUX", None)
    out.pop("TMUX_PANE", None)
    lc_all = out.get("LC_ALL", "")
    if lc_all and not _utf8(lc_all):
        out["LC_ALL"] = "C.UTF-8"
    locale = next((out[k] for k in ("LC_ALL", "LC_CTYPE", "LANG") if out.get(k)), "")
    if not _utf8(locale):
        out["LC_CTYPE"] = "C.UTF-8"
    return out


def socket_from_tmux_env(value: str) -> str:
    """The socket path in `$TMUX` (`<path>,<server pid>,<session>`)."""
    return value.split(",", 1)[0] if value else ""


def is_pane_id(text: str) -> bool:
    """A tmux pane id: `%` and ASCII digits."""
    return len(text) > 1 and text[0] == "%" and text[1:].isascii() and text[1:].isdigit()


def parse_instant(text: str) -> int:
    """Unix seconds from `1788254000`, `2026-09-01T09:00:00+02:00` or `…Z`, between 1970
    and 9999-12-30 (`rk.core.bounds.MAX_EPOCH`: it shows in every zone). A refusal
    quotes at most a short prefix of `text`."""
    s = text.strip()
    if not s:
        raise ClockError("empty time")
    digits = s.removeprefix("-")
    if digits.isascii() and digits.isdigit():
        if len(s) > MAX_DIGITS or not 0 <= int(s) <= MAX_EPOCH:
            raise ClockError(f"time {quote(s)} is out of range (unix seconds between 0 and {MAX_EPOCH})")
        return int(s)
    if len(s) > MAX_WORD:
        raise ClockError(f"cannot read time {quote(s)}: use unix seconds or ISO-8601 with an offset")
    from datetime import datetime  # only for an ISO time

    try:
        dt = datetime.fromisoformat(s.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ClockError(f"cannot read time {quote(s)}: use unix seconds or ISO-8601 with an offset") from None
    if dt.tzinfo is None:
        raise ClockError(f"time {quote(s)} needs an offset (e.g. +02:00 or Z)")
    try:
        seconds = int(dt.timestamp())
    except (OverflowError, ValueError):
        seconds = -1
    if not 0 <= seconds <= MAX_EPOCH:
        raise ClockError(f"time {quote(s)} is out of range (1970 to 9999-12-30 UTC)")
    return seconds


def fixed_now(env: Mapping[str, str]) -> int | None:
    """`RK_NOW` in unix seconds, or None when it is not set (then the wall clock
    is now). A test or a simulation replays a day in a second this way."""
    fixed = env.get("RK_NOW", "")
    if not fixed:
        return None
    try:
        return parse_instant(fixed)
    except ClockError as exc:
        raise ClockError(f"RK_NOW: {exc}") from None
