"""Stdlib helpers to run the real Gemini CLI (0.61) offline in a private tmux server.

Typical use (see GEMINI.md for what each step was measured to do)::

    from tests.agents.mock_gemini import MockGemini
    from tests.agents.gemini_launch import GeminiSession

    mock = MockGemini(); mock.start()
    with GeminiSession(mock.base_url) as g:      # throwaway HOME + tmux -L rk-gem-<pid>-<n>
        g.wait_ready()                           # 4-10 s; an Enter sent earlier is dropped
        g.submit("hello")                        # type, wait for the echo, then Enter
        g.wait_event("AfterAgent")
        print(g.capture())
    mock.stop()

Everything lives under one temp dir (``g.root``): ``home/.gemini/settings.json``, ``work/`` (the
pane's cwd), ``hook.sh`` and ``hooks.log`` (one line per hook call: ``EVENT epoch.ms {stdin json}``).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from harness import clean_env

#: tmux servers started here (and the agents in them) see no CI markers, as on a user's machine.
AGENT_ENV = clean_env()

GEMINI_BIN = os.environ.get("RK_GEMINI_BIN", "/tmp/agentcache/node_modules/.bin/gemini")

#: All hook events of Gemini CLI 0.61 (HookEventName in the bundle).
ALL_EVENTS = (
    "SessionStart",
    "SessionEnd",
    "BeforeAgent",
    "AfterAgent",
    "BeforeModel",
    "AfterModel",
    "BeforeToolSelection",
    "BeforeTool",
    "AfterTool",
    "Notification",
    "PreCompress",
)
#: The events `rk agent setup gemini` hooks (rk/agent/setup/gemini.py HOOKS).
RK_EVENTS = ("SessionStart", "BeforeAgent", "BeforeTool", "Notification", "AfterAgent", "SessionEnd")

PLACEHOLDER = "Type your message or @path/to/file"
RULE_RE = re.compile(r"^\s*─{20,}\s*$")
#: The composer line: ` > text` below the last rule (`!` shell mode / `*` YOLO: from the code, not seen).
PROMPT_RE = re.compile(r"^ ([>!*]) (.*)$")
#: Busy: the loading line ` ⠋ Thinking... (esc to cancel, 3s)`. When a long "Executing Hook(s): …"
#: label wraps, Ink redraws one row short and the tail can read just `(esc to`, with the spinner
#: overwritten by `? for shortcuts`; so accept either half.
BUSY_RE = re.compile(r"\(esc to(?: cancel|\s*$)|^ [⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] ", re.M)
#: Drawn when the config has finished initializing (unless ui.hideBanner / ui.hideTips).
READY_RE = re.compile(r"Gemini CLI v\d|Tips for getting started")

_counter = itertools.count(1)

HOOK_SH = """#!/bin/sh
# logging hook: appends "EVENT epoch.ms <stdin json on one line>" to hooks.log
ev="$1"
t=$(date +%s.%3N)
p=$(cat | tr -d '\\n')
printf '%s %s %s\\n' "$ev" "$t" "$p" >> {log}
exit 0
"""


def base_settings() -> dict:
    """settings.json keys that make 0.61 start offline straight into the composer."""
    return {
        "security": {
            "auth": {"selectedType": "gemini-api-key"},  # no auth dialog (with GEMINI_API_KEY)
            "folderTrust": {"enabled": False},
        },  # no "Do you trust this folder?" dialog
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "privacy": {"usageStatisticsEnabled": False},  # no Clearcut usage logging
        "telemetry": {"enabled": False},
        "ide": {"enabled": False, "hasSeenNudge": True},  # no IDE-integration nudge
    }


def hook_command(hook_sh: Path, event: str, style: str) -> str:
    if style == "rk":
        # same shape/length as rk's wrapper_command (the screen shows it while it runs)
        return f'/bin/sh -c \'[ -n "$TMUX_PANE" ] || exit 0; "{hook_sh}" {event} 2>/dev/null || true\''
    return f"{hook_sh} {event}"


def write_home(
    root: Path,
    events=ALL_EVENTS,
    hook_style: str = "plain",
    hook_names: bool | str = False,
    notifications: bool = True,
    extra: dict | None = None,
) -> dict:
    """Create root/home/.gemini/settings.json, root/work, root/hook.sh; return the settings."""
    root = Path(root)
    (root / "home" / ".gemini").mkdir(parents=True, exist_ok=True)
    (root / "work").mkdir(exist_ok=True)
    hook_sh = root / "hook.sh"
    hook_sh.write_text(HOOK_SH.format(log=shlex.quote(str(root / "hooks.log"))))
    hook_sh.chmod(0o755)
    s = base_settings()
    hooks = {}
    for ev in events:
        h = {"type": "command", "command": hook_command(hook_sh, ev, hook_style)}
        if hook_names:  # the screen shows `name` (else the whole command) while a hook runs
            h["name"] = hook_names if isinstance(hook_names, str) else f"log-{ev}"
        hooks[ev] = [{"hooks": [h]}]
    if hooks:
        s["hooks"] = hooks
    if not notifications:
        s["hooksConfig"] = {"notifications": False}
    for k, v in (extra or {}).items():  # shallow-merge one level
        if isinstance(v, dict) and isinstance(s.get(k), dict):
            s[k] = {**s[k], **v}
        else:
            s[k] = v
    (root / "home" / ".gemini" / "settings.json").write_text(json.dumps(s, indent=2) + "\n")
    return s


@dataclass
class HookCall:
    event: str
    t: float
    payload: dict


def parse_hooks_log(path: Path) -> list[HookCall]:
    out = []
    try:
        lines = Path(path).read_text().splitlines()
    except FileNotFoundError:
        return out
    for line in lines:
        parts = line.split(" ", 2)
        if len(parts) < 2:
            continue
        try:
            payload = json.loads(parts[2]) if len(parts) == 3 and parts[2] else {}
        except ValueError:
            payload = {"_raw": parts[2]}
        out.append(HookCall(parts[0], float(parts[1]), payload))
    return out


def composer(screen: str) -> tuple[str, str] | None:
    """(prefix, text) of the composer's first line in a `capture-pane -p` screen, or None.
    text is "" when the placeholder shows. The composer is the first ` > ` line after the
    last rule line (history echoes of old prompts also start with ` > ` but sit above it)."""
    lines = screen.splitlines()
    rules = [i for i, line in enumerate(lines) if RULE_RE.match(line)]
    if not rules:
        return None
    for line in lines[rules[-1] + 1 :]:
        m = PROMPT_RE.match(line.rstrip())
        if m:
            text = m.group(2).strip()
            return m.group(1), ("" if text == PLACEHOLDER else text)
    return None


def composer_block(screen: str) -> str:
    """All text from the composer's first line up to the footer (multi-line drafts)."""
    lines = screen.splitlines()
    rules = [i for i, line in enumerate(lines) if RULE_RE.match(line)]
    if not rules:
        return ""
    out, started = [], False
    for line in lines[rules[-1] + 1 :]:
        if not started and PROMPT_RE.match(line.rstrip()):
            started = True
        if started:
            if line.startswith(" workspace (/directory)") or line.lstrip().startswith("▀▀▀"):
                break
            out.append(line.rstrip())
    return "\n".join(out)


