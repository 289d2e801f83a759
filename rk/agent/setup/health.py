"""Does each agent CLI load rk's hooks? What `rk doctor` checks beyond "are they the
hooks this rk writes": a file the CLI cannot parse, a hook whose rk script is missing or
not executable, a setting that turns hooks off, Codex hooks not yet trusted, an OpenCode
plugin that node cannot import or whose default export lacks `id`/`server`/`setup`, and
OpenCode 2 beside a plugin it cannot use. Each is one problem with its fix.

`LOAD_CHECKS` has one checker per CLI; a CLI rk learns joins the table with its own
(a function of the environment and a version reader, returning its problems; [] when
its file is absent or loads)."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rk.agent.setup import opencode
from rk.agent.setup.agents import config_path
from rk.agent.setup.hooks import rk_handlers

#: The rk script a hook handler of this generation runs (`hooks.wrapper_command`).
_WRAPPED_RK = re.compile(r'"([^"]+)" agent hook ')
#: The rk script rk's OpenCode plugin runs (its `const RK = "...";` line).
_PLUGIN_RK = re.compile(r'^const RK = (".*");$', re.MULTILINE)
#: Seconds node may take to import rk's OpenCode plugin.
NODE_TIMEOUT = 10.0
#: Claude Code's managed settings (Linux, macOS), which can turn off every hook of the user's.
MANAGED_CLAUDE = (
    Path("/etc/claude-code/managed-settings.json"),
    Path("/Library/Application Support/ClaudeCode/managed-settings.json"),
)
#: Names an OpenCode 2 binary goes by beside (or instead of) OpenCode 1's `opencode`.
OPENCODE_BINARIES = ("opencode2", "opencode")


@dataclass(frozen=True)
class LoadProblem:
    """Why an agent CLI does not run rk's hooks (`fatal`), or may not (a warning)."""

    detail: str
    fix: str
    fatal: bool = True
    #: what it is about, after the CLI's name in doctor's line ("claude hooks")
    what: str = "hooks"


#: The version of an agent CLI's binary by name ("" when unreadable, None when not installed).
VersionOf = Callable[[str], str | None]


@dataclass(frozen=True)
class Probe:
    """What a checker looks with: the environment, a version reader, and this rk's script
    (a hook that runs another rk is named as such)."""

    env: Mapping[str, str]
    version_of: VersionOf
    rk: str | None = None


Checker = Callable[[Probe], list[LoadProblem]]


def _script_problems(scripts: set[str], where: Path, agent: str, rk: str | None) -> list[LoadProblem]:
    """The rk scripts a CLI's hooks run that it cannot run."""
    out = []
    for script in sorted(scripts):
        which = f"another rk ({script})" if rk and script != rk else script
        if not os.path.exists(script):
            why = "which does not exist"
        elif not os.path.isfile(script) or not os.access(script, os.X_OK):
            why = "which is not an executable file"
        else:
            continue
        out.append(LoadProblem(f"{where} runs {which}, {why}: no hook reaches rk", f"rk agent setup {agent}"))
    return out


def _json_settings(agent: str, path: Path, comments: bool = False) -> tuple[dict[str, Any] | None, list[LoadProblem]]:
    """The JSON object of a CLI's hook settings at `path` (None when absent or unreadable),
    or why the CLI cannot read it. `comments`: the CLI also reads JSON with comments, which
    rk cannot, so a parse error there is only a warning."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, []
    except (OSError, UnicodeDecodeError) as exc:
        return None, [LoadProblem(f"cannot read {path}: {exc}", f"fix {path}")]
    if not text.strip():
        return {}, []
    try:
        doc = json.loads(text)
    except ValueError as exc:
        if comments:
            why = f"{path} is not plain JSON ({exc}): {agent} loads none of its hooks unless it reads comments there"
            return None, [LoadProblem(why, f"fix {path}", fatal=False)]
        return None, [LoadProblem(f"{path} is not valid JSON ({exc}): {agent} loads none of its hooks", f"fix {path}")]
    if not isinstance(doc, dict):
        return None, [LoadProblem(f"{path} is not a JSON object: {agent} loads none of its hooks", f"fix {path}")]
    return doc, []


def _handler_scripts(doc: dict[str, Any]) -> set[str]:
    """The rk scripts rk's handlers in `doc` run."""
    return {m.group(1) for _, _, h in rk_handlers(doc) if (m := _WRAPPED_RK.search(json.loads(h)["command"]))}


