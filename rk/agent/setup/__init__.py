"""`rk agent setup [claude|codex|gemini|opencode|tmux] [--dry-run] [--yes] [--uninstall] [--mcp]`.

`tmux` (named only, never by default) puts rk's status segment,
`#(rk status --format tmux)`, at the end of tmux's `status-right` (`tmux`).

With `--mcp`, the same consent and rules apply to registering `rk mcp` (the MCP
server) instead of the hooks (`mcp`), with the allow rules that let the tools rk
scopes itself run without a dialog in every pane (`permissions`; the operator's
server tools are allowed by the flags `rk operator` launches it with), and, for
Claude Code, the operator's directory trusted (`workspace`).

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
* opencode, the whole-file plugin `$XDG_CONFIG_HOME/opencode/plugins/rk.js`,
  one default export for OpenCode 1.x (`server`) and 2 (`setup`), `opencode`:
  session.created→stamp; session.status busy, permission.replied→active;
  permission.asked/updated→waiting; session.idle→idle, or after a
  session.error limited (a 429 or a limit), interrupted (MessageAbortedError:
  Esc Esc) or failed (any other error); interrupted too after a retry wait
  or a rejected permission that the turn did not go on from. OpenCode 2:
  session.execution.* and form.* the same way, from the pane's own process only.

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

The package: one module per agent CLI (`claude`, `codex`, `gemini`, `opencode`:
its files, its hooks, its notes), one for tmux's status line (`tmux`), and the
shared parts: `agent_cli` (the record of one CLI), `agents` (the CLIs by name), `hooks` (the JSON hook lists),
`mcp`, `permissions` (the allow rules), `workspace` (the operator's directory and its trust),
`health` (whether each CLI loads rk's hooks, for `rk doctor`),
`rk_script` (the script hooks call), `plan` (a planned change, its diff,
its writing) and `command` (the command, its consent). Its names below are
what the CLI, `rk doctor` and the tests use.
"""

from __future__ import annotations

from rk.agent.setup.agents import HOOKS, PROVIDERS, config_path, mcp_config_path
from rk.agent.setup.command import TARGETS, SetupOptions, run_setup
from rk.agent.setup.hooks import hooks_state, install_hooks, is_rk_command, plan, strip_rk_hooks, wrapper_command
from rk.agent.setup.mcp import mcp_drift, mcp_registered, plan_mcp, plans_mcp
from rk.agent.setup.opencode import opencode_plugin
from rk.agent.setup.operator import operator_launch
from rk.agent.setup.plan import Plan, SetupError, UsageError
from rk.agent.setup.rk_script import find_rk
from rk.agent.setup.tmux import tmux_config_path, tmux_rk

__all__ = [
    "HOOKS",
    "PROVIDERS",
    "TARGETS",
    "Plan",
    "SetupError",
    "SetupOptions",
    "UsageError",
    "config_path",
    "find_rk",
    "hooks_state",
    "install_hooks",
    "is_rk_command",
    "mcp_config_path",
    "mcp_drift",
    "mcp_registered",
    "opencode_plugin",
    "operator_launch",
    "plan",
    "plan_mcp",
    "plans_mcp",
    "run_setup",
    "strip_rk_hooks",
    "tmux_config_path",
    "tmux_rk",
    "wrapper_command",
]
