"""The fast path: a state change nudges the running ticker to tick its server now.

The ticker listens on a Unix datagram socket `<state dir>/ticker.sock`; a
nudge is one datagram carrying the server's slug. Sending is best effort and
non-blocking: no ticker, a full queue or any other error is ignored, so the
hook never waits and never fails. Standard library only (the hook imports it).
"""

from __future__ import annotations

import os
import socket

SOCKET_NAME = "ticker.sock"


def state_dir(env=None) -> str:
    """Same rule as `rk.config.state_dir`, without importing it (hook start-up time)."""
    env = os.environ if env is None else env
    if env.get("RK_STATE_DIR"):
        return env["RK_STATE_DIR"]
    if env.get("XDG_STATE_HOME"):
        return os.path.join(env["XDG_STATE_HOME"], "rk", "cron")
    home = env.get("HOME") or os.path.expanduser("~")
    return os.path.join(home, ".local", "state", "rk", "cron")


def socket_path(env=None) -> str:
    return os.path.join(state_dir(env), SOCKET_NAME)


def send(slug: str, env=None) -> bool:
    """Nudge the ticker about server `slug`. True if a ticker took the datagram."""
    path = socket_path(env)
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    except OSError:
        return False
    try:
        sock.setblocking(False)
        sock.sendto(slug.encode("utf-8", "replace")[:255], path)
        return True
    except OSError:
        return False
    finally:
        sock.close()


class Listener:
    """The ticker's end: bind the socket (0600), wait for nudges with a timeout."""

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        old = os.umask(0o177)
        try:
            self.sock.bind(path)
        finally:
            os.umask(old)
        self.sock.setblocking(False)

    def fileno(self) -> int:
        return self.sock.fileno()

    def drain(self) -> set[str]:
        """Every slug nudged since the last drain."""
        slugs: set[str] = set()
        while True:
            try:
                data = self.sock.recv(512)
            except (BlockingIOError, InterruptedError):
                return slugs
            except OSError:
                return slugs
            slugs.add(data.decode("utf-8", "replace").strip())

    def close(self) -> None:
        self.sock.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass
