"""Read an agent's screen: which agent, doing what, and whether its composer holds text.

The input is one `capture-pane -p -J -e` of the pane (escape sequences kept:
a placeholder differs from a draft only by its colour or faintness). Each
agent CLI is described by a `Layout` (pure data, one module per agent); the
engine finds the layout's live composer, looks at the lines around it, and
returns a `Screen`:

* `waiting`: a permission or question dialog is up (it replaces the composer);
* `active`: a turn is running (a spinner, "esc to interrupt");
* `limited`: the last turn ended on a usage or rate limit, with the reset
  instant when the screen prints one;
* `idle`: an idle composer;
* `""`: not a screen this layout knows (nothing is claimed).

`draft` is the composer's text that is not a placeholder.

Only the live frame is read: the transcript of replies above the composer can
quote any text (a reply may say "esc to interrupt"), so working patterns are
matched only in the status line right above the composer and in the footer
below it, dialogs only below the dialog's own top line, and a limit only in
the last entry of the last turn, drawn the way the CLI draws its errors (its
mark and its colour), not in a reply's ink. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import tzinfo

from rk.core.pane.screen.resets import reset_instant
from rk.core.pane.state import AgentState

#: How many lines, from the bottom of the screen, the classifier reads.
BOTTOM_LINES = 60

_ESCAPE = re.compile(r"\x1b(?:\[([0-9;:?]*)([@-~])|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")


@dataclass(frozen=True)
class Style:
    """How a character was drawn."""

    dim: bool = False
    reverse: bool = False
    fg: str = ""  #: "" default, "5;N" indexed, "2;R;G;B" true colour, or a basic code "31"
    bold: bool = False

    @property
    def inked(self) -> bool:
        """Drawn faint, bold or in a colour: not the default ink a reply's text is in."""
        return self.dim or self.bold or bool(self.fg)


PLAIN = Style()


@dataclass(frozen=True)
class Line:
    """A captured line: its text (NBSP read as a space, trailing blanks cut) and
    the style of each of its characters."""

    plain: str
    styles: tuple[Style, ...] = ()

    def style_at(self, i: int) -> Style:
        return self.styles[i] if i < len(self.styles) else PLAIN


def _apply_sgr(params: str, style: Style) -> Style:
    codes = re.split(r"[;:]", params) if params else ["0"]
    dim, reverse, fg, bold = style.dim, style.reverse, style.fg, style.bold
    i = 0
    while i < len(codes):
        code = codes[i] or "0"
        if code == "0":
            dim, reverse, fg, bold = False, False, "", False
        elif code == "1":
            bold = True
        elif code == "2":
            dim = True
        elif code == "22":
            dim = bold = False
        elif code == "7":
            reverse = True
        elif code == "27":
            reverse = False
        elif code == "39":
            fg = ""
        elif code in ("38", "48"):
            kind = codes[i + 1] if i + 1 < len(codes) else ""
            width = 3 if kind == "5" else 5 if kind == "2" else 2
            if code == "38":
                fg = ";".join(codes[i + 1 : i + width])
            i += width - 1
        elif code.isdigit() and (30 <= int(code) <= 37 or 90 <= int(code) <= 97):
            fg = code
        i += 1
    return Style(dim, reverse, fg, bold)


def parse_line(raw: str) -> Line:
    """One captured line (SGR escapes kept by `capture-pane -e`) into text and styles."""
    style = PLAIN
    chars: list[str] = []
    styles: list[Style] = []
    pos = 0
    for m in _ESCAPE.finditer(raw):
        for ch in raw[pos : m.start()]:
            chars.append(" " if ch == "\xa0" else ch)
            styles.append(style)
        if m.group(2) == "m":
            style = _apply_sgr(m.group(1) or "", style)
        pos = m.end()
    for ch in raw[pos:]:
        chars.append(" " if ch == "\xa0" else ch)
        styles.append(style)
    plain = "".join(chars).rstrip()
    return Line(plain, tuple(styles[: len(plain)]))


def parse_screen(text: str) -> list[Line]:
    lines = [parse_line(raw) for raw in text.split("\n")]
    while lines and not lines[-1].plain.strip():
        lines.pop()
    return lines[-BOTTOM_LINES:]


def _compile(patterns: Sequence[str]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p) for p in patterns)


