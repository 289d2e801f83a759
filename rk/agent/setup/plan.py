"""What `rk agent setup` does to one file, shown before it is done: a Plan (the
file's old and new bytes, a summary, notes, and tmux commands for a running
server), its unified diff, and its writing: atomic, mode 0600, through a
symlink to its target, directories created 0700. Shared by every target.
"""

from __future__ import annotations

import difflib
import json
import os
from _collections_abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rk.core.errors import ExitStatus, RkError
from rk.host.files import atomic_write

#: A parsed JSON configuration: whatever objects the user's file holds.
JsonDoc = dict[str, Any]


class SetupError(RkError):
    """An operational failure; the message is one line for the user."""


class UsageError(RkError, status=ExitStatus.USAGE):
    """A usage mistake (exit 2)."""


@dataclass
class Plan:
    """One file's change (and the running tmux server's, for `tmux`), as planned before any write."""

    agent: str
    path: Path
    old: bytes | None  #: current content, None if the file does not exist
    new: bytes | None  #: content to write, None to delete the file
    summary: str = ""
    notes: list[str] = field(default_factory=list)
    #: tmux commands for the running server at `server` (a socket path), run after the write
    live: list[list[str]] = field(default_factory=list)
    server: str = ""

    @property
    def changed(self) -> bool:
        """Whether applying it writes anything (a file, or the running server)."""
        return self.old != self.new or bool(self.live)

    def diff(self) -> str:
        """The unified diff of the file, then the commands for the running tmux server."""
        text = self._file_diff()
        if self.live:
            import shlex

            text += f"# then, on the running tmux server {self.server}:\n"
            text += "".join(f"#   tmux {shlex.join(argv)}\n" for argv in self.live)
        return text

    def _file_diff(self) -> str:
        old = (self.old or b"").decode("utf-8", "replace").splitlines(keepends=True)
        new = (self.new or b"").decode("utf-8", "replace").splitlines(keepends=True)
        text = "".join(
            difflib.unified_diff(
                old,
                new,
                fromfile=str(self.path) if self.old is not None else "/dev/null",
                tofile=str(self.path) if self.new is not None else "/dev/null",
            )
        )
        if text and not text.endswith("\n"):
            text += "\n"
        return text


def read_config(path: Path) -> bytes | None:
    """The bytes of `path`, None when it does not exist."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise SetupError(f"{path} is a directory") from None
    except OSError as exc:
        raise SetupError(f"cannot read {path}: {exc.strerror or exc}") from None


def as_text(path: Path, data: bytes | None) -> str:
    """A config file's bytes as text ("" when absent); SetupError when not UTF-8."""
    try:
        return (data or b"").decode("utf-8")
    except UnicodeDecodeError:
        raise SetupError(f"{path}: not UTF-8 text; fix or move it — nothing was written") from None


def load_json(path: Path, data: bytes | None) -> JsonDoc:
    """The JSON object in `data` (a missing or empty file: an empty object)."""
    if data is None or not data.strip():
        return {}
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise SetupError(f"{path}: not valid JSON ({exc}); fix or move it — nothing was written") from None
    if not isinstance(doc, dict):
        raise SetupError(f"{path}: the top level is not a JSON object — nothing was written")
    return doc


def dump_json(doc: JsonDoc) -> bytes:
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def apply(p: Plan, env: Mapping[str, str] | None = None) -> None:
    """Write (or delete) one planned file, then send the running tmux server its commands."""
    if p.old != p.new:
        _write(p)
    if p.live:
        from rk.tmux.server import Server, TmuxError, chain

        try:
            Server(socket_path=p.server, env=env).run(*chain(*p.live), timeout=5.0)
        except TmuxError as exc:
            raise SetupError(f"{p.path} written, but the running tmux server {p.server}: {exc}") from None


def _write(p: Plan) -> None:
    """Replace (or delete) the planned file; a symlink's target is replaced, the link kept."""
    target = Path(os.path.realpath(p.path))  # keep a dotfiles symlink, replace its target
    try:
        if p.new is None:
            if p.old is not None:
                target.unlink()
            return
        if not target.parent.is_dir():
            os.makedirs(target.parent, mode=0o700, exist_ok=True)
        atomic_write(target, p.new, 0o600)
    except OSError as exc:
        raise SetupError(f"cannot write {p.path}: {exc.strerror or exc}") from None
