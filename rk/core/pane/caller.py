"""Who is calling: the pane a process runs in, proven from the process tree.

`TMUX_PANE` and `TMUX` are variables any process can set, so they prove
nothing: a worker that sets `TMUX_PANE` to the operator's pane id would act as
the operator. The kernel's chain of parents cannot be set that way. Walking up
from the process, the first ancestor that is a tmux server is the server the
process runs under, and that server's child on the chain is the process tmux
started in a pane: the pane whose `pane_pid` it is. Its controlling terminal
must also be that pane's tty (a second check, against a pid reused meanwhile).

The variables stay hints: they help find the server's socket, and where they
disagree with what the tree proves they are ignored and the note says so. A
caller that cannot be placed (no tmux server among its ancestors, the server
not reachable, no pane of it running that process) is unknown, never a guess.

Pure: the chain (`rk.host.process.ancestors`) and the server's pane rows
(`rk.tmux.caller`) are given.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from rk.core.environ import is_pane_id
from rk.core.pane.program import Proc

#: The name tmux gives its server process (the kernel's comm on Linux).
SERVER_COMM = "tmux: server"
#: A hint is quoted in a note up to this many characters.
HINT_QUOTE = 40


@dataclass(frozen=True)
class PaneRow:
    """One pane of a server as `list-panes -a` shows it (tty as a device number, 0: unknown)."""

    pane_id: str
    pane_pid: int
    tty: int = 0
    session: str = ""
    role: str = ""  #: its window's role option (`rk.core.environ.ROLE_OPTION`)


@dataclass(frozen=True)
class Hints:
    """What the environment claims: `$TMUX` (`<socket>,<server pid>,<session>`) and `$TMUX_PANE`."""

    socket: str = ""
    server_pid: int = 0
    pane: str = ""
    tmux_set: bool = False
    pane_set: bool = False


@dataclass(frozen=True)
class Placed:
    """Where a caller runs. `proven` only when the process tree showed it; else the
    pane is "" (unknown) and `note` says why. `note` also names a hint that disagreed."""

    pane: str = ""
    socket: str = ""
    server_pid: int = 0
    session: str = ""
    role: str = ""
    proven: bool = False
    note: str = ""
    pane_pid: int = 0  #: the process tmux started in the pane (the chain's child of the server)


def hints(environ: Mapping[str, str]) -> Hints:
    """`$TMUX` and `$TMUX_PANE` as claims (a malformed one is still a claim, never read further)."""
    tmux, pane = environ.get("TMUX", ""), environ.get("TMUX_PANE", "")
    parts = tmux.rsplit(",", 2)  # the path may hold a comma; the pid and session index do not
    socket, pid_text = (parts[0], parts[1]) if len(parts) == 3 else (tmux, "")
    pid = int(pid_text) if pid_text.isascii() and pid_text.isdigit() and len(pid_text) <= 12 else 0
    return Hints(socket=socket, server_pid=pid, pane=pane, tmux_set=bool(tmux), pane_set=bool(pane))


def is_server(proc: Proc) -> bool:
    """Whether `proc` may be a tmux server: its name says so (`tmux: server` on Linux;
    `tmux: server (<socket>)` as the BSDs' `ps` shows its title; where `ps` only shows
    the program, `tmux`). A name is no proof: the server must then answer on a socket
    with this pid, else the caller is unknown."""
    program = proc.argv[0].rpartition("/")[2] if proc.argv else ""
    titled = proc.argv[:2] == ("tmux:", "server")
    return proc.comm == SERVER_COMM or titled or (proc.comm in ("", "tmux") and program == "tmux")


def server_index(chain: Sequence[Proc]) -> int | None:
    """The index in `chain` (the process first) of its first tmux server ancestor; None without one.
    The process itself is never its own server: the walk starts at its parent."""
    for i in range(1, len(chain)):
        if is_server(chain[i]):
            return i
    return None


def _quote(text: str) -> str:
    return repr(text[:HINT_QUOTE] + ("…" if len(text) > HINT_QUOTE else ""))


def hint_notes(claims: Hints, placed: Placed | None) -> list[str]:
    """A line for each hint that disagrees with `placed` (each set hint when nothing was placed)."""
    notes = []
    if claims.pane_set:
        if not is_pane_id(claims.pane):
            notes.append(f"TMUX_PANE={_quote(claims.pane)} is not a pane id (ignored)")
        elif placed is None:
            notes.append(f"TMUX_PANE={_quote(claims.pane)} is not proof (ignored)")
        elif claims.pane != placed.pane:
            notes.append(f"TMUX_PANE={_quote(claims.pane)} disagrees with the process tree (ignored)")
    if claims.tmux_set:
        if placed is None:
            notes.append(f"TMUX={_quote(claims.socket)} is not proof (ignored)")
        elif claims.server_pid != placed.server_pid or claims.socket != placed.socket:
            notes.append(f"TMUX={_quote(claims.socket)} is another server than the process tree's (ignored)")
    return notes


def _unknown(why: str, claims: Hints, socket: str = "", server_pid: int = 0) -> Placed:
    note = "; ".join([why, *hint_notes(claims, None)])
    return Placed(socket=socket, server_pid=server_pid, note=note)


def place(chain: Sequence[Proc], socket: str, rows: Iterable[PaneRow] | None, claims: Hints) -> Placed:
    """The caller's pane, from its process `chain` (itself first, then its parents), the
    `socket` found for the chain's tmux server ("" when none answered with its pid) and
    that server's pane `rows` (None when they could not be read)."""
    index = server_index(chain)
    if index is None:
        return _unknown("not in tmux: no tmux server among the process's ancestors", claims)
    server_pid, child = chain[index].pid, chain[index - 1]
    if not socket or rows is None:
        return _unknown(f"the tmux server (pid {server_pid}) did not answer on any socket", claims, "", server_pid)
    matches = [row for row in rows if row.pane_pid == child.pid]
    if len(matches) != 1:
        return _unknown(f"no pane of the tmux server runs process {child.pid}", claims, socket, server_pid)
    row = matches[0]
    if not row.tty or row.tty != child.tty:
        why = f"process {child.pid}'s terminal is not pane {row.pane_id}'s"
        return _unknown(why, claims, socket, server_pid)
    placed = Placed(row.pane_id, socket, server_pid, row.session, row.role, proven=True, pane_pid=child.pid)
    return replace(placed, note="; ".join(hint_notes(claims, placed)))


#: tmux's own options that take a value (`tmux -L name`, `-S path`, …), as in its getopt string.
_VALUED = frozenset("cfLST")


def socket_of_argv(argv: Sequence[str]) -> tuple[str, str]:
    """(`-S` path, `-L` name) from the command line a tmux server was started with
    (tmux keeps its client's argv, or shows its socket in a title where `ps` reads
    one): ("", "default") when neither was given. Options
    are read as tmux's getopt reads them (`-Lname`, `-L name`, `-uL name`), up to
    the first word that is not one."""
    path, name = "", "default"
    if argv[:2] == ("tmux:", "server") and len(argv) > 2:  # a title: `tmux: server (<socket>)`
        return " ".join(argv[2:]).removeprefix("(").removesuffix(")"), name
    i = 1
    while i < len(argv):
        word = argv[i]
        if word == "--" or not word.startswith("-") or word == "-":
            break
        j = 1
        while j < len(word):
            flag = word[j]
            if flag in _VALUED:
                value = word[j + 1 :] or (argv[i + 1] if i + 1 < len(argv) else "")
                i += 0 if word[j + 1 :] else 1
                if flag == "S":
                    path = value
                elif flag == "L":
                    name = value
                break
            j += 1
        i += 1
    return path, name
