"""`make demo`: rk on a private tmux server with scripted agents, for about a minute.

What happens:

1. a private tmux server `rk-demo-<pid>` (never your default server, and its own
   per run, so two demos never meet) with four fake
   worker agents and, through `rk operator`, an operator window;
2. one entry of each kind, with short intervals: `every`, `cron`, `backoff`,
   and the operator's `--idle-every` + `wake_on`; and two scenes of what rk
   refuses to do: worker-c's agent exits and leaves a shell (rk never types
   into it), and a human types a draft into worker-d (rk never types over it);
3. the ticker in the background (polling every 5 s, nudged at once by every
   state change the agents report);
4. the deliveries and state changes printed live; then `rk cron log` and
   `rk cron list`; then everything is stopped and removed.

`--attach` (`make demo ARGS=--attach`) opens the server in your terminal so
you can watch the panes (a `narrator` window prints the live log); detach with
C-b d and the demo cleans up. Run from inside tmux, the demo's server takes
C-a as its prefix, so C-a d detaches the demo and C-b d still means your own
session (the demo says so before it attaches).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SERVER = f"rk-demo-{os.getpid()}"  #: one private server per run
AGENT = [sys.executable, str(HERE / "fake_agent.py")]
KINDS = ("every", "cron", "backoff", "wake")
#: What the two refusal scenes must show in the log.
REFUSALS = {"shell": "skipped-absent: shell in pane", "draft": "skipped-busy: draft"}
DRAFT = "half-typed thought, not sent yet"
#: The scripted human: (seconds after the ticker started, what it does); it types
#: once worker-d is idle (text typed while the agent works is type-ahead the
#: agent's screen never shows, and then reads as one line with what follows),
#: and between the draft entry's fires (a key pressed in the instant between rk's
#: look and its paste is a race no look can win; a human mid-sentence is not).
HUMAN = ((8.0, "type"), (30.0, "send"))
#: entry id → the prompt it types (the narration shows each one as it is typed)
PAYLOADS: dict[str, str] = {}


#: The environment of every tmux client we run; the server (and so every agent
#: pane) inherits it, including RK_STATE_DIR, so the agents' state reports
#: nudge the demo's ticker.
TMUX_ENV = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}


def tmux(*args: str, check: bool = True) -> str:
    proc = subprocess.run(["tmux", "-L", SERVER, *args], capture_output=True, text=True, env=TMUX_ENV)
    if check and proc.returncode != 0:
        raise SystemExit(f"demo: tmux {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout


def rk(*args: str, env: dict, check: bool = True) -> str:
    proc = subprocess.run([sys.executable, "-m", "rk", *args], capture_output=True, text=True, env=env)
    if check and proc.returncode != 0:
        raise SystemExit(f"demo: rk {' '.join(args)} failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


def width() -> int:
    """The closing tables' width: this terminal's, else 80 columns (piped, as in a test)."""
    return shutil.get_terminal_size((80, 24)).columns if sys.stdout.isatty() else 80


def rk_on_screen(*args: str, env: dict, cols: int) -> str:
    """`rk ARGS` as on a terminal `cols` wide (a pseudo-terminal of its own), so its
    tables fit the width as the user's own `rk cron list` would; what it printed."""
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
    env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen([sys.executable, "-m", "rk", *args], env=env, stdout=follower, stderr=subprocess.DEVNULL)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")


def closing(env: dict, cols: int) -> str:
    """The closing tables: the whole log, then the list, each `cols` wide."""
    log = rk_on_screen("cron", "log", "-n", "0", "-L", SERVER, env=env, cols=cols)
    listed = rk_on_screen("cron", "list", "-L", SERVER, env=env, cols=cols)
    return f"\n$ rk cron log -n 0\n{log}$ rk cron list\n{listed}"


def panes() -> dict[str, tuple[str, str]]:
    """window name → (pane id, agent state option)."""
    out = tmux("list-panes", "-a", "-F", "#{window_name}\t#{pane_id}\t#{@rk_pane_agent_state}", check=False)
    rows = {}
    for line in out.splitlines():
        name, pane, state = (line.split("\t") + ["", ""])[:3]
        rows[name] = (pane, state.split(":")[0])
    return rows


