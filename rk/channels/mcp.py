"""`rk mcp`: rk's whole job as MCP tools, over stdio, for an operator agent.

Each tool turns its typed arguments into the command line's argv (the same
names and meanings as the flags) and runs the command line in this process
(`rk.cli.root.main` with `--json`), so a result is exactly the CLI's `--json`
document and an error is the CLI's message, with no second copy of any rule.
In-process is safe: `main` builds a fresh `Environment` (environ, streams) and
click command tree per call and keeps no module state; the SDK runs each sync
tool in a worker thread (an `agent_await` blocks only its own), and while it
serves, fd 1 goes to stderr, so a stray print never reaches the wire.

Before a change, the guardrails (rk.core.channels.mcpguard) are asked; every change and
every refusal is appended to `<state dir>/mcp.log`, one JSON line each.

The `mcp` SDK is imported here only; nothing on the hook path or a plain CLI
start imports this module.
"""

from __future__ import annotations

import functools
import io
import json
import os
import re
import time
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from rk.core.bounds import MAX_CAP
from rk.core.channels import mcpguard
from rk.core.channels.mcpguard import Caller, Limits, Refusal

#: `pane_read`: the most lines one call returns.
MAX_READ_LINES = 200
#: `events`: the most events one call returns (the newest are kept).
MAX_EVENTS = 500
_CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b.|[\x00-\x08\x0b-\x1f\x7f]")

INSTRUCTIONS = (
    "rk schedules prompts into the tmux panes where AI coding agents run. "
    "cron_add schedules a prompt (into this pane by default); cron_list shows the entries; "
    "agent_list shows every pane's agent state; agent_await blocks until a pane is idle, waiting, "
    "limited, failed, interrupted or gone; pane_read shows a pane's screen; send types a prompt now. "
    "You may change or remove only entries you created, unless your window has the role operator."
)


#: `rk.cli.root.main`'s shape: (argv, environ=, stdout=, stderr=) -> exit status.
CliMain = Callable[..., int]


