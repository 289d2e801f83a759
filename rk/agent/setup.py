"""`rk agent setup [claude|codex|gemini|opencode|tmux] [--dry-run] [--yes] [--uninstall] [--mcp]`.

`tmux` (named only, never by default) puts rk's status segment,
`#(rk status --format tmux)`, at the end of tmux's `status-right`: an rk-marked
block at the end of the tmux config file (`rk.core.channels.tmuxconf`: it appends to the
user's value, once, and widens `status-right-length`), in the file that has it
already, else the last one the running server loaded, else the last of tmux's
default list that exists, else ~/.tmux.conf; the segment names `rk` when the
server's PATH finds this same script, else its absolute path. The running
server rk works against (-L, else $TMUX's, else the default one; when live)
gets the same commands at once. `--uninstall` removes the block and takes the
segment out of the running server's `status-right`; a segment the user wrote
is left alone. Same consent, diff, symlink and mode rules as below.

With `--mcp`, the same consent and rules apply to registering `rk mcp` (the MCP
server) instead of the hooks: `mcpServers.rk` in `~/.claude.json` (Claude Code's
user scope) and `~/.gemini/settings.json`, `mcp.servers.rk` in
`$XDG_CONFIG_HOME/opencode/opencode.json` (OpenCode 2), and an rk-marked
`[mcp_servers.rk]` block in `$CODEX_HOME/config.toml` that forwards TMUX,
TMUX_PANE and rk's own variables (Codex passes a stdio server only a short list).

Installs, in each agent CLI's own configuration, hooks that run
`rk agent hook --agent <provider> <token>` on the agent's lifecycle events:

* claude, in `~/.claude/settings.json`: SessionStart→stamp; UserPromptSubmit,
  PreToolUse, PostToolUse(Failure), ElicitationResult→active; PermissionRequest,
  Elicitation, Notification(elicitation_dialog|agent_needs_input)→waiting;
  Stop→idle; Notification(idle_prompt)→idle-notice (idle, but never over a
  limit before its reset); StopFailure→failed (limited for
  rate_limit/billing_error, else idle).
* codex, in `$CODEX_HOME/hooks.json` (`~/.codex`): SessionStart→stamp;
  UserPromptSubmit, PreModelRequest, PreToolUse, PostToolUse→active;
  PermissionRequest→waiting; PostModelRequest→failed (only when its status is
  failed); Interrupt→interrupted (idle, the turn cut short); Stop, SessionEnd→idle.
* gemini, in `~/.gemini/settings.json`: SessionStart→stamp; BeforeAgent,
  BeforeModel, BeforeTool, AfterTool→active; Notification(ToolPermission)→waiting;
  AfterAgent, SessionEnd→idle.
* opencode, the whole-file plugin `$XDG_CONFIG_HOME/opencode/plugins/rk.js`:
  session.created→stamp; session.status busy, permission.replied→active;
  permission.asked/updated→waiting; session.idle→idle, or after a
  session.error limited (a 429 or a limit), interrupted (MessageAbortedError:
  Esc Esc) or failed (any other error); interrupted too after a retry wait
  or a rejected permission that the turn did not go on from.

Every hook is the same thin wrapper around the absolute path of the `rk`
console script (hook PATH is unreliable):

    /bin/sh -c '[ -n "$TMUX_PANE" ] || exit 0; "<rk>" agent hook --agent <p> <t> 2>/dev/null || true'

Rules:
- Idempotent: in every event list of the file, rk-owned handlers (the command
  contains ` agent hook `, ` agent-hook ` or `@rk_agent_state` — our own and
  the Go run-kit's three generations) are removed, then the fresh ones are
  appended; a re-run that would not change the parsed document writes nothing
  and says so. Other hooks are never touched.
- `--uninstall` removes only rk-owned handlers and prunes the groups, event
  lists and `hooks` object that this emptied. The OpenCode plugin file is
  deleted only if rk wrote it (its first line is our header).
- A missing or empty file is an empty object; malformed JSON, or a `hooks`
  value of an unexpected shape, is an error and nothing at all is written
  (no target of the run is written when any target fails to plan).
- Files are replaced atomically with mode 0600 (through a symlink: the link's
  target is replaced, the link kept); missing directories are created 0700.
- Consent: `--dry-run` prints a unified diff and writes nothing (it wins over
  `--yes`); `--yes` writes without asking; otherwise the diff is shown and a
  `[y/N]` question asked when stdin is a terminal, and the command refuses
  (exit 2) when it is not — a silent no-op would trap scripts and agents.
- Which agents: named ones are always processed. With no name, an install
  covers the agents whose binary (`claude`, `codex`, `gemini`, `opencode`) is
  on PATH and reports the others as skipped; an uninstall covers all four
  (removing needs no binary).
- Exit codes: 0 done or nothing to do, 1 operational (unreadable or malformed
  file, no rk script found, write failure, answer "no"), 2 usage.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from rk.core.errors import ExitStatus, RkError
from rk.host.files import atomic_write

PROVIDERS = ("claude", "codex", "gemini", "opencode")
BINARIES = {"claude": "claude", "codex": "codex", "gemini": "gemini", "opencode": "opencode"}
#: A hook handler whose command contains one of these belongs to rk (any generation).
MARKERS = (" agent hook ", " agent-hook ", "@rk_agent_state")
FORBIDDEN_PATH_CHARS = "'\"$`\\"

#: (event, matcher or None, token) per JSON-configured agent.
HOOKS: dict[str, tuple[tuple[str, str | None, str], ...]] = {
    # Claude Code 2.1: PermissionRequest comes ~0.1 s after the dialog (its
    # permission_prompt Notification only 6 s later, possibly after an approval,
    # so it is not used); PostToolUse marks the turn running again after an
    # approved dialog; StopFailure replaces Stop when an API error ends the turn.
    # Esc and a denied dialog fire nothing: the screen catches them. The
    # idle_prompt Notification comes ~60 s after any turn, a failed one too:
    # `idle-notice` ends a turn left `active` but keeps a limit until its reset.
    "claude": (
        ("SessionStart", None, "stamp"),
        ("UserPromptSubmit", None, "active"),
        ("PreToolUse", None, "active"),
        ("PostToolUse", None, "active"),
        ("PostToolUseFailure", None, "active"),
        ("PermissionRequest", None, "waiting"),
        ("Elicitation", None, "waiting"),
        ("ElicitationResult", None, "active"),
        ("Notification", "elicitation_dialog|agent_needs_input", "waiting"),
        ("Notification", "idle_prompt", "idle-notice"),
        ("Stop", None, "idle"),
        ("StopFailure", None, "failed"),
    ),
    # Codex 0.171: an error turn fires no Stop, only PostModelRequest with
    # status "failed" (each retry has its own Pre/PostModelRequest, so a retry
    # marks it active again); Esc and a denied dialog fire Interrupt.
    "codex": (
        ("SessionStart", None, "stamp"),
        ("UserPromptSubmit", None, "active"),
        ("PreModelRequest", None, "active"),
        ("PreToolUse", None, "active"),
        ("PostToolUse", None, "active"),
        ("PermissionRequest", None, "waiting"),
        ("PostModelRequest", None, "failed"),
        ("Interrupt", None, "interrupted"),
        ("Stop", None, "idle"),
        ("SessionEnd", None, "idle"),
    ),
    # Gemini CLI 0.61: AfterAgent ends every turn (errors and Esc included; no
    # payload says which); a quota dialog fires nothing: the screen catches it.
    "gemini": (
        ("SessionStart", None, "stamp"),
        ("BeforeAgent", None, "active"),
        ("BeforeModel", None, "active"),
        ("BeforeTool", None, "active"),
        ("AfterTool", None, "active"),
        ("Notification", "ToolPermission", "waiting"),
        ("AfterAgent", None, "idle"),
        ("SessionEnd", None, "idle"),
    ),
}

#: Extra keys of each hook handler, per agent: Gemini draws a running hook's
#: name on screen, and without one it draws the whole command (which wraps and
#: leaves garbage at narrow widths).
HANDLER_EXTRA: dict[str, dict[str, str]] = {"gemini": {"name": "rk"}}

OPENCODE_HEADER = (
    "// rk agent hook plugin: written by `rk agent setup opencode`, removed by `--uninstall`; edits are overwritten."
)

AFTER_INSTALL = {
    "claude": "restart running Claude Code sessions to load the hooks",
    "codex": (
        "open codex, run /hooks and trust the rk entries (they stay inactive until trusted); restart running sessions"
    ),
    "gemini": "restart running Gemini CLI sessions to load the hooks",
    "opencode": "restart running OpenCode sessions to load the plugin",
}


class SetupError(RkError):
    """An operational failure; the message is one line for the user."""


class UsageError(RkError, status=ExitStatus.USAGE):
    """A usage mistake (exit 2)."""


# -- paths --------------------------------------------------------------------


def _home(env) -> Path:
    home = env.get("HOME")
    return Path(home) if home else Path(os.path.expanduser("~"))


def config_path(agent: str, env) -> Path:
    """The file `rk agent setup <agent>` edits."""
    if agent == "claude":
        return _home(env) / ".claude" / "settings.json"
    if agent == "codex":
        base = env.get("CODEX_HOME")
        return (Path(base) if base else _home(env) / ".codex") / "hooks.json"
    if agent == "gemini":
        return _home(env) / ".gemini" / "settings.json"
    if agent == "opencode":
        base = env.get("XDG_CONFIG_HOME")
        return (Path(base) if base else _home(env) / ".config") / "opencode" / "plugins" / "rk.js"
    raise UsageError(f"unknown agent {agent!r} (use {', '.join(PROVIDERS)})")


def _is_rk_script(path: str) -> bool:
    """A console script that runs this package (pip/pipx wrappers import rk.__main__)."""
    try:
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            return False
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return b"rk.__main__" in head or b"rk.cli" in head


def check_rk_path(path: str) -> str:
    if not os.path.isabs(path):
        raise SetupError(f"rk path {path!r} is not absolute")
    bad = sorted({c for c in path if c in FORBIDDEN_PATH_CHARS or not c.isprintable()})
    if bad:
        raise SetupError(
            f"rk path {path!r} contains {' '.join(repr(c) for c in bad)}, "
            "which a hook command cannot carry; install rk under a plainer path"
        )
    return path


def find_rk(argv0: str | None = None, executable: str | None = None, env=None) -> str:
    """The absolute path of the installed `rk` console script, as hooks should call it.

    Tried in order: `argv0` (when rk was started through the script; the path
    as invoked, so a stable symlink such as ~/.local/bin/rk is kept), the `rk`
    beside the running interpreter (the venv that has this rk), then `rk` on
    PATH. Each candidate must be a script that runs this package, so another
    tool named rk (e.g. the Go run-kit) is never picked by accident."""
    env = os.environ if env is None else env
    argv0 = sys.argv[0] if argv0 is None else argv0
    executable = sys.executable if executable is None else executable
    candidates: list[str] = []
    if argv0 and os.path.basename(argv0) == "rk":
        candidates.append(os.path.abspath(argv0))
    if executable:
        candidates.append(os.path.join(os.path.dirname(os.path.abspath(executable)), "rk"))
    on_path = shutil.which("rk", path=env.get("PATH"))
    if on_path:
        candidates.append(os.path.abspath(on_path))
    for candidate in candidates:
        if _is_rk_script(candidate):
            return check_rk_path(candidate)
    raise SetupError(
        "cannot find the installed `rk` script (looked beside the Python interpreter and on PATH); "
        "install rk with pip or pipx first"
    )


def wrapper_command(rk: str, provider: str, token: str) -> str:
    return (
        f'/bin/sh -c \'[ -n "$TMUX_PANE" ] || exit 0; "{rk}" agent hook --agent {provider} {token}'
        f" 2>/dev/null || true'"
    )


def is_rk_command(command: object) -> bool:
    return isinstance(command, str) and any(m in command for m in MARKERS)


# -- JSON configurations --------------------------------------------------------


def load_json(path: Path, data: bytes | None) -> dict:
    if data is None or not data.strip():
        return {}
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise SetupError(f"{path}: not valid JSON ({exc}); fix or move it — nothing was written") from None
    if not isinstance(doc, dict):
        raise SetupError(f"{path}: the top level is not a JSON object — nothing was written")
    return doc


def dump_json(doc: dict) -> bytes:
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def strip_rk_hooks(doc: dict, path: Path | str = "settings") -> tuple[dict, int]:
    """A copy of `doc` without rk-owned handlers; groups, event lists and the
    `hooks` object that this empties are pruned. (doc, handlers removed)."""
    if "hooks" not in doc:
        return dict(doc), 0
    hooks = doc["hooks"]
    if not isinstance(hooks, dict):
        raise SetupError(f'{path}: "hooks" is not an object — nothing was written')
    removed = 0
    new_hooks: dict = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            raise SetupError(f'{path}: "hooks".{event!r} is not a list — nothing was written')
        kept: list = []
        removed_here = 0
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                handlers = [h for h in group["hooks"] if not (isinstance(h, dict) and is_rk_command(h.get("command")))]
                n = len(group["hooks"]) - len(handlers)
                if n:
                    removed_here += n
                    if not handlers:
                        continue
                    group = {**group, "hooks": handlers}
            kept.append(group)
        removed += removed_here
        if removed_here and not kept:
            continue
        new_hooks[event] = kept
    out = dict(doc)
    if removed and not new_hooks:
        del out["hooks"]
    else:
        out["hooks"] = new_hooks
    return out, removed


def install_hooks(doc: dict, agent: str, rk: str, path: Path | str = "settings") -> dict:
    """`doc` with rk's hooks for `agent` in place of any earlier rk hooks."""
    out, _ = strip_rk_hooks(doc, path)
    hooks = dict(out.get("hooks") or {})
    for event, matcher, token in HOOKS[agent]:
        group: dict = {}
        if matcher is not None:
            group["matcher"] = matcher
        group["hooks"] = [
            {"type": "command", "command": wrapper_command(rk, agent, token), **HANDLER_EXTRA.get(agent, {})}
        ]
        hooks[event] = [*hooks.get(event, []), group]
    out["hooks"] = hooks
    return out


