"""The fast path: a state change nudges the running ticker to tick its server now.

The ticker listens on a Unix datagram socket `<state dir>/ticker.sock`; a
nudge is one datagram carrying the server's slug. Sending is best effort and
non-blocking: no ticker, a full queue or any other error is ignored, so the
hook never waits and never fails. Standard library only (the hook imports it).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

from rk.core import environ


def state_dir(env: Mapping[str, str] | None = None) -> str:
    return environ.state_dir(os.environ if env is None else env)


def socket_path(env: Mapping[str, str] | None = None) -> str:
    return environ.nudge_socket(os.environ if env is None else env)


def send(slug: str, env: Mapping[str, str] | None = None) -> bool:
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
