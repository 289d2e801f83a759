"""A watched file's fingerprint (`--wake-on file:PATH`): what tells the ticker it
appeared or changed. The path is the user's own file, anywhere: it is looked at
(stat, following links as any program reading it would), never opened."""

from __future__ import annotations

import os

from rk.core.schedule.world import ABSENT


def fingerprint(path: str) -> str:
    """`dev:inode:size:mtime_ns`, or `ABSENT` when it is not there or cannot be looked at."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return ABSENT
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"