@dataclass(frozen=True)
class Layout:
    """How one agent CLI draws its screen. Patterns are regular expressions over
    plain lines (NBSP read as a space, trailing blanks cut)."""

    agent: str
    #: Any of these anywhere in the bottom lines says the screen is this agent's.
    identify: tuple[str, ...]
    #: The live composer's first line; group `text` is what it holds.
    composer: str
    #: Lines that continue a multi-line composer (group `text`), until `composer_end`.
    composer_more: str = ""
    #: The line that closes the composer (a rule, a blank, the box's bottom).
    composer_end: str = ""
    #: The composer is the whole run of `composer` lines above its end (a box).
    composer_block: bool = False
    #: Lines inside the composer that are not its text (a status line in the box).
    composer_skip: str = ""
    #: A line of the conversation where a turn begins (a past prompt); the last
    #: turn's block is what lies between the last such line and the composer.
    turn_start: str = ""
    #: With it, a turn start's first visible character must be drawn in one of these colours.
    turn_start_fg: frozenset[str] = frozenset()
    #: Busy: matched only in the live status line above the composer and (with
    #: `working_below`) in the footer below it; never in the composer's text or the transcript.
    working: tuple[str, ...] = ()
    #: The live status line (a spinner, "• Working (3s • esc to interrupt)"): walking up from
    #: the composer over `status_skip` lines (at most `status_reach`), the first other line is
    #: the status line if it matches one of these. With `status_anchor`, the walk starts above
    #: the lowest line matching it within reach (Gemini's status sits on its rule).
    status: tuple[str, ...] = ()
    status_skip: str = r"^\s*$"
    status_reach: int = 4
    status_anchor: str = ""
    #: Working patterns are read in the footer below the composer too.
    working_below: bool = False
    #: A working pattern counts only where its first letter is drawn faint, bold or in a
    #: colour (a reply quoting it is in the default ink).
    working_ink: bool = False
    #: A dialog that asks the human (it replaces the composer).
    dialog: tuple[str, ...] = ()
    #: Dialogs are read only below the lowest line matching this (the dialog's top, or the
    #: last transcript entry); none such on screen: no dialog. Unset: the bottom 25 lines.
    dialog_top: str = ""
    #: A usage or rate limit that ended the last turn: read in the last `entry` of the last
    #: turn's block (or in a dialog that replaced the composer).
    limit: tuple[str, ...] = ()
    #: A line where a transcript entry begins (a reply, a tool call, an error).
    entry: str = ""
    #: An entry whose text (its first letter after the mark) is drawn in one of these colours
    #: is a note of the CLI's ("Interrupted", "Automatic continue cancelled"), not a turn's result.
    note_fg: frozenset[str] = frozenset()
    #: The last entry is a limit only if its first line matches this (the CLI's error mark).
    limit_entry: str = ""
    #: The limit text is drawn in a colour, not in a reply's default ink.
    limit_ink: bool = False
    #: An entry whose mark (its first visible character) is drawn in one of these colours is
    #: a reply (Claude's white `●`): no limit is read in it, whatever colour its text is.
    reply_fg: frozenset[str] = frozenset()
    #: The limit line's first visible character is drawn in one of these colours (a red bar).
    limit_mark_fg: frozenset[str] = frozenset()
    #: A limit is also read in the footer below the composer (the CLI's own notice).
    limit_below: bool = False
    #: In the footer below a limited composer: the CLI will continue by itself at the reset.
    resumes: tuple[str, ...] = ()
    #: A pane title that says a turn runs (a spinner the agent puts there).
    title_busy: tuple[str, ...] = ()
    #: A pane title that says a dialog is up.
    title_dialog: tuple[str, ...] = ()
    #: Composer text drawn in these styles is a placeholder, not a draft.
    placeholder_dim: bool = True
    placeholder_fg: frozenset[str] = frozenset()
    #: Composer texts that are always placeholders (hints the agent writes there).
    placeholder_text: tuple[str, ...] = ()
    #: Transcript lines the CLI draws by itself as a turn ends (Codex's `Worked for 2s •
    #: 12:06`, drawn after the Stop hook): no change for only_if_changed (`rest.compared_lines`).
    turn_noise: tuple[str, ...] = ()
    #: Seconds an Enter keeps behind the paste it submits, for a CLI that reads an Enter
    #: close behind a paste as part of it (a newline, not a submit).
    enter_gap: float = 0.0
    _compiled: dict[str, tuple[re.Pattern[str], ...]] = field(default_factory=dict, compare=False, repr=False)

    def rx(self, name: str) -> tuple[re.Pattern[str], ...]:
        got = self._compiled.get(name)
        if got is None:
            value = getattr(self, name)
            got = _compile((value,) if isinstance(value, str) else value) if value else ()
            self._compiled[name] = got
        return got

    def is_placeholder(self, style: Style) -> bool:
        return (self.placeholder_dim and style.dim) or (style.fg in self.placeholder_fg)


