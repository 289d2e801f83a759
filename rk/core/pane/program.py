"""Which program a pane's keyboard reaches, judged from its process tree.

tmux names a pane's foreground program by the argv[0] of the tty's foreground
group leader, and a screen may still show an agent that has exited. Neither
tells rk whether typing there reaches an agent: an npm agent shows `node`, a
wrapper script shows `bash`, `rk` itself shows `python`, and a REPL started
over an agent's last frame looks like that agent. The processes do tell: the
keyboard reaches the foreground process group of the pane's tty; an agent CLI
among that group (by its name, or the script or package an interpreter or a
launcher runs) makes the pane an agent; a shell alone at its prompt makes it a
shell; anything else is a program, named by the deepest process that is not a
launcher. rk's own process, and the launchers between it and its group's
leader, are never the pane's program: without them the pane holds what started
rk (a shell, usually).

Pure: the process table is read by `rk.host.process` and passed in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum


class PaneKind(StrEnum):
    """What a pane's keyboard reaches, which decides whether rk may type there."""

    AGENT = "agent"  #: a known agent CLI, or a program that reported a state: typed into
    SHELL = "shell"  #: a plain shell at its prompt: never typed into (it would execute the payload)
    PROGRAM = "program"  #: anything else (a REPL, a TUI): typed into only when the entry opts in


#: Plain shells: a payload typed at their prompt would be executed, so such a
#: pane never receives one (names as argv[0]'s basename, a login shell's `-` dropped).
SHELLS = frozenset(
    {
        "bash",
        "zsh",
        "fish",
        "sh",
        "dash",
        "ksh",
        "mksh",
        "oksh",
        "pdksh",
        "tcsh",
        "csh",
        "ash",
        "busybox",
        "nu",
        "xonsh",
        "elvish",
        "pwsh",
        "yash",
        "osh",
        "ysh",
        "rc",
        "es",
        "ion",
        "murex",
    }
)
#: Agent CLIs by the name of their executable (the native binaries, and the
#: names npm and pip install as commands).
AGENT_COMMANDS = frozenset(
    {
        "claude",
        "codex",
        "gemini",
        "opencode",
        "copilot",
        "kimi",
        "kimi-code",
        "agy",
        "antigravity",
        "aider",
        "goose",
        "qwen",
        "amp",
        "crush",
        "cursor-agent",
        "droid",
        "auggie",
        "kilo",
        "vibe",
    }
)
#: Packages that hold an agent CLI, as they appear in a script path or a launcher's argument.
AGENT_PACKAGES = {
    "@anthropic-ai/claude-code": "claude",
    "@openai/codex": "codex",
    "@google/gemini-cli": "gemini",
    "opencode-ai": "opencode",
    "@qwen-code/qwen-code": "qwen",
    "@github/copilot": "copilot",
    "@sourcegraph/amp": "amp",
    "@charmland/crush": "crush",
    "@augmentcode/auggie": "auggie",
    "aider-chat": "aider",
    "@kilocode/cli": "kilo",
}
#: Agent CLIs' executables under another name: Kilo Code's npm launcher (`kilo`, run by node)
#: starts its native binary as `.kilo`; Mistral Vibe's `vibe` (a Python script) execs its
#: native TUI `vibe-rs`.
AGENT_ALIASES = {".kilo": "kilo"}
AGENT_ALIASES["vibe-rs"] = "vibe"
#: Interpreters: what they run is named by their first operand (a script, or `-m module`).
INTERPRETERS = frozenset({"node", "nodejs", "bun", "deno", "python", "python3", "pypy", "pypy3", "ruby", "perl"})
#: Launchers that start another program and wait for it (or exec it): never the
#: program themselves while something runs below them.
LAUNCHERS = frozenset(
    {
        "npx",
        "npm",
        "pnpm",
        "pnpx",
        "yarn",
        "bunx",
        "uv",
        "uvx",
        "pipx",
        "poetry",
        "env",
        "nohup",
        "nice",
        "timeout",
        "stdbuf",
        "time",
        "exec",
        "tini",
        "dumb-init",
        "mise",
        "direnv",
        "sudo",
        "doas",
    }
)
#: Options that take the next argument as their value, by the family of the program.
_NODE_VALUED = frozenset({"-r", "--require", "--import", "--loader", "--experimental-loader", "--env-file", "--title"})
_EVAL = frozenset({"-e", "--eval", "-p", "--print", "-c"})  #: code on the command line: no script runs
_PYTHON_VALUED = frozenset({"-W", "-X", "-Q"})
_LAUNCHER_VALUED = frozenset(
    {
        "--with",
        "--from",
        "--python",
        "-p",
        "--package",
        "--directory",
        "--project",
        "--env-file",
        "-u",
        "--unset",
        "-C",
        "--chdir",
        "-S",
        "--split-string",
        "-n",
        "--adjustment",
        "-s",
        "--signal",
        "-k",
        "--kill-after",
        "--call",
        "--spec",
    }
)
_SHELL_VALUED = frozenset({"--rcfile", "--init-file", "-o", "+o", "-O", "+O"})
#: Subcommands a launcher or interpreter takes before the program it runs (`npm exec x`, `uv run x`).
_SUBCOMMANDS = frozenset({"exec", "x", "dlx", "run", "tool"})
#: How long a short argv is (characters) in what `rk agent list` shows.
SHORT_ARGV = 60