class Runner:
    """Runs the command line in-process for one caller, with the guardrails."""

    def __init__(self, cli: CliMain, environ: Mapping[str, str]) -> None:
        self.cli = cli
        self.environ = dict(environ)
        self.environ["RK_CREATED_VIA"] = mcpguard.VIA  # the entries cron_add creates say so
        self.pane = self.environ.get("TMUX_PANE", "")

    # -- the command line ------------------------------------------------------

    def call(self, argv: list[str], positional: list[str] | None = None) -> tuple[int, dict[str, Any]]:
        """`rk ARGV --json -- POSITIONAL`: the exit status and the JSON document."""
        args = [*argv, "--json", *(["--", *positional] if positional else [])]
        out, err = io.StringIO(), io.StringIO()
        code = self.cli(args, environ=self.environ, stdout=out, stderr=err)
        lines = [line for line in out.getvalue().splitlines() if line.strip()]
        if len(lines) != 1:
            message = err.getvalue().strip().splitlines()[-1:] or [f"rk {' '.join(argv)}: no JSON document"]
            raise ToolError(message[0].removeprefix("rk: "))
        return code, json.loads(lines[0])

    def run(self, argv: list[str], positional: list[str] | None = None, *, answer_on_1: bool = False) -> str:
        """The CLI's document as the tool's text; the CLI's message as a tool error.

        A command that prints its report and exits 1 (a send held or failed) is an
        error carrying that report, unless exit 1 is an answer (an await's timeout)."""
        code, doc = self.call(argv, positional)
        if not doc.get("ok"):
            raise ToolError(doc.get("error", {}).get("message") or "error")
        if code and not (answer_on_1 and code == 1):
            raise ToolError(json.dumps(doc, ensure_ascii=False))
        return json.dumps(doc, ensure_ascii=False)

    def mutate(self, tool: str, argv: list[str], positional: list[str] | None = None, check=None) -> str:
        """A change: guardrails first (`check` raises `Refusal`), then the CLI; both logged."""
        try:
            if check is not None:
                check()
            text = self.run(argv, positional)
        except Refusal as exc:
            self.audit(tool, argv, positional, "refused", str(exc))
            raise ToolError(str(exc)) from None
        except ToolError as exc:
            self.audit(tool, argv, positional, "failed", str(exc))
            raise
        self.audit(tool, argv, positional, "ok", "")
        return text

    # -- what the guardrails need ------------------------------------------------

    def settings(self):
        from rk.store.config import ConfigError, load_settings

        try:
            return load_settings(self.environ)
        except ConfigError as exc:
            raise ToolError(str(exc)) from None

    def limits(self) -> Limits:
        s = self.settings()
        return Limits(max_pending=s.mcp_max_pending, any_owner=bool(s.mcp_any_owner))

    def tmux(self):
        from rk.tmux.server import Server, socket_from_tmux_env

        socket = socket_from_tmux_env(self.environ.get("TMUX", ""))
        return Server(socket_path=socket, env=self.environ) if socket else Server(name="default", env=self.environ)

    def caller(self) -> Caller:
        """The caller's pane, and whether its window has the operator role now (no when unsure)."""
        from rk.core.environ import ROLE_OPTION
        from rk.tmux.server import TmuxError

        if not self.pane:
            return Caller("")
        try:
            role = self.tmux().display(self.pane, "#{" + ROLE_OPTION + "}").strip()
        except TmuxError:
            role = ""
        return Caller(self.pane, operator=role == mcpguard.OPERATOR_ROLE)

    def created_by(self, entry_id: str) -> dict[str, object]:
        _, doc = self.call(["cron", "show"], [entry_id])
        if not doc.get("ok"):
            raise ToolError(doc.get("error", {}).get("message") or "error")
        return doc["result"].get("created_by") or {}

    def pending(self, caller: Caller) -> int:
        _, doc = self.call(["cron", "list"])
        if not doc.get("ok"):
            raise ToolError(doc.get("error", {}).get("message") or "error")
        return sum(1 for rec in doc["result"] if mcpguard.owns(caller, rec.get("created_by") or {}))

    def check_owner(self, entry_id: str) -> None:
        mcpguard.check_change(self.caller(), entry_id, self.created_by(entry_id), self.limits())

    def audit(self, tool: str, argv: list[str], positional: list[str] | None, outcome: str, message: str) -> None:
        """One line per change or refusal in `<state dir>/mcp.log` (best effort: a full disk
        must not turn a change that happened into an error)."""
        from rk.store.config import ensure_private_dir, state_dir

        record = {
            "ts": int(time.time()),
            "pane": self.pane,
            "tool": tool,
            "argv": argv + (["--", *positional] if positional else []),
            "outcome": outcome,
        }
        if message:
            record["message"] = message
        try:
            directory = ensure_private_dir(state_dir(self.environ))
            fd = os.open(directory / "mcp.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        except Exception:
            pass


# -- argv from typed inputs -------------------------------------------------------


def _schedule_flags(every, idle_every, backoff, min, max, cron, tz) -> list[tuple[str, object]]:
    """The schedule's flags, as cron_add and cron_edit both take them."""
    return [
        ("--every", every),
        ("--idle-every", idle_every),
        ("--backoff", backoff),
        ("--min", min),
        ("--max", max),
        ("--cron", cron),
        ("--tz", tz),
    ]


def _check_intervals(limits, **given: str | None) -> None:
    """The MCP floor on how often a schedule repeats, for each interval given."""
    for flag, text in given.items():
        seconds = _seconds(text)
        if seconds is not None:
            mcpguard.check_interval(flag, seconds, limits)


def _flags(pairs: list[tuple[str, object]]) -> list[str]:
    """`--flag value` for each given value; `--flag` for True; repeated for a list."""
    out: list[str] = []
    for flag, value in pairs:
        if value is None or value is False:
            continue
        if value is True:
            out.append(flag)
        elif isinstance(value, list):
            for item in value:
                out += [flag, str(item)]
        else:
            out += [flag, str(value)]
    return out


def _seconds(text: str | None) -> int | None:
    """A duration flag's seconds; None when absent or malformed (the CLI then says why, in its words)."""
    if text is None:
        return None
    from rk.core.durations import parse_duration

    try:
        return parse_duration(text)
    except ValueError:
        return None


Id = Annotated[str, Field(description="The entry id (as cron_list shows it).")]
Pane = Annotated[str | None, Field(description="A pane id like %3.")]
Role = Annotated[str | None, Field(description="The window carrying this role.")]
Session = Annotated[str | None, Field(description="The pane carrying this agent session.")]
Prompt = Annotated[str, Field(description="The text typed into the agent and submitted (never executed).")]
Every = Annotated[str | None, Field(description="Fixed interval, e.g. 5m (at least 1m).")]
IdleEvery = Annotated[str | None, Field(description="After this much quiet, then every this long while quiet.")]
Cron = Annotated[str | None, Field(description='Five-field cron expression, e.g. "0 9 * * 1-5".')]
Tz = Annotated[str | None, Field(description="IANA zone for cron (default: the ticker's local zone).")]
At = Annotated[str | None, Field(description="Once, at 14:00 or an ISO-8601 instant (not in the past).")]
In = Annotated[str | None, Field(description="Once, this long from now (30m, 2h).")]
Name = Annotated[str | None, Field(description="Display name (default: the prompt's first 40 characters).")]
Deliver = Annotated[str | None, Field(description="immediate | when-idle | queue (as --deliver).")]
WakeOn = Annotated[str | None, Field(description="Fire on this event too: agent-state-change (as --wake-on).")]
ActiveHours = Annotated[str | None, Field(description="Only in these hours, e.g. 09:00-18:00 (as --active-hours).")]
Budget = Annotated[
    str | None,
    Field(description="Tokens per local day, e.g. 2M/day: then its fires are skipped until midnight (as --budget)."),
]
Duration = Annotated[str | None, Field(description="A duration, e.g. 30m or 2h.")]
OnlyIfChanged = Annotated[
    str | None,
    Field(
        description="pane | scope: skip a fire (skipped-unchanged) when, since its last prompt was answered, the "
        "target (pane) or the panes its wake watches (scope) had no new turn and no screen change beyond spinner "
        "and clock (as --only-if-changed; edit: off clears it)."
    ),
]
# The caps (as --max-per-day / --max-total; rk.core.cost.caps); on edit 0 removes one.
MaxPerDay = Annotated[
    int | None,
    Field(ge=1, le=MAX_CAP, description="At most this many deliveries a local day (in tz, else local time)."),
]
MaxTotal = Annotated[
    int | None, Field(ge=1, le=MAX_CAP, description="After this many deliveries the entry retires itself.")
]
MaxPerDayEdit = Annotated[int | None, Field(ge=0, le=MAX_CAP, description="Deliveries a local day at most; 0 removes.")]
MaxTotalEdit = Annotated[
    int | None, Field(ge=0, le=MAX_CAP, description="Deliveries in all, then it retires; 0 removes.")
]
TurnTimeout = Annotated[
    str | None, Field(description="Log turn-timeout and notify when the turn it started runs this long, e.g. 20m.")
]
OnTimeout = Annotated[
    str | None, Field(description="notify (default) | interrupt: also press the agent's interrupt key once.")
]


#: Flags that are Python keywords: the input is named as the flag, the parameter with `_`.
_KEYWORDS = {"in": "in_", "for": "for_"}


def _aliased(fn):
    """`fn` called with the inputs' names (`in`, `for`) mapped to its parameters' (`in_`, `for_`);
    its signature (and so the schema) stays `fn`'s."""

    @functools.wraps(fn)
    def call(**arguments):
        try:
            return fn(**{_KEYWORDS.get(k, k): v for k, v in arguments.items()})
        except ToolError as exc:  # the message as is (the SDK would prefix "Error executing tool …")
            return CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True)

    return call


