"""The delivery log: one JSON line per outcome, and the queries the core runs on it.

The log plus the panes' state options are the clock's whole memory: every
anchor (every, cron), the backoff streak, the wake debounce, the rate cap and
the orphan age are derived from it. This module is pure (parsing, indexing,
queries, and the choice of lines a rotation must keep); the file itself is
handled by `rk.store.delivery_log`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

from rk.core.bounds import MAX_EPOCH
from rk.core.log.wake_mark import is_marked
from rk.core.schedule import ladder

#: Window of the per-target rate cap.
RATE_WINDOW = 3600
#: An unresolved session/pane entry is removed after this long without a delivery.
ORPHAN_TTL = 7 * 86400
#: `missed_since_delivered` counts up to this many (`{missed}` then reads `32+`), and a
#: rotation keeps that many of an entry's newest missed lines after its newest delivery.
MISSED_CAP = 32


class Status(StrEnum):
    """The status word that starts every outcome (`failed: <why>` has status `failed`)."""

    DELIVERED = "delivered"  #: sent and submitted
    FAILED = "failed"  #: send error or state-read error; detail follows
    SKIPPED_BUSY = "skipped-busy"  #: skip-if-busy met a busy pane; state (or `draft`) follows
    SKIPPED_LIMITED = "skipped-limited"  #: the agent is at a usage or rate limit; the reset follows when known
    SKIPPED_QUIET = "skipped-quiet"  #: due outside the entry's active hours
    #: only_if_changed: nothing new in the compared panes since the last prompt was answered
    SKIPPED_UNCHANGED = "skipped-unchanged"
    SKIPPED_PAUSED = "skipped-paused"  #: a cron or at occurrence due while the server was paused: dropped
    #: the entry's tokens of its local day reached its budget: once a day, then silent until midnight
    SKIPPED_BUDGET = "skipped-budget"
    HELD_QUIET = "held-quiet"  #: a cron catch-up due outside its active hours waits for them (once; no anchor)
    HELD_EXPIRED = "held-expired"  #: when-idle held past 2 h; state follows
    NO_DELIVERER = "no-deliverer"  #: evaluated without a deliverer
    RATE_CAPPED = "rate-capped"  #: the per-target cap tripped
    SKIPPED_ABSENT = "skipped-absent"  #: target absent, if_absent skip
    NOTIFIED_ABSENT = "notified-absent"  #: target absent, clients notified
    RESPAWNED = "respawned"  #: target absent, respawn command succeeded
    RESPAWN_FAILED = "respawn-failed"  #: target absent, respawn command failed
    MISSED = "missed"  #: a cron occurrence went stale (no catch-up)
    RESCHEDULED = "rescheduled"  #: schedule or deliver edited; cuts the backoff history
    EXPIRED_ORPHAN = "expired-orphan"  #: orphan entry removed by GC
    SKIPPED_CAP = "skipped-cap"  #: `day`: the entry's max_per_day is reached; once a local day (rk.core.cost.caps)
    RETIRED = "retired"  #: `max-total`: the entry had its max_total deliveries and left the file
    #: `notify.log` only (never a server's log, where any line would anchor an entry's schedule):
    NOTIFY_QUEUED = "notify-queued"  #: handed to the channel's sender (a restart never sends it again)
    NOTIFIED = "notified"  #: a notification sent; the channel follows
    NOTIFY_FAILED = "notify-failed"  #: a channel refused or timed out; why follows
    NOTIFY_HELD = "notify-held"  #: within a channel's quiet hours: summarised when they end
    #: The aftermath of a delivery's turn (`rk.core.cost.turn_timeout`; `AFTERMATH`):
    TURN_TIMEOUT = "turn-timeout"  #: the turn a delivery started is still busy past the entry's turn_timeout
    INTERRUPTED = "interrupted"  #: its interrupt key was pressed and the turn ended
    INTERRUPT_FAILED = "interrupt-failed"  #: the key was pressed (or could not be) and the turn went on; why follows
    #: Dormancy (`rk.core.schedule.dormant`): about the entry's past deliveries, not a fire:
    DORMANT = "dormant"  #: its last N deliveries started no turn: it types no more until the pane shows life
    WOKEN = "woken"  #: `rk cron wake` ended its dormancy by hand: its unanswered deliveries are forgotten


class Reason(StrEnum):
    """Why a line was written."""

    SCHEDULE = "schedule"
    WAKE = "wake"
    EDIT = "edit"
    MANUAL = "manual"
    CLOCK = "clock"  #: the clock went back behind the entry's newest line: anchored again at now
    NOTIFY = "notify"  #: a notification's line in `notify.log` (`rk.core.channels.notice`)
    GC = ""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What happened to one fire: a status and its detail.

    The wire form is `<status>: <detail>` (`failed: paste: no such pane`), or
    `<status> (<detail>)` for a status qualified in parentheses
    (`respawned (kickoff undelivered: …)`), or the bare status."""

    status: Status
    detail: str = ""
    parenthesised: bool = False

    def __str__(self) -> str:
        if not self.detail:
            return str(self.status)
        if self.parenthesised:
            return f"{self.status} ({self.detail})"
        return f"{self.status}: {self.detail}"

    @staticmethod
    def parse(text: str) -> Outcome | None:
        """The wire form read back; None for a status word rk does not know."""
        word = status_of(text)
        try:
            status = Status(word)
        except ValueError:
            return None
        rest = text[len(word) :]
        if rest.startswith(" (") and rest.endswith(")"):
            return Outcome(status, rest[2:-1], parenthesised=True)
        return Outcome(status, rest.removeprefix(":").strip())


