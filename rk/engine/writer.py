"""The tick's log writer: each line appended as soon as its outcome is known.

A crash then loses at most the fire in flight, which the next tick re-fires once.
The line is mirrored into the in-memory view the later decisions of the tick read.
"""

from __future__ import annotations

from rk.core.log.delivery import LogLine, LogView
from rk.core.log.diagnostics import Diag, Diagnostic
from rk.engine.result import ServerTick
from rk.store import delivery_log as logfile
from rk.store.config import ServerFiles


class LogWriter:
    """Appends lines (or, dry-run, only mirrors them) and counts them."""

    def __init__(self, files: ServerFiles, view: LogView, out: ServerTick, dry_run: bool) -> None:
        self.files, self.view, self.out, self.dry_run = files, view, out, dry_run

    def line(self, line: LogLine) -> bool:
        """Whether the line is on disk (a dry run: mirrored only)."""
        self.view.add(line)
        self.out.lines += 1
        if self.dry_run:
            return True
        try:
            logfile.append_lines(self.files.log, [line])
        except OSError as exc:
            self.out.diagnostics.append(
                Diagnostic(line.entry, Diag.LOG_APPEND_FAILED, f"{self.files.log}: {exc.strerror or exc}")
            )
            return False
        return True