# -- OpenCode plugin ------------------------------------------------------------


def opencode_plugin(rk: str) -> str:
    return OPENCODE_HEADER + "\n" + _OPENCODE_BODY.replace("__RK__", json.dumps(rk))


_OPENCODE_BODY = """\
// Runs `rk agent hook --agent opencode <token>` on session events so rk sees
// the pane's agent state. Does nothing outside tmux; child sessions (subagents,
// which carry a parentID) are ignored so they never overwrite the root's state.
import { spawn } from "node:child_process";

const RK = __RK__;
let queue = Promise.resolve();

function hook(token, sessionID) {
  if (!process.env.TMUX_PANE) return;
  queue = queue.then(() => new Promise((resolve) => {
    try {
      const child = spawn(RK, ["agent", "hook", "--agent", "opencode", token], {
        stdio: ["pipe", "ignore", "ignore"],
      });
      child.on("error", () => resolve());
      child.on("close", () => resolve());
      child.stdin.on("error", () => {});
      child.stdin.end(sessionID ? JSON.stringify({ sessionID }) : "");
    } catch {
      resolve();
    }
  }));
}

// How the turn that the next session.idle ends did end (OpenCode 1.x sends
// session.idle after every turn, errors included, and twice after an error):
// a session.error that was a usage or rate limit (an APIError with status 429,
// or a limit/quota message) is `limited`, an abort (Esc Esc) `interrupted`, any
// other error `failed`; so is an assistant message that completed with an error
// (Esc Esc before the model answered sends no session.error); a retry wait that
// ends with no busy in between (Esc Esc while waiting to retry: no error at all)
// and a rejected permission (the loop stops) are `interrupted`. The next busy
// forgets it.
function errorEnd(error) {
  const data = (error && error.data) || {};
  if (error && error.name === "MessageAbortedError") return "interrupted";
  if (error && error.name === "APIError" &&
      (data.statusCode === 429 || /rate.?limit|quota|usage limit/i.test(String(data.message || "")))) return "limited";
  return "failed";
}

export const RkAgentState = async () => {
  const children = new Set();
  const ends = new Map();
  return {
    event: async ({ event }) => {
      const p = (event && event.properties) || {};
      const sid = p.sessionID;
      switch (event && event.type) {
        case "session.created": {
          const info = p.info || {};
          if (info.parentID) { children.add(info.id); return; }
          hook("stamp", info.id);
          return;
        }
        case "session.status": {
          const type = !children.has(sid) && p.status && p.status.type;
          if (type === "busy") { ends.delete(sid); hook("active", sid); }
          else if (type === "retry") ends.set(sid, "interrupted");
          return;
        }
        case "session.error":
          if (!children.has(sid)) ends.set(sid, errorEnd(p.error));
          return;
        case "message.updated": {  // an abort before the model answered has no session.error
          const info = p.info || {};
          if (info.role !== "assistant" || !info.error || children.has(sid) || ends.has(sid)) return;
          ends.set(sid, errorEnd(info.error));
          return;
        }
        case "session.idle":
          if (!children.has(sid)) hook(ends.get(sid) || "idle", sid);
          return;
        case "permission.updated":
        case "permission.asked":
          if (!children.has(sid)) hook("waiting", sid);
          return;
        case "permission.replied":
          if (children.has(sid)) return;
          if (p.reply === "reject") ends.set(sid, "interrupted");
          hook("active", sid);
          return;
      }
    },
  };
};
"""


