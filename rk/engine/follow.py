"""Following another host's state journal over ssh, into a mirror here.

One `Follower` per (host, server) a wake watches: it runs `rk remote` there with a
follow request from the mirror's resume mark (`rk.store.mirror.resume_mark`),
stores each line as it comes (`Mirror.append`), and calls `on_lines` (the ticker's
nudge) so a wake reacts within the second. When the link drops (ssh exits, or
nothing, not even a heartbeat, came for `rk.host.ssh.SILENCE` seconds) it connects again
after a pause that doubles up to `MAX_PAUSE`, from the mark of the last line it
stored: nothing lost, nothing twice. The ssh connection is the shared one
(`rk.host.ssh`'s ControlMaster), so following costs no handshake per reconnect
while the master lives.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Mapping

from rk.core.fleet.hosts import Host, remote_words
from rk.host import ssh
from rk.store.mirror import Mirror, resume_mark

FIRST_PAUSE = 0.2
MAX_PAUSE = 30.0
#: Bytes of one streamed line at most (a journal line is ~100).
MAX_LINE = 64 * 1024


class Follower(ssh.Link):
    """Keeps one host's journal of one server mirrored here until stopped."""

    def __init__(
        self,
        host: Host,
        slug: str,
        state_dir: str,
        env: Mapping[str, str],
        on_lines: Callable[[], None] = lambda: None,
        on_problem: Callable[[str], None] = lambda _why: None,
    ) -> None:
        self.host, self.slug, self.state_dir, self.env = host, slug, state_dir, env
        self.on_lines, self.on_problem = on_lines, on_problem
        self.mirror = Mirror(state_dir, host.name, slug)
        self.connects = 0  #: connections made (a reconnect counts)
        self.stored = 0  #: lines stored since it started
        super().__init__(f"follow-{host.name}-{slug}", join_timeout=10)

    def run(self) -> None:
        pause = FIRST_PAUSE
        while not self.stopping.is_set():
            came_up = self.follow_once()
            if self.stopping.is_set():
                return
            pause = FIRST_PAUSE if came_up else min(MAX_PAUSE, pause * 2)
            self.stopping.wait(pause)

    def follow_once(self) -> bool:
        """One connection: stream until it ends; whether the far end answered at all."""
        start = resume_mark(self.state_dir, self.host.name, self.slug)
        request = json.dumps({"follow": "journal", "server": self.slug, "from": list(start)}).encode()
        remote = remote_words(self.host.rk, "remote")
        try:
            self.proc = proc = ssh.stream(
                self.host.destination, remote, self.env, ssh.control_dir(self.state_dir), request
            )
        except OSError as exc:
            self.on_problem(f"{self.host.name}: cannot follow: {exc}")
            return False
        self.connects += 1
        assert proc.stdout is not None
        came_up = False
        try:
            came_up = self._read(proc)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            if proc.stderr is not None:
                why = ssh.first_line(proc.stderr.read(4096).decode("utf-8", "replace"))
                proc.stderr.close()
                if why and not self.stopping.is_set():
                    self.on_problem(f"{self.host.name}: {why}")
            proc.stdout.close()
        return came_up

    def _read(self, proc: subprocess.Popen[bytes]) -> bool:
        """Store what comes until the stream ends; whether anything came."""
        came = False
        for messages in self.batches(proc, MAX_LINE):
            if not came:
                came, self.ups = True, self.ups + 1
            batch: list[tuple[dict[str, object], tuple[int, int, int]]] = []
            for message in messages:
                line, at = message.get("line"), _mark(message.get("at"))
                if "gap" in message:
                    self.on_problem(f"{self.host.name}: its journal rotated past the last line seen: some changes lost")
                if isinstance(line, dict) and at is not None:
                    batch.append((line, at))
            if batch:
                self.stored += self.mirror.append(batch)
                self.on_lines()
        if self.ended.startswith("a streamed line"):
            self.on_problem(f"{self.host.name}: {self.ended}; reconnecting")
        return came


def _mark(value: object) -> tuple[int, int, int] | None:
    if isinstance(value, list) and len(value) == 3 and all(type(n) is int for n in value):
        return value[0], value[1], value[2]
    return None
