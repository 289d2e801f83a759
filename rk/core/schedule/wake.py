"""wake_on: fire when another pane on the server finished, asked, or vanished.

Each entry keeps its own observation of the server (a fingerprint of every
pane's agent state, *excluding the entry's own target*, so its own deliveries
never count as the next edge). A change fires only when it is actionable: some
pane became idle or waiting (or anything but active), or disappeared. Going
active is ignored: an agent starting work needs no attention. The debounce is
measured from the entry's newest own log line, and a held edge stays pending
(the old observation is kept), so a burst coalesces into one fire.

`wake_from: human` (the default) also lets pass a pane going idle at the end of a
turn rk started (`rk.core.log.cause`): the answer to rk's own heartbeat. Waiting
(a question), a limit and a vanished pane wake whoever started the turn: a human
must act on them.

Pure functions; the cursor file is read and written by `rk.store.cursor`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from rk.core.cost.turn_timeout import StateLine
from rk.core.log.cause import RK, VANISHED
from rk.core.pane.state import AgentState


@dataclass(frozen=True)
class Observation:
    """What an entry last saw of the server: a fingerprint and when."""

    fingerprint: str
    observed_at: int


class WakeVerdict(StrEnum):
    """The outcome of comparing an entry's observation with the server now."""

    COLD_START = "wake-cold-start"  #: no prior observation: store, never fire
    UNCHANGED = "unchanged"  #: same fingerprint: keep the observation
    IGNORED = "wake-ignored-transition"  #: changed, nothing actionable: advance
    FROM_RK = "wake-ignored-rk"  #: wake_from human: only turns rk started ended: advance
    DEBOUNCED = "wake-debounced"  #: actionable but within debounce: keep (pending)
    FIRE = "fire"  #: actionable: fire and advance


def fingerprint(states: Mapping[str, str], exclude: str = "") -> str:
    """`pane=state\\n` for every pane with a known state, sorted by pane-id *string*
    (`%10` before `%9`), leaving out `exclude` (the entry's own target pane)."""
    return "".join(f"{p}={states[p]}\n" for p in sorted(states) if p != exclude and states[p])


class Fingerprints:
    """The server's fingerprint built once per evaluation, with each entry's own
    target cut out by slicing (a thousand wake entries would otherwise sort and
    join every pane a thousand times)."""

    def __init__(self, states: Mapping[str, str]) -> None:
        self._spans: dict[str, tuple[int, int]] = {}
        self._parsed: dict[str, Mapping[str, str]] = {}
        parts = []
        at = 0
        for p in sorted(states):
            if state := states[p]:
                part = f"{p}={state}\n"
                parts.append(part)
                self._spans[p] = (at, at + len(part))
                at += len(part)
        self.full = "".join(parts)

    def parsed(self, fp: str) -> Mapping[str, str]:
        """`parse_fingerprint(fp)`, once per distinct fingerprint of this evaluation
        (a thousand wake entries share a few hundred); read-only."""
        found = self._parsed.get(fp)
        if found is None:
            found = self._parsed[fp] = parse_fingerprint(fp)
        return found

    def without(self, pane: str) -> str:
        span = self._spans.get(pane)
        if span is None:
            return self.full
        return self.full[: span[0]] + self.full[span[1] :]


def parse_fingerprint(fp: str) -> dict[str, str]:
    """Back to `{pane: state}`; lines without `=` or with an empty half are skipped."""
    out: dict[str, str] = {}
    for line in fp.split("\n"):
        pane, sep, state = line.partition("=")
        if sep and pane and state:
            out[pane] = state
    return out


#: Which of a pane's changes to let pass: `ignore(pane, state)` (None: none).
Ignore = Callable[[str, str], bool] | None


def actionable(old: Mapping[str, str], new: Mapping[str, str], ignore: Ignore = None) -> bool:
    """True if some pane changed to anything but `active`, or vanished (and `ignore`
    does not let that change pass).

    A pane that first appears as idle or waiting is actionable; one that first
    appears as active, or any change to active, is not.
    """
    for pane in old.keys() | new.keys():
        before = old.get(pane)
        after = new.get(pane)
        if after is None:
            return True  # vanished (or fell back to unknown)
        if after != before and after != AgentState.ACTIVE and (ignore is None or not ignore(pane, after)):
            return True
    return False


def rk_turn_ended(cause: Callable[[str, str], str]) -> Callable[[str, str], bool]:
    """`wake_from: human`'s `Ignore`: a pane going idle at the end of a turn that
    `cause(pane, state)` names rk's (`rk.core.log.cause.Causes.of`). Waiting, limited
    and vanished always wake: a human must act on them, whoever started the turn."""
    return lambda pane, state: state == AgentState.IDLE and cause(pane, state) == RK


