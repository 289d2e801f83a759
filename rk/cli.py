"""The rk command line, declared in one place.

Exit codes: 0 ok, 1 operational (unknown id, lock contention, a corrupt file,
tmux trouble), 2 usage (bad or missing flags; the state directory is left
untouched). Errors are one line on stderr. With `--json`, exactly one JSON
document goes to stdout: `{"ok": true, "result": …}` or
`{"ok": false, "error": {"code": "usage"|"not-found"|"operational", "message": …}}`.

`-L/--server NAME` is accepted anywhere (`rk -L work cron list` or
`rk cron list -L work`); without it, the server of `$TMUX`, else `default`.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from enum import IntEnum
from pathlib import Path
from typing import Annotated, Optional

import typer

try:  # recent typer vendors click
    from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError
except ImportError:  # pragma: no cover - typer on top of click
    from click.exceptions import ClickException, NoArgsIsHelpError, UsageError

from rk import clock, logfile
from rk.core import bounds
from rk.config import ConfigError, ServerFiles, check_private_dir, check_slug, load_settings, state_dir
from rk.core.cronexpr import CronError, CronExpr, zone_for
from rk.core.durations import DurationError, format_go, parse_duration
from rk.core.entry import (
    CATCH_UP_ONCE,
    WAKE_SCOPE,
    CreatedBy,
    Deliver,
    Entry,
    EntryError,
    IfAbsent,
    Schedule,
    ScheduleKind,
    Target,
    TargetKind,
    WakeEvent,
    WakeOn,
    check_respawn_intent,
    is_pane_id,
)
from rk.entryfile import EntryDocument, EntryFileError, EntryNotFound, busy, load_entries
from rk.core.log import LogLine, LogView
from rk.core.orphan import expires_at
from rk.tmux import Server, TmuxError, socket_from_tmux_env


class ExitStatus(IntEnum):
    OK = 0
    ERROR = 1  #: operational
    USAGE = 2
    NOT_RUNNING = 3  #: `ticker status` with no ticker (systemctl's convention)


class CliError(Exception):
    """A user-facing failure: one line, an exit status, a JSON error code."""

    def __init__(self, message: str, status: ExitStatus = ExitStatus.ERROR, code: str = "operational") -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code


def usage(message: str) -> CliError:
    return CliError(message, ExitStatus.USAGE, "usage")


def not_found(entry_id: str) -> CliError:
    return CliError(f"no entry {entry_id}", ExitStatus.ERROR, "not-found")


@dataclass
class Environment:
    """Everything the commands read from the outside world; tests replace it."""

    environ: dict
    stdout: object
    stderr: object
    server_flag: str = ""  #: -L as given ("" = not given)
    json: bool = False

    @property
    def server(self) -> str:
        """-L, else the socket name of $TMUX, else `default` (validated)."""
        name = self.server_flag or Path(socket_from_tmux_env(self.environ.get("TMUX", ""))).name or "default"
        try:
            return check_slug(name)
        except ConfigError as exc:
            raise usage(str(exc)) from None

    def now(self) -> int:
        try:
            return clock.now(self.environ)
        except clock.ClockError as exc:
            raise usage(str(exc)) from None

    def state_dir(self) -> Path:
        return state_dir(self.environ)

    def files(self) -> ServerFiles:
        return ServerFiles(self.state_dir(), self.server)

    def settings(self):
        try:
            return load_settings(self.environ)
        except ConfigError as exc:
            raise CliError(str(exc)) from None

    def zone(self):
        return clock.local_zone(self.environ)

    def out(self, text: str = "") -> None:
        print(text, file=self.stdout)

    def err(self, text: str) -> None:
        print(text, file=self.stderr)

    def notice(self, text: str) -> None:
        """`rk: <text>` on stderr for humans; nothing with --json."""
        if not self.json:
            self.err(f"rk: {text}")

    def result(self, result, human: list[str] | str | None = None) -> None:
        """Print the JSON envelope, or the human lines."""
        if self.json:
            self.out(json.dumps({"ok": True, "result": result}, ensure_ascii=False))
        elif human is not None:
            for line in [human] if isinstance(human, str) else human:
                self.out(line)


JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
ServerOpt = Annotated[
    Optional[str],
    typer.Option("-L", "--server", help="tmux server (socket name); default: the server of $TMUX, else 'default'."),
]


# The flags shared by add, edit and simulate, declared once.
EveryOpt = Annotated[Optional[str], typer.Option("--every", help="Fixed interval, e.g. 5m.")]
IdleEveryOpt = Annotated[
    Optional[str], typer.Option("--idle-every", help="After this much quiet, then every this long while quiet (flat backoff).")
]
BackoffOpt = Annotated[bool, typer.Option("--backoff", help="Doubling ladder from the target's last activity.")]
MinOpt = Annotated[Optional[str], typer.Option("--min", help="Backoff first gap (default 60s).")]
MaxOpt = Annotated[Optional[str], typer.Option("--max", help="Backoff largest gap (default 30m).")]
CronOpt = Annotated[Optional[str], typer.Option("--cron", help='Five-field cron expression, e.g. "0 9 * * 1-5".')]
CatchUpOpt = Annotated[Optional[str], typer.Option("--catch-up", help="'once': one late fire after a gap instead of 'missed'.")]
TzOpt = Annotated[Optional[str], typer.Option("--tz", help="IANA zone for --cron (default: the ticker's local zone).")]
NameOpt = Annotated[Optional[str], typer.Option("--name", help="Display name (default: the prompt's first 40 characters).")]
DeliverOpt = Annotated[Optional[str], typer.Option("--deliver", help="immediate | when-idle | skip-if-busy")]
IfAbsentOpt = Annotated[Optional[str], typer.Option("--if-absent", help="skip | notify | respawn")]
RespawnOpt = Annotated[
    Optional[list[str]],
    typer.Option("--respawn", help="One argv element of the respawn command (repeat). {server} is replaced."),
]
WakeOnOpt = Annotated[
    Optional[str],
    typer.Option(
        "--wake-on",
        help="agent-state-change: also fire when another pane goes idle/waiting or vanishes; limit-reset: fire when this "
        "target's usage limit has reset and it is at rest. Without a schedule flag the entry fires on the event only "
        "(edit: none/off removes it).",
    ),
]
AnyProgramOpt = Annotated[
    bool,
    typer.Option("--any-program", help="Also type into a program rk does not know as an agent (a REPL, a TUI). Never a shell."),
]
WakeScopeOpt = Annotated[Optional[str], typer.Option("--wake-scope", help="server (the only scope).")]
WakeDebounceOpt = Annotated[
    Optional[str], typer.Option("--wake-debounce", help="Hold wake edges this long after the entry's last line (default 60s).")
]


def environment(ctx: typer.Context, server: str | None = None, as_json: bool | None = None) -> Environment:
    """The Environment `main` built (carried as the context's obj), with this
    level's -L and the command's --json applied."""
    env = ctx.obj
    if not isinstance(env, Environment):
        raise RuntimeError("rk commands run through rk.cli.main, which supplies the Environment")
    if as_json is not None:
        env.json = as_json
    if server:
        env.server_flag = server
        env.server  # validates the slug now: a bad -L is a usage error for every command
    return env


app = typer.Typer(
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    help="rk types prompts into the tmux panes where AI coding agents run, on a schedule.",
)
cron_app = typer.Typer(no_args_is_help=True, help="Schedule prompts: add, list, edit, mute, tick, ticker…")
app.add_typer(cron_app, name="cron")


@cron_app.callback()
def _cron_root(ctx: typer.Context, server: ServerOpt = None) -> None:
    environment(ctx, server)


@app.callback()
def _root(ctx: typer.Context, server: ServerOpt = None) -> None:
    environment(ctx, server)


# --------------------------------------------------------------------------- parsing helpers


def _duration(flag: str, value: str, allow_zero: bool = False) -> int:
    try:
        seconds = parse_duration(value)
    except DurationError as exc:
        raise usage(f"{flag}: {exc}") from None
    if seconds < 0 or (seconds == 0 and not allow_zero):
        raise usage(f"{flag} must be positive")
    return seconds


def _schedule_from_flags(
    every: str | None,
    idle_every: str | None,
    backoff: bool,
    lo: str | None,
    hi: str | None,
    cron: str | None,
    catch_up: str | None,
    tz: str | None,
    required: bool,
    note: Callable[[str], None],
) -> Schedule | None:
    chosen = [name for name, on in (("--every", every), ("--idle-every", idle_every), ("--backoff", backoff), ("--cron", cron)) if on]
    if (lo or hi) and not backoff:
        raise usage("--min/--max only apply with --backoff")
    if catch_up is not None and cron is None:
        raise usage("--catch-up only applies with --cron")
    if tz is not None and cron is None:
        raise usage("--tz only applies with --cron")
    if len(chosen) > 1:
        raise usage("exactly one schedule flag is required: --every, --idle-every, --backoff, or --cron")
    if not chosen:
        if required:
            raise usage("exactly one schedule flag is required: --every, --idle-every, --backoff, or --cron "
                        "(or --wake-on alone)")
        return None
    if every:
        return Schedule(kind=ScheduleKind.EVERY, interval=_duration("--every", every))
    if idle_every:
        d = _duration("--idle-every", idle_every)
        _note_short_rung(d, note)
        return Schedule(kind=ScheduleKind.BACKOFF, min=d, max=d)
    if backoff:
        mn = _duration("--min", lo) if lo else 60
        mx = _duration("--max", hi) if hi else 1800
        if mx < mn:
            raise usage("--max must be ≥ --min")
        _note_short_rung(mn, note)
        return Schedule(kind=ScheduleKind.BACKOFF, min=mn, max=mx)
    expr = (cron or "").strip()
    if len(expr.split()) != 5:
        raise usage(f"--cron needs exactly 5 fields (minute hour day-of-month month day-of-week), got {len(expr.split())}")
    try:
        CronExpr.parse(expr)
    except CronError as exc:
        raise usage(f"--cron: {exc}") from None
    if catch_up is not None and catch_up != CATCH_UP_ONCE:
        raise usage("--catch-up only accepts 'once'")
    if tz:
        try:
            zone_for(tz)
        except CronError as exc:
            raise usage(str(exc)) from None
    return Schedule(kind=ScheduleKind.CRON, expr=" ".join(expr.split()), catch_up=catch_up or "", tz=tz or "")


def _note_short_rung(seconds: int, note: Callable[[str], None]) -> None:
    from rk.core.ladder import MIN_OBSERVABLE

    if seconds < MIN_OBSERVABLE:
        note(f"note: a backoff step under {MIN_OBSERVABLE}s cannot be observed by the poll; it counts as {MIN_OBSERVABLE}s")


def _choice(flag: str, value: str | None, allowed) -> str | None:
    if value is None:
        return None
    values = [str(v) for v in allowed]
    if value not in values:
        raise usage(f"{flag} must be one of {', '.join(values)}")
    return value


def _no_space(flag: str, value: str) -> str:
    if not value or any(c.isspace() for c in value):
        raise usage(f"{flag} must be non-empty without whitespace")
    return value


def _target_from_flags(role: str | None, session: str | None, pane: str | None) -> Target | None:
    given = [(n, v) for n, v in (("--role", role), ("--session", session), ("--pane", pane)) if v is not None]
    if len(given) > 1:
        raise usage(f"{given[0][0]} and {given[1][0]} are mutually exclusive")
    if not given:
        return None
    name, value = given[0]
    if name == "--role":
        return Target(TargetKind.ROLE, _no_space("--role", value))
    if name == "--session":
        return Target(TargetKind.SESSION, _no_space("--session", value))
    if not is_pane_id(value):
        raise usage("--pane must be a tmux pane id like %3")
    return Target(TargetKind.PANE, value)


def _wake_from_flags(wake_on: str | None, scope: str | None, debounce: str | None, allow_off: bool) -> WakeOn | None | str:
    """WakeOn, None (not given), or "off" (remove; edit only)."""
    if wake_on is None:
        if scope is not None or debounce is not None:
            raise usage("--wake-scope/--wake-debounce only apply with --wake-on")
        return None
    if wake_on in ("none", "off"):
        if not allow_off:
            raise usage("--wake-on none/off only applies to edit")
        if scope is not None or debounce is not None:
            raise usage("--wake-on none cannot take --wake-scope/--wake-debounce")
        return "off"
    if wake_on not in WakeEvent.__members__.values():
        raise usage(f"--wake-on must be one of {', '.join(WakeEvent)}")
    if scope is not None and scope != WAKE_SCOPE:
        raise usage(f"--wake-scope must be {WAKE_SCOPE}")
    secs = _duration("--wake-debounce", debounce, allow_zero=True) if debounce is not None else 60
    return WakeOn(event=wake_on, scope=WAKE_SCOPE, debounce=secs)


def _caller_pane(env: Environment) -> str:
    pane = env.environ.get("TMUX_PANE", "")
    if pane and not is_pane_id(pane):
        raise usage(f"malformed $TMUX_PANE {pane!r}")
    return pane


def _caller_server(env: Environment) -> Server:
    socket_path = socket_from_tmux_env(env.environ.get("TMUX", ""))
    if socket_path:
        return Server(socket_path=socket_path, env=env.environ)
    return Server(name=env.server, env=env.environ)


def _default_target(env: Environment, pane: str) -> tuple[Target, str]:
    """role of the caller's window → its agent session → its pane. Returns (target, session ref)."""
    server = _caller_server(env)
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


def _receipt(entry: Entry) -> dict:
    return {"id": entry.id, "name": entry.name, "schedule": entry.schedule.summary, "target": entry.target.summary}


@contextmanager
def _editing(env: Environment, files: ServerFiles) -> Iterator[EntryDocument]:
    """`EntryDocument.edit` (the server's lock, a fresh read, a save) with CLI errors."""
    try:
        with EntryDocument.edit(files, wait=env.settings().lock_wait, on_wait=_waiting_note(env, files)) as doc:
            yield doc
    except EntryFileError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:
        raise CliError(f"{exc.filename or files.dir}: {exc.strerror or exc}") from None


def _waiting_note(env: Environment, files: ServerFiles):
    """What a change says (humans only) when it finds a tick holding the lock."""
    return lambda: env.notice(f"waiting for the tick on server {files.slug} to finish")


def _stored(files: ServerFiles, entry_id: str) -> Entry:
    """The entry as stored now, read without the lock: unknown ids and a corrupt file
    are reported before anything is created (the state dir and the lock file included)."""
    try:
        return _get(EntryDocument.read(files.entries), entry_id)
    except EntryFileError as exc:
        raise CliError(str(exc)) from None


def _get(doc: EntryDocument, entry_id: str) -> Entry:
    try:
        return doc.get(entry_id)
    except EntryNotFound:
        raise not_found(entry_id) from None
    except EntryError as exc:
        raise CliError(f"entry {entry_id} is invalid ({exc}); fix it by hand or rm it") from None


# --------------------------------------------------------------------------- add / edit


@cron_app.command("add")
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
    role: Annotated[Optional[str], typer.Option("--role", help="Target the window carrying this role.")] = None,
    session: Annotated[Optional[str], typer.Option("--session", help="Target the pane carrying this agent session.")] = None,
    pane: Annotated[Optional[str], typer.Option("--pane", help="Target this pane id (%N).")] = None,
    wake_on: WakeOnOpt = None,
    wake_scope: WakeScopeOpt = None,
    wake_debounce: WakeDebounceOpt = None,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """Add an entry. Output: `<id> <name> [<schedule> -> <target>]`."""
    env = environment(ctx, server, as_json)
    if not prompt.strip():
        raise usage("the prompt must not be empty")
    wake = _wake_from_flags(wake_on, wake_scope, wake_debounce, allow_off=False)
    schedule = _schedule_from_flags(every, idle_every, backoff, lo, hi, cron, catch_up, tz, required=wake is None,
                                    note=env.notice)
    schedule = schedule or Schedule(kind=ScheduleKind.NONE)  # fires on its wake event only
    deliver = _choice("--deliver", deliver, Deliver) or Deliver.IMMEDIATE  # the defaults are written, as the original does
    if_absent = _choice("--if-absent", if_absent, IfAbsent) or IfAbsent.SKIP
    target = _target_from_flags(role, session, pane)
    argv = tuple(respawn or ())
    if argv and if_absent != IfAbsent.RESPAWN:
        raise usage("--respawn only applies with --if-absent respawn")
    if argv and not argv[0]:
        raise usage("--respawn: the first element (the program) must not be empty")
    caller = _caller_pane(env)
    files = env.files()
    now = env.now()
    session_ref = ""
    if target is None:
        if not caller:
            raise usage("not inside a tmux pane: pass --role, --pane, or --session")
        target, session_ref = _default_target(env, caller)
    elif caller:
        try:
            session_ref = _caller_server(env).display(caller, "#{@rk_pane_agent_session}").strip()
        except TmuxError:
            session_ref = ""
    if if_absent == IfAbsent.RESPAWN and not argv and target.kind != TargetKind.SESSION:
        raise usage("--if-absent respawn needs --respawn on role and pane targets (only session targets have a default)")
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
        created_by=CreatedBy(at=now, session=session_ref, pane=caller),
    )
    try:
        check_respawn_intent(entry)
    except EntryError as exc:
        raise usage(str(exc)) from None
    settings = env.settings()
    try:  # a corrupt or full file is refused before anything is created
        EntryDocument.read(files.entries).check_room(settings.max_entries)
    except EntryFileError as exc:
        raise CliError(str(exc)) from None
    with _editing(env, files) as doc:
        entry = doc.add(entry, settings.max_entries)
        try:
            entry = doc.get(entry.id)  # validates the stored form (e.g. a cron expression that never matches)
        except EntryError as exc:
            raise CliError(str(exc)) from None
    env.result(_receipt(entry), f"{entry.id} {entry.name} [{entry.schedule.summary} -> {entry.target.summary}]")


