"""`rk agent await`: block until target panes reach a condition, waking on the hook.

The decision is `rk.core.channels.awaiting`'s; this module only gathers what it decides
on. It binds a datagram socket in `<state dir>/await/`, which every state write
pings (`rk.store.state_journal.wake`), and sleeps in one `select` on it and on a pidfd of
each target pane's process (its exit is the pane closing): no polling while
nothing happens. On each wake it reads the state journal since it started (so
an `active` that came and went between two looks still counts for
`--after-active`), then one tmux listing. A slow look every `RECHECK` seconds
covers what signals nothing (a pane whose process could not be watched).

It also selects on a pidfd of the tmux server, so a server that dies ends the
wait at once (`gone`, like a pane that closed: the decision's), and on the
cancel switch of the run it serves (`rk.host.cancel`): `rk mcp` sets it when its
client goes, and the wait returns `cancelled`.

A turn end no hook reports (an Esc in Claude Code) shows only on the screen. A
running ticker that serves the server watches its active panes (`rk.engine.watch`);
when none does, the wait watches its own targets while one is `active`: the same
step (`rk.tmux.watch`) at the same cadence, so it returns within about a second.
"""

from __future__ import annotations

import os
import secrets
import select
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from rk.channels.statusline import _ticker as ticker_of
from rk.core.channels.awaiting import (
    CLOSED,
    SERVER_GONE,
    PaneView,
    Progress,
    Reached,
    Spec,
    departures,
    gone,
    observe,
    outcome,
    start,
)
from rk.core.environ import AWAIT_DIR, ROLE_OPTION, STATE_OPTION, TURN_END_OPTION, state_dir
from rk.core.errors import RkError
from rk.core.pane.identity import ServerIdentity
from rk.core.pane.state import AgentState
from rk.core.pane.turn import parse_turn_end
from rk.core.pane.watch import LOOK_EVERY
from rk.host import cancel, private
from rk.host import clock as clocks
from rk.host.nudge import Listener
from rk.store import state_journal as statejournal
from rk.tmux.server import Server, TmuxError, format_number
from rk.tmux.watch import Watch

RECHECK = 10.0  #: seconds between looks when nothing wakes the wait
FIELDS = (
    "pane_id",
    "pane_pid",
    "pane_dead",
    "session_name",
    "start_time",
    "pid",
    ROLE_OPTION,
    STATE_OPTION,
    TURN_END_OPTION,
)
#: Why a pane tmux still lists (remain-on-exit) is gone.
EXITED = "the pane's process exited"


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
        pid = format_number(row["pane_pid"])
        where = ServerIdentity(format_number(row["start_time"]), format_number(row["pid"]))
        if row["pane_dead"] == "1":  # its agent is gone
            view = gone(row["pane_id"], EXITED)
        else:
            view = PaneView(row["pane_id"], True, state, since, end, end_at, pid, where)
        out[row["pane_id"]] = Listed(view, pid, row["session_name"], row[ROLE_OPTION])
    return out


def targets(panes: dict[str, Listed], pane: str = "", role: str = "", session: str = "") -> list[str]:
    """The pane ids chosen by --pane, --role and --session (all given must match)."""
    return [
        p
        for p, listed in panes.items()
        if (not pane or p == pane) and (not role or listed.role == role) and (not session or listed.session == session)
    ]


def views_of(panes: dict[str, Listed], wanted: tuple[str, ...]) -> list[PaneView]:
    """A view per target: as listed, or gone (with the server when nothing is listed)."""
    why = CLOSED if panes else SERVER_GONE
    return [panes[p].view if p in panes else gone(p, why) for p in wanted]


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
    directory = private.private_dir(os.path.join(state_dir(env), AWAIT_DIR))  # never a planted link
    return Listener(os.path.join(directory, f"{os.getpid()}-{secrets.token_hex(4)}.sock"))


#: The pause before the next look when a process just listed has already exited.
SOON = 0.05