def wait_until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise SystemExit(f"demo: timed out waiting for {what}")


def new_tally() -> dict[str, int]:
    """The counters the summary prints, every one counted from log lines: deliveries
    by kind, the refusals each scene shows, and what a scene must never log
    (`<scene>:wrong`: a delivery into the shell; rk's prompt typed onto the draft, seen
    in worker-d's pane by `fused`)."""
    return {k: 0 for k in (*KINDS, *REFUSALS, *(f"{s}:wrong" for s in REFUSALS))}


def count_line(tally: dict[str, int], kind: str, outcome: str) -> None:
    """Count one log line of an entry of `kind`. A delivery counts for its kind; the
    scenes' entries count their refusal (a delivery of theirs is no refusal), and a
    delivery into the shell counts as that scene's failure."""
    if kind in REFUSALS:
        if outcome == REFUSALS[kind]:
            tally[kind] += 1
        elif outcome == "delivered" and kind == "shell":
            tally["shell:wrong"] += 1
    elif outcome == "delivered" and kind in tally:
        tally[kind] += 1


def fused(screen: str) -> bool:
    """Whether worker-d's agent received the draft with rk's prompt glued to it."""
    return any(f"got: {DRAFT}" in line and not line.rstrip().endswith(DRAFT) for line in screen.splitlines())


def summary(tally: dict[str, int]) -> str:
    """The closing line: only what the log showed."""
    kinds = ", ".join(f"{k}: {tally[k]}" for k in KINDS)
    refused = ", ".join(f"{REFUSALS[k]}: {tally[k]}" for k in REFUSALS)
    return f"deliveries by kind (from the log) — {kinds}\nrefused — {refused}"  # two lines: 80 columns


def failed_scenes(tally: dict[str, int]) -> list[str]:
    """One line per scene whose delivery or refusal the log does not show."""
    failed = [f"{k}: no delivery logged" for k in KINDS if not tally[k]]
    failed += [f"{s}: no '{REFUSALS[s]}' logged" for s in REFUSALS if not tally[s]]
    failed += [f"{s}: rk typed into it" for s in REFUSALS if tally[f"{s}:wrong"]]
    return failed


def setup(env: dict) -> dict[str, str]:
    """Start the server and agents, add the entries; return entry id → kind."""
    tmux("kill-server", check=False)
    tmux(
        "-f",
        "/dev/null",
        "new-session",
        "-d",
        "-s",
        "demo",
        "-n",
        "worker-a",
        "-x",
        "160",
        "-y",
        "40",
        "--",
        *AGENT,
        "worker-a",
        "--ask-every",
        "2",
        "--seed",
        "1",
    )
    tmux("new-window", "-d", "-t", "demo:", "-n", "worker-b", "--", *AGENT, "worker-b", "--seed", "2")
    tmux(
        "new-window",
        "-d",
        "-t",
        "demo:",
        "-n",
        "worker-c",
        "--",
        *AGENT,
        "worker-c",
        "--seed",
        "3",
        "--exit-after",
        "10",
    )
    tmux("new-window", "-d", "-t", "demo:", "-n", "worker-d", "--", *AGENT, "worker-d", "--seed", "4")
    print(
        rk("operator", "--command", " ".join([*AGENT, "operator", "--work", "1", "2"]), "-L", SERVER, env=env).strip()
    )
    wait_until(
        lambda: all(panes().get(w, ("", ""))[1] for w in ("worker-a", "worker-b", "worker-c", "worker-d", "operator")),
        30,
        "the five agents to report idle",
    )
    p = panes()
    kinds = {}

    def add(kind: str, *args: str) -> None:
        out = rk("cron", "add", *args, "-L", SERVER, "--json", env=env)
        import json

        entry = json.loads(out)["result"]
        kinds[entry["id"]] = kind
        PAYLOADS[entry["id"]] = args[0]
        print(f"  added {entry['id']}  {kind:<8} -> {entry['target']:<14} {entry['name']}")  # the name says when

    print("entries:")
    add("every", "status? (every 20s)", "--every", "20s", "--pane", p["worker-a"][0])
    add(
        "cron",
        "minute report (cron * * * * *)",
        "--cron",
        "* * * * *",
        "--deliver",
        "when-idle",
        "--pane",
        p["worker-b"][0],
    )
    add(
        "backoff",
        "still there? (backoff 30s→2m)",
        "--backoff",
        "--min",
        "30s",
        "--max",
        "2m",
        "--deliver",
        "skip-if-busy",
        "--pane",
        p["worker-b"][0],
    )
    add(
        "wake",
        "check on the workers",
        "--idle-every",
        "30s",
        "--wake-on",
        "agent-state-change",
        "--wake-debounce",
        "5s",
        "--deliver",
        "skip-if-busy",
        "--role",
        "operator",
    )
    add("shell", "echo this would run in a shell", "--every", "15s", "--pane", p["worker-c"][0])
    add("draft", "anything new? (every 10s)", "--every", "10s", "--deliver", "skip-if-busy", "--pane", p["worker-d"][0])
    print("""
  every    fires on a fixed interval since its last line
  cron     fires at wall-clock times; when-idle holds it while the agent works
  backoff  fires 30s after the agent's last activity, then 1m, 2m… while quiet
  wake     the operator, an agent that supervises the workers (its window
           carries the role operator): --idle-every 30s, shown as backoff
           30s→30s (a ladder whose min is its max: 30s after its last activity,
           then every 30s while quiet), and at once when a worker goes idle or
           asks a question (wake_on agent-state-change)
  shell    worker-c's agent exits after 10s and leaves a shell: rk must never
           type there
  draft    a human types into worker-d's composer and leaves it: rk must not
           type over it""")
    return kinds


