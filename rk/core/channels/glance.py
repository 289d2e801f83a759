"""The glance: rk in one short status-bar segment (tmux's `status-right`, or JSON for
waybar, polybar, starship).

It answers "what will rk do next, and does anyone need me?" from cached facts
only: the ticker's status record (is it up, the next due instant, paused servers,
muted entries) and the pane options the hooks write. A status bar runs it every
few seconds, so it reads no entries file or log, and this module imports
nothing (not even `dataclasses`, which pulls `inspect` and `enum`: ~5 ms a
redraw); the state option is parsed here again, not through `rk.core.pane.facts`
(which would pull the entry model in).

Every piece of text it prints is built here from numbers; `tmux_text` still
doubles `#`, so nothing rk prints can reach tmux as a `#(` command or a `#[` style.
"""

from __future__ import annotations

from _collections_abc import Iterable  # what collections.abc re-exports, without importing `collections`

from rk.core.pane.state_words import LIMITED, STATES, WAITING

#: The colours of the segment's parts (tmux style names).
COLOURS = {"down": "red", "limited": "red", "waiting": "yellow", "next": "default", "held": "colour245"}
_STATES = frozenset(STATES)


class PaneGlance:
    """One pane as its options say: `@rk_pane_agent_state` (state, since, the agent's
    pid when the hook recorded it: the shell drops a dead one's state) and, for
    `limited`, the source note's reset time (0: not known)."""

    __slots__ = ("pid", "reset_at", "since", "state")

    def __init__(self, state: str, since: int = 0, reset_at: int = 0, pid: int = 0) -> None:
        self.state, self.since, self.reset_at, self.pid = state, since, reset_at, pid

    def _key(self) -> tuple[str, int, int, int]:
        return (self.state, self.since, self.reset_at, self.pid)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PaneGlance) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"PaneGlance{self._key()!r}"


def parse_pane(state_option: str, source_option: str = "") -> PaneGlance | None:
    """`waiting:1751790042[:pid]` (and `hook:<epoch>:<reset>`) → PaneGlance; None when unknown."""
    parts = state_option.strip().split(":")
    if len(parts) not in (2, 3) or parts[0] not in _STATES or not _number(parts[1]):
        return None
    reset = 0
    note = source_option.strip().split(":")
    if len(note) == 3 and _number(note[1]) and _number(note[2]) and note[1] == parts[1]:
        reset = int(note[2])  # the note belongs to this epoch's state
    pid = int(parts[2]) if len(parts) == 3 and _number(parts[2]) else 0
    return PaneGlance(parts[0], int(parts[1]), reset, pid)


def _number(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= 12


class Glance:
    """What the segment shows: counts of panes waiting and limited (with the earliest
    known reset, 0: none known), servers paused, entries muted and dormant, and the next fire
    (None when the ticker is down: it fires nothing). `to_dict` is the JSON twin."""

    __slots__ = ("dormant", "limited", "limited_until", "muted", "next_due", "now", "paused", "ticker", "waiting")

    def __init__(
        self,
        ticker: bool,
        next_due: int | None,
        now: int,
        waiting: int = 0,
        limited: int = 0,
        limited_until: int = 0,
        paused: int = 0,
        muted: int = 0,
        dormant: int = 0,
    ) -> None:
        self.ticker, self.next_due, self.now = ticker, next_due, now
        self.waiting, self.limited, self.limited_until = waiting, limited, limited_until
        self.paused, self.muted, self.dormant = paused, muted, dormant

    @classmethod
    def of(
        cls,
        ticker: bool,
        next_due: int | None,
        now: int,
        panes: Iterable[PaneGlance],
        paused: int = 0,
        muted: int = 0,
        dormant: int = 0,
    ) -> Glance:
        panes = list(panes)
        resets = [p.reset_at for p in panes if p.state == LIMITED and p.reset_at > now]
        return cls(
            ticker=ticker,
            next_due=next_due if ticker and next_due is not None and next_due >= now else None,
            now=now,
            waiting=sum(p.state == WAITING for p in panes),
            limited=sum(p.state == LIMITED for p in panes),
            limited_until=min(resets) if resets else 0,
            paused=paused,
            muted=muted,
            dormant=dormant,
        )

    @property
    def trouble(self) -> bool:
        """A human is wanted: the ticker is down, or a pane waits on a dialog."""
        return not self.ticker or self.waiting > 0

    def parts(self, clock: str = "") -> list[tuple[str, str]]:
        """(kind, text) pairs, most urgent first; `clock` is `limited_until` as HH:MM."""
        out: list[tuple[str, str]] = []
        if not self.ticker:
            out.append(("down", "rk✗"))
        if self.waiting:
            out.append(("waiting", f"✋{self.waiting}"))
        if self.limited:
            count = f"{self.limited}" if self.limited > 1 or not clock else ""
            out.append(("limited", f"⛔{count}{(' ' if count else '') + clock if clock else ''}"))
        if self.paused:
            out.append(("held", f"⏸{self.paused}"))
        if self.muted:
            out.append(("held", f"🔇{self.muted}"))
        if self.dormant:  # entries whose agent never answered (`rk.core.schedule.dormant`)
            out.append(("held", f"💤{self.dormant}"))
        if self.next_due is not None:
            out.append(("next", f"⏱ {short_wait(self.next_due - self.now)}"))
        return out

    def plain(self, clock: str = "") -> str:
        return " ".join(text for _, text in self.parts(clock))

    def tmux(self, clock: str = "") -> str:
        """The segment in tmux markup: each part in its colour, the style reset after."""
        pieces = [
            f"#[fg={COLOURS[kind]}]{tmux_text(text)}" if COLOURS[kind] != "default" else tmux_text(text)
            for kind, text in self.parts(clock)
        ]
        return " ".join(pieces) + ("#[default]" if pieces else "")

    def to_dict(self, clock: str = "") -> dict[str, object]:
        """The JSON twin; `text`, `tooltip` and `class` are what waybar reads."""
        state = "down" if not self.ticker else "waiting" if self.waiting else "limited" if self.limited else "ok"
        return {
            "text": self.plain(clock),
            "tooltip": self.plain(clock),
            "class": state,
            "ticker": self.ticker,
            "next_due": self.next_due,
            "next_in": None if self.next_due is None else self.next_due - self.now,
            "waiting": self.waiting,
            "limited": self.limited,
            "limited_until": self.limited_until or None,
            "paused": self.paused,
            "muted": self.muted,
            "dormant": self.dormant,
        }


def short_wait(seconds: int) -> str:
    """`45s`, `3m` (minutes rounded up, so `⏱ 1m` never means "now"), `2h`, `3d` (whole units)."""
    seconds = max(0, seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{-(-seconds // 60)}m"
    if seconds < 86400:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"


def tmux_text(text: str) -> str:
    """`text` as tmux status text: `#` doubled so `#(`, `#{` and `#[` stay text."""
    return text.replace("#", "##")
