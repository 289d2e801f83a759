"""`rk cron add | edit | rm | mute | pin`: the commands that change the entries file.

add's and edit's options are made from the field table (`rk.cli.entry_flags`);
what the two share besides is in `rk.cli.receipt`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, tzinfo
from typing import Annotated

import typer

from rk.cli.chains import chained, check_edited
from rk.cli.entry_flags import EntryFlags, command, id_argument, output, prompt_argument
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
    with_wake_source,
)
from rk.cli.fresh import FRESH_OFF, check_fresh, fresh_from_flag
from rk.cli.options import IdArg, JsonOpt, ServerOpt
from rk.cli.receipt import (
    add_warnings,
    check_catch_up_window,
    check_payload,
    check_poll,
    default_target,
    live_session,
    rate_warnings,
    receipt,
    with_server,
)
from rk.cli.retrying import given as retry_given
from rk.cli.retrying import with_retry
from rk.cli.store import editing, get, stored
from rk.cli.waking import dormant_after_flag
from rk.core import bounds
from rk.core.cost.budget import Budget
from rk.core.schedule.decoding import check_respawn_intent
from rk.core.schedule.due import entry_zone
from rk.core.schedule.edits import muted, rescheduled_line, unmuted, with_if_absent
from rk.core.schedule.entry import (
    DORMANT_AFTER,
    At,
    CreatedBy,
    Deliver,
    Entry,
    EntryError,
    IfAbsent,
    OnTimeout,
    Schedule,
    Target,
    TargetKind,
    WakeOn,
    WakeOnly,
)
from rk.core.schedule.fields import BY_KEY, POSITIONAL, Surface, check_text, on
from rk.core.schedule.fresh import FreshMode
from rk.core.schedule.hours import ActiveHours
from rk.store import delivery_log as logfile
from rk.store.entries import EntryDocument, EntryFileError, EntryNotFound
from rk.tmux.server import TmuxError

#: Set by `rk mcp` in the environment of the commands it runs, so the entries it adds say so.
VIA_VARIABLE = "RK_CREATED_VIA"


def _via(env: Environment) -> str:
    return "mcp" if env.environ.get(VIA_VARIABLE) == "mcp" else ""


def check_lengths(flags: EntryFlags, surface: Surface) -> None:
    """A usage error, quoting a short prefix, for a value longer than the field table's
    bound: checked before any other rule reads (and perhaps quotes) it."""
    positional = POSITIONAL.get(surface, "")
    given = [*on(surface), *([BY_KEY[positional]] if positional else [])]
    for field in given:
        what = "the prompt" if field.key == positional else field.flag_on(surface)
        try:
            check_text(field, getattr(flags, field.name, None), what)
        except bounds.OutOfRange as exc:
            raise usage(str(exc)) from None


def _schedule(env: Environment, flags: EntryFlags, *, required: bool, adding: bool) -> Schedule | None:
    """The schedule the flags name, checked against the poll; its remarks said once it is accepted."""
    notes: list[str] = []
    poll = env.settings().tick_interval
    now, zone = (env.now(), env.zone()) if adding else (0, UTC)
    schedule = schedule_from_flags(flags, required=required, note=notes.append, poll=poll, now=now, zone=zone)
    check_poll(env, schedule, flags.force, flags.idle_every is not None)
    for remark in notes:
        env.notice(remark)
    return schedule


@dataclass(frozen=True)
class _Limits:
    """add's hours, change check, caps, turn timeout and budget, read from its flags."""

    hours: ActiveHours | None
    changed: str
    per_day: int
    total: int
    timeout: int
    on_timeout: OnTimeout | None
    budget: Budget | None


def _limits(flags: EntryFlags, schedule: Schedule, wakes: bool) -> _Limits:
    hours = active_hours_from_flag(flags.active_hours, allow_off=False)
    changed = only_if_changed_from_flag(flags.only_if_changed, allow_off=False) or ""
    check_only_if_changed(changed, wakes)
    per_day = cap_from_flag("--max-per-day", flags.max_per_day, allow_off=False) or 0
    total = cap_from_flag("--max-total", flags.max_total, allow_off=False) or 0
    timeout, on_timeout = turn_timeout_from_flags(flags.turn_timeout, flags.on_timeout, allow_off=False)
    if on_timeout is not None and timeout is None:
        raise usage("--on-timeout needs --turn-timeout")
    if timeout is not None and isinstance(schedule, At):
        raise usage("--turn-timeout watches a recurring entry's turns; an --at/--in entry retires when it delivers")
    spend = budget_from_flag(flags.budget, allow_off=False)
    return _Limits(
        hours=hours if isinstance(hours, ActiveHours) else None,
        changed=changed,
        per_day=per_day,
        total=total,
        timeout=timeout if isinstance(timeout, int) else 0,
        on_timeout=on_timeout,
        budget=spend if isinstance(spend, Budget) else None,
    )


