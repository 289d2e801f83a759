"""The `Runtime`: everything a tick touches outside the pure core, in one place tests can replace.

A fire ends in one of three acts on the world: typing the prompt (`Deliverer`),
respawning the agent (`Respawner`), telling the people at the server
(`Messenger`). Each is a typed call here, so a test's stand-in is checked
against the real one's shape.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rk.act import absent
from rk.core.settings import Settings
from rk.host import clock
from rk.store import delivery_log as logfile
from rk.tmux.server import Server

if TYPE_CHECKING:
    from rk.act.deliver import DeliveryResult, Guard
    from rk.act.intents import Intent
    from rk.store.transcripts import Transcripts


class Deliverer(Protocol):
    """Types `payload` into `pane` and submits it, verified (`rk.act.deliver.deliver`).
    `guard` has the last look before typing and may refuse; `intent` is the journal
    the delivery keeps, so a crash in between is resolved by the next tick."""

    def __call__(
        self, server: Server, pane: str, payload: str, /, *, guard: Guard | None = None, intent: Intent | None = None
    ) -> DeliveryResult: ...


class Respawner(Protocol):
    """Runs an entry's `respawn` argv for an absent target (`rk.act.absent.run_respawn`)."""

    def __call__(
        self, argv: Sequence[str], server: str, timeout: float, env: Mapping[str, str] | None = None, /
    ) -> absent.RespawnResult: ...


class Messenger(Protocol):
    """Tells the people at a server (`rk.act.absent.notify`); an error text or ""."""

    def __call__(self, server: Server, title: str, body: str, env: Mapping[str, str] | None = None, /) -> str: ...


def deliver_verified(
    server: Server, pane: str, payload: str, /, *, guard: Guard | None = None, intent: Intent | None = None
) -> DeliveryResult:
    """`rk.act.deliver.deliver`, imported on the first fire (most commands never type)."""
    from rk.act.deliver import deliver

    return deliver(server, pane, payload, guard=guard, intent=intent)


@dataclass
class Runtime:
    """Everything a tick touches outside the pure core. Tests replace parts of it."""

    state_dir: Path
    settings: Settings
    environ: Mapping[str, str]
    zone: tzinfo
    clock: Callable[[], int]
    deliver: Deliverer = deliver_verified
    respawn: Respawner = absent.run_respawn
    notify: Messenger = absent.notify
    #: keep parsed files between ticks (the long-running ticker)
    cache_entries: bool = False
    log_cache: logfile.LiveLogCache | None = None
    #: per server, panes whose screen no layout read, and the state they had (the ticker)
    unreadable: dict[str, dict[str, str]] | None = None
    #: the notice events the ticker's channels hear (`rk.channels.notify`): those need no tmux message
    heard: frozenset[str] = frozenset()
    #: the agents' session records read so far, by offset (the ticker; `rk.store.transcripts`)
    transcripts: Transcripts | None = None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None, **overrides: object) -> Runtime:
        from rk.store.config import load_settings, state_dir

        env = dict(os.environ if environ is None else environ)
        runtime = cls(
            state_dir=state_dir(env),
            settings=load_settings(env),
            environ=env,
            zone=clock.local_zone(env),
            clock=lambda: clock.now(env),
        )
        for key, value in overrides.items():
            setattr(runtime, key, value)
        return runtime

    def server(self, slug: str) -> Server:
        return Server(name=slug, env=self.environ)