@dataclass(frozen=True)
class Screen:
    """What one capture says about the pane."""

    agent: str = ""  #: the layout recognised ("" none)
    state: str = ""  #: active | waiting | idle | limited | "" (not known from the screen)
    draft: str = ""  #: composer text that is not a placeholder
    reset_at: int = 0  #: limited: the reset instant, when printed
    evidence: str = ""  #: the line that decided, for diagnostics
    dialog: bool = False  #: a dialog is up (also over a limit): keys would answer it
    resumes: bool = False  #: limited: the CLI says it will continue by itself at the reset
    failed: bool = False  #: idle: the last turn ended on an error entry that is not a limit


def _search(patterns: Sequence[re.Pattern[str]], lines: Sequence[Line], *, ink: bool = False) -> Line | None:
    """The first line with a match (with `ink`, one whose first letter is drawn inked)."""
    for line in lines:
        for rx in patterns:
            for m in rx.finditer(line.plain):
                if not ink or _inked_at(line, m.start(), m.end()):
                    return line
    return None


def _inked_at(line: Line, lo: int, hi: int) -> bool:
    """Whether the first letter of line.plain[lo:hi] is drawn inked (faint, bold, coloured)."""
    for i in range(lo, hi):
        if line.plain[i].isalnum():
            return line.style_at(i).inked
    return line.style_at(lo).inked


def _last_entry(layout: Layout, block: Sequence[Line]) -> Sequence[Line]:
    """The last transcript entry of a turn's block that is not a note (none if no entry
    begins in it); the notes after it are part of it."""
    entries = layout.rx("entry")
    for i in range(len(block) - 1, -1, -1):
        m = next((m for rx in entries if (m := rx.match(block[i].plain))), None)
        if m is None:
            continue
        text = block[i].plain
        first = next((j for j in range(m.end(), len(text)) if text[j].isalnum()), m.end())
        if layout.note_fg and block[i].style_at(first).fg in layout.note_fg:
            continue
        return block[i:]
    return []


def _limit(layout: Layout, lines: Sequence[Line], dating: Dating, *, live: bool = False) -> tuple[str, int] | None:
    """(evidence, reset instant) of a limit message among `lines`; an agent may
    wrap the message itself, so the reset is read from the line and the two after it.

    Unless `live` (the text of a dialog the CLI draws), the message is the head of
    the last entry of a turn, drawn as the CLI draws its errors: its mark
    (`limit_entry`, `limit_mark_fg`) and a colour (`limit_ink`), so that a reply
    quoting it is none."""
    patterns = layout.rx("limit")
    heads = len(lines)
    if not live and layout.entry:
        lines = _last_entry(layout, lines)
        if lines and layout.limit_entry and not any(rx.match(lines[0].plain) for rx in layout.rx("limit_entry")):
            return None
        if lines and layout.reply_fg and _drawn_in(lines[0], layout.reply_fg):
            return None
        heads = 1  # the CLIs print a limit at the head of its entry; a reply may quote one further down
    for i, line in enumerate(lines[:heads]):
        if not live and not _drawn_in(line, layout.limit_mark_fg):
            continue
        for rx in patterns:
            m = rx.search(line.plain)
            if m is None or (not live and layout.limit_ink and not _inked_at(line, m.start(), m.end())):
                continue
            text = " ".join(ln.plain.strip() for ln in lines[i : i + 3])
            return line.plain.strip(), dating.reset(text)
    return None


