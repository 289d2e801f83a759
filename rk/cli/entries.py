"""`rk cron add | edit | rm | mute | pin`: the commands that change the entries file."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import typer

from rk.cli.environment import CliError, Environment, environment, moment, not_found, usage
from rk.cli.flags import (
    BUDGET_OFF,
    CHANGED_OFF,
    HOURS_OFF,
    TIMEOUT_OFF,
    WAKE_OFF,
    active_hours_from_flag,
    budget_from_flag,
    cap_from_flag,
    check_only_if_changed,
    choice,
    duration,
    only_if_changed_from_flag,
    schedule_from_flags,
    target_from_flags,
    turn_timeout_from_flags,
    wake_from_flags,
)
from rk.cli.options import (
    ActiveHoursOpt,
    AnyProgramOpt,
    AtOpt,
    BackoffOpt,
    BudgetOpt,
    CatchUpOpt,
    CatchUpWithinOpt,
    CronOpt,
    DeliverOpt,
    EveryOpt,
    ForceOpt,
    IdArg,
    IdleEveryOpt,
    IfAbsentOpt,
    InOpt,
    JsonOpt,
    MaxOpt,
    MaxPerDayOpt,
    MaxTotalOpt,
    MinOpt,
    NameOpt,
    OnlyIfChangedOpt,
    OnTimeoutOpt,
    RespawnOpt,
    ServerOpt,
    TurnTimeoutOpt,
    TzOpt,
    WakeDebounceOpt,
    WakeOnOpt,
    WakeScopeOpt,
)
from rk.cli.store import editing, get, stored
from rk.core.cost.usage import Budget
from rk.core.durations import format_duration
from rk.core.pane.identity import ServerIdentity
from rk.core.schedule.due import entry_zone
from rk.core.schedule.edits import muted, rescheduled_line, unmuted, with_if_absent
from rk.core.schedule.entry import (
    At,
    Backoff,
    CreatedBy,
    Deliver,
    Entry,
    EntryError,
    Every,
    IfAbsent,
    Schedule,
    Target,
    TargetKind,
    WakeOn,
    WakeOnly,
    catch_up_window_problem,
    check_respawn_intent,
)
from rk.core.schedule.hours import ActiveHours
from rk.core.schedule.placeholders import PlaceholderError
from rk.core.schedule.placeholders import check as check_placeholders
from rk.store import delivery_log as logfile
from rk.store.entries import EntryDocument, EntryFileError, EntryNotFound
from rk.tmux.server import TmuxError

#: Set by `rk mcp` in the environment of the commands it runs, so the entries it adds say so.
VIA_VARIABLE = "RK_CREATED_VIA"


def _via(env) -> str:
    return "mcp" if env.environ.get(VIA_VARIABLE) == "mcp" else ""


def cmd_add(
    ctx: typer.Context,
    prompt: Annotated[str, typer.Argument(help="The text typed into the agent and submitted (never executed).")],
    every: EveryOpt = None,
    idle_every: IdleEveryOpt = None,
    backoff: BackoffOpt = False,
    lo: MinOpt = None,
    hi: MaxOpt = None,
    cron: CronOpt = None,
    catch_up: CatchUpOpt = None,
    tz: TzOpt = None,
    name: NameOpt = None,
    deliver: DeliverOpt = None,
    if_absent: IfAbsentOpt = None,
    respawn: RespawnOpt = None,
    pinned: Annotated[bool, typer.Option("--pinned", help="Never expire as an orphan.")] = False,
    any_program: AnyProgramOpt = False,
    role: Annotated[str | None, typer.Option("--role", help="Target the window carrying this role.")] = None,
    session: Annotated[
        str | None, typer.Option("--session", help="Target the pane carrying this agent session.")
    ] = None,
    pane: Annotated[str | None, typer.Option("--pane", help="Target this pane id (%N).")] = None,
    wake_on: WakeOnOpt = None,
    wake_scope: WakeScopeOpt = None,
    wake_debounce: WakeDebounceOpt = None,
    catch_up_within: CatchUpWithinOpt = None,
    active_hours: ActiveHoursOpt = None,
    only_if_changed: OnlyIfChangedOpt = None,
    budget: BudgetOpt = None,
    at: AtOpt = None,
    in_: InOpt = None,
    max_per_day: MaxPerDayOpt = None,
    max_total: MaxTotalOpt = None,
    turn_timeout: TurnTimeoutOpt = None,
    on_timeout: OnTimeoutOpt = None,
    force: ForceOpt = False,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """Add an entry. Output: `<id> <name> [<schedule> -> <target>]`.

    Example: rk cron add "standup notes?" --cron "0 9 * * 1-5" --tz Europe/Berlin --role operator
    """
    env = environment(ctx, server, as_json)
    if not prompt.strip():
        raise usage("the prompt must not be empty")
    _check_placeholders(prompt)
    wake = wake_from_flags(wake_on, wake_scope, wake_debounce, allow_off=False)
    notes: list[str] = []
    schedule = schedule_from_flags(
        every,
        idle_every,
        backoff,
        lo,
        hi,
        cron,
        catch_up,
        tz,
        required=wake is None,
        note=notes.append,
        poll=env.settings().tick_interval,
        catch_up_within=catch_up_within,
        at=at,
        in_=in_,
        now=env.now(),
        zone=env.zone(),
    )
    _check_poll(env, schedule, force, idle_every is not None)
    for remark in notes:  # said once the schedule is accepted
        env.notice(remark)
    schedule = schedule or WakeOnly()  # fires on its wake event only
    hours = active_hours_from_flag(active_hours, allow_off=False)
    changed = only_if_changed_from_flag(only_if_changed, allow_off=False) or ""
    check_only_if_changed(changed, wake is not None)
    per_day = cap_from_flag("--max-per-day", max_per_day, allow_off=False) or 0
    total = cap_from_flag("--max-total", max_total, allow_off=False) or 0
    timeout, on_timeout_policy = turn_timeout_from_flags(turn_timeout, on_timeout, allow_off=False)
    if on_timeout_policy is not None and timeout is None:
        raise usage("--on-timeout needs --turn-timeout")
    if timeout is not None and isinstance(schedule, At):
        raise usage("--turn-timeout watches a recurring entry's turns; an --at/--in entry retires when it delivers")
    spend = budget_from_flag(budget, allow_off=False)
    deliver = (
        choice("--deliver", deliver, Deliver) or Deliver.IMMEDIATE
    )  # the defaults are written, as the original does
    if_absent = choice("--if-absent", if_absent, IfAbsent) or IfAbsent.SKIP
    target = target_from_flags(role, session, pane)
    argv = tuple(respawn or ())
    if argv and if_absent != IfAbsent.RESPAWN:
        raise usage("--respawn only applies with --if-absent respawn")
    if argv and not argv[0]:
        raise usage("--respawn: the first element (the program) must not be empty")
    caller = env.caller_pane()
    files = env.files()
    now = env.now()
    session_ref = ""
    if target is None:
        if not caller:
            raise usage("not inside a tmux pane: pass --role, --pane, or --session")
        target, session_ref = _default_target(env, caller)
    elif caller:
        try:
            session_ref = env.caller_server().display(caller, "#{@rk_pane_agent_session}").strip()
        except TmuxError:
            session_ref = ""
    target = _with_server(env, target)
    if if_absent == IfAbsent.RESPAWN and not argv and target.kind != TargetKind.SESSION:
        raise usage(
            "--if-absent respawn needs --respawn on role and pane targets (only session targets have a default)"
        )
    entry = Entry(
        id="new",
        name=name if name is not None else prompt[:40],
        schedule=schedule,
        target=target,
        payload=prompt,
        deliver=deliver,
        if_absent=if_absent,
        respawn=argv,
        wake_on=wake if isinstance(wake, WakeOn) else None,
        pinned=pinned,
        any_program=any_program,
        active_hours=hours if isinstance(hours, ActiveHours) else None,
        only_if_changed=changed,
        max_per_day=per_day,
        max_total=total,
        turn_timeout=timeout if isinstance(timeout, int) else 0,
        on_timeout=on_timeout_policy,
        budget=spend if isinstance(spend, Budget) else None,
        created_by=CreatedBy(at=now, session=session_ref, pane=caller, via=_via(env)),
    )
    _check_catch_up_window(entry)
    try:
        check_respawn_intent(entry)
    except EntryError as exc:
        raise usage(str(exc)) from None
    settings = env.settings()
    try:  # a corrupt or full file is refused before anything is created
        EntryDocument.read(files.entries).check_room(settings.max_entries)
    except EntryFileError as exc:
        raise CliError(str(exc)) from None
    with editing(env, files) as doc:
        entry = doc.add(entry, settings.max_entries)
        try:
            entry = doc.get(entry.id)  # validates the stored form (e.g. a cron expression that never matches)
        except EntryError as exc:
            raise CliError(str(exc)) from None
    env.result(*_receipt(env, entry, f"{entry.id} {entry.name}"))
    for warning in [*rate_warnings(env, entry.schedule), *add_warnings(env, entry, outside_tmux=not caller)]:
        env.notice(f"warning: {warning}")


def _check_catch_up_window(entry: Entry) -> None:
    """A catch-up window within the entry's grace (when-idle: its 2-hour hold) is a usage error."""
    problem = catch_up_window_problem(entry.schedule, entry.policy)
    if problem:
        raise usage(f"--catch-up-within {problem}")


