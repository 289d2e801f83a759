"""Codex: rk's hooks in `$CODEX_HOME/hooks.json` (`~/.codex`); its MCP server as an
rk-marked `[mcp_servers.rk]` block in `$CODEX_HOME/config.toml` (TOML has no object
rk could own) that forwards TMUX, TMUX_PANE and rk's own variables (Codex passes a
stdio server only a short list), and approves the tools rk scopes itself
(`tools.<tool>.approval_mode = "approve"`, see `permissions`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from rk.agent.setup.agent_cli import MCP_NAME, AgentCli, Hook
from rk.agent.setup.plan import Plan, SetupError
from rk.core.channels.mcpguard import UNATTENDED
from rk.core.environ import home
from rk.core.pane.state import AgentState

# Codex 0.171: an error turn fires no Stop, only PostModelRequest with
# status "failed" (each retry has its own Pre/PostModelRequest, so a retry
# marks it active again); Esc and a denied dialog fire Interrupt.
HOOKS: tuple[Hook, ...] = (
    ("SessionStart", None, "stamp"),
    ("UserPromptSubmit", None, AgentState.ACTIVE),
    ("PreModelRequest", None, AgentState.ACTIVE),
    ("PreToolUse", None, AgentState.ACTIVE),
    ("PostToolUse", None, AgentState.ACTIVE),
    ("PermissionRequest", None, AgentState.WAITING),
    ("PostModelRequest", None, "failed"),
    ("Interrupt", None, "interrupted"),
    ("Stop", None, AgentState.IDLE),
    ("SessionEnd", None, AgentState.IDLE),
)

AFTER_MCP = "restart running Codex sessions; `codex mcp list` shows rk"
#: The first line of the block rk writes into Codex's config.toml.
CODEX_MCP_HEADER = "# rk: the MCP server, written by `rk agent setup codex --mcp`; removed by `--uninstall --mcp`"


def _codex_home(env: Mapping[str, str]) -> Path:
    base = env.get("CODEX_HOME")
    return Path(base) if base else Path(home(env)) / ".codex"


def config_path(env: Mapping[str, str]) -> Path:
    return _codex_home(env) / "hooks.json"


def mcp_config_path(env: Mapping[str, str]) -> Path:
    return _codex_home(env) / "config.toml"


CLI = AgentCli(
    name="codex",
    binary="codex",
    config_path=config_path,
    mcp_config_path=mcp_config_path,
    after_install=(
        "open codex, run /hooks and trust the rk entries (they stay inactive until trusted); restart running sessions"
    ),
    after_mcp=AFTER_MCP,
    hooks=HOOKS,
)


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


def codex_rule_lines() -> str:
    """The lines of rk's `[mcp_servers.rk]` block that let the scoped tools run unasked
    (`rk.agent.setup.permissions` says which tools, for every CLI)."""
    return "".join(f'tools.{t}.approval_mode = "approve"\n' for t in UNATTENDED["worker"])


def codex_mcp_block(rk: str) -> str:
    """rk's block: its header line, then the `[mcp_servers.rk]` table with its approvals."""
    return (
        f"{CODEX_MCP_HEADER}\n[mcp_servers.{MCP_NAME}]\ncommand = {json.dumps(rk)}\n"
        f'args = ["mcp"]\nenv_vars = {json.dumps(list(CODEX_MCP_ENV))}\n' + codex_rule_lines()
    )


def _split(text: str) -> tuple[list[str], list[str]]:
    """`text`'s lines outside rk's block, and the block's (its header line up to the
    next table or the end)."""
    out: list[str] = []
    block: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        if line.rstrip("\n") == CODEX_MCP_HEADER:
            skipping = True
            block.append(line)
            continue
        stripped = line.strip()
        if skipping and stripped.startswith("[") and not stripped.startswith(f"[mcp_servers.{MCP_NAME}]"):
            skipping = False
        (block if skipping else out).append(line)
    return out, block


def strip_codex_block(text: str) -> tuple[str, bool]:
    """`text` without rk's block (its header line up to the next table or the end)."""
    out, block = _split(text)
    removed = bool(block)
    result = "".join(out)
    while removed and result.endswith("\n\n"):
        result = result[:-1]
    return result, removed


def block_current(text: str, rk: str) -> bool:
    """Whether rk's block in `text` is the one setup writes for `rk`, wherever it sits
    (Codex appends the tables it writes, a project's trust, after it)."""
    return "".join(_split(text)[1]).strip() == codex_mcp_block(rk).strip()


def plan_mcp(path: Path, old: bytes | None, rk: str | None, uninstall: bool) -> Plan:
    """Register (or remove) `rk mcp` in config.toml (`old`: its bytes); other servers are never touched."""
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
    summary = f"codex: registered the rk MCP server in {path}, its {len(UNATTENDED['worker'])} scoped tools approved"
    return Plan("codex", path, old, new.encode("utf-8"), summary, [AFTER_MCP])


def mcp_registered(data: bytes | None) -> bool:
    """Whether the config.toml of `data` has rk's block (UnicodeDecodeError: not text)."""
    return strip_codex_block((data or b"").decode("utf-8"))[1]
