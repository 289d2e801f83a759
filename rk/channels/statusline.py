"""`rk status --format tmux|json`: the glance (`rk.core.channels.glance`) from cached state.

A status bar runs this every `status-interval`, so `rk.__main__` dispatches it
before typer is imported, and it reads only: the ticker's pid file (is it up:
pid and start time, as `rk.engine.ticker` records them), `ticker.status` (the next due
instant, paused servers, muted entries, servers whose entries file the tick could not
read, written by every tick), one
`list-panes` per live tmux server (the state options the hooks write) and, when the
ticker keeps one, `fleet.status` (other hosts' agents, `rk.engine.fleet_line`: never
ssh from here). No entries
file, no log, no lock: a redraw never contends with a tick. Target: < 20 ms
(bench/statusline.py), so it imports what the agent hook imports and no more:
no `subprocess` (tmux is spawned with `os.posix_spawnp`, reaped with the hook's
deadline), no `json` package for reading (the hook's C-scanner decode), no
`socket` (`_socket` probes).
"""

from __future__ import annotations

import os
import sys
import time
from _collections_abc import Mapping

from rk.agent.hook_event import BAD as _BAD
from rk.agent.hook_event import decode as _decode
from rk.agent.hook_tmux import tmux_output
from rk.core.channels import fleet_glance
from rk.core.channels.glance import Glance, PaneGlance, parse_pane
from rk.core.environ import SOURCE_OPTION, STATE_OPTION, ClockError, fixed_now, state_dir

FORMATS = ("tmux", "json")
#: `list-panes` of one server; a server that hangs costs at most this.
TMUX_TIMEOUT = 1.0
PANE_FORMAT = f"#{{{STATE_OPTION}}}\t#{{{SOURCE_OPTION}}}"
USAGE = "usage: rk status --format tmux|json"


def _read_json(path: str) -> dict[str, object] | None:
    """A small JSON file, never through a symlink; None if absent or unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            data = _decode(os.read(fd, 64 * 1024))
        finally:
            os.close(fd)
    except OSError:
        return None
    return data if isinstance(data, dict) and data is not _BAD else None


def _alive(pid_record: dict[str, object] | None) -> bool:
    """The ticker's pid names a live process started when the record says (not a reused pid)."""
    if not pid_record or not isinstance(pid_record.get("pid"), int):
        return False
    try:
        with open(f"/proc/{pid_record['pid']}/stat") as f:
            stat = f.read()
    except OSError:
        return False
    after = stat.rsplit(")", 1)[-1].split()
    if not after or after[0] in ("Z", "X"):
        return False
    started = after[19] if len(after) > 19 else ""
    return not pid_record.get("start_time") or started == str(pid_record["start_time"])


def _sockets(directory: str, environ: Mapping[str, str]) -> list[str]:
    """Socket paths of the servers rk serves (an entries file each) and the caller's own ($TMUX)."""
    base = os.path.join(environ.get("TMUX_TMPDIR") or "/tmp", f"tmux-{os.getuid()}")
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        names = []
    paths = [os.path.join(base, n[:-5]) for n in names if n.endswith(".yaml") and not n.endswith(".cursor.yaml")]
    own = _own_socket(environ)
    if own and own not in paths:
        paths.append(own)
    return paths


def _own_socket(environ: Mapping[str, str]) -> str:
    """The socket of `$TMUX`: the server whose status bar runs this (live: it is asking)."""
    return environ.get("TMUX", "").rsplit(",", 2)[0]


def _live(path: str) -> bool:
    """A bare connect(): a dead socket costs no tmux process (and tmux never resurrects it)."""
    import _socket

    probe = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    probe.settimeout(0.2)
    try:
        probe.connect(path)
        return True
    except OSError:
        return False
    finally:
        probe.close()


def _list_panes(path: str, environ: Mapping[str, str]) -> str:
    """`tmux -S path list-panes -a -F …`'s output, "" on any failure; at most TMUX_TIMEOUT s."""
    return tmux_output(path, ["list-panes", "-a", "-F", PANE_FORMAT], environ, TMUX_TIMEOUT)


