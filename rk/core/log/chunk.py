"""A chunk of the delivery log parsed at once: what `rk cron list` reads before it answers.

The lines rk writes are all in one form (`LogLine.to_json`), so one scan of the
decoded chunk finds them all; only a line not in that form (torn, hand-written with
another key order or an escape, not UTF-8) goes through `parse_line` alone. Both
ways read exactly what `parse_line` reads line by line, and count the same lines bad.
"""

from __future__ import annotations

import re
from dataclasses import fields

from rk.core.bounds import MAX_EPOCH
from rk.core.log.delivery import LogLine, parse_line

#: A field's character: not a quote, a backslash (an escape: `parse_line` decodes it), a line
#: feed, or a surrogate (a byte that is not UTF-8, as `surrogateescape` decodes it).
_FIELD = r'[^"\\\n\ud800-\udfff]'
#: A line in the form rk writes, trailing white space allowed (`parse_line`'s `_CANONICAL`), up
#: to its end. Not tied to a line's start by `^`: starting with a literal, it is found by a
#: fast scan for that literal, not tried at every character of the lines that are not in it.
_LINE = re.compile(
    rf'\{{"ts":(-?[0-9]{{1,19}}),"entry":"({_FIELD}+)","target":"({_FIELD}*)",'
    rf'"reason":"({_FIELD}*)","outcome":"({_FIELD}*)"\}}[^\S\n]*$',
    re.MULTILINE,
)
#: The slots of a `LogLine`, set as its `__init__` sets them but without the five
#: `object.__setattr__` calls a frozen dataclass makes: a fifth of the parse. `LogLine`
#: has no `__post_init__` to skip (tests/test_log_index.py checks).
_SETTERS = tuple(getattr(LogLine, field.name).__set__ for field in fields(LogLine))


def parse_chunk(data: bytes) -> tuple[list[LogLine], int]:
    """The lines of `data` that parse, in order, and how many non-blank lines did not."""
    text = data.decode("utf-8", "surrogateescape")  # a line feed is never inside a character
    out: list[LogLine] = []
    bad = pos = 0
    new, (set_ts, set_entry, set_target, set_reason, set_outcome) = object.__new__, _SETTERS
    for m in _LINE.finditer(text):
        start = m.start()
        if start != pos:
            if start and text[start - 1] != "\n":  # the end of a line that is not in rk's form
                continue
            bad += _one_by_one(text[pos:start], out)  # the lines not in rk's form before this one
        ts, entry, target, reason, outcome = m.groups()
        stamp = int(ts)
        if 0 <= stamp <= MAX_EPOCH:  # LogLine(stamp, entry, target, reason, outcome), made faster
            line = new(LogLine)
            set_ts(line, stamp)
            set_entry(line, entry)
            set_target(line, target)
            set_reason(line, reason)
            set_outcome(line, outcome)
            out.append(line)
        else:
            bad += 1
        pos = m.end() + 1
    if pos < len(text):
        bad += _one_by_one(text[pos:], out)
    return out, bad


def _one_by_one(text: str, out: list[LogLine]) -> int:
    """Parse each line of `text` as `parse_line` does, from its own bytes, into `out`;
    how many non-blank lines did not parse."""
    bad = 0
    for raw in text.split("\n"):
        if raw:
            line = parse_line(raw if raw.isascii() else raw.encode("utf-8", "surrogateescape"))
            if line is None:
                bad += 1
            else:
                out.append(line)
    return bad
