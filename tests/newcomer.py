"""A newcomer at a terminal: the README's Quick start typed line by line into a shell
in an 80×24 tmux pane, in a fresh HOME with no systemd user bus, from a copy of this
checkout. Shared by tests/test_quick_start.py (a stand-in `claude`) and the real-agent
suite (the real Claude Code).

Each line is typed as a user pastes it (comment included) and waited for by the
shell's own prompt: PROMPT_COMMAND appends the exit status of every command line to
a file, so a line is done when that file grows, and its status is the new line.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))

from conftest import wait_for  # noqa: E402
from mutants import copy_checkout  # noqa: E402

#: an interactive shell reading the user's ~/.bashrc, but not a login shell (tmux's default):
#: a distribution's /etc/profile and /etc/bash.bashrc would reset PATH and PS1
SHELL = "bash --rcfile ~/.bashrc"
QUESTION = re.compile(r"\[y/N\]\s*$", re.IGNORECASE | re.MULTILINE)


def readme_blocks(section: str) -> list[list[str]]:
    """The ```sh blocks of the README's `## <section>`, each as its command lines."""
    text = (REPO / "README.md").read_text()
    start = text.index(f"\n## {section}\n")
    end = text.find("\n## ", start + 1)
    body = text[start : end if end != -1 else len(text)]
    blocks = re.findall(r"```sh\n(.*?)```", body, re.DOTALL)
    return [_commands(block) for block in blocks]


def _commands(block: str) -> list[str]:
    """A shell block's command lines: no blank lines, no comment lines."""
    return [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def readme_recipes() -> dict[str, dict[str, list[str]]]:
    """The README's recipes: for each `### title` under `## Recipes`, its code blocks by
    language (`sh`: the command lines, comments and blank lines left out; `yaml`: the text)."""
    text = (REPO / "README.md").read_text()
    start = text.index("\n## Recipes\n")
    body = text[start : text.index("\n## ", start + 1)]
    recipes: dict[str, dict[str, list[str]]] = {}
    for part in body.split("\n### ")[1:]:
        title, rest = part.split("\n", 1)
        blocks: dict[str, list[str]] = {}
        for lang, code in re.findall(r"```(\w+)\n(.*?)```", rest, re.DOTALL):
            if lang == "sh":
                blocks.setdefault("sh", []).extend(_commands(code))
            else:
                blocks.setdefault(lang, []).append(code)
        recipes[title.strip()] = blocks
    return recipes


@dataclass
class Newcomer:
    """One shell in one pane of a private tmux server at 80×24."""

    root: Path
    sockdir: Path
    agent_bin: Path  # a directory holding the `claude` the user runs
    extra_env: dict[str, str] = field(default_factory=dict)
    #: called with (home, checkout) before the shell starts: an agent's own first-run state
    prepare: Callable[[Path, Path], None] | None = None
    name: str = ""
    statuses: Path = field(init=False)
    home: Path = field(init=False)
    checkout: Path = field(init=False)

    def __post_init__(self) -> None:
        self.name = self.name or f"rk-newcomer-{os.getpid()}"
        self.home = self.root / "home"
        self.home.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.checkout = self.root / "rk"
        copy_checkout(self.checkout)  # the files a clone has (tracked, plus new ones not ignored)
        self.statuses = self.root / "statuses"
        self.statuses.touch()
        if self.prepare is not None:
            self.prepare(self.home, self.checkout)
        subprocess.run(
            self.tmux_argv("-f", "/dev/null", "new-session", "-d", "-s", "work", "-x", "80", "-y", "24", SHELL),
            env=self.env(),
            cwd=self.checkout,
            check=True,
        )
        for option in (("default-size", "80x24"), ("default-command", SHELL)):
            subprocess.run(self.tmux_argv("set", "-g", *option), env=self.env(), check=True)
        self.wait(lambda: self.count() >= 1, 20, "the shell's first prompt")

    def env(self) -> dict[str, str]:
        """A login as a newcomer has it: a fresh HOME, the system's PATH plus where
        `claude` lives, no user bus, no XDG runtime directory, no rk variables."""
        cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        return {
            "HOME": str(self.home),
            "PATH": f"{self.agent_bin}:/usr/local/bin:/usr/bin:/bin",
            "SHELL": "/bin/bash",
            "TERM": "xterm-256color",
            "LANG": "C.UTF-8",
            "TZ": "UTC",
            "TMUX_TMPDIR": str(self.sockdir),
            "PIP_CACHE_DIR": str(Path(cache) / "pip"),  # pip's download cache, never rk's state
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PS1": "$ ",
            "PROMPT_COMMAND": f"echo $? >> {self.statuses}",
            **self.extra_env,
        }

    def tmux_argv(self, *args: str) -> list[str]:
        return ["tmux", "-L", self.name, *args]

    def tmux(self, *args: str) -> str:
        return subprocess.run(self.tmux_argv(*args), env=self.env(), capture_output=True, text=True, check=True).stdout

    def screen(self, target: str = "work") -> str:
        return self.tmux("capture-pane", "-p", "-t", target)

    def pane(self, target: str = "work") -> str:
        return self.tmux("display-message", "-p", "-t", target, "#{pane_id}").strip()

    def count(self) -> int:
        return len(self.statuses.read_text().splitlines())

    def wait(self, predicate: Callable[[], object], timeout: float, what: str) -> object:
        """`wait_for`, naming the screen when it times out."""
        try:
            return wait_for(predicate, timeout, 0.2, what)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; screen:\n{self.screen()}") from None

    def type_line(self, line: str, target: str = "work") -> None:
        self.tmux("send-keys", "-t", target, "-l", line)
        self.tmux("send-keys", "-t", target, "Enter")

    def run_line(self, line: str, timeout: float = 300, target: str = "work") -> int:
        """Type `line`, answer a y/N question once as the user would (y), and return
        the command's exit status when the shell's prompt is back."""
        before = self.count()
        self.type_line(line, target)
        answered = False
        deadline = time.monotonic() + timeout
        while self.count() <= before:
            if time.monotonic() > deadline:
                raise AssertionError(f"{line!r} did not finish in {timeout:.0f}s; screen:\n{self.screen(target)}")
            if not answered and QUESTION.search(self.screen(target)):
                self.type_line("y", target)
                answered = True
            time.sleep(0.2)
        return int(self.statuses.read_text().splitlines()[before])

    def rk(self, *args: str) -> subprocess.CompletedProcess[str]:
        """The installed rk, run by the test (not typed), pointed at this server."""
        return subprocess.run(
            [str(self.home / ".local" / "bin" / "rk"), "-L", self.name, *args],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=60,
        )

    def log_lines(self) -> list[dict[str, object]]:
        out = self.rk("cron", "log", "--json", "-n", "100")
        if out.returncode != 0:
            return []
        result = json.loads(out.stdout)["result"]
        return list(result if isinstance(result, list) else result.get("lines", []))

    def close(self) -> None:
        if (self.home / ".local" / "bin" / "rk").exists():
            self.rk("cron", "ticker", "stop")
        subprocess.run(self.tmux_argv("kill-server"), env=self.env(), capture_output=True)