def _check_poll(env: Environment, schedule: Schedule | None, force: bool, idle_every: bool = False) -> None:
    """An interval or backoff step shorter than the ticker's poll cannot be kept (the
    ticker looks every `tick_interval` s): a usage error naming the setting, unless
    `--force` says it is meant."""
    poll = env.settings().tick_interval
    if force:
        return
    if isinstance(schedule, Every) and schedule.interval < poll:
        flag, step, what = "--every", schedule.interval, "it fires at most once a poll"
    elif isinstance(schedule, Backoff) and schedule.min < poll:
        flag = "--idle-every" if idle_every else "--backoff --min"
        step, what = schedule.min, f"a step under the poll counts as {poll}s"
    else:
        return
    raise usage(
        f"{flag} {format_duration(step)} is shorter than the ticker's poll of {poll}s"
        f" (setting tick_interval): {what}; pass --force to keep it"
    )


def rate_warnings(env: Environment, schedule: Schedule) -> list[str]:
    """One line when the schedule alone would fire more often than the rate cap allows."""
    from rk.core.schedule.implied import peak_per_hour

    cap = env.settings().rate_per_hour
    peak = peak_per_hour(schedule, env.now(), env.zone())
    if peak <= cap:
        return []
    return [
        f"{schedule.summary} fires up to {peak} times an hour, above the rate cap of {cap} deliveries per pane"
        " per hour (setting rate_per_hour): the fires past it are logged rate-capped, not typed"
    ]