def _failed(layout: Layout, block: Sequence[Line]) -> bool:
    """Whether the last turn's last entry is an error: the CLI's error mark
    (`limit_entry`, in `limit_mark_fg` where the layout names it), not a reply.
    Only layouts that mark errors apart from replies can tell."""
    if not (layout.entry and layout.limit_entry):
        return False
    last = _last_entry(layout, block)
    if not last or not any(rx.match(last[0].plain) for rx in layout.rx("limit_entry")):
        return False
    if layout.reply_fg and _drawn_in(last[0], layout.reply_fg):
        return False
    return not layout.limit_mark_fg or _drawn_in(last[0], layout.limit_mark_fg)


def _composer(layout: Layout, lines: list[Line]) -> tuple[int, int, str] | None:
    """(index of the live composer's first line, index of the line that closes it,
    its text without placeholders), or None when the screen shows none.

    The live composer is the lowest box that `composer_end` closes: walking up
    from the line above the end, through `composer_more` lines, to a
    `composer` line (with `composer_block`, to the top of the run of
    `composer` lines)."""
    starts, more, end, skip = (layout.rx(n) for n in ("composer", "composer_more", "composer_end", "composer_skip"))

    def match(patterns: Sequence[re.Pattern[str]], line: Line) -> re.Match[str] | None:
        return next((m for rx in patterns if (m := rx.match(line.plain))), None)

    for e in range(len(lines) - 1, 0, -1):
        if match(end, lines[e]) is None:
            continue
        top = e - 1
        if layout.composer_block:
            if match(starts, lines[top]) is None:
                continue
            while top > 0 and match(starts, lines[top - 1]) is not None:
                top -= 1
        else:
            while top >= 0 and match(starts, lines[top]) is None and match(more, lines[top]) is not None:
                top -= 1
            if top < 0 or match(starts, lines[top]) is None:
                continue
        texts = []
        for i in range(top, e):
            if match(skip, lines[i]) is not None:
                continue
            m = match(starts, lines[i]) if (i == top or layout.composer_block) else match(more, lines[i])
            if m is not None:
                texts.append(_text_of(layout, lines[i], m))
        draft = "\n".join(t for t in texts if t).strip()
        if draft and any(re.fullmatch(p, draft) for p in layout.placeholder_text):
            draft = ""
        return top, e, draft
    return None


def _text_of(layout: Layout, line: Line, m: re.Match[str]) -> str:
    """The composer text of one line: the `text` group, without the characters
    drawn in a placeholder style or under the (reverse-video) cursor."""
    if "text" not in m.re.groupindex or m.group("text") is None:
        return ""
    lo, hi = m.span("text")
    ink = "".join(
        line.plain[i]
        for i in range(lo, hi)
        if not line.style_at(i).reverse and not layout.is_placeholder(line.style_at(i))
    )
    return ink.strip()


def classify(
    text: str, layouts: Sequence[Layout], *, now: int, zone: tzinfo, since: int = 0, hint: str = "", title: str = ""
) -> Screen:
    """Classify one capture. `hint` names the agent to try first (the pane's
    provider); `title` is the pane's title. A printed reset time is dated from
    `since` (when the state began, if known) or else read as the nearest such
    time to `now`, in `zone` unless it names its own."""
    lines = parse_screen(text)
    ordered = sorted(layouts, key=lambda lay: lay.agent != hint)
    first: Screen | None = None
    for layout in ordered:
        if _search(layout.rx("identify"), lines) is None:
            continue
        screen = _classify(layout, lines, Dating(now, since, zone))
        if (
            title
            and screen.state in (AgentState.IDLE, AgentState.LIMITED, "")
            and any(rx.search(title) for rx in layout.rx("title_busy"))
        ):
            return Screen(layout.agent, AgentState.ACTIVE, screen.draft, 0, f"title: {title}")
        if (
            title
            and screen.state in (AgentState.IDLE, "")
            and any(rx.search(title) for rx in layout.rx("title_dialog"))
        ):
            return Screen(layout.agent, AgentState.WAITING, "", 0, f"title: {title}", dialog=True)
        if screen.state:
            return screen
        # identified by a text a reply may quote, but not this layout's frame: try the next
        first = first or screen
    return first or Screen()


@dataclass(frozen=True)
class Dating:
    """What a printed reset time is read against."""

    now: int
    since: int
    zone: tzinfo

    def reset(self, text: str) -> int:
        return reset_instant(text, self.since, self.zone, now=self.now)


