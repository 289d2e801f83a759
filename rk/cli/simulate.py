"""`rk cron simulate`: an entry replayed by `rk.core.schedule.simulate`, drawn by `rk.cli.timeline`."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import tzinfo
from typing import TYPE_CHECKING, Annotated

import typer

from rk.cli.entry_flags import EntryFlags, command, output
from rk.cli.environment import Environment, environment, moment, usage
from rk.cli.flags import (
    CHANGED_OFF,
    HOURS_OFF,
    WAKE_OFF,
    active_hours_from_flag,
    cap_from_flag,
    check_only_if_changed,
    choice,
    duration,
    only_if_changed_from_flag,
    schedule_from_flags,
    wake_from_flags,
    with_wake_source,
)
from rk.cli.listing import schedule_text
from rk.cli.options import param
from rk.cli.store import find, loadable
from rk.cli.waking import dormant_after_flag
from rk.core import bounds
from rk.core.schedule.entry import CreatedBy, Cron, Deliver, Entry, Target, TargetKind, WakeOn, WakeOnly
from rk.core.schedule.fields import Surface
from rk.core.schedule.hours import ActiveHours
from rk.host import clock

if TYPE_CHECKING:
    from rk.core.schedule.simulate import Simulation, StateChange


_BEFORE = (
    param(
        "entry_id",
        Annotated[
            str | None,
            typer.Argument(metavar="[ID]", help="An entry of the server's file (else give schedule flags)."),
        ],
        None,
    ),
    param(
        "states",
        Annotated[
            str,
            typer.Option(
                "--states", help='The target pane\'s script, e.g. "0 idle; 10m active; 25m idle; 40m waiting".'
            ),
        ],
        "0 idle",
    ),
    param(
        "other",
        Annotated[
            list[str] | None,
            typer.Option("--other", help="Another pane's script (%2, %3, … in order), for wake_on."),
        ],
        None,
    ),
    param("for_", Annotated[str, typer.Option("--for", help="How long to replay.")], "2h"),
    param("tick", Annotated[str, typer.Option("--tick", help="Poll interval.")], "30s"),
    param(
        "busy",
        Annotated[
            str,
            typer.Option(
                "--busy", help="How long the target stays active after each delivery (0s: it does not react)."
            ),
        ],
        "20s",
    ),
    param(
        "start",
        Annotated[str | None, typer.Option("--start", help="Start instant (ISO-8601 or unix seconds; default now).")],
        None,
    ),
)
_AFTER = (
    param(
        "width",
        Annotated[int | None, typer.Option("--width", help="Columns for the drawing (default: the terminal's).")],
        None,
    ),
    *output(force=False),
)


@dataclass(frozen=True)
class _Replay:
    """The replay's span, poll and start, and how long the target answers."""

    start: int
    span: int
    step: int
    react: int


def _replay(env: Environment, flags: EntryFlags) -> _Replay:
    if flags.width is not None and not 20 <= flags.width <= 1000:
        raise usage("--width must be between 20 and 1000 columns")
    span = duration("--for", flags.for_)
    step = duration("--tick", flags.tick)
    if span // step > bounds.MAX_SIM_STEPS:
        raise usage(
            f"--for {flags.for_} at --tick {flags.tick} is {span // step} polls; at most {bounds.MAX_SIM_STEPS}"
        )
    react = duration("--busy", flags.busy, allow_zero=True)
    if flags.start is not None:
        try:
            t0 = clock.parse_instant(flags.start)
        except clock.ClockError as exc:
            raise usage(f"--start: {exc}") from None
    else:
        t0 = env.now()
    return _Replay(t0, span, step, react)


def _replayed(env: Environment, flags: EntryFlags) -> tuple[Entry, _Replay]:
    """The entry to replay (the file's, or one made of the flags) with the flags' changes, on pane %1."""
    schedule = schedule_from_flags(flags, required=flags.entry_id is None, note=env.notice)
    hours = active_hours_from_flag(flags.active_hours, allow_off=True)
    per_day = cap_from_flag("--max-per-day", flags.max_per_day, allow_off=True)
    total = cap_from_flag("--max-total", flags.max_total, allow_off=True)
    deliver = choice("--deliver", flags.deliver, Deliver)
    wake = wake_from_flags(flags.wake_on, None, flags.wake_debounce, True, flags.wake_from)
    changed = only_if_changed_from_flag(flags.only_if_changed, allow_off=True)
    run = _replay(env, flags)
    pane = Target(TargetKind.PANE, "%1")
    if flags.entry_id is not None:
        base = find(loadable(env), flags.entry_id)
    else:
        base = Entry(id="sim", name="simulated", schedule=schedule or WakeOnly(), target=pane, payload="simulated")
    entry = replace(base, target=pane, muted=False, muted_until=0, created_by=CreatedBy(at=run.start))
    if schedule is not None:
        entry = replace(entry, schedule=schedule)
    if deliver is not None:
        entry = replace(entry, deliver=deliver)
    if per_day is not None:  # the caps count the replay's own deliveries (its log starts empty)
        entry = replace(entry, max_per_day=per_day)
    if total is not None:
        entry = replace(entry, max_total=total)
    if hours == HOURS_OFF or isinstance(hours, ActiveHours):
        entry = replace(entry, active_hours=hours if isinstance(hours, ActiveHours) else None)
    if wake == WAKE_OFF or isinstance(wake, WakeOn):
        entry = replace(entry, wake_on=wake if isinstance(wake, WakeOn) else None)
    if flags.wake_on is None:
        entry = with_wake_source(entry, flags.wake_from)
    if changed is not None:
        entry = replace(entry, only_if_changed="" if changed == CHANGED_OFF else changed)
    check_only_if_changed(entry.only_if_changed, entry.wake_on is not None)
    if (after := dormant_after_flag(flags.dormant_after)) is not None:  # a deaf agent (--busy 0) goes dormant
        entry = replace(entry, dormant_after=after)
    return entry, run