def screen_class(screen: str) -> str:
    """Coarse class of a `capture-pane -p -J` screen of Gemini CLI 0.61 (see GEMINI.md):
    blank | boot | tool_confirm | choice_dialog | busy | idle | unknown.
    "boot" = composer drawn but nothing above it yet (config still initializing: Enter is dropped)."""
    if not screen.strip():
        return "blank"
    lines = screen.splitlines()
    rules = [i for i, line in enumerate(lines) if RULE_RE.match(line)]
    if (
        rules
        and composer(screen) is not None
        and not any(line.strip() and line.strip() != "? for shortcuts" for line in lines[: rules[-1]])
    ):
        return "boot"
    if "Allow execution of" in screen or re.search(r"● 1\. Allow once", screen):
        return "tool_confirm"
    if re.search(r"● 1\. Keep trying", screen):
        return "choice_dialog"  # quota / "high demand" dialog: waits for the human
    if BUSY_RE.search(screen):
        return "busy"
    if composer(screen) is not None:
        return "idle"
    return "unknown"


class GeminiSession:
    """The real Gemini CLI in a private tmux server, against `base_url` (the mock)."""

    def __init__(
        self,
        base_url: str | None,
        cols: int = 120,
        rows: int = 40,
        root: str | Path | None = None,
        events=ALL_EVENTS,
        hook_style: str = "plain",
        hook_names: bool | str = False,
        notifications: bool = True,
        settings_extra: dict | None = None,
        env: dict | None = None,
        truecolor: bool = True,
        args: tuple[str, ...] = (),
        binary: str = GEMINI_BIN,
    ):
        self.root = Path(root) if root else Path(tempfile.mkdtemp(prefix="rk-gem-"))
        self._own_root = root is None
        self.base_url, self.cols, self.rows = base_url, cols, rows
        self.socket = f"rk-gem-{os.getpid()}-{next(_counter)}"
        self.settings = write_home(self.root, events, hook_style, hook_names, notifications, settings_extra)
        self.hooks_log = self.root / "hooks.log"
        self.env = {
            "HOME": str(self.root / "home"),
            "GEMINI_API_KEY": "dummy",
            "TERM": "tmux-256color",
            "LANG": os.environ.get("LANG", "C.UTF-8"),
        }
        if truecolor:
            self.env["COLORTERM"] = "truecolor"
        if base_url:
            self.env["GOOGLE_GEMINI_BASE_URL"] = base_url
        self.env.update(env or {})
        self.args, self.binary = tuple(args), binary
        self.t_launch: float | None = None
        self.pane_pid: int | None = None

    # -- tmux ----------------------------------------------------------------------------
    def tmux(self, *a: str, check: bool = True) -> str:
        r = subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *a], capture_output=True, text=True, env=AGENT_ENV
        )
        if check and r.returncode:
            raise RuntimeError(f"tmux {a!r}: {r.stderr.strip()}")
        return r.stdout

    def start(self) -> GeminiSession:
        env_args = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        # `exec env …`: the pane's process IS the gemini node wrapper (pane_current_command=node);
        # remain-on-exit keeps the pane so its exit status can be read.
        cmd = f"exec env {env_args} {shlex.quote(self.binary)} {' '.join(map(shlex.quote, self.args))}"
        self.tmux(
            "new-session",
            "-d",
            "-s",
            "g",
            "-x",
            str(self.cols),
            "-y",
            str(self.rows),
            "-c",
            str(self.root / "work"),
            "sleep 86400",
        )  # placeholder window, replaced below
        self.tmux("set-option", "-g", "default-terminal", "tmux-256color")
        self.tmux("set-option", "-g", "remain-on-exit", "on")
        self.tmux("set-option", "-g", "history-limit", "5000")
        self.t_launch = time.time()
        self.tmux("respawn-pane", "-k", "-t", "g", "-c", str(self.root / "work"), cmd)
        self.pane_pid = int(self.tmux("display", "-p", "-t", "g", "#{pane_pid}").strip())
        return self

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def capture(self, ansi: bool = False, joined: bool = True) -> str:
        a = ["capture-pane", "-p", "-t", "g"]
        if joined:
            a.append("-J")
        if ansi:
            a.append("-e")
        return self.tmux(*a)

    def info(self) -> dict:
        fmt = "#{pane_current_command}\t#{pane_pid}\t#{pane_dead}\t#{pane_dead_status}\t#{cursor_x},#{cursor_y}"
        cc, pid, dead, status, cur = self.tmux("display", "-p", "-t", "g", fmt).rstrip("\n").split("\t")
        return {
            "pane_current_command": cc,
            "pane_pid": int(pid),
            "dead": dead == "1",
            "dead_status": status,
            "cursor": cur,
        }

    def ps_tree(self) -> str:
        """`ps -o pid,ppid,pgid,tpgid,comm` of the pane's session."""
        r = subprocess.run(
            ["ps", "-o", "pid,ppid,pgid,tpgid,comm,args", "-s", str(self.pane_pid)], capture_output=True, text=True
        )
        return r.stdout

    # -- waiting -------------------------------------------------------------------------
    def wait_for(self, pred, timeout: float = 15.0, interval: float = 0.1):
        """Poll capture() until pred(screen) is truthy; return the screen (or raise TimeoutError)."""
        end = time.time() + timeout
        while True:
            s = self.capture()
            if pred(s) if callable(pred) else re.search(pred, s, re.M):
                return s
            if time.time() > end:
                raise TimeoutError(f"screen did not match within {timeout}s:\n{s}")
            time.sleep(interval)

    def wait_composer(self, timeout: float = 20.0, empty: bool | None = None) -> str:
        def ok(s):
            c = composer(s)
            return c is not None and (empty is None or (c[1] == "") == empty) and not BUSY_RE.search(s)

        return self.wait_for(ok, timeout)

    def wait_ready(self, timeout: float = 30.0, settle: float = 0.3) -> str:
        """Wait until the CLI accepts a submit. The composer is drawn 0.3-1 s before the config
        is initialized; an Enter sent in that window is dropped or becomes a newline (the typed
        text stays in the composer, nothing is submitted).
        Initialization shows as the header (logo banner / "Tips for getting started") appearing
        above the composer and, if hooked, the SessionStart hook firing."""
        hooked = "SessionStart" in self.settings.get("hooks", {})

        def ok(s):
            c = composer(s)
            if c is None or BUSY_RE.search(s):
                return False
            if hooked:
                return any(h.event == "SessionStart" for h in self.hooks())
            return bool(READY_RE.search(s))

        s = self.wait_for(ok, timeout)
        time.sleep(settle)
        return s

    def hooks(self) -> list[HookCall]:
        return parse_hooks_log(self.hooks_log)

    def wait_event(self, event: str, timeout: float = 15.0, after: float = 0.0, count: int = 1) -> HookCall:
        end = time.time() + timeout
        while True:
            hs = [h for h in self.hooks() if h.event == event and h.t >= after]
            if len(hs) >= count:
                return hs[count - 1]
            if time.time() > end:
                raise TimeoutError(f"no {event} hook within {timeout}s; got {[h.event for h in self.hooks()]}")
            time.sleep(0.05)

    # -- input ---------------------------------------------------------------------------
    def type(self, text: str) -> float:
        self.tmux("send-keys", "-t", "g", "-l", "--", text)
        return time.time()

    def keys(self, *keys: str) -> float:
        self.tmux("send-keys", "-t", "g", *keys)
        return time.time()

    def enter(self) -> float:
        return self.keys("Enter")

    def esc(self) -> float:
        return self.keys("Escape")

    def paste(self, text: str, bracketed: bool = True) -> float:
        """load-buffer + paste-buffer (-p = bracketed paste, as a terminal would send it)."""
        subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", "load-buffer", "-b", "rkpaste", "-"],
            input=text,
            text=True,
            check=True,
            env=AGENT_ENV,
        )
        a = ["paste-buffer", "-d", "-b", "rkpaste", "-t", "g"]
        if bracketed:
            a.insert(1, "-p")
        self.tmux(*a)
        return time.time()

    def wait_composer_text(self, text: str, timeout: float = 10.0) -> str:
        """Poll until the composer shows `text` (its last line, for multi-line text)."""
        tail = text.rstrip("\n").split("\n")[-1].strip()[-40:]
        return self.wait_for(lambda s: composer(s) is not None and tail in composer_block(s), timeout)

    def submit(self, text: str, paste: bool = False, timeout: float = 10.0) -> float:
        """Type (or bracketed-paste) `text`, wait until the composer shows it, then Enter.
        The CLI turns an Enter that it reads <30 ms after a printable key (bufferFastReturn) or
        <40 ms after a bracketed paste into a newline instead of a submit. Keys that queue up
        while node is busy (boot, a loaded machine) are read in one chunk, so even a 0.2 s
        wall-clock gap can collapse to 0; waiting for the echo first avoids that."""
        (self.paste if paste else self.type)(text)
        self.wait_composer_text(text, timeout)
        time.sleep(0.1)
        return self.enter()

    def clear_composer(self, timeout: float = 5.0) -> None:
        """Empty the composer. C-u only kills the current *line* of a multi-line draft; C-c
        clears the whole buffer when it holds text (on an empty composer C-c arms
        "Press Ctrl+C again to exit", so it is only sent when there is text)."""
        c = composer(self.capture())
        if c is None or c[1] == "":
            return
        self.keys("C-c")
        self.wait_composer(timeout, empty=True)

    # -- teardown ------------------------------------------------------------------------
    def _session_pids(self) -> list[int]:
        """The pane's session plus every descendant of the pane process (tool commands run in
        their own pty/session via node-pty, so `ps -s` alone misses them)."""
        if not self.pane_pid:
            return []
        r = subprocess.run(["ps", "-o", "pid=", "-s", str(self.pane_pid)], capture_output=True, text=True)
        pids = {int(p) for p in r.stdout.split()}
        children: dict[int, list[int]] = {}
        for d in Path("/proc").iterdir():
            if d.name.isdigit():
                try:
                    ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                children.setdefault(ppid, []).append(int(d.name))
        todo = [self.pane_pid]
        while todo:
            p = todo.pop()
            pids.add(p)
            todo.extend(c for c in children.get(p, []) if c not in pids)
        return sorted(pids)

    def stop(self, keep_root: bool = False) -> None:
        pids = self._session_pids()
        sock = self.tmux("display", "-p", "#{socket_path}", check=False).strip()
        self.tmux("kill-server", check=False)
        deadline = time.time() + 3
        while pids and time.time() < deadline:
            pids = [p for p in pids if _alive(p)]
            time.sleep(0.1)
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if sock and Path(sock).name == self.socket:  # tmux 3.3a leaves the socket file behind
            Path(sock).unlink(missing_ok=True)
        if self._own_root and not keep_root:
            shutil.rmtree(self.root, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # zombies count as gone
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# -- fixture capture -------------------------------------------------------------------------

FIXTURE_ROOT = Path("/tmp/rk-gem-fx")  # fixed, so the paths in the fixtures are stable
DRAFT = "refactor the retry loop in rk/delivery.py so it backs off"
PASTE = "first line of a pasted prompt\nsecond line of it\nthird and last line"


def _fresh_root() -> Path:
    shutil.rmtree(FIXTURE_ROOT, ignore_errors=True)
    FIXTURE_ROOT.mkdir(parents=True)
    return FIXTURE_ROOT


def capture_fixtures(outdir: str | Path, log=print) -> list[str]:
    """Run the scenarios and write <scenario>.txt (capture-pane -p -J) and .ansi (-p -J -e)."""
    from tests.agents.mock_gemini import MockGemini  # a local import keeps this module standalone

    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    mock = MockGemini(mode="ok")
    mock.start()

    def save(g: GeminiSession, name: str, t_ref: float | None = None) -> None:
        txt, ansi = g.capture(), g.capture(ansi=True)
        (out / f"{name}.txt").write_text(txt)
        (out / f"{name}.ansi").write_text(ansi)
        written.append(name)
        rel = f" +{time.time() - t_ref:.2f}s" if t_ref else ""
        log(f"  saved {name}{rel} [{screen_class(txt)}]")

    def no_hook_label(g, timeout=8.0):
        return g.wait_for(lambda s: "Executing Hook" not in s and not BUSY_RE.search(s), timeout)

    def timeline(g: GeminiSession, t0: float, label: str) -> None:
        evs = [
            f"{h.event}{'(' + h.payload.get('notification_type', '') + ')' if h.event == 'Notification' else ''}"
            f" {h.t - t0:+.3f}"
            for h in g.hooks()
            if h.t >= t0 - 0.001
        ]
        log(f"  hooks after {label}: " + ", ".join(evs))

    def session(cols=120, rows=40, settings_extra=None, long_label=False, truecolor=True) -> GeminiSession:
        # rk's event set and command shape; name="rk" keeps the "Executing Hook: rk" label short
        # (long_label=True: no name, so the label is the whole command, as `rk agent setup` writes it today)
        return GeminiSession(
            mock.base_url,
            cols=cols,
            rows=rows,
            root=_fresh_root(),
            events=RK_EVENTS,
            hook_style="rk",
            hook_names=False if long_label else "rk",
            settings_extra=settings_extra,
            truecolor=truecolor,
        )

    try:
        # A: boot, idle, working, idle after turn, draft, paste, tool dialog, Esc ------------
        log("session A (120x40)")
        mock.set_mode("ok")
        g = session()
        g.start()
        try:
            g.wait_composer(30)
            save(g, "boot", g.t_launch)  # composer drawn, config not ready yet
            g.wait_ready()
            log(f"  ready +{time.time() - g.t_launch:.2f}s")
            no_hook_label(g)
            save(g, "idle_fresh", g.t_launch)
            mock.set_mode("slow", delay=8)
            te = g.submit("say hello slowly")
            g.wait_event("BeforeAgent", after=te - 1)
            g.wait_for(lambda s: "Executing Hook" in s and BUSY_RE.search(s), 5)
            save(g, "working_hook_label", te)
            g.wait_for(lambda s: "Thinking" in s, 8)
            time.sleep(0.5)
            save(g, "working_1", te)
            time.sleep(1.0)
            save(g, "working_2", te)
            g.wait_event("AfterAgent", 15, after=te)
            timeline(g, te, "slow turn (8 s)")
            no_hook_label(g)
            save(g, "idle_after_turn", te)
            g.type(DRAFT)
            g.wait_composer_text(DRAFT)
            time.sleep(0.3)
            save(g, "draft")
            g.clear_composer()
            g.paste(PASTE)
            g.wait_composer_text(PASTE)
            time.sleep(0.3)
            save(g, "paste_multiline")
            g.clear_composer()
            mock.set_mode("tool", command="sleep 2 && touch x")
            te = g.submit("create the file x")
            g.wait_for(lambda s: screen_class(s) == "tool_confirm", 15)
            time.sleep(0.3)
            save(g, "tool_confirm", te)
            timeline(g, te, "tool call, dialog up")
            log("  ps during dialog:\n" + g.ps_tree())
            ta = g.enter()
            time.sleep(1.0)
            save(g, "tool_running", ta)
            log(f"  pane while the tool runs: {g.info()['pane_current_command']}")
            g.wait_event("AfterAgent", 15, after=ta)
            timeline(g, ta, "approve (Enter)")
            no_hook_label(g)
            save(g, "tool_approved", ta)
            mock.set_mode("slow", delay=10)
            te = g.submit("take your time")
            g.wait_for(lambda s: "Thinking" in s, 8)
            tx = g.esc()
            g.wait_event("AfterAgent", 10, after=tx)
            g.wait_for(lambda s: "Request cancelled" in s, 5)
            time.sleep(0.3)
            save(g, "esc_interrupted", tx)
            timeline(g, te, "Esc at " + f"+{tx - te:.2f}")
            no_hook_label(g)
            save(g, "esc_interrupted_settled", tx)
            tq = g.type("/quit")
            g.wait_composer_text("/quit")
            time.sleep(0.2)
            g.enter()
            g.wait_for(lambda s: g.info()["dead"], 10)
            time.sleep(0.5)
            timeline(g, tq, "/quit")
            log(f"  after /quit: {g.info()}")
        finally:
            g.stop()

        # B: 500 with default retries, then Esc; 429 daily quota dialog ----------------------
        log("session B (120x40)")
        mock.set_mode("ok")
        g = session()
        g.start()
        try:
            g.wait_ready()
            no_hook_label(g)
            mock.set_mode("error500")
            te = g.submit("this will fail with 500")
            time.sleep(10)
            save(g, "error500_retrying", te)
            tx = g.esc()
            g.wait_event("AfterAgent", 10, after=tx)
            time.sleep(0.5)
            save(g, "error500_retrying_esc", tx)
            timeline(g, te, f"500 x default retries, Esc at +{tx - te:.2f}")
            no_hook_label(g)
            mock.set_mode("error429")
            te = g.submit("this will hit the daily quota")
            g.wait_for(lambda s: screen_class(s) == "choice_dialog", 20)
            time.sleep(0.3)
            save(g, "error429_dialog", te)
            timeline(g, te, "429 daily quota, dialog up")
            g.keys("Down")
            time.sleep(0.3)
            ts = g.enter()
            g.wait_event("AfterAgent", 10, after=ts)
            g.wait_for(lambda s: "API Error" in s, 5)
            time.sleep(0.5)
            save(g, "error429", ts)
            timeline(g, ts, "'2. Stop'")
            tk = time.time()
            g.tmux("kill-server", check=False)
            time.sleep(2)
            timeline(g, tk, "tmux kill-server")
        finally:
            g.stop()

        # C: 500 with maxAttempts=1 + errorVerbosity=full: dialog, then Stop ----------------
        log("session C (120x40, general.maxAttempts=1, ui.errorVerbosity=full)")
        mock.set_mode("ok")
        g = session(settings_extra={"general": {"maxAttempts": 1}, "ui": {"errorVerbosity": "full"}})
        g.start()
        try:
            g.wait_ready()
            no_hook_label(g)
            mock.set_mode("error500")
            te = g.submit("this will fail with 500")
            g.wait_for(lambda s: screen_class(s) == "choice_dialog", 20)
            time.sleep(0.3)
            save(g, "error500_dialog", te)
            g.keys("Down")
            time.sleep(0.3)
            ts = g.enter()
            g.wait_event("AfterAgent", 10, after=ts)
            g.wait_for(lambda s: "API Error" in s, 5)
            time.sleep(0.5)
            save(g, "error500", ts)
            timeline(g, te, "500 (1 attempt), Stop")
            mock.set_mode("error429")
            te = g.submit("this will hit the daily quota")
            g.wait_for(lambda s: screen_class(s) == "choice_dialog", 20)
            g.keys("Down")
            time.sleep(0.3)
            ts = g.enter()
            g.wait_event("AfterAgent", 10, after=ts)
            g.wait_for(lambda s: s.count("API Error") >= 2, 5)
            time.sleep(0.5)
            save(g, "error429_full", ts)
        finally:
            g.stop()

        # D: 80x24 idle + draft ----------------------------------------------------------------
        log("session D (80x24)")
        mock.set_mode("ok")
        g = session(80, 24)
        g.start()
        try:
            g.wait_ready()
            no_hook_label(g)
            save(g, "idle_fresh_80x24")
            g.type(DRAFT)
            g.wait_composer_text(DRAFT)
            time.sleep(0.3)
            save(g, "draft_80x24")
            g.clear_composer()
            te = g.submit("hello")
            g.wait_event("AfterAgent", 15, after=te)
            no_hook_label(g)
            save(g, "idle_after_turn_80x24", te)
        finally:
            g.stop()

        # E: today's rk hook entries (no "name"): the label is the full /bin/sh -c '…' command,
        # wraps, and Ink leaves stale fragments such as "? for shortcutsk: /bin/sh -c …" behind
        log("session E (120x40, hooks without name)")
        mock.set_mode("ok")
        g = session(long_label=True)
        g.start()
        try:
            g.wait_ready()
            time.sleep(0.5)
            save(g, "idle_fresh_longlabel_hookrunning", g.t_launch)
            time.sleep(3.5)
            save(g, "idle_fresh_longlabel", g.t_launch)
            mock.set_mode("slow", delay=6)
            te = g.submit("say hello slowly")
            g.wait_for(lambda s: "Executing Hook" in s or "/bin/sh -c" in s, 5)
            time.sleep(0.3)
            save(g, "working_longlabel", te)
            g.wait_event("AfterAgent", 15, after=te)
            time.sleep(0.3)
            save(g, "idle_after_turn_longlabel_hookrunning", te)
            time.sleep(3.5)
            save(g, "idle_after_turn_longlabel", te)
        finally:
            g.stop()

        # F: no COLORTERM (256 colours): boxes are drawn with background-coloured blank rows
        log("session F (120x40, no COLORTERM)")
        mock.set_mode("ok")
        g = session(truecolor=False)
        g.start()
        try:
            g.wait_ready()
            no_hook_label(g)
            save(g, "idle_fresh_256color")
            g.type(DRAFT)
            g.wait_composer_text(DRAFT)
            time.sleep(0.3)
            save(g, "draft_256color")
        finally:
            g.stop()
    finally:
        mock.stop()
        shutil.rmtree(FIXTURE_ROOT, ignore_errors=True)
    return written


#: A reply that quotes the CLI's error and cancel lines (it must read as no error).
QUOTING_REPLY = 'The log said:\n✕ [API Error: {"error":{"code":500}}]\nℹ Request cancelled.\nThat was yesterday.'


def capture_turn_end_fixtures(outdir: str | Path, log=print) -> list[str]:
    """The screens rk's AfterAgent hook reads for a textless turn (rk's hook events, named
    "rk"): a 400 that ends the turn (`error400`, and `error400_at_hook`: the screen when
    AfterAgent fires, before the error is drawn), a reply quoting the error and cancel lines
    (`reply_quotes_error`), and a textless turn after that reply (`error400_after_quote`)."""
    from tests.agents.mock_gemini import MockGemini  # local: keeps this module standalone

    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    mock = MockGemini(mode="ok")
    mock.start()

    def save(g: GeminiSession, name: str, txt: str | None = None, ansi: str | None = None) -> None:
        (out / f"{name}.txt").write_text(g.capture() if txt is None else txt)
        (out / f"{name}.ansi").write_text(g.capture(ansi=True) if ansi is None else ansi)
        written.append(name)
        log(f"  saved {name}")

    g = GeminiSession(mock.base_url, root=_fresh_root(), events=RK_EVENTS, hook_style="rk", hook_names="rk")
    g.start()
    try:
        g.wait_ready()
        mock.set_mode("error400")
        te = g.submit("this request is invalid")
        first = None
        while time.time() < te + 20:  # the first screen after AfterAgent fired
            hooked = any(h.event == "AfterAgent" and h.t >= te for h in g.hooks())
            txt, ansi = g.capture(), g.capture(ansi=True)
            if hooked and first is None:
                first = (txt, ansi)
            if "API Error" in txt:
                break
            time.sleep(0.01)
        if first is not None and "API Error" not in first[0]:
            save(g, "error400_at_hook", *first)
        g.wait_for(lambda s: "API Error" in s and not BUSY_RE.search(s), 10)
        time.sleep(0.5)
        save(g, "error400")
        mock.set_mode("ok", reply=QUOTING_REPLY)
        te = g.submit("what did the log say")
        g.wait_event("AfterAgent", 15, after=te)
        g.wait_for(lambda s: "That was yesterday" in s and not BUSY_RE.search(s), 10)
        time.sleep(0.5)
        save(g, "reply_quotes_error")
        mock.set_mode("error400")
        te = g.submit("and now")
        g.wait_event("AfterAgent", 15, after=te)
        g.wait_for(lambda s: s.count("[API Error:") >= 2 and not BUSY_RE.search(s), 10)
        time.sleep(0.5)
        save(g, "error400_after_quote")
    finally:
        g.stop()
        mock.stop()
        shutil.rmtree(FIXTURE_ROOT, ignore_errors=True)
    return written


if __name__ == "__main__":
    import argparse
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    ap = argparse.ArgumentParser(description="capture Gemini CLI screen fixtures")
    ap.add_argument("--fixtures", default=str(Path(__file__).resolve().parents[1] / "fixtures" / "screens" / "gemini"))
    ap.add_argument("--turn-ends", action="store_true", help="only the screens of textless turn ends")
    a = ap.parse_args()
    if not a.turn_ends:
        capture_fixtures(a.fixtures)
    capture_turn_end_fixtures(a.fixtures)
