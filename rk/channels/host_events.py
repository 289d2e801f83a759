"""Another host's events, streamed here as they happen (`rk events -f --host`).

One `HostEvents` thread per host runs `rk remote` there (the shared ssh connection,
`rk.host.ssh`) with an events follow request (`rk.channels.events_follow`) and hands
each event on. When the link drops (ssh exits, or nothing, not even a heartbeat, came
for `SILENCE` seconds) it says so and connects again after a pause that doubles up to
`MAX_PAUSE`, asking from a little before the newest event shown and passing over what
it showed already (`rk.core.fleet.resume.Seen`): nothing lost, nothing twice. A far end
that answers with no stream (an rk without it, a refused request) is said, and that
host is left.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from rk.channels.events_follow import EventsQuery
from rk.core.fleet.hosts import Host, remote_words
from rk.core.fleet.resume import Seen
from rk.host import ssh

FIRST_PAUSE = 0.5
MAX_PAUSE = 30.0
#: Bytes of one streamed line at most.
MAX_LINE = 256 * 1024

EVENT, DOWN, UP, GONE = "event", "down", "up", "gone"


@dataclass(frozen=True)
class Item:
    """What a link hands on: an event (`event`), a link lost and when it is tried again
    (`down`, `text` says why, `pause` the seconds), a link back (`up`), or a host left (`gone`)."""

    host: str
    kind: str
    event: dict[str, object] | None = None
    text: str = ""
    pause: float = 0.0


class HostEvents(ssh.Link):
    """Streams one host's events to `put` until stopped."""

    def __init__(
        self, host: Host, query: EventsQuery, state_dir: str, env: Mapping[str, str], put: Callable[[Item], None]
    ) -> None:
        self.host, self.query, self.state_dir, self.env, self.put = host, query, state_dir, env, put
        self.seen = Seen(query.since)
        super().__init__(f"events-{host.name}", join_timeout=5)

    def run(self) -> None:
        pause, down = FIRST_PAUSE, False
        while not self.stopping.is_set():
            came_up, why, final = self.follow_once(down)
            if self.stopping.is_set():
                return
            if final:
                self.put(Item(self.host.name, GONE, text=why))
                return
            pause = FIRST_PAUSE if came_up else min(MAX_PAUSE, pause * 2)
            down = True
            self.put(Item(self.host.name, DOWN, text=why, pause=pause))
            self.stopping.wait(pause)

    def follow_once(self, was_down: bool) -> tuple[bool, str, bool]:
        """One connection, streamed until it ends: whether the far end answered, why it
        ended, and whether that is final (the host cannot stream its events)."""
        since = self.seen.connect()
        request = EventsQuery(self.query.server, since, self.query.panes).request()
        remote = remote_words(self.host.rk, "remote")
        try:
            self.proc = proc = ssh.stream(
                self.host.destination, remote, self.env, ssh.control_dir(self.state_dir), json.dumps(request).encode()
            )
        except OSError as exc:
            return False, f"cannot run ssh: {exc}", False
        assert proc.stdout is not None and proc.stderr is not None
        try:
            came_up, why, final = self._read(proc, was_down)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            said = ssh.first_line(proc.stderr.read(4096).decode("utf-8", "replace"))
            proc.stderr.close()
            proc.stdout.close()
        if not why:
            why = said or ("the link closed" if came_up else f"ssh exited with status {proc.returncode}")
        return came_up, why, final

    def _read(self, proc: subprocess.Popen[bytes], was_down: bool) -> tuple[bool, str, bool]:
        came = False
        for batch in self.batches(proc, MAX_LINE):
            for message in batch:
                if not came and message:
                    came, self.ups = True, self.ups + 1
                    if was_down:
                        self.put(Item(self.host.name, UP))
                final = self._take(message)
                if final:
                    return came, final, True
        return came, self.ended, False

    def _take(self, message: dict[str, object]) -> str:
        """Hand on what one streamed object says; why the host is left ("" when it is not)."""
        event = message.get("event")
        if isinstance(event, dict):
            if valid(event) and self.seen.admit(event):
                self.put(Item(self.host.name, EVENT, event))
            return ""
        if isinstance(message.get("problem"), str):
            return str(message["problem"])
        if "status" in message:  # a plain `rk remote` answer: it did not take the request
            err = message.get("stderr")
            said = ssh.first_line(err) if isinstance(err, str) else ""
            version = message.get("version")
            return (
                f"cannot stream its events (rk {version if isinstance(version, str) else '?'}: {said or 'no reason'});"
                f" rk host check {self.host.name}"
            )
        return ""


def valid(event: dict[str, object]) -> bool:
    """An event as `rk.core.log.events.Event.to_dict` makes them (else it is not shown)."""
    if type(event.get("ts")) is not int or event.get("kind") not in ("state", "log"):
        return False
    return all(value is None or isinstance(value, str) for name, value in event.items() if name != "ts")