@dataclass(frozen=True)
class Proc:
    """One process as the kernel reports it (`/proc/<pid>/stat`, `cmdline`, `comm`, or `ps`)."""

    pid: int
    ppid: int = 0
    pgrp: int = 0
    tty: int = 0  #: device number of the controlling terminal (0: none)
    tpgid: int = 0  #: the foreground process group of that terminal
    state: str = "S"  #: the kernel's state letter (R, S, T, Z…)
    comm: str = ""  #: the kernel's name (the executable's, or a script's for a `#!` one)
    argv: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # a title a program set over its argv (node's `npm exec claude`): one word with spaces
        if len(self.argv) == 1 and " " in self.argv[0] and "/" not in self.argv[0].split(" ")[0]:
            object.__setattr__(self, "argv", tuple(self.argv[0].split()))


@dataclass(frozen=True)
class Program:
    """What a pane's keyboard reaches, and the process this was judged by."""

    kind: PaneKind
    pid: int = 0
    name: str = ""  #: the program's name (argv[0]'s basename, else comm)
    argv: str = ""  #: a short command line, as `node …/claude-code/cli.js`
    agent: str = ""  #: the agent CLI it is (`claude`, `codex`…), for an agent


def base(path: str) -> str:
    """A command's name: the last path component, a login shell's leading `-` dropped."""
    return path.rstrip("/").rpartition("/")[2].removeprefix("-")


def name_of(proc: Proc) -> str:
    """argv[0]'s basename (what was typed), else the kernel's comm."""
    return (base(proc.argv[0]) if proc.argv else "") or proc.comm


def _names(proc: Proc) -> set[str]:
    return {n for n in (name_of(proc), proc.comm) if n}


def _stem(word: str) -> str:
    """A script or package's plain name: `…/bin/codex.js` → `codex`, `x@1.2` → `x`."""
    name = base(word)
    if name.startswith("@"):
        return name
    name = name.partition("@")[0] if "@" in name[1:] else name
    for ext in (".js", ".mjs", ".cjs", ".ts", ".py", ".pyz", ".sh", ".rb", ".pl", ".exe"):
        name = name.removesuffix(ext)
    return name


def _is_interpreter(name: str) -> bool:
    return name in INTERPRETERS or (name.startswith("python") and name[6:].replace(".", "").isdigit())


def operand(proc: Proc) -> str:
    """What an interpreter or launcher runs: its first operand after its options,
    `env`'s assignments and a subcommand (`npm exec`, `uv run`); `-m module` names
    a module. "" when it runs none (a REPL, `node -e …`, `python -c …`)."""
    interpreter = any(_is_interpreter(n) for n in _names(proc))
    valued = (_NODE_VALUED | _PYTHON_VALUED) if interpreter else _LAUNCHER_VALUED
    words = proc.argv[1:]
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":
            return words[i + 1] if i + 1 < len(words) else ""
        if interpreter and word == "-m":
            return words[i + 1] if i + 1 < len(words) else ""
        if interpreter and word in _EVAL:
            return ""
        if word.startswith("-"):
            i += 2 if word in valued else 1
            continue
        if not interpreter and "=" in word and not word.startswith(("/", ".")):
            i += 1  # env's VAR=value
            continue
        if (not interpreter and word in _SUBCOMMANDS) or (interpreter and i == 0 and word == "run"):
            i += 1  # npm exec, uv run, uv tool run, deno run
            continue
        return word
    return ""


def shell_script(proc: Proc) -> str | None:
    """For a shell: the script or `-c` command it runs ("" at its prompt); None for another program."""
    if not _names(proc) & SHELLS:
        return None
    words = proc.argv[1:]
    i = 0
    while i < len(words):
        word = words[i]
        if word == "-c" or (word.startswith("-") and not word.startswith("--") and "c" in word[1:]):
            return words[i + 1] if i + 1 < len(words) else "-c"
        if word in _SHELL_VALUED:
            i += 2
            continue
        if not word.startswith(("-", "+")):
            return word
        i += 1
    return ""


