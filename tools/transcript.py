#!/usr/bin/env python3
"""A golden transcript of rk as a user sees it: rerunnable, byte-for-byte.

    python tools/transcript.py --root /work/wt-base --out /tmp/golden-base.txt
    python tools/transcript.py --out /tmp/golden-new.txt        # this checkout
    cmp /tmp/golden-base.txt /tmp/golden-new.txt

It drives `python -m rk` (the CLI, never rk's modules) from the checkout `--root`
through a fixed scenario: views and mutations of every kind, ticks that really
type into scripted agents (`demo/fake_agent.py` of that checkout), and some two
dozen deliberate mistakes; and records each command's argv, exit code, stdout and
stderr, then the files the scenario left in the state directory and the panes'
screens. Two checkouts that behave the same for a user give the same file.

Isolation: a private temporary directory holds HOME, RK_STATE_DIR,
XDG_CONFIG_HOME, XDG_STATE_HOME and TMUX_TMPDIR; the environment is built from
scratch (nothing of the caller's TMUX, TMUX_PANE, RK_*, COLUMNS, colour switches
... is passed on); the agents run on a private tmux server `rk-golden-<pid>`
(under that TMUX_TMPDIR) that is killed at the end. The user's tmux server and
rk state are never touched.

Determinism: every command runs with `RK_NOW` set by the scenario (the agents'
own state reports are stamped at the scenario's start instant, T0), TZ is fixed,
PYTHONHASHSEED is 0; after every command that can make an agent work the tool
waits until every agent is back at its prompt, and no command types into two
agents at once (their state reports would race; the tool warns and exits 1 if
one does). Only what is inherently variable is normalised:
- the temporary directory (`<TMP>`) and the server's socket name (`<SERVER>`);
- the tmux server's start time (`<SERVER_START>`, as a number and as `cron show`
  prints it) and pids where rk prints them (`<pid:server>`, `<pid:%N>` for a
  pane's process, `<pid?>` for any other);
- the random 4-character entry ids (`<id1>`, `<id2>`, ... in order of creation;
  the entries file quotes an id YAML would read as a number, `id: '1234'`: shown
  unquoted), and the order of a JSON state file's `entries` map, which rk sorts
  by those ids (shown in creation order, only when that loses nothing);
- `agent await`'s wall-clock `"waited"` (`<seconds>`), and the names of lock
  files (a hash of a key holding the socket path: `<hash>.lock`).
A command whose output still differed between two runs of one checkout was
changed or dropped rather than normalised further.

Exit status: 0, or 1 when a wait timed out or a command typed into two agents
at once (the transcript is then not to be trusted); the transcript is written
either way.

Standard library only, plus `tmux` on PATH.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

#: 2027-01-15T08:00:00Z, a Friday: the scenario's start, and the stamp of every
#: state report the fake agents make themselves.
T0 = 1_800_000_000

#: Ids the scenario uses for "no such entry" (never a real id: see `_learn_ids`).
BOGUS_IDS = ("zz99", "0000")

#: Seconds to wait for the agents to settle before recording a timeout.
SETTLE_TIMEOUT = 20.0

AGENT_WORK = ("0.3", "0.3")  #: the fake agents' "work" per prompt, seconds (min, max)


def iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Golden:
    """The private world (temp dir, tmux server, panes) and the transcript."""

    def __init__(self, root: Path, python: str) -> None:
        self.root = root
        self.python = python
        self.tmp = tempfile.mkdtemp(prefix="rk-golden-")
        self.server = f"rk-golden-{os.getpid():07d}"  # fixed width: table columns do not move
        self.now = T0
        self.tz = "UTC"
        self.lines: list[str] = []
        self.ids: dict[str, str] = {}  #: real id -> <idN>
        self.pids: dict[str, str] = {}  #: pid text -> placeholder
        self.server_start = ""
        self.panes: dict[str, str] = {}  #: window name -> pane id
        self.agents: list[str] = []  #: pane ids of the fake agents
        self.manual: dict[str, str] = {}  #: pane -> the state the scenario last set by hand
        self.count = 0
        self.warnings: list[str] = []
        tmp = Path(self.tmp)
        for sub in ("home", "state", "config", "xdg-state", "tmux"):
            (tmp / sub).mkdir(mode=0o700)
        tmux_bin = shutil.which("tmux")
        if tmux_bin is None:
            raise SystemExit("transcript: tmux is not on PATH")
        path = []
        for d in (os.path.dirname(tmux_bin), "/usr/local/bin", "/usr/bin", "/bin"):
            if d not in path:
                path.append(d)
        self.base_env = {
            "PATH": ":".join(path),
            "HOME": str(tmp / "home"),
            "RK_STATE_DIR": str(tmp / "state"),
            "XDG_CONFIG_HOME": str(tmp / "config"),
            "XDG_STATE_HOME": str(tmp / "xdg-state"),
            "TMUX_TMPDIR": str(tmp / "tmux"),
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "PYTHONIOENCODING": "utf-8",
            "PYTHONHASHSEED": "0",
            # compiled modules go to the temp dir: nothing is written into the checkout
            "PYTHONPYCACHEPREFIX": str(tmp / "pycache"),
            "PYTHONPATH": str(root),
        }
        self.socket = str(tmp / "tmux" / f"tmux-{os.getuid()}" / self.server)

    # ------------------------------------------------------------------ tmux

    def tmux(self, *args: str, check: bool = True) -> str:
        env = dict(self.base_env, TZ="UTC", RK_NOW=str(T0))  # what the server (and so every pane) inherits
        proc = subprocess.run(
            ["tmux", "-L", self.server, *args], capture_output=True, text=True, env=env, cwd=self.root, timeout=30
        )
        if check and proc.returncode != 0:
            raise SystemExit(f"transcript: tmux {' '.join(args)}: {proc.stderr.strip()}")
        return proc.stdout

    def option(self, pane: str, name: str) -> str:
        return self.tmux("display-message", "-p", "-t", pane, f"#{{{name}}}", check=False).strip()

    def start(self) -> None:
        """The private server: four fake agents, `cat`, a shell; each agent started
        once the one before it has reported idle (so the journal's order is fixed)."""
        windows = [
            ("worker-a", [*self.agent_argv("worker-a", 1)]),
            ("worker-b", [*self.agent_argv("worker-b", 2)]),
            ("worker-c", [*self.agent_argv("worker-c", 3)]),
            ("operator", [*self.agent_argv("operator", 4)]),
            ("cat", ["cat"]),
            ("shell", ["bash", "--norc", "--noprofile", "-i"]),
        ]
        for i, (name, argv) in enumerate(windows):
            if i == 0:
                self.tmux(
                    "-f", "/dev/null", "new-session", "-d", "-s", "main", "-n", name,
                    "-x", "200", "-y", "50", "-c", str(self.root), "--", *argv,
                )  # fmt: skip
                self.tmux("set-option", "-g", "remain-on-exit", "off")
            else:
                self.tmux("new-window", "-d", "-t", "main:", "-n", name, "-c", str(self.root), "--", *argv)
            pane = self.tmux("display-message", "-p", "-t", f"main:{name}", "#{pane_id}").strip()
            self.panes[name] = pane
            if argv[0] == self.python:
                self.agents.append(pane)
                self.wait(lambda p=pane: self.option(p, "@rk_pane_agent_state").startswith("idle"), f"{name} idle")
            elif name == "shell":
                self.wait(lambda p=pane: self.screen(p).strip() != "", "the shell's prompt")
        self.settle()
        self.server_start = self.tmux("display-message", "-p", "#{start_time}").strip()
        self.pids[self.tmux("display-message", "-p", "#{pid}").strip()] = "<pid:server>"
        for line in self.tmux("list-panes", "-a", "-F", "#{pane_id} #{pane_pid}").splitlines():
            pane, pid = line.split()
            self.pids[pid] = f"<pid:{pane}>"

    def agent_argv(self, name: str, seed: int) -> list[str]:
        return [self.python, "demo/fake_agent.py", name, "--seed", str(seed), "--work", *AGENT_WORK]

    def stop(self) -> None:
        subprocess.run(
            ["tmux", "-L", self.server, "kill-server"],
            capture_output=True,
            env=dict(self.base_env),
            timeout=30,
        )

    def screen(self, pane: str) -> str:
        return self.tmux("capture-pane", "-p", "-t", pane, check=False)

    def wait(self, predicate, what: str, timeout: float = SETTLE_TIMEOUT) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.05)
        self.note(f"TIMEOUT waiting for {what}")
        self.warnings.append(f"timed out waiting for {what}")
        return False

    def _children(self, pid: str) -> list[str]:
        """Live (not zombie) children of `pid`, from /proc."""
        out = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path("/proc", entry, "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if fields[1] == pid and fields[0] != "Z":
                out.append(entry)
        return out

    def _agent_at_rest(self, pane: str) -> bool:
        """The fake agent in `pane` shows its prompt, has answered every prompt it
        got, and runs no `rk agent state` of its own."""
        fmt = "#{pane_pid} #{cursor_y} #{@rk_pane_agent_state}"
        info = self.tmux("display-message", "-p", "-t", pane, fmt, check=False).split()
        if len(info) < 2:
            return True  # the pane is gone
        pid, cursor_y = info[:2]
        state = info[2].split(":")[0] if len(info) > 2 else ""
        if state == "active" and self.manual.get(pane) != "active":
            return False  # its own `idle` report has not landed yet
        lines = self.screen(pane).split("\n")
        text = "\n".join(lines)
        y = int(cursor_y)
        if y >= len(lines) or not lines[y].startswith("demo>"):
            return False
        if text.count("] got: ") != text.count("] done: handled prompt #"):
            return False
        return not self._children(pid)

    def settle(self) -> None:
        """Wait until every fake agent is back at its prompt, three polls in a row."""
        good = 0
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while good < 3:
            if time.monotonic() > deadline:
                self.note("TIMEOUT waiting for the agents to settle")
                self.warnings.append(f"settle timed out after command {self.count}")
                return
            good = good + 1 if all(self._agent_at_rest(p) for p in self.agents) else 0
            time.sleep(0.05)

    # ------------------------------------------------------------ recording

    def note(self, text: str) -> None:
        self.lines.append(f"# {text}")

    def at(self, epoch: int) -> None:
        self.now = epoch

    def rk(
        self,
        *args: str,
        server: bool = True,
        env: dict[str, str] | None = None,
        now: str | None = None,
        settle: bool = False,
    ) -> None:
        """Run `python -m rk [-L SERVER] ARGS` and record it; with `settle`, wait for
        the agents to be back at their prompts first."""
        argv, e = self._command(args, server, env, now)
        log = Path(self.base_env["RK_STATE_DIR"], f"{self.server}.log")
        before = log.stat().st_size if log.exists() else 0
        t = time.monotonic()
        proc = self._run(argv, e)
        took = time.monotonic() - t
        if args[:2] == ("agent", "state") and "--pane" in args and proc.returncode == 0:
            self.manual[args[args.index("--pane") + 1]] = args[2]
        if settle:
            self.settle()
            self._check_deliveries(log, before)
        if os.environ.get("GOLDEN_DEBUG"):
            print(
                f"[{self.count + 1}] {took:.2f}s +settle {time.monotonic() - t - took:.2f}s rk {shlex.join(args)}",
                file=sys.stderr,
            )
        self._record(argv, env, e, now, proc)

    def batch(self, commands: list[tuple[str, ...]], server: bool = True) -> None:
        """Commands that touch neither tmux nor the state directory (help pages,
        simulations, refused arguments), run side by side and recorded in order."""
        runs = [self._command(args, server, None, None) for args in commands]
        with ThreadPoolExecutor(max_workers=max(2, min(8, os.cpu_count() or 2))) as pool:
            procs = list(pool.map(lambda r: self._run(*r), runs))
        for (argv, e), proc in zip(runs, procs, strict=True):
            self._record(argv, None, e, None, proc)

    def _command(self, args, server, env, now) -> tuple[list[str], dict[str, str]]:
        argv = ["-L", self.server, *args] if server else list(args)
        e = dict(self.base_env, TZ=self.tz, RK_NOW=str(self.now) if now is None else now)
        e.update(env or {})
        return argv, e

    def _run(self, argv: list[str], e: dict[str, str]) -> subprocess.CompletedProcess:
        return subprocess.run([self.python, "-m", "rk", *argv], capture_output=True, env=e, cwd=self.root, timeout=120)

    def _record(self, argv, env, e, now, proc) -> None:
        self.count += 1
        self._learn_ids()
        shown_env = " ".join(f"{k}={shlex.quote(v)}" for k, v in (env or {}).items())
        clock = f"RK_NOW={e['RK_NOW']}" + (f" ({iso(int(e['RK_NOW']))})" if now is None else "")
        self.lines.append(f"=== [{self.count}] {clock} TZ={e['TZ']}")
        self.lines.append("$ " + (shown_env + " " if shown_env else "") + "rk " + shlex.join(argv))
        self.lines.append(f"--- exit {proc.returncode}")
        for name, data in (("stdout", proc.stdout), ("stderr", proc.stderr)):
            text = data.decode("utf-8", "backslashreplace")
            if not text:
                self.lines.append(f"--- {name}: (empty)")
            elif text.endswith("\n"):
                self.lines.append(f"--- {name}:")
                self.lines.append(text[:-1])
            else:
                self.lines.append(f"--- {name} (no final newline):")
                self.lines.append(text)
        self.lines.append("")

    def _check_deliveries(self, log: Path, before: int) -> None:
        """A command that types into two fake agents makes their state reports race
        (the journal's order would vary): the scenario must never do that."""
        try:
            with log.open("rb") as fh:
                fh.seek(before)
                new = fh.read().decode("utf-8", "replace").splitlines()
        except OSError:
            return
        typed = []
        for line in new:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if os.environ.get("GOLDEN_DEBUG"):
                print(f"    log: {rec}", file=sys.stderr)
            if rec.get("outcome") == "delivered" and rec.get("target") in self.agents:
                typed.append(rec["target"])
        if len(typed) > 1:
            self.warnings.append(f"command {self.count} typed into {len(typed)} agents at once: {typed}")

    def _learn_ids(self) -> None:
        """Every entry id in the entries file, in file order (creation order)."""
        path = Path(self.base_env["RK_STATE_DIR"], f"{self.server}.yaml")
        try:
            text = path.read_text()
        except OSError:
            return
        for found in re.findall(r"^\s*-\s*id:\s*['\"]?([a-z0-9]+)", text, re.M):
            if found not in self.ids:
                # an id that is also a word or number of the output so far (a help page's
                # "none", a year "2027") could not be told from it: give up, as for a bogus id
                taken = re.search(rf"(?<![0-9A-Za-z]){found}(?![0-9A-Za-z])", "\n".join(self.lines))
                if found in BOGUS_IDS or taken:
                    raise SystemExit(f"transcript: rk chose the id {found!r}, which the output also holds; run again")
                self.ids[found] = f"<id{len(self.ids) + 1}>"

    def normalise(self, text: str) -> str:
        text = text.replace(self.tmp, "<TMP>")
        text = text.replace(self.server, "<SERVER>")
        if self.server_start:
            text = re.sub(rf"(?<![0-9]){self.server_start}(?![0-9])", "<SERVER_START>", text)
            for zone in ("UTC", "America/New_York"):  # as `cron show` prints it, in each zone the scenario uses
                shown = datetime.fromtimestamp(int(self.server_start), ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M:%S")
                text = text.replace(shown, "<SERVER_START>")
        # how long `agent await` waited, by the wall clock
        text = re.sub(r'("waited": )\d+(\.\d+)?', r"\1<seconds>", text)
        # lock files are named by a hash of a key that holds the socket's path
        text = re.sub(r"(?<![0-9a-f])[0-9a-f]{24}\.(lock|pending)\b", r"<hash>.\1", text)

        # pids, where rk prints them: `(pid N)`, `pid: N`, `"process_pid": N`, `server_pid: N`,
        # and in the TMUX value the scenario passes (`<socket>,<server pid>,0`)
        def pid(m: re.Match) -> str:
            return m.group(1) + self.pids.get(m.group(2), "<pid?>")

        text = re.sub(r"""(pid["']?:? ?)(\d+)(?![0-9])""", pid, text, flags=re.I)
        text = re.sub(r"(<SERVER>,)(\d+)(?=,)", pid, text)
        for real, name in self.ids.items():
            text = re.sub(rf"(?<![0-9A-Za-z]){real}(?![0-9A-Za-z])", name, text)
        # the entries file quotes an id that YAML would read as something else ('1234', '5e10')
        text = re.sub(r"(?m)^(\s*- id: )'(<id\d+>)'$", r"\1\2", text)
        return text

    # ------------------------------------------------------------- endings

    def dump_state(self) -> None:
        self.lines.append("=" * 78)
        self.lines.append("state directory after the scenario (RK_STATE_DIR)")
        self.lines.append("=" * 78)
        self._dump_tree(Path(self.base_env["RK_STATE_DIR"]))
        self.lines.append("=" * 78)
        self.lines.append("files under HOME, XDG_CONFIG_HOME, XDG_STATE_HOME (all should be empty)")
        self.lines.append("=" * 78)
        for key in ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME"):
            self._dump_tree(Path(self.base_env[key]))

    def _dump_tree(self, base: Path) -> None:
        items = []
        for dirpath, dirnames, filenames in os.walk(base):
            for name in [*dirnames, *filenames]:
                p = Path(dirpath, name)
                items.append((self.normalise(str(p)), p))
        if not items:
            self.lines.append(f"{self.normalise(str(base))}: (empty)")
        for shown, p in sorted(items):
            if p.is_symlink():
                self.lines.append(f"--- {shown} -> {self.normalise(os.readlink(p))}")
            elif p.is_dir():
                self.lines.append(f"--- {shown}/ (directory, mode {oct(p.stat().st_mode & 0o777)})")
            elif p.is_file():
                data = p.read_bytes().decode("utf-8", "backslashreplace")
                mode = oct(p.stat().st_mode & 0o777)
                data, note = self._by_id_order(data)
                end = "" if data.endswith("\n") or not data else ", no final newline"
                self.lines.append(f"--- {shown} (mode {mode}, {len(data.splitlines())} lines{end}{note})")
                if data:
                    self.lines.append(data[:-1] if data.endswith("\n") else data)
            else:
                self.lines.append(f"--- {shown} (special file)")

    def _by_id_order(self, data: str) -> tuple[str, str]:
        """A JSON file whose `entries` map is keyed by entry id is written sorted by
        the (random) ids: show it in creation order instead, when that is lossless
        (the file is exactly what json.dumps(indent=1) writes); else as it is."""
        try:
            doc = json.loads(data)
        except ValueError:
            return data, ""
        entries = doc.get("entries") if isinstance(doc, dict) else None
        if not isinstance(entries, dict) or len(entries) < 2 or not set(entries) <= set(self.ids):
            return data, ""
        body = data[:-1] if data.endswith("\n") else data
        if json.dumps(doc, indent=1) != body:
            return data, ""
        order = {real: i for i, real in enumerate(self.ids)}
        doc["entries"] = {k: entries[k] for k in sorted(entries, key=order.__getitem__)}
        tail = "\n" if data.endswith("\n") else ""
        return json.dumps(doc, indent=1) + tail, "; keys shown in id order, rk sorts them by the random ids"

    def dump_screens(self) -> None:
        self.lines.append("=" * 78)
        self.lines.append("the panes' screens at the end (trailing blank lines dropped)")
        self.lines.append("=" * 78)
        for name, pane in self.panes.items():
            self.lines.append(f"--- {name} ({pane})")
            self.lines.append("\n".join(line.rstrip() for line in self.screen(pane).rstrip().split("\n")))

    def text(self) -> str:
        return self.normalise("\n".join(self.lines) + "\n")


# -------------------------------------------------------------------- scenario


def scenario(g: Golden) -> None:
    p = g.panes
    a, b, c, op, cat, sh = p["worker-a"], p["worker-b"], p["worker-c"], p["operator"], p["cat"], p["shell"]
    inside = {"TMUX": f"{g.socket},{next(k for k, v in g.pids.items() if v == '<pid:server>')},0"}

    def in_pane(pane: str) -> dict[str, str]:
        return {**inside, "TMUX_PANE": pane}

    rk = g.rk

    # ---- the program itself, no server needed
    g.at(T0 + 60)
    g.batch(
        [
            ("--version",),
            ("--help",),
            ("cron", "--help"),
            ("cron", "add", "--help"),
            ("cron", "simulate", "--help"),
        ],
        server=False,
    )

    # ---- views of an empty world
    rk("cron", "list")
    rk("cron", "list", "--json")
    rk("status")
    rk("agent", "list")
    rk("agent", "list", "--json")
    rk("events")
    rk("cron", "ticker", "status")

    # ---- a role, from inside the operator's pane
    rk("role", "operator", server=False, env=in_pane(op))
    rk("operator")
    rk("notify", "test")
    rk("agent", "setup", "claude", "--dry-run", server=False)
    rk("agent", "await", "--pane", a, "--until", "idle", "--timeout", "5s")
    rk("agent", "await", "--role", "operator", "--until", "idle,waiting", "--timeout", "5s", "--json")
    rk("agent", "await", "--pane", b, "--until", "gone", "--timeout", "1s")

    # ---- every schedule kind
    g.at(T0 + 120)  # 08:02 UTC
    rk("cron", "add", "check the queue", "--every", "10m", "--pane", a, "--name", "heartbeat")
    rk(
        "cron", "add", "standup notes for {window_start}..{window_end}", "--cron", "30 9 * * 1-5",
        "--tz", "Europe/Berlin", "--pane", b, "--deliver", "when-idle", "--catch-up", "once",
        "--catch-up-within", "12h",
    )  # fmt: skip
    rk("cron", "add", "anything blocked?", "--backoff", "--min", "5m", "--max", "40m", "--pane", c,
       "--deliver", "skip-if-busy", "--only-if-changed", "pane", "--json")  # fmt: skip
    rk(
        "cron", "add", "check on the workers", "--idle-every", "30m", "--wake-on", "agent-state-change",
        "--wake-debounce", "5m", "--deliver", "skip-if-busy", "--role", "operator", "--pinned",
    )  # fmt: skip
    rk("cron", "add", "wrap up and push", "--at", "10:15", "--pane", a)
    rk("cron", "add", "stretch your legs", "--in", "95m", "--pane", b, "--name", "stretch")
    rk("cron", "add", "continue", "--wake-on", "limit-reset", "--pane", c)
    rk(
        "cron", "add", "office hours ping", "--every", "1h", "--active-hours", "09:00-17:00",
        "--max-per-day", "3", "--max-total", "10", "--pane", b, "--turn-timeout", "20m",
        "--on-timeout", "interrupt", "--budget", "2M/day",
    )  # fmt: skip
    rk("cron", "add", "hello cat", "--every", "2h", "--pane", cat, "--any-program", "--deliver", "when-idle")
    rk("cron", "add", "echo never typed", "--every", "2h", "--pane", sh, "--if-absent", "notify")
    rk("cron", "add", "fast one", "--every", "20s", "--force", "--pane", b, "--json")
    rk("cron", "add", "from inside", "--every", "3h", server=False, env=in_pane(a))

    # ---- views of the entries
    g.at(T0 + 180)
    rk("cron", "list")
    rk("cron", "list", "--json")
    rk("cron", "ls", "--all")
    ids = list(g.ids)
    heartbeat, standup, backoff, wake, at_entry, _stretch, limit, office, catty, shelly, fast, inner = ids
    rk("cron", "show", heartbeat)
    rk("cron", "show", standup, "--json")
    rk("cron", "show", office)
    rk("cron", "show", limit)
    rk("cron", "next", standup, "-n", "5")
    rk("cron", "next", standup, "-n", "5", "--json")
    rk("cron", "next", backoff)
    rk("cron", "next", office, "-n", "8")
    rk("cron", "next", at_entry, "--json")
    rk("status")
    rk("status", "--json")
    rk("status", "--format", "tmux")
    rk("doctor")

    # ---- edits
    rk("cron", "rm", fast)
    rk("cron", "edit", heartbeat, "--every", "15m", "--deliver", "skip-if-busy")
    rk("cron", "edit", inner, "--prompt", "from inside, edited", "--name", "inner", "--json")
    rk("cron", "mute", shelly, "--for", "2h")
    rk("cron", "pin", catty)
    rk("cron", "pin", catty, "--off")
    rk("cron", "mute", inner)
    rk("cron", "list")

    # ---- ticks: each one types into at most one fake agent (two agents working at
    # once would write their state reports in either order)
    g.at(T0 + 1020)  # 08:17: the backoff entry is due (5m after the agents' last report)
    rk("cron", "tick", "--dry-run")
    rk("cron", "tick", settle=True)
    rk("cron", "log")
    rk("agent", "list")
    rk("events")

    g.at(T0 + 1200)  # 08:20: the heartbeat (15m from its edit); worker-c busy
    rk("agent", "state", "active", "--pane", c, server=False, env=inside)
    rk("cron", "tick", "--json", settle=True)
    rk("agent", "state", "waiting", "--pane", c, server=False, env=inside)
    g.at(T0 + 1320)  # 08:22: worker-c waits: the operator's wake
    rk("cron", "tick", "--dry-run", "--json")
    rk("cron", "tick", settle=True)

    g.at(T0 + 1800)  # 08:30: standup (cron, when-idle), held by a human's draft in worker-b
    g.note(f"tmux: a human types a draft into worker-b ({b}) and leaves it")
    g.tmux("send-keys", "-t", b, "-l", "half-typed thought")
    g.wait(lambda: "demo> half-typed thought" in g.screen(b), "the draft on screen")
    rk("cron", "tick", settle=True)
    rk("cron", "list")
    g.note(f"tmux: the human sends the draft in worker-b ({b})")
    g.tmux("send-keys", "-t", b, "Enter")
    g.settle()
    g.at(T0 + 1830)
    rk("cron", "tick", settle=True)
    rk("cron", "log", "-n", "5")

    g.at(T0 + 1900)
    rk("agent", "state", "idle", "--pane", c, server=False, env=inside)
    g.at(T0 + 1980)  # 08:33: worker-c is idle again: the operator's wake
    rk("cron", "tick", settle=True)
    g.at(T0 + 2040)
    rk("agent", "state", "limited", "--pane", c, "--until", iso(T0 + 4800), server=False, env=inside)
    rk("agent", "list", "--json")
    g.at(T0 + 2160)  # 08:36: the heartbeat again
    rk("cron", "tick", settle=True)
    g.at(T0 + 2400)  # 08:40
    rk("cron", "tick", settle=True)
    rk("cron", "mute", heartbeat, "--for", "1h")
    rk("cron", "mute", wake)

    # ---- pause and resume
    g.at(T0 + 3600)  # 09:00
    rk("cron", "pause", "--for", "30m")
    rk("status")
    g.at(T0 + 3660)
    rk("cron", "tick", settle=True)
    rk("cron", "resume")

    # ---- manual fires
    g.at(T0 + 3720)
    rk("cron", "run", heartbeat, settle=True)
    g.at(T0 + 3780)
    rk("send", "one prompt, now", "--pane", b, settle=True)
    g.at(T0 + 3900)  # 09:05: office hours
    rk("cron", "tick", settle=True)
    g.at(T0 + 4860)  # 09:21: worker-c's limit has reset
    rk("agent", "state", "idle", "--pane", c, server=False, env=inside)
    g.at(T0 + 4920)  # 09:22: the limit-reset wake
    rk("cron", "tick", settle=True)
    rk("cron", "mute", backoff)
    g.at(T0 + 6300)  # 09:45: the heartbeat's mute has lapsed; the --in entry's time has passed
    rk("cron", "tick", "--dry-run")
    rk("cron", "tick", settle=True)
    g.at(T0 + 7380)  # 10:03: the heartbeat, the cat, and the shell entry's mute lapses
    rk("cron", "tick", settle=True)
    g.at(T0 + 7560)  # 10:06: office hours, second time today
    rk("cron", "tick", "--json", settle=True)
    g.at(T0 + 8100)  # 10:15: the --at entry, then it retires
    rk("cron", "tick", settle=True)
    rk("cron", "list", "--full")
    rk("cron", "log", "--outcome", "delivered")
    rk("cron", "log", standup, "--gaps", "--since", "7d")
    rk("cron", "log", standup, "--gaps", "--json")
    rk("cron", "log", "--since", "1h", "--full")
    rk("events", "--since", "30m")
    rk("events", "--pane", c, "--json")
    rk("cron", "usage", office)

    # ---- simulations (no tmux; the entries file for an id)
    g.batch(
        [
            ("cron", "simulate", "--idle-every", "3m", "--deliver", "when-idle", "--states",
             "0 idle; 10m active; 25m idle", "--for", "1h", "--start", iso(T0), "--width", "72"),
            ("cron", "simulate", "--every", "24h", "--wake-on", "agent-state-change", "--states", "0 idle",
             "--other", "0 active; 10m idle; 30m waiting", "--for", "1h", "--start", iso(T0), "--width", "72"),
            ("cron", "simulate", "--cron", "*/20 * * * *", "--tz", "Europe/Berlin", "--active-hours",
             "09:00-10:00", "--max-per-day", "2", "--for", "3h", "--start", iso(T0), "--width", "80"),
            ("cron", "simulate", "--backoff", "--min", "1m", "--max", "8m", "--deliver", "skip-if-busy",
             "--states", "0 idle; 20m waiting; 30m idle", "--busy", "0s", "--for", "1h", "--start", iso(T0),
             "--width", "60", "--json"),
            ("cron", "simulate", standup, "--for", "3d", "--start", iso(T0), "--width", "72"),
            ("cron", "simulate", "--every", "10m", "--for", "30m", "--start", iso(T0)),
        ]
    )  # fmt: skip

    # ---- another zone
    g.tz = "America/New_York"
    rk("cron", "list")
    rk("cron", "show", standup)
    rk("cron", "next", heartbeat, "-n", "3")
    rk("cron", "log", "-n", "3")
    rk("status")
    rk("agent", "list")
    rk("cron", "add", "east coast", "--at", "17:30", "--pane", a, "--json")
    rk("cron", "add", "ny morning", "--cron", "0 8 * * *", "--pane", b)
    g.tz = "UTC"
    rk("cron", "list")

    # ---- deliberate mistakes (one is no mistake: a pane that does not exist is only a warning)
    g.at(T0 + 8400)
    rk("cron", "add", "x", "--every", "5m", "--pane", "%99")
    g.batch(
        [
            ("cron", "add", "x", "--every", "5q", "--pane", a),
            ("cron", "add", "x", "--every", "0s", "--pane", a),
            ("cron", "add", "x", "--every", "20s", "--pane", a),
            ("cron", "add", "x", "--cron", "61 * * * *", "--pane", a),
            ("cron", "add", "x", "--cron", "* * *", "--pane", a),
            ("cron", "add", "x", "--every", "5m", "--cron", "* * * * *", "--pane", a),
            ("cron", "add", "x", "--pane", a),
            ("cron", "add", "x", "--every", "5m", "--deliver", "sometimes", "--pane", a),
            ("cron", "add", "x", "--cron", "0 9 * * *", "--tz", "Mars/Olympus", "--pane", a),
            ("cron", "add", "x", "--every", "5m", "--active-hours", "25:00-26:00", "--pane", a),
            ("cron", "add", "x", "--every", "5m", "--pane", "0"),
            ("cron", "add", "x", "--every", "5m", "--role", "operator", "--pane", a),
            ("cron", "add", "x", "--at", "yesterday", "--pane", a),
            ("cron", "add", "x", "--in", "-5m", "--pane", a),
            ("cron", "add", "x {bogus}", "--every", "5m", "--pane", a),
            ("cron", "add", "x", "--every", "5m", "--max-per-day", "-1", "--pane", a),
            ("cron", "add", "x", "--every", "5m", "--bogus-flag", "--pane", a),
            ("cron", "add", "--every", "5m"),
            ("cron", "add", "x", "--backoff", "--min", "10m", "--max", "5m", "--pane", a),
            ("cron", "add", "x", "--cron", "0 9 * * *", "--catch-up", "twice", "--pane", a),
            ("cron", "add", "x", "--every", "5m", "--wake-on", "tuesday", "--pane", a),
            ("cron", "add", "x", "--every", "5m", "--pane", a, "--json", "--deliver", "later"),
            ("cron", "show", BOGUS_IDS[0]),
            ("cron", "rm", BOGUS_IDS[0], "--json"),
            ("cron", "edit", BOGUS_IDS[1], "--every", "5m"),
            ("cron", "edit", heartbeat),
            ("cron", "mute", heartbeat, "--for", "5 parsecs"),
            ("cron", "next", heartbeat, "-n", "-1"),
            ("cron", "log", "--since", "lately"),
            ("cron", "simulate", "--every", "5m", "--states", "0 sleepy"),
            ("cron", "simulate"),
            ("cron", "pause", "--for", "never"),
            ("status", "--format", "xml"),
        ]
    )
    g.batch([("agent", "state", "idle"), ("nosuchcommand",), ("cron", "list", "-L", "no-such-server")], server=False)
    rk("agent", "state", "dancing", "--pane", a, server=False, env=inside)
    rk("cron", "list", now="not-a-time")

    # ---- tidy up, and what is left
    g.at(T0 + 9000)  # 10:30
    rk("cron", "rm", backoff)
    rk("cron", "rm", wake, "--json")
    rk("cron", "tick", server=False, settle=True)  # every live server
    rk("cron", "list", "--json")
    rk("cron", "log", "-n", "0")
    rk("events")
    rk("doctor", "--json")


def main() -> int:
    here = Path(__file__).resolve().parent
    default_root = here.parent
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=default_root, help="the checkout to run (default: %(default)s)")
    parser.add_argument("--out", type=Path, help="write the transcript here (default: stdout)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter (default: this one)")
    args = parser.parse_args()
    root = args.root.resolve()
    if not (root / "rk" / "__main__.py").is_file() or not (root / "demo" / "fake_agent.py").is_file():
        parser.error(f"{root} holds no rk checkout (rk/__main__.py and demo/fake_agent.py)")
    g = Golden(root, args.python)
    # the interpreter must load rk from --root, not from an installed copy
    check = subprocess.run(
        [args.python, "-c", "import rk, os; print(os.path.realpath(rk.__file__))"],
        capture_output=True, text=True, env=g.base_env, cwd=root,
    )  # fmt: skip
    runs = subprocess.run(
        [args.python, "-m", "rk", "--version"], capture_output=True, text=True, env=g.base_env, cwd=root
    )
    if not check.stdout.strip().startswith(str(root) + os.sep) or runs.returncode != 0:
        shutil.rmtree(g.tmp, ignore_errors=True)
        where = check.stdout.strip() or check.stderr.strip()
        raise SystemExit(
            f"transcript: {args.python} cannot run rk from {root} (it loads {where}): {runs.stderr.strip()}"
        )
    started = time.monotonic()
    try:
        g.start()
        scenario(g)
        g.dump_state()
        g.dump_screens()
        text = g.text()
    finally:
        g.stop()
        shutil.rmtree(g.tmp, ignore_errors=True)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    else:
        sys.stdout.buffer.write(text.encode("utf-8"))
        sys.stdout.flush()
    print(
        f"transcript: {g.count} commands in {time.monotonic() - started:.1f}s"
        + (f" -> {args.out}" if args.out else ""),
        file=sys.stderr,
    )
    for w in g.warnings:
        print(f"transcript: warning: {w}", file=sys.stderr)
    return 1 if g.warnings else 0


if __name__ == "__main__":
    sys.exit(main())
