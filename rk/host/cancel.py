"""A switch that ends the blocking waits of one server run (`rk mcp`'s, when its client goes).

A wait sleeps in `select`, so the switch is a pipe: `set()` closes the write end,
which makes the read end readable for good, waking every wait that selects on it,
in any thread, at once. The waits find the switch of their run through a context
variable (`CURRENT`), which the run sets before it starts its tasks: asyncio tasks
and anyio's worker threads inherit it, a plain command line has none.
"""

from __future__ import annotations

import os
import select
import threading
from contextvars import ContextVar


class Cancel:
    """Set once; readable (`fileno`) from then on."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        self._lock = threading.Lock()
        self._closed = False

    def fileno(self) -> int:
        return self._read

    def set(self) -> None:
        with self._lock:
            if self._write >= 0:
                os.close(self._write)
                self._write = -1

    def is_set(self) -> bool:
        with self._lock:
            if self._closed:
                return True
            return bool(select.select([self._read], [], [], 0)[0])

    def close(self) -> None:
        """Free both ends (after the waits are over); the switch then reads as set."""
        self.set()
        with self._lock:
            if not self._closed:
                os.close(self._read)
                self._closed = True


#: The switch of the run this code serves (None: nothing cancels the wait but itself).
CURRENT: ContextVar[Cancel | None] = ContextVar("rk_cancel", default=None)