@cron_app.command("edit")
def cmd_edit(
    ctx: typer.Context,
    entry_id: Annotated[str, typer.Argument(metavar="ID")],
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
        Optional[bool],
        typer.Option("--any-program/--agents-only", help="Allow typing into a program that is not a known agent, or not."),
    ] = None,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """Change fields of an entry in place, keeping its id and history.

    A schedule or deliver change logs `rescheduled`, which restarts anchors
    and the backoff climb. Target and creator cannot change (rm + add).
    """
    env = environment(ctx, server, as_json)
    schedule = _schedule_from_flags(every, idle_every, backoff, lo, hi, cron, catch_up, tz, required=False, note=env.notice)
    deliver = _choice("--deliver", deliver, Deliver)
    if_absent = _choice("--if-absent", if_absent, IfAbsent)
    wake = _wake_from_flags(wake_on, wake_scope, wake_debounce, allow_off=True)
    if all(v is None for v in (schedule, deliver, name, if_absent, respawn, wake, any_program)):
        raise usage("nothing to edit — pass a schedule flag, --deliver, --name, --if-absent, --respawn, --wake-on, "
                    "or --any-program/--agents-only")
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
        if if_absent is not None:
            new = replace(new, if_absent=if_absent)
            if if_absent != IfAbsent.RESPAWN:
                new = replace(new, respawn=())
        if respawn is not None:
            argv = tuple(respawn)
            if not argv[0]:
                raise usage("--respawn: the first element (the program) must not be empty")
            if new.if_absent != IfAbsent.RESPAWN:
                raise usage("--respawn only applies with --if-absent respawn")
            new = replace(new, respawn=argv)
        if wake == "off":
            new = replace(new, wake_on=None)
        elif isinstance(wake, WakeOn):
            new = replace(new, wake_on=wake)
        if any_program is not None:
            new = replace(new, any_program=any_program)
        try:
            check_respawn_intent(new)
        except EntryError as exc:
            raise usage(str(exc)) from None
        return new

    edited(_stored(files, entry_id))  # usage errors and unknown ids before any file is touched
    with _editing(env, files) as doc:
        old = _get(doc, entry_id)
        new = edited(old)
        doc.replace(new)
        try:
            new = doc.get(entry_id)
        except EntryError as exc:
            raise CliError(f"validation error: {exc}") from None
    if new.schedule != old.schedule or new.policy != old.policy:  # "" reads as immediate
        try:
            logfile.append_lines(files.log, [LogLine(now, entry_id, "", "edit", "rescheduled")])
        except OSError as exc:
            raise CliError(f"{exc.filename or files.dir}: {exc.strerror or exc}") from None
    env.result(_receipt(new), f"edited {new.id} {new.name} [{new.schedule.summary} -> {new.target.summary}]")