def _json_cli(agent: str, probe: Probe, comments: bool = False) -> tuple[dict[str, Any] | None, list[LoadProblem]]:
    """A JSON-configured CLI's settings and the problems common to them all."""
    path = config_path(agent, probe.env)
    doc, problems = _json_settings(agent, path, comments)
    if doc is None:
        return None, problems
    return doc, _script_problems(_handler_scripts(doc), path, agent, probe.rk)


def claude_problems(probe: Probe) -> list[LoadProblem]:
    """Claude Code: settings.json parses, rk's script runs, and no `disableAllHooks`
    (in the user's settings or the managed ones) turns every hook off."""
    doc, problems = _json_cli("claude", probe)
    if doc is None or not rk_handlers(doc):
        return problems
    path = config_path("claude", probe.env)
    if doc.get("disableAllHooks") is True:
        problems.append(
            LoadProblem(f"{path} sets disableAllHooks: Claude Code runs no hook", f"remove disableAllHooks from {path}")
        )
    for managed in MANAGED_CLAUDE:
        try:
            policy = json.loads(managed.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        switches = policy if isinstance(policy, dict) else {}
        if switches.get("disableAllHooks") is True or switches.get("allowManagedHooksOnly") is True:
            problems.append(
                LoadProblem(
                    f"{managed} lets Claude Code run no hook of yours (disableAllHooks or allowManagedHooksOnly)",
                    "ask whoever manages this machine's Claude Code settings",
                )
            )
    return problems


def gemini_problems(probe: Probe) -> list[LoadProblem]:
    """Gemini CLI: settings.json parses (it allows comments), rk's script runs, hooks are
    on (`hooksConfig.enabled`) and rk's (named "rk") not in `hooksConfig.disabled`."""
    from rk.agent.setup.gemini import HANDLER_EXTRA

    doc, problems = _json_cli("gemini", probe, comments=True)
    if doc is None or not rk_handlers(doc):
        return problems
    path = config_path("gemini", probe.env)
    switches = doc.get("hooksConfig")
    if isinstance(switches, dict):
        if switches.get("enabled") is False:
            problems.append(
                LoadProblem(
                    f"{path} sets hooksConfig.enabled to false: Gemini CLI runs no hook", f"set it to true in {path}"
                )
            )
        disabled = switches.get("disabled")
        if isinstance(disabled, list) and HANDLER_EXTRA["name"] in disabled:
            name = HANDLER_EXTRA["name"]
            problems.append(
                LoadProblem(
                    f"{path} lists {name!r} in hooksConfig.disabled: rk's hooks never run", f"remove it from {path}"
                )
            )
    return problems


def _snake(event: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def _codex_trust(doc: dict[str, Any], path: Path, state: dict[str, Any]) -> tuple[int, int, int]:
    """(rk's handlers in hooks.json `doc`, how many config.toml's `hooks.state` trusts, disables)."""
    names = (str(path), os.path.realpath(path))
    ours = trusted = disabled = 0
    hooks = doc.get("hooks")
    for event, groups in hooks.items() if isinstance(hooks, dict) else ():
        for g, group in enumerate(groups if isinstance(groups, list) else ()):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for h, handler in enumerate(handlers if isinstance(handlers, list) else ()):
                if not (isinstance(handler, dict) and _WRAPPED_RK.search(str(handler.get("command")))):
                    continue
                ours += 1
                keys = [f"{name}:{_snake(event)}:{g}:{h}" for name in names]
                entry: dict[str, Any] = next((state[k] for k in keys if isinstance(state.get(k), dict)), {})
                trusted += bool(entry.get("trusted_hash"))
                disabled += entry.get("enabled") is False
    return ours, trusted, disabled


def codex_problems(probe: Probe) -> list[LoadProblem]:
    """Codex: hooks.json parses, rk's script runs, the `codex_hooks` feature is on, and
    config.toml trusts rk's hooks (Codex runs a hook only once trusted: a
    `hooks.state."<hooks.json>:<event>:<group>:<handler>"` entry; rk cannot check its hash)."""
    from rk.agent.setup.codex import mcp_config_path

    doc, problems = _json_cli("codex", probe)
    if doc is None or not rk_handlers(doc):
        return problems
    path, config = config_path("codex", probe.env), mcp_config_path(probe.env)
    try:
        settings = tomllib.loads(config.read_text(encoding="utf-8"))
    except FileNotFoundError:
        settings = {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return [*problems, LoadProblem(f"{config} is not valid TOML ({exc}): Codex does not start", f"fix {config}")]
    features = settings.get("features")
    if isinstance(features, dict) and features.get("codex_hooks") is False:
        problems.append(LoadProblem(f"{config} turns codex_hooks off: Codex runs no hook", f"remove it from {config}"))
    hooks = settings.get("hooks")
    state = hooks.get("state") if isinstance(hooks, dict) else None
    state = state if isinstance(state, dict) else {}
    ours, trusted, disabled = _codex_trust(doc, path, state)
    if disabled:
        problems.append(
            LoadProblem(f"{config} disables {disabled} of rk's {ours} hooks", "open codex, run /hooks and enable them")
        )
    if trusted < ours:
        problems.append(
            LoadProblem(
                f"{config} trusts {trusted} of rk's {ours} hooks: Codex runs a hook only once trusted",
                "open codex, run /hooks and trust the rk entries",
                fatal=False,
                what="hook trust",
            )
        )
    return problems


def opencode2(env: Mapping[str, str], version_of: VersionOf) -> str | None:
    """The OpenCode 2 binary on PATH (`opencode2`, or an `opencode` of version 2 or later), if any."""
    for binary in OPENCODE_BINARIES:
        found = shutil.which(binary, path=env.get("PATH"))
        if found is None:
            continue
        if binary == "opencode2":
            return found
        version = version_of(binary) or ""
        major = version.split(".", 1)[0]
        if major.isdigit() and int(major) >= 2:
            return f"{found} {version}"
    return None


#: Imports rk's plugin (its text in base64, as a data: URL, which is always an ES module
#: whatever package.json is near) and says what its default export lacks for either
#: plugin API ("" nothing).
_NODE_CHECK = r"""
let why = "";
try {
  const d = (await import("data:text/javascript;base64," + process.argv[1])).default;
  why = !d || typeof d !== "object" ? "has no default export object"
    : typeof d.id !== "string" ? "has a default export without an id"
    : typeof d.server !== "function" ? "has a default export without server() (OpenCode 1)"
    : typeof d.setup !== "function" ? "has a default export without setup() (OpenCode 2)"
    : "tui" in d ? "has a default export with tui, which OpenCode 1 refuses beside server()" : "";
} catch (e) {
  why = "does not import: " + String((e && e.message) || e).split("\n")[0];
}
console.log(JSON.stringify({ why }));
"""


def node_verdict(text: str, env: Mapping[str, str]) -> str | None:
    """What node says rk's plugin `text` lacks ("" nothing); None when node cannot tell."""
    node = shutil.which("node", path=env.get("PATH"))
    if node is None:
        return None
    encoded = base64.b64encode(text.encode("utf-8")).decode("ascii")
    try:
        done = subprocess.run(
            [node, "--input-type=module", "-e", _NODE_CHECK, encoded],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=NODE_TIMEOUT,
            env=dict(env),
        )
        return str(json.loads(done.stdout.strip().splitlines()[-1])["why"])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError, KeyError, TypeError):
        return None


def opencode_problems(probe: Probe, agent: str = "opencode") -> list[LoadProblem]:
    """OpenCode (and Kilo Code, its fork, which loads the same plugin): rk's plugin imports
    under node with a default export both plugin APIs load, its rk script runs, and an
    OpenCode 2 beside it can use it."""
    path = config_path(agent, probe.env)
    try:
        data = path.read_bytes()
    except OSError:
        return []
    if not opencode.is_rk_plugin(data):
        return []
    text = data.decode("utf-8", "replace")
    fix = f"rk agent setup {agent}"
    v2 = opencode2(probe.env, probe.version_of) if agent == "opencode" else None
    if v2 and "export default" not in text:
        return [LoadProblem(f"{path} is rk's OpenCode 1 plugin; OpenCode 2 ({v2}) ignores it: no states reach rk", fix)]
    verdict = node_verdict(text, probe.env)
    if verdict:
        name = "Kilo Code" if agent == "kilo" else "OpenCode"
        return [LoadProblem(f"{path} {verdict}: {name} does not load it", fix)]
    m = _PLUGIN_RK.search(text)
    try:
        scripts = {json.loads(m.group(1))} if m else set()
    except ValueError:
        scripts = set()
    problems = _script_problems(scripts, path, agent, probe.rk)
    if v2 and not problems:
        problems.append(
            LoadProblem(
                f"OpenCode 2 ({v2}) runs plugins in a shared service unless it runs standalone in the pane:"
                " rk's plugin reports states only from the pane's own process; otherwise rk reads the screen",
                "run OpenCode 2 standalone in its pane, or rely on the screen",
                fatal=False,
                what="plugin under OpenCode 2",
            )
        )
    return problems


def copilot_problems(probe: Probe) -> list[LoadProblem]:
    """GitHub Copilot CLI: rk's hooks file parses, its rk script runs, and the user's
    config (`$COPILOT_HOME/config.json`) does not set `disableAllHooks`."""
    from rk.agent.setup.copilot import copilot_home

    doc, problems = _json_cli("copilot", probe)
    if doc is None or not rk_handlers(doc):
        return problems
    config = copilot_home(probe.env) / "config.json"
    try:
        settings = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        settings = None
    if isinstance(settings, dict) and settings.get("disableAllHooks") is True:
        problems.append(
            LoadProblem(
                f"{config} sets disableAllHooks: Copilot CLI runs no hook", f"remove disableAllHooks from {config}"
            )
        )
    return problems


def qwen_problems(probe: Probe) -> list[LoadProblem]:
    """Qwen Code: settings.json parses, rk's script runs, and no `disableAllHooks`."""
    doc, problems = _json_cli("qwen", probe)
    if doc is None or not rk_handlers(doc):
        return problems
    switched_off = doc.get("disableAllHooks") is True
    if switched_off:
        path = config_path("qwen", probe.env)
        problems.append(
            LoadProblem(f"{path} sets disableAllHooks: Qwen Code runs no hook", f"remove disableAllHooks from {path}")
        )
    return problems


def vibe_problems(probe: Probe) -> list[LoadProblem]:
    """Mistral Vibe: hooks.toml parses (Vibe loads none of its hooks otherwise) and the rk
    script rk's hooks there run is there to run."""
    from rk.agent.setup.hooks import is_rk_command

    path = config_path("vibe", probe.env)
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        return [LoadProblem(f"cannot read {path}: {exc}", f"fix {path}")]
    except tomllib.TOMLDecodeError as exc:
        return [LoadProblem(f"{path} is not valid TOML ({exc}): Mistral Vibe loads none of its hooks", f"fix {path}")]
    hooks = doc.get("hooks")
    commands = [h.get("command") for h in hooks if isinstance(h, dict)] if isinstance(hooks, list) else []
    scripts = {m.group(1) for c in commands if is_rk_command(c) and (m := _WRAPPED_RK.search(str(c)))}
    return _script_problems(scripts, path, "vibe", probe.rk)


#: One checker per agent CLI rk sets up (`rk.agent.setup.agents.CLIS`).
LOAD_CHECKS: dict[str, Checker] = {
    "claude": claude_problems,
    "codex": codex_problems,
    "copilot": copilot_problems,
    "gemini": gemini_problems,
    "kilo": lambda probe: opencode_problems(probe, "kilo"),
    "opencode": opencode_problems,
    "qwen": qwen_problems,
    "vibe": vibe_problems,
}


def load_problems(agent: str, probe: Probe) -> list[LoadProblem]:
    """Why `agent` does not (or may not) run rk's hooks; [] for a CLI with no checker."""
    checker = LOAD_CHECKS.get(agent)
    return checker(probe) if checker else []
