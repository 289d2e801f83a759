"""OpenCode: rk's hooks as a whole plugin file rk owns,
`$XDG_CONFIG_HOME/opencode/plugins/rk.js` (`~/.config`), whose first line marks it
rk's (only then is it replaced or deleted); its MCP server in `mcp.servers` of
`$XDG_CONFIG_HOME/opencode/opencode.json` (OpenCode 2).

The plugin: session.created→stamp; session.status busy, permission.replied→active;
permission.asked/updated→waiting; session.idle→idle, or after a session.error
limited (a 429 or a limit), interrupted (MessageAbortedError: Esc Esc) or failed
(any other error); interrupted too after a retry wait or a rejected permission
that the turn did not go on from.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from rk.agent.setup.agent_cli import AgentCli
from rk.agent.setup.plan import JsonDoc, Plan, SetupError
from rk.core.environ import home

OPENCODE_HEADER = (
    "// rk agent hook plugin: written by `rk agent setup opencode`, removed by `--uninstall`; edits are overwritten."
)

AFTER_INSTALL = "restart running OpenCode sessions to load the plugin"


def _config_dir(env: Mapping[str, str]) -> Path:
    base = env.get("XDG_CONFIG_HOME")
    return (Path(base) if base else Path(home(env)) / ".config") / "opencode"


def config_path(env: Mapping[str, str]) -> Path:
    return _config_dir(env) / "plugins" / "rk.js"


def mcp_config_path(env: Mapping[str, str]) -> Path:
    return _config_dir(env) / "opencode.json"


def mcp_server(rk: str) -> JsonDoc:
    return {"type": "local", "command": [rk, "mcp"], "enabled": True}


CLI = AgentCli(
    name="opencode",
    binary="opencode",
    config_path=config_path,
    mcp_config_path=mcp_config_path,
    after_install=AFTER_INSTALL,
    after_mcp="restart running OpenCode sessions; `opencode mcp list` shows rk",
    mcp_keys=("mcp", "servers"),
    mcp_server=mcp_server,
)


def opencode_plugin(rk: str) -> str:
    """The plugin's text, calling the `rk` script at its absolute path."""
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
    """Whether a plugin file is rk's: its first line is our header."""
    first = data.split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    return first.startswith("// rk agent hook plugin")


def plan_plugin(path: Path, old: bytes | None, rk: str | None, uninstall: bool) -> Plan:
    """Write (or delete) rk's plugin at `path` (`old`: its bytes); a file rk did not write is never touched."""
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
    return Plan("opencode", path, old, new, f"opencode: installed plugin {path}", [AFTER_INSTALL])
