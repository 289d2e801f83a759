"""The part of an agent's screen where something new shows: what only_if_changed compares.

A frame is cut to the transcript above the live status line and the composer
itself. What a CLI draws around them as a turn ends and while it waits is no
news, and is left out: the status line (a spinner, Claude's `· Shimmying…
(running stop hooks… 1/2 · 0s · ↓ 2 tokens)`, Gemini's `Executing Hooks: rk
(2/2)`), the lines between it and the composer (the effort hint, tmux's
focus-events notice), the footer below the composer (`esc to interrupt`, `?
for shortcuts`, the model and directory), blank lines (Claude 2.1.332 pads
its alternate screen between the transcript and the composer), and the
layout's `turn_noise` lines in the transcript (Claude's `✻ Churned for 3s ·
done 11:24 AM`, Codex's `Worked for <1s • 12:06`, both drawn after the Stop
hook). A composer's text stays (a human's draft is news). A screen with no
composer of a layout rk knows (a dialog, a shell, another program) is kept
whole. Pure.
"""

from __future__ import annotations

from rk.core.pane.screen import LAYOUTS
from rk.core.pane.screen.engine import Layout, Line, _composer, _search, _status, parse_screen


def _layouts(hint: str, lines: list[Line]) -> list[Layout]:
    """The pane's own layout when it names one, else every layout the screen identifies."""
    named = [layout for layout in LAYOUTS if layout.agent == hint]
    return named or [layout for layout in LAYOUTS if _search(layout.rx("identify"), lines) is not None]


def _live_top(layout: Layout, lines: list[Line], top: int) -> int:
    """Where the live frame above the composer (whose first line is `top`) begins: the
    status line, or else the top of the run of lines the status walk steps over (rules,
    hints, notices, blanks; `Layout.status_skip`, at most `status_reach` lines up)."""
    status = _status(layout, lines, top)
    if status:
        return next(i for i in range(top - 1, -1, -1) if lines[i] is status[0])
    skip = layout.rx("status_skip")
    floor = max(0, top - layout.status_reach)
    i = top - 1
    while i >= floor and any(rx.match(lines[i].plain) for rx in skip):
        i -= 1
    return i + 1


def _cut(layout: Layout, lines: list[Line]) -> list[Line] | None:
    """The transcript above the live frame and the composer's own lines, blank lines
    and the layout's turn noise left out; None when the layout finds no composer."""
    found = _composer(layout, lines)
    if found is None:
        return None
    top, end, _ = found
    noise = layout.rx("turn_noise")
    kept = [*lines[: _live_top(layout, lines, top)], *lines[top:end]]
    return [line for line in kept if line.plain.strip() and not any(rx.match(line.plain) for rx in noise)]


def compared_lines(text: str, hint: str = "") -> list[str]:
    """The lines of one capture (`capture-pane -p`, with or without `-e`) that a change
    is read in; `hint` is the pane's agent (its layout is tried alone)."""
    lines = parse_screen(text)
    for layout in _layouts(hint, lines):
        cut = _cut(layout, lines)
        if cut is not None:
            return [line.plain for line in cut]
    return [line.plain for line in lines]
