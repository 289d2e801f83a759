"""rk's segment in tmux's status line: the block `rk agent setup tmux` writes into a
tmux config file, and how a `status-right` value is read for it. Text in, text out.

The block appends `#(rk status --format tmux)` to whatever `status-right` is when
it runs (so the user's own content stays, set above it or by a theme), and only
when the value does not show the segment yet: the file can be sourced again
(`prefix r`) without a second segment. It also widens `status-right-length` to
`MIN_LENGTH` when it is narrower (tmux's default, 40, is nearly filled by its
default `status-right`, and the segment would be cut off). It goes at the end of
the file, after every line that could set `status-right`.
"""

from __future__ import annotations

from collections.abc import Callable

HEADER = "# rk: the status segment, written by `rk agent setup tmux`; removed by `rk agent setup tmux --uninstall`"
#: What marks the segment in a `status-right` value (any rk path before it).
MARK = "status --format tmux"
MIN_LENGTH = 80
#: The characters an rk path may have here: it lands in a single-quoted tmux command,
#: a double-quoted value, a `#()` that tmux expands as a format and a string tmux
#: passes through strftime, so no quote, `#`, `%`, `$`, space or backslash.
PATH_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./+@=,~-")


def usable_path(rk: str) -> bool:
    return bool(rk) and all(c in PATH_CHARS for c in rk)


def segment(rk: str) -> str:
    """`#(<rk> status --format tmux)`; `rk` is `rk` or an absolute path (see `usable_path`)."""
    return f"#({rk} {MARK})"


def shows_segment(value: str) -> bool:
    """Whether a `status-right` (or `status-left`) value shows rk's segment."""
    return MARK in value


def commands(rk: str) -> list[list[str]]:
    """The block's tmux commands, as argv lists (what the live server is sent)."""
    return [
        ["if-shell", "-F", f"#{{m:*{MARK}*,#{{status-right}}}}", "", f'set -ga status-right " {segment(rk)}"'],
        [
            "if-shell",
            "-F",
            f"#{{e|<|:#{{status-right-length}},{MIN_LENGTH}}}",
            f"set -g status-right-length {MIN_LENGTH}",
        ],
    ]


def _quoted(word: str) -> str:
    """A word of a tmux config line: bare when plain, else single-quoted (the block's
    words never hold a single quote)."""
    return word if word and all(c.isalnum() or c in "-_" for c in word) else f"'{word}'"


def block(rk: str) -> str:
    """The header and its lines, each ending in a newline."""
    return HEADER + "\n" + "".join(" ".join(_quoted(w) for w in argv) + "\n" for argv in commands(rk))


def _is_block_line(line: str) -> bool:
    """A line of rk's block (of any rk path): what follows the header is removed with it."""
    text = line.strip()
    return text.startswith("if-shell -F ") and (MARK in text or "status-right-length" in text)


def strip_block(text: str) -> tuple[str, bool]:
    """`text` without rk's block (the header and the block lines after it), and whether
    there was one; the blank line the install put before it goes too."""
    return strip_marked(text, HEADER, _is_block_line)


def strip_marked(text: str, header: str, belongs: Callable[[str], bool], most: int = 0) -> tuple[str, bool]:
    """`text` without each block `header` opens (the header and the lines after it that
    `belongs` claims: at most `most` of them, 0 = all), and whether there was one; the
    blank lines the install put before a header go too. A tmux config block of rk's
    (the status segment here, the ticker's start line in `rk.core.tickerconf`)."""
    out: list[str] = []
    removed = inside = False
    claimed = 0
    for line in text.splitlines(keepends=True):
        if line.rstrip("\n") == header:
            removed, inside, claimed = True, True, 0
            while out and not out[-1].strip():
                out.pop()
            continue
        if inside and belongs(line) and (not most or claimed < most):
            claimed += 1
            continue
        inside = False
        out.append(line)
    result = "".join(out)
    if removed and result and not result.endswith("\n"):
        result += "\n"
    return result, removed


def user_segment(text: str) -> bool:
    """Whether a line of `text` outside rk's block (not a comment) already shows the segment."""
    rest, _ = strip_block(text)
    return any(MARK in line and not line.lstrip().startswith("#") for line in rest.splitlines())


def install(text: str, rk: str) -> str:
    """`text` with rk's block (for `rk`) at its end, in place of any earlier one."""
    rest, _ = strip_block(text)
    rest = rest.rstrip("\n")
    return (rest + "\n\n" if rest else "") + block(rk)


def without_segment(value: str) -> str:
    """A `status-right` value without rk's segment (and the space before it)."""
    import re

    return re.sub(r" ?#\([^()]*" + re.escape(MARK) + r"\)", "", value)
