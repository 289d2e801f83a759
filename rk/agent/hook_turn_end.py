"""How a turn ended, where the hook's payload does not say it plainly: the reset
instant a limit's message names (Claude's StopFailure, Codex's failed request),
and, for Gemini's textless AfterAgent, what the pane's screen shows. Both are
rare, so the hook imports this module only then; its own imports (re, datetime,
zoneinfo) are paid only there too.
"""

from __future__ import annotations

import time
from _collections_abc import Mapping  # loaded with os: no `collections` import

from rk.agent.hook_tmux import tmux_output

TYPE_CHECKING = False  # `typing` is not imported: it costs the hook ~3 ms
if TYPE_CHECKING:
    from datetime import tzinfo


def payload_reset(payload: object, since: int, env: Mapping[str, str]) -> int:
    """The reset instant a failed turn's payload names (Claude's StopFailure
    `last_assistant_message` "…· resets 4:20pm (Europe/London)", Codex's
    "…try again at 3:28 PM"), or 0. Read with the screen's own rule; its imports
    (re, datetime, zoneinfo) are paid only on this rare path."""
    if not isinstance(payload, dict):
        return 0
    texts = [payload.get(k) for k in ("last_assistant_message", "error_details", "error", "message")]
    text = " ".join(t for t in texts if isinstance(t, str))[:4000]
    if not text:
        return 0
    try:
        from rk.core.pane.screen.resets import reset_instant

        reset = reset_instant(text, since, local_zone(env), now=since)
    except Exception:
        return 0
    return reset if reset > since else 0


def local_zone(env: Mapping[str, str]) -> tzinfo:
    """`$TZ` as an IANA zone, else the machine's current UTC offset (a reset is
    hours away at most, and Claude names its zone anyway). `rk.host.clock` is not
    imported: the hook path stays off it."""
    from datetime import timedelta, timezone

    name = env.get("TZ", "").lstrip(":")
    if name:
        try:
            from zoneinfo import ZoneInfo

            return ZoneInfo(name)
        except Exception:
            pass
    return timezone(timedelta(seconds=time.localtime().tm_gmtoff))


#: Seconds a Gemini hook watches the screen for how a textless turn ended: the
#: CLI draws its error or "Request cancelled." within ~0.1 s of AfterAgent.
GEMINI_SCREEN_WAIT = 2.0
GEMINI_SCREEN_STEP = 0.05


def gemini_screen_end(socket: str, pane: str, env: Mapping[str, str]) -> tuple[str, int]:
    """How Gemini's textless turn ended, read from the pane's screen (AfterAgent
    fires before the CLI draws it, so the screen is watched until it shows an
    error, a limit or a cancel, at most `GEMINI_SCREEN_WAIT` s): (`failed`|`limited`|`interrupted`,
    the reset instant or 0), or ("", 0) when it shows none (an empty reply)."""
    from rk.core.pane.screen.gemini import turn_end_of

    zone = local_zone(env)
    deadline = time.monotonic() + GEMINI_SCREEN_WAIT
    while True:
        styled = capture(socket, pane, env)
        if styled:
            end, reset = turn_end_of(styled, int(time.time()), zone)
            if end:
                return end, reset
        if time.monotonic() >= deadline:
            return "", 0
        time.sleep(GEMINI_SCREEN_STEP)


def capture(socket: str, pane: str, env: Mapping[str, str]) -> str:
    """`capture-pane -p -J -e` of `pane` ("" when tmux fails)."""
    return tmux_output(socket, ["capture-pane", "-p", "-J", "-e", "-t", pane], env)
