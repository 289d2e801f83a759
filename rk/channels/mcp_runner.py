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
import time
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent

from rk.channels import mcp_hosts
from rk.core.channels import mcpguard
from rk.core.channels.mcpguard import Action, Caller, Grant, Limits, Refusal, Spot

if TYPE_CHECKING:
    from rk.core.pane.caller import Placed
    from rk.core.settings import Settings
    from rk.tmux.server import Server


#: `rk.cli.root.main`'s shape: (argv, environ=, stdout=, stderr=) -> exit status.
CliMain = Callable[..., int]


@dataclass(frozen=True)
class Panes:
    """The panes of the caller's server, for scope checks: by pane id, where each is
    (`Spot`) and the agent session ref it carries."""

    spots: dict[str, Spot]
    agent_sessions: dict[str, str]
    host: str = ""  #: "" this host's; else the host they are on

    def spot(self, pane: str) -> Spot:
        """Where `pane` is (a pane not there: only its id, which no session scope matches)."""
        return self.spots.get(pane, Spot(pane, host=self.host))

    def matching(self, pane: str | None, role: str | None, session: str | None) -> list[str]:
        """The panes a `pane`/`role`/`session` selector names now (all of them: a role's window
        may hold several panes, and each must be in scope)."""
        if pane:
            return [pane]
        if role:
            return [p for p, s in self.spots.items() if s.role == role]
        if session:
            return [p for p, ref in self.agent_sessions.items() if ref == session or ref.endswith(":" + session)]
        return []

    def of_target(self, summary: str) -> list[str]:
        """The panes an entry's `target` (`pane:%3`, `role:x`, `session:ref`) names now."""
        kind, _, value = summary.partition(":")
        return self.matching(*(value if kind == k else None for k in ("pane", "role", "session")))


