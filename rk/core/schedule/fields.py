"""An entry's fields, declared once: name, flag, type, values, bounds, help, default.

The command line (`rk cron add | edit | simulate`), the MCP tools (`cron_add`,
`cron_edit`) and `docs/fields.md` are made from this table, so a value one of
them offers is a value the others accept. Only the words live here; the rules
that read a value (`rk.cli.flags`, `rk.core.schedule.decoding`) name them from it.
Pure data.
"""

from __future__ import annotations

from rk.core import bounds
from rk.core.bounds import MAX_ARG, MAX_CAP, MAX_LABEL, MAX_PANE, MAX_PROMPT, MAX_WATCH_PATH
from rk.core.cost.only_if_changed import MODES
from rk.core.schedule.entry import (
    CATCH_UP_ONCE,
    DORMANT_AFTER,
    DORMANT_OFF,
    WAKE_SCOPE,
    Deliver,
    FreshMode,
    IfAbsent,
    OnTimeout,
    ScheduleKind,
    WakeEvent,
    WakeFrom,
)
from rk.core.schedule.field import EDITING as EDITING  # re-exported: the table's users' one door
from rk.core.schedule.field import Field as Field
from rk.core.schedule.field import Shape as Shape
from rk.core.schedule.field import Surface as Surface
from rk.core.schedule.field import accepted as accepted
from rk.core.schedule.field import check_text as check_text
from rk.core.schedule.retry import DEFAULT_AFTER, MAX_RETRIES

_RECURRING = (ScheduleKind.EVERY, ScheduleKind.BACKOFF, ScheduleKind.CRON, ScheduleKind.NONE)
_ONCE_OR_CRON = (ScheduleKind.CRON, ScheduleKind.AT)
_CAPS = "(rk.core.cost.caps)"

_AFTER = f"{DEFAULT_AFTER // 60}m"
_RETRY = (
    "After a failed delivery (never a skip), try again up to N times, --retry-after apart; a delivery ends the "
    "retries (edit: 0 removes them).",
    "After a failed delivery (never a skip), try again up to this many times (edit: 0 removes them).",
    f"With --retry: how long after a failed attempt the next one goes (default {_AFTER}).",
    f"With retry: the wait before each retry, e.g. 2m (default {_AFTER}).",
)

