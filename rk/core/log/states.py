"""The line format of the state journal: one JSON object per state change,
`{"ts":…,"pane":"%3","to":"idle","end":"ok","source":"hook","agent":"claude"}`.

Each line says only where the pane went (`to`); where it came from is the
previous line of the same pane, worked out by the reader (`rk.core.log.events`), so
the writer (the hook, on every agent event) never reads before it writes. The
writer renders by hand (every value is from a closed alphabet: a pane id, a
state, a provider name), so the hook imports no `json`.
"""

from __future__ import annotations

SOURCES = ("hook", "screen", "manual")


def _safe(value: str) -> bool:
    return len(value) <= 64 and all(c.isascii() and (c.isalnum() or c in "%_-") for c in value)


def render(ts: int, pane: str, to: str, end: str = "", source: str = "hook", agent: str = "") -> bytes:
    """One journal line (with its newline); b"" when a value is outside its alphabet."""
    if not all(_safe(v) for v in (pane, to, end, source, agent)):
        return b""
    return (
        f'{{"ts":{int(ts)},"pane":"{pane}","to":"{to}","end":"{end}","source":"{source}","agent":"{agent}"}}\n'
    ).encode()


def parse(raw: bytes) -> dict[str, object] | None:
    """A journal line's fields, or None for a line that is torn or not one of ours."""
    import json

    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    ts = value.get("ts")
    if not isinstance(ts, int) or isinstance(ts, bool):
        return None
    fields = {k: value.get(k, "") for k in ("pane", "to", "end", "source", "agent")}
    if not all(isinstance(v, str) for v in fields.values()) or not fields["pane"] or not fields["to"]:
        return None
    return {"ts": ts, **fields}
