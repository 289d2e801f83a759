"""The ticker's followers of other hosts: one per (host, server) a wake here watches.

At each full tick the ticker asks which other hosts' panes its servers' wake entries
watch (`--wake-scope %3@buildbox`); a follower is started for each one new, and
stopped for each one no longer watched. A follower nudges the ticker for the
servers that watch it when lines arrive, so a wake fires within the second; when
its host is down it retries by itself (`rk.engine.follow`) while everything else
goes on. Hosts come from the config file (`rk host add`); a scope naming a host
not there is logged once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from rk.core.fleet.watch import RemoteScope, ScopeError, parse_scope
from rk.engine.follow import Follower
from rk.host import nudge
from rk.store.config import ServerFiles
from rk.store.entries import load_entries

log = logging.getLogger("rk.fleet")


def watched(state_dir: Path, slugs: Iterable[str]) -> dict[tuple[str, str], set[str]]:
    """(host, server) → the servers here whose entries watch it."""
    out: dict[tuple[str, str], set[str]] = {}
    for slug in slugs:
        try:
            entries = load_entries(ServerFiles(state_dir, slug).entries, cache=True).entries
        except Exception:  # an unreadable file: the tick says so; nothing to follow for it
            continue
        for entry in entries:
            scope = _scope(entry.wake_on.scope if entry.wake_on is not None else "")
            if scope is not None:
                out.setdefault((scope.host, scope.server), set()).add(slug)
    return out


def _scope(text: str) -> RemoteScope | None:
    try:
        return parse_scope(text)
    except ScopeError:
        return None


def _said(why: str) -> None:
    log.info("follow: %s", why)


class Fleet:
    """The followers a ticker runs."""

    def __init__(self, state_dir: Path, env: Mapping[str, str]) -> None:
        self.state_dir, self.env = state_dir, env
        self.followers: dict[tuple[str, str], Follower] = {}
        self.watchers: dict[tuple[str, str], set[str]] = {}
        self._said: set[str] = set()

    def reconcile(self, slugs: Iterable[str]) -> None:
        """Follow what the servers' entries watch now; stop following the rest."""
        from rk.store.hosts import load_hosts

        wanted = watched(self.state_dir, slugs)
        hosts, _problems = load_hosts(self.env) if wanted else ({}, [])
        for key in list(self.followers):
            if key not in wanted or key[0] not in hosts or hosts[key[0]] != self.followers[key].host:
                self.followers.pop(key).stop()
        self.watchers = wanted
        for key in wanted:
            if key in self.followers:
                continue
            host = hosts.get(key[0])
            if host is None:
                if key[0] not in self._said:
                    self._said.add(key[0])
                    log.warning("a wake watches host %s, which rk host list does not know", key[0])
                continue
            self.followers[key] = Follower(
                host, key[1], str(self.state_dir), self.env, on_lines=self._nudger(key), on_problem=_said
            ).start()

    def _nudger(self, key: tuple[str, str]) -> Callable[[], None]:
        """What a follower calls when lines arrive: a nudge for each server watching it."""

        def nudge_watchers() -> None:
            for slug in sorted(self.watchers.get(key, ())):
                nudge.send(slug, self.env)

        return nudge_watchers

    def stop(self) -> None:
        for follower in self.followers.values():
            follower.stop()
        self.followers.clear()