FIELDS: tuple[Field, ...] = (
    Field(
        "prompt",
        "--prompt",
        Shape.TEXT,
        "The text typed into the agent and submitted (never executed).",
        "payload",
        mcp="The text typed into the agent and submitted (never executed).",
        edit_help="The new text to type (placeholders allowed).",
        mcp_edit="The new text to type.",
        most=MAX_PROMPT,
    ),
    Field(
        "every",
        "--every",
        Shape.DURATION,
        "Fixed interval, e.g. 5m.",
        "schedule.interval (kind: every)",
        mcp="Fixed interval, e.g. 5m (at least 1m).",
        schedules=(ScheduleKind.EVERY,),
    ),
    Field(
        "idle_every",
        "--idle-every",
        Shape.DURATION,
        "After this much quiet, then every this long while quiet (flat backoff).",
        "schedule.min = schedule.max (kind: backoff)",
        mcp="After this much quiet, then every this long while quiet.",
        schedules=(ScheduleKind.BACKOFF,),
    ),
    Field(
        "backoff",
        "--backoff",
        Shape.FLAG,
        "Doubling ladder from the target's last activity.",
        "schedule (kind: backoff)",
        mcp="Doubling ladder from the target's last activity.",
        mcp_edit="Switch to the doubling ladder.",
        schedules=(ScheduleKind.BACKOFF,),
    ),
    Field(
        "min",
        "--min",
        Shape.DURATION,
        "Backoff first gap (default 60s).",
        "schedule.min",
        mcp="Backoff first gap (default 60s, at least 1m).",
        mcp_edit="Backoff first gap (at least 1m).",
        default="60s",
        schedules=(ScheduleKind.BACKOFF,),
        param="lo",
    ),
    Field(
        "max",
        "--max",
        Shape.DURATION,
        "Backoff largest gap (default 30m).",
        "schedule.max",
        mcp="Backoff largest gap (default 30m).",
        mcp_edit="Backoff largest gap.",
        default="30m",
        schedules=(ScheduleKind.BACKOFF,),
        param="hi",
    ),
    Field(
        "cron",
        "--cron",
        Shape.TEXT,
        'Five-field cron expression, e.g. "0 9 * * 1-5".',
        "schedule.expr (kind: cron)",
        mcp='Five-field cron expression, e.g. "0 9 * * 1-5".',
        schedules=(ScheduleKind.CRON,),
        most=MAX_LABEL,
    ),
    Field(
        "catch_up",
        "--catch-up",
        Shape.CHOICE,
        "'once': one late fire after a gap instead of 'missed'.",
        "schedule.catch_up",
        choices=(CATCH_UP_ONCE,),
        schedules=_ONCE_OR_CRON,
        complete=(CATCH_UP_ONCE,),
    ),
    Field(
        "tz",
        "--tz",
        Shape.TEXT,
        "IANA zone for --cron (default: the ticker's local zone).",
        "schedule.tz",
        mcp="IANA zone for cron (default: the ticker's local zone).",
        default="the ticker's local zone",
        schedules=(ScheduleKind.CRON,),
    ),
    Field(
        "at",
        "--at",
        Shape.TEXT,
        "Once, at 14:00 (the next time the clock shows it) or an ISO-8601 instant; then it retires.",
        "schedule.at (kind: at)",
        mcp="Once, at 14:00 or an ISO-8601 instant (not in the past).",
        schedules=(ScheduleKind.AT,),
    ),
    Field(
        "in",
        "--in",
        Shape.DURATION,
        "Once, this long from now (30m, 2h); then it retires.",
        "schedule.at (kind: at)",
        mcp="Once, this long from now (30m, 2h).",
        schedules=(ScheduleKind.AT,),
        param="in_",
    ),
    Field(
        "catch_up_within",
        "--catch-up-within",
        Shape.DURATION,
        "With --catch-up once: fire a missed occurrence only when at most this late, e.g. 12h.",
        "schedule.catch_up_within",
        schedules=_ONCE_OR_CRON,
    ),
    Field(
        "name",
        "--name",
        Shape.TEXT,
        "Display name (default: the prompt's first 40 characters).",
        "name",
        mcp="Display name (default: the prompt's first 40 characters).",
        default="the prompt's first 40 characters",
        most=MAX_LABEL,
    ),
    Field(
        "deliver",
        "--deliver",
        Shape.CHOICE,
        "immediate | when-idle | skip-if-busy | replace (interrupt this entry's own running turn, then send)",
        "deliver",
        mcp="immediate | when-idle | skip-if-busy | replace (as --deliver).",
        choices=tuple(Deliver),
        default=Deliver.IMMEDIATE,
        complete=tuple(Deliver),
    ),
    Field(
        "if_absent",
        "--if-absent",
        Shape.CHOICE,
        "skip | notify | respawn",
        "if_absent",
        choices=tuple(IfAbsent),
        default=IfAbsent.SKIP,
        complete=tuple(IfAbsent),
    ),
    Field(
        "respawn",
        "--respawn",
        Shape.LIST,
        "One argv element of the respawn command (repeat). {server} is replaced.",
        "respawn",
        most=MAX_ARG,
    ),
    Field("pinned", "--pinned", Shape.FLAG, "Never expire as an orphan.", "pinned", mcp="Never expire as an orphan."),
    Field(
        "any_program",
        "--any-program",
        Shape.FLAG,
        "Also type into a program rk does not know as an agent (a REPL, a TUI). Never a shell.",
        "any_program",
        edit_flag="--any-program/--agents-only",
        edit_help="Allow typing into a program that is not a known agent, or not.",
    ),
    Field(
        "role",
        "--role",
        Shape.TEXT,
        "Target the window carrying this role.",
        "target.role (kind: role)",
        mcp="The window carrying this role.",
        most=MAX_LABEL,
    ),
    Field(
        "session",
        "--session",
        Shape.TEXT,
        "Target the pane carrying this agent session.",
        "target.session (kind: session)",
        mcp="The pane carrying this agent session.",
        most=MAX_LABEL,
    ),
    Field(
        "pane",
        "--pane",
        Shape.TEXT,
        "Target this pane id (%N).",
        "target.pane (kind: pane)",
        mcp="A pane id like %3.",
        most=MAX_PANE,
    ),
    Field(
        "follow_session",
        "--follow-session",
        Shape.FLAG,
        "Target the agent session running in this pane now, wherever it runs later (claude --resume"
        " in another pane); it never fires once that session ends. Without a target flag the entry"
        " follows this pane: whatever agent runs there.",
        "target.session (kind: session)",
        mcp="Follow your own agent session (wherever it is resumed) instead of your pane; it never fires"
        " once that session ends.",
    ),
    Field(
        "wake_on",
        "--wake-on",
        Shape.CHOICE,
        "agent-state-change: also fire when another pane goes idle/waiting or vanishes; "
        "limit-reset: fire when this target's usage limit has reset and it is at rest; "
        "signal:NAME: when `rk signal NAME` is sent; file:PATH: when the file appears or changes. "
        "Without a schedule flag the entry fires on the event only (edit: none/off removes it).",
        "wake_on.event",
        mcp="agent-state-change | limit-reset: fire on this event too (as --wake-on); also signal:NAME (when "
        "`rk signal NAME` is sent) or file:PATH (an absolute path: when the file appears or changes).",
        mcp_edit="agent-state-change | limit-reset | off; also signal:NAME or file:PATH.",
        choices=tuple(WakeEvent),
        most=MAX_WATCH_PATH + len("file:"),  # file:PATH (rk.core.schedule.world)
        off=("none", "off"),
        complete=(*WakeEvent, "none"),
    ),
    Field(
        "wake_scope",
        "--wake-scope",
        Shape.TEXT,
        "server (default: this server's panes), or another host's (rk host add): %N@HOST for one pane, "
        "role:NAME@HOST for the panes of the windows carrying that role there, @HOST for all, /SERVER after "
        "any of them for a tmux server there other than default.",
        "wake_on.scope",
        most=MAX_LABEL,
        default=WAKE_SCOPE,
    ),
    Field(
        "wake_from",
        "--wake-from",
        Shape.CHOICE,
        "With --wake-on agent-state-change: human (default) does not wake when a pane goes idle at the end of "
        "a turn one of rk's fires started (the answer to a heartbeat); any wakes for every turn. Waiting, "
        "a limit and a vanished pane always wake.",
        "wake_on.from",
        mcp="human (default) | any: with wake_on agent-state-change, whether the end of a turn rk's own fire "
        "started wakes too (any) or not (human); waiting and vanished panes always wake.",
        choices=tuple(WakeFrom),
        default=WakeFrom.HUMAN,
        complete=tuple(WakeFrom),
    ),
    Field(
        "wake_debounce",
        "--wake-debounce",
        Shape.DURATION,
        "Hold wake edges this long after the entry's last line (default 60s).",
        "wake_on.debounce",
        default="60s",
    ),
    Field(
        "active_hours",
        "--active-hours",
        Shape.TEXT,
        'Times of day it may fire, in its zone, e.g. "08:00-19:00" or "22:00-02:00,09:00-12:00"; '
        "a fire due outside is logged skipped-quiet (edit: none/off removes it).",
        "active_hours",
        mcp="Only in these hours, e.g. 09:00-18:00 (as --active-hours).",
        mcp_edit="e.g. 09:00-18:00, or off.",
        off=("none", "off"),
        default="any time",
        most=MAX_LABEL,
    ),
    Field(
        "only_if_changed",
        "--only-if-changed",
        Shape.CHOICE,
        "Skip a fire (skipped-unchanged) when, since its last prompt was answered, the target (pane, the "
        "default) or the panes its wake watches (scope) had no new turn and their screens changed only in "
        "spinner and clock (edit: off clears it).",
        "only_if_changed",
        mcp="pane | scope: skip a fire (skipped-unchanged) when, since its last prompt was answered, the "
        "target (pane) or the panes its wake watches (scope) had no new turn and no screen change beyond spinner "
        "and clock (as --only-if-changed; edit: off clears it).",
        choices=MODES,
        off=("off", "none"),
        complete=(*MODES, "off"),
    ),
    Field(
        "budget",
        "--budget",
        Shape.TEXT,
        "Tokens per local day, e.g. 2M/day: once the agent's records show them spent, its fires "
        "are skipped-budget until midnight (edit: off removes it).",
        "budget",
        mcp="Tokens per local day, e.g. 2M/day: then its fires are skipped until midnight (as --budget).",
        mcp_edit="Tokens per local day, e.g. 2M/day, or off.",
        off=("none", "off"),
    ),
    Field(
        "max_per_day",
        "--max-per-day",
        Shape.COUNT,
        "At most N deliveries a local day (in its --tz, else local time); past it a fire is logged "
        "skipped-cap once a day (edit: 0 removes it).",
        "max_per_day",
        mcp="At most this many deliveries a local day (in tz, else local time).",
        mcp_edit="Deliveries a local day at most; 0 removes.",
        low=1,
        high=MAX_CAP,
        off=("0",),
        default=f"no cap {_CAPS}",
    ),
    Field(
        "max_total",
        "--max-total",
        Shape.COUNT,
        "After its N-th delivery the entry retires (logged retired: max-total; edit: 0 removes it).",
        "max_total",
        mcp="After this many deliveries the entry retires itself.",
        mcp_edit="Deliveries in all, then it retires; 0 removes.",
        low=1,
        high=MAX_CAP,
        off=("0",),
        default=f"no cap {_CAPS}",
    ),
    Field(
        "turn_timeout",
        "--turn-timeout",
        Shape.DURATION,
        "When a turn this entry's delivery started is still busy this long after it (20m), log turn-timeout "
        "and notify (edit: 0/off removes it).",
        "turn_timeout",
        mcp="Log turn-timeout and notify when the turn it started runs this long, e.g. 20m.",
        mcp_edit="e.g. 20m, or off.",
        off=("0", "off", "none"),
        schedules=_RECURRING,
    ),
    Field(
        "on_timeout",
        "--on-timeout",
        Shape.CHOICE,
        "notify (default) | interrupt: also press the agent's interrupt key (Esc) once, never over a "
        "draft, a dialog or copy-mode.",
        "on_timeout",
        mcp="notify (default) | interrupt: also press the agent's interrupt key once.",
        choices=tuple(OnTimeout),
        default=OnTimeout.NOTIFY,
        complete=tuple(OnTimeout),
    ),
    # -- retries (rk.core.schedule.retry) --
    Field("retry", "--retry", Shape.COUNT, _RETRY[0], "retry", mcp=_RETRY[1], low=1, high=MAX_RETRIES, off=("0",)),
    Field("retry_after", "--retry-after", Shape.DURATION, _RETRY[2], "retry_after", mcp=_RETRY[3], default=_AFTER),
    # -- a fresh context per fire (rk.core.schedule.fresh)
    Field(
        "fresh",
        "--fresh",
        Shape.CHOICE,
        "Before each fire's prompt, send the agent CLI's own command for a fresh context, clear (Claude /clear, "
        "Codex /new) or compact (/compact; Gemini /compress), and wait until it is done; withheld (the prompt "
        "still goes) when a human typed in the pane since the last fire, unless clear-always or compact-always. "
        "Refused for an agent without one (edit: off removes it).",
        "fresh",
        mcp="clear | compact | clear-always | compact-always: the agent's /clear or /compact before each "
        "prompt, withheld after a human's turn unless -always (as --fresh).",
        mcp_edit="clear | compact | clear-always | compact-always, or off.",
        choices=tuple(FreshMode),
        off=("none", "off"),
        complete=(*FreshMode, "off"),
    ),
    Field(  # dormancy (rk.core.schedule.dormant)
        "dormant_after",
        "--dormant-after",
        Shape.TEXT,
        f"Go dormant after N deliveries in a row that started no turn (default {DORMANT_AFTER}): logged dormant, "
        "told once, it types no more until its pane shows life (a turn, a new agent, a state change) or rk cron "
        f"wake; {DORMANT_OFF}: never. Only on a pane with an agent state (hooks or a read screen).",
        "dormant_after",
        mcp=f"After N unanswered deliveries in a row it stops typing until its pane shows life ({DORMANT_OFF}: never).",
        default=str(DORMANT_AFTER),
        complete=(DORMANT_OFF,),
    ),
)