class Runner:
    """Runs the command line in-process for one caller, with the guardrails."""

    def __init__(self, cli: CliMain, environ: Mapping[str, str], placed: Placed | None = None) -> None:
        """`placed`: where the caller runs (default: proven now from this process's ancestors,
        `rk.tmux.caller.place`). The command line runs on the proven pane's server, as that
        pane: TMUX and TMUX_PANE are rewritten from the proof, or removed when there is none."""
        from rk.tmux.caller import place

        self.cli = cli
        self.environ = dict(environ)
        self.environ["RK_CREATED_VIA"] = mcpguard.VIA  # the entries cron_add creates say so
        self.placed = place(self.environ) if placed is None else placed
        for name in ("TMUX", "TMUX_PANE"):
            self.environ.pop(name, None)
        if self.placed.proven:
            self.environ["TMUX"] = f"{self.placed.socket},{self.placed.server_pid},0"
            self.environ["TMUX_PANE"] = self.placed.pane
        self.pane = self.placed.pane
        self.kind = "worker" if self.placed.proven else "unknown"  #: as the last check saw it, for mcp.log

    @property
    def host(self) -> str:
        """The host of the call under way ("" this one): a tool's `host` input (`rk.channels.mcp_hosts`)."""
        return mcp_hosts.current()

    # -- the command line ------------------------------------------------------

    def call(self, argv: list[str], positional: list[str] | None = None) -> tuple[int, dict[str, Any]]:
        """`rk ARGV --json -- POSITIONAL` (on the call's host): the exit status and the JSON document."""
        host = ["--host", self.host] if self.host else []
        args = [*argv, "--json", *host, *(["--", *positional] if positional else [])]
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
        self,
        tool: str,
        argv: list[str],
        positional: list[str] | None = None,
        check: Callable[[], None] | None = None,
        *,
        serial: bool = False,
    ) -> str:
        """A change: guardrails first (`check` raises `Refusal`), then the CLI; both logged.
        `serial`: check and change hold one lock per server against every other rk mcp, so
        a count the check made (the pending cap) is still true when the change lands."""
        from rk.host.lock import LockTimeout, exclusive

        try:
            with (
                exclusive(f"mcp-change:{self.socket()}:{self.host}", wait=30.0, poll=0.02) if serial else nullcontext()
            ):
                if check is not None:
                    check()
                text = self.run(argv, positional)
                if self.host and tool == "cron_add":  # the far end records no creator: kept here
                    made = str(json.loads(text).get("result", {}).get("id", ""))
                    state = self.state_dir()
                    mcp_hosts.remember(state, self.socket(), self.pane, self.host, made, int(time.time()))
        except LockTimeout:
            self.audit(tool, argv, positional, "failed", "busy")
            raise ToolError("busy: another rk mcp change held this server for 30s; try again") from None
        except Refusal as exc:
            self.audit(tool, argv, positional, "refused", str(exc))
            raise ToolError(str(exc)) from None
        except ToolError as exc:  # a rule of the command line's own (the chain rules) refuses too
            self.audit(tool, argv, positional, "refused" if str(exc).startswith("refused:") else "failed", str(exc))
            raise
        self.audit(tool, argv, positional, "ok", "")
        return text

    # -- what the caller may see ------------------------------------------------------

    def visible_entries(self) -> str:
        """`cron list`'s document with only the entries the caller may read."""
        self.prefetch()
        caller, grants, known = self.caller(), self.grants(), self.panes()
        mcpguard.check_placed(caller)
        records = [r for r in self.entries() if self._sees(caller, grants, known, r)]
        return json.dumps({"ok": True, "result": records}, ensure_ascii=False)

    def check_visible(self, entry_id: str) -> None:
        """Refuse to show an entry the caller may not read."""
        caller = self.caller()
        mcpguard.check_placed(caller)
        self.prefetch()
        grants, known, record = self.grants(), self.panes(), self.entry(entry_id)
        if not self._sees(caller, grants, known, record):
            panes = known.of_target(str(record.get("target", "")))
            mcpguard.check_reach(caller, known.spot(panes[0] if panes else "?"), Action.READ, grants)

    def visible_log(self, argv: list[str]) -> str:
        """`cron log`'s lines into panes the caller may read."""
        caller, grants, known = self.caller(), self.grants(), self.panes()
        mcpguard.check_placed(caller)
        _, doc = self.call(argv)
        if not doc.get("ok"):
            raise ToolError(doc.get("error", {}).get("message") or "error")
        lines = [
            line
            for line in doc["result"]
            if mcpguard.in_scope(caller, known.spot(str(line.get("target", ""))), Action.READ, grants)
        ]
        return json.dumps({"ok": True, "result": lines}, ensure_ascii=False)

    def _sees(self, caller: Caller, grants: list[Grant], known: Panes, record: Mapping[str, Any]) -> bool:
        if self.owns(caller, record):
            return True
        panes = known.of_target(str(record.get("target", "")))
        return bool(panes) and all(mcpguard.in_scope(caller, known.spot(p), Action.READ, grants) for p in panes)

    def readable(self, panes: list[str]) -> set[str]:
        """Of `panes`, those the caller may read."""
        caller, grants, known = self.caller(), self.grants(), self.panes()
        return {p for p in panes if mcpguard.in_scope(caller, known.spot(p), Action.READ, grants)}

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
        """The proven caller with its session and window role now (a role set or cleared since
        the start counts); unknown once its pane, process or server is gone or replaced."""
        from rk.tmux.caller import refresh

        now = refresh(self.placed, self.environ)
        caller = Caller(now.pane, now.session, now.role, now.note) if now.proven else Caller(note=now.note)
        self.kind = caller.kind
        return caller

    def grants(self) -> list[Grant]:
        from rk.store.grants import load_grants

        return load_grants(self.environ)[0]

    def panes(self) -> Panes:
        """Every pane of the caller's server (or of the call's host, as it says, or a refusal):
        where it is, and the agent session it carries."""
        from rk.core.environ import ROLE_OPTION, SESSION_OPTION
        from rk.tmux.server import TmuxError

        if self.host:
            return Panes(*mcp_hosts.ask_places(self.environ, self.state_dir(), self.host), host=self.host)
        try:
            rows = self.tmux().listing("list-panes", ("pane_id", "session_name", ROLE_OPTION, SESSION_OPTION))
        except TmuxError:
            return Panes({}, {})
        spots = {r["pane_id"]: Spot(r["pane_id"], r["session_name"], r[ROLE_OPTION]) for r in rows}
        return Panes(spots, {r["pane_id"]: r[SESSION_OPTION] for r in rows})

    def targets(self, pane: str | None, role: str | None, session: str | None) -> list[str]:
        """The panes a send or an add would type into now (none given: the caller's own); a role
        or session that names none is refused (what rk mcp cannot place, it does not type into)."""
        if not (pane or role or session) and self.host:
            raise Refusal(f"refused: on host {self.host!r}, name the pane, role or session (this pane is not there)")
        if not (pane or role or session):
            panes = [self.pane] if self.pane else []
        else:
            panes = self.panes().matching(pane, role, session)
        if not panes:
            what = f"role {role!r}" if role else f"session {session!r}" if session else "this caller"
            raise Refusal(f"refused: no pane has {what[:80]} now; rk mcp acts only on panes it can place")
        return panes

    def check_one_shot(
        self, at: str | None, in_: str | None, targets: list[str], entries: list[dict[str, Any]]
    ) -> None:
        """The floor for a one-shot (`at` or `in`) into `targets` (malformed: the CLI says why)."""
        from rk.core.environ import ClockError, fixed_now, parse_instant

        now = fixed_now(self.environ) or int(time.time())
        if in_ is not None:
            delay = seconds(in_)
            when = None if delay is None else now + delay
        else:
            try:
                when = None if at is None else parse_instant(at)
            except ClockError:
                when = None
        if when is None:
            return
        caller, known = self.caller(), self.panes()
        others = [
            int(rec["schedule"]["at"])
            for rec in entries
            if self.owns(caller, rec)
            and rec.get("schedule", {}).get("kind") == "at"
            and set(known.of_target(str(rec.get("target", "")))) & set(targets)
        ]
        mcpguard.check_one_shot(when, now, others, self.limits())

    def socket(self) -> str:
        from rk.tmux.server import socket_from_tmux_env

        return socket_from_tmux_env(self.environ.get("TMUX", "")) or "default"

    def check_reach(self, action: Action, panes: list[str]) -> None:
        """Refuse unless the caller may do `action` in every one of `panes`."""
        caller, grants, known = self.caller(), self.grants(), self.panes()
        mcpguard.check_placed(caller)
        for pane in panes:
            mcpguard.check_reach(caller, known.spot(pane), action, grants)

    def entry(self, entry_id: str) -> dict[str, Any]:
        if self.host:  # the record from the host's list, asked beside its places (one round trip, not two)
            found = [rec for rec in self.entries() if rec.get("id") == entry_id]
            if not found:
                raise ToolError(f"no entry {entry_id[:40]} on host {self.host}")
            return found[0]
        _, doc = self.call(["cron", "show"], [entry_id])
        if not doc.get("ok"):
            raise ToolError(doc.get("error", {}).get("message") or "error")
        result: dict[str, Any] = doc["result"]
        return result

    def entries(self) -> list[dict[str, Any]]:
        """cron list's records (on another host: asked once per tool call)."""
        return mcp_hosts.once("entries", self._entries) if self.host else self._entries()

    def prefetch(self) -> None:
        """On another host, ask for its entries now, beside where its panes are (two round trips at once)."""
        if self.host:
            mcp_hosts.early("entries", self._entries)

    def _entries(self) -> list[dict[str, Any]]:
        _, doc = self.call(["cron", "list"])
        if not doc.get("ok"):
            raise ToolError(doc.get("error", {}).get("message") or "error")
        return list(doc["result"])

    def pending(self, caller: Caller, entries: list[dict[str, Any]]) -> int:
        """Of `entries` (cron list's records), those `caller` created through rk mcp."""
        return sum(1 for rec in entries if self.owns(caller, rec))

    def owns(self, caller: Caller, record: Mapping[str, Any]) -> bool:
        """Whether `caller` created `record` through rk mcp: its `created_by` says so here; on
        another host, this host's ledger of what each pane made there does."""
        if not self.host:
            return mcpguard.owns(caller, record.get("created_by") or {})
        made = mcp_hosts.remembered(self.state_dir(), self.socket(), caller.pane, self.host)
        return bool(caller.pane) and str(record.get("id", "")) in made

    def check_owner(self, entry_id: str) -> None:
        """Change `entry_id` only if the caller created it or may change the pane it types into."""
        caller = self.caller()
        mcpguard.check_placed(caller)
        self.prefetch()
        record = self.entry(entry_id)
        known = self.panes()
        panes = known.of_target(str(record.get("target", "")))
        if self.host:  # there, only a grant for the pane it types into: no owner's or any_owner's right
            if not panes:
                raise Refusal(f"refused: entry {entry_id} types into no pane host {self.host!r} has now")
            for pane in panes:
                mcpguard.check_reach(caller, known.spot(pane), Action.CHANGE, self.grants())
            return
        target = known.spots.get(panes[0]) if len(panes) == 1 else None
        created_by = record.get("created_by") or {}
        mcpguard.check_change(caller, entry_id, created_by, target, self.limits(), self.grants())

    def check_host(self) -> None:
        """On another host, a grant naming it for this caller, before the host is asked anything."""
        if self.host:
            mcpguard.check_host(self.caller(), self.host, self.grants())

    def check_remote_child(self, one_shot: bool) -> None:
        """The chain rules for an entry made on another host in a turn a fire here started:
        the far end cannot record a parent on this host, so only a one-shot (which fires
        once, never more often than its parent) within the depth bound."""
        if not self.host:
            return
        from pathlib import Path

        from rk.core.schedule.lineage import ONCE, ChainRefused, check_child
        from rk.tmux.lineage import caller_turn, turn_lineage

        try:
            found = turn_lineage(caller_turn(self.environ, Path(self.state_dir())))
        except OSError as exc:
            raise Refusal(f"refused: cannot read the chain records ({exc})") from None
        if found is None:
            return
        try:
            check_child(found, ONCE, self.settings().max_chain_depth)
        except ChainRefused as exc:
            raise Refusal(str(exc)) from None
        if not one_shot:
            raise Refusal(
                f"refused: this turn was started by a fire of {found.parent}; an entry it makes on another host "
                "may only be a one-shot (at or in): that host cannot record its parent here to bound how often it fires"
            )

    def state_dir(self) -> str:
        from rk.store.config import state_dir

        return str(state_dir(self.environ))

    def audit(self, tool: str, argv: list[str], positional: list[str] | None, outcome: str, message: str) -> None:
        """One line per change or refusal in `<state dir>/mcp.log` (best effort: a full disk
        must not turn a change that happened into an error)."""
        from rk.host.private import append_line
        from rk.store.config import state_dir

        record: dict[str, object] = {
            "ts": int(time.time()),
            "pane": self.pane,
            "caller": self.kind,
            "tool": tool,
            "argv": argv + (["--", *positional] if positional else []),
            "outcome": outcome,
        }
        if self.host:
            record["host"] = self.host
        if self.placed.note:
            record["note"] = self.placed.note
        if message:
            record["message"] = message
        try:  # never through a planted link, never into an unsafe state dir
            append_line(state_dir(self.environ), "mcp.log", json.dumps(record, ensure_ascii=False))
        except (OSError, ValueError):
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