def _turn_start(layout: Layout, lines: list[Line], before: int) -> int:
    """Where the last turn's block begins: the line after the last past prompt
    above `before` (the top of the screen when none shows)."""
    starts = layout.rx("turn_start")
    for i in range(before - 1, -1, -1):
        if any(rx.match(lines[i].plain) for rx in starts) and _drawn_in(lines[i], layout.turn_start_fg):
            return i + 1
    return 0


def _drawn_in(line: Line, colours: frozenset[str]) -> bool:
    """Whether the line's first visible character has one of `colours` (any, if none given)."""
    if not colours:
        return True
    first = len(line.plain) - len(line.plain.lstrip())
    return line.style_at(first).fg in colours


def _lowest(patterns: Sequence[re.Pattern[str]], lines: Sequence[Line]) -> int:
    """Index of the lowest line matching any pattern, -1 if none."""
    for i in range(len(lines) - 1, -1, -1):
        if any(rx.search(lines[i].plain) for rx in patterns):
            return i
    return -1


def _status(layout: Layout, lines: list[Line], top: int) -> list[Line]:
    """The live status line above the composer whose first line is `top`, as a
    list of none or one line (see `Layout.status`)."""
    if not layout.status:
        return []
    skip, anchor = layout.rx("status_skip"), layout.rx("status_anchor")
    floor = max(0, top - layout.status_reach)
    i = top - 1
    if anchor:
        while i >= floor and not any(rx.match(lines[i].plain) for rx in anchor):
            i -= 1
        if i < floor:
            return []
        i -= 1
    while i >= floor and any(rx.match(lines[i].plain) for rx in skip):
        i -= 1
    if i < floor or not any(rx.match(lines[i].plain) for rx in layout.rx("status")):
        return []
    return [lines[i]]


def _dialog_region(layout: Layout, lines: list[Line]) -> list[Line]:
    """Where a dialog can be: below the lowest `dialog_top` line (none: nowhere), or,
    without one declared, the bottom 25 lines."""
    if not layout.dialog_top:
        return lines[-25:]
    top = _lowest(layout.rx("dialog_top"), lines)
    return lines[top + 1 :] if top >= 0 else []


def _classify(layout: Layout, lines: list[Line], dating: Dating) -> Screen:
    found = _composer(layout, lines)
    region = _dialog_region(layout, lines)
    if found is not None and _lowest(layout.rx("dialog"), region) >= 0:
        at = len(lines) - len(region) + _lowest(layout.rx("dialog"), region)
        if at > found[0]:
            found = None  # a dialog below the "composer": that line was a past prompt, the dialog is live
    if found is None:
        # no composer: a dialog replaced it. The last turn's result may be a
        # limit (the dialog then offers what to do about it).
        dialog = _search(layout.rx("dialog"), region)
        limit = _limit(layout, lines[_turn_start(layout, lines, len(lines)) :], dating)
        if limit is None and dialog is not None:
            limit = _limit(layout, region, dating, live=True)
        if limit is not None:
            return Screen(layout.agent, AgentState.LIMITED, "", limit[1], limit[0], dialog=dialog is not None)
        if dialog is not None:
            return Screen(layout.agent, AgentState.WAITING, "", 0, dialog.plain.strip(), dialog=True)
        return Screen(layout.agent)
    index, end, draft = found
    block = lines[_turn_start(layout, lines, index) : index]
    live = [*_status(layout, lines, index), *(lines[end + 1 :] if layout.working_below else [])]
    busy = _search(layout.rx("working"), live, ink=layout.working_ink)
    if busy is not None:
        return Screen(layout.agent, AgentState.ACTIVE, draft, 0, busy.plain.strip())
    limit = _limit(layout, lines[end + 1 :], dating, live=True) if layout.limit_below else None
    limit = limit or _limit(layout, block, dating)
    if limit is not None:
        resumes = _search(layout.rx("resumes"), lines[end + 1 :]) is not None
        return Screen(layout.agent, AgentState.LIMITED, draft, limit[1], limit[0], resumes=resumes)
    return Screen(layout.agent, AgentState.IDLE, draft, 0, lines[index].plain.strip(), failed=_failed(layout, block))
