"""What a wake on the world names: `signal:NAME` or `file:PATH` in `wake_on.event`,
read and checked wherever an entry is read or made (the command line, `rk mcp`, the
entries file), and a signal's data as it may be typed. Light on purpose: the entries
file's decoding imports it, and `rk --help` loads that (`rk.core.schedule.world`
holds the edges).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from rk.core import bounds
from rk.core.log.wake_mark import FILE, SIGNAL
from rk.core.pane.payload import sanitize
from rk.core.schedule.entry import EntryError

#: A signal's name: a short word.
NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")


@dataclass(frozen=True)
class Source:
    """`signal:NAME` or `file:PATH`, read from `wake_on.event`."""

    kind: str
    arg: str

    @property
    def event(self) -> str:
        return f"{self.kind}:{self.arg}"


def source_of(event: str) -> Source | None:
    """The world an event watches; None for any other event (agent-state-change…)."""
    kind, sep, arg = str(event).partition(":")
    return Source(kind, arg) if sep and kind in (SIGNAL, FILE) else None


def check_name(name: str) -> str:
    """`name` when it is a signal name (a-z, 0-9, `.`, `_`, `-`; up to 64); EntryError otherwise."""
    if len(name) > bounds.MAX_SIGNAL_NAME:
        raise EntryError(f"signal name {bounds.quote(name)} is too long: at most {bounds.MAX_SIGNAL_NAME} characters")
    if not NAME.fullmatch(name):
        raise EntryError(f"signal name {bounds.quote(name)} must be a word of a-z, 0-9, '.', '_' and '-'")
    return name


def check_path(path: str) -> str:
    """`path` when it can name a watched file: absolute, one line, not too long."""
    if len(path) > bounds.MAX_WATCH_PATH:
        raise EntryError(f"file:{bounds.quote(path)} is too long: at most {bounds.MAX_WATCH_PATH:,} characters")
    if not path or any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in path):
        raise EntryError(f"file:{bounds.quote(path)} must be a path without control characters")
    if not path.startswith("/"):
        raise EntryError(f"file:{bounds.quote(path)} must be an absolute path (the ticker runs elsewhere)")
    return path


def check_event(event: str) -> None:
    """EntryError for a `signal:` or `file:` event that does not read; other events pass."""
    source = source_of(event)
    if source is not None:
        (check_name if source.kind == SIGNAL else check_path)(source.arg)


def event_flag(value: str, cwd: str, home: str) -> str | None:
    """`--wake-on signal:NAME | file:PATH` as stored: a relative or `~/` path made
    absolute from the caller's `cwd` and `home` (the ticker runs elsewhere); None for
    any other value; EntryError for one that does not read."""
    source = source_of(value)
    if source is None:
        return None
    arg = source.arg
    if source.kind == FILE and arg and not arg.startswith("/"):
        arg = home + arg[1:] if arg == "~" or arg.startswith("~/") else posixpath.join(cwd, arg)
    check_event(f"{source.kind}:{arg}")
    return f"{source.kind}:{arg}"


def clean_data(data: str) -> str:
    """A signal's data as it may be typed: sanitised as a payload is, and bounded."""
    bounds.text(data, "--data", bounds.MAX_SIGNAL_DATA)
    return sanitize(data)
