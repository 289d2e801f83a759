"""`rk doctor`: is everything in place for rk to fire? One line per check, with the fix.

Each check is `ok`, `warn` or `fail`; the exit status is 1 when any check fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from rk.cli.environment import Environment, ExitStatus, environment
from rk.cli.options import JsonOpt, ServerOpt
from rk.cli.table import terminal_width, wrapped

if TYPE_CHECKING:
    from rk.core.pane.facts import PaneFact
    from rk.core.schedule.entry import Entry
    from rk.store.config import ServerFiles
    from rk.tmux.server import Server, TmuxError

#: The oldest tmux rk is tested with (`-p` pane options, `display -p`, `if-shell -F`).
MIN_TMUX = (3, 2)

#: The npm package of each agent CLI: its package.json, next to the resolved binary, names
#: the installed version without starting the CLI.
PACKAGES = {
    "claude": "@anthropic-ai/claude-code",
    "codex": "@openai/codex",
    "gemini": "@google/gemini-cli",
    "opencode": "opencode-ai",
    "copilot": "@github/copilot",
    "qwen": "@qwen-code/qwen-code",
    "kilo": "@kilocode/cli",
}
#: The Python distribution of each agent CLI pip installs: its dist-info, in the venv of
#: the resolved script (pip, pipx, uv tool), names the version.
DISTRIBUTIONS = {"vibe": "mistral_vibe"}
#: Seconds `<cli> --version` may take when no package.json names the version.
VERSION_TIMEOUT = 5.0
_VERSION = re.compile(r"\b(\d+\.\d+\.\d+)\b")


class Level(StrEnum):
    OK = "ok"
    WARN = "warn"
    FAIL = "fail"


@dataclass(frozen=True)
class Check:
    name: str
    level: Level
    detail: str
    fix: str = ""


def check_path(env: Environment) -> Check:
    from rk.agent.setup import SetupError, find_rk

    on_path = shutil.which("rk", path=env.environ.get("PATH"))
    try:
        this = find_rk(env=env.environ)
    except SetupError as exc:
        return Check("rk on PATH", Level.FAIL, str(exc), "make install")
    if on_path is None:
        # The one line to paste (and add to ~/.profile), as contrib/install.sh prints it.
        line = f'export PATH="{os.path.dirname(this)}:$PATH"'
        return Check("rk on PATH", Level.WARN, f"rk is not on PATH (this one is {this})", line)
    if os.path.realpath(on_path) != os.path.realpath(this):
        return Check("rk on PATH", Level.WARN, f"PATH's rk is {on_path}, this one is {this}", "make install")
    return Check("rk on PATH", Level.OK, on_path)


def check_hooks(env: Environment) -> list[Check]:
    """rk's hooks in each agent CLI's file: fail when the CLI cannot load them, warn when it
    may not (`rk.agent.setup.health`: the file, rk's script, the CLI's switches and trust);
    ok when they are exactly what this rk writes, whatever hooks of the user's own sit
    before or after them; fail when they run another rk or an older generation."""
    from rk.agent.setup import PROVIDERS, SetupError, config_path, find_rk, hooks_state
    from rk.agent.setup.health import Probe, load_problems

    try:
        this: str | None = find_rk(env=env.environ)
    except SetupError:
        this = None  # check_path says so; what the CLIs load is still worth saying

    def version_of(cli: str) -> str | None:
        got = cli_version(cli, env.environ)
        return got[0] if got else None

    probe = Probe(env.environ, version_of, this)
    out = []
    for agent in PROVIDERS:
        name, path, fix = f"{agent} hooks", config_path(agent, env.environ), f"rk agent setup {agent}"
        if not path.exists():
            continue
        problems = load_problems(agent, probe)
        said = [Check(f"{agent} {p.what}", Level.FAIL if p.fatal else Level.WARN, p.detail, p.fix) for p in problems]
        if this is None or any(p.fatal or p.what == "hooks" for p in problems):
            out += said  # the drift of hooks the CLI cannot load (or rk cannot read) is beside the point
            continue
        try:
            present, drift = hooks_state(agent, env.environ, this)
        except SetupError as exc:
            out.append(Check(name, Level.FAIL, str(exc), f"fix {path}"))
            continue
        if not present:
            out.append(Check(name, Level.WARN, f"none in {path}", fix))
        elif drift:
            out.append(Check(name, Level.FAIL, f"{path} {drift}", fix))
        else:
            out.append(Check(name, Level.OK, f"run {this}"))
        out += said  # what else may keep them from running (Codex's trust, OpenCode 2)
    return out


def check_mcp(env: Environment) -> list[Check]:
    """`rk mcp` where an agent CLI registered it (`rk agent setup --mcp`): the current rk
    (fail: another rk), as this rk sets it up (warn: an older set-up), and an SDK that
    imports. Nothing is said for a CLI that did not register it (opt-in)."""
    import importlib.util

    from rk.agent.setup import PROVIDERS, SetupError, find_rk, mcp_config_path, mcp_drift, mcp_registered

    try:
        this = find_rk(env=env.environ)
    except SetupError:
        return []
    out = []
    for agent in PROVIDERS:
        if not mcp_registered(agent, env.environ):
            continue
        name, path, fix = f"{agent} mcp", mcp_config_path(agent, env.environ), f"rk agent setup {agent} --mcp"
        try:
            drift = mcp_drift(agent, env.environ, this)
        except SetupError as exc:
            out.append(Check(name, Level.FAIL, str(exc), f"fix {path}"))
            continue
        if drift:
            other, what = drift
            out.append(Check(name, Level.FAIL if other else Level.WARN, f"{path} {what}", fix))
        elif importlib.util.find_spec("mcp") is None:
            out.append(Check(name, Level.FAIL, "the mcp package is not installed", "make install"))
        else:
            out.append(Check(name, Level.OK, f"{this} mcp"))
    return out + check_grants(env)


def check_grants(env: Environment) -> list[Check]:
    """What `mcp: grants:` lets rk mcp callers do beyond their scope, and each item left out."""
    from rk.store.config import config_path
    from rk.store.grants import load_grants

    grants, problems = load_grants(env.environ)
    out = [Check("mcp grant", Level.OK, grant.describe()) for grant in grants]
    fix = f"fix mcp.grants in {config_path(env.environ)}"
    return out + [Check("mcp grant", Level.WARN, problem, fix) for problem in problems]


def live_panes(env: Environment, slugs: list[str]) -> list[tuple[Server, list[PaneFact] | TmuxError]]:
    """Each live server with its panes (or why they could not be listed), read once
    for every check that looks at panes."""
    from rk.tmux.server import Server, TmuxError

    out: list[tuple[Server, list[PaneFact] | TmuxError]] = []
    for slug in slugs:
        server = Server(name=slug, env=env.environ)
        if not server.is_live():
            continue
        try:
            out.append((server, server.pane_facts()))
        except TmuxError as exc:
            out.append((server, exc))
    return out


def check_panes(servers: list[tuple[Server, list[PaneFact] | TmuxError]]) -> list[Check]:
    """Agent panes whose hooks were never seen: rk can only read their screens."""
    from rk.cli.agent import AgentRow
    from rk.core.pane.facts import PaneKind

    out = []
    for server, facts in servers:
        slug = server.name
        if isinstance(facts, Exception):
            out.append(Check(f"panes of {slug}", Level.FAIL, str(facts)))
            continue
        agents = [AgentRow.of(slug, f) for f in facts if f.kind == PaneKind.AGENT and f.provider]
        silent = [a.pane for a in agents if not a.hooks_seen]
        if silent:
            out.append(
                Check(
                    f"hooks seen on {slug}",
                    Level.WARN,
                    f"no hook ever reported from {', '.join(silent)}",
                    "rk agent setup, then restart those agents",
                )
            )
        elif agents:
            out.append(Check(f"hooks seen on {slug}", Level.OK, f"{len(agents)} agent pane(s) report their state"))
    return out


def cli_version(cli: str, environ: dict[str, str]) -> tuple[str, str] | None:
    """(version or "", the binary) of the agent CLI on PATH; None when it is not installed.
    Read from the npm package.json beside the resolved binary (or the pip dist-info of its
    venv), else `<cli> --version`."""
    found = shutil.which(cli, path=environ.get("PATH"))
    if found is None:
        return None
    real = Path(os.path.realpath(found))
    dist = DISTRIBUTIONS.get(cli)
    for info in sorted(real.parent.parent.glob(f"lib/python3*/site-packages/{dist}-*.dist-info")) if dist else ():
        return info.name.removeprefix(f"{dist}-").removesuffix(".dist-info"), found
    for folder in list(real.parents)[:4]:
        try:
            meta = json.loads((folder / "package.json").read_text())
        except (OSError, ValueError):
            continue
        if isinstance(meta, dict) and meta.get("name") == PACKAGES.get(cli) and isinstance(meta.get("version"), str):
            return meta["version"], found
    try:
        out = subprocess.run(
            [found, "--version"],
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT,
            stdin=subprocess.DEVNULL,
            env=environ,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return "", found
    m = _VERSION.search(out)
    return (m.group(1) if m else ""), found


def check_entries(env: Environment) -> list[Check]:
    """One `fail` per entries file rk cannot read (none of its entries fires) and per
    entry that cannot fire (as `rk status` says it); none when all can."""
    from rk.cli.listing import read_server
    from rk.cli.store import servers_of
    from rk.core.schedule.health import is_trouble

    now = env.now()
    out = []
    for files in servers_of(env, not env.server_flag):
        sv = read_server(env, files, now)
        if sv.unreadable:
            why = f"{sv.unreadable}: none of its entries fires"
            out.append(Check(f"entries file of {sv.slug}", Level.FAIL, why, repair_fix(files)))
        for r in sv.rows:
            if is_trouble(r.why_not):
                out.append(Check(f"entry {r.entry.id} on {sv.slug}", Level.FAIL, str(r.why_not), _entry_fix(r.why_not)))
        out += check_budgets(env, files, sv.slug, [r.entry for r in sv.rows], now)
    return out


def repair_fix(files: ServerFiles) -> str:
    """How to repair an entries file rk cannot read: remove the entries that fill it when a
    change can still read it (past the size limit), else fix the YAML by hand."""
    from rk.store.entries import EntryDocument, EntryFileError

    try:
        largest = EntryDocument.read(files.entries, repair=True).largest()
    except (EntryFileError, OSError):
        return f"fix or move {files.entries} by hand (rk reads YAML with an entries: list, at most 1 MiB)"
    named = ", ".join(f"{entry_id} ({chars:,} characters)" for entry_id, chars in largest)
    return f"remove what fills it: rk -L {files.slug} cron rm <id>; the largest entries are {named}"


def check_budgets(env: Environment, files: ServerFiles, slug: str, entries: list[Entry], now: int) -> list[Check]:
    """One `warn` per entry whose budget cannot be enforced: its usage today is unknown."""
    budgeted = [e for e in entries if e.budget is not None]
    if not budgeted:
        return []
    from rk.store import delivery_log as logfile
    from rk.store.transcripts import spent_today
    from rk.tmux.server import Server

    lines = logfile.read_live(files.log)
    spent = spent_today(Server(name=slug, env=env.environ), budgeted, lines, now, env.zone(), env.environ)
    return [
        Check(
            f"budget of {e.id} on {slug}",
            Level.WARN,
            f"usage unknown ({spent[e.id].why}): the budget cannot be enforced",
            "run the agent with rk's hooks (rk agent setup), or rk cron edit the entry --budget off",
        )
        for e in budgeted
        if spent[e.id].tokens is None
    ]


def _entry_fix(why: str | None) -> str:
    if why and why.startswith("rate-capped"):
        return "lengthen the schedule, or raise rate_per_hour in the config"
    if why == "server not running":
        return "start the tmux server, or rk cron rm the entry"
    if why and "; re-target: " in why:  # an ended session (rk.core.schedule.health.retarget_hint)
        return why.split("; re-target: ", 1)[1]
    return "start the agent in the target's pane, or rk cron rm the entry and add it with another target"


def check_versions(env: Environment) -> list[Check]:
    """An installed agent CLI of a version rk is not tested with: its screens and hooks may differ."""
    from rk.core.pane.screen import TESTED_VERSIONS

    out = []
    for cli, tested in TESTED_VERSIONS.items():
        got = cli_version(cli, env.environ)
        if got is None:
            continue
        version, where = got
        if version in tested:
            out.append(Check(f"{cli} version", Level.OK, f"{version} ({where})"))
            continue
        seen = version or "of a version rk could not read"
        out.append(
            Check(
                f"{cli} version",
                Level.WARN,
                f"{cli} {seen} ({where}) is not a version rk is tested with ({', '.join(tested)}):"
                " its screen or hooks may not be read",
                f"use {cli} {tested[-1]}, or check `rk agent list` while it works",
            )
        )
    return out


def check_screens(servers: list[tuple[Server, list[PaneFact] | TmuxError]]) -> list[Check]:
    """Live agent panes whose screen matches no layout: rk cannot see them work or wait."""
    import time
    from datetime import datetime

    from rk.core.pane.facts import PaneKind
    from rk.core.pane.look import READABLE
    from rk.tmux.observe import read_screen
    from rk.tmux.server import TmuxError

    out = []
    zone = datetime.now().astimezone().tzinfo
    for server, facts in servers:
        slug = server.name
        if isinstance(facts, Exception):
            continue  # check_panes names the error
        unread = []
        for fact in facts:
            if fact.kind != PaneKind.AGENT or fact.dead or fact.provider not in READABLE:
                continue
            try:
                title, styled = server.look(fact.pane_id)
            except TmuxError:
                continue
            assert zone is not None
            if not read_screen(fact, styled, title, int(time.time()), zone).state:
                unread.append(f"{fact.pane_id} ({fact.provider})")
        if unread:
            out.append(
                Check(
                    f"screens on {slug}",
                    Level.WARN,
                    f"rk cannot read the screen of {', '.join(unread)}: no layout it knows matches",
                    "close the dialog or menu open there; if it stays, its CLI draws a screen rk does not know",
                )
            )
    return out


def check_ticker(env: Environment) -> Check:
    """Running, and started again after a reboot. Its fix is one that works on this
    machine (without a user bus `ticker install` starts it now and with tmux), and it
    shows the error that stopped it: the tmux line's last run, else the ticker's log."""
    from rk.agent.setup.ticker_line import installed_line
    from rk.cli.environment import moment
    from rk.cli.running import no_user_bus
    from rk.engine import ticker

    state = env.state_dir()
    rec = ticker.find_running(state)
    failed = ticker.start_error(state)
    tmux_said = f"tmux's line failed at {moment(int(failed.at), env.zone())}: {failed.text}" if failed else ""
    if rec is None:
        why = f"; {tmux_said}" if tmux_said else ""
        if not why and (ended := ticker.ending_error(state)) is not None:
            why = f"; its log at {moment(int(ended.at), env.zone())}: {ended.text}"
        by_tmux = no_user_bus(env.environ) and installed_line(env.environ) is not None and failed is None
        fix = "rk cron ticker start (tmux's line starts it with the next tmux server)" if by_tmux else ""
        return Check("ticker", Level.FAIL, f"not running: nothing fires{why}", fix or "rk cron ticker install")
    status = ticker.read_status(state) or {}
    served = ", ".join(status.get("servers") or []) or "no server yet"  # type: ignore[arg-type]
    if failed is not None:  # running now, but the next tmux server will not start it
        return Check(
            "ticker",
            Level.WARN,
            f"pid {rec.pid}, serves {served}; but {tmux_said}",
            "rk cron ticker install (writes the line for this rk)",
        )
    return Check("ticker", Level.OK, f"pid {rec.pid}, serves {served}")


def check_tmux(env: Environment) -> Check:
    tmux = shutil.which("tmux", path=env.environ.get("PATH"))
    if tmux is None:
        return Check("tmux", Level.FAIL, "not on PATH", "install tmux 3.2 or later")
    try:
        out = subprocess.run([tmux, "-V"], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check("tmux", Level.FAIL, f"tmux -V: {exc}")
    digits = out.split()[-1] if out else ""
    try:
        version = tuple(int("".join(c for c in part if c.isdigit()) or 0) for part in digits.split(".")[:2])
    except ValueError:
        version = ()
    if len(version) == 2 and version < MIN_TMUX:
        return Check("tmux", Level.FAIL, f"{out} is older than 3.2", "upgrade tmux")
    return Check("tmux", Level.OK, out or tmux)


def check_tmpdir(env: Environment) -> Check:
    """The ticker finds servers in TMUX_TMPDIR: the shell's and the ticker's must agree."""
    from rk.engine import ticker

    mine = env.environ.get("TMUX_TMPDIR", "")
    unit = ticker.unit_path(env.environ)
    theirs = None
    rec = ticker.read_pid(env.state_dir())
    if rec is not None and rec.alive():
        try:
            raw = Path(f"/proc/{rec.pid}/environ").read_bytes()
            pairs = dict(item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item)
            theirs = pairs.get("TMUX_TMPDIR", "")
        except OSError:
            theirs = None
    if theirs is None and unit.exists():
        lines = unit.read_text(errors="replace").splitlines()
        theirs = next((line.split("=", 2)[2] for line in lines if line.startswith("Environment=TMUX_TMPDIR=")), "")
    if theirs is None:
        return Check("TMUX_TMPDIR", Level.OK, f"{mine or 'unset'} (no ticker to compare with)")
    if theirs != mine:
        return Check(
            "TMUX_TMPDIR",
            Level.FAIL,
            f"the shell has {mine or 'none'}, the ticker {theirs or 'none'}: it cannot see your servers",
            "rk cron ticker install from this shell, or restart the ticker here",
        )
    return Check("TMUX_TMPDIR", Level.OK, mine or "unset (both)")


def check_unit(env: Environment) -> Check | None:
    from rk.agent.setup.ticker_line import installed_line
    from rk.cli.running import rk_argv, systemctl
    from rk.engine import ticker

    unit = ticker.unit_path(env.environ)
    if not unit.exists():
        return None
    exec_line = next(
        (line for line in unit.read_text(errors="replace").splitlines() if line.startswith("ExecStart=")), ""
    )
    program = exec_line.removeprefix("ExecStart=").split(" ", 1)[0]
    if not program or not os.access(program.replace("%h", os.path.expanduser("~")), os.X_OK):
        return Check(
            "systemd unit",
            Level.FAIL,
            f"{unit}: {program or 'no ExecStart'} is not executable",
            "rk cron ticker install",
        )
    if program != rk_argv()[0]:
        return Check("systemd unit", Level.WARN, f"{unit} runs {program}, not this rk", "rk cron ticker install")
    # Written is not running: ask systemd whether the unit is enabled and active.
    enabled = systemctl(env, "is-enabled", ticker.UNIT_NAME)
    state = enabled.stdout.strip()
    if not state:  # no user bus: systemd cannot run it, tmux can
        if installed_line(env.environ) is not None:
            return Check("systemd unit", Level.OK, f"{unit} unused: no systemd user bus; tmux starts the ticker")
        return Check(
            "systemd unit",
            Level.WARN,
            f"{unit} written; no systemd user bus ({enabled.reason})",
            "rk cron ticker install (starts the ticker now and with tmux)",
        )
    if state != "enabled":
        return Check(
            "systemd unit",
            Level.WARN,
            f"{unit} written but not enabled ({state})",
            f"systemctl --user enable --now {ticker.UNIT_NAME}",
        )
    active = systemctl(env, "is-active", ticker.UNIT_NAME)
    if active.stdout.strip() != "active":
        return Check(
            "systemd unit",
            Level.FAIL,
            f"{unit} enabled but not active ({active.stdout.strip() or active.reason})",
            f"systemctl --user restart {ticker.UNIT_NAME}; journalctl --user -u {ticker.UNIT_NAME}",
        )
    return Check("systemd unit", Level.OK, f"{unit} (enabled, active)")


def check_statusline(env: Environment) -> Check | None:
    """Inside tmux: does the caller's server show rk's segment (`rk.channels.statusline`) in its status line?"""
    from rk.core.channels.tmuxconf import shows_segment
    from rk.tmux.server import Server, TmuxError, socket_from_tmux_env

    own = socket_from_tmux_env(env.environ.get("TMUX", ""))
    if not own:
        return None
    fix = "rk agent setup tmux"
    try:
        server = Server(socket_path=own, env=env.environ)
        shown = server.run("show-options", "-gv", "status-right", timeout=2.0)
        shown += server.run("show-options", "-gv", "status-left", timeout=2.0)
    except TmuxError as exc:
        return Check("status line", Level.WARN, str(exc), fix)
    if shows_segment(shown):
        return Check("status line", Level.OK, "this tmux server shows rk status --format tmux")
    return Check("status line", Level.WARN, "this tmux server's status line does not show rk", fix)


def check_channels(env: Environment) -> list[Check]:
    """Each `notify:` channel and whether it looks reachable (no message is sent:
    `rk notify test` sends one); a channel config.yaml cannot use fails."""
    from rk.channels.notify import reachable
    from rk.store.config import load_channels

    channels, problems = load_channels(env.environ)
    out = [Check("notify", Level.FAIL, p, "fix config.yaml's notify: list") for p in problems]
    for channel in channels:
        ok, detail = reachable(channel, env.environ)
        level = Level.OK if ok else Level.WARN
        out.append(Check(f"notify {channel.label}", level, detail, "rk notify test"))
    return out


def _lines(checks: list[Check], width: int | None) -> list[str]:
    """One line a check (`level  name: detail  → fix`); on a terminal too narrow for it,
    broken between words, the fix on its own line under the detail."""
    out = []
    for c in checks:
        head = f"{c.level:<4}  {c.name}: {c.detail}"
        fix = f"→ {c.fix}" if c.fix and c.level != Level.OK else ""
        if width is None or len(head) + 2 + len(fix) <= width or not fix:
            out += wrapped(f"{head}  {fix}" if fix else head, width, 6)
        else:
            out += wrapped(head, width, 6) + wrapped(" " * 6 + fix, width, 8)
    return out


def cmd_doctor(ctx: typer.Context, as_json: JsonOpt = False, server: ServerOpt = None) -> None:
    """Check that rk can fire: PATH, hooks (and whether each agent CLI loads them), MCP
    registrations, agent CLI versions, hooks seen, screens rk can read, the ticker, tmux,
    TMUX_TMPDIR, the unit, the notify: channels and (in tmux) the status line.

    Reads everything: the agents' hook settings (node imports rk's OpenCode plugin), each
    agent CLI's version, the entries files and logs, live tmux (each live server's panes
    and their screens, `tmux -V`), the ticker's files and the systemd unit. A stopped
    server is never started.

    Example: rk doctor
    """
    from rk.store.config import known_servers

    env = environment(ctx, server, as_json)
    slugs = [env.server] if env.server_flag else known_servers(env.state_dir())
    servers = live_panes(env, slugs)
    checks = [check_path(env), *check_hooks(env), *check_mcp(env), *check_versions(env), *check_panes(servers)]
    checks += [*check_screens(servers), *check_entries(env), check_ticker(env), check_tmux(env)]
    checks.append(check_tmpdir(env))
    unit = check_unit(env)
    if unit is not None:
        checks.append(unit)
    checks += check_channels(env)
    line = check_statusline(env)
    if line is not None:
        checks.append(line)
    env.result([asdict(c) for c in checks], _lines(checks, terminal_width(env.stdout, env.environ, False)))
    if any(c.level == Level.FAIL for c in checks):
        raise typer.Exit(ExitStatus.ERROR)
