"""What is typed, and how rk knows it on a screen: sanitising a payload, and the
needle and paste chips the echo probe looks for.

Invisible characters come in two kinds. Bidirectional controls (and tag
characters outside an emoji flag) make a line read differently from what is
typed, the "Trojan Source" trick for hiding text from a reviewer: a prompt that
holds one is refused up front (`hidden`) and never typed (`sanitize`).
Zero-width characters (ZWSP, ZWJ, word joiner, BOM) are typed as written, since
emoji sequences need the joiner; a terminal draws them in no cell or drops them,
so the echo check compares text with them removed on both sides (`normalise`).

Pure text rules; `rk.act.deliver` types and watches.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from functools import cache

#: Payloads at least this long (or multi-line) may be collapsed by the agent
#: into a chip instead of being echoed (Claude Code: `[Pasted text #N +M lines]`).
COLLAPSE_THRESHOLD = 200

#: How many trailing characters of the normalised last line make the needle.
NEEDLE_LENGTH = 40


@cache
def _control() -> re.Pattern[str]:
    """C0 except \\t and \\n, DEL, C1 (0x80-0x9f, which includes the 8-bit CSI 0x9b),
    and lone surrogates (undecodable input bytes; they cannot be encoded to type).
    Compiled when first typed (0.4 ms): a view only reads entries (`hidden`)."""
    return re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


#: The marks, embeddings, overrides and isolates of the Unicode bidirectional algorithm.
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
#: Tag characters (invisible ASCII a model still reads), except in an emoji's subdivision
#: flag: the black flag, tags, the cancel tag.
_TAGS = "\U000e0000-\U000e007f"
_FLAG = "\U0001f3f4[\U000e0020-\U000e007e]+\U000e007f"
_HIDING = re.compile(f"{_FLAG}|([{_BIDI}]|[{_TAGS}])")
#: Format characters a terminal draws in no cell (or drops): zero-width space, non-joiner and
#: joiner, the bidi controls, word joiner and invisible operators, BOM, annotation marks, tags.
INVISIBLE = f"\u180e\u200b-\u200d\u2060-\u2064\u206a-\u206f\ufeff\ufff9-\ufffb{_BIDI}{_TAGS}"


def hidden(text: str) -> str:
    """Why `text` may not be a prompt ("" when it may): it holds a character that hides
    or reorders what a reader sees (a bidi control, a stray tag character)."""
    for m in _HIDING.finditer(text):
        if m.group(1):
            ch = m.group(1)
            return (
                f"the prompt holds U+{ord(ch):04X} ({unicodedata.name(ch, 'a tag character').lower()}) "
                f"at character {m.start() + 1}, which shows a reader other text than is typed; remove it"
            )
    return ""


def _unhidden(text: str) -> str:
    return _HIDING.sub(lambda m: "" if m.group(1) else m.group(0), text)


def sanitize(text: str) -> str:
    """The text exactly as it will be typed.

    - CRLF and lone CR become LF (a CR typed into a pane is Enter).
    - Every control character except LF and TAB is removed: C0 (including
      ESC), DEL, and C1 (including 0x9B, the one-byte CSI). Only the control
      characters themselves go; what followed an ESC stays as inert, visible
      text (`ESC[31m` becomes `[31m`). This is what makes the paste safe: an
      `ESC[201~` inside the text would otherwise close the bracketed paste and
      the rest would arrive as live keystrokes. Lone surrogates (what
      `surrogateescape` makes of undecodable bytes) go as well, and so do
      bidi controls and stray tag characters (`hidden`: refused up front,
      never typed whatever path the text took).
    - Trailing lines that are empty or whitespace-only are dropped, and so is
      the final newline. A trailing newline is a submit in apps without
      bracketed paste (the Enter would come before the echo probe) and an
      empty last line in apps with it (the probe's needle would be blank).
      Leading lines and whitespace inside lines are kept as written.

    All-control text becomes `""`; `deliver` refuses it.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _unhidden(_control().sub("", text))
    lines = text.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


@cache
def _screen_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The escapes, and the noise, a screen comparison drops (compiled at the first
    delivery's look, not by every view that imports this module)."""
    ansi = re.compile(
        r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI
        r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC
        r"|\x1b[@-Z\\-_]"  # other two-byte escapes
    )
    # All whitespace, the box-drawing and block glyphs U+2500-U+259F that TUIs draw
    # around composers (a wrapped line in a bordered composer reads `│ ab │`), and
    # the invisible characters a terminal may keep or drop.
    noise = re.compile(f"[\\s\u2500-\u259f{INVISIBLE}]+")
    return ansi, noise


def normalise(screen: str) -> str:
    """A screen (or a line) reduced to what survives wrapping and reflow, and a
    terminal's drawing: invisible characters go on both sides of a comparison."""
    ansi, noise = _screen_patterns()
    return noise.sub("", ansi.sub("", screen))


def needle_for(text: str) -> str:
    """The last `NEEDLE_LENGTH` characters of the last line that has any after
    normalising; `""` if no line does (nothing we could see echoed)."""
    for line in reversed(text.split("\n")):
        norm = normalise(line)
        if norm:
            return norm[-NEEDLE_LENGTH:]
    return ""


@cache
def _chip() -> re.Pattern[str]:
    """Claude Code `[Pasted text #1 +39 lines]`, others `[Pasted Content …]`, OpenCode `[Pasted ~3 lines]`."""
    return re.compile(r"\[Pasted (?:text|Content|~)[^\]\n]*\]")


def chips(screen: str) -> Counter[str]:
    return Counter(_chip().findall(screen))


def fresh_chip(baseline: str, screen: str) -> bool:
    before = chips(baseline)
    return any(n > before[chip] for chip, n in chips(screen).items())


def foreign(seen: str, text: str) -> tuple[str, str]:
    """What, beside the payload `text`, shows in `seen` (the composer's text that was
    not there before the paste, or the screen from where the cursor stood before it
    to where it stands now): (the part before the payload, the part after it),
    normalised. Nothing is judged ("", "") when the payload is not wholly in `seen`
    (a composer that scrolled, a wrapped line that scrolled away): the echo rule
    decides alone then. A key a human pressed between rk's look and its paste
    shows as a part before it; one pressed after the paste, as a part after it."""
    s, t = normalise(seen), normalise(text)
    i = s.rfind(t) if t else -1
    if i < 0:
        return "", ""
    return s[:i], s[i + len(t) :]
