"""Loading untrusted YAML: a depth check before the file reaches libyaml.

The fast C loader recurses on the C stack: a file nested some 25,000 levels
deep (`[[[[…`, or `- - - - …`) kills the whole process with a segmentation
fault — the ticker, and with it every server's schedule. No rk file is
nested more than a few levels, so anything deeper than MAX_DEPTH is refused as
corrupt before any parser sees it.
"""

from __future__ import annotations

import re

MAX_DEPTH = 1000

_SPECIAL = re.compile(r"[\[\]{}'\"#\n\\]")
_DASHES = re.compile(r"(?:-[ \t]+)+")


def nesting_depth(text: str, stop_at: int = MAX_DEPTH) -> int:
    """An upper estimate of the nesting depth (flow brackets outside quotes and
    comments, plus block indentation and `- ` markers), stopping early once it
    passes `stop_at`."""
    deepest = 0
    flow = 0
    for line in text.split("\n"):
        stripped = line.lstrip(" ")
        block = (len(line) - len(stripped)) // 2
        m = _DASHES.match(stripped)
        if m:
            block += m.group(0).count("-")
        deepest = max(deepest, block + flow)
        if deepest > stop_at:
            return deepest
        quote = ""
        escaped = False
        for m in _SPECIAL.finditer(line):
            ch = m.group(0)
            if quote == '"':
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    quote = ""
                continue
            if quote == "'":
                if ch == "'":
                    quote = ""
                continue
            if ch in "'\"":
                quote = ch
            elif ch == "#" and (m.start() == 0 or line[m.start() - 1] in " \t"):
                break
            elif ch in "[{":
                flow += 1
                if block + flow > deepest:
                    deepest = block + flow
                    if deepest > stop_at:
                        return deepest
            elif ch in "]}":
                flow = max(0, flow - 1)
    return deepest


def too_deep(text: str) -> bool:
    return nesting_depth(text) > MAX_DEPTH


def safe_load(text: str) -> object:
    """Load untrusted YAML: refuse it if too deep (ValueError), parse it with the
    fast C loader, and fall back to ruamel's own parser, which accepts YAML 1.2
    that libyaml refuses (e.g. `{session: claude:6f0d}` as earlier rk versions
    and other tools write it). Any parser error propagates."""
    from ruamel.yaml import YAML

    if too_deep(text):
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep")
    try:
        return YAML(typ="safe").load(text)
    except Exception:
        return YAML(typ="safe", pure=True).load(text)