@lru_cache(maxsize=4096)
def status_of(outcome: str) -> str:
    """The status word of an outcome's wire form (`failed: x` → `failed`, `respawned (…)` → `respawned`)."""
    end = len(outcome)
    for sep in (":", " "):
        i = outcome.find(sep)
        if 0 <= i < end:
            end = i
    return outcome[:end]


_RATE_COUNTED = frozenset(
    {Status.DELIVERED, Status.FAILED, Status.NOTIFIED_ABSENT, Status.RESPAWNED, Status.RESPAWN_FAILED}
)


@lru_cache(maxsize=4096)
def counts_for_rate(outcome: str) -> bool:
    """Outcomes that count against the per-target cap: attempts that reached the world."""
    return status_of(outcome) in _RATE_COUNTED


#: Lines about a turn an earlier delivery started, not about a fire: they anchor no
#: schedule, restart no debounce, count for no cap and prove nothing (LogView keeps
#: them aside, `LogView.aftermath`).
AFTERMATH = frozenset({Status.TURN_TIMEOUT, Status.INTERRUPTED, Status.INTERRUPT_FAILED, Status.DORMANT, Status.WOKEN})
#: The aftermath a rotation keeps the newest of, per entry: deliveries up to a `turn-timeout` stay
#: handled; a `dormant` line says dormancy was told, a `woken` line where its count starts again.
_KEPT_AFTERMATH = frozenset({Status.TURN_TIMEOUT, Status.DORMANT, Status.WOKEN})


def is_aftermath(outcome: str) -> bool:
    return status_of(outcome) in AFTERMATH


def proves_resolution(outcome: str) -> bool:
    """Outcomes that show the target was there (end an orphan run)."""
    return status_of(outcome) in (Status.DELIVERED, Status.RESPAWNED)


@dataclass(frozen=True, slots=True)
class LogLine:
    """One delivery-log line. `ts` is the tick's now, not the due time."""

    ts: int
    entry: str
    target: str
    reason: str
    outcome: str

    def to_json(self) -> str:
        """The stored form: compact, keys in contract order, all present."""
        return json.dumps(
            {"ts": self.ts, "entry": self.entry, "target": self.target, "reason": self.reason, "outcome": self.outcome},
            ensure_ascii=False,
            separators=(",", ":"),
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "ts": self.ts,
            "entry": self.entry,
            "target": self.target,
            "reason": self.reason,
            "outcome": self.outcome,
        }


_CANONICAL = re.compile(
    r'\{"ts":(-?[0-9]{1,19}),"entry":"([^"\\]+)","target":"([^"\\]*)","reason":"([^"\\]*)","outcome":"([^"\\]*)"\}\s*'
)