def is_rk_plugin(data: bytes) -> bool:
    first = data.split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    return first.startswith("// rk agent hook plugin")


# -- the MCP server (`--mcp`) -------------------------------------------------------

#: The name rk's server is registered under in every CLI's config.
MCP_NAME = "rk"
#: The first line of the block rk writes into Codex's config.toml (TOML has no object to own).
CODEX_MCP_HEADER = "# rk: the MCP server, written by `rk agent setup codex --mcp`; removed by `--uninstall --mcp`"

AFTER_MCP = {
    "claude": "restart running Claude Code sessions; `claude mcp list` shows rk",
    "codex": "restart running Codex sessions; `codex mcp list` shows rk",
    "gemini": "restart running Gemini CLI sessions; /mcp shows rk",
    "opencode": "restart running OpenCode sessions; `opencode mcp list` shows rk",
}


def mcp_config_path(agent: str, env) -> Path:
    """The file `rk agent setup <agent> --mcp` edits: each CLI's user-wide MCP list."""
    if agent == "claude":
        return _home(env) / ".claude.json"  # `claude mcp add --scope user` writes its top-level mcpServers
    if agent == "codex":
        base = env.get("CODEX_HOME")
        return (Path(base) if base else _home(env) / ".codex") / "config.toml"
    if agent == "gemini":
        return _home(env) / ".gemini" / "settings.json"
    if agent == "opencode":
        base = env.get("XDG_CONFIG_HOME")
        return (Path(base) if base else _home(env) / ".config") / "opencode" / "opencode.json"
    raise UsageError(f"unknown agent {agent!r} (use {', '.join(PROVIDERS)})")


