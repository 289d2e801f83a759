"""How `rk mcp` runs a tool: the command line in-process, behind the guardrails.

A tool's typed inputs become the command line's argv (`argv`), which `Runner`
runs in this process (`rk.cli.root.main` with `--json`), asking the guardrails
(`rk.core.channels.mcpguard`) first and appending every change and refusal to
`<state dir>/mcp.log`.
"""

from __future__ import annotations

import functools
import io
import json
import os
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent

from rk.core.channels import mcpguard
from rk.core.channels.mcpguard import Caller, Limits, Refusal

if TYPE_CHECKING:
    from rk.core.settings import Settings
    from rk.tmux.server import Server


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

    def mutate(
        self, tool: str, argv: list[str], positional: list[str] | None = None, check: Callable[[], None] | None = None
    ) -> str:
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

    def settings(self) -> Settings:
        from rk.store.config import ConfigError, load_settings

        try:
            return load_settings(self.environ)
        except ConfigError as exc:
            raise ToolError(str(exc)) from None

    def limits(self) -> Limits:
        s = self.settings()
        return Limits(max_pending=s.mcp_max_pending, any_owner=bool(s.mcp_any_owner))

    def tmux(self) -> Server:
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


def check_intervals(limits: Limits, **given: str | None) -> None:
    """The MCP floor on how often a schedule repeats, for each interval given."""
    for flag, text in given.items():
        given_seconds = seconds(text)
        if given_seconds is not None:
            mcpguard.check_interval(flag, given_seconds, limits)


def flag_argv(pairs: list[tuple[str, object]]) -> list[str]:
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


def seconds(text: str | None) -> int | None:
    """A duration flag's seconds; None when absent or malformed (the CLI then says why, in its words)."""
    if text is None:
        return None
    from rk.core.durations import parse_duration

    try:
        return parse_duration(text)
    except ValueError:
        return None


#: Flags that are Python keywords: the input is named as the flag, the parameter with `_`.
_KEYWORDS = {"in": "in_", "for": "for_"}


def aliased(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` called with the inputs' names (`in`, `for`) mapped to its parameters' (`in_`, `for_`);
    its signature (and so the schema) stays `fn`'s."""

    @functools.wraps(fn)
    def call(**arguments: Any) -> Any:
        try:
            return fn(**{_KEYWORDS.get(k, k): v for k, v in arguments.items()})
        except ToolError as exc:  # the message as is (the SDK would prefix "Error executing tool …")
            return CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True)

    return call


def panes_of(runner: Runner, pane: str | None, role: str | None, session: str | None) -> list[str]:
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


def counted(runner: Runner, pane: str) -> int:
    """Deliveries to `pane` in the last hour that count toward its cap."""
    from rk.core.log.delivery import counts_for_rate

    _, doc = runner.call(["cron", "log", "--since", "1h", "-n", "0"])
    if not doc.get("ok"):
        return 0
    return sum(1 for line in doc["result"] if line.get("target") == pane and counts_for_rate(line.get("outcome", "")))