# --------------------------------------------------------------------------- list / show


def _schedule_cell(entry: Entry) -> str:
    """The SCHEDULE column: the schedule, `+wake` with a wake_on, or `on <event>` for a wake-only entry."""
    if entry.schedule.kind == ScheduleKind.NONE and entry.wake_on is not None:
        return f"on {entry.wake_on.event}"
    return entry.schedule.summary + (" +wake" if entry.wake_on else "")


def _flags(entry: Entry, now: int) -> str:
    flags = []
    if entry.muted:
        flags.append("muted")
    elif entry.muted_until > now:
        flags.append(f"muted({_short(entry.muted_until - now)})")
    if entry.pinned:
        flags.append("pinned")
    if entry.any_program:
        flags.append("any-program")
    return ",".join(flags) or "-"


def _short(seconds: int) -> str:
    from rk.core.durations import format_duration

    return format_duration(max(0, seconds))


def _rfc3339(ts: int, zone) -> str:
    return datetime.fromtimestamp(ts, zone).isoformat(timespec="seconds")


def _schedule_json(s: Schedule) -> dict:
    out: dict = {"kind": s.kind}
    if s.kind == ScheduleKind.EVERY:
        out["interval"] = format_go(s.interval)
    elif s.kind == ScheduleKind.BACKOFF:
        out["min"] = format_go(s.min)
        out["max"] = format_go(s.max)
    elif s.kind == ScheduleKind.CRON:
        out["expr"] = s.expr
        if s.catch_up:
            out["catch_up"] = s.catch_up
        if s.tz:
            out["tz"] = s.tz
    return out