def agent_of(proc: Proc) -> str:
    """The agent CLI this process is ("" when none): by its name, or, for an
    interpreter or a launcher, by the script or package it runs. A shell is
    never one by its script: what the script starts is judged by itself."""
    for name in (name_of(proc), proc.comm):
        stem = AGENT_ALIASES.get(_stem(name), _stem(name))
        if stem in AGENT_COMMANDS:
            return stem
    if not any(_is_interpreter(n) or n in LAUNCHERS for n in _names(proc)):
        return ""
    runs = operand(proc)
    if not runs:
        return ""
    for package, agent in AGENT_PACKAGES.items():
        if package in runs:
            return agent
    stem = _stem(runs)
    return stem if stem in AGENT_COMMANDS else ""


def is_launcher(proc: Proc) -> bool:
    """A process that starts the program rather than being it: a launcher, an
    interpreter or shell running a script (only while something runs below it)."""
    names = _names(proc)
    if names & LAUNCHERS:
        return True
    script = shell_script(proc)
    if script is not None:
        return bool(script)
    return any(_is_interpreter(n) for n in names) and bool(operand(proc))


def short_path(word: str) -> str:
    """A long path cut to what names it: after `node_modules`, the package (its
    scope dropped) and the file; else the last two parts."""
    if not word.startswith("/") or len(word) <= 30:
        return word
    _, sep, inside = word.rpartition("/node_modules/")
    parts = inside.split("/") if sep else word.split("/")[-2:]
    if sep and parts[0].startswith("@") and len(parts) > 2:
        parts = parts[1:]
    return "…/" + "/".join(parts)


def short_argv(proc: Proc, limit: int = SHORT_ARGV) -> str:
    """`node …/claude-code/cli.js --resume`: argv[0]'s name, long paths cut, at most `limit` characters."""
    text = " ".join(w for w in [name_of(proc), *(short_path(w) for w in proc.argv[1:])] if w)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _depth(proc: Proc, members: Mapping[int, Proc]) -> int:
    depth, seen, pid = 0, set(), proc.ppid
    while pid in members and pid not in seen:
        seen.add(pid)
        depth += 1
        pid = members[pid].ppid
    return depth


def _program(kind: PaneKind, proc: Proc, agent: str = "") -> Program:
    return Program(kind, proc.pid, name_of(proc), short_argv(proc), agent)


def _judge_group(members: Mapping[int, Proc]) -> Program | None:
    live = {pid: p for pid, p in members.items() if p.state not in ("Z", "X", "x")}
    if not live:
        return None
    ordered = sorted(live.values(), key=lambda p: (-_depth(p, live), p.pid))  # deepest first
    for proc in ordered:
        agent = agent_of(proc)
        if agent:
            return _program(PaneKind.AGENT, proc, agent)
    leaves = [p for p in ordered if not is_launcher(p)]
    if all(shell_script(p) == "" for p in leaves) and leaves:
        return _program(PaneKind.SHELL, leaves[-1])  # the shallowest: the shell at its prompt
    return _program(PaneKind.PROGRAM, (leaves or ordered)[0])


def _own_chain(own: int, table: Mapping[int, Proc], group: int) -> tuple[set[int], int]:
    """rk's own process and the launchers above it in `group` (`uv run`, `sh -c`),
    and the pid of the process that started them. An agent or another program
    above rk (a REPL that ran it) is not rk's: it stays the pane's."""
    chain: set[int] = set()
    pid = own
    while pid in table and table[pid].pgrp == group and pid not in chain:
        proc = table[pid]
        if pid != own and (agent_of(proc) or not is_launcher(proc)):
            break
        chain.add(pid)
        pid = proc.ppid
    return chain, pid


def judge(table: Mapping[int, Proc], root: int, own: Iterable[int] = ()) -> Program | None:
    """What the keyboard of the pane whose first process is `root` reaches; None
    when the table does not show (root gone, no terminal): then the caller falls
    back to the tmux command. `own`: rk's own pid(s), never the pane's program."""
    top = table.get(root)
    if top is None or top.tty == 0 or top.tpgid <= 0:
        return None
    group = top.tpgid
    members = {p.pid: p for p in table.values() if p.pgrp == group and p.tty == top.tty}
    for pid in own:
        if pid not in members:
            continue
        chain, starter = _own_chain(pid, table, group)
        members = {k: v for k, v in members.items() if k not in chain}
        if not members and starter in table and table[starter].tty == top.tty:
            # the group was rk itself: the pane holds what started it
            parent = table[starter]
            members = {p.pid: p for p in table.values() if p.pgrp == parent.pgrp and p.tty == top.tty}
            members = {k: v for k, v in members.items() if k not in chain}
    return _judge_group(members)
