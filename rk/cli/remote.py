"""`rk remote`: the far end of a command another host's rk runs here over ssh.

The ssh command line carries only `rk remote`; the request comes on stdin as
one JSON object, `{"argv": [...]}`, so no value a user or agent chose ever
meets a shell. The request runs as this CLI in-process (`rk.cli.root.main`), as
if typed here, and the answer goes back as one JSON object:
`{"status": int, "stdout": str, "stderr": str, "version": str}`.

A change carries a request id (`"id"`): its answer is kept (`<state>/remote/<id>.json`,
a day), and the same id sent again (the client retrying after a dropped
connection) gets that answer back instead of a second run: a change is applied
once. A lock per id makes a retry that arrives while the first run still goes
on wait for it; the first run ignores the hang-up of its lost connection and
finishes.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rk.cli.environment import environment, usage
from rk.core.errors import RkError

if TYPE_CHECKING:
    import typer

    from rk.channels.events_follow import EventsQuery

#: Bytes of a request read at most.
MAX_REQUEST = 1 << 20
#: Words of a request's argv, and characters of each.
MAX_WORDS = 256
MAX_WORD_CHARS = 16_384
REQUEST_ID = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
#: Where kept answers live, under the state dir; how long (s); how long a retry waits for the first run.
REMOTE_DIR = "remote"
KEEP = 86400
LOCK_WAIT = 120.0


@dataclass(frozen=True)
class Request:
    """A command to run (`argv`, with its request id `rid` when it changes something), or
    a journal to follow (`follow`: the server's slug, from the mark `start`)."""

    argv: list[str]
    rid: str = ""
    tables: bool = False  #: hand over the view's tables, not drawn (`rk.cli.table.captured_tables`)
    follow: str = ""
    start: tuple[int, int, int] = (0, 0, 0)
    events: EventsQuery | None = None  #: events to stream (`rk.channels.events_follow`)


def read_request(data: bytes) -> Request:
    """The request (a usage error naming what is wrong)."""
    if len(data) > MAX_REQUEST:
        raise usage(f"rk remote: a request of {len(data):,} bytes; at most {MAX_REQUEST:,}")
    try:
        request = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise usage("rk remote: the request is not one JSON object") from None
    if isinstance(request, dict) and request.get("follow") == "events":
        from rk.channels.events_follow import query_of

        return Request([], events=query_of(request))
    if isinstance(request, dict) and "follow" in request:
        return _follow_request(request)
    argv = request.get("argv") if isinstance(request, dict) else None
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise usage('rk remote: the request needs "argv", a list of strings')
    if len(argv) > MAX_WORDS or any(len(a) > MAX_WORD_CHARS for a in argv):
        raise usage(f"rk remote: at most {MAX_WORDS} words of {MAX_WORD_CHARS:,} characters")
    if argv[:1] == ["remote"]:
        raise usage("rk remote: a request cannot be another rk remote")
    rid = request.get("id", "")
    if not isinstance(rid, str) or (rid and not REQUEST_ID.match(rid)):
        raise usage("rk remote: a request id is 16 to 64 letters, digits, - and _")
    return Request(argv, rid, tables=request.get("tables") is True)


def _follow_request(request: dict[str, object]) -> Request:
    from rk.store.config import ConfigError, check_slug

    slug, start = request.get("server", "default"), request.get("from") or [0, 0, 0]
    if request.get("follow") != "journal" or not isinstance(slug, str):
        raise usage('rk remote: a follow request is {"follow": "journal", "server": SLUG, "from": MARK}')
    try:
        check_slug(slug)
    except ConfigError as exc:
        raise usage(f"rk remote: {exc}") from None
    if not (isinstance(start, list) and len(start) == 3 and all(type(n) is int and 0 <= n < 1 << 63 for n in start)):
        raise usage("rk remote: a follow's from is a mark: [inode, checksum, offset], three whole numbers")
    return Request([], follow=slug, start=(start[0], start[1], start[2]))


def run_request(argv: list[str], tables: bool = False) -> dict[str, object]:
    """Run `rk ARGV` here, in-process, and its answer; with `tables`, the view's tables
    as rows (`{"columns": [[header, priority, shrink_to], ...], "rows": [[cell, ...], ...]}`)."""
    from rk import __version__
    from rk.cli.root import main
    from rk.cli.table import captured_tables

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):  # typer's own echoes too
        if tables:
            with captured_tables() as kept:
                status = main(argv, environ=os.environ, stdout=out, stderr=err)
        else:
            kept, status = [], main(argv, environ=os.environ, stdout=out, stderr=err)
    answer: dict[str, object] = {"status": status, "stdout": out.getvalue(), "stderr": err.getvalue()}
    if tables:
        answer["tables"] = [
            {"columns": [[c.header, c.priority, c.shrink_to] for c in cols], "rows": rows} for cols, rows in kept
        ]
    return {**answer, "version": __version__}


def run_once(state_dir: Path, rid: str, argv: list[str], now: float) -> dict[str, object]:
    """The answer of request `rid`: kept from its first run, else run now and kept."""
    from rk.host import lock, private
    from rk.host.files import atomic_write, read_nofollow

    directory = Path(private.private_dir(state_dir / REMOTE_DIR))
    kept = directory / f"{rid}.json"
    with lock.locked(directory / f"{rid}.lock", retry_every=0.05, retry_for=LOCK_WAIT):
        try:
            return dict(json.loads(read_nofollow(kept, MAX_REQUEST * 4)))
        except FileNotFoundError:
            pass
        except (OSError, ValueError):
            pass  # unreadable: the first run was killed before its answer was whole; run it now
        previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # a lost connection must not stop it half-way
        try:
            answer = run_request(argv)
            atomic_write(kept, json.dumps(answer).encode("utf-8"))
        finally:
            signal.signal(signal.SIGHUP, previous)
    _forget_old(directory, now)
    return answer


def _forget_old(directory: Path, now: float) -> None:
    """Drop the kept answers (and their locks) older than KEEP seconds."""
    for name in os.listdir(directory):
        path = directory / name
        try:
            if now - path.lstat().st_mtime > KEEP:
                path.unlink()
        except OSError:
            pass


def cmd_remote(ctx: typer.Context) -> None:
    """Run one rk command sent by another host's rk over ssh (a JSON request on stdin,
    a JSON answer on stdout). Not for people: `--host` uses it.
    """
    env = environment(ctx)
    from rk import __version__

    try:
        request = read_request(sys.stdin.buffer.read(MAX_REQUEST + 1))
        if request.events is not None:
            from rk.channels.events_follow import serve as serve_events

            serve_events(str(env.state_dir()), request.events, sys.stdout.buffer)
            return
        if request.follow:
            from rk.channels.journal_follow import serve

            serve(str(env.state_dir()), request.follow, request.start, sys.stdout.buffer, env.environ)
            return
        if request.rid:
            answer = run_once(env.state_dir(), request.rid, request.argv, time.time())
        else:
            answer = run_request(request.argv, request.tables)
    except RkError as exc:  # a bad request, or a first run that held its id too long
        answer = {"status": int(exc.status), "stdout": "", "stderr": f"rk: {exc}\n", "version": __version__}
    except OSError as exc:
        answer = {"status": 1, "stdout": "", "stderr": f"rk: remote: {exc}\n", "version": __version__}
    env.stdout.write(json.dumps(answer, ensure_ascii=False) + "\n")  # rk remote itself succeeded