def pane_order(pane: str) -> tuple[int, str]:
    """tmux's order of pane ids: by number (`%9` before `%10`), anything else after."""
    digits = pane[1:]
    return (int(digits), "") if pane.startswith("%") and digits.isdigit() else (1 << 62, pane)


#: A wake fire's pane state when the pane vanished (or its state fell back to unknown):
#: `rk.core.log.cause.VANISHED`.


def trigger(old: Mapping[str, str], new: Mapping[str, str], ignore: Ignore = None) -> tuple[str, str]:
    """Which pane's change made an edge actionable, and its new state (`gone` when it
    vanished or its state became unknown): `("", "")` when none did. A change `ignore`
    lets pass is not named.

    When several panes changed actionably in one edge (a burst held by the debounce
    coalesces), the lowest pane id in tmux's order (`%9` before `%10`) is the one
    named: a stable choice that does not depend on which change came first."""
    for pane in sorted(old.keys() | new.keys(), key=pane_order):
        before, after = old.get(pane), new.get(pane)
        if after is None:
            return pane, VANISHED
        if after != before and after != AgentState.ACTIVE and (ignore is None or not ignore(pane, after)):
            return pane, after
    return "", ""


def wake_edge(
    previous: Observation | None,
    current: str,
    newest_own_ts: int | None,
    debounce: int,
    now: int,
    parse: Callable[[str], Mapping[str, str]] = parse_fingerprint,
    ignore: Ignore = None,
) -> tuple[WakeVerdict, Observation]:
    """Decide one entry's wake edge; returns the verdict and the observation to store.
    `parse` reads a fingerprint (`Fingerprints.parsed` shares the work across entries);
    `ignore` (`rk_turn_ended`) lets pass the changes an entry does not wake for: when
    those are all there is, the edge is consumed (`FROM_RK`), never held."""
    observed = Observation(fingerprint=current, observed_at=now)
    if previous is None:
        return WakeVerdict.COLD_START, observed
    if previous.fingerprint == current:
        return WakeVerdict.UNCHANGED, previous
    old, new = parse(previous.fingerprint), parse(current)
    if not actionable(old, new):
        return WakeVerdict.IGNORED, observed
    if ignore is not None and not actionable(old, new, ignore):
        return WakeVerdict.FROM_RK, observed
    if newest_own_ts is not None and now - newest_own_ts < debounce:
        return WakeVerdict.DEBOUNCED, previous
    return WakeVerdict.FIRE, observed


#: What a limit-reset entry remembers of its target: its state, or these.
LIMITED, GONE, UNKNOWN = AgentState.LIMITED, "gone", "unknown"
#: A limit-reset fire typed its resume at `observed_at` and has not yet seen it take:
#: the edge is pending until the target goes to work (spent) or is limited again
#: (a refused resume: fired again after that limit's reset).
RESUMING = "resuming"


def journaled_since(lines: Sequence[StateLine], since: int) -> str:
    """The target's newest state other than `idle` in its journal (its hooks' states,
    oldest first) from `since` on, or "": after a resume, `limited` is a refusal (even
    one over before any tick saw it: a tick comes every 30 s), `active` or `waiting`
    the resume taking (even a turn that ended between two ticks)."""
    busy = [line.to for line in lines if line.ts >= since and line.to != AgentState.IDLE]
    return busy[-1] if busy else ""


def limit_edge(
    previous: Observation | None,
    target_state: str | None,
    newest_own_ts: int | None,
    debounce: int,
    now: int,
    journaled: str = "",
) -> tuple[WakeVerdict, Observation]:
    """`limit-reset`: fire once when the entry's own target goes from `limited` to
    at rest (`idle`). `target_state` is None when the target does not resolve.
    Going from the limit to work (a human resumed it) consumes the edge.

    A fire's edge stays pending (`RESUMING`) until the resume is seen to take: the
    target going to work spends it; the target limited again (a refused resume) is a
    new limit, whose end fires again. At rest again, `journaled` (`journaled_since`
    the fire) tells what no tick saw: `limited` fires again, work spends the edge."""
    current = GONE if target_state is None else (target_state or UNKNOWN)
    observed = Observation(fingerprint=current, observed_at=now)
    if previous is None:
        return WakeVerdict.COLD_START, observed
    resuming = previous.fingerprint == RESUMING and current == AgentState.IDLE
    refused = resuming and journaled == LIMITED
    if resuming and not journaled:
        return WakeVerdict.UNCHANGED, previous  # the resume has not shown yet: still pending
    if previous.fingerprint == current:
        return WakeVerdict.UNCHANGED, previous
    if not (previous.fingerprint == LIMITED or refused) or current != AgentState.IDLE:
        return WakeVerdict.IGNORED, observed
    if newest_own_ts is not None and now - newest_own_ts < debounce:
        return WakeVerdict.DEBOUNCED, previous
    return WakeVerdict.FIRE, Observation(fingerprint=RESUMING, observed_at=now)