def parse_line(text: str | bytes) -> LogLine | None:
    """One line → LogLine, or None for a blank, torn or malformed line, or one whose
    `ts` is outside 0…year 9999 (never raises)."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            return None
    m = _CANONICAL.fullmatch(text)
    if m:  # the form rk writes: 10k lines a `rk cron list`, so one call for the fields
        ts, entry, target, reason, outcome = m.groups()
        stamp = int(ts)
        return LogLine(stamp, entry, target, reason, outcome) if 0 <= stamp <= MAX_EPOCH else None
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(obj, dict):
        return None
    ts = obj.get("ts")
    if isinstance(ts, bool) or not isinstance(ts, int) or not 0 <= ts <= MAX_EPOCH:
        return None
    fields = []
    for key in ("entry", "target", "reason", "outcome"):
        value = obj.get(key, "")
        if not isinstance(value, str):
            return None
        fields.append(value)
    if not fields[0]:
        return None
    return LogLine(ts, *fields)


#: What a line is to a view's indexes, by its outcome (`_kind`).
_AFTER, _FIRE, _COUNTED, _DELIVERED = range(4)


def _kind(outcome: str) -> int:
    """`_AFTER` for an `AFTERMATH` line, else `_DELIVERED`, `_COUNTED` (for the rate) or `_FIRE`."""
    if is_aftermath(outcome):
        return _AFTER
    if not counts_for_rate(outcome):
        return _FIRE
    return _DELIVERED if status_of(outcome) == Status.DELIVERED else _COUNTED


class LogView:
    """An index over log lines for the queries of the core.

    The tick mirrors its own appends into the view (`add`) so that a later
    rate-cap check in the same tick sees them. `due()` only reads it.
    """

    __slots__ = (
        "_aftermath",
        "_by_entry",
        "_counted_by_entry",
        "_counted_by_target",
        "_delivered_by_entry",
        "_lines",
        "_places",
        "_source",
    )

    def __init__(self, lines: Iterable[LogLine] = ()) -> None:
        self._lines: list[LogLine] = []
        self._by_entry: dict[str, list[LogLine]] = {}
        self._counted_by_target: dict[str, list[int]] = {}
        self._counted_by_entry: dict[str, list[int]] = {}
        self._delivered_by_entry: dict[str, list[int]] = {}  #: what the caps count (rk.core.cost.caps)
        self._aftermath: dict[str, list[LogLine]] = {}
        self._places: object = None  #: `rk.core.log.about.Places`, built by the first cut
        #: a view cut by `rk.core.log.about.cut`: the view, entry, pane and line count its older lines are read from
        self._source: tuple[LogView, str, str | None, int] | None = None
        self._index(lines)

    def add(self, line: LogLine) -> None:
        """Mirror one appended line into the indexes."""
        self._index((line,))

    def _index(self, lines: Iterable[LogLine]) -> None:
        """Append `lines` and index them as `add` says, in one pass: `rk cron list` reads
        10,000 lines, so each outcome is classified once (`_kind`), and a list is appended
        to without the empty list a `setdefault` would make for each line."""
        kinds: dict[str, int] = {}  #: each outcome's `_kind`
        everything, by_entry, aftermath = self._lines, self._by_entry, self._aftermath
        by_target, counted, delivered = self._counted_by_target, self._counted_by_entry, self._delivered_by_entry
        for line in lines:
            everything.append(line)
            kind = kinds.get(line.outcome)
            if kind is None:
                kind = kinds[line.outcome] = _kind(line.outcome)
            index = aftermath if kind == _AFTER else by_entry  # aftermath: about an earlier turn, not a fire
            try:
                index[line.entry].append(line)
            except KeyError:
                index[line.entry] = [line]
            if kind < _COUNTED:  # no query below sees it
                continue
            for stamps, key in ((by_target, line.target), (counted, line.entry)):
                try:
                    stamps[key].append(line.ts)
                except KeyError:
                    stamps[key] = [line.ts]
            if kind == _DELIVERED:
                try:
                    delivered[line.entry].append(line.ts)
                except KeyError:
                    delivered[line.entry] = [line.ts]

    def _all(self) -> list[LogLine]:
        """Every line; a view cut by `rk.core.log.about.cut` reads its older lines from its source when first asked."""
        if self._source is not None:
            source, entry_id, pane, n = self._source
            self._source = None
            self._lines[:0] = [
                line for line in source._lines[:n] if line.entry == entry_id or (pane and line.target == pane)
            ]
        return self._lines

    @property
    def lines(self) -> Sequence[LogLine]:
        return tuple(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def own(self, entry_id: str) -> Sequence[LogLine]:
        """Every fire line of `entry_id` (no `AFTERMATH`), oldest first."""
        return self._by_entry.get(entry_id, ())

    def aftermath(self, entry_id: str) -> Sequence[LogLine]:
        """The `AFTERMATH` lines of `entry_id` (turn-timeout, interrupted…), oldest first."""
        return self._aftermath.get(entry_id, ())

    def newest(self, entry_id: str) -> LogLine | None:
        """The newest own line of any outcome (the wake debounce's start)."""
        own = self._by_entry.get(entry_id)
        return own[-1] if own else None

    def anchor(self, entry_id: str) -> LogLine | None:
        """The newest own line that anchors every/cron: any outcome but `held-quiet`,
        which says an occurrence still waits (for its active hours), not that it went."""
        for line in reversed(self._by_entry.get(entry_id, ())):
            if status_of(line.outcome) != Status.HELD_QUIET:
                return line
        return None

    def schedule_history(self, entry_id: str) -> list[int]:
        """Timestamps of own lines strictly after the newest own `rescheduled` line."""
        own = self._by_entry.get(entry_id, ())
        start = 0
        for i in range(len(own) - 1, -1, -1):
            if status_of(own[i].outcome) == Status.RESCHEDULED:
                start = i + 1
                break
        return [line.ts for line in own[start:]]

    def last_delivered(self, entry_id: str, reason: str | None = None) -> LogLine | None:
        """The newest own line whose status is `delivered` (no other outcome counts);
        with `reason`, the newest such line written for that reason (`schedule`: the
        newest occurrence a fire of the schedule delivered, the placeholders' watermark)."""
        for line in reversed(self._by_entry.get(entry_id, ())):
            if status_of(line.outcome) == Status.DELIVERED and (reason is None or line.reason == reason):
                return line
        return None

    def delivered_stamps(self, entry_id: str) -> Sequence[int]:
        """The `ts` of every own `delivered` line, in log order (the caps count them)."""
        return self._delivered_by_entry.get(entry_id, ())

    def missed_since_delivered(self, entry_id: str) -> int:
        """Own `missed` lines after the newest own `delivered` line (all of them when it
        was never delivered), counted up to `MISSED_CAP`."""
        count = 0
        for line in reversed(self._by_entry.get(entry_id, ())):
            status = status_of(line.outcome)
            if status == Status.DELIVERED:
                break
            if status == Status.MISSED:
                count += 1
                if count >= MISSED_CAP:
                    break
        return count

    def rate_count(self, now: int, *, target: str | None = None, entry: str | None = None) -> int:
        """Counted lines with `ts >= now - 3600`, keyed by pane (resolved fires) or entry (absent)."""
        if target is not None:
            stamps = self._counted_by_target.get(target, ())
        else:
            stamps = self._counted_by_entry.get(entry or "", ())
        floor = now - RATE_WINDOW
        return sum(1 for ts in stamps if ts >= floor)

    def orphaned_since(self, entry_id: str, created_at: int) -> int:
        """Since when the entry's target has been missing (0 = not orphaned).

        No own lines → `created_at`; only `rescheduled` lines → 0; else the oldest
        line of the run after the newest `delivered*`/`respawned*` line.
        """
        own = self._by_entry.get(entry_id)
        if not own:
            return created_at
        since = 0
        seen_any = False
        for line in reversed(own):
            if status_of(line.outcome) == Status.RESCHEDULED:
                continue
            seen_any = True
            if proves_resolution(line.outcome):
                break
            since = line.ts
        if not seen_any:
            return 0
        return since


#: A budgeted entry's `delivered` lines this recent stay in the live segment: its local day
#: began at most 25 hours ago, and the tick reads the day's deliveries from the live log.
BUDGET_KEEP = 26 * 3600


def lines_to_keep(
    lines: Sequence[LogLine],
    now: int,
    backoff: Collection[str],
    live: Collection[str] | None = None,
    counted: Mapping[str, int] | None = None,
    budgeted: Collection[str] = (),
) -> list[int]:
    """Indices of the lines a rotation must keep in the live segment so that every
    query above answers the same afterwards: each entry's newest line, newest
    `rescheduled`, newest non-rescheduled line and orphan-run start; its newest
    `delivered` line and the newest `MISSED_CAP` missed lines after it (the
    placeholders' `{last_delivered}` and `{missed}`); every line in the rate window;
    and for backoff entries (ids in `backoff`) the newest `WALK_LIMIT + 1` lines of
    the schedule history, all the streak walk may look at.

    With `live` (the ids in the entry file), lines of removed entries keep only
    their part in the rate window, so entries that come and go do not pile up.

    With `counted` (entry id → n: the caps, `rk.core.cost.caps.kept_deliveries`), an
    entry also keeps its newest n `delivered` lines and its newest `skipped-cap`
    line, all its caps count.

    For entries with a token budget (`budgeted`), every `delivered` line of the
    last `BUDGET_KEEP` seconds: the tick counts their day's turns from them.

    `AFTERMATH` lines play no part in the queries; an entry's newest `turn-timeout`
    is kept (the deliveries it handled stay handled), and its newest `dormant` and
    `woken` lines (`rk.core.schedule.dormant` reads them).
    """
    keep: set[int] = set()
    floor = now - RATE_WINDOW
    budget_floor = now - BUDGET_KEEP
    by_entry: dict[str, list[int]] = {}
    timeouts: dict[tuple[str, str], int] = {}
    for i, line in enumerate(lines):
        if line.ts >= floor or (
            line.entry in budgeted and line.ts >= budget_floor and status_of(line.outcome) == Status.DELIVERED
        ):
            keep.add(i)
        if is_aftermath(line.outcome):
            if status_of(line.outcome) in _KEPT_AFTERMATH:
                timeouts[(line.entry, status_of(line.outcome))] = i
            continue
        by_entry.setdefault(line.entry, []).append(i)
    keep.update(i for (entry_id, _), i in timeouts.items() if live is None or entry_id in live)
    for entry_id, idxs in by_entry.items():
        if live is not None and entry_id not in live:
            continue
        keep.add(idxs[-1])
        anchor = next((i for i in reversed(idxs) if status_of(lines[i].outcome) != Status.HELD_QUIET), None)
        if anchor is not None:
            keep.add(anchor)
        cut = 0
        for pos in range(len(idxs) - 1, -1, -1):
            if status_of(lines[idxs[pos]].outcome) == Status.RESCHEDULED:
                keep.add(idxs[pos])
                cut = pos + 1
                break
        # orphan run: newest non-rescheduled line and the oldest line of the run
        run_start = None
        for pos in range(len(idxs) - 1, -1, -1):
            line = lines[idxs[pos]]
            if status_of(line.outcome) == Status.RESCHEDULED:
                continue
            if run_start is None:
                keep.add(idxs[pos])
            if proves_resolution(line.outcome):
                break
            run_start = pos
        if run_start is not None:
            keep.add(idxs[run_start])
        keep.update(_delivered_and_missed_since(lines, idxs))
        keep.update([i for i in idxs if is_marked(lines[i].outcome)][-1:])  # what a wake on the world consumed
        if entry_id in backoff:
            keep.update(idxs[cut:][-(ladder.WALK_LIMIT + 1) :])
        if counted and counted.get(entry_id):
            keep.update(_counted_by_caps(lines, idxs, counted[entry_id]))
    return sorted(keep)


def _counted_by_caps(lines: Sequence[LogLine], idxs: Sequence[int], n: int) -> list[int]:
    """Of one entry's line indices: its newest `n` delivered lines and newest `skipped-cap` line."""
    delivered = [i for i in idxs if status_of(lines[i].outcome) == Status.DELIVERED][-n:]
    said = [i for i in idxs if status_of(lines[i].outcome) == Status.SKIPPED_CAP][-1:]
    return delivered + said


def _delivered_and_missed_since(lines: Sequence[LogLine], idxs: Sequence[int]) -> list[int]:
    """Of one entry's line indices: its newest `delivered` line and the newest
    `MISSED_CAP` missed lines after it (or of all, when it was never delivered); its
    newest `delivered`/`respawned` line, which bounds the orphan run that these
    older lines would otherwise join; and its newest `delivered` line of reason
    `schedule` (the placeholders' watermark), which may be older than all of these."""
    out: list[int] = []
    missed = 0
    resolution = delivered = False
    for i in reversed(idxs):
        outcome = lines[i].outcome
        if not resolution and proves_resolution(outcome):
            out.append(i)
            resolution = True
        status = status_of(outcome)
        if status == Status.DELIVERED:
            if not delivered:
                out.append(i)
                delivered = True
            if lines[i].reason == Reason.SCHEDULE:
                out.append(i)
                break
            continue
        if status == Status.MISSED and missed < MISSED_CAP and not delivered:
            out.append(i)
            missed += 1
    return out
