"""A block of lines rk owns inside a TOML file the user owns too (Mistral Vibe's
hooks.toml): TOML has no object rk could own, so rk's part is the run of lines
between its own two comment lines, `begin` and `end`. Whatever lies outside them
is the user's and is kept byte for byte; an install replaces the block where it
stands (or appends it), an uninstall cuts it out.

A file whose block is broken (a begin line without its end, an end line alone,
two blocks) is refused rather than guessed at, and so is a file that is not
TOML or would not be TOML with rk's block: nothing is written then.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rk.agent.setup.plan import SetupError


@dataclass(frozen=True)
class Markers:
    """The two comment lines that enclose rk's block."""

    begin: str
    end: str


def split(text: str, markers: Markers, path: Path | str = "file") -> tuple[str, str, str]:
    """(the user's text before rk's block, the block with its marker lines, the text
    after it); ("", "", text) when there is no block. SetupError for a broken block."""
    lines = text.splitlines(keepends=True)
    begins = [i for i, line in enumerate(lines) if line.rstrip("\r\n") == markers.begin]
    ends = [i for i, line in enumerate(lines) if line.rstrip("\r\n") == markers.end]
    if not begins and not ends:
        return "", "", text
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        raise SetupError(
            f"{path}: rk's block is broken (its lines {markers.begin!r} … {markers.end!r} are not one pair);"
            " fix it by hand — nothing was written"
        )
    first, last = begins[0], ends[0]
    return "".join(lines[:first]), "".join(lines[first : last + 1]), "".join(lines[last + 1 :])


def parse(text: str, path: Path | str = "file") -> dict[str, Any]:
    """The TOML document of `text`; SetupError (nothing written) when it is not TOML."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SetupError(f"{path}: not valid TOML ({exc}); fix or move it — nothing was written") from None


def without(text: str, markers: Markers, path: Path | str = "file") -> tuple[str, bool]:
    """`text` without rk's block (the blank line setup put before it goes too), and
    whether there was one."""
    before, block, after = split(text, markers, path)
    if not block:
        return text, False
    if before.endswith("\n\n"):
        before = before[:-1]
    return before + after, True


def with_block(text: str, block: str, markers: Markers, path: Path | str = "file") -> str:
    """`text` with rk's block (its marker lines included) in place of the one it has, or
    appended after a blank line. SetupError when the result would not be TOML."""
    before, old, after = split(text, markers, path)
    lead = text.rstrip("\n") + "\n\n" if text.strip() else ""
    new = before + block + after if old else lead + block
    parse(new, path)
    return new
