"""OpenCode: rk's hooks as a whole plugin file rk owns,
`$XDG_CONFIG_HOME/opencode/plugins/rk.js` (`~/.config`), whose first line marks it
rk's (only then is it replaced or deleted); its MCP server in `mcp.servers` of
`$XDG_CONFIG_HOME/opencode/opencode.json` (OpenCode 2).

The plugin is one default export `{id: "rk", server, setup}` that both plugin APIs load
(written from `@opencode-ai/plugin` 1.18.33's types and OpenCode 2's source): 1.x reads
`server`, OpenCode 2 reads `setup` and ignores the rest.

`server` (1.x): session.created→stamp; session.status busy, permission.replied→active;
permission.asked/updated→waiting; session.idle→idle, or after a session.error
limited (a 429 or a limit), interrupted (MessageAbortedError: Esc Esc) or failed
(any other error); interrupted too after a retry wait or a rejected permission
that the turn did not go on from.

`setup` (2): returns at once without `ctx.event` (1.18.33 calls it too, with a
registration-only context); else subscribes: session.execution.started→active,
succeeded→idle, failed→limited (429, rate limit, quota), interrupted (aborted, a
rejected permission) or failed, interrupted→interrupted (reason user) or idle;
permission.asked, form.created→waiting and their replies→active while the turn runs.
OpenCode 2 may run plugins in one shared service for every pane, so `setup` reports
only from a process of the pane (TMUX_PANE, a controlling terminal, not `serve`):
never a state on the wrong pane; otherwise rk reads the screen.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path

from rk.agent.setup.agent_cli import AgentCli
from rk.agent.setup.plan import JsonDoc, Plan, SetupError
from rk.core.environ import home

OPENCODE_HEADER = (
    "// rk agent hook plugin: written by `rk agent setup opencode`, removed by `--uninstall`; edits are overwritten."
)

AFTER_INSTALL = "restart running OpenCode sessions to load the plugin"


def config_dir(env: Mapping[str, str], name: str = "opencode") -> Path:
    """`$XDG_CONFIG_HOME/<name>` (`~/.config`): OpenCode's, or a fork's (Kilo Code's `kilo`)."""
    base = env.get("XDG_CONFIG_HOME")
    return (Path(base) if base else Path(home(env)) / ".config") / name


def config_path(env: Mapping[str, str]) -> Path:
    return config_dir(env) / "plugins" / "rk.js"


def mcp_config_path(env: Mapping[str, str]) -> Path:
    return config_dir(env) / "opencode.json"


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
// the pane's agent state. One default export for both plugin APIs: OpenCode 1.x
// calls `server` (its events carry `properties`), OpenCode 2 calls `setup` (its
// events carry `data`). Child sessions (subagents, which carry a parentID) are
// ignored so they never overwrite the root's state.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";

const RK = __RK__;
let queue = Promise.resolve();

function send(token, sessionID) {
  return new Promise((resolve) => {
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
  });
}

// OpenCode 1.x runs its plugins in the pane's own process: TMUX_PANE is the pane.
function hook(token, sessionID) {
  if (!process.env.TMUX_PANE) return;
  queue = queue.then(() => send(token, sessionID));
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

async function server() {
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
}

// OpenCode 2 may run plugins in one shared service (`opencode serve`) that the
// TUIs of every pane attach to; its TMUX_PANE, if any, is the pane that started
// it, so a state sent from there could land on the wrong pane. The OpenCode 2
// side therefore reports only from a process of the pane itself: TMUX_PANE set,
// not started as a service, and with a controlling terminal (a detached service
// has none). When unsure it reports nothing: rk then reads the pane's screen.
function hasTerminal() {
  try {
    const stat = readFileSync("/proc/self/stat", "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[4]) !== 0;  // tty_nr
  } catch {}
  return new Promise((resolve) => {
    try {
      const ps = spawn("ps", ["-o", "tty=", "-p", String(process.pid)], { stdio: ["ignore", "pipe", "ignore"] });
      let out = "";
      ps.stdout.on("data", (chunk) => { out += chunk; });
      ps.on("error", () => resolve(false));
      ps.on("close", (code) => resolve(code === 0 && !/^\\s*(\\?+)?\\s*$/.test(out)));
    } catch {
      resolve(false);
    }
  });
}

async function ownsPane() {
  if (!process.env.TMUX_PANE) return false;
  if (process.argv.slice(1).some((arg) => arg === "serve" || arg === "--service")) return false;
  return hasTerminal();
}

// OpenCode 2's turn ends: session.execution.failed carries {type, message, status?}.
function failedEnd(error) {
  const e = error || {};
  const type = String(e.type || "");
  if (e.status === 429 || type === "provider.rate-limit" || type === "provider.quota" ||
      /rate.?limit|quota|usage limit/i.test(String(e.message || ""))) return "limited";
  if (type === "aborted" || type === "permission.rejected") return "interrupted";
  return "failed";
}

function setup(ctx) {
  // OpenCode 1.x also calls setup, with a registration-only context (no event
  // domain): `server` reports there, so this must not report twice.
  const events = ctx && ctx.event;
  if (!events || typeof events.subscribe !== "function") return;
  const owned = ownsPane();
  const report = (token, sid) => {
    queue = queue.then(async () => { if (await owned) await send(token, sid); });
  };
  const children = new Set();
  const running = new Set();
  const on = (event) => {
    const d = (event && event.data) || {};
    const info = d.info || {};
    const sid = d.sessionID;
    if (children.has(sid)) return;
    switch (event && event.type) {
      case "session.created":
        if (d.parentID || info.parentID) children.add(sid || info.id);
        else report("stamp", sid || info.id);
        return;
      case "session.execution.started":
        running.add(sid);
        report("active", sid);
        return;
      case "session.execution.succeeded":
        running.delete(sid);
        report("idle", sid);
        return;
      case "session.execution.failed":
        running.delete(sid);
        report(failedEnd(d.error), sid);
        return;
      case "session.execution.interrupted":  // "user": Esc; "shutdown" and others: not the user's
        running.delete(sid);
        report(d.reason === "user" ? "interrupted" : "idle", sid);
        return;
      case "permission.asked":
        report("waiting", sid);
        return;
      case "form.created": {  // a question or an MCP elicitation; "global" belongs to no session
        const form = d.form || {};
        const owner = form.sessionID || sid;
        if (owner && owner !== "global" && !children.has(owner)) report("waiting", owner);
        return;
      }
      case "permission.replied":
      case "form.replied":
      case "form.cancelled":
        if (running.has(sid)) report("active", sid);
        return;
    }
  };
  let stopped = false;
  let iterator;
  (async () => {
    try {
      iterator = events.subscribe()[Symbol.asyncIterator]();
      while (!stopped) {
        const next = await iterator.next();
        if (next.done || stopped) break;
        try { on(next.value); } catch {}
      }
    } catch {}
  })();  // never awaited: setup returns at once
  return () => {  // OpenCode awaits this on unload: stop, and let the hooks already queued finish
    stopped = true;
    try { if (iterator && iterator.return) Promise.resolve(iterator.return()).catch(() => {}); } catch {}
    const cap = new Promise((resolve) => { const t = setTimeout(resolve, 2000); if (t.unref) t.unref(); });
    return Promise.race([queue, cap]);
  };
}

export default { id: "rk", server, setup };
"""


def is_rk_plugin(data: bytes) -> bool:
    """Whether a plugin file is rk's: its first line is our header."""
    first = data.split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    return first.startswith("// rk agent hook plugin")


def plan_plugin(path: Path, old: bytes | None, rk: str | None, uninstall: bool) -> Plan:
    """Write (or delete) rk's plugin at `path` (`old`: its bytes); a file rk did not write is never touched."""
    return plan_plugin_file("opencode", opencode_plugin, AFTER_INSTALL, path, old, rk, uninstall)


def plan_plugin_file(
    agent: str,
    text_of: Callable[[str], str],
    after: str,
    path: Path,
    old: bytes | None,
    rk: str | None,
    uninstall: bool,
) -> Plan:
    """`agent`'s whole-file plugin (`text_of(rk)`) at `path`: written, kept, or deleted, and
    only ever when the file is rk's (its first line says so)."""
    ours = old is not None and is_rk_plugin(old)
    if uninstall:
        if old is None:
            return Plan(agent, path, None, None, f"{agent}: no rk plugin at {path}")
        if not ours:
            return Plan(agent, path, old, old, f"{agent}: {path} was not written by rk; left as is")
        return Plan(agent, path, old, None, f"{agent}: removed {path}")
    if old is not None and not ours:
        raise SetupError(f"{path} exists and was not written by rk; move it away — nothing was written")
    assert rk is not None
    new = text_of(rk).encode("utf-8")
    if new == old:
        return Plan(agent, path, old, old, f"{agent}: plugin already up to date at {path}")
    return Plan(agent, path, old, new, f"{agent}: installed plugin {path}", [after])
