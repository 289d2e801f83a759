"""`rk agent await`: block until target panes reach a condition, waking on the hook.

The decision is `rk.core.channels.awaiting`'s; this module only gathers what it decides
on. It binds a datagram socket in `<state dir>/await/`, which every state write
pings (`rk.store.state_journal.wake`), and sleeps in one `select` on it and on a pidfd of
each target pane's process (its exit is the pane closing): no polling while
nothing happens. On each wake it reads the state journal since it started (so
an `active` that came and went between two looks still counts for
`--after-active`), then one tmux listing. A slow look every `RECHECK` seconds
covers what signals nothing (a pane whose process could not be watched).
"""

from __future__ import annotations

import os
import secrets
import select
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from rk.core.channels.awaiting import PaneView, Progress, Reached, Spec, observe, outcome, start
from rk.core.environ import AWAIT_DIR, ROLE_OPTION, STATE_OPTION, TURN_END_OPTION, state_dir
from rk.core.errors import RkError
from rk.core.pane.turn import parse_turn_end
from rk.host.nudge import Listener
from rk.store import state_journal as statejournal
from rk.tmux.server import Server, TmuxError, format_number

RECHECK = 10.0  #: seconds between looks when nothing wakes the wait
FIELDS = ("pane_id", "pane_pid", "pane_dead", "session_name", ROLE_OPTION, STATE_OPTION, TURN_END_OPTION)


class AwaitError(RkError):
    """The wait cannot start (no such pane, no server); the message is for the user."""


@dataclass(frozen=True)
class Listed:
    """One pane of the listing: what targets are chosen by, and its view."""

    view: PaneView
    pid: int
    session: str
    role: str


def parse_state(value: str) -> tuple[str, int]:
    """(state, epoch) of an `@rk_pane_agent_state` value; ("", 0) when unset."""
    parts = value.strip().split(":")
    if len(parts) < 2 or not parts[0]:
        return "", 0
    return parts[0], format_number(parts[1])


def listing(server: Server) -> dict[str, Listed]:
    """Every pane of the server now, by id. An empty dict when the server is gone."""
    if not server.is_live():
        return {}
    try:
        rows = server.listing("list-panes", FIELDS)
    except TmuxError:
        if not server.is_live():
            return {}
        raise
    out = {}
    for row in rows:
        state, since = parse_state(row[STATE_OPTION])
        end, end_at = parse_turn_end(row[TURN_END_OPTION])
        view = PaneView(row["pane_id"], row["pane_dead"] != "1", state, since, end, end_at)  # dead: its agent is gone
        out[row["pane_id"]] = Listed(view, format_number(row["pane_pid"]), row["session_name"], row[ROLE_OPTION])
    return out


def targets(panes: dict[str, Listed], pane: str = "", role: str = "", session: str = "") -> list[str]:
    """The pane ids chosen by --pane, --role and --session (all given must match)."""
    return [
        p
        for p, listed in panes.items()
        if (not pane or p == pane) and (not role or listed.role == role) and (not session or listed.session == session)
    ]


def views_of(panes: dict[str, Listed], wanted: tuple[str, ...]) -> list[PaneView]:
    """A view per target: as listed, or gone."""
    return [panes[p].view if p in panes else PaneView(p, present=False) for p in wanted]


def journal_views(lines: list[dict[str, object]]) -> list[PaneView]:
    """State changes from the journal as views (in order)."""
    out = []
    for line in lines:
        ts = int(str(line["ts"]))
        end = str(line["end"])
        out.append(PaneView(str(line["pane"]), True, str(line["to"]), ts, end, ts if end else 0))
    return out


def _wake(env: Mapping[str, str]) -> Listener:
    """The socket the state writers ping (0600 from its bind; removed on close)."""
    directory = os.path.join(state_dir(env), AWAIT_DIR)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    return Listener(os.path.join(directory, f"{os.getpid()}-{secrets.token_hex(4)}.sock"))


def _pidfds(panes: dict[str, Listed], wanted: tuple[str, ...]) -> list[int]:
    fds = []
    for p in wanted:
        listed = panes.get(p)
        if listed and listed.pid > 1:
            try:
                fds.append(os.pidfd_open(listed.pid))
            except (AttributeError, OSError):
                pass
    return fds


@dataclass(frozen=True)
class AwaitResult:
    """How the wait ended: the panes that ended it, or a timeout (none)."""

    reached: tuple[Reached, ...]
    timed_out: bool
    waited: float


def await_panes(
    server: Server,
    wanted: list[str],
    spec: Spec,
    timeout: float | None = None,
    env: Mapping[str, str] | None = None,
    clock: Callable[[], float] = time.monotonic,
    on_ready: Callable[[], None] | None = None,
) -> AwaitResult:
    """Wait until `spec` is met for the panes `wanted` (ids on `server`), or `timeout`
    seconds pass (None: no limit). `on_ready` is called once the wake is in place."""
    env = os.environ if env is None else env
    begun = clock()
    wake = _wake(env)
    directory, slug = state_dir(env), server.path.name
    tail = statejournal.Tail(directory, slug, statejournal.mark(statejournal.journal_path(directory, slug)))
    progress: Progress = start(wanted)
    fds: list[int] = []
    try:
        if on_ready is not None:
            on_ready()
        while True:
            progress = observe(spec, progress, journal_views(tail.poll()))
            panes = listing(server)
            progress = observe(spec, progress, views_of(panes, progress.targets))
            done = outcome(spec, progress)
            if done is not None:
                return AwaitResult(tuple(done), False, clock() - begun)
            left = None if timeout is None else timeout - (clock() - begun)
            if left is not None and left <= 0:
                return AwaitResult((), True, clock() - begun)
            for fd in fds:
                os.close(fd)
            fds = _pidfds(panes, tuple(p for p in progress.targets if p not in progress.reached))
            pause = RECHECK if left is None else min(RECHECK, left)
            select.select([wake.fileno(), *fds], [], [], pause)
            wake.drain()
    finally:
        for fd in fds:
            os.close(fd)
        wake.close()


def run_await(
    server: Server,
    spec: Spec,
    pane: str = "",
    role: str = "",
    session: str = "",
    timeout: float | None = None,
    env: Mapping[str, str] | None = None,
    on_ready: Callable[[], None] | None = None,
) -> AwaitResult:
    """Choose the targets (--pane, --role, --session) and wait on them. A named pane
    that is not there is `gone` at once when gone is awaited, else an AwaitError;
    so is a role or session that matches no pane."""
    try:
        panes = listing(server)
    except TmuxError as exc:
        raise AwaitError(f"server {server.path.name}: {exc}") from None
    if not panes and not server.is_live():
        raise AwaitError(f"no tmux server {server.path.name}")
    wanted = targets(panes, pane, role, session)
    if not wanted:
        if pane and not (role or session) and "gone" in spec.until:
            return AwaitResult((Reached("gone", PaneView(pane, present=False)),), False, 0.0)
        what = " ".join(f"{k} {v}" for k, v in (("pane", pane), ("role", role), ("session", session)) if v)
        raise AwaitError(f"no pane matches {what!r} on server {server.path.name}")
    return await_panes(server, wanted, spec, timeout, env, on_ready=on_ready)