def mcp_server_entry(agent: str, rk: str) -> dict:
    """rk's server as the CLI's JSON config spells a stdio server (the caller's TMUX and
    TMUX_PANE reach it through the environment the CLI starts it with)."""
    if agent == "opencode":
        return {"type": "local", "command": [rk, "mcp"], "enabled": True}
    if agent == "claude":
        return {"type": "stdio", "command": rk, "args": ["mcp"], "env": {}}
    return {"command": rk, "args": ["mcp"]}


def _mcp_holder(agent: str, doc: dict, path: Path, create: bool) -> dict | None:
    """The object that maps server names to servers (`mcpServers`; OpenCode 2's `mcp.servers`)."""
    keys = ("mcp", "servers") if agent == "opencode" else ("mcpServers",)
    node = doc
    for key in keys:
        if key not in node:
            if not create:
                return None
            node[key] = {}
        node = node[key]
        if not isinstance(node, dict):
            raise SetupError(f'{path}: "{".".join(keys)}" is not an object — nothing was written')
    return node


#: Codex hands a stdio server only a short list of variables (HOME, PATH, …); these are
#: forwarded too: the caller's pane and server, and where rk keeps its state and settings.
CODEX_MCP_ENV = (
    "TMUX",
    "TMUX_PANE",
    "TMUX_TMPDIR",
    "RK_STATE_DIR",
    "RK_CONFIG",
    "XDG_STATE_HOME",
    "XDG_CONFIG_HOME",
    "TZ",
)


