"""How late a due fire may still be typed: shared by the entry's own checks (a
catch-up window no longer than the grace would do nothing) and by `due()`."""

from __future__ import annotations

#: A cron occurrence fires if the tick sees it within this long.
CRON_GRACE = 120
#: A when-idle fire held longer than this past its due time is dropped (and a
#: when-idle cron occurrence is due this long, instead of CRON_GRACE).
HOLD_WINDOW = 2 * 3600


def late_window(when_idle: bool) -> int:
    """How late a due cron or `at` fire still fires on time: the grace, or when-idle's hold."""
    return HOLD_WINDOW if when_idle else CRON_GRACE


def late_window_words(when_idle: bool) -> str:
    """`late_window` as a message names it."""
    return "when-idle's 2-hour hold" if when_idle else f"the {CRON_GRACE // 60}-minute grace"
