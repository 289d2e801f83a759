"""The comment lines around one element of a round-trip YAML sequence (ruamel.yaml).

A person's comment lines after an entry belong to what follows it, so when the
entries file (`rk.store.entries`) removes an element or rewrites its keys, the
lines are detached first and put back where they belong.
"""

from __future__ import annotations

from typing import Any


def last_slot(raw: Any) -> Any:
    """ruamel's comment slot of a mapping's last key: its index 2 holds the key's
    end-of-line comment followed by the full-line comments after the mapping."""
    ca = getattr(raw, "ca", None)
    if ca is None or not raw:
        return None
    slot = ca.items.setdefault(list(raw.keys())[-1], [None, None, None, None])
    while len(slot) < 3:
        slot.append(None)
    return slot


def take_following_lines(raw: Any) -> str:
    """Detach the comment lines after the element (they belong to what follows);
    its last key's own end-of-line comment stays where it is."""
    slot = last_slot(raw)
    token = slot[2] if slot else None
    if token is None:
        return ""
    value: str = token.value
    if value.startswith("\n"):
        eol, rest = "", value[1:]
    else:
        first, _, rest = value.partition("\n")
        eol = first + "\n"
    if eol:
        token.value = eol
    else:
        slot[2] = None
    return rest


def put_following_lines(raw: Any, lines: str) -> None:
    """Attach comment lines after the element (after its last key's own comment)."""
    if not lines:
        return
    from ruamel.yaml.error import CommentMark
    from ruamel.yaml.tokens import CommentToken

    slot = last_slot(raw)
    if slot is None:
        return
    if slot[2] is not None:
        slot[2].value = slot[2].value + lines
    else:
        slot[2] = CommentToken("\n" + lines, CommentMark(0))


def put_lines_before_first(doc: Any, seq: Any, lines: str) -> None:
    """Comment lines before the sequence's first element (ruamel keeps them on
    the parent's `entries` key when there were some already, else on the seq)."""
    from ruamel.yaml.error import CommentMark
    from ruamel.yaml.tokens import CommentToken

    tokens = []
    for line in lines.splitlines():
        stripped = line.lstrip()
        if stripped:
            tokens.append(CommentToken(stripped + "\n", CommentMark(len(line) - len(stripped))))
    if not tokens:
        return
    parent = doc.ca.items.get("entries") if hasattr(doc, "ca") else None
    if parent and len(parent) > 3 and parent[3]:
        parent[3] = list(parent[3]) + tokens
        return
    current = seq.ca.comment or [None, []]
    while len(current) < 2:
        current.append([])
    current[1] = list(current[1] or []) + tokens
    seq.ca.comment = current