def build(cli: CliMain, environ: Mapping[str, str] | None = None) -> MCPServer:
    """The server with every tool, for the caller whose environment this is; `cli` is
    `rk.cli.root.main`, handed in by the command (this module never imports the CLI
    that registers it)."""
    runner = Runner(cli, os.environ if environ is None else environ)
    server: MCPServer = MCPServer("rk", instructions=INSTRUCTIONS)

    def tool(fn):
        server.add_tool(_aliased(fn), name=fn.__name__, description=(fn.__doc__ or "").strip(), structured_output=False)
        return fn

    # -- schedules ------------------------------------------------------------

    @tool
    def cron_add(
        prompt: Prompt,
        every: Every = None,
        idle_every: IdleEvery = None,
        backoff: Annotated[bool, Field(description="Doubling ladder from the target's last activity.")] = False,
        min: Annotated[str | None, Field(description="Backoff first gap (default 60s, at least 1m).")] = None,
        max: Annotated[str | None, Field(description="Backoff largest gap (default 30m).")] = None,
        cron: Cron = None,
        tz: Tz = None,
        at: At = None,
        in_: Annotated[str | None, Field(alias="in", description="Once, this long from now (30m, 2h).")] = None,
        name: Name = None,
        deliver: Deliver = None,
        wake_on: WakeOn = None,
        active_hours: ActiveHours = None,
        only_if_changed: OnlyIfChanged = None,
        max_per_day: MaxPerDay = None,
        max_total: MaxTotal = None,
        turn_timeout: TurnTimeout = None,
        on_timeout: OnTimeout = None,
        budget: Budget = None,
        pinned: Annotated[bool, Field(description="Never expire as an orphan.")] = False,
        role: Role = None,
        session: Session = None,
        pane: Pane = None,
    ) -> str:
        """Schedule a prompt (rk cron add): into this pane unless role, session or pane says otherwise.
        Give one of every, idle_every, backoff, cron, at, in (or wake_on)."""
        argv = ["cron", "add"] + _flags(
            [
                *_schedule_flags(every, idle_every, backoff, min, max, cron, tz),
                ("--at", at),
                ("--in", in_),
                ("--name", name),
                ("--deliver", deliver),
                ("--wake-on", wake_on),
                ("--active-hours", active_hours),
                ("--only-if-changed", only_if_changed),
                ("--max-per-day", max_per_day),
                ("--max-total", max_total),
                ("--turn-timeout", turn_timeout),
                ("--on-timeout", on_timeout),
                ("--budget", budget),
                ("--pinned", pinned),
                ("--role", role),
                ("--session", session),
                ("--pane", pane),
            ]
        )

        def check() -> None:
            limits = runner.limits()
            mcpguard.check_payload("prompt", prompt, limits)
            _check_intervals(limits, every=every, idle_every=idle_every, min=min)
            caller = runner.caller()
            mcpguard.check_room(caller, runner.pending(caller), limits)

        return runner.mutate("cron_add", argv, [prompt], check)

    @tool
    def cron_edit(
        id: Id,
        every: Every = None,
        idle_every: IdleEvery = None,
        backoff: Annotated[bool, Field(description="Switch to the doubling ladder.")] = False,
        min: Annotated[str | None, Field(description="Backoff first gap (at least 1m).")] = None,
        max: Annotated[str | None, Field(description="Backoff largest gap.")] = None,
        cron: Cron = None,
        tz: Tz = None,
        name: Name = None,
        prompt: Annotated[str | None, Field(description="The new text to type.")] = None,
        deliver: Deliver = None,
        wake_on: Annotated[str | None, Field(description="agent-state-change, or off.")] = None,
        active_hours: Annotated[str | None, Field(description="e.g. 09:00-18:00, or off.")] = None,
        only_if_changed: OnlyIfChanged = None,
        max_per_day: MaxPerDayEdit = None,
        max_total: MaxTotalEdit = None,
        turn_timeout: Annotated[str | None, Field(description="e.g. 20m, or off.")] = None,
        on_timeout: OnTimeout = None,
        budget: Annotated[str | None, Field(description="Tokens per local day, e.g. 2M/day, or off.")] = None,
    ) -> str:
        """Change fields of an entry you created (rk cron edit), keeping its id and history."""
        argv = ["cron", "edit"] + _flags(
            [
                *_schedule_flags(every, idle_every, backoff, min, max, cron, tz),
                ("--name", name),
                ("--prompt", prompt),
                ("--deliver", deliver),
                ("--wake-on", wake_on),
                ("--active-hours", active_hours),
                ("--only-if-changed", only_if_changed),
                ("--max-per-day", max_per_day),
                ("--max-total", max_total),
                ("--turn-timeout", turn_timeout),
                ("--on-timeout", on_timeout),
                ("--budget", budget),
            ]
        )

        def check() -> None:
            limits = runner.limits()
            if prompt is not None:
                mcpguard.check_payload("prompt", prompt, limits)
            _check_intervals(limits, every=every, idle_every=idle_every, min=min)
            runner.check_owner(id)

        return runner.mutate("cron_edit", argv, [id], check)

    @tool
    def cron_rm(id: Id) -> str:
        """Remove an entry you created (rk cron rm); its log lines stay."""
        return runner.mutate("cron_rm", ["cron", "rm"], [id], lambda: runner.check_owner(id))

    @tool
    def cron_mute(
        id: Id,
        for_: Annotated[str | None, Field(alias="for", description="Mute for this long (a lease), e.g. 30m.")] = None,
        off: Annotated[bool, Field(description="Unmute.")] = False,
    ) -> str:
        """Mute an entry you created (rk cron mute): for good, for a while, or off."""
        argv = ["cron", "mute"] + _flags([("--for", for_), ("--off", off)])
        return runner.mutate("cron_mute", argv, [id], lambda: runner.check_owner(id))

    @tool
    def cron_pin(id: Id, off: Annotated[bool, Field(description="Unpin.")] = False) -> str:
        """Pin an entry you created so it never expires as an orphan (rk cron pin), or off."""
        argv = ["cron", "pin"] + _flags([("--off", off)])
        return runner.mutate("cron_pin", argv, [id], lambda: runner.check_owner(id))

    @tool
    def cron_list() -> str:
        """Every entry of this tmux server by its next fire (rk cron list), with created_by."""
        return runner.run(["cron", "list"])

    @tool
    def cron_show(id: Id) -> str:
        """One entry in full (rk cron show)."""
        return runner.run(["cron", "show"], [id])

    @tool
    def cron_next(id: Id, n: Annotated[int, Field(ge=1, le=100, description="How many fire times.")] = 5) -> str:
        """The next deliveries of an entry, as the ticker would make them (rk cron next)."""
        return runner.run(["cron", "next", "-n", str(n)], [id])

    @tool
    def cron_log(
        id: Annotated[str | None, Field(description="Only this entry's lines.")] = None,
        n: Annotated[int, Field(ge=1, le=500, description="How many of the newest lines.")] = 20,
        since: Annotated[str | None, Field(description="Only lines since then: 2h, 7d, or a time.")] = None,
        outcome: Annotated[str | None, Field(description="Only outcomes starting so: delivered, skipped…")] = None,
        gaps: Annotated[bool, Field(description="A cron entry's occurrences with no delivery, and why.")] = False,
    ) -> str:
        """The delivery log, oldest first (rk cron log), or a cron entry's gaps."""
        argv = ["cron", "log"] + _flags([("--since", since), ("--outcome", outcome), ("--gaps", gaps)])
        if not gaps:
            argv += ["-n", str(n)]
        return runner.run(argv, [id] if id else None)

    @tool
    def cron_pause(
        for_: Annotated[str | None, Field(alias="for", description="Lapse after this long, e.g. 2h.")] = None,
    ) -> str:
        """Pause this tmux server's entries (rk cron pause). Only an operator window may."""

        def check() -> None:
            caller = runner.caller()
            if not (caller.operator or runner.limits().any_owner):
                raise Refusal(f"refused: only a window with the role {mcpguard.OPERATOR_ROLE} may pause the server")

        return runner.mutate("cron_pause", ["cron", "pause"] + _flags([("--for", for_)]), None, check)

    @tool
    def cron_resume() -> str:
        """Resume this tmux server's entries (rk cron resume). Only an operator window may."""

        def check() -> None:
            caller = runner.caller()
            if not (caller.operator or runner.limits().any_owner):
                raise Refusal(f"refused: only a window with the role {mcpguard.OPERATOR_ROLE} may resume the server")

        return runner.mutate("cron_resume", ["cron", "resume"], None, check)

    # -- panes --------------------------------------------------------------------

    @tool
    def send(
        prompt: Prompt,
        pane: Pane = None,
        role: Role = None,
        session: Session = None,
        any_program: Annotated[
            bool, Field(description="Allow typing into a program that is not a known agent (never a shell).")
        ] = False,
    ) -> str:
        """Type a prompt into a pane once, now, through the guarded delivery (rk send);
        it counts toward the target's hourly rate cap."""
        argv = ["send"] + _flags(
            [("--pane", pane), ("--role", role), ("--session", session), ("--any-program", any_program)]
        )

        def check() -> None:
            limits = runner.limits()
            mcpguard.check_payload("prompt", prompt, limits)
            for target in _panes_of(runner, pane, role, session):
                mcpguard.check_rate(target, _counted(runner, target), runner.settings().rate_per_hour)

        return runner.mutate("send", argv, [prompt], check)

    @tool
    def agent_list() -> str:
        """Every pane with its kind, program, agent state, since when, and how its last turn ended (rk agent list)."""
        return runner.run(["agent", "list"])

    @tool
    def agent_await(
        until: Annotated[
            list[str],
            Field(description="Any of idle, waiting, limited, failed, interrupted, gone.", min_length=1),
        ],
        pane: Pane = None,
        role: Annotated[str | None, Field(description="Every pane whose window has this role.")] = None,
        session: Annotated[str | None, Field(description="Every pane of this session.")] = None,
        after_active: Annotated[bool, Field(description="Count a pane only once it was seen active.")] = False,
        all: Annotated[bool, Field(description="Return when every target is done (default: any).")] = False,
        timeout: Annotated[str, Field(description="Give up after this long (at most 1h).")] = "10m",
    ) -> str:
        """Block until the target is in one of the `until` conditions (rk agent await)."""
        seconds = _seconds(timeout)
        if seconds is not None and seconds > 3600:
            raise ToolError("refused: timeout is at most 1h")
        argv = ["agent", "await", "--until", ",".join(until), "--timeout", timeout] + _flags(
            [
                ("--pane", pane),
                ("--role", role),
                ("--session", session),
                ("--after-active", after_active),
                ("--all", all),
            ]
        )
        return runner.run(argv, answer_on_1=True)

    @tool
    def pane_read(
        pane: Annotated[str, Field(description="A pane id like %3.")],
        lines: Annotated[int, Field(ge=1, le=MAX_READ_LINES, description="How many of the last lines.")] = 40,
    ) -> str:
        """The last lines of a pane's screen, escapes and control characters removed."""
        from rk.core.environ import is_pane_id
        from rk.tmux.server import TmuxError

        if not is_pane_id(pane):
            raise ToolError(f"bad pane {pane!r}: use a pane id like %3")
        try:
            text = runner.tmux().capture(pane, lines)
        except TmuxError as exc:
            raise ToolError(f"pane_read: {exc}") from None
        rows = [_CONTROL.sub("", row).rstrip() for row in text.split("\n")]
        while rows and not rows[-1]:
            rows.pop()
        return json.dumps({"ok": True, "result": {"pane": pane, "lines": rows[-lines:]}}, ensure_ascii=False)

    @tool
    def events(
        since: Annotated[str | None, Field(description="Only events since then: 1h, 30m, or a time.")] = None,
        pane: Annotated[list[str] | None, Field(description="Only these panes' events.")] = None,
        limit: Annotated[int, Field(ge=1, le=MAX_EVENTS, description="The newest this many.")] = 100,
    ) -> str:
        """State changes and log outcomes, oldest first (rk events --json), as one list."""
        args = ["events", "--json"] + _flags([("--since", since), ("--pane", pane)])
        out, err = io.StringIO(), io.StringIO()
        code = runner.cli(args, environ=runner.environ, stdout=out, stderr=err)
        docs = [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]
        if code:
            error = docs[-1].get("error", {}).get("message") if docs else err.getvalue().strip()
            raise ToolError(error or "events failed")
        return json.dumps({"ok": True, "result": docs[-limit:]}, ensure_ascii=False)

    return server


