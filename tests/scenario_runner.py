"""Load and run the scenario files in `specs/scenarios/`.

A scenario file has a title, optional shared `entries`, `panes`, `zone`, and a
list of `cases`. A case is either a single evaluation (`now`, `log`, `cursor`
→ expected fires, absent fires, missed, diagnostics, next cursor) or, with
`kind: timeline`, a tick-by-tick replay through `rk.core.schedule.simulate` with expected
fire times. Times may be unix seconds, ISO-8601 instants, or durations such as
`5m` (seconds after the epoch), so timelines read naturally.

A single evaluation may also expect `typed`: per entry, the text its fire
(resolved or absent) would type at `now` (`rk.core.schedule.placeholders.typed`), and a
fire may name its `occurrence` and wake fields (`wake_pane`, `wake_state`,
`wake_window`); a pane may have a `window_name`.
"""

from __future__ import annotations

import collections
import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from rk.core.durations import DurationError, parse_duration
from rk.core.log.delivery import LogLine, LogView
from rk.core.pane.facts import PaneFact, PaneKind, TargetFact, resolve_all
from rk.core.schedule.cronexpr import zone_for
from rk.core.schedule.decoding import decode_entry
from rk.core.schedule.due import due
from rk.core.schedule.placeholders import typed
from rk.core.schedule.simulate import AgentModel, StateChange, simulate
from rk.core.schedule.wake import Observation
from rk.core.schedule.world import Signal, World
from rk.host.clock import ClockError, parse_instant

SCENARIO_DIR = Path(__file__).resolve().parent.parent / "specs" / "scenarios"


def T(value: Any) -> int:
    """A time: int, ISO-8601 instant, or a duration meaning seconds after 0."""
    if isinstance(value, bool):
        raise ValueError(f"bad time {value!r}")
    if isinstance(value, int):
        return value
    text = str(value).strip()
    negative = text.startswith("-")
    try:
        seconds = parse_duration(text.lstrip("-"))
        return -seconds if negative else seconds
    except DurationError:
        pass
    try:
        return parse_instant(text)
    except ClockError as exc:
        raise ValueError(f"bad time {value!r}: {exc}") from None


def _entry(raw: dict) -> Any:
    raw = dict(raw)
    raw.setdefault("target", {"kind": "pane", "pane": "%1"})
    raw.setdefault("payload", "ping")
    created = dict(raw.get("created_by") or {})
    created["at"] = T(created.get("at", 0))
    raw["created_by"] = created
    if "muted_until" in raw:
        raw["muted_until"] = T(raw["muted_until"])
    return decode_entry(raw)


def _panes(raw: dict | None) -> list[PaneFact]:
    out = []
    for pane_id, spec in (raw or {}).items():
        spec = spec or {}
        out.append(
            PaneFact(
                pane_id=str(pane_id),
                state=str(spec.get("state", "")),
                epoch=T(spec.get("epoch", 0)),
                pid=int(spec.get("pid", 0)),
                command=str(spec.get("command", "claude")),
                session_ref=str(spec.get("session", "")),
                window_id=str(spec.get("window", f"@{str(pane_id).lstrip('%')}")),
                role=str(spec.get("role", "")),
                active=bool(spec.get("active", True)),
                dead=bool(spec.get("dead", False)),
                kind=PaneKind(str(spec.get("kind", "agent"))),
                window_name=str(spec.get("window_name", "")),
                server_started=T(spec.get("server_started", 0)),
                server_pid=int(spec.get("server_pid", 0)),
            )
        )
    return out


def _log(raw: list | None) -> list[LogLine]:
    out = []
    for item in raw or []:
        if isinstance(item, dict):
            out.append(
                LogLine(
                    T(item["ts"]),
                    item["entry"],
                    item.get("target", ""),
                    item.get("reason", "schedule"),
                    item["outcome"],
                )
            )
        else:
            ts, entry, target, reason, outcome = item
            out.append(LogLine(T(ts), str(entry), str(target), str(reason), str(outcome)))
    return out


def _cursor(raw: dict | None) -> dict[str, Observation]:
    return {
        str(k): Observation(fingerprint=str(v.get("fingerprint", "")), observed_at=T(v.get("observed_at", 0)))
        for k, v in (raw or {}).items()
    }


def _world(spec: dict) -> World | None:
    """A case's `signals` (`{id, ts, name, data}`, oldest first) and watched `files` (path: fingerprint)."""
    if "signals" not in spec and "files" not in spec:
        return None
    signals = [
        Signal(int(s["id"]), T(s["ts"]), str(s["name"]), str(s.get("data", ""))) for s in spec.get("signals") or []
    ]
    return World(signals, {str(k): str(v) for k, v in (spec.get("files") or {}).items()})


@dataclass
class Case:
    file: str
    title: str
    name: str
    spec: dict

    @property
    def id(self) -> str:
        return f"{self.file}::{self.name}"