def add_warnings(env: Environment, entry: Entry, *, outside_tmux: bool) -> list[str]:
    """What would keep a new entry from firing, said at once (the entry is kept)."""
    from rk.core.pane.facts import resolve_target
    from rk.core.schedule.health import needs_state
    from rk.engine import ticker
    from rk.tmux.server import Server

    out = []
    if outside_tmux:
        out.append(f"wrote to server {env.server} (outside tmux; -L names another)")
    server = Server(name=env.server, env=env.environ)
    if not server.is_live():
        out.append(f"tmux server {env.server} is not running: nothing fires until it does")
    else:
        try:
            target = resolve_target(entry.target, server.pane_facts(), entry.any_program)
        except TmuxError:
            target = None
        if target is not None and not target.resolved:
            out.append(f"{entry.target.summary} does not exist now ({target.why}); the entry skips until it does")
        elif target is not None and needs_state(entry) and target.epoch <= 0:
            out.append(
                f"pane {target.pane} never reported an agent state: {entry.schedule.summary} will not fire until it"
                " does (rk agent setup, then restart the agent)"
            )
    rec = ticker.read_pid(env.state_dir())
    if rec is None or not rec.alive():
        out.append("no ticker is running: nothing fires until one does (rk cron ticker install, or ticker start)")
    return out


def _check_placeholders(payload: str) -> None:
    """A usage error (exit 2) for an unknown placeholder or a lone brace."""
    try:
        check_placeholders(payload)
    except PlaceholderError as exc:
        raise usage(str(exc)) from None