def codex_mcp_block(rk: str) -> str:
    return (
        f"{CODEX_MCP_HEADER}\n[mcp_servers.{MCP_NAME}]\ncommand = {json.dumps(rk)}\n"
        f'args = ["mcp"]\nenv_vars = {json.dumps(list(CODEX_MCP_ENV))}\n'
    )


def strip_codex_block(text: str) -> tuple[str, bool]:
    """`text` without rk's block (its header line up to the next table or the end)."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    removed = False
    skipping = False
    for line in lines:
        if line.rstrip("\n") == CODEX_MCP_HEADER:
            skipping = removed = True
            continue
        stripped = line.strip()
        if skipping and stripped.startswith("[") and not stripped.startswith(f"[mcp_servers.{MCP_NAME}]"):
            skipping = False
        if not skipping:
            out.append(line)
    result = "".join(out)
    while removed and result.endswith("\n\n"):
        result = result[:-1]
    return result, removed


def _plan_codex_mcp(path: Path, old: bytes | None, rk: str | None, uninstall: bool) -> Plan:
    import tomllib

    try:
        text = (old or b"").decode("utf-8")
        doc = tomllib.loads(text)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SetupError(f"{path}: not valid TOML ({exc}); fix or move it — nothing was written") from None
    rest, ours = strip_codex_block(text)
    servers = doc.get("mcp_servers")
    if not ours and isinstance(servers, dict) and MCP_NAME in servers:
        raise SetupError(
            f"{path}: [mcp_servers.{MCP_NAME}] was not written by rk; remove it first — nothing was written"
        )
    if uninstall:
        if not ours:
            return Plan("codex", path, old, old, f"codex: no rk MCP server in {path}")
        return Plan("codex", path, old, rest.encode("utf-8"), f"codex: removed the rk MCP server from {path}")
    assert rk is not None
    new = ((rest.rstrip("\n") + "\n\n") if rest.strip() else "") + codex_mcp_block(rk)
    if old is not None and new.encode("utf-8") == old:
        return Plan("codex", path, old, old, f"codex: MCP server already up to date in {path}")
    return Plan(
        "codex", path, old, new.encode("utf-8"), f"codex: registered the rk MCP server in {path}", [AFTER_MCP["codex"]]
    )


def plan_mcp(agent: str, env, rk: str | None, uninstall: bool) -> Plan:
    """Register (or remove) `rk mcp` in one CLI's config; other servers are never touched."""
    path = mcp_config_path(agent, env)
    old = _read(path)
    if agent == "codex":
        return _plan_codex_mcp(path, old, rk, uninstall)
    doc = load_json(path, old)
    if uninstall:
        holder = _mcp_holder(agent, doc, path, create=False)
        if holder is None or MCP_NAME not in holder:
            return Plan(agent, path, old, old, f"{agent}: no rk MCP server in {path}")
        del holder[MCP_NAME]
        return Plan(agent, path, old, dump_json(doc), f"{agent}: removed the rk MCP server from {path}")
    assert rk is not None
    before = json.loads(json.dumps(doc))
    holder = _mcp_holder(agent, doc, path, create=True)
    assert holder is not None
    holder[MCP_NAME] = mcp_server_entry(agent, rk)
    if old is not None and doc == before:
        return Plan(agent, path, old, old, f"{agent}: MCP server already up to date in {path}")
    return Plan(
        agent, path, old, dump_json(doc), f"{agent}: registered the rk MCP server in {path}", [AFTER_MCP[agent]]
    )