def load_cases() -> list[Case]:
    yaml = YAML(typ="safe")
    cases = []
    for path in sorted(SCENARIO_DIR.glob("*.yaml")):
        doc = yaml.load(path.read_text(encoding="utf-8"))
        shared = {k: v for k, v in doc.items() if k not in ("cases", "title", "spec")}
        for raw in doc["cases"]:
            merged = {**shared, **raw}
            cases.append(Case(path.name, doc.get("title", path.stem), str(raw["name"]), merged))
    return cases


def _fire_dict(fire) -> dict:
    return {
        "entry": fire.entry,
        "reason": str(fire.reason),
        "pane": fire.pane,
        "rung": fire.rung,
        "due_at": fire.due_at,
        "refused": fire.refused,
        "occurrence": fire.occurrence,
        "wake_pane": fire.wake_pane,
        "wake_state": fire.wake_state,
        "wake_window": fire.wake_window,
        "signal": fire.signal,
        "signal_data": fire.signal_data,
        "mark": fire.mark,
    }


def _check_fires(kind: str, got: list, want: list | None) -> list[str]:
    problems = []
    want = want or []
    got_d = [_fire_dict(f) for f in got]
    if len(got_d) != len(want):
        return [f"{kind}: want {len(want)} {want}, got {len(got_d)} {got_d}"]
    for g, w in zip(got_d, want):
        for key, value in w.items():
            expected = T(value) if key in ("due_at", "occurrence") else value
            if g.get(key) != expected:
                problems.append(f"{kind}: {key} want {expected!r}, got {g.get(key)!r} in {g}")
    return problems


def run_case(case: Case) -> list[str]:
    """Run one case; return a list of mismatches (empty = pass)."""
    spec = case.spec
    zone = zone_for(spec.get("zone", "UTC"))
    entries = [_entry(e) for e in spec.get("entries", [])]
    if spec.get("kind") == "timeline":
        return _run_timeline(spec, entries, zone)
    panes = _panes(spec.get("panes"))
    targets = resolve_all(entries, panes)
    for entry_id, override in (spec.get("targets") or {}).items():
        if isinstance(override, str):
            pane = next(p for p in panes if p.pane_id == override)
            targets[entry_id] = TargetFact(pane=pane.pane_id, state=pane.state, epoch=pane.epoch)
        else:
            targets[entry_id] = TargetFact(why=str(override.get("why", "")))
    log = LogView(_log(spec.get("log")))
    cursor = _cursor(spec.get("cursor"))
    now = T(spec["now"])
    paused = spec.get("paused_until")
    ev = due(
        entries,
        log,
        panes,
        targets,
        cursor,
        now,
        zone=zone,
        max_entries=int(spec.get("max_entries", 50)),
        paused_until=None if paused is None else T(paused),
        world=_world(spec),
    )
    expect = spec.get("expect") or {}
    got_quiet = [q.entry for q in ev.quiet]
    if got_quiet != list(expect.get("quiet") or []):
        problems_quiet = [f"quiet: want {expect.get('quiet') or []}, got {got_quiet}"]
    else:
        problems_quiet = []
    for key, got in (("paused", ev.paused), ("waiting", ev.waiting), ("capped", ev.capped)):
        ids = [q.entry for q in got]
        if ids != list(expect.get(key) or []):
            problems_quiet.append(f"{key}: want {expect.get(key) or []}, got {ids}")
    problems = problems_quiet + _check_fires("fires", list(ev.fires), expect.get("fires"))
    problems += _check_fires("absent", list(ev.absent), expect.get("absent"))
    got_missed = [m.entry for m in ev.missed]
    if got_missed != list(expect.get("missed") or []):
        problems.append(f"missed: want {expect.get('missed') or []}, got {got_missed}")
    if "ledger" in expect:  # the lines written before any fire (`Evaluation.ledger`): [entry, outcome]
        got_ledger = [[line.entry, line.outcome] for line, _ in ev.ledger(now)]
        if got_ledger != expect["ledger"]:
            problems.append(f"ledger: want {expect['ledger']}, got {got_ledger}")
    if "typed" in expect:
        by_id = {e.id: e for e in entries}
        got_typed = {f.entry: typed(by_id[f.entry], f, log, f.at, zone) for f in (*ev.fires, *ev.absent)}
        want_typed = {str(k): str(v) for k, v in (expect["typed"] or {}).items()}
        if got_typed != want_typed:
            problems.append(f"typed: want {want_typed}, got {got_typed}")
    if "diagnostics" in expect:
        problems += _check_diags(ev.diagnostics, expect["diagnostics"], exact=True)
    if "diagnostics_include" in expect:
        problems += _check_diags(ev.diagnostics, expect["diagnostics_include"], exact=False)
    for entry_id, want in (expect.get("cursor") or {}).items():
        got = ev.next_cursor.get(entry_id)
        if want is None:
            if got is not None:
                problems.append(f"cursor[{entry_id}]: want absent, got {got}")
            continue
        wanted = Observation(fingerprint=str(want.get("fingerprint", "")), observed_at=T(want.get("observed_at", 0)))
        if got != wanted:
            problems.append(f"cursor[{entry_id}]: want {wanted}, got {got}")
    return problems