def _default_target(env: Environment, pane: str) -> tuple[Target, str]:
    """role of the caller's window → its agent session → its pane. Returns (target, session ref)."""
    server = env.caller_server()
    role = session = ""
    try:
        role = server.display(pane, "#{@rk_win_role}").strip()
    except TmuxError as exc:
        env.err(f"rk: note: could not read the window role ({exc}); trying the agent session")
    try:
        session = server.display(pane, "#{@rk_pane_agent_session}").strip()
    except TmuxError as exc:
        env.err(f"rk: note: could not read the agent session ({exc}); targeting the pane")
    if role and not any(c.isspace() for c in role):
        return Target(TargetKind.ROLE, role), session
    if session and not any(c.isspace() for c in session):
        return Target(TargetKind.SESSION, session), session
    return Target(TargetKind.PANE, pane), session


def _with_server(env: Environment, target: Target) -> Target:
    """A pane target names the tmux server its id belongs to (`rk.core.pane.identity`): a
    restart reuses the id for another pane. Unknown when the pane is not there now
    (the tick learns it when it first sees the pane)."""
    from rk.tmux.server import Server

    if target.kind != TargetKind.PANE:
        return target
    server = Server(name=env.server, env=env.environ)
    if not server.is_live():
        return target
    try:
        fields = server.display(target.value, "#{pane_id} #{start_time} #{pid}").split()
    except TmuxError:
        return target
    if len(fields) != 3 or fields[0] != target.value or not all(f.isascii() and f.isdigit() for f in fields[1:]):
        return target
    return replace(target, server=ServerIdentity(int(fields[1]), int(fields[2])))


def _said(entry: Entry, env: Environment) -> str:
    """The receipt's schedule: an `--at` instant in the entry's zone, not UTC."""
    from rk.cli.listing import schedule_text
    from rk.core.schedule.due import entry_zone

    return schedule_text(entry.schedule, entry_zone(entry, env.zone()))


def _receipt(env: Environment, entry: Entry, said: str) -> tuple[dict[str, object], list[str]]:
    """add's and edit's receipt: the entry, and its next delivery as `rk cron next` forecasts
    it (`next`: unix seconds or null, `why_not` when something keeps it from firing)."""
    from rk.cli.listing import caps_record, caps_text, forecast_of
    from rk.cli.store import load_for_listing

    entries, view, now = load_for_listing(env)
    if entry not in entries:  # not loadable back (cannot happen after a validated write): forecast it alone
        entries = [entry]
    told = forecast_of(env, entries, view, entry, now)
    rec: dict[str, object] = {
        "id": entry.id,
        "name": entry.name,
        "schedule": entry.schedule.summary,
        "target": entry.target.summary,
        "next": told.next,
        "why_not": told.why_not,
    }
    rec |= caps_record(entry, told.left)
    zone = entry_zone(entry, env.zone())
    if told.next is None:
        nxt = f"next: - ({told.why_not or told.note or 'no upcoming fire'})"
    else:
        left = "now" if told.next <= now else f"in {format_duration(told.next - now)}"
        nxt = f"next: {moment(told.next, zone)} ({left}" + (f", {told.why_not})" if told.why_not else ")")
    capped = caps_text(entry, told.left)
    return rec, [
        f"{said} [{_said(entry, env)} -> {entry.target.summary}]",
        nxt,
        *([f"caps: {capped}"] if capped else []),
    ]


