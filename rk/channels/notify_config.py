"""config.yaml's `notify:` channels as a running ticker follows them: read again at each
tick whose file differs from the one last read, so an edit needs no restart."""

from __future__ import annotations

import os
from collections.abc import Mapping

from rk.core.channels.notice import Channel, parse_channels


class ChannelsFile:
    """config.yaml's `notify:` channels, read again whenever the file changes (its inode,
    size or modification time), so an edit is followed at the next tick. A bad item turns
    off only its own channel; a file that cannot be read or parsed keeps the channels last
    read (said once per version of the file)."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        from rk.store.config import config_path

        self.environ = dict(environ)
        self.path = config_path(self.environ)
        self.channels: list[Channel] = []
        #: why the last read left a channel, or the whole file, out (one line each)
        self.problems: list[str] = []
        self._version: object = object()  # no version read yet

    def changed(self) -> list[Channel] | None:
        """The channels when they are not those last returned (at first: none), else None."""
        try:
            st = os.stat(self.path)
            version: object = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError:
            version = None
        if version == self._version:
            return None
        self._version = version  # taken before the read: a write meanwhile is read at the next call
        from rk.store.config import config_section

        raw, source, problems = config_section("notify", self.environ)
        if problems:  # not read: the channels stay as they were
            self.problems = [f"{problems[0]}; the notify channels stay as they were"]
            return None
        channels, self.problems = parse_channels(raw, source)
        if channels == self.channels:
            return None
        self.channels = channels
        return channels
