"""The tmux command layer: one explicit server per call, a clean environment,
a timeout on every command, and a liveness probe that never starts a server.

Every tmux child gets `TMUX` and `TMUX_PANE` removed (or commands would be
attributed to the caller's pane and server) and a UTF-8 locale (tmux 3.7
rewrites tabs to `_` for non-UTF-8 clients, which would empty every
tab-separated listing). A socket is probed with a bare `connect()` before any
command is sent to it: tmux would resurrect a dead server for some commands,
and a probe costs no process.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from rk.core import environ
from rk.core.environ import (
    IDLE_LINE_OPTION,
    LEGACY_STATE_OPTION,
    ROLE_OPTION,
    SESSION_OPTION,
    SOURCE_OPTION,
    STATE_OPTION,
    TURN_END_OPTION,
    UNREAD_OPTION,
)
from rk.core.environ import socket_from_tmux_env as socket_from_tmux_env  # re-exported: the views read it without tmux
from rk.core.errors import RkError
from rk.core.pane.facts import PaneFact, reconcile
from rk.core.pane.program import Proc, judge
from rk.core.pane.turn import parse_turn_end
from rk.host.process import own_pids, process_info, read_table, tty_device

DEFAULT_TIMEOUT = 5.0

#: Fields read per pane in the one enumeration a tick makes.
PANE_FIELDS = (
    "pane_id",
    "pane_pid",
    "pane_tty",
    "pane_current_command",
    "pane_in_mode",
    "pane_mode",
    "pane_active",
    "pane_dead",
    "window_id",
    "start_time",
    "pid",  # the server's: with start_time, which server's life the pane ids belong to
    ROLE_OPTION,
    STATE_OPTION,
    LEGACY_STATE_OPTION,
    SESSION_OPTION,
    SOURCE_OPTION,
    UNREAD_OPTION,
    IDLE_LINE_OPTION,
    TURN_END_OPTION,
    "window_name",  # set freely too (a program may rename its window)
    "pane_title",  # last: a title is the one field a program sets freely
)


def record_format(fields: tuple[str, ...], mark: str) -> str:
    """A listing's format: each record opens with `[mark]`, fields are joined by
    `<mark>`. With a fresh random mark per call, no value (an option holding a tab or
    a newline, a title a program chose) can split a record or a field."""
    return f"[{mark}]" + f"<{mark}>".join("#{" + f + "}" for f in fields)


def parse_records(out: str, fields: tuple[str, ...], mark: str) -> list[dict[str, str]]:
    rows = []
    for record in out.split(f"[{mark}]")[1:]:
        values = record.removesuffix("\n").split(f"<{mark}>")
        if len(values) != len(fields):
            raise TmuxError(f"unexpected listing record {record[:200]!r}")
        rows.append(dict(zip(fields, values)))
    return rows


def head_format(fields: tuple[str, ...], mark: str) -> str:
    """A `display-message` head to put before other output (a capture): one record
    closed by `[/mark]`, so what follows it is told apart whatever the values hold."""
    return record_format(fields, mark) + f"[/{mark}]"


def split_head(out: str, fields: tuple[str, ...], mark: str) -> tuple[dict[str, str], str]:
    """(the head's fields, the output after it); TmuxError if there is no head."""
    head, sep, rest = out.partition(f"[/{mark}]\n")
    rows = parse_records(head, fields, mark) if sep else []
    if len(rows) != 1:
        raise TmuxError(f"unexpected display record {out[:200]!r}")
    return rows[0], rest


def format_number(text: str) -> int:
    """A numeric format value (a pid, an epoch); 0 when tmux printed nothing usable."""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 12 else 0


def _pane_of_row(row: dict[str, str]) -> PaneFact:
    """A pane as listed, before reconciling (its session option as it stands)."""
    return PaneFact(
        pane_id=row["pane_id"],
        command=row["pane_current_command"],
        window_id=row["window_id"],
        role=row[ROLE_OPTION],
        active=row["pane_active"] == "1",
        in_mode=row["pane_in_mode"] == "1",
        mode=row["pane_mode"],
        pane_pid=format_number(row["pane_pid"]),
        server_started=format_number(row["start_time"]),
        server_pid=format_number(row["pid"]),
        dead=row["pane_dead"] == "1",
        tty=tty_device(row["pane_tty"]),
        title=row["pane_title"],
        window_name=row["window_name"],
        session_ref=row[SESSION_OPTION].strip(),
        unread=row[UNREAD_OPTION],
        idle_line=row[IDLE_LINE_OPTION],
        turn_end=parse_turn_end(row[TURN_END_OPTION])[1],
    )


class TmuxError(RkError):
    """A tmux command failed; the message carries tmux's own words."""


class Command:
    """The tmux commands rk sends, as argv: the one place their flags are spelled.

    `Server.run(*chain(a, b))` sends several in one tmux process (delivery
    does, to keep each step to one process and one round trip)."""

    @staticmethod
    def display(target: str, fmt: str) -> list[str]:
        return ["display-message", "-p", "-t", target, fmt]

    @staticmethod
    def capture(target: str, *, styled: bool = False, history: int = 0, joined: bool = True) -> list[str]:
        """The visible screen, wrapped lines joined (unless not `joined`: one row per
        terminal row); `styled` keeps the SGR styles."""
        return [
            "capture-pane",
            "-p",
            *(["-J"] if joined else []),
            *(["-e"] if styled else []),
            *(["-S", f"-{history}"] if history else []),
            "-t",
            target,
        ]

    @staticmethod
    def send_keys(target: str, *keys: str) -> list[str]:
        return ["send-keys", "-t", target, *keys]

    @staticmethod
    def unless_mode(target: str, *commands: list[str], otherwise: tuple[list[str], ...] = ()) -> list[str]:
        """Run `commands` only if `target` is not in a pane mode at that instant,
        decided inside the server (no process of its own, no window for a race).

        A mode (copy-mode, view-mode, clock-mode) is a human's: it is never
        cancelled, and keys sent into it would drive it (copy-mode treats Enter
        as "copy selection"). In a mode, `otherwise` runs instead, followed by a
        line `IN_MODE<mode name>` on stdout, which `in_mode_of` reads back.
        tmux parses the branches as command strings, so every word is quoted
        for its parser (`tmux_words`); the strings are not format-expanded."""
        refused = [*otherwise, ["display-message", "-p", "-t", target, IN_MODE + "#{pane_mode}"]]
        return ["if-shell", "-F", "-t", target, "#{pane_in_mode}", tmux_words(*refused), tmux_words(*commands)]

    @staticmethod
    def delete_buffer(name: str) -> list[str]:
        return ["delete-buffer", "-b", name]

    @staticmethod
    def message(client: str, text: str) -> list[str]:
        """Show `text` on one client's status line, as text: `display-message`
        expands its argument as a format (`#(cmd)` would run a shell command,
        `#{…}` and `#[…]` would be read), and tmux 3.3 has no `-l`, so every `#`
        is doubled (`literal`)."""
        return ["display-message", "-c", client, literal(text)]

    @staticmethod
    def load_buffer(name: str) -> list[str]:
        """Fill a named buffer from stdin: no argv parsing (a leading `-` or trailing
        `;` arrives intact), and no argv size limit."""
        return ["load-buffer", "-b", name, "-"]

    @staticmethod
    def paste_buffer(name: str, target: str, *, bracketed: bool = True) -> list[str]:
        """Paste and delete a named buffer; bracketed, the program sees one literal block."""
        return ["paste-buffer", *(["-p"] if bracketed else []), "-d", "-b", name, "-t", target]

    @staticmethod
    def set_option(scope: str, target: str, name: str, value: str | None) -> list[str]:
        """`set-option -p|-w` on a pane or window; `value` None unsets it."""
        if value is None:
            return ["set-option", scope, "-u", "-t", target, name]
        return ["set-option", scope, "-t", target, name, value]


#: What `Command.unless_mode` prints when it did not run its commands (then the mode's name).
IN_MODE = "[rk: pane in mode]"


def in_mode_of(out: str) -> str | None:
    """The mode that stopped an `unless_mode` (its name, or "pane-mode"), or None if it ran."""
    for line in out.splitlines():
        if line.startswith(IN_MODE):
            return line[len(IN_MODE) :].strip() or "pane-mode"
    return None


#: What `Server.write_state` prints when the pane's state moved since it was read (no turn end written).
MOVED = "[rk: state moved]"


def state_still(read: str) -> str:
    """A tmux format true while the pane's state option holds `read` (`state:epoch`,
    with or without a pid after it) or nothing (a state read from the older option).
    `read` is [a-z0-9:]: nothing in it a format could read otherwise."""
    option = f"#{{{STATE_OPTION}}}"
    return f"#{{||:#{{||:#{{==:{option},{read}}},#{{m:{read}:*,{option}}}}},#{{==:{option},}}}}"


def literal(text: str) -> str:
    """`text` as a tmux format that expands to exactly `text`: `#` doubled, so
    `#(`, `#{` and `#[` arrive as text (tmux draws `##[` as `#[`)."""
    return text.replace("#", "##")


_BARE_WORD = re.compile(r"[A-Za-z0-9%@_./:,=+-]+")


def tmux_word(arg: str) -> str:
    """One argument spelled for tmux's command parser: bare when it holds only
    safe characters, else double-quoted with `\\`, `"` and `$` escaped."""
    if _BARE_WORD.fullmatch(arg):
        return arg
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$") + '"'


def tmux_words(*commands: list[str]) -> str:
    """Commands as one tmux command string (`a x ; b y`), each word quoted (`tmux_word`)."""
    return " ; ".join(" ".join(tmux_word(a) for a in command) for command in commands)


def chain(*commands: list[str]) -> list[str]:
    """Several commands as one tmux invocation (`a ; b ; c`)."""
    out: list[str] = []
    for command in commands:
        if out:
            out.append(";")
        out.extend(command)
    return out


def child_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for tmux children (`rk.core.environ.child_env`), from ours by default."""
    return environ.child_env(os.environ if base is None else base)


def socket_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$TMUX_TMPDIR/tmux-<uid>`, else `/tmp/tmux-<uid>` (tmux's own rule)."""
    env = os.environ if env is None else env
    return Path(env.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}"


def socket_is_live(path: Path | str, timeout: float = 0.5) -> bool:
    """Whether a tmux server listens on `path` (connect only; nothing is sent)."""
    import socket  # only here: a view that never asks does not load it (~3 ms)

    try:
        if not stat.S_ISSOCK(os.stat(path).st_mode):
            return False
    except OSError:
        return False
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
        return True
    except OSError:
        return False
    finally:
        sock.close()


@dataclass(frozen=True)
class Server:
    """One tmux server, by socket name (`-L`) or by socket path (`-S`)."""

    name: str = "default"
    socket_path: str = ""
    env: Mapping[str, str] | None = None

    @property
    def path(self) -> Path:
        if self.socket_path:
            return Path(self.socket_path)
        return socket_dir(self.env) / self.name

    def argv(self, *args: str) -> list[str]:
        if self.socket_path:
            return ["tmux", "-S", self.socket_path, *args]
        return ["tmux", "-L", self.name, *args]

    def is_live(self) -> bool:
        return socket_is_live(self.path)

    def run(self, *args: str, input: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> str:
        """Run one tmux command; return stdout; TmuxError with tmux's message on failure."""
        argv = self.argv(*args)
        try:
            proc = subprocess.run(
                argv,
                input=input.encode("utf-8") if input is not None else None,
                stdin=None if input is not None else subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout,
                env=child_env(self.env),
            )
        except FileNotFoundError:
            raise TmuxError("tmux is not installed (not on PATH)") from None
        except subprocess.TimeoutExpired:
            raise TmuxError(f"tmux {args[0] if args else ''} timed out after {timeout:g}s") from None
        if proc.returncode != 0:
            message = proc.stderr.decode("utf-8", "replace").strip() or f"exit status {proc.returncode}"
            raise TmuxError(f"tmux {args[0] if args else ''}: {message.splitlines()[0]}")
        return proc.stdout.decode("utf-8", "replace")

    # -- the commands rk uses, one method each

    def listing(self, command: str, fields: tuple[str, ...]) -> list[dict[str, str]]:
        """`<command> -a -F …` (list-panes, list-windows) as one dict per record."""
        mark = os.urandom(6).hex()
        return parse_records(self.run(command, "-a", "-F", record_format(fields, mark)), fields, mark)

    def list_panes(self) -> list[dict[str, str]]:
        """Every pane of the server, one `list-panes -a` call, as field dicts."""
        return self.listing("list-panes", PANE_FIELDS)

    def pane_facts(self, concerned: Callable[[list[PaneFact]], Collection[str]] | None = None) -> list[PaneFact]:
        """Reconciled facts for every pane, in enumeration order. The panes
        `concerned` names (given the facts as listed, options unreconciled;
        default: every pane) are judged from their process tree, read once for
        all of them; the others by their command alone."""
        rows = self.list_panes()
        listed = [_pane_of_row(row) for row in rows]
        ids = {p.pane_id for p in listed} if concerned is None else set(concerned(listed))
        judged = {p.pane_id: p.tty for p in listed if p.pane_id in ids and not p.dead and p.pane_pid}
        table = read_table(set(judged.values())) if judged else {}
        by_tty: dict[int, dict[int, Proc]] = {}
        for proc in (table or {}).values():
            by_tty.setdefault(proc.tty, {})[proc.pid] = proc  # a pane's tree is on its own tty
        own = own_pids()
        facts = []
        for row, pane in zip(rows, listed):
            program = None
            if table is not None and pane.pane_id in judged:
                program = judge(by_tty.get(pane.tty, {}), pane.pane_pid, own)
            facts.append(
                reconcile(
                    replace(pane, session_ref=""),
                    row[STATE_OPTION],
                    row[LEGACY_STATE_OPTION],
                    row[SESSION_OPTION],
                    process_info,
                    row[SOURCE_OPTION],
                    program,
                )
            )
        return facts

    def display(self, target: str, fmt: str) -> str:
        """Expand `fmt` for `target`. Note: tmux 3.3 answers a missing target with
        empty fields and exit 0, so include `#{pane_id}` when existence matters."""
        return self.run(*Command.display(target, fmt)).rstrip("\n")

    def set_pane_option(self, pane: str, name: str, value: str) -> None:
        self.run(*Command.set_option("-p", pane, name, value))

    def set_window_option(self, window: str, name: str, value: str | None) -> None:
        """Set, or with None unset, a window option."""
        self.run(*Command.set_option("-w", window, name, value))

    def look(self, pane: str) -> tuple[str, str]:
        """(title, visible screen with its styles) of `pane`, in one tmux process.
        The styles matter: a placeholder differs from typed text only by them."""
        mark, fields = os.urandom(6).hex(), ("pane_id", "pane_title")
        out = self.run(*chain(Command.display(pane, head_format(fields, mark)), Command.capture(pane, styled=True)))
        head, screen = split_head(out, fields, mark)
        if head["pane_id"] != pane:
            raise TmuxError(f"can't find pane: {pane}")
        return head["pane_title"], screen

    def cursor_rows(self, pane: str) -> tuple[str, str, str]:
        """(state option, cursor `x,y`, the screen one line per terminal row) of `pane`, in
        one tmux process: where the cursor is and what its row shows."""
        mark, fields = os.urandom(6).hex(), ("pane_id", STATE_OPTION, "cursor_x", "cursor_y")
        out = self.run(*chain(Command.display(pane, head_format(fields, mark)), Command.capture(pane, joined=False)))
        head, rows = split_head(out, fields, mark)
        if head["pane_id"] != pane:
            raise TmuxError(f"can't find pane: {pane}")
        return head[STATE_OPTION], f"{head['cursor_x']},{head['cursor_y']}", rows

    def write_state(
        self, pane: str, value: str, note: str, turn_end: str = "", read: str = "", screen_only: bool = False
    ) -> tuple[bool, bool]:
        """Set the pane's agent state (both names), its source note and, when given, its
        turn end (`@rk_pane_turn_end` value), in one process; whether the state and
        whether the turn end were written (True for a turn end not given).

        With `read`, the state the writer saw (`state:epoch`, "" for none), both are
        written only while the pane's state option still holds it, decided inside tmux
        (`state_still`): a hook that wrote after the look read the pane is newer than
        the look's guess, of the state (a turn end's `idle` over a busy frame the look
        captured just before) and of how the turn ended (an Esc's `interrupted`, which
        the look only guesses as `ok`). With `screen_only` (a limit: no hook tells one)
        the state is written all the same and only the turn end is guarded: a late
        `idle` must not lose what only the screen shows."""
        writes = [
            Command.set_option("-p", pane, STATE_OPTION, value),
            Command.set_option("-p", pane, LEGACY_STATE_OPTION, value),
            Command.set_option("-p", pane, SOURCE_OPTION, note),
        ]
        end = [Command.set_option("-p", pane, TURN_END_OPTION, turn_end)] if turn_end else []
        if not read:
            self.run(*chain(*writes, *end))
            return True, True
        if screen_only and not end:
            self.run(*chain(*writes))
            return True, True
        moved = ["display-message", "-p", "-t", pane, MOVED]
        if screen_only:
            guarded = ["if-shell", "-F", "-t", pane, state_still(read), tmux_words(*end), tmux_words(moved)]
            return True, MOVED not in self.run(*chain(guarded, *writes))
        both = tmux_words(*end, *writes)
        guarded = ["if-shell", "-F", "-t", pane, state_still(read), both, tmux_words(moved)]
        written = MOVED not in self.run(*guarded)
        return written, written

    def capture(self, pane: str, lines: int = 0) -> str:
        """The visible screen of `pane` (plus `lines` of history), joined wrapped lines."""
        return self.run(*Command.capture(pane, history=lines))

    def load_buffer(self, name: str, text: str) -> None:
        """Put `text` in a named buffer through stdin (no argv parsing: a leading `-`
        or trailing `;` arrives intact, and size is not limited by argv)."""
        self.run(*Command.load_buffer(name), input=text)

    def paste_buffer(self, name: str, pane: str, bracketed: bool = True) -> None:
        self.run(*Command.paste_buffer(name, pane, bracketed=bracketed))

    def send_keys(self, pane: str, *keys: str) -> None:
        self.run(*Command.send_keys(pane, *keys))

    def display_message_to_clients(self, text: str) -> None:
        """Show `text` on every attached client's status line, literally (`Command.message`)."""
        clients = [c for c in self.run("list-clients", "-F", "#{client_name}").splitlines() if c]
        for client in clients:
            self.run(*Command.message(client, text))