def mcp_registered(agent: str, env) -> bool | None:
    """Whether `rk mcp` is registered for `agent` (None: its config cannot be read)."""
    path = mcp_config_path(agent, env)
    try:
        data = _read(path)
        if agent == "codex":
            return strip_codex_block((data or b"").decode("utf-8"))[1]
        holder = _mcp_holder(agent, load_json(path, data), path, create=False)
    except (SetupError, UnicodeDecodeError):
        return None
    return holder is not None and isinstance(holder.get(MCP_NAME), dict)


# -- tmux's status line (`rk agent setup tmux`) -------------------------------------

TMUX = "tmux"
#: What `rk agent setup` can be named: the agent CLIs, and tmux for the status segment.
TARGETS = (*PROVIDERS, TMUX)


@dataclass
class LiveTmux:
    """What the running tmux server says: the status line, its PATH, the files it loaded."""

    socket: str
    status_right: str
    length: int
    path: str  #: the server's global PATH (what `#()` commands run with), "" when it has none
    loaded: list[str]  #: `#{config_files}`, in load order


def live_tmux(socket: str | None, env) -> LiveTmux | None:
    """The server at `socket` when one listens there (a dead socket starts nothing)."""
    from rk.tmux.server import Server, TmuxError, socket_is_live

    if not socket or not socket_is_live(socket):
        return None
    server = Server(socket_path=socket, env=env)
    try:
        right = server.run("show-options", "-gv", "status-right", timeout=2.0).rstrip("\n")
        length = server.run("show-options", "-gv", "status-right-length", timeout=2.0).strip()
        loaded = server.run("display-message", "-p", "#{config_files}", timeout=2.0).strip()
    except TmuxError as exc:
        raise SetupError(f"tmux server {socket}: {exc}") from None
    try:
        path = server.run("show-environment", "-g", "PATH", timeout=2.0).strip().partition("=")[2]
    except TmuxError:  # no PATH in its environment: `#()` finds nothing by name
        path = ""
    files = [f for f in loaded.split(",") if f]
    return LiveTmux(socket, right, int(length) if length.isdigit() else 0, path, files)


def tmux_config_path(env, loaded: list[str]) -> Path:
    """The file rk's block goes into: the one that has it already; else the last file
    the running server loaded (a regular file, not under /etc); else the last of tmux's
    own list that exists (~/.tmux.conf, $XDG_CONFIG_HOME/tmux/tmux.conf,
    ~/.config/tmux/tmux.conf: tmux 3.1+ reads each one there is, in that order);
    else ~/.tmux.conf, which every tmux reads."""
    from rk.core.channels.tmuxconf import strip_block

    home = _home(env)
    xdg = env.get("XDG_CONFIG_HOME")
    defaults = [home / ".tmux.conf", *([Path(xdg) / "tmux" / "tmux.conf"] if xdg else [])]
    defaults.append(home / ".config" / "tmux" / "tmux.conf")
    served = [Path(f) for f in loaded if os.path.isabs(f) and not f.startswith("/etc/") and os.path.isfile(f)]
    candidates = list(dict.fromkeys([*served, *defaults]))
    for path in candidates:
        data = _read(path)
        if data is not None and strip_block(data.decode("utf-8", "replace"))[1]:
            return path
    if served:
        return served[-1]
    existing = [p for p in defaults if p.exists()]
    return existing[-1] if existing else defaults[0]


def tmux_rk(rk: str, path: str) -> str:
    """How the segment names rk: `rk` when tmux's PATH finds this same script, else
    the script's absolute path."""
    found = shutil.which("rk", path=path) if path else None
    if found and os.path.realpath(found) == os.path.realpath(rk):
        return "rk"
    return rk