def human(action: str, pane: str, elapsed: float) -> None:
    """The scripted human at worker-d: type a draft, later send it."""
    if action == "type":
        tmux("send-keys", "-t", pane, "-l", DRAFT)
        print(f'{elapsed:5.1f}s  (a human types into worker-d and leaves it:\n{"":8}"{DRAFT}")')
    else:
        tmux("send-keys", "-t", pane, "Enter")
        print(f"{elapsed:5.1f}s  (the human sends the draft; rk's held fires can go through now)")


def narrate(env: dict, kinds: dict[str, str], minimum: float, maximum: float) -> dict[str, int]:
    """Print log lines and state changes as they happen, and play the human;
    stop once every kind has delivered, both refusals were logged and `minimum`
    has passed, or at `maximum`."""
    from rk.core.log.delivery import parse_line

    log_path = Path(env["RK_STATE_DIR"]) / f"{SERVER}.log"
    start = time.monotonic()
    offset = 0
    states: dict[str, str] = {}
    delivered = new_tally()
    names = {pane: name for name, (pane, _) in panes().items()}
    script = list(HUMAN)
    last_draft_fire = -100.0  #: when the draft entry last wrote a line (seconds into the run)
    while True:
        elapsed = time.monotonic() - start
        while script and elapsed >= script[0][0]:
            pane, state = panes()["worker-d"]
            if script[0][1] == "type" and (state != "idle" or not 2 <= elapsed - last_draft_fire <= 7):
                break  # a human types into the composer, not into a busy agent's type-ahead
            human(script.pop(0)[1], pane, elapsed)
        for name, (_pane, state) in sorted(panes().items()):
            if states.get(name) != state:
                if name in states:
                    note = "  (its agent exited: a shell now)" if name == "worker-c" and not state else ""
                    print(f"{elapsed:5.1f}s  {name:<9} is {state or 'unknown'}{note}")
                states[name] = state
        try:
            with open(log_path, "rb") as fh:
                fh.seek(offset)
                chunk = fh.read()
        except FileNotFoundError:
            chunk = b""
        if chunk.endswith(b"\n"):
            offset += len(chunk)
            for raw in chunk.splitlines():
                line = parse_line(raw)
                if line is None:
                    continue
                kind = kinds.get(line.entry, "?")
                label = "wake" if line.reason == "wake" else kind
                count_line(delivered, kind, line.outcome)
                if kind == "draft":
                    last_draft_fire = elapsed
                who = names.get(line.target, line.target or "-")
                print(f"{elapsed:5.1f}s  >>> {label:<8} {line.entry} -> {who:<9} {line.reason:<9} {line.outcome}")
                if line.outcome == "delivered" and line.entry in PAYLOADS:
                    print(f'{"":7}      typed "{PAYLOADS[line.entry]}" into {who}, then Enter')
        done = not failed_scenes(delivered) and not script
        if (done and elapsed >= minimum) or elapsed >= maximum:
            return delivered
        time.sleep(0.2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attach", action="store_true", help="watch the panes in this terminal")
    parser.add_argument("--min", type=float, default=45, help="seconds to run at least")
    parser.add_argument("--max", type=float, default=80, help="seconds to run at most")
    parser.add_argument("--narrator", metavar="STATE_DIR", help=argparse.SUPPRESS)
    parser.add_argument("--server", help=argparse.SUPPRESS)  # the narrator's: its parent's server
    args = parser.parse_args()
    global SERVER
    SERVER = args.server or SERVER
    if shutil.which("tmux") is None:
        print("demo: tmux is not installed", file=sys.stderr)
        return 1
    if args.narrator:  # running inside the demo server (attach mode)
        env = dict(os.environ, RK_STATE_DIR=args.narrator)
        kinds = dict(line.split("=", 1) for line in Path(args.narrator, "kinds").read_text().split("\n") if line)
        PAYLOADS.update(
            dict(line.split("=", 1) for line in Path(args.narrator, "payloads").read_text().split("\n") if line)
        )
        narrate(env, kinds, args.min, args.max)
        detach = "C-a d" if os.environ.get("RK_DEMO_NESTED") else "C-b d"
        print(f"\ndemo finished — detach with {detach} to clean up")
        time.sleep(3600)
        return 0
    state = tempfile.mkdtemp(prefix="rk-demo-")
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE", "RK_NOW")}
    env["RK_STATE_DIR"] = state
    TMUX_ENV["RK_STATE_DIR"] = state
    env["RK_TICK_INTERVAL"] = TMUX_ENV["RK_TICK_INTERVAL"] = "5"  # the poll, so `add` takes --every 10s
    print(f"rk demo: private tmux server '{SERVER}', state in {state}\n")
    try:
        kinds = setup(env)
        print("\n" + rk("cron", "ticker", "start", "--interval", "5", env=env).strip())
        print("live (seconds since the ticker started):\n")
        if args.attach:
            if not sys.stdin.isatty():
                print("demo: --attach needs a terminal", file=sys.stderr)
                return 2
            Path(state, "kinds").write_text("\n".join(f"{k}={v}" for k, v in kinds.items()))
            Path(state, "payloads").write_text("\n".join(f"{k}={v}" for k, v in PAYLOADS.items()))
            nested = bool(os.environ.get("TMUX"))
            if nested:  # the demo's server gets its own prefix: C-b stays the user's own session's
                tmux("set-option", "-g", "prefix", "C-a")
                tmux("set-environment", "-g", "RK_DEMO_NESTED", "1")
                print("you are inside tmux: the demo opens nested. Its prefix is C-a:")
                print("  C-a d detaches the demo (and it cleans up); C-b d would detach YOUR session instead")
                time.sleep(3)
            tmux(
                "new-window",
                "-t",
                "demo:",
                "-n",
                "narrator",
                "--",
                sys.executable,
                __file__,
                "--narrator",
                state,
                "--server",
                SERVER,
                "--min",
                str(args.min),
                "--max",
                str(args.max),
            )
            subprocess.run(
                ["tmux", "-L", SERVER, "attach", "-t", "demo"], env={k: v for k, v in os.environ.items() if k != "TMUX"}
            )
            delivered = None
        else:
            delivered = narrate(env, kinds, args.min, args.max)
        print(closing(env, width()))
        if delivered is not None:
            print(summary(delivered))
            shell = tmux("capture-pane", "-p", "-t", panes()["worker-c"][0])
            if "echo this would run in a shell" in shell:
                print("demo: the shell in worker-c received a prompt", file=sys.stderr)
                return 1
            if fused(tmux("capture-pane", "-p", "-S", "-", "-t", panes()["worker-d"][0])):
                delivered["draft:wrong"] += 1
            failed = failed_scenes(delivered)
            for why in failed:
                print(f"demo: scene failed: {why}", file=sys.stderr)
            if failed:
                return 1
        return 0
    finally:
        rk("cron", "ticker", "stop", env=env, check=False)
        tmux("kill-server", check=False)
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
