"""`rk events -f --host NAME|all`: another host's events (or every host's and this
one's), live, each line labelled with its host.

`--host` is taken out of the command line before typer sees it (`rk.cli.fleet`), so
the rest of `rk events`'s words are read here: `-f`, `--since`, `--pane`/`-t`,
`--json`, `-L`/`--server` (on another host: its tmux server of that name; without
it, its `default`). Each host streams over its own link (`rk.channels.host_events`),
this host's events come from its own files as `rk events -f` reads them, and lines
are printed as they arrive: `HOST  TIME PANE …` for people, with `--json` one object
a line carrying `host`. A dropped link is said on stderr (and when it is back); it
is tried again with a growing pause. Ctrl-C ends it, exit 0, as `rk events -f`.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rk.cli.environment import CliError, Environment, ExitStatus, usage
from rk.core.environ import is_pane_id
from rk.core.log.events import LOG, MAX_PANES, STATE, Event

if TYPE_CHECKING:
    from datetime import tzinfo

    from rk.channels.events_follow import EventsQuery
    from rk.channels.host_events import Item
    from rk.core.fleet.hosts import Host

LOCAL = "local"
#: The options `rk events -f --host` reads, with whether each takes a value.
OPTIONS = {"-f": False, "--follow": False, "--json": False, "--since": True, "--pane": True, "-t": True}
SERVER_OPTIONS = ("-L", "--server")


@dataclass(frozen=True)
class FollowArgs:
    since: str | None = None
    panes: tuple[str, ...] = ()
    json: bool = False
    server: str = ""  #: -L as given ("" = not given)


def follows(argv: Sequence[str]) -> bool:
    """Whether an `rk events` command line asks to follow (`-f`, `--follow`)."""
    end = list(argv).index("--") if "--" in argv else len(argv)
    return any(word in ("-f", "--follow") for word in argv[:end])


def parse(argv: Sequence[str]) -> FollowArgs:
    """The words of `rk events -f` (without `--host`); a usage error for any other."""
    since, panes, as_json, server = None, [], False, ""
    words = list(argv)
    i = 0
    while i < len(words):
        word = words[i]
        name, has_value, value = word.partition("=")
        i += 1
        if word == "events":
            continue
        takes = OPTIONS.get(name) if name in OPTIONS else (True if name in SERVER_OPTIONS else None)
        if takes is None or (has_value and not takes):
            raise usage(f"events -f --host: no option {word[:40]!r} (it reads -f, --since, --pane, --json, -L)")
        if takes and not has_value:
            if i >= len(words):
                raise usage(f"events -f --host: {name} needs a value")
            value, i = words[i], i + 1
        if name == "--json":
            as_json = True
        elif name == "--since":
            since = value
        elif name in ("--pane", "-t"):
            panes.append(value)
        elif name in SERVER_OPTIONS:
            server = value
    return FollowArgs(since, tuple(panes), as_json, server)


def event_of(d: dict[str, object]) -> Event:
    """An event as another host's `Event.to_dict` gave it (`rk.channels.host_events.valid`)."""

    def text(name: str) -> str:
        value = d.get(name)
        return value if isinstance(value, str) else ""

    ts = d["ts"]
    assert isinstance(ts, int)
    if d.get("kind") == LOG:
        return Event(ts, LOG, text("pane"), entry=text("entry"), reason=text("reason"), outcome=text("outcome"))
    return Event(
        ts,
        STATE,
        text("pane"),
        text("from"),
        text("to"),
        text("turn_end"),
        text("source"),
        text("agent"),
        by=text("by"),
    )


def run(env: Environment, name: str, argv: Sequence[str]) -> int:
    """Follow the events of host `name` (or `all`: every host and this one)."""
    from rk.channels.events_follow import EventsQuery
    from rk.cli.flags import since_instant
    from rk.core.fleet.hosts import HostError, check_name
    from rk.store.config import ConfigError, check_slug
    from rk.store.hosts import load_hosts

    args = parse(argv)
    env.json = args.json
    if args.server:
        try:
            check_slug(args.server)
        except ConfigError as exc:
            raise usage(str(exc)) from None
        env.server_flag = args.server
    if len(args.panes) > MAX_PANES:
        raise usage(f"events: {len(args.panes):,} --pane given; at most {MAX_PANES}")
    bad = next((p for p in args.panes if not is_pane_id(p)), None)
    if bad is not None:
        raise usage(f"events: bad pane {bad[:40]!r}: use a pane id like %3")
    since = since_instant(args.since, env.now()) if args.since is not None else None
    hosts, problems = load_hosts(env.environ)
    for problem in problems:
        env.err(f"rk: {problem}")
    if name != "all":
        try:
            check_name(name)
        except HostError as exc:
            raise usage(str(exc)) from None
        if name not in hosts:
            raise CliError(f"no host {name!r}: rk host list shows the hosts", ExitStatus.OPERATIONAL)
    targets = list(hosts.values()) if name == "all" else [hosts[name]]
    query = EventsQuery(args.server or "default", since, frozenset(args.panes))
    return _follow(env, targets, query, name == "all")


def _follow(env: Environment, targets: list[Host], query: EventsQuery, local: bool) -> int:
    from rk.channels.host_events import DOWN, EVENT, GONE, UP, HostEvents

    items: queue.Queue[Item] = queue.Queue()
    width = max([len(h.name) for h in targets] + ([len(LOCAL)] if local else []))
    state, zone = str(env.state_dir()), env.zone()
    links = [HostEvents(h, query, state, env.environ, items.put) for h in targets]
    if local:
        threading.Thread(target=_local, args=(env, query, items), name="events-local", daemon=True).start()
    for link in links:
        link.start()
    left = len(links) + local
    try:
        while left:
            try:
                item = items.get(timeout=0.5)
            except queue.Empty:
                continue
            if item.kind == EVENT and item.event is not None:
                _show(env, item.host, item.event, width, zone)
            elif item.kind == DOWN:
                env.err(f"rk: events: {item.host}: link lost ({item.text}); trying again in {item.pause:g} s")
            elif item.kind == UP:
                env.err(f"rk: events: {item.host}: following again")
            elif item.kind == GONE:
                env.err(f"rk: events: {item.host}: {item.text}")
                left -= 1
    except KeyboardInterrupt:
        return 0
    finally:
        for link in links:
            link.stop()
    return 1  # every host left


def _show(env: Environment, host: str, event: dict[str, object], width: int, zone: tzinfo) -> None:
    from rk.cli.events import line_of

    if env.json:
        env.out(json.dumps({"host": host, **event}, ensure_ascii=False))
    else:
        env.out(f"{host:<{width}} {line_of(event_of(event), zone)}")
    env.stdout.flush()


def _local(env: Environment, query: EventsQuery, items: queue.Queue[Item]) -> None:
    """This host's events, as `rk events -f` reads them, handed on as `local`'s."""
    from rk.channels import event_stream
    from rk.channels.host_events import EVENT, GONE, Item

    try:
        files = env.files()
        snap = event_stream.read(files.dir, files.slug, files.log, query.since, query.panes)
        for event in snap.events:
            items.put(Item(LOCAL, EVENT, event.to_dict()))
        for event in event_stream.follow(files.dir, files.slug, files.log, snap, query.panes):
            items.put(Item(LOCAL, EVENT, event.to_dict()))
    except (OSError, CliError) as exc:
        items.put(Item(LOCAL, GONE, text=f"cannot read its events: {exc}"))