BY_KEY: dict[str, Field] = {f.key: f for f in FIELDS}

#: Each surface's fields, in the order it lists them (its `--help`, its input schema).
SURFACES: dict[Surface, tuple[str, ...]] = {
    Surface.ADD: (
        *("every", "idle_every", "backoff", "min", "max", "cron", "catch_up", "tz", "name", "deliver"),
        *("if_absent", "respawn", "pinned", "any_program", "role", "session", "pane", "follow_session"),
        *("wake_on", "wake_scope", "wake_from"),
        *("wake_debounce", "catch_up_within", "active_hours", "only_if_changed", "budget", "at", "in"),
        *("max_per_day", "max_total", "turn_timeout", "on_timeout", "retry", "retry_after", "fresh", "dormant_after"),
    ),
    Surface.EDIT: (
        *("every", "idle_every", "backoff", "min", "max", "cron", "catch_up", "tz", "name", "deliver"),
        *("if_absent", "respawn", "wake_on", "wake_scope", "wake_from", "wake_debounce", "any_program"),
        "catch_up_within",
        *("active_hours", "only_if_changed", "max_per_day", "max_total", "budget", "prompt", "turn_timeout"),
        *("on_timeout", "retry", "retry_after", "fresh", "dormant_after"),
    ),
    Surface.SIMULATE: (
        *("every", "idle_every", "backoff", "min", "max", "cron", "catch_up", "tz", "deliver", "wake_on"),
        *(
            "wake_from",
            "wake_debounce",
            "catch_up_within",
            "active_hours",
            "only_if_changed",
            "max_per_day",
            "max_total",
            "dormant_after",
        ),
    ),
    Surface.CRON_ADD: (
        *("prompt", "every", "idle_every", "backoff", "min", "max", "cron", "tz", "at", "in", "name"),
        *("deliver", "wake_on", "wake_from", "active_hours", "only_if_changed", "max_per_day", "max_total"),
        *("turn_timeout", "on_timeout", "budget", "pinned", "role", "session", "pane", "follow_session"),
        *("retry", "retry_after", "fresh", "dormant_after"),
    ),
    Surface.CRON_EDIT: (
        *("every", "idle_every", "backoff", "min", "max", "cron", "tz", "name", "prompt", "deliver", "wake_on"),
        *(
            "wake_from",
            "active_hours",
            "only_if_changed",
            "max_per_day",
            "max_total",
            "turn_timeout",
            "on_timeout",
            "budget",
            "fresh",
            "dormant_after",
        ),
        *("retry", "retry_after"),
    ),
}