def _added_target(env: Environment, flags: EntryFlags, if_absent: IfAbsent) -> tuple[Target, tuple[str, ...], str]:
    """The target (the caller's window role or pane by default; the session running in
    the caller's pane with --follow-session), the respawn argv, and the caller's agent session."""
    target = target_from_flags(flags.role, flags.session, flags.pane, flags.follow_session)
    argv = tuple(flags.respawn or ())
    if argv and if_absent != IfAbsent.RESPAWN:
        raise usage("--respawn only applies with --if-absent respawn")
    if argv and not argv[0]:
        raise usage("--respawn: the first element (the program) must not be empty")
    caller = env.caller_pane()
    session_ref = ""
    if target is None:
        if not caller:
            follow = "--follow-session follows the session of the pane it is added in; " if flags.follow_session else ""
            raise usage(f"not inside a tmux pane: {follow}pass --role, --pane, or --session")
        target, session_ref = default_target(env, caller)
        if flags.follow_session:
            target = live_session(env, caller)
    elif caller:
        try:
            session_ref = env.caller_server().display(caller, "#{@rk_pane_agent_session}").strip()
        except TmuxError:
            session_ref = ""
    target = with_server(env, target)
    if if_absent == IfAbsent.RESPAWN and not argv and target.kind != TargetKind.SESSION:
        raise usage(
            "--if-absent respawn needs --respawn on role and pane targets"
            " (only session targets, --session or --follow-session, have a default)"
        )
    return target, argv, session_ref


def _store_new(env: Environment, entry: Entry, keep: Callable[[Entry], None] | None = None) -> Entry:
    """`entry` written under a fresh id, as the file reads it back (`keep`: told the id first)."""
    files = env.files()
    settings = env.settings()
    try:  # a corrupt or full file is refused before anything is created
        EntryDocument.read(files.entries).check_room(settings.max_entries)
    except EntryFileError as exc:
        raise CliError(str(exc)) from None
    with editing(env, files) as doc:
        entry = doc.add(entry, settings.max_entries)
        if keep is not None:  # an agent-made entry's record (`rk.cli.chains`): none, no entry
            keep(entry)
        try:
            return doc.get(entry.id)  # validates the stored form (e.g. a cron expression that never matches)
        except EntryError as exc:
            raise CliError(str(exc)) from None


def add(ctx: typer.Context, flags: EntryFlags) -> None:
    """Add an entry. Output: `<id> <name> [<schedule> -> <target>]`.

    Example: rk cron add "standup notes?" --cron "0 9 * * 1-5" --tz Europe/Berlin --role operator
    """
    env = environment(ctx, flags.server, flags.as_json)
    check_lengths(flags, Surface.ADD)
    prompt = flags.prompt or ""
    if not prompt.strip():
        raise usage("the prompt must not be empty")
    check_payload(prompt)
    wake = wake_from_flags(flags.wake_on, flags.wake_scope, flags.wake_debounce, False, flags.wake_from)
    schedule = _schedule(env, flags, required=wake is None, adding=True) or WakeOnly()  # WakeOnly: its event only
    limits = _limits(flags, schedule, wake is not None)
    deliver = choice("--deliver", flags.deliver, Deliver) or Deliver.IMMEDIATE  # the defaults are written
    if_absent = choice("--if-absent", flags.if_absent, IfAbsent) or IfAbsent.SKIP
    now = env.now()
    target, argv, session_ref = _added_target(env, flags, if_absent)
    caller = env.caller_pane()
    entry = Entry(
        id="new",
        name=flags.name if flags.name is not None else prompt[:40],
        schedule=schedule,
        target=target,
        payload=prompt,
        deliver=deliver,
        if_absent=if_absent,
        respawn=argv,
        wake_on=wake if isinstance(wake, WakeOn) else None,
        pinned=flags.pinned,
        any_program=bool(flags.any_program),
        active_hours=limits.hours,
        only_if_changed=limits.changed,
        max_per_day=limits.per_day,
        max_total=limits.total,
        turn_timeout=limits.timeout,
        on_timeout=limits.on_timeout,
        budget=limits.budget,
        dormant_after=DORMANT_AFTER if (after := dormant_after_flag(flags.dormant_after)) is None else after,
        created_by=CreatedBy(at=now, session=session_ref, pane=caller, via=_via(env)),
    )
    entry = with_retry(entry, flags)
    fresh = fresh_from_flag(flags.fresh, allow_off=False)  # rk.cli.fresh
    entry = replace(entry, fresh=fresh if isinstance(fresh, FreshMode) else None)
    check_fresh(env, entry)
    check_catch_up_window(entry)
    try:
        check_respawn_intent(entry)
    except EntryError as exc:
        raise usage(str(exc)) from None
    entry, keep = chained(env, entry)  # a parent, and the chain rules, in a turn a fire started
    entry = _store_new(env, entry, keep)
    env.result(*receipt(env, entry, f"{entry.id} {entry.name}"))
    for warning in [*rate_warnings(env, entry.schedule), *add_warnings(env, entry, outside_tmux=not caller)]:
        env.notice(f"warning: {warning}")