def record(entry: Entry, view: LogView, now: int) -> dict:
    """One `list --json` record (a cross-tool contract: keys and shapes are stable)."""
    newest = view.newest(entry.id)
    since = view.orphaned_since(entry.id, entry.created_by.at) if entry.target.kind != TargetKind.ROLE else 0
    rec = {
        "id": entry.id,
        "name": entry.name,
        "schedule": _schedule_json(entry.schedule),
        "schedule_summary": entry.schedule.summary,
        "wake_on": None
        if entry.wake_on is None
        else {"event": entry.wake_on.event, "scope": entry.wake_on.scope, "debounce": format_go(entry.wake_on.debounce)},
        "target": entry.target.summary,
        "deliver": entry.deliver,
        "if_absent": entry.if_absent,
        "respawn": list(entry.respawn),
        "pinned": entry.pinned,
        "any_program": entry.any_program,
        "muted": entry.is_muted(now),
        "last_fired": newest.ts if newest else 0,
        "orphaned_since": since,
        "expires_at": expires_at(entry, since),
    }
    if entry.muted_until > now:
        rec["muted_until"] = entry.muted_until
    return rec


def _load_for_listing(env: Environment) -> tuple[list[Entry], LogView, int]:
    files = env.files()
    loaded = load_entries(files.entries)
    for diag in loaded.diagnostics:
        env.err(f"rk: {diag.reason}: {diag.detail}")
    return loaded.entries, LogView(logfile.read_live(files.log)), env.now()


