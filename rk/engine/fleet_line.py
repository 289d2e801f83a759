"""The ticker's record of other hosts' agents, for the status line (`fleet.status`).

The status line runs every few seconds in every tmux client: it must never open ssh
or wait on a host. So the ticker looks instead, on a thread of its own: when the
config file asks (`status_line: {fleet: true}`, `rk.core.fleet.line.every_of`), it
asks each host for `rk agent list --all --json` over the shared ssh connection every
`every` seconds (all due hosts at once, each bounded by `LOOK_TIMEOUT`), sooner
(at most every `MIN_GAP` s) when a follower mirrored a change of that host's journal,
and writes what it learnt to `<state dir>/fleet.status` (0600, replaced atomically):
per host when it last answered (`at`), when it was last asked (`tried`), why the last
look failed (`problem`) and its agents by state. The status line judges freshness
from those stamps (`rk.core.channels.fleet_glance.host_of`), so a ticker that stops
asking leaves counts that turn stale, never counts that stay live. Off, the record is
removed.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from rk.core.channels.fleet_glance import RECORD
from rk.core.fleet.hosts import Host, remote_words
from rk.core.fleet.line import LOOK_TIMEOUT, counts, due, every_of, stale_after
from rk.host import ssh
from rk.host.files import atomic_write
from rk.store.mirror import HOSTS_DIR

log = logging.getLogger("rk.fleet")

#: Seconds between two looks at the config file and the clock (and the mirrors), when on.
STEP = 1.0
#: The same, when off: turning it on is seen within this.
IDLE_STEP = 5.0
#: Hosts asked at once.
MAX_PARALLEL = 16
#: What each host is asked.
ASKED = ["agent", "list", "--all", "--json"]

#: (host, state dir, environ) → (counts, problem): one look (replaced in tests).
Look = Callable[[Host, str, Mapping[str, str]], tuple[dict[str, int] | None, str]]


def look(host: Host, state_dir: str, env: Mapping[str, str]) -> tuple[dict[str, int] | None, str]:
    """One host's agents by state, or why not (a one-line problem)."""
    request = json.dumps({"argv": ASKED}).encode()
    answer = ssh.run(
        host.destination, remote_words(host.rk, "remote"), env, ssh.control_dir(state_dir), request, LOOK_TIMEOUT
    )
    if answer.unreachable:
        return None, f"unreachable: {ssh.first_line(answer.stderr) or 'ssh failed'}"
    try:
        reply = json.loads(answer.stdout.decode("utf-8"))
        listed = json.loads(reply["stdout"]) if reply.get("status") == 0 else None
        got = counts(listed.get("result")) if isinstance(listed, dict) else None
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError):
        got = None
    if got is None:
        return None, f"no rk remote answered ({ssh.first_line(answer.stderr) or f'exit status {answer.status}'})"
    return got, ""


class FleetLine:
    """The thread that keeps `fleet.status` while the ticker runs."""

    def __init__(self, state_dir: Path, env: Mapping[str, str], looker: Look = look) -> None:
        self.state_dir, self.env, self.looker = state_dir, env, looker
        self.path = state_dir / RECORD
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, name="fleet-line", daemon=True)
        self.hosts: dict[str, dict[str, object]] = {}  #: what the record says of each host
        self._config: tuple[object, int, dict[str, Host]] = (None, 0, {})  #: (the file's stat, every, hosts)
        self._moved: dict[str, float] = {}  #: each host's mirrors' newest mtime, at its last look
        self._said = ""

    def start(self) -> FleetLine:
        self.thread.start()
        return self

    def stop(self) -> None:
        """Stop asking; a look in flight is not waited for (its thread is a daemon's)."""
        self.stopping.set()
        if self.thread.is_alive():
            self.thread.join(timeout=1.0)

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                self.step(time.time())
            except Exception as exc:  # the record stays as it was (and turns stale); the ticker goes on
                log.error("fleet line: %s: %s", type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")
            self.stopping.wait(STEP if self._config[1] else IDLE_STEP)

    def settings(self) -> tuple[int, dict[str, Host]]:
        """The cadence and the hosts, read again only when the config file changed."""
        from rk.store.config import config_path, config_section
        from rk.store.hosts import load_hosts

        try:
            st = os.stat(config_path(self.env))
            stamp: object = (st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError:
            stamp = None
        if stamp != self._config[0] or stamp is None:
            section, _path, problems = config_section("status_line", self.env)
            every, why = every_of(section)
            hosts, host_problems = load_hosts(self.env) if every else ({}, [])
            said = "; ".join([*problems, *([why] if why else []), *host_problems])
            if said and said != self._said:
                log.warning("fleet line: %s", said)
            self._said, self._config = said, (stamp, every, hosts)
        return self._config[1], self._config[2]

    def step(self, now: float) -> None:
        """Look at the hosts that are due, and write the record when it changed."""
        every, hosts = self.settings()
        if not every:
            self.hosts.clear()
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
            return
        changed = set(self.hosts) - set(hosts)
        for name in changed:
            del self.hosts[name]
        moved = {name: self._mirror_moved(name) for name in hosts}
        wanted = [
            h
            for h in hosts.values()
            if due(now, _number(self.hosts.get(h.name, {}).get("tried")), every, moved[h.name])
        ]
        new = [h.name for h in wanted if h.name not in self.hosts]
        for name in new:  # shown as not known yet (stale) while its first look runs
            self.hosts[name] = {"at": 0, "tried": 0, "problem": "", "counts": {}}
        if new:
            self._write(every)
        if wanted:
            self._look(wanted)
            if self.stopping.is_set():
                return
        if wanted or changed or not self.path.exists():
            self._write(every)

    def _write(self, every: int) -> None:
        record = {"stale_after": stale_after(every), "hosts": self.hosts}
        atomic_write(self.path, (json.dumps(record, sort_keys=True) + "\n").encode("utf-8"))

    def _look(self, hosts: list[Host]) -> None:
        state = str(self.state_dir)
        for host in hosts:
            self._moved[host.name] = self._newest_mirror(host.name)
        results: dict[str, tuple[dict[str, int] | None, str]] = {}

        def one(host: Host) -> None:
            results[host.name] = self.looker(host, state, self.env)

        # daemon threads, not a pool: a ticker that stops never waits for a slow host
        threads = [threading.Thread(target=one, args=(h,), daemon=True) for h in hosts[:MAX_PARALLEL]]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(LOOK_TIMEOUT + 5)
        done = int(time.time())
        for host in hosts:
            if host.name not in results:
                continue  # not asked this time (past MAX_PARALLEL) or still asking: due again
            got, problem = results[host.name]
            kept = self.hosts.setdefault(host.name, {"at": 0, "counts": {}})
            kept.update(tried=done, problem=problem)
            if got is not None:
                kept.update(at=done, counts=got)

    def _newest_mirror(self, name: str) -> float:
        """The newest mtime of the host's mirrored journals (0: none): a follower stored a change."""
        directory = self.state_dir / HOSTS_DIR / name
        try:
            return max((e.stat(follow_symlinks=False).st_mtime for e in os.scandir(directory)), default=0.0)
        except OSError:
            return 0.0

    def _mirror_moved(self, name: str) -> bool:
        return self._newest_mirror(name) > self._moved.get(name, 0.0)


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0