def _check_diags(got, want, exact: bool) -> list[str]:
    problems = []
    got_pairs = collections.Counter((d.entry, d.reason) for d in got)
    want_pairs = collections.Counter((str(w[0]), str(w[1])) for w in want)
    if exact and got_pairs != want_pairs:
        problems.append(f"diagnostics: want {sorted(want_pairs.elements())}, got {sorted(got_pairs.elements())}")
    if not exact:
        missing = want_pairs - got_pairs
        if missing:
            problems.append(f"diagnostics: missing {sorted(missing.elements())} in {sorted(got_pairs.elements())}")
    for w in want:
        if len(w) > 2:
            if not any(d.entry == str(w[0]) and d.reason == str(w[1]) and str(w[2]) in d.detail for d in got):
                details = [d.detail for d in got if d.entry == str(w[0]) and d.reason == str(w[1])]
                problems.append(f"diagnostic {w[0]} {w[1]}: detail {w[2]!r} not in {details}")
    return problems


def _run_timeline(spec: dict, entries, zone) -> list[str]:
    script = [StateChange(T(at), str(pane), str(state)) for at, pane, state in spec.get("script", [])]
    agents = {
        str(p): AgentModel(busy_for=T((m or {}).get("busy_for", "20s"))) for p, m in (spec.get("agents") or {}).items()
    }
    sim = simulate(
        entries,
        start=T(spec.get("start", 0)),
        end=T(spec["end"]),
        tick=T(spec.get("tick", "30s")),
        phase=T(spec.get("phase", 0)),
        script=script,
        agents=agents,
        roles=spec.get("roles"),
        sessions=spec.get("sessions"),
        zone=zone,
        log=_log(spec.get("log")),
        rate_per_hour=int(spec.get("rate_per_hour", 30)),
    )
    expect = spec.get("expect") or {}
    entry_id = expect.get("entry") or (entries[0].id if entries else "")
    lines = [line for line in sim.lines if line.entry == entry_id]
    fires = [line for line in lines if line.outcome != "missed"]
    times = [line.ts for line in fires]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    problems = []
    if "fire_times" in expect:
        want = [T(x) for x in expect["fire_times"]]
        if times != want:
            problems.append(f"fire_times: want {want}, got {times}")
    if "outcomes" in expect:
        got = [f"{line.ts}:{line.reason}:{line.outcome}" for line in lines]
        want = [f"{T(ts)}:{reason}:{outcome}" for ts, reason, outcome in expect["outcomes"]]
        if got != want:
            problems.append(f"outcomes: want {want}, got {got}")
    if "count" in expect and len(times) != int(expect["count"]):
        problems.append(f"count: want {expect['count']}, got {len(times)} ({times})")
    if "max_count" in expect and len(times) > int(expect["max_count"]):
        problems.append(f"max_count: want at most {expect['max_count']}, got {len(times)} ({times})")
    if expect.get("gaps_nondecreasing") and any(b < a for a, b in itertools.pairwise(gaps)):
        problems.append(f"gaps decrease: {gaps}")
    if "min_gap" in expect and gaps and min(gaps) < T(expect["min_gap"]):
        problems.append(f"min_gap {T(expect['min_gap'])}: gaps {gaps}")
    if "max_gap" in expect and gaps and max(gaps) > T(expect["max_gap"]):
        problems.append(f"max_gap {T(expect['max_gap'])}: gaps {gaps}")
    if "gaps_after" in expect:
        spec_after = expect["gaps_after"]
        tail = [g for t, g in zip(times[1:], gaps) if t > T(spec_after["from"])]
        lo, hi = T(spec_after["min"]), T(spec_after["max"])
        if not tail or any(not lo <= g <= hi for g in tail):
            problems.append(f"gaps after {spec_after['from']}: want all in [{lo}, {hi}], got {tail}")
    if "outcome_counts" in expect:
        got_counts = collections.Counter(line.outcome for line in lines)
        want_counts = {str(k): int(v) for k, v in expect["outcome_counts"].items()}
        if dict(got_counts) != want_counts:
            problems.append(f"outcome_counts: want {want_counts}, got {dict(got_counts)}")
    if "holds" in expect:
        holds = [e.at for e in sim.events if e.kind == "hold" and e.entry == entry_id]
        want = [T(x) for x in expect["holds"]]
        if holds != want:
            problems.append(f"holds: want {want}, got {holds}")
    return problems