def _pidfds(panes: dict[str, Listed], wanted: tuple[str, ...]) -> tuple[list[int], bool]:
    """A pidfd per target pane's process and one for the tmux server (readable when it
    exits), and whether one had exited already (between the listing and now: look again)."""
    pids = {panes[p].pid for p in wanted if p in panes}
    pids |= {listed.view.server.pid for listed in panes.values()}
    fds, exited = [], False
    for pid in sorted(pids):
        if pid > 1:
            try:
                fds.append(os.pidfd_open(pid))
            except ProcessLookupError:
                exited = True
            except (AttributeError, OSError):
                pass
    return fds, exited


def ticker_watches(env: Mapping[str, str], slug: str) -> bool:
    """Whether a running ticker serves server `slug` (its pid file names a live process
    and its last tick's status names the server): it watches that server's active panes."""
    alive, status = ticker_of(state_dir(env))
    served = status.get("servers")
    return alive and isinstance(served, list) and slug in served


def looks_itself(env: Mapping[str, str], slug: str, progress: Progress, views: list[PaneView]) -> bool:
    """Whether the wait watches its targets' screens itself now: one it still waits on is
    `active`, and no running ticker watches the server."""
    busy = any(v.state == AgentState.ACTIVE for v in views if v.present and v.pane not in progress.reached)
    return busy and not ticker_watches(env, slug)


@dataclass(frozen=True)
class AwaitResult:
    """How the wait ended: the panes that ended it, or a timeout or a cancel (none)."""

    reached: tuple[Reached, ...]
    timed_out: bool
    waited: float
    cancelled: bool = False

    @property
    def condition(self) -> str:
        return "cancelled" if self.cancelled else "timeout" if self.timed_out else self.reached[0].condition

    def answered(self, spec: Spec) -> bool:
        """Whether the wait ended with a condition it asked for (else exit 1)."""
        return bool(self.reached) and self.reached[0].condition in spec.until


def await_panes(
    server: Server,
    wanted: list[str],
    spec: Spec,
    timeout: float | None = None,
    env: Mapping[str, str] | None = None,
    clock: Callable[[], float] = time.monotonic,
    on_ready: Callable[[], None] | None = None,
    first: dict[str, Listed] | None = None,
) -> AwaitResult:
    """Wait until `spec` is met for the panes `wanted` (ids on `server`), or `timeout`
    seconds pass (None: no limit), or a target is gone, or the run's cancel switch is
    set. `first`: the listing the targets were chosen from (it fixes their identity).
    `on_ready` is called once the wake is in place."""
    env = os.environ if env is None else env
    begun = clock()
    wake = _wake(env)
    switch = cancel.CURRENT.get()
    directory, slug = state_dir(env), server.path.name
    tail = statejournal.Tail(directory, slug, statejournal.mark(statejournal.journal_path(directory, slug)))
    progress: Progress = start(wanted)
    if first is not None:
        progress = observe(spec, progress, views_of(first, progress.targets))
    fds: list[int] = []
    watch = Watch(server, clocks.local_zone(env), only=progress.targets)
    try:
        if on_ready is not None:
            on_ready()
        while True:
            if switch is not None and switch.is_set():
                return AwaitResult((), False, clock() - begun, cancelled=True)
            panes = listing(server)
            views = views_of(panes, progress.targets)
            progress = observe(spec, progress, departures(progress, views))
            progress = observe(spec, progress, journal_views(tail.poll()))
            progress = observe(spec, progress, views)
            done = outcome(spec, progress)
            if done is not None:
                return AwaitResult(tuple(done), False, clock() - begun)
            left = None if timeout is None else timeout - (clock() - begun)
            if left is not None and left <= 0:
                return AwaitResult((), True, clock() - begun)
            looking = looks_itself(env, slug, progress, views)
            if looking and watch.step(clocks.now(env)).corrected:
                continue  # a turn's end written (and journalled): read it at once
            for fd in fds:
                os.close(fd)
            fds, exited = _pidfds(panes, tuple(p for p in progress.targets if p not in progress.reached))
            pause = min(SOON if exited else LOOK_EVERY if looking else RECHECK, RECHECK if left is None else left)
            extra = [] if switch is None else [switch.fileno()]
            select.select([wake.fileno(), *fds, *extra], [], [], pause)
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
    return await_panes(server, wanted, spec, timeout, env, on_ready=on_ready, first=panes)
