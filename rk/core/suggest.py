"""Names that match nothing: the closest known one, and the known ones, for a one-line refusal.

A mistyped server, outcome or role otherwise reads as an empty answer (nothing
listed, nothing logged, `skipped-absent`), which teaches nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

from rk.core.bounds import QUOTE_CHARS, quote

#: At most this many known names are listed; the rest are counted.
SHOWN = 12


def closest(word: str, known: Iterable[str]) -> str:
    """The known name closest to `word` as a message shows it, else "" (none is close)."""
    if len(word) > QUOTE_CHARS:  # no name is that long, and difflib's time grows with it
        return ""
    from difflib import get_close_matches  # only when a name matched nothing

    close = get_close_matches(word, sorted(set(known)), n=1, cutoff=0.6)
    return _shown(close[0]) if close else ""


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """` (did you mean X?)` for the known name closest to `word`, else ""."""
    close = closest(word, known)
    return f" (did you mean {close}?)" if close else ""


def known_list(known: Iterable[str], none: str = "none", most: int = SHOWN) -> str:
    """`a, b, c` (sorted, each printable, at most `most` and how many more), or `none`."""
    names = sorted(set(known))
    if not names:
        return none
    shown = [_shown(name) for name in names[:most]]
    more = len(names) - most
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _shown(name: str) -> str:
    """A name as it is, unless it is long or holds a space or a control character."""
    plain = name.isprintable() and " " not in name and len(name) <= QUOTE_CHARS
    return name if plain else quote(name)