@cron_app.command("list")
def cmd_list(ctx: typer.Context, as_json: JsonOpt = False, server: ServerOpt = None) -> None:
    """List entries (reads only files; never runs tmux)."""
    env = environment(ctx, server, as_json)
    entries, view, now = _load_for_listing(env)
    if env.json:
        env.result([record(e, view, now) for e in entries])
        return
    if not entries:
        env.out(f"no cron entries on server {env.server}")
        return
    from rich.console import Console
    from rich.table import Table

    zone = env.zone()
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("ID", "NAME", "SCHEDULE", "TARGET", "DELIVER", "FLAGS", "LAST-FIRED"):
        table.add_column(col, overflow="fold")
    for e in entries:
        newest = view.newest(e.id)
        table.add_row(
            e.id,
            e.name,
            _schedule_cell(e),
            e.target.summary,
            e.deliver or "immediate",
            _flags(e, now),
            _rfc3339(newest.ts, zone) if newest else "-",
        )
    Console(file=env.stdout, soft_wrap=True, width=200 if not getattr(env.stdout, "isatty", lambda: False)() else None).print(table)


cron_app.command("ls", hidden=True)(cmd_list)


@cron_app.command("show")
def cmd_show(ctx: typer.Context, entry_id: Annotated[str, typer.Argument(metavar="ID")], as_json: JsonOpt = False, server: ServerOpt = None) -> None:
    """Show one entry in full (reads only files)."""
    env = environment(ctx, server, as_json)
    entries, view, now = _load_for_listing(env)
    entry = next((e for e in entries if e.id == entry_id), None)
    if entry is None:
        raise not_found(entry_id)
    rec = record(entry, view, now)
    if env.json:
        env.result(rec)
        return
    zone = env.zone()
    lines = [
        f"id:         {entry.id}",
        f"name:       {entry.name}",
        f"schedule:   {entry.schedule.summary}",
        f"wake_on:    {entry.wake_on.event + ' (debounce ' + _short(entry.wake_on.debounce) + ')' if entry.wake_on else '-'}",
        f"target:     {entry.target.summary}",
        f"deliver:    {entry.deliver or 'immediate'}",
        f"if_absent:  {entry.if_absent or 'skip'}" + (f" {list(entry.respawn)}" if entry.respawn else ""),
        f"flags:      {_flags(entry, now)}",
        f"types into: {'any program but a shell (any_program)' if entry.any_program else 'agents only'}",
        f"created:    {_rfc3339(entry.created_by.at, zone)}" + (f" from {entry.created_by.pane}" if entry.created_by.pane else ""),
        f"last fired: {_rfc3339(rec['last_fired'], zone) if rec['last_fired'] else '-'}",
        f"payload:    {entry.payload}",
    ]
    if rec["expires_at"]:
        lines.append(f"expires:    {_rfc3339(rec['expires_at'], zone)} (target missing since {_rfc3339(rec['orphaned_since'], zone)})")
    env.result(rec, lines)


# --------------------------------------------------------------------------- rm / mute / pin


@cron_app.command("rm")
def cmd_rm(ctx: typer.Context, entry_id: Annotated[str, typer.Argument(metavar="ID")], as_json: JsonOpt = False, server: ServerOpt = None) -> None:
    """Remove an entry (its log lines stay)."""
    env = environment(ctx, server, as_json)
    files = env.files()
    _stored(files, entry_id)
    with _editing(env, files) as doc:
        try:
            doc.remove(entry_id)
        except EntryNotFound:
            raise not_found(entry_id) from None
    env.result({"id": entry_id, "removed": True}, f"removed {entry_id}")


