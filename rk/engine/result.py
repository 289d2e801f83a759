"""What a tick did: one `Decision` per fire, a `ServerTick` per server, the `SweepResult` of them all.

The CLI prints them (`rk cron tick`), the ticker logs them and records its status,
and the notify channels read each server's panes and decisions from them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rk.core.log.diagnostics import Diag, Diagnostic
from rk.core.pane.facts import PaneFact
from rk.store.config import ServerFiles
from rk.tmux.observe import LookReport


@dataclass(frozen=True)
class Decision:
    """What the sweep did (or, dry-run, would do) with one fire."""

    server: str
    entry: str
    reason: str
    pane: str
    outcome: str

    def to_dict(self) -> dict[str, str]:
        return {
            "server": self.server,
            "entry": self.entry,
            "reason": self.reason,
            "pane": self.pane,
            "outcome": self.outcome,
        }


@dataclass
class ServerTick:
    slug: str
    held: bool = False
    swept: bool = False
    lines: int = 0
    diagnostics: list[Diagnostic] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    next_due: int | None = None  #: earliest future instant a schedule comes due
    journal: ServerFiles | None = None  #: where deliveries record their intent (None: dry run)
    looks: LookReport = field(default_factory=LookReport)  #: captures taken and corrections made
    kept_edges: set[str] = field(default_factory=set)  #: entries whose wake edge a fire left pending
    #: `deliver: replace`: per entry, when its interrupted turn was seen to end and the
    #: `interrupted: replace: …` line ("" if none), to log before its outcome (`rk.engine.replace.fire_lines`)
    replaced: dict[str, tuple[int, str]] = field(default_factory=dict)
    recheck: bool = False  #: a hold the screen may lift within a second (`rk.core.pane.recheck`): tick again soon
    paused: bool = False  #: the server is paused (the status line counts it)
    muted: int = 0  #: entries muted now (the status line counts them)
    dormant: int = 0  #: entries dormant now (`rk.core.schedule.dormant`; the status line counts them)
    unreadable: str = ""  #: why its entries file could not be read ("" when it was): none of them fired
    panes: list[PaneFact] = field(
        default_factory=list
    )  #: the panes as this tick saw them (`rk.channels.notify` reads them)


#: Diagnostics that mean a tick could not do its work.
FAILURES = frozenset(
    {
        Diag.TICK_FAILED,
        Diag.ENUMERATION_FAILED,
        Diag.ENTRY_FILE_UNREADABLE,
        Diag.ENTRY_FILE_CORRUPT,
        Diag.LOG_APPEND_FAILED,
        Diag.CURSOR_WRITE_FAILED,
        Diag.RETIRE_FAILED,
        Diag.ORPHAN_EXPIRE_FAILED,
        Diag.IDENTITY_UNRECORDED,
    }
)


@dataclass
class SweepResult:
    servers: list[ServerTick] = field(default_factory=list)

    @property
    def servers_swept(self) -> int:
        return sum(1 for s in self.servers if s.swept)

    @property
    def fires(self) -> int:
        return sum(s.lines for s in self.servers)

    @property
    def diagnostics(self) -> list[tuple[str, Diagnostic]]:
        return [(s.slug, d) for s in self.servers for d in s.diagnostics]

    @property
    def decisions(self) -> list[Decision]:
        return [d for s in self.servers for d in s.decisions]

    @property
    def next_due(self) -> int | None:
        times = [s.next_due for s in self.servers if s.next_due is not None]
        return min(times) if times else None

    def failures(self, asked: str | None = None) -> list[tuple[str, Diagnostic]]:
        """What kept the sweep from doing its work (`rk cron tick` exits 1 for it):
        a write or read that failed, a server that failed, and a dead server when
        it was `asked` for by name (-L) or no server at all was live. A dead
        server's leftover entry file beside live servers is none."""
        none_live = not self.servers_swept
        return [
            (srv, d)
            for srv, d in self.diagnostics
            if d.reason in FAILURES or (d.reason == Diag.SERVER_NOT_LIVE and (srv == asked or none_live))
        ]

    @property
    def rechecks(self) -> list[str]:
        """The servers to tick again within a second (`ServerTick.recheck`)."""
        return [s.slug for s in self.servers if s.recheck]

    def to_json(self) -> dict[str, object]:
        return {
            "servers_swept": self.servers_swept,
            "fires": self.fires,
            "diagnostics": [
                {"server": srv, "entry": d.entry, "reason": d.reason, "detail": d.detail} for srv, d in self.diagnostics
            ],
            "decisions": [d.to_dict() for d in self.decisions],
        }
