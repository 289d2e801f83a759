"""The operator's working directory: `<state dir>/operator`, rk's own (a private 0700
directory), where `rk operator` starts its agent. Started in `~`, Claude Code showed its
trust screen on every start (it does not keep a "trust" answered for the home
directory), with "No, exit" as the default answer.

What each CLI needs to start there without a question:

* claude: `projects."<dir>".hasTrustDialogAccepted` in `~/.claude.json`, which
  `rk agent setup claude --mcp` writes beside rk's MCP server (`--uninstall --mcp`
  removes it); without it, Claude asks once, and keeps a "yes".
* gemini (folder trust is on by default): `GEMINI_CLI_TRUST_WORKSPACE=true` in the
  operator's window, for that process alone.
* codex asks only in a git repository, and opencode never: nothing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rk.agent.setup.plan import JsonDoc, SetupError, load_json, read_config
from rk.core.environ import state_dir

#: The key of Claude Code's trust answer in a `projects` entry of `~/.claude.json`.
CLAUDE_TRUST = "hasTrustDialogAccepted"
#: What the operator's window gets, by program, to start trusted.
TRUST_ENV: dict[str, dict[str, str]] = {"gemini": {"GEMINI_CLI_TRUST_WORKSPACE": "true"}}


def operator_dir(env: Mapping[str, str]) -> Path:
    """Where `rk operator` starts its agent, as Claude keys it: the state directory's
    symbolic links resolved (the directory itself, a link, is refused where it is made)."""
    return Path(os.path.realpath(state_dir(env))) / "operator"


def _projects(doc: JsonDoc, create: bool) -> Any:
    projects = doc.get("projects")
    if projects is None and create:
        projects = doc["projects"] = {}
    return projects if isinstance(projects, dict) else None


def trust_claude(doc: JsonDoc, env: Mapping[str, str]) -> bool:
    """Mark the operator's directory trusted in `~/.claude.json`'s `doc` (in place);
    whether that changed it. A `projects` of another shape is left alone."""
    projects = _projects(doc, create=True)
    if projects is None:
        return False
    entry = projects.setdefault(str(operator_dir(env)), {})
    if not isinstance(entry, dict) or entry.get(CLAUDE_TRUST) is True:
        return False
    entry[CLAUDE_TRUST] = True
    return True


def untrust_claude(doc: JsonDoc, env: Mapping[str, str]) -> bool:
    """Take the trust answer for the operator's directory out of `doc` (in place), and
    the entry and `projects` when that emptied them; whether it was there."""
    projects = _projects(doc, create=False)
    key = str(operator_dir(env))
    entry = projects.get(key) if projects is not None else None
    if not isinstance(entry, dict) or CLAUDE_TRUST not in entry:
        return False
    del entry[CLAUDE_TRUST]
    if not entry:
        del projects[key]
        if not projects:
            del doc["projects"]
    return True


def claude_trusts(env: Mapping[str, str]) -> bool:
    """Whether Claude Code starts in the operator's directory without asking (it, or a
    directory above it, trusted in `~/.claude.json`); an unreadable file: no."""
    from rk.agent.setup.claude import mcp_config_path

    path = mcp_config_path(env)
    try:
        projects = _projects(load_json(path, read_config(path)), create=False) or {}
    except SetupError:
        return False
    here = operator_dir(env)
    return any(
        isinstance(projects.get(str(d)), dict) and projects[str(d)].get(CLAUDE_TRUST) is True
        for d in (here, *here.parents)
    )


def trust_note(program: str, env: Mapping[str, str]) -> str:
    """What the user sees first in the operator's window, when it is a question ("": none)."""
    if program != "claude" or claude_trusts(env):
        return ""
    return (
        f"Claude Code asks once whether to trust {operator_dir(env)} (answer 1); "
        "`rk agent setup claude --mcp` marks it trusted"
    )