cmd_add = command(add, Surface.ADD, before=(prompt_argument(),), after=output())


@dataclass(frozen=True)
class _Changes:
    """What an edit changes, read from its flags (None: leave it; the *_OFF words: remove it)."""

    schedule: Schedule | None
    deliver: Deliver | None
    name: str | None
    prompt: str | None
    if_absent: IfAbsent | None
    respawn: list[str] | None
    wake: WakeOn | str | None
    wake_from: str | None  #: --wake-from alone: the entry's wake, from then on
    any_program: bool | None
    hours: ActiveHours | str | None
    changed: str | None
    per_day: int | None
    total: int | None
    timeout: int | str | None
    on_timeout: OnTimeout | None
    budget: Budget | str | None
    fresh: FreshMode | str | None = None  #: rk.cli.fresh (FRESH_OFF removes it)


def _changes(env: Environment, flags: EntryFlags) -> _Changes:
    schedule = _schedule(env, flags, required=False, adding=False)
    hours = active_hours_from_flag(flags.active_hours, allow_off=True)
    changed = only_if_changed_from_flag(flags.only_if_changed, allow_off=True)
    spend = budget_from_flag(flags.budget, allow_off=True)
    deliver = choice("--deliver", flags.deliver, Deliver)
    if_absent = choice("--if-absent", flags.if_absent, IfAbsent)
    wake = wake_from_flags(flags.wake_on, flags.wake_scope, flags.wake_debounce, True, flags.wake_from)
    per_day = cap_from_flag("--max-per-day", flags.max_per_day, allow_off=True)
    total = cap_from_flag("--max-total", flags.max_total, allow_off=True)
    timeout, on_timeout = turn_timeout_from_flags(flags.turn_timeout, flags.on_timeout, allow_off=True)
    return _Changes(
        *(schedule, deliver, flags.name, flags.prompt, if_absent, flags.respawn, wake),
        flags.wake_from if flags.wake_on is None else None,
        flags.any_program,
        *(hours, changed, per_day, total, timeout, on_timeout, spend),
        fresh_from_flag(flags.fresh, allow_off=True),
    )


