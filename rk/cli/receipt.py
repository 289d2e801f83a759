"""What add and edit share besides their flags: the target a bare add takes, the
checks said as usage errors, the warnings said after a change, and the receipt."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from rk.cli.environment import CliError, Environment, ErrorCode, ExitStatus, moment, usage
from rk.core.durations import format_duration
from rk.core.pane.identity import ServerIdentity
from rk.core.pane.payload import hidden
from rk.core.schedule.decoding import catch_up_window_problem
from rk.core.schedule.due import entry_zone
from rk.core.schedule.entry import Backoff, Entry, Every, Schedule, Target, TargetKind
from rk.core.schedule.placeholders import PlaceholderError
from rk.core.schedule.placeholders import check as check_placeholders
from rk.core.suggest import closest, known_list
from rk.tmux.server import TmuxError

if TYPE_CHECKING:
    from rk.core.pane.facts import PaneFact


def check_catch_up_window(entry: Entry) -> None:
    """A catch-up window within the entry's grace (when-idle: its 2-hour hold) is a usage error."""
    problem = catch_up_window_problem(entry.schedule, entry.policy)
    if problem:
        raise usage(f"--catch-up-within {problem}")


def check_poll(env: Environment, schedule: Schedule | None, force: bool, idle_every: bool = False) -> None:
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
    from rk.core.pane.facts import SHELL_IN_PANE, resolve_target
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
            facts = server.pane_facts()
            target = resolve_target(entry.target, facts, entry.any_program)
        except TmuxError:
            facts, target = [], None
        if target is not None and target.refused == SHELL_IN_PANE:  # the Quick start's add, before the agent
            pane = target.why.partition(":")[0]
            out.append(
                f"pane {pane} runs a shell now: the entry fires once an agent runs in it (start the agent there)"
            )
        elif target is not None and not target.resolved and entry.target.kind == TargetKind.SESSION:
            out.append(
                f"{target.why}: the entry fires only where that session is resumed; to follow a pane instead,"
                " add it in that pane without a target flag, or with --pane %N"
            )
        elif target is not None and not target.resolved:
            out.append(
                f"{entry.target.summary} does not exist now ({target.why}{roles_hint(entry.target, facts)});"
                " the entry skips until it does"
            )
        elif target is not None and needs_state(entry) and target.epoch <= 0:
            out.append(
                f"pane {target.pane} never reported an agent state: {entry.schedule.summary} will not fire until it"
                " does (rk agent setup, then restart the agent)"
            )
    rec = ticker.read_pid(env.state_dir())
    if rec is None or not rec.alive():
        out.append("no ticker is running: nothing fires until one does (rk cron ticker install, or ticker start)")
    return out


def absent_role(env: Environment, target: Target) -> str:
    """Why a role target names no window on -L's running server, with the roles there
    are; "" when a window carries it, the target is no role, or the server does not run
    (the delivery says that itself)."""
    from rk.core.pane.facts import resolve_target
    from rk.tmux.server import Server

    if target.kind != TargetKind.ROLE:
        return ""
    server = Server(name=env.server, env=env.environ)
    try:
        facts = server.pane_facts() if server.is_live() else []
    except TmuxError:
        return ""
    found = resolve_target(target, facts, any_program=True)
    if not facts or found.resolved or found.refused:
        return ""
    return f"{found.why}{roles_hint(target, facts)}"


def roles_hint(target: Target, facts: Sequence[PaneFact]) -> str:
    """For a role no window carries: the closest role there is and the roles there are
    (`; did you mean operator? roles: operator, worker`); "" for any other target."""
    if target.kind != TargetKind.ROLE:
        return ""
    roles = {fact.role for fact in facts if fact.role and not fact.dead}
    if target.value in roles:
        return ""
    close = closest(target.value, roles)
    return f"; roles here: {known_list(roles, none='none (rk role NAME sets one)')}" + (
        f"; did you mean {close}?" if close else ""
    )


def check_payload(payload: str) -> None:
    """A usage error (exit 2) for a character that hides text (`hidden`), an unknown
    placeholder or a lone brace."""
    check_visible(payload)
    try:
        check_placeholders(payload)
    except PlaceholderError as exc:
        raise usage(str(exc)) from None


def check_visible(prompt: str) -> None:
    """A usage error (exit 2) for a prompt that would read otherwise than it is typed."""
    if why := hidden(prompt):
        raise usage(why)


def default_target(env: Environment, pane: str) -> tuple[Target, str]:
    """role of the caller's window → its pane. Returns (target, the pane's session ref).

    Never the pane's agent session: a session ends when its agent quits, and the
    agent the user starts again (as the Quick start says, to load the hooks) is a
    new session, so an entry made on the session would never fire. The pane is
    resolved at each fire to whatever agent runs there; a session target is made
    only when asked for (`--session`, `--follow-session`)."""
    server = env.caller_server()
    role = session = ""
    try:
        role = server.display(pane, "#{@rk_win_role}").strip()
    except TmuxError as exc:
        env.err(f"rk: note: could not read the window role ({exc}); targeting the pane")
    try:
        session = server.display(pane, "#{@rk_pane_agent_session}").strip()
    except TmuxError:
        session = ""
    if role and not any(c.isspace() for c in role):
        return Target(TargetKind.ROLE, role), session
    return Target(TargetKind.PANE, pane), session


def live_session(env: Environment, pane: str) -> Target:
    """`--follow-session`: the agent session running in the caller's `pane` now (an
    operational error when none does: a session left behind by an agent that quit
    would name a target that never comes back)."""
    from rk.core.pane.facts import PaneKind, short_session

    server = env.caller_server()
    try:
        facts = server.pane_facts() if server.is_live() else []
    except TmuxError as exc:
        raise CliError(f"--follow-session: cannot read pane {pane} ({exc})") from None
    fact = next((f for f in facts if f.pane_id == pane and not f.dead), None)
    if fact is not None and fact.kind == PaneKind.AGENT and fact.session_ref:
        return Target(TargetKind.SESSION, fact.session_ref)
    stale = ""
    try:
        stale = server.display(pane, "#{@rk_pane_agent_session}").strip()
    except TmuxError:
        pass
    was = f" (its last session, {short_session(stale)}, ended)" if stale else ""
    raise CliError(
        f"--follow-session: no agent session runs in pane {pane} now{was}; start the agent and add from its pane,"
        " or leave --follow-session out: the entry then follows the pane",
        ExitStatus.OPERATIONAL,
        ErrorCode.NOT_FOUND,
    )


def with_server(env: Environment, target: Target) -> Target:
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


def receipt(env: Environment, entry: Entry, said: str) -> tuple[dict[str, object], list[str]]:
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
    if entry.parent:  # made in a turn a fire of `parent` started (`rk.cli.chains`)
        rec["parent"] = entry.parent
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
        *([f"parent: {entry.parent} (its fire started the turn that made this entry)"] if entry.parent else []),
    ]