#: The field a surface takes as its positional argument (add's prompt).
POSITIONAL: dict[Surface, str] = {Surface.ADD: "prompt"}


def on(surface: Surface) -> tuple[Field, ...]:
    """The fields `surface` offers, in its order."""
    return tuple(BY_KEY[key] for key in SURFACES[surface])


# -- the reference --------------------------------------------------------------------


def _values(field: Field) -> str:
    if field.choices:
        return " \\| ".join(f"`{c}`" for c in field.choices)
    if field.shape == Shape.COUNT:
        return f"{field.low}…{field.high}"
    return field.shape.value


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def reference() -> str:
    """`docs/fields.md`: the table of an entry's fields, made from `FIELDS`."""
    lines = [
        "# An entry's fields",
        "",
        "Generated from `rk/core/schedule/fields.py` by `rk.core.schedule.fields.reference()`;",
        "do not edit by hand (`tests/test_fields.py` checks it is up to date).",
        "",
        "Text values have at most the characters `at most` says (a list: each element, and at most "
        f"{bounds.MAX_ARGS} of them); a longer one is refused, on the command line, over MCP and in the file.",
        "",
        "| field | flag | entries file | values | at most | default | off (edit) | schedules | offered by | help |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for f in FIELDS:
        surfaces = ", ".join(s.value for s in Surface if f.key in SURFACES[s] or POSITIONAL.get(s) == f.key)
        off = ", ".join(f"`{w}`" for w in f.off)
        schedules = ", ".join(k.value for k in f.schedules) or "any"
        most = f"{f.most:,}" if f.bounded else ""
        head = (f"`{f.key}`", f"`{f.flag}`", f"`{f.yaml}`", _values(f), most)
        cells = (*head, f.default, off, schedules, surfaces, f.help)
        lines.append("| " + " | ".join(_cell(c) if i > 4 else c for i, c in enumerate(cells)) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # python -m rk.core.schedule.fields > docs/fields.md
    import sys

    sys.stdout.write(reference())