def _edited(old: Entry, c: _Changes) -> Entry:
    """`old` with the changes, checked as add checks a new entry."""
    new = old
    if c.schedule is not None:
        new = replace(new, schedule=c.schedule)
    if c.deliver is not None:
        new = replace(new, deliver=c.deliver)
    if c.name is not None:
        new = replace(new, name=c.name)
    if c.prompt is not None:
        new = replace(new, payload=c.prompt)
    if c.if_absent is not None:
        new = with_if_absent(new, c.if_absent)
    if c.respawn is not None:
        argv = tuple(c.respawn)
        if not argv[0]:
            raise usage("--respawn: the first element (the program) must not be empty")
        if new.if_absent != IfAbsent.RESPAWN:
            raise usage("--respawn only applies with --if-absent respawn")
        new = replace(new, respawn=argv)
    if c.wake == WAKE_OFF or isinstance(c.wake, WakeOn):
        new = replace(new, wake_on=c.wake if isinstance(c.wake, WakeOn) else None)
    new = with_wake_source(new, c.wake_from)
    if c.any_program is not None:
        new = replace(new, any_program=c.any_program)
    if c.hours == HOURS_OFF or isinstance(c.hours, ActiveHours):
        new = replace(new, active_hours=c.hours if isinstance(c.hours, ActiveHours) else None)
    if c.changed is not None:
        new = replace(new, only_if_changed="" if c.changed == CHANGED_OFF else c.changed)
    check_only_if_changed(new.only_if_changed, new.wake_on is not None)
    if c.per_day is not None:  # 0 removes it
        new = replace(new, max_per_day=c.per_day)
    if c.total is not None:
        new = replace(new, max_total=c.total)
    if c.timeout == TIMEOUT_OFF:
        new = replace(new, turn_timeout=0, on_timeout=None)
    elif isinstance(c.timeout, int):
        new = replace(new, turn_timeout=c.timeout)
    if c.on_timeout is not None:
        if not new.turn_timeout:
            raise usage("--on-timeout needs --turn-timeout (the entry watches no turn)")
        new = replace(new, on_timeout=c.on_timeout)
    if c.budget == BUDGET_OFF or isinstance(c.budget, Budget):
        new = replace(new, budget=c.budget if isinstance(c.budget, Budget) else None)
    if c.fresh is not None:
        new = replace(new, fresh=None if c.fresh == FRESH_OFF else FreshMode(c.fresh))
    if new.payload != old.payload:  # edit cannot change the payload today; if it ever does, add's rule holds
        check_payload(new.payload)
    check_catch_up_window(new)
    try:
        check_respawn_intent(new)
    except EntryError as exc:
        raise usage(str(exc)) from None
    return new


def edit(ctx: typer.Context, flags: EntryFlags) -> None:
    """Change fields of an entry in place, keeping its id and history.

    A schedule or deliver change logs `rescheduled`, which restarts anchors
    and the backoff climb. Target and creator cannot change (rm + add).

    Example: rk cron edit 3f2a --every 10m --prompt "status, briefly?"
    """
    env = environment(ctx, flags.server, flags.as_json)
    check_lengths(flags, Surface.EDIT)
    entry_id = flags.entry_id or ""
    c = _changes(env, flags)
    if all(v is None for v in vars(c).values()) and not retry_given(flags) and flags.dormant_after is None:
        raise usage(
            "nothing to edit — pass a schedule flag, --prompt, --deliver, --name, --if-absent, --respawn, --wake-on, "
            "--active-hours, --only-if-changed, --max-per-day, --max-total, --turn-timeout/--on-timeout, "
            "--budget, --retry/--retry-after, --fresh, --dormant-after, or --any-program/--agents-only"
        )
    if c.prompt is not None and not c.prompt.strip():
        raise usage("the prompt must not be empty")
    files = env.files()
    now = env.now()
    after = dormant_after_flag(flags.dormant_after)
    before = stored(files, entry_id)
    edited = with_retry(_edited(before, c), flags, editing=True)  # usage errors and unknown ids before any file
    check_edited(env, before, edited, over_mcp=_via(env) == "mcp")  # the chains' rules
    if c.fresh is not None:
        check_fresh(env, edited)
    with editing(env, files) as doc:
        old = get(doc, entry_id)
        new = with_retry(_edited(old, c), flags, editing=True)
        new = new if after is None else replace(new, dormant_after=after)
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
    env.result(*receipt(env, new, f"edited {new.id} {new.name}"))
    if c.schedule is not None:
        for warning in rate_warnings(env, new.schedule):
            env.notice(f"warning: {warning}")


cmd_edit = command(edit, Surface.EDIT, before=(id_argument(),), after=output())


def cmd_rm(ctx: typer.Context, entry_id: IdArg, as_json: JsonOpt = False, server: ServerOpt = None) -> None:
    """Remove an entry (its log lines stay).

    Example: rk cron rm 3f2a
    """
    env = environment(ctx, server, as_json)
    files = env.files()
    try:  # an invalid entry (one past a bound, say) and a file past the size limit can still lose one
        if entry_id not in EntryDocument.read(files.entries, repair=True).ids():
            raise not_found(entry_id)
    except EntryFileError as exc:
        raise CliError(str(exc)) from None
    with editing(env, files, repair=True) as doc:
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


def _muted(entry: Entry, now: int, lease: int, off: bool, zone: tzinfo) -> tuple[Entry, dict[str, object], str]:
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
