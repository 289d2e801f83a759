"""Secrets out of command lines before anyone sees them.

`rk agent list` (and `agent_list` over MCP) shows each pane's program with its
arguments; people pass tokens and passwords that way (`--password=…`,
`--api-key …`, `TOKEN=… cmd`, `https://user:pass@host`). Whatever looks like a
secret is replaced by `***` everywhere a command line is shown.
"""

from __future__ import annotations

import re

#: A word naming a secret: an option or a variable whose name says so.
_SECRET_WORDS = r"pass(?:word|wd|phrase)?|secret|token|api[_-]?key|auth|credentials?|private[_-]?key|pwd"
_SECRET_NAME = rf"[\w.-]*(?:{_SECRET_WORDS})[\w.-]*"
#: `--password=x`, `PASSWORD=x`, `token:x`
_JOINED = re.compile(rf"(?i)(^|\s)(-{{0,2}}{_SECRET_NAME}[=:])(\S+)")
#: `--password x` (the next word is the value)
_SPACED = re.compile(rf"(?i)(^|\s)(--?{_SECRET_NAME})(\s+)(?!-)(\S+)")
#: `scheme://user:pass@host`
_URL_PASSWORD = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^\s:/@]*:)([^\s@/]+)(@)")

MASK = "***"


def redact(command_line: str) -> str:
    """`command_line` with the values of secret-looking options, variables and URL passwords masked."""
    text = _URL_PASSWORD.sub(lambda m: m.group(1) + MASK + m.group(3), command_line)
    text = _JOINED.sub(lambda m: m.group(1) + m.group(2) + MASK, text)
    return _SPACED.sub(lambda m: m.group(1) + m.group(2) + m.group(3) + MASK, text)


def program_only(command_line: str) -> str:
    """The program's name alone (its first word's last path part), for callers not granted more."""
    first = command_line.split(maxsplit=1)[0] if command_line.strip() else ""
    return first.rsplit("/", 1)[-1]
