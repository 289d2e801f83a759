"""Run the real OpenCode TUI offline in a private tmux server, against mock_opencode.py.

Stdlib only. Needs `opencode` (npm package `opencode-ai`, a 185 MB Bun-compiled ELF; give
its path with OPENCODE_BIN or put it on PATH) and tmux. Typical use:

    with OpenCodeRun() as oc:               # mock + throwaway HOME/XDG + tmux server + opencode
        oc.wait_screen(lambda s: classify(s) == "idle", timeout=90)   # 6-18 s here
        t = oc.send_prompt("hi")             # type, wait 0.3 s, Enter
        oc.wait_event("session.idle", after=t)
        print(oc.events(), oc.capture())

`python3 opencode_launch.py DIR [--rk RK] [--opencode BIN]` re-records the screen fixtures
(tests/fixtures/screens/opencode/) and prints the events, rk states and screen classes
per scenario as JSON.

What makes it start offline (see OPENCODE.md): the config dir is seeded
(`seed_config_deps`) so OpenCode skips its blocking start-up `npm install
@opencode-ai/plugin` (with a registry that does not answer it never draws at all);
OPENCODE_DISABLE_MODELS_FETCH=1 / OPENCODE_DISABLE_AUTOUPDATE=1 stop the other network
calls; the config's only provider is the mock (`enabled_providers`), and `model` and
`small_model` point at it, so the title side call goes to the mock too.

Every plugin event goes to `events.jsonl` through an event-logger plugin
(`{"t": epoch_s, "type": ..., "p": compact properties}`); `extra_plugins` adds more
plugin files (e.g. rk's own, from `rk agent setup opencode`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from harness import clean_env
from tmux_pane import TmuxPane

#: tmux servers started here (and the agents in them) see no CI markers, as on a user's machine.
AGENT_ENV = clean_env()

try:
    from mock_opencode import MODEL_ID, start_mock
except ImportError:  # imported as tests.agents.opencode_launch
    from .mock_opencode import MODEL_ID, start_mock

COLS, ROWS = 120, 40

EVENT_LOGGER = r"""// Logs every OpenCode plugin event, one JSON line each, for tests.
import { appendFileSync } from "node:fs";
const OUT = __OUT__;
function compact(v, depth = 0) {
  if (typeof v === "string") return v.length > 160 ? v.slice(0, 160) + "...(" + v.length + ")" : v;
  if (v === null || typeof v !== "object") return v;
  if (depth > 5) return "...";
  if (Array.isArray(v)) return v.slice(0, 10).map((x) => compact(x, depth + 1));
  const o = {};
  for (const k of Object.keys(v)) o[k] = compact(v[k], depth + 1);
  return o;
}
function log(rec) {
  try { appendFileSync(OUT, JSON.stringify(rec) + "\n"); } catch {}
}
export const EventLogger = async (ctx) => {
  log({ t: Date.now() / 1000, type: "plugin.loaded", p: { directory: ctx && ctx.directory, tmux_pane: process.env.TMUX_PANE || null, pid: process.pid } });
  return {
    event: async ({ event }) => {
      log({ t: Date.now() / 1000, type: event && event.type, p: compact((event && event.properties) || {}) });
    },
    "permission.ask": async (input, output) => {
      log({ t: Date.now() / 1000, type: "hook:permission.ask", p: compact({ input, output }) });
    },
  };
};
"""

OFFLINE_ENV = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_TERMINAL_TITLE": "1",
}

_counter = 0


def find_opencode() -> str | None:
    return os.environ.get("OPENCODE_BIN") or shutil.which("opencode")


def opencode_config(base_url: str, permission: dict | None = None) -> dict:
    cfg = {
        "$schema": "https://opencode.ai/config.json",
        "model": f"mock/{MODEL_ID}",
        "small_model": f"mock/{MODEL_ID}",
        "enabled_providers": ["mock"],
        "autoupdate": False,
        "share": "disabled",
        "provider": {
            "mock": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Mock",
                "options": {"baseURL": base_url, "apiKey": "sk-mock"},
                "models": {
                    MODEL_ID: {"name": "Mock Model", "tool_call": True, "limit": {"context": 200000, "output": 8192}}
                },
            }
        },
    }
    if permission:
        cfg["permission"] = permission
    return cfg


def seed_config_deps(cfgdir: Path, version: str = "*") -> None:
    """Stop OpenCode's start-up `npm install @opencode-ai/plugin` into its config dir.

    Before it loads plugins, OpenCode runs Npm.install(<config dir>) and waits for it: 7-12 s
    here with the npm registry reachable, and for ever (no frame in 150 s) when the registry
    accepts the connection but never answers. It skips the install when
    node_modules/ exists and every dependency of package.json (plus @opencode-ai/plugin) is
    listed in package-lock.json's packages[""]. Plugins that import nothing need no real files.
    """
    (cfgdir / "node_modules").mkdir(parents=True, exist_ok=True)
    deps = {"@opencode-ai/plugin": version}
    if not (cfgdir / "package.json").exists():
        (cfgdir / "package.json").write_text(json.dumps({"dependencies": deps}))
    if not (cfgdir / "package-lock.json").exists():
        (cfgdir / "package-lock.json").write_text(
            json.dumps({"lockfileVersion": 3, "requires": True, "packages": {"": {"dependencies": deps}}})
        )


class OpenCodeRun(TmuxPane):
    """One OpenCode TUI in a private tmux server (`tmux -L rk-oc-<pid>-<n> -f /dev/null`)."""

    def __init__(
        self,
        root: str | None = None,
        binary: str | None = None,
        permission: dict | None = None,
        extra_plugins: dict[str, str] | None = None,
        extra_env: dict | None = None,
        args: list[str] | None = None,
        cols: int = COLS,
        rows: int = ROWS,
    ):
        global _counter
        _counter += 1
        self.binary = binary or find_opencode()
        if not self.binary:
            raise FileNotFoundError("opencode not found (npm install opencode-ai; set OPENCODE_BIN)")
        self.root = Path(root or tempfile.mkdtemp(prefix="rk-oc-"))
        self.socket = f"rk-oc-{os.getpid()}-{_counter}"
        self.target = "oc"
        self.home, self.work = self.root / "home", self.root / "work"
        self.xdg = {
            "XDG_CONFIG_HOME": self.home / ".config",
            "XDG_DATA_HOME": self.home / ".local/share",
            "XDG_CACHE_HOME": self.home / ".cache",
            "XDG_STATE_HOME": self.home / ".local/state",
        }
        self.events_path = self.root / "events.jsonl"
        self.mock_log = self.root / "mock.jsonl"
        self.permission, self.extra_plugins, self.extra_env = permission, extra_plugins or {}, extra_env or {}
        self.args, self.cols, self.rows = args or [], cols, rows
        self.mock = None
        self.pane_pid: int | None = None
        self.socket_path = ""
        self.t_launch = 0.0

    # -- lifecycle ---------------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    #: Where the CLI reads its config: `$XDG_CONFIG_HOME/<config_dir>/<config_file>` (a fork's names differ).
    config_dir, config_file = "opencode", "opencode.json"
    #: The switches that keep the CLI off the network (a fork's are named after it).
    offline_env = OFFLINE_ENV

    def config(self) -> dict:
        """The config written before launch: the mock provider and the permissions."""
        return opencode_config(self.mock.base_url, self.permission)

    def start(self) -> None:
        self.work.mkdir(parents=True, exist_ok=True)
        for p in self.xdg.values():
            p.mkdir(parents=True, exist_ok=True)
        self.mock = start_mock(0, str(self.mock_log))
        cfgdir = self.xdg["XDG_CONFIG_HOME"] / self.config_dir
        (cfgdir / "plugins").mkdir(parents=True, exist_ok=True)
        (cfgdir / self.config_file).write_text(json.dumps(self.config(), indent=2))
        (cfgdir / "plugins" / "zz-event-logger.js").write_text(
            EVENT_LOGGER.replace("__OUT__", json.dumps(str(self.events_path)))
        )
        for name, text in self.extra_plugins.items():
            (cfgdir / "plugins" / name).write_text(text)
        seed_config_deps(cfgdir)
        env = {
            "HOME": str(self.home),
            **{k: str(v) for k, v in self.xdg.items()},
            **self.offline_env,
            "TERM": "xterm-256color",
            "COLORTERM": "truecolor",
            **self.extra_env,
        }
        envargs = [f"{k}={v}" for k, v in env.items()]
        cmd = ["env", *envargs, self.binary, *self.args]
        self._tmux(
            "new-session", "-d", "-s", "oc", "-x", str(self.cols), "-y", str(self.rows), "-c", str(self.work), *cmd
        )
        self._tmux("set-option", "-g", "remain-on-exit", "off")
        self.t_launch = time.time()
        self.pane_pid = int(self.display("#{pane_pid}"))
        self.socket_path = self.display("#{socket_path}")

    def stop(self) -> None:
        pid = self.pane_pid
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, env=AGENT_ENV)
        if pid:  # opencode outlives its pty for ~1 s after SIGHUP; make sure it is gone
            for sig in (15, 15, 9):
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    break
                time.sleep(1.0)
        if self.socket_path:  # kill-server leaves the socket file behind here
            try:
                os.unlink(self.socket_path)
            except OSError:
                pass
        if self.mock:
            self.mock.shutdown()
            self.mock.server_close()
            self.mock = None

    # -- tmux --------------------------------------------------------------------
    def paste(self, text: str) -> None:
        """Bracketed paste, as rk delivers (load-buffer + paste-buffer -p -d)."""
        subprocess.run(
            [
                "tmux",
                "-L",
                self.socket,
                "load-buffer",
                "-b",
                "rkoc",
                "-",
                ";",
                "paste-buffer",
                "-p",
                "-d",
                "-b",
                "rkoc",
                "-t",
                "oc",
            ],
            input=text,
            text=True,
            check=True,
            env=AGENT_ENV,
        )

    def send_prompt(self, text: str, gap: float = 0.3) -> float:
        """Type text, wait `gap`, press Enter; returns the time of the Enter."""
        self.type_text(text)
        time.sleep(gap)
        self.send_keys("Enter")
        return time.time()

    # -- events ------------------------------------------------------------------
    def events(self, noisy: bool = False) -> list[dict]:
        try:
            lines = self.events_path.read_text().splitlines()
        except FileNotFoundError:
            return []
        evs = [json.loads(x) for x in lines if x.strip()]
        if not noisy:
            evs = [e for e in evs if e.get("type") not in NOISY_EVENTS]
        return evs

    def wait_event(self, type_: str, after: float = 0.0, timeout: float = 30.0, pred=None) -> dict:
        end = time.time() + timeout
        while time.time() < end:
            for e in self.events(noisy=True):
                if e.get("type") == type_ and e["t"] >= after and (pred is None or pred(e)):
                    return e
            time.sleep(0.1)
        raise TimeoutError(f"no {type_} event after {after}")

    # -- rk state (when rk's plugin is installed) ---------------------------------
    def rk_state(self) -> str:
        """`@rk_pane_agent_state` of the pane ("" if unset)."""
        out = subprocess.run(
            ["tmux", "-L", self.socket, "show-options", "-p", "-v", "-q", "-t", "oc", "@rk_pane_agent_state"],
            capture_output=True,
            text=True,
            env=AGENT_ENV,
        ).stdout
        return out.strip()

    # -- screen classes (see OPENCODE.md) ----------------------------------------
    @staticmethod
    def classify(screen: str) -> str:
        return classify(screen)


NOISY_EVENTS = {"message.part.delta", "file.watcher.updated", "lsp.client.diagnostics", "lsp.updated"}


_RULE = re.compile(r"^\s*╹▀+\s*$")
_BAR = re.compile(r"^\s*┃(.*)$")
_PLACEHOLDER = re.compile(r'^Ask anything… ".*"$')
_SPINNER = re.compile(r"[■⬝]{8}")


def composer_text(screen: str) -> str | None:
    """The text in the composer box ("" when empty or showing its placeholder), or None
    when no composer is drawn (a permission dialog replaces it).

    The composer is the `┃` block right above the `╹▀▀▀…` rule; its last line is the
    agent/model line (`Build · Mock Model Mock`), its first and last text rows padding.
    A draft that reads exactly like the placeholder is told apart only by colour (-e):
    placeholder fg 128,128,128, typed text fg 238,238,238.
    """
    lines = screen.splitlines()
    idx = [i for i, line in enumerate(lines) if _RULE.match(line)]
    if not idx:
        return None
    block: list[str] = []
    i = idx[-1] - 1
    while i >= 0 and _BAR.match(lines[i]):
        block.insert(0, _BAR.match(lines[i]).group(1).strip())
        i -= 1
    if len(block) < 2:
        return None
    text = "\n".join(x for x in block[:-1]).strip()
    return "" if _PLACEHOLDER.match(text) else text


def classify(screen: str) -> str:
    """One of: dialog, busy, idle, draft, blank, unknown (see OPENCODE.md)."""
    if not screen.strip():
        return "blank"
    if "Permission required" in screen and "Allow once" in screen:
        return "dialog"
    tail = "\n".join(screen.rstrip().splitlines()[-3:])
    if "esc interrupt" in tail or "esc again to interrupt" in tail or _SPINNER.search(tail):
        return "busy"
    if "ctrl+p commands" in screen:
        text = composer_text(screen)
        if text is None:
            return "unknown"
        return "draft" if text else "idle"
    return "unknown"


def process_tree(pid: int) -> str:
    """`ps -o pid,ppid,pgid,tpgid,comm` for pid and its descendants."""
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True).stdout
    kids: dict[int, list[int]] = {}
    for line in out.splitlines():
        a, b = line.split()
        kids.setdefault(int(b), []).append(int(a))
    pids, todo = [], [pid]
    while todo:
        p = todo.pop(0)
        pids.append(p)
        todo.extend(sorted(kids.get(p, [])))
    return subprocess.run(
        ["ps", "-o", "pid,ppid,pgid,tpgid,comm", "-p", ",".join(map(str, pids))], capture_output=True, text=True
    ).stdout


# -- recording the screen fixtures ------------------------------------------------------

SUMMARY_SKIP = NOISY_EVENTS | {
    "plugin.added",
    "catalog.updated",
    "reference.updated",
    "integration.updated",
    "session.diff",
    "session.updated",
    "message.updated",
}


def _brief(e: dict) -> str:
    p, typ = e.get("p") or {}, e.get("type")
    if typ == "session.status":
        st = p.get("status") or {}
        return f"session.status {st.get('type')}" + (
            f" attempt={st.get('attempt')} message={st.get('message')!r}" if st.get("type") == "retry" else ""
        )
    if typ == "session.error":
        err = p.get("error") or {}
        data = err.get("data") or {}
        return f"session.error {err.get('name')} statusCode={data.get('statusCode')} message={data.get('message')!r}"
    if typ == "message.part.updated":
        part = p.get("part") or {}
        extra = part.get("tool", "") + (" " + part.get("state", {}).get("status", "") if part.get("state") else "")
        return f"message.part.updated {part.get('type')} {extra}".rstrip()
    if typ == "permission.asked":
        return f"permission.asked {p.get('permission')} {p.get('patterns')}"
    if typ == "permission.replied":
        return f"permission.replied {p.get('reply')}"
    return typ


def record_fixtures(fixtures: str, binary: str | None = None, rk: str | None = None, root: str | None = None) -> dict:
    """Drive one OpenCode through the scenarios, writing <fixtures>/<name>.txt (capture-pane -p -J)
    and .ansi (-e) at 120x40. With `rk` (a command that runs `rk`), rk's own plugin is installed
    too and `@rk_pane_agent_state` is sampled. Returns {scenario: {"events": [...], "rk": [...]}}."""
    import threading

    extra = {}
    if rk:
        import sys

        sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
        from rk.agent.setup import opencode_plugin

        extra["rk.js"] = opencode_plugin(rk)
    out = Path(fixtures)
    out.mkdir(parents=True, exist_ok=True)
    result: dict = {}
    with OpenCodeRun(root=root, binary=binary, extra_plugins=extra) as oc:
        rk_log: list[tuple[float, str]] = []
        screen_log: list[tuple[float, str]] = []
        stop = threading.Event()

        def sample():  # rk's pane state and the screen class, on change
            last_rk = last_screen = None
            while not stop.is_set():
                try:
                    v = oc.rk_state().split(":")[0] if rk else ""
                    c = classify(oc.capture())
                except Exception:
                    v = c = "?"
                if rk and v != last_rk:
                    rk_log.append((time.time(), v))
                    last_rk = v
                if c != last_screen:
                    screen_log.append((time.time(), c))
                    last_screen = c
                time.sleep(0.05)

        threading.Thread(target=sample, daemon=True).start()
        marks: list[tuple[float, str]] = []

        def cap(name: str) -> None:
            (out / f"{name}.txt").write_text(oc.capture())
            (out / f"{name}.ansi").write_text(oc.capture(ansi=True))

        def scenario(name: str) -> float:
            marks.append((time.time(), name))
            return time.time()

        def note(what: str) -> None:  # a keystroke, shown in the timelines
            screen_log.append((time.time(), f"<{what}>"))

        def key(k: str) -> None:
            note(k)
            oc.send_keys(k)

        def prompt(text: str) -> None:
            oc.type_text(text)
            time.sleep(0.3)
            key("Enter")

        def idle_after(t: float, timeout: float = 60.0) -> None:
            oc.wait_event("session.idle", after=t, timeout=timeout)
            time.sleep(1.0)

        def started(t: float) -> None:  # the reply stream has begun
            oc.wait_event(
                "message.part.updated",
                after=t,
                timeout=30,
                pred=lambda e: (e["p"].get("part") or {}).get("type") == "step-start",
            )

        scenario("launch")
        oc.wait_screen(lambda s: classify(s) == "idle", timeout=90)
        time.sleep(1.0)
        cap("idle_home")
        scenario("draft_home")
        oc.type_text("half-typed draft")
        time.sleep(1.0)
        cap("draft_home")
        oc.send_keys("C-u")
        time.sleep(0.5)
        t = scenario("turn")
        prompt("say hello")
        idle_after(t)
        cap("idle")
        t = scenario("busy")
        prompt("a slow one mock:slow=8")
        started(t)
        time.sleep(1.0)
        cap("busy")
        oc.type_text("typed while busy")
        time.sleep(0.3)
        key("Enter")
        time.sleep(1.0)
        cap("queued")
        idle_after(t)
        scenario("draft")
        oc.type_text("half-typed draft")
        time.sleep(1.0)
        cap("draft")
        oc.send_keys("C-u")
        time.sleep(0.5)
        scenario("paste")
        oc.paste("line one\nline two\nline three")
        time.sleep(1.0)
        cap("paste_chip")
        oc.send_keys("C-u")
        time.sleep(0.5)
        t = scenario("error_500")
        prompt("fail please mock:status=500 mock:retry-after-ms=2500")
        oc.wait_event("session.status", after=t, timeout=30, pred=lambda e: e["p"]["status"]["type"] == "retry")
        time.sleep(1.0)
        cap("retry")
        idle_after(t)
        cap("error_500")
        t = scenario("error_429")
        prompt("rate limit please mock:status=429 mock:retry-after-ms=500")
        idle_after(t)
        cap("error_429")
        t = scenario("retry_then_ok")
        prompt("flaky mock:status=503 mock:fail=1 mock:retry-after-ms=1000")
        idle_after(t)
        t = scenario("esc")
        prompt("long one mock:slow=40")
        started(t)
        time.sleep(1.0)
        key("Escape")
        time.sleep(0.7)
        cap("esc_once")
        key("Escape")
        idle_after(t)
        cap("interrupted")
        t = scenario("permission")
        prompt("read it mock:read=/etc/hostname")
        oc.wait_event("permission.asked", after=t, timeout=30)
        time.sleep(1.0)
        cap("dialog")
        key("Enter")  # "Allow once" is selected
        idle_after(t)
        t = scenario("permission_reject")
        prompt("read it mock:read=/var/log/dpkg.log")
        oc.wait_event("permission.asked", after=t, timeout=30)
        time.sleep(1.0)
        key("Escape")  # = Reject
        idle_after(t)
        t = scenario("tool_running")
        prompt("run it mock:bash=sleep 5")
        oc.wait_event(
            "message.part.updated",
            after=t,
            timeout=30,
            pred=lambda e: (e["p"].get("part") or {}).get("state", {}).get("status") == "running",
        )
        time.sleep(1.5)
        cap("tool_running")
        result["_process_tree"] = process_tree(oc.pane_pid)
        result["_pane_current_command"] = oc.display("#{pane_current_command}")
        idle_after(t)
        scenario("end")
        stop.set()
        evs = [e for e in oc.events(noisy=True) if e.get("type") not in SUMMARY_SKIP]
        for i, (t0, name) in enumerate(marks[:-1]):
            t1 = marks[i + 1][0]
            result[name] = {
                "events": [f"+{e['t'] - t0:6.2f} {_brief(e)}" for e in evs if t0 <= e["t"] < t1],
                "rk": [f"+{t - t0:6.2f} {v}" for t, v in rk_log if t0 <= t < t1],
                "screen": [f"+{t - t0:6.2f} {v}" for t, v in screen_log if t0 <= t < t1],
            }
        result["_mock"] = [{k: r.get(k) for k in ("kind", "status", "prompt")} for r in oc.mock.requests]
    return result


def main(argv: list[str] | None = None) -> int:
    import argparse
    import sys

    ap = argparse.ArgumentParser(description="Record OpenCode screen fixtures against the mock.")
    ap.add_argument("fixtures", help="directory for <scenario>.txt/.ansi")
    ap.add_argument("--opencode", help="opencode binary (default: $OPENCODE_BIN or PATH)")
    ap.add_argument("--rk", help="command that runs rk (installs rk's plugin and samples its pane state)")
    ap.add_argument("--root", help="work dir (default: a new temp dir)")
    args = ap.parse_args(argv)
    res = record_fixtures(args.fixtures, binary=args.opencode, rk=args.rk, root=args.root)
    json.dump(res, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