def aliased(fn: Callable[..., Any], runner: Runner | None = None) -> Callable[..., Any]:
    """`fn` called with the inputs' names (`in`, `for`) mapped to its parameters' (`in_`, `for_`);
    its signature (and so the schema) stays `fn`'s. A guardrail's refusal outside a change (a read
    beyond the caller's scope) is logged like a change's and returned as the tool error."""

    hosted = fn.__name__ in mcp_hosts.HOSTED and runner is not None

    @functools.wraps(fn)
    def call(**arguments: Any) -> Any:
        named = arguments.pop("host", None) if hosted else None
        said = "" if named in (None, mcpguard.LOCAL) else str(named)  # the host as given, for mcp.log
        try:
            host = mcp_hosts.resolve(named, runner.environ) if runner is not None and hosted else ""
            with mcp_hosts.on_host(host):
                if runner is not None:
                    runner.check_host()  # before the host is asked anything
                return fn(**{_KEYWORDS.get(k, k): v for k, v in arguments.items()})
        except Refusal as exc:
            if runner is not None:
                given = [f"{k}={str(v)[:80]}" for k, v in sorted(arguments.items())]
                with mcp_hosts.on_host(said):
                    runner.audit(fn.__name__, given, None, "refused", str(exc))
            return CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True)
        except ToolError as exc:  # the message as is (the SDK would prefix "Error executing tool …")
            return CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True)

    if hosted:
        call.__signature__ = mcp_hosts.with_host(fn)  # type: ignore[attr-defined]
    return call


def counted(runner: Runner, pane: str) -> int:
    """Deliveries to `pane` in the last hour that count toward its cap."""
    from rk.core.log.delivery import counts_for_rate

    _, doc = runner.call(["cron", "log", "--since", "1h", "-n", "0"])
    if not doc.get("ok"):
        return 0
    return sum(1 for line in doc["result"] if line.get("target") == pane and counts_for_rate(line.get("outcome", "")))
