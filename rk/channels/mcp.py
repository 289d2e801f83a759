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
every refusal is appended to `<state dir>/mcp.log`, one JSON line each (`rk.channels.mcp_runner`).
The `cron_*` tools are in `rk.channels.mcp_cron`, their entry inputs made from the field
table (`rk.core.schedule.fields`).

The `mcp` SDK is imported here only; nothing on the hook path or a plain CLI
start imports this module.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable, Mapping
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from rk.channels.mcp_cron import Register, schedule_tools
from rk.channels.mcp_runner import CliMain, Runner, aliased, counted, flag_argv, seconds
from rk.core.channels import mcpguard
from rk.core.channels.mcpguard import Action
from rk.core.log.events import MAX_PANES
from rk.core.redact import program_only
from rk.core.schedule.fields import BY_KEY

#: `pane_read`: the most lines one call returns.
MAX_READ_LINES = 200
#: `events`: the most events one call returns (the newest are kept).
MAX_EVENTS = 500

INSTRUCTIONS = (
    "rk schedules prompts into the tmux panes where AI coding agents run. "
    "cron_add schedules a prompt (into this pane by default); cron_list shows the entries; "
    "agent_list shows every pane's agent state; agent_await blocks until a pane is idle, waiting, "
    "limited, failed, interrupted or gone; pane_read shows a pane's screen; send types a prompt now. "
    "You act only within your scope: a worker in its own pane (and it may await any pane); a window with "
    "the role operator in the panes of its tmux session; more only by a grant in rk's config. "
    "You may change or remove entries you created, or that type into a pane in your scope. "
    "A tool with a host input acts on another machine of rk's hosts, only where a grant names that host."
)


Pane = Annotated[str | None, Field(description=BY_KEY["pane"].mcp)]
Role = Annotated[str | None, Field(description=BY_KEY["role"].mcp)]
Session = Annotated[str | None, Field(description=BY_KEY["session"].mcp)]
Prompt = Annotated[str, Field(description=BY_KEY["prompt"].mcp)]


def build(cli: CliMain, environ: Mapping[str, str] | None = None) -> MCPServer:
    """The server with every tool, for the caller whose environment this is; `cli` is
    `rk.cli.root.main`, handed in by the command (this module never imports the CLI
    that registers it)."""
    runner = Runner(cli, os.environ if environ is None else environ)
    server: MCPServer = MCPServer("rk", instructions=INSTRUCTIONS)

    def tool(fn: Callable[..., str]) -> Callable[..., str]:
        described = (fn.__doc__ or "").strip()
        server.add_tool(aliased(fn, runner), name=fn.__name__, description=described, structured_output=False)
        return fn

    schedule_tools(tool, runner)
    agent_tools(tool, runner)
    screen_tools(tool, runner)
    return server


def agent_tools(tool: Register, runner: Runner) -> None:
    """send, agent_list and agent_await."""

    def send(prompt: Prompt, pane: Pane = None, role: Role = None, session: Session = None) -> str:
        """Type a prompt into a pane in your scope once, now, through the guarded delivery (rk send);
        it counts toward the target's hourly rate cap. Only into a known agent, never a shell."""
        argv = ["send"] + flag_argv([("--pane", pane), ("--role", role), ("--session", session)])

        def check() -> None:
            limits = runner.limits()
            mcpguard.check_payload("prompt", prompt, limits)
            targets = runner.targets(pane, role, session)
            runner.check_reach(Action.SEND, targets)
            for target in targets:
                mcpguard.check_rate(target, counted(runner, target), runner.settings().rate_per_hour)

        return runner.mutate("send", argv, [prompt], check)

    tool(send)

    def agent_list() -> str:
        """Every pane with its kind, program, agent state, since when, and how its last turn ended (rk agent list).
        A pane's full command line shows only where you may read; elsewhere the program's name."""
        mcpguard.check_placed(runner.caller())
        _, doc = runner.call(["agent", "list"])
        if not doc.get("ok"):
            raise ToolError(doc.get("error", {}).get("message") or "error")
        rows = doc["result"]
        readable = runner.readable([str(row.get("pane", "")) for row in rows])
        for row in rows:
            if row.get("pane") not in readable:
                row["process"] = program_only(str(row.get("process", "")))
        return json.dumps(doc, ensure_ascii=False)

    tool(agent_list)

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
        """Block until the target is in one of the `until` conditions (rk agent await). A target
        whose pane closes, is replaced or whose tmux server dies ends the wait at once: gone."""
        mcpguard.check_placed(runner.caller())
        if runner.host:  # awaiting is free here only: there, a grant for each pane awaited
            runner.check_reach(Action.AWAIT, runner.targets(pane, role, session))
        waited = seconds(timeout)
        if waited is not None and waited > 3600:
            raise ToolError("refused: timeout is at most 1h")
        argv = ["agent", "await", "--until", ",".join(until), "--timeout", timeout] + flag_argv(
            [
                ("--pane", pane),
                ("--role", role),
                ("--session", session),
                ("--after-active", after_active),
                ("--all", all),
            ]
        )
        return runner.run(argv, answer_on_1=True)

    tool(agent_await)


def screen_tools(tool: Register, runner: Runner) -> None:
    """pane_read and events."""

    def pane_read(
        pane: Annotated[str, Field(description="A pane id like %3.")],
        lines: Annotated[int, Field(ge=1, le=MAX_READ_LINES, description="How many of the last lines.")] = 40,
    ) -> str:
        """The last lines of a pane's screen, escapes and control characters removed (rk agent read)."""
        from rk.core.environ import is_pane_id

        if not is_pane_id(pane):
            raise ToolError(f"bad pane {pane[:40]!r}: use a pane id like %3")
        runner.check_reach(Action.READ, [pane])
        return runner.run(["agent", "read", "--pane", pane, "-n", str(lines)])

    tool(pane_read)

    def events(
        since: Annotated[str | None, Field(description="Only events since then: 1h, 30m, or a time.")] = None,
        pane: Annotated[list[str] | None, Field(max_length=MAX_PANES, description="Only these panes' events.")] = None,
        limit: Annotated[int, Field(ge=1, le=MAX_EVENTS, description="The newest this many.")] = 100,
    ) -> str:
        """State changes and log outcomes, oldest first (rk events --json), as one list."""
        mcpguard.check_placed(runner.caller())
        args = ["events", "--json"] + flag_argv([("--since", since), ("--pane", pane), ("--host", runner.host or None)])
        out, err = io.StringIO(), io.StringIO()
        code = runner.cli(args, environ=runner.environ, stdout=out, stderr=err)
        docs = [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]
        if code:
            error = docs[-1].get("error", {}).get("message") if docs else err.getvalue().strip()
            raise ToolError(error or "events failed")
        readable = runner.readable(sorted({str(d.get("pane", "")) for d in docs}))
        docs = [d for d in docs if d.get("pane") in readable]
        return json.dumps({"ok": True, "result": docs[-limit:]}, ensure_ascii=False)

    tool(events)


def serve(cli: CliMain) -> None:
    """`rk mcp`: serve on stdin/stdout until the client closes stdin, then cancel the
    waits and exit; every malformed message is answered (`rk.channels.mcp_stdio`)."""
    from rk.channels.mcp_stdio import exit_now, serve_stdio

    server = build(cli)
    serve_stdio(lambda: server.run("stdio"))
    exit_now()