def plan_tmux(env, rk: str | None, uninstall: bool, socket: str | None) -> Plan:
    """rk's block in the tmux config (`rk.core.channels.tmuxconf`), and the same commands for
    the running server at `socket` when its status line does not show the segment yet
    (or, for an uninstall of rk's block, the segment taken out of its `status-right`)."""
    from rk.core.channels import tmuxconf

    live = live_tmux(socket, env)
    path = tmux_config_path(env, live.loaded if live else [])
    old = _read(path)
    try:
        text = (old or b"").decode("utf-8")
    except UnicodeDecodeError:
        raise SetupError(f"{path}: not UTF-8 text; fix or move it — nothing was written") from None
    rest, ours = tmuxconf.strip_block(text)
    server = live.socket if live else ""
    if uninstall:
        if not ours:
            why = "was not written by rk; left as is" if tmuxconf.user_segment(text) else "has no rk status segment"
            return Plan(TMUX, path, old, old, f"tmux: {path} {why}")
        live_cmds = []
        if live and tmuxconf.shows_segment(live.status_right):
            live_cmds = [["set-option", "-g", "status-right", tmuxconf.without_segment(live.status_right)]]
        notes = [] if live else ["a running tmux shows the segment until it restarts"]
        summary = f"tmux: removed rk's status segment from {path}"
        return Plan(TMUX, path, old, rest.encode("utf-8"), summary, notes, live_cmds, server)
    assert rk is not None
    name = tmux_rk(rk, live.path if live else env.get("PATH", ""))
    if not tmuxconf.usable_path(name):
        raise SetupError(
            f"rk path {name!r} has a character tmux's status line cannot carry (a space, #, %…); "
            "put rk on PATH or install it under a plainer path"
        )
    if tmuxconf.user_segment(text) and not ours:
        new, summary = old, f"tmux: {path} already shows rk (a line not written by rk)"
    else:
        new = tmuxconf.install(text, name).encode("utf-8")
        summary = f"tmux: {path} already shows rk" if new == old else f"tmux: added rk's status segment to {path}"
    live_cmds = []
    if live and (not tmuxconf.shows_segment(live.status_right) or live.length < tmuxconf.MIN_LENGTH):
        live_cmds = tmuxconf.commands(name)
    if live_cmds:
        notes = [f"the running tmux server ({server}) shows it now"]
    elif live or new == old:
        notes = []
    else:
        notes = [f"a tmux started from now on shows it; in a running one: tmux source-file {path}"]
    return Plan(TMUX, path, old, new, summary, notes, live_cmds, server)


# -- planning ---------------------------------------------------------------------


@dataclass
class Plan:
    agent: str
    path: Path
    old: bytes | None  #: current content, None if the file does not exist
    new: bytes | None  #: content to write, None to delete the file
    summary: str = ""
    notes: list[str] = field(default_factory=list)
    #: tmux commands for the running server at `server` (a socket path), run after the write
    live: list[list[str]] = field(default_factory=list)
    server: str = ""

    @property
    def changed(self) -> bool:
        return self.old != self.new or bool(self.live)

    def diff(self) -> str:
        text = self._file_diff()
        if self.live:
            import shlex

            text += f"# then, on the running tmux server {self.server}:\n"
            text += "".join(f"#   tmux {shlex.join(argv)}\n" for argv in self.live)
        return text

    def _file_diff(self) -> str:
        old = (self.old or b"").decode("utf-8", "replace").splitlines(keepends=True)
        new = (self.new or b"").decode("utf-8", "replace").splitlines(keepends=True)
        text = "".join(
            difflib.unified_diff(
                old,
                new,
                fromfile=str(self.path) if self.old is not None else "/dev/null",
                tofile=str(self.path) if self.new is not None else "/dev/null",
            )
        )
        if text and not text.endswith("\n"):
            text += "\n"
        return text


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise SetupError(f"{path} is a directory") from None
    except OSError as exc:
        raise SetupError(f"cannot read {path}: {exc.strerror or exc}") from None


def plan(agent: str, env, rk: str | None, uninstall: bool) -> Plan:
    path = config_path(agent, env)
    old = _read(path)
    if agent == "opencode":
        return _plan_opencode(path, old, rk, uninstall)
    doc = load_json(path, old)
    if uninstall:
        new_doc, removed = strip_rk_hooks(doc, path)
        if not removed:
            return Plan(agent, path, old, old, f"{agent}: no rk hooks in {path}")
        return Plan(agent, path, old, dump_json(new_doc), f"{agent}: removed {removed} rk hook(s) from {path}")
    assert rk is not None
    new_doc = install_hooks(doc, agent, rk, path)
    if old is not None and new_doc == doc:
        return Plan(agent, path, old, old, f"{agent}: hooks already up to date in {path}")
    return Plan(
        agent,
        path,
        old,
        dump_json(new_doc),
        f"{agent}: installed {len(HOOKS[agent])} hooks in {path}",
        [AFTER_INSTALL[agent]],
    )


def _plan_opencode(path: Path, old: bytes | None, rk: str | None, uninstall: bool) -> Plan:
    ours = old is not None and is_rk_plugin(old)
    if uninstall:
        if old is None:
            return Plan("opencode", path, None, None, f"opencode: no rk plugin at {path}")
        if not ours:
            return Plan("opencode", path, old, old, f"opencode: {path} was not written by rk; left as is")
        return Plan("opencode", path, old, None, f"opencode: removed {path}")
    if old is not None and not ours:
        raise SetupError(f"{path} exists and was not written by rk; move it away — nothing was written")
    assert rk is not None
    new = opencode_plugin(rk).encode("utf-8")
    if new == old:
        return Plan("opencode", path, old, old, f"opencode: plugin already up to date at {path}")
    return Plan("opencode", path, old, new, f"opencode: installed plugin {path}", [AFTER_INSTALL["opencode"]])