def _panes(path: str, environ: Mapping[str, str]) -> list[PaneGlance]:
    out = []
    for row in _list_panes(path, environ).splitlines():
        state, _, source = row.partition("\t")
        pane = parse_pane(state, source)
        if pane is not None and (not pane.pid or os.path.exists(f"/proc/{pane.pid}")):
            out.append(pane)  # a dead agent's last state is no one waiting
    return out


def _ticker(directory: str) -> tuple[bool, dict[str, object]]:
    """Whether the ticker is up, and its `ticker.status` ({} when it is not)."""
    alive = _alive(_read_json(os.path.join(directory, "ticker.pid")))
    return alive, (_read_json(os.path.join(directory, "ticker.status")) if alive else None) or {}


def glance(environ: Mapping[str, str], ticker: tuple[bool, dict[str, object]] | None = None) -> Glance:
    directory = state_dir(environ)
    fixed = fixed_now(environ)
    now = int(time.time()) if fixed is None else fixed
    alive, status = ticker if ticker is not None else _ticker(directory)
    own = _own_socket(environ)  # probed by its `list-panes` alone: a stale $TMUX just lists nothing
    panes = [p for path in _sockets(directory, environ) if path == own or _live(path) for p in _panes(path, environ)]
    due = status.get("next_due")
    return Glance.of(
        ticker=alive,
        next_due=due if isinstance(due, int) else None,
        now=now,
        panes=panes,
        paused=_count(status.get("paused")),
        muted=_count(status.get("muted")),
        dormant=_count(status.get("dormant")),
    )


def _count(value: object) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


#: Before the glance, in red: this many servers' entries files the tick cannot read
#: (none of their entries fires until each is repaired; `rk doctor` says how).
UNREADABLE = "rk⚠{}"


def fleet(directory: str, now: int) -> list[fleet_glance.HostGlance]:
    """Other hosts as the ticker last saw them ([] when it keeps no record: off)."""
    return fleet_glance.hosts_of(_read_json(os.path.join(directory, fleet_glance.RECORD)), now)


def render(fmt: str, environ: Mapping[str, str]) -> str:
    directory = state_dir(environ)
    ticker = _ticker(directory)
    seen = glance(environ, ticker)
    hosts = fleet(directory, seen.now)
    unreadable = _count(ticker[1].get("unreadable"))
    clock = time.strftime("%H:%M", time.localtime(seen.limited_until)) if seen.limited_until else ""
    if fmt == "json":
        import json  # a JSON bar pays for the package; tmux's redraw does not

        record = seen.to_dict(clock)
        if unreadable:
            warning = UNREADABLE.format(unreadable)
            record["text"] = record["tooltip"] = f"{warning} {record['text']}".strip()
            record["class"] = "unreadable"
        record["unreadable"] = unreadable
        if hosts:
            record["text"] = record["tooltip"] = f"{record['text']} {fleet_glance.plain(hosts)}".strip()
            record["hosts"] = fleet_glance.to_list(hosts)
        return json.dumps(record, ensure_ascii=False)
    text = seen.tmux(clock)
    if unreadable:
        text = f"#[fg=red]{UNREADABLE.format(unreadable)}#[default] {text}".rstrip()
    return f"{text} {fleet_glance.tmux(hosts)}".strip() if hosts else text


def format_of(args: list[str]) -> str | None:
    """The format when `args` are exactly `status --format X` (or `--format=X`), else None."""
    if len(args) == 3 and args[:2] == ["status", "--format"]:
        return args[2]
    if len(args) == 2 and args[0] == "status" and args[1].startswith("--format="):
        return args[1].partition("=")[2]
    return None


def main(fmt: str, environ: Mapping[str, str] | None = None) -> int:
    """Print the segment; exit 2 for an unknown format, 0 otherwise (a bar shows what it gets)."""
    if fmt not in FORMATS:
        print(f"rk status: --format must be tmux or json, not {fmt[:20]!r}\n{USAGE}", file=sys.stderr)
        return 2
    try:
        print(render(fmt, os.environ if environ is None else environ))
    except ClockError as exc:
        print(f"rk status: {exc}", file=sys.stderr)
        return 2
    return 0
