"""`rk cron simulate`: an entry replayed by `rk.core.schedule.simulate`, drawn by `rk.cli.timeline`."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import typer

from rk.cli.environment import environment, moment, usage
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
)
from rk.cli.listing import schedule_text
from rk.cli.options import (
    ActiveHoursOpt,
    BackoffOpt,
    CatchUpOpt,
    CatchUpWithinOpt,
    CronOpt,
    DeliverOpt,
    EveryOpt,
    IdleEveryOpt,
    JsonOpt,
    MaxOpt,
    MaxPerDayOpt,
    MaxTotalOpt,
    MinOpt,
    OnlyIfChangedOpt,
    ServerOpt,
    TzOpt,
    WakeDebounceOpt,
    WakeOnOpt,
)
from rk.cli.store import find, loadable
from rk.core import bounds
from rk.core.schedule.entry import CreatedBy, Cron, Deliver, Entry, Target, TargetKind, WakeOn, WakeOnly
from rk.core.schedule.hours import ActiveHours
from rk.host import clock


def cmd_simulate(
    ctx: typer.Context,
    entry_id: Annotated[
        str | None, typer.Argument(metavar="[ID]", help="An entry of the server's file (else give schedule flags).")
    ] = None,
    states: Annotated[
        str,
        typer.Option("--states", help='The target pane\'s script, e.g. "0 idle; 10m active; 25m idle; 40m waiting".'),
    ] = "0 idle",
    other: Annotated[
        list[str] | None, typer.Option("--other", help="Another pane's script (%2, %3, … in order), for wake_on.")
    ] = None,
    for_: Annotated[str, typer.Option("--for", help="How long to replay.")] = "2h",
    tick: Annotated[str, typer.Option("--tick", help="Poll interval.")] = "30s",
    busy: Annotated[
        str,
        typer.Option("--busy", help="How long the target stays active after each delivery (0s: it does not react)."),
    ] = "20s",
    start: Annotated[
        str | None, typer.Option("--start", help="Start instant (ISO-8601 or unix seconds; default now).")
    ] = None,
    every: EveryOpt = None,
    idle_every: IdleEveryOpt = None,
    backoff: BackoffOpt = False,
    lo: MinOpt = None,
    hi: MaxOpt = None,
    cron: CronOpt = None,
    catch_up: CatchUpOpt = None,
    tz: TzOpt = None,
    deliver: DeliverOpt = None,
    wake_on: WakeOnOpt = None,
    wake_debounce: WakeDebounceOpt = None,
    catch_up_within: CatchUpWithinOpt = None,
    active_hours: ActiveHoursOpt = None,
    only_if_changed: OnlyIfChangedOpt = None,
    max_per_day: MaxPerDayOpt = None,
    max_total: MaxTotalOpt = None,
    width: Annotated[
        int | None, typer.Option("--width", help="Columns for the drawing (default: the terminal's).")
    ] = None,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """Replay an entry against a scripted pane-state timeline and draw fires, holds and skips.

    Reads the entries file for ID (with schedule flags, no file at all); never tmux.

    Example: rk cron simulate --idle-every 3m --deliver when-idle --states "0 idle; 10m active; 25m idle" --for 1h
    """
    env = environment(ctx, server, as_json)
    from rk.cli.timeline import ScriptError, parse_script, render
    from rk.core.schedule.due import cron_zone
    from rk.core.schedule.simulate import AgentModel, simulate

    schedule = schedule_from_flags(
        every,
        idle_every,
        backoff,
        lo,
        hi,
        cron,
        catch_up,
        tz,
        required=entry_id is None,
        note=env.notice,
        catch_up_within=catch_up_within,
    )
    hours = active_hours_from_flag(active_hours, allow_off=True)
    per_day = cap_from_flag("--max-per-day", max_per_day, allow_off=True)
    total = cap_from_flag("--max-total", max_total, allow_off=True)
    deliver = choice("--deliver", deliver, Deliver)
    wake = wake_from_flags(wake_on, None, wake_debounce, allow_off=True)
    changed = only_if_changed_from_flag(only_if_changed, allow_off=True)
    if width is not None and not 20 <= width <= 1000:
        raise usage("--width must be between 20 and 1000 columns")
    span = duration("--for", for_)
    step = duration("--tick", tick)
    if span // step > bounds.MAX_SIM_STEPS:
        raise usage(f"--for {for_} at --tick {tick} is {span // step} polls; at most {bounds.MAX_SIM_STEPS}")
    react = duration("--busy", busy, allow_zero=True)
    if start is not None:
        try:
            t0 = clock.parse_instant(start)
        except clock.ClockError as exc:
            raise usage(f"--start: {exc}") from None
    else:
        t0 = env.now()
    if entry_id is not None:
        base = find(loadable(env), entry_id)
    else:
        base = Entry(
            id="sim",
            name="simulated",
            schedule=schedule or WakeOnly(),
            target=Target(TargetKind.PANE, "%1"),
            payload="simulated",
        )
    entry = replace(base, target=Target(TargetKind.PANE, "%1"), muted=False, muted_until=0, created_by=CreatedBy(at=t0))
    if schedule is not None:
        entry = replace(entry, schedule=schedule)
    if deliver is not None:
        entry = replace(entry, deliver=deliver)
    if hours == HOURS_OFF:
        entry = replace(entry, active_hours=None)
    elif isinstance(hours, ActiveHours):
        entry = replace(entry, active_hours=hours)
    if per_day is not None:  # the caps count the replay's own deliveries (its log starts empty)
        entry = replace(entry, max_per_day=per_day)
    if total is not None:
        entry = replace(entry, max_total=total)
    if wake == WAKE_OFF:
        entry = replace(entry, wake_on=None)
    elif isinstance(wake, WakeOn):
        entry = replace(entry, wake_on=wake)
    if changed is not None:
        entry = replace(entry, only_if_changed="" if changed == CHANGED_OFF else changed)
    check_only_if_changed(entry.only_if_changed, entry.wake_on is not None)
    try:
        script = parse_script(states, "%1", t0)
        others = []
        for i, text in enumerate(other or [], start=2):
            script += parse_script(text, f"%{i}", t0)
            others.append(f"%{i}")
    except ScriptError as exc:
        raise usage(str(exc)) from None
    zone = cron_zone(entry.schedule, env.zone()) if isinstance(entry.schedule, Cron) else env.zone()
    sim = simulate(
        [entry],
        start=t0,
        end=t0 + span,
        tick=step,
        script=script,
        agents={"%1": AgentModel(busy_for=react)} if react else {},
        zone=zone,
    )
    if env.json:
        env.result(
            {
                "entry": {
                    "id": entry.id,
                    "schedule": entry.schedule.summary,
                    "deliver": entry.deliver or Deliver.IMMEDIATE,
                    "wake_on": entry.wake_on is not None,
                    "only_if_changed": entry.only_if_changed or None,
                },
                **({"screens": SCREENS_NOTE} if entry.only_if_changed else {}),
                "start": t0,
                "end": t0 + span,
                "tick": step,
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
        )
        return
    from rich.console import Console

    console = Console(file=env.stdout, width=width, highlight=False)
    title = (
        f"{entry.id}  {schedule_text(entry.schedule, zone)}{' +wake' if entry.wake_on else ''}"
        f"  deliver {entry.deliver or Deliver.IMMEDIATE}"
        f"  target %1{f' (answers in {react}s)' if react else ''}  over {for_} from "
        f"{moment(t0, zone)}"
    )
    console.print(
        render(sim, title=title, pane="%1", others=others, start=t0, end=t0 + span, width=console.width, zone=zone)
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