def apply(p: Plan, env=None) -> None:
    """Write (or delete) one planned file, then send the running tmux server its commands."""
    if p.old != p.new:
        _write(p)
    if p.live:
        from rk.tmux.server import Server, TmuxError, chain

        try:
            Server(socket_path=p.server, env=env).run(*chain(*p.live), timeout=5.0)
        except TmuxError as exc:
            raise SetupError(f"{p.path} written, but the running tmux server {p.server}: {exc}") from None


def _write(p: Plan) -> None:
    target = Path(os.path.realpath(p.path))  # keep a dotfiles symlink, replace its target
    try:
        if p.new is None:
            if p.old is not None:
                target.unlink()
            return
        if not target.parent.is_dir():
            os.makedirs(target.parent, mode=0o700, exist_ok=True)
        atomic_write(target, p.new, 0o600)
    except OSError as exc:
        raise SetupError(f"cannot write {p.path}: {exc.strerror or exc}") from None


# -- the command -------------------------------------------------------------------


def _isatty(stream) -> bool:
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def run_setup(
    agents=(),
    *,
    dry_run: bool = False,
    yes: bool = False,
    uninstall: bool = False,
    mcp: bool = False,
    env=None,
    stdin=None,
    stdout=None,
    stderr=None,
    argv0: str | None = None,
    executable: str | None = None,
    tmux_socket: str | None = None,
) -> int:
    """`rk agent setup`; returns the exit code (0 ok, 1 operational, 2 usage).
    `tmux_socket`: the server `tmux` also sets the status line of, when it is live."""
    env = os.environ if env is None else env
    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    stderr = sys.stderr if stderr is None else stderr

    def fail(message: str, code: int) -> int:
        print(f"rk agent setup: {message}", file=stderr)
        return code

    names: list[str] = []
    for agent in agents or ():
        if agent not in TARGETS:
            return fail(f"unknown agent {agent!r} (use {', '.join(TARGETS)})", 2)
        if agent not in names:
            names.append(agent)
    if mcp and TMUX in names:
        return fail("--mcp registers rk's MCP server with agent CLIs; tmux has none", 2)
    skipped: list[str] = []
    if not names:
        if uninstall:
            names = list(PROVIDERS)
        else:
            for agent in PROVIDERS:
                if shutil.which(BINARIES[agent], path=env.get("PATH")):
                    names.append(agent)
                else:
                    skipped.append(agent)
    for agent in skipped:
        print(
            f"{agent}: skipped ({BINARIES[agent]} is not on PATH; `rk agent setup {agent}` installs anyway)",
            file=stdout,
        )
    if not names:
        print("nothing to install: none of claude, codex, gemini, opencode is on PATH", file=stdout)
        return 0

    try:
        rk = None if uninstall else find_rk(argv0, executable, env)
        plans = [
            plan_tmux(env, rk, uninstall, tmux_socket)
            if agent == TMUX
            else (plan_mcp if mcp else plan)(agent, env, rk, uninstall)
            for agent in names
        ]
    except UsageError as exc:
        return fail(str(exc), 2)
    except SetupError as exc:
        return fail(str(exc), 1)

    changes = [p for p in plans if p.changed]
    if not changes:
        for p in plans:
            print(p.summary, file=stdout)
        print("nothing to change", file=stdout)
        return 0

    if dry_run:
        for p in plans:
            if p.changed:
                stdout.write(p.diff())
            else:
                print(p.summary, file=stdout)
        print("dry run: nothing written", file=stdout)
        return 0

    if not yes:
        if not _isatty(stdin):
            return fail("not a terminal: pass --yes to write, or --dry-run to see the changes", 2)
        for p in changes:
            stdout.write(p.diff())
        files = sum(p.old != p.new for p in changes)
        servers = " and set the running tmux server" if any(p.live for p in changes) else ""
        stdout.write(f"Write {files} file(s){servers}? [y/N] " if files else "Set the running tmux server? [y/N] ")
        stdout.flush()
        try:
            answer = stdin.readline()
        except (OSError, ValueError):
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            return fail("aborted: nothing written", 1)

    try:
        for p in changes:
            apply(p, env)
    except SetupError as exc:
        return fail(str(exc), 1)
    for p in plans:
        print(p.summary, file=stdout)
    for p in changes:
        for note in p.notes:
            print(f"{p.agent}: {note}", file=stdout)
    return 0