def _panes_of(runner: Runner, pane: str | None, role: str | None, session: str | None) -> list[str]:
    """The panes a send would type into, for the rate check (none found: the send says why)."""
    from rk.core.environ import ROLE_OPTION, SESSION_OPTION
    from rk.tmux.server import TmuxError

    if pane:
        return [pane]
    try:
        rows = runner.tmux().listing("list-panes", ("pane_id", ROLE_OPTION, SESSION_OPTION))
    except TmuxError:
        return []
    if role:
        return [r["pane_id"] for r in rows if r[ROLE_OPTION] == role]
    if session:
        return [r["pane_id"] for r in rows if r[SESSION_OPTION] == session or r[SESSION_OPTION].endswith(":" + session)]
    return [runner.pane] if runner.pane else []


def _counted(runner: Runner, pane: str) -> int:
    """Deliveries to `pane` in the last hour that count toward its cap."""
    from rk.core.log.delivery import counts_for_rate

    _, doc = runner.call(["cron", "log", "--since", "1h", "-n", "0"])
    if not doc.get("ok"):
        return 0
    return sum(1 for line in doc["result"] if line.get("target") == pane and counts_for_rate(line.get("outcome", "")))


def serve(cli: CliMain) -> None:
    """`rk mcp`: serve on stdin/stdout until the client closes them."""
    build(cli).run("stdio")
