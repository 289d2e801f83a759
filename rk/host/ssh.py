"""Running rk on another machine through the user's own OpenSSH.

rk adds no listener and no key: it runs `ssh` as the user would, with their
keys, agent and `~/.ssh/config` (or `$RK_SSH_CONFIG`, given as `-F`, which is
how the tests keep away from the user's own). Each call is one argv, never a
local shell string. `BatchMode` means no password or host-key prompt can wait
for a human; connection sharing (`ControlMaster`/`ControlPersist`, sockets in
rk's private state dir) means a view across hosts pays the handshake once.
The remote command line carries only fixed words (`rk.core.fleet.hosts.remote_words`);
what varies travels on stdin.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Self

from rk.core.environ import child_env

#: Seconds ssh may take to connect before the host is said to be down.
CONNECT_TIMEOUT = 5
#: Seconds a shared connection stays open after its last use.
CONTROL_PERSIST = 60
#: Bytes of a remote answer read at most (a view of a big fleet is far smaller).
MAX_ANSWER = 16 << 20
#: Seconds without a byte on a streamed link (its far end sends a heartbeat every 5 s) before it is dropped.
SILENCE = 15.0
#: ssh's own status when it, not the remote command, failed.
SSH_FAILED = 255
#: A Unix socket's path is at most 107 bytes.
MAX_SOCKET_PATH = 107
#: What ssh adds to the control directory: `/cm-`, `%C` (40 hex digits), and while the
#: master binds, a temporary suffix (`.` and 16 random characters).
CONTROL_SUFFIX = len("/cm-") + 40 + 17


@dataclass(frozen=True)
class Answer:
    """What a remote command returned: its status, output and ssh's or its stderr."""

    status: int
    stdout: bytes
    stderr: str
    timed_out: bool = False

    @property
    def unreachable(self) -> bool:
        """ssh could not connect or authenticate (its own 255), or gave up in time."""
        return self.timed_out or self.status == SSH_FAILED


def control_dir(state_dir: str) -> str:
    """Where the shared connections' sockets live: `<state>/ssh`, or a private dir under
    /tmp when that path is too long for a socket (ssh refuses a long ControlPath)."""
    directory = os.path.join(state_dir, "ssh")
    if len(directory) + CONTROL_SUFFIX <= MAX_SOCKET_PATH:
        return directory
    import hashlib

    tag = hashlib.sha256(os.path.abspath(state_dir).encode()).hexdigest()[:12]
    return os.path.join("/tmp", f"rk-ssh-{os.getuid()}-{tag}")  # one per state dir, as <state>/ssh is


def argv(destination: str, remote: str, env: Mapping[str, str], control: str) -> list[str]:
    """The ssh command: options, then `--` so that no destination is read as an option."""
    options = [
        "BatchMode=yes",
        f"ConnectTimeout={CONNECT_TIMEOUT}",
        "ControlMaster=auto",
        f"ControlPath={os.path.join(control, 'cm-%C')}",
        f"ControlPersist={CONTROL_PERSIST}",
        "ServerAliveInterval=10",
        "ServerAliveCountMax=3",
    ]
    command = ["ssh"]
    if env.get("RK_SSH_CONFIG"):
        command += ["-F", env["RK_SSH_CONFIG"]]
    for option in options:
        command += ["-o", option]
    return [*command, "-T", "--", destination, remote]


def run(
    destination: str,
    remote: str,
    env: Mapping[str, str],
    control: str,
    stdin: bytes = b"",
    timeout: float | None = 30,
) -> Answer:
    """Run `remote` (fixed words) on `destination`, `stdin` fed to it; never raises for
    a host that is down or slow (the Answer says so)."""
    from rk.host import private

    try:
        private.private_dir(control)  # others reaching the socket would reach the connection
    except OSError as exc:
        return Answer(SSH_FAILED, b"", f"refusing {control}: {exc}")
    try:
        done = subprocess.run(
            argv(destination, remote, env, control),
            input=stdin,
            capture_output=True,
            timeout=timeout,
            env=child_env(env),  # no $TMUX of the caller's: the far end is another machine
            check=False,
        )
    except subprocess.TimeoutExpired:
        return Answer(SSH_FAILED, b"", f"no answer within {timeout or 0:g} s", timed_out=True)
    except OSError as exc:
        return Answer(SSH_FAILED, b"", f"cannot run ssh: {exc}")
    err = done.stderr.decode("utf-8", "replace").strip()
    return Answer(done.returncode, done.stdout[:MAX_ANSWER], err)


def stream(
    destination: str, remote: str, env: Mapping[str, str], control: str, request: bytes
) -> subprocess.Popen[bytes]:
    """Start `remote` (fixed words) on `destination` for a long answer read as it comes
    (a follow): `request` written to it and its stdin closed; stdout and stderr are pipes
    (stderr holds ssh's reason when the link fails). OSError when ssh cannot start."""
    from rk.host import private

    private.private_dir(control)  # others reaching the socket would reach the connection
    proc = subprocess.Popen(
        argv(destination, remote, env, control),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=child_env(env),
    )
    assert proc.stdin is not None
    try:
        proc.stdin.write(request)
        proc.stdin.close()
    except OSError:
        pass  # the far end went at once: its reason is on stderr, the reader sees the end
    return proc


class Link:
    """A thread that keeps one streamed `rk remote` (`stream`) going until stopped: what a
    follower of another host shares (its `run` loops until `stopping`; `proc` is the live one)."""

    def __init__(self, name: str, join_timeout: float) -> None:
        import threading

        self.stopping = threading.Event()
        self.proc: subprocess.Popen[bytes] | None = None
        self.ups = 0  #: connections the far end answered on
        self.ended = ""  #: why the last stream read ended ("" for its own end or a stop)
        self.join_timeout = join_timeout
        self.thread = threading.Thread(target=self.run, name=name, daemon=True)

    def run(self) -> None:
        raise NotImplementedError

    def batches(self, proc: subprocess.Popen[bytes], max_line: int) -> Iterator[list[dict[str, object]]]:
        """The streamed objects of `proc`'s stdout, one batch per read (a line that is no
        object is `{}`), until the stream ends, goes silent past `SILENCE` (the far end's
        heartbeats stopped: a dead link), holds a line past `max_line`, or the link is
        stopped. Why it ended is left in `ended` ("" for the stream's own end or a stop)."""
        import select

        assert proc.stdout is not None
        fd, buf = proc.stdout.fileno(), b""
        self.ended = ""
        while not self.stopping.is_set():
            ready, _, _ = select.select([fd], [], [], SILENCE)
            if not ready:
                self.ended = f"nothing came for {SILENCE:g} s"
                return
            chunk = os.read(fd, 65536)
            if not chunk:
                return
            buf += chunk
            *whole, buf = buf.split(b"\n")
            if len(buf) > max_line:
                self.ended = f"a streamed line past {max_line} bytes"
                return
            yield [_object(raw) for raw in whole]

    def start(self) -> Self:
        self.thread.start()
        return self

    def stop(self) -> None:
        """Stop: the live connection killed (the thread's read ends), the thread joined."""
        self.stopping.set()
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.kill()
        self.thread.join(timeout=self.join_timeout)


def _object(raw: bytes) -> dict[str, object]:
    """One streamed object ({} when the line is not one)."""
    import json

    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def first_line(text: str) -> str:
    """ssh's complaint as one line (its last non-empty one names the cause)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""