def cmd_edit(
    ctx: typer.Context,
    entry_id: IdArg,
    every: EveryOpt = None,
    idle_every: IdleEveryOpt = None,
    backoff: BackoffOpt = False,
    lo: MinOpt = None,
    hi: MaxOpt = None,
    cron: CronOpt = None,
    catch_up: CatchUpOpt = None,
    tz: TzOpt = None,
    name: NameOpt = None,
    deliver: DeliverOpt = None,
    if_absent: IfAbsentOpt = None,
    respawn: RespawnOpt = None,
    wake_on: WakeOnOpt = None,
    wake_scope: WakeScopeOpt = None,
    wake_debounce: WakeDebounceOpt = None,
    any_program: Annotated[
        bool | None,
        typer.Option(
            "--any-program/--agents-only", help="Allow typing into a program that is not a known agent, or not."
        ),
    ] = None,
    catch_up_within: CatchUpWithinOpt = None,
    active_hours: ActiveHoursOpt = None,
    only_if_changed: OnlyIfChangedOpt = None,
    max_per_day: MaxPerDayOpt = None,
    max_total: MaxTotalOpt = None,
    budget: BudgetOpt = None,
    prompt: Annotated[str | None, typer.Option("--prompt", help="The new text to type (placeholders allowed).")] = None,
    turn_timeout: TurnTimeoutOpt = None,
    on_timeout: OnTimeoutOpt = None,
    force: ForceOpt = False,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """Change fields of an entry in place, keeping its id and history.

    A schedule or deliver change logs `rescheduled`, which restarts anchors
    and the backoff climb. Target and creator cannot change (rm + add).

    Example: rk cron edit 3f2a --every 10m --prompt "status, briefly?"
    """
    env = environment(ctx, server, as_json)
    notes: list[str] = []
    schedule = schedule_from_flags(
        every,
        idle_every,
        backoff,
        lo,
        hi,
        cron,
        catch_up,
        tz,
        required=False,
        note=notes.append,
        poll=env.settings().tick_interval,
        catch_up_within=catch_up_within,
    )
    _check_poll(env, schedule, force, idle_every is not None)
    for remark in notes:  # said once the schedule is accepted
        env.notice(remark)
    hours = active_hours_from_flag(active_hours, allow_off=True)
    changed = only_if_changed_from_flag(only_if_changed, allow_off=True)
    spend = budget_from_flag(budget, allow_off=True)
    deliver = choice("--deliver", deliver, Deliver)
    if_absent = choice("--if-absent", if_absent, IfAbsent)
    wake = wake_from_flags(wake_on, wake_scope, wake_debounce, allow_off=True)
    per_day = cap_from_flag("--max-per-day", max_per_day, allow_off=True)
    total = cap_from_flag("--max-total", max_total, allow_off=True)
    timeout, on_timeout_policy = turn_timeout_from_flags(turn_timeout, on_timeout, allow_off=True)
    given = (schedule, deliver, name, if_absent, respawn, wake, any_program, hours, prompt, changed, per_day, total)
    if all(v is None for v in (*given, timeout, on_timeout_policy, spend)):
        raise usage(
            "nothing to edit — pass a schedule flag, --prompt, --deliver, --name, --if-absent, --respawn, --wake-on, "
            "--active-hours, --only-if-changed, --max-per-day, --max-total, --turn-timeout/--on-timeout, "
            "--budget, or --any-program/--agents-only"
        )
    if prompt is not None and not prompt.strip():
        raise usage("the prompt must not be empty")
    files = env.files()
    now = env.now()

    def edited(old: Entry) -> Entry:
        new = old
        if schedule is not None:
            new = replace(new, schedule=schedule)
        if deliver is not None:
            new = replace(new, deliver=deliver)
        if name is not None:
            new = replace(new, name=name)
        if prompt is not None:
            new = replace(new, payload=prompt)
        if if_absent is not None:
            new = with_if_absent(new, if_absent)
        if respawn is not None:
            argv = tuple(respawn)
            if not argv[0]:
                raise usage("--respawn: the first element (the program) must not be empty")
            if new.if_absent != IfAbsent.RESPAWN:
                raise usage("--respawn only applies with --if-absent respawn")
            new = replace(new, respawn=argv)
        if wake == WAKE_OFF:
            new = replace(new, wake_on=None)
        elif isinstance(wake, WakeOn):
            new = replace(new, wake_on=wake)
        if any_program is not None:
            new = replace(new, any_program=any_program)
        if hours == HOURS_OFF:
            new = replace(new, active_hours=None)
        elif isinstance(hours, ActiveHours):
            new = replace(new, active_hours=hours)
        if changed is not None:
            new = replace(new, only_if_changed="" if changed == CHANGED_OFF else changed)
        check_only_if_changed(new.only_if_changed, new.wake_on is not None)
        if per_day is not None:  # 0 removes it
            new = replace(new, max_per_day=per_day)
        if total is not None:
            new = replace(new, max_total=total)
        if timeout == TIMEOUT_OFF:
            new = replace(new, turn_timeout=0, on_timeout=None)
        elif isinstance(timeout, int):
            new = replace(new, turn_timeout=timeout)
        if on_timeout_policy is not None:
            if not new.turn_timeout:
                raise usage("--on-timeout needs --turn-timeout (the entry watches no turn)")
            new = replace(new, on_timeout=on_timeout_policy)
        if spend == BUDGET_OFF:
            new = replace(new, budget=None)
        elif isinstance(spend, Budget):
            new = replace(new, budget=spend)
        if new.payload != old.payload:  # edit cannot change the payload today; if it ever does, add's rule holds
            _check_placeholders(new.payload)
        _check_catch_up_window(new)
        try:
            check_respawn_intent(new)
        except EntryError as exc:
            raise usage(str(exc)) from None
        return new

    edited(stored(files, entry_id))  # usage errors and unknown ids before any file is touched
    with editing(env, files) as doc:
        old = get(doc, entry_id)
        new = edited(old)
        doc.replace(new)
        try:
            new = doc.get(entry_id)
        except EntryError as exc:
            raise CliError(f"validation error: {exc}") from None
    line = rescheduled_line(old, new, now)
    if line is not None:
        try:
            logfile.append_lines(files.log, [line])
        except OSError as exc:
            raise CliError(f"{exc.filename or files.dir}: {exc.strerror or exc}") from None
    env.result(*_receipt(env, new, f"edited {new.id} {new.name}"))
    if schedule is not None:
        for warning in rate_warnings(env, new.schedule):
            env.notice(f"warning: {warning}")


def cmd_rm(ctx: typer.Context, entry_id: IdArg, as_json: JsonOpt = False, server: ServerOpt = None) -> None:
    """Remove an entry (its log lines stay).

    Example: rk cron rm 3f2a
    """
    env = environment(ctx, server, as_json)
    files = env.files()
    stored(files, entry_id)
    with editing(env, files) as doc:
        try:
            doc.remove(entry_id)
        except EntryNotFound:
            raise not_found(entry_id) from None
    env.result({"id": entry_id, "removed": True}, f"removed {entry_id}")


def cmd_mute(
    ctx: typer.Context,
    entry_id: IdArg,
    for_: Annotated[
        str | None, typer.Option("--for", help="Mute for this long (a lease that lapses by itself).")
    ] = None,
    off: Annotated[bool, typer.Option("--off", help="Unmute (clears the flag and any lease).")] = False,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """Mute an entry: indefinitely, for a while (--for 30m), or --off.

    Example: rk cron mute 3f2a --for 30m
    """
    env = environment(ctx, server, as_json)
    if for_ is not None and off:
        raise usage("--for and --off are mutually exclusive")
    lease = duration("--for", for_) if for_ is not None else 0
    now = env.now()
    files = env.files()
    stored(files, entry_id)
    with editing(env, files) as doc:
        entry, result, human = _muted(get(doc, entry_id), now, lease, off, env.zone())
        doc.replace(entry)
    env.result(result, human)


def _muted(entry: Entry, now: int, lease: int, off: bool, zone) -> tuple[Entry, dict, str]:
    """The entry muted for good, for `lease` s from now, or unmuted; and the receipts."""
    entry_id = entry.id
    if off:
        return unmuted(entry), {"id": entry_id, "muted": False}, f"unmuted {entry_id}"
    entry = muted(entry, now, lease)
    if entry.muted_until:
        until = entry.muted_until
        return (
            entry,
            {"id": entry_id, "muted": True, "until": until},
            f"muted {entry_id} until {moment(until, entry_zone(entry, zone))}",
        )
    return entry, {"id": entry_id, "muted": True}, f"muted {entry_id}"


def cmd_pin(
    ctx: typer.Context,
    entry_id: IdArg,
    off: Annotated[bool, typer.Option("--off", help="Unpin.")] = False,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """Pin an entry so it never expires as an orphan (or --off).

    Example: rk cron pin 3f2a
    """
    env = environment(ctx, server, as_json)
    files = env.files()
    stored(files, entry_id)
    with editing(env, files) as doc:
        doc.replace(replace(get(doc, entry_id), pinned=not off))
    env.result({"id": entry_id, "pinned": not off}, f"{'unpinned' if off else 'pinned'} {entry_id}")
