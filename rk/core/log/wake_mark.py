"""The mark a wake on the world leaves on its log line: the signal (or the state of
a watched file) the fire consumed, so that a restart neither loses nor doubles it.

A marked outcome ends in ` [signal NAME#ID]` or ` [file FINGERPRINT]`; its status
word (`delivered`, `skipped-busy: active`, …) is unchanged, so every other query of
the log reads the line as before. Pure string work: no import of the log's types.
"""

from __future__ import annotations

import re

SIGNAL = "signal"
FILE = "file"

_MARK = re.compile(r" \[(signal|file) ([^\]\s]+)\]$")


def marked(outcome: str, mark: str) -> str:
    """`outcome` with `mark` (`signal ci-done#17`) appended; unchanged without one."""
    return f"{outcome} [{mark}]" if mark else outcome


def mark_of(outcome: str, kind: str) -> str:
    """The value of an outcome's mark of `kind` (`ci-done#17`, a file's fingerprint), or ""."""
    m = _MARK.search(outcome)
    return m.group(2) if m is not None and m.group(1) == kind else ""


def is_marked(outcome: str) -> bool:
    return _MARK.search(outcome) is not None