@cron_app.command("mute")
def cmd_mute(
    ctx: typer.Context,
    entry_id: Annotated[str, typer.Argument(metavar="ID")],
    for_: Annotated[Optional[str], typer.Option("--for", help="Mute for this long (a lease that lapses by itself).")] = None,
    off: Annotated[bool, typer.Option("--off", help="Unmute (clears the flag and any lease).")] = False,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """Mute an entry: indefinitely, for a while (--for 30m), or --off."""
    env = environment(ctx, server, as_json)
    if for_ is not None and off:
        raise usage("--for and --off are mutually exclusive")
    lease = _duration("--for", for_) if for_ is not None else 0
    now = env.now()
    files = env.files()
    _stored(files, entry_id)
    with _editing(env, files) as doc:
        entry, result, human = _muted(_get(doc, entry_id), now, lease, off, env.zone())
        doc.replace(entry)
    env.result(result, human)


def _muted(entry: Entry, now: int, lease: int, off: bool, zone) -> tuple[Entry, dict, str]:
    """The entry muted for good, for `lease` s from now, or unmuted; and the receipts."""
    entry_id = entry.id
    if off:
        entry = replace(entry, muted=False, muted_until=0)
        result, human = {"id": entry_id, "muted": False}, f"unmuted {entry_id}"
    elif lease:
        until = now + lease
        entry = replace(entry, muted=False, muted_until=until)
        result, human = {"id": entry_id, "muted": True, "until": until}, f"muted {entry_id} until {_rfc3339(until, zone)}"
    else:
        entry = replace(entry, muted=True, muted_until=0)
        result, human = {"id": entry_id, "muted": True}, f"muted {entry_id}"
    return entry, result, human


@cron_app.command("pin")
def cmd_pin(
    ctx: typer.Context,
    entry_id: Annotated[str, typer.Argument(metavar="ID")],
    off: Annotated[bool, typer.Option("--off", help="Unpin.")] = False,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """Pin an entry so it never expires as an orphan (or --off)."""
    env = environment(ctx, server, as_json)
    files = env.files()
    _stored(files, entry_id)
    with _editing(env, files) as doc:
        doc.replace(replace(_get(doc, entry_id), pinned=not off))
    env.result({"id": entry_id, "pinned": not off}, f"{'unpinned' if off else 'pinned'} {entry_id}")


# --------------------------------------------------------------------------- log / next


@cron_app.command("log")
def cmd_log(
    ctx: typer.Context,
    entry_id: Annotated[Optional[str], typer.Argument(metavar="[ID]", help="Only this entry's lines.")] = None,
    n: Annotated[int, typer.Option("-n", help="How many of the newest lines (0 = all).")] = 20,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """The delivery log, archives included, oldest first."""
    env = environment(ctx, server, as_json)
    if n < 0:
        raise usage("-n must be ≥ 0")
    log = env.files().log
    if n:
        lines = logfile.read_newest(log, n, (lambda line: line.entry == entry_id) if entry_id else (lambda _line: True))
    else:
        lines = [line for line in logfile.read_history(log) if not entry_id or line.entry == entry_id]
    if env.json:
        env.result([line.to_dict() for line in lines])
        return
    if not lines:
        env.out("no log lines" + (f" for {entry_id}" if entry_id else ""))
        return
    zone = env.zone()
    for line in lines:
        env.out(f"{_rfc3339(line.ts, zone)}  {line.entry:<6} {line.target or '-':<5} {line.reason or '-':<8} {line.outcome}")


def _target_fact(env: Environment, entry: Entry):
    """The target's facts now, if the server is live (backoff needs the epoch)."""
    from rk.core.facts import TargetFact, resolve_target

    server = Server(name=env.server, env=env.environ)
    if not server.is_live():
        return TargetFact(why=f"server {env.server} is not running")
    try:
        return resolve_target(entry.target, server.pane_facts())
    except TmuxError as exc:
        return TargetFact(why=str(exc))


@cron_app.command("next")
def cmd_next(
    ctx: typer.Context,
    entry_id: Annotated[str, typer.Argument(metavar="ID")],
    n: Annotated[int, typer.Option("-n", help="How many fire times.")] = 5,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """The next fire times in local time and UTC (backoff: if the target stays quiet)."""
    env = environment(ctx, server, as_json)
    from rk.core.schedule import upcoming

    if not 1 <= n <= bounds.MAX_FIRES:
        raise usage(f"-n must be between 1 and {bounds.MAX_FIRES}")
    entries, view, now = _load_for_listing(env)
    entry = next((e for e in entries if e.id == entry_id), None)
    if entry is None:
        raise not_found(entry_id)
    zone = env.zone()
    if entry.schedule.kind == ScheduleKind.CRON and entry.schedule.tz:
        zone = zone_for(entry.schedule.tz)
    target = _target_fact(env, entry) if entry.schedule.kind == ScheduleKind.BACKOFF else None
    plan = upcoming(entry, view, now, n + 1, zone=env.zone(), target=target)
    fires = []
    human = []
    overdue = [item for item in plan.fires if item.ts <= now]
    if overdue:
        human.append(f"due now (since {datetime.fromtimestamp(overdue[0].ts, zone).isoformat(timespec='seconds')}); fires on the next tick")
    for item in [item for item in plan.fires if item.ts > now][:n]:
        local = datetime.fromtimestamp(item.ts, zone).isoformat(timespec="seconds")
        utc = datetime.fromtimestamp(item.ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        rec = {"ts": item.ts, "local": local, "utc": utc}
        if item.rung:
            rec["rung"] = item.rung
        fires.append(rec)
        human.append(f"{local}  ({utc})" + (f"  rung {item.rung}" if item.rung else ""))
    if plan.note:
        human.append(plan.note)
    if entry.is_muted(now):
        human.insert(0, "muted: " + ("until unmuted" if entry.muted else f"until {_rfc3339(entry.muted_until, zone)}"))
    env.result({"id": entry.id, "fires": fires}, human or ["no upcoming fires"])


# --------------------------------------------------------------------------- run / tick / ticker


def _runtime(env: Environment):
    from rk.tick import Runtime

    env.now()  # an unreadable RK_NOW is a usage error, before anything runs
    try:
        runtime = Runtime.from_environ(env.environ)
        if runtime.state_dir.exists():
            check_private_dir(runtime.state_dir)  # entries planted in a shared directory are never delivered
        return runtime
    except ConfigError as exc:
        raise CliError(str(exc)) from None


@cron_app.command("run")
def cmd_run(ctx: typer.Context, entry_id: Annotated[str, typer.Argument(metavar="ID")], as_json: JsonOpt = False, server: ServerOpt = None) -> None:
    """Fire an entry now through its deliver policy (logged with reason `manual`)."""
    env = environment(ctx, server, as_json)
    from rk.lock import LockHeld, locked
    from rk.manual import run_now

    runtime = _runtime(env)
    files = env.files()
    _stored(files, entry_id)  # a corrupt file or an unknown id, before the lock
    try:
        with locked(files.lock, retry_every=0.05, retry_for=env.settings().lock_wait,
                    on_wait=_waiting_note(env, files)):
            report = run_now(runtime, files, entry_id)
    except LockHeld as exc:
        raise CliError(busy(files.slug, exc)) from None
    except KeyError:
        raise not_found(entry_id) from None
    env.result(report.to_dict(), report.human)
    if report.failed:
        raise typer.Exit(ExitStatus.ERROR)


@cron_app.command("tick")
def cmd_tick(
    ctx: typer.Context,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Evaluate and print decisions; deliver and write nothing.")] = False,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """One sweep over every live server (or -L one), exactly as a ticker iteration."""
    env = environment(ctx, server, as_json)
    from rk.tick import sweep

    runtime = _runtime(env)
    only = env.server if env.server_flag else None
    result = sweep(runtime, only=only, dry_run=dry_run)
    if all(s.held for s in result.servers) and result.servers and not env.json:
        return  # another tick holds every lock: a quiet no-op
    human = []
    if dry_run:
        for d in result.decisions:
            human.append(f"would: {d.server} {d.entry} {d.reason} {d.pane or '-'} {d.outcome}")
    human.append(f"tick: {result.servers_swept} servers swept, {result.fires} fires, {len(result.diagnostics)} diagnostics")
    env.result(result.to_json(), human)


@cron_app.command("ticker")
def cmd_ticker(
    ctx: typer.Context,
    action: Annotated[Optional[str], typer.Argument(help="start | stop | status (none: run in the foreground)")] = None,
    interval: Annotated[Optional[float], typer.Option("--interval", help="Seconds between polls (default 30).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log diagnostics too.")] = False,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """Run the 30-second ticker (foreground), or start/stop/status it in the background."""
    env = environment(ctx, server, as_json)
    from rk import ticker

    if action not in (None, "start", "stop", "status"):
        raise usage("ticker action must be start, stop or status")
    if interval is not None:
        try:
            bounds.interval(interval)
        except bounds.OutOfRange as exc:
            raise usage(str(exc)) from None
    runtime = _runtime(env)
    if action is None:
        ticker.setup_logging(runtime.state_dir, foreground=True, verbose=verbose)
        loop = ticker.Ticker(runtime, interval)
        loop.install_signal_handlers()
        runtime.cache_entries = True
        runtime.log_cache = logfile.LiveLogCache()
        runtime.unreadable = {}
        try:
            loop.run()
        except ticker.TickerError as exc:
            raise CliError(str(exc)) from None
        return
    if action == "start":
        already = ticker.read_pid(runtime.state_dir)
        if already is not None and already.alive():  # a harmless no-op, so a tmux.conf line can run it every time
            env.result({"running": True, "pid": already.pid, "started": False}, f"ticker already running (pid {already.pid})")
            return
        argv = [sys.executable, "-m", "rk", "cron", "ticker"]
        if interval is not None:
            argv += ["--interval", str(interval)]
        if verbose:
            argv.append("--verbose")
        try:
            rec = ticker.start_background(runtime, argv)
        except ticker.TickerError as exc:
            raise CliError(str(exc)) from None
        env.result({"running": True, "pid": rec.pid, "started": True},
                   f"ticker started (pid {rec.pid}); log: {runtime.state_dir / ticker.LOG_NAME}")
        return
    if action == "stop":
        try:
            rec = ticker.stop_background(runtime.state_dir)
        except ticker.TickerError as exc:
            raise CliError(str(exc)) from None
        env.result({"stopped": rec is not None, "pid": rec.pid if rec else 0}, f"ticker stopped (pid {rec.pid})" if rec else "no ticker running")
        return
    rec = ticker.read_pid(runtime.state_dir)
    running = rec is not None and rec.alive()
    if running:
        env.result(
            {"running": True, "pid": rec.pid, "started_at": rec.started_at},
            f"ticker running (pid {rec.pid}, since {_rfc3339(rec.started_at, env.zone())})",
        )
    else:
        env.result({"running": False}, "ticker not running")
        raise typer.Exit(ExitStatus.NOT_RUNNING)


@cron_app.command("simulate")
def cmd_simulate(
    ctx: typer.Context,
    entry_id: Annotated[Optional[str], typer.Argument(metavar="[ID]", help="An entry of the server's file (else give schedule flags).")] = None,
    states: Annotated[str, typer.Option("--states", help='The target pane\'s script, e.g. "0 idle; 10m active; 25m idle; 40m waiting".')] = "0 idle",
    other: Annotated[Optional[list[str]], typer.Option("--other", help="Another pane's script (%2, %3, … in order), for wake_on.")] = None,
    for_: Annotated[str, typer.Option("--for", help="How long to replay.")] = "2h",
    tick: Annotated[str, typer.Option("--tick", help="Poll interval.")] = "30s",
    busy: Annotated[str, typer.Option("--busy", help="How long the target stays active after each delivery (0s: it does not react).")] = "20s",
    start: Annotated[Optional[str], typer.Option("--start", help="Start instant (ISO-8601 or unix seconds; default now).")] = None,
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
    width: Annotated[Optional[int], typer.Option("--width", help="Columns for the drawing (default: the terminal's).")] = None,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """Replay an entry against a scripted pane-state timeline and draw fires, holds and skips.

    Example: rk cron simulate --idle-every 3m --deliver when-idle --states "0 idle; 10m active; 25m idle" --for 1h
    """
    env = environment(ctx, server, as_json)
    from rk.core.simulate import AgentModel, simulate
    from rk.timeline import ScriptError, parse_script, render

    schedule = _schedule_from_flags(every, idle_every, backoff, lo, hi, cron, catch_up, tz, required=entry_id is None,
                                    note=env.notice)
    deliver = _choice("--deliver", deliver, Deliver)
    wake = _wake_from_flags(wake_on, None, wake_debounce, allow_off=True)
    if width is not None and not 20 <= width <= 1000:
        raise usage("--width must be between 20 and 1000 columns")
    span = _duration("--for", for_)
    step = _duration("--tick", tick)
    if span // step > bounds.MAX_SIM_STEPS:
        raise usage(f"--for {for_} at --tick {tick} is {span // step} polls; at most {bounds.MAX_SIM_STEPS}")
    react = _duration("--busy", busy, allow_zero=True)
    if start is not None:
        try:
            t0 = clock.parse_instant(start)
        except clock.ClockError as exc:
            raise usage(f"--start: {exc}") from None
    else:
        t0 = env.now()
    if entry_id is not None:
        entries, _, _ = _load_for_listing(env)
        base = next((e for e in entries if e.id == entry_id), None)
        if base is None:
            raise not_found(entry_id)
    else:
        base = Entry(id="sim", name="simulated", schedule=schedule, target=Target(TargetKind.PANE, "%1"), payload="simulated")
    entry = replace(base, target=Target(TargetKind.PANE, "%1"), muted=False, muted_until=0, created_by=CreatedBy(at=t0))
    if schedule is not None:
        entry = replace(entry, schedule=schedule)
    if deliver is not None:
        entry = replace(entry, deliver=deliver)
    if wake == "off":
        entry = replace(entry, wake_on=None)
    elif isinstance(wake, WakeOn):
        entry = replace(entry, wake_on=wake)
    try:
        script = parse_script(states, "%1", t0)
        others = []
        for i, text in enumerate(other or [], start=2):
            script += parse_script(text, f"%{i}", t0)
            others.append(f"%{i}")
    except ScriptError as exc:
        raise usage(str(exc)) from None
    zone = zone_for(entry.schedule.tz) if entry.schedule.tz else env.zone()
    sim = simulate(
        [entry], start=t0, end=t0 + span, tick=step, script=script,
        agents={"%1": AgentModel(busy_for=react)} if react else {}, zone=zone,
    )
    if env.json:
        env.result({
            "entry": {"id": entry.id, "schedule": entry.schedule.summary, "deliver": entry.deliver or "immediate",
                      "wake_on": entry.wake_on is not None},
            "start": t0, "end": t0 + span, "tick": step,
            "states": [{"at": c.at, "pane": c.pane, "state": c.state} for c in script],
            "events": [
                {"at": e.at, "kind": e.kind, "reason": e.reason, "outcome": e.outcome, "pane": e.pane, "due_at": e.due_at, "rung": e.rung}
                for e in sim.events
            ],
        })
        return
    from rich.console import Console

    console = Console(file=env.stdout, width=width, highlight=False)
    title = (f"{entry.id}  {entry.schedule.summary}{' +wake' if entry.wake_on else ''}  deliver {entry.deliver or 'immediate'}"
             f"  target %1{f' (answers in {react}s)' if react else ''}  over {for_} from "
             f"{datetime.fromtimestamp(t0, zone).isoformat(timespec='minutes')}")
    console.print(render(sim, title=title, pane="%1", others=others, start=t0, end=t0 + span, width=console.width, zone=zone))


# --------------------------------------------------------------------------- role / operator


@app.command("role")
def cmd_role(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="A role for the current window (e.g. operator), or 'clear'.")],
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """Tag the current tmux window with a role, which cron entries can target."""
    env = environment(ctx, server, as_json)
    from rk.operator import set_role

    pane = _caller_pane(env)
    if not pane:
        raise usage("not inside a tmux pane: rk role tags the current window")
    if name != "clear":
        _no_space("role", name)
    try:
        window = set_role(_caller_server(env), pane, None if name == "clear" else name)
    except TmuxError as exc:
        raise CliError(str(exc)) from None
    human = f"cleared the role of window {window}" if name == "clear" else f"window {window} is now role:{name}"
    env.result({"window": window, "role": "" if name == "clear" else name}, human)


@app.command("operator")
def cmd_operator(
    ctx: typer.Context,
    command: Annotated[Optional[str], typer.Option("--command", help="Agent command to run (default: settings operator_command, 'claude').")] = None,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """Ensure this server has one operator window (role operator) running an agent."""
    env = environment(ctx, server, as_json)
    from rk.operator import ensure_operator

    settings = env.settings()
    target = Server(name=env.server, env=env.environ)
    if not env.server_flag and env.environ.get("TMUX"):
        target = _caller_server(env)
    if not target.is_live():
        raise CliError(f"no tmux server {env.server} is running")
    try:
        created, window = ensure_operator(target, command or settings.operator_command, home=env.environ.get("HOME", "/"))
    except (TmuxError, ValueError) as exc:
        raise CliError(str(exc)) from None
    human = f"operator window {window} started" if created else "Operator tab already present."
    env.result({"created": created, "window": window}, human)


# --------------------------------------------------------------------------- entry point


def main(argv: list[str] | None = None, environ: Mapping[str, str] | None = None, stdout=None, stderr=None) -> int:
    """Run the CLI; return the exit status. Never lets a traceback reach the user.

    One `Environment` per call, handed to the commands as the click context's
    `obj` (see `environment`).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    env = Environment(
        environ=dict(os.environ if environ is None else environ),
        stdout=stdout or sys.stdout,
        stderr=stderr or sys.stderr,
        # Sniffed only so that a usage error click raises before any command runs
        # (a missing argument, an unknown option) still gets the JSON envelope;
        # once a command runs, its own --json option decides (`environment`).
        json="--json" in args[: args.index("--")] if "--" in args else "--json" in args,
    )
    command = typer.main.get_command(app)
    try:
        status = command.main(args=args, prog_name="rk", standalone_mode=False, obj=env)
        if isinstance(status, int) and not isinstance(status, bool):
            return status  # a command's typer.Exit(code), returned in non-standalone mode
    except CliError as exc:
        return _fail(env, exc)
    except NoArgsIsHelpError:
        return int(ExitStatus.USAGE)  # the help was printed
    except UsageError as exc:
        return _fail(env, usage(exc.format_message()))
    except typer.Exit as exc:
        return int(exc.exit_code or 0)
    except (typer.Abort, KeyboardInterrupt):
        env.err("rk: aborted")
        return int(ExitStatus.ERROR)
    except ClickException as exc:
        return _fail(env, CliError(exc.format_message()))
    except (CronError, EntryError, ConfigError) as exc:
        return _fail(env, CliError(str(exc)))
    except OSError as exc:
        return _fail(env, CliError(f"{str(exc.filename) + ': ' if exc.filename else ''}{exc.strerror or exc}"))
    except Exception as exc:  # noqa: BLE001 - never a traceback for the user
        if env.environ.get("RK_DEBUG"):
            raise
        return _fail(env, CliError(f"internal error ({type(exc).__name__}: {exc}); rerun with RK_DEBUG=1 for details"))
    return int(ExitStatus.OK)


def _fail(env: Environment, exc: CliError) -> int:
    message = " ".join(exc.message.split()) if exc.message else "error"
    if env.json:
        env.out(json.dumps({"ok": False, "error": {"code": exc.code, "message": message}}, ensure_ascii=False))
    else:
        env.err(f"rk: {message}")
    return int(exc.status)


from rk.agent.cli import agent_app  # noqa: E402 - the agent group lives beside its hook

app.add_typer(agent_app, name="agent")