def _scripts(flags: EntryFlags, t0: int) -> tuple[list[StateChange], list[str]]:
    """The panes' scripted states (%1 the target, then each --other), and the other panes."""
    from rk.cli.timeline import ScriptError, parse_script

    try:
        script = parse_script(flags.states, "%1", t0)
        others = []
        for i, text in enumerate(flags.other or [], start=2):
            script += parse_script(text, f"%{i}", t0)
            others.append(f"%{i}")
    except ScriptError as exc:
        raise usage(str(exc)) from None
    return script, others


def simulate_entry(ctx: typer.Context, flags: EntryFlags) -> None:
    """Replay an entry against a scripted pane-state timeline and draw fires, holds and skips.

    Reads the entries file for ID (with schedule flags, no file at all); never tmux.

    Example: rk cron simulate --idle-every 3m --deliver when-idle --states "0 idle; 10m active; 25m idle" --for 1h
    """
    env = environment(ctx, flags.server, flags.as_json)
    from rk.core.schedule.due import cron_zone
    from rk.core.schedule.simulate import AgentModel, simulate

    entry, run = _replayed(env, flags)
    script, others = _scripts(flags, run.start)
    zone = cron_zone(entry.schedule, env.zone()) if isinstance(entry.schedule, Cron) else env.zone()
    sim = simulate(
        [entry],
        start=run.start,
        end=run.start + run.span,
        tick=run.step,
        script=script,
        agents={"%1": AgentModel(busy_for=run.react)} if run.react else {},
        zone=zone,
    )
    if env.json:
        env.result(_document(entry, run, script, sim))
    else:
        _draw(env, flags, entry, run, sim, others, zone)


cmd_simulate = command(simulate_entry, Surface.SIMULATE, before=_BEFORE, after=_AFTER)


def _document(entry: Entry, run: _Replay, script: list[StateChange], sim: Simulation) -> dict[str, object]:
    """The replay as `--json` prints it."""
    return {
        "entry": {
            "id": entry.id,
            "schedule": entry.schedule.summary,
            "deliver": entry.deliver or Deliver.IMMEDIATE,
            "wake_on": entry.wake_on is not None,
            "only_if_changed": entry.only_if_changed or None,
        },
        **({"screens": SCREENS_NOTE} if entry.only_if_changed else {}),
        "start": run.start,
        "end": run.start + run.span,
        "tick": run.step,
        "states": [{"at": c.at, "pane": c.pane, "state": c.state} for c in script],
        "events": [
            {
                "at": e.at,
                "kind": e.kind,
                "reason": e.reason,
                "outcome": e.outcome,
                "pane": e.pane,
                "due_at": e.due_at,
                "rung": e.rung,
            }
            | ({"typed": e.typed} if e.typed else {})
            | ({"skipped_if_unchanged": True} if e.if_unchanged else {})
            for e in sim.events
        ],
    }


def _draw(
    env: Environment, flags: EntryFlags, entry: Entry, run: _Replay, sim: Simulation, others: list[str], zone: tzinfo
) -> None:
    """The replay drawn for a person: the timeline, the first text typed, and the only-if-changed note."""
    from rich.console import Console

    from rk.cli.timeline import render

    t0, react = run.start, run.react
    console = Console(file=env.stdout, width=flags.width, highlight=False)
    title = (
        f"{entry.id}  {schedule_text(entry.schedule, zone)}{' +wake' if entry.wake_on else ''}"
        f"  deliver {entry.deliver or Deliver.IMMEDIATE}"
        f"  target %1{f' (answers in {react}s)' if react else ''}  over {flags.for_} from "
        f"{moment(t0, zone)}"
    )
    console.print(
        render(sim, title=title, pane="%1", others=others, start=t0, end=t0 + run.span, width=console.width, zone=zone)
    )
    first = next((e for e in sim.events if e.typed), None)
    if first is not None:
        console.print(f"typed at {moment(first.at, zone)}: {first.typed}")
    if entry.only_if_changed:
        maybe = [moment(e.at, zone) for e in sim.events if e.if_unchanged]
        console.print(f"only-if-changed {entry.only_if_changed}: {SCREENS_NOTE}.")
        console.print(
            f"{len(maybe)} fire(s) came with no new turn since the last answer"
            + (f" ({', '.join(maybe[:6])}{', …' if len(maybe) > 6 else ''})" if maybe else "")
            + ": on a real pane they are skipped-unchanged if its screen changed only in spinner and clock."
        )


#: What the simulator says about only_if_changed: it has no screens to compare.
SCREENS_NOTE = "the simulator sees no screens, so it delivers every fire as if the panes changed"
