"""Helpers for the CLI tests: run `rk` for real (a subprocess) or in-process,
with a private environment, and snapshot a state directory to prove that a
command left it byte-for-byte untouched."""

from __future__ import annotations

import contextlib
import io
import json
import os
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

#: 2027-01-15T08:00:00Z, a Friday.
T0 = 1_800_000_000

#: Settings variables a developer's shell might carry; never inherited by a test.
_SCRUB = (
    "TMUX",
    "TMUX_PANE",
    "RK_NOW",
    "RK_STATE_DIR",
    "RK_CONFIG",
    "RK_DEBUG",
    "RK_MAX_ENTRIES",
    "RK_RATE_PER_HOUR",
    "RK_LOG_MAX_BYTES",
    "RK_LOG_KEEP",
    "RK_TICK_INTERVAL",
    "RK_RESPAWN_TIMEOUT",
    "RK_OPERATOR_COMMAND",
    "RK_LOCK_WAIT",
    "XDG_STATE_HOME",
    "XDG_CONFIG_HOME",
    "TZ",
    # a CI runner's colour switches (typer forces a terminal under GITHUB_ACTIONS)
    "GITHUB_ACTIONS",
    "FORCE_COLOR",
    "PY_COLORS",
    "NO_COLOR",
)


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self):
        """The one JSON document on stdout (fails if there is anything else)."""
        return json.loads(self.out)

    def __str__(self) -> str:  # shown by pytest when an assertion fails
        return f"exit {self.code}\n--- stdout\n{self.out}--- stderr\n{self.err}"


def make_env(root: Path, **extra: str) -> dict[str, str]:
    """A clean environment: state/home/config under `root`, no TMUX, TZ=UTC,
    and a tmux socket dir of our own so no real server can ever be seen."""
    env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    env.update(
        RK_STATE_DIR=str(root / "state"),
        HOME=str(home),
        XDG_CONFIG_HOME=str(root / "config"),
        TZ="UTC",
    )
    env.setdefault("TMUX_TMPDIR", str(root / "no-tmux"))
    env.update(extra)
    return env


def run_in_pty(args: list[str], env: dict[str, str], cols: int | None = None) -> str:
    """`python -m rk ARGS` on a terminal (`cols` wide when given); what it printed."""
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    if cols is not None:
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, cols, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "rk", *args], env=env, stdout=follower, stderr=follower)
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
    return b"".join(chunks).decode("utf-8", "replace")


def run_sub(args, env, *, timeout: float = 60, umask: int | None = None, cwd=None) -> Result:
    """`python -m rk ARGS` as a real process."""
    kwargs = {}
    if umask is not None:
        kwargs["preexec_fn"] = lambda: os.umask(umask)
    proc = subprocess.run(
        [sys.executable, "-m", "rk", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        **kwargs,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


_COMMANDS: dict = {}


@contextlib.contextmanager
def _built_once():
    """`rk.cli.main` builds the click command tree from the typer app on every
    call (~50 ms of signature inspection). Build it once per app and reuse it:
    click commands keep no state between invocations, and the tree is exactly
    the one `main` would build, so the code under test is unchanged."""
    import typer.main

    original = typer.main.get_command

    def get_command(app):
        if id(app) not in _COMMANDS:
            _COMMANDS[id(app)] = (app, original(app))
        return _COMMANDS[id(app)][1]

    typer.main.get_command = get_command
    try:
        yield
    finally:
        typer.main.get_command = original


def run_in(args, env) -> Result:
    """`rk.cli.main(ARGS)` in this process (fast); stray writes to sys.stdout /
    sys.stderr are captured too, so nothing can slip past the checks."""
    from rk.cli import main

    out, err = io.StringIO(), io.StringIO()
    with _built_once(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args), environ=dict(env), stdout=out, stderr=err)
    return Result(code, out.getvalue(), err.getvalue())


def snapshot(root: Path):
    """Names, types, modes, inodes, mtimes and contents of everything under
    `root` (None if it does not exist). An atomic rewrite changes the inode,
    a created-then-removed temp file changes the directory's mtime."""
    root = Path(root)
    if not root.exists():
        return None
    out = {}
    for p in [root, *sorted(root.rglob("*"))]:
        st = p.lstat()
        rel = "." if p == root else str(p.relative_to(root))
        content = p.read_bytes() if stat.S_ISREG(st.st_mode) else None
        out[rel] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_ino, st.st_mtime_ns, st.st_size, content)
    return out


def mode(path: Path) -> int:
    return stat.S_IMODE(Path(path).stat().st_mode)


def write_private(path: Path, text: str | bytes) -> Path:
    """Write a state file the way rk would (dir 0700, file 0600)."""
    path = Path(path)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    data = text.encode("utf-8") if isinstance(text, str) else text
    path.write_bytes(data)
    path.chmod(0o600)
    return path


def log_line(ts: int, entry: str, target: str = "", reason: str = "schedule", outcome: str = "delivered") -> str:
    """One stored log line exactly as rk writes it (compact, fixed key order)."""
    return json.dumps(
        {"ts": ts, "entry": entry, "target": target, "reason": reason, "outcome": outcome}, separators=(",", ":")
    )


def one_line_error(res: Result) -> str:
    """Assert the human error shape (one `rk: ` line on stderr, nothing on
    stdout, no traceback, no click box) and return the message."""
    assert res.out == "", f"stdout must be empty on an error\n{res}"
    lines = res.err.splitlines()
    assert len(lines) == 1 and res.err.endswith("\n"), f"exactly one stderr line expected\n{res}"
    line = lines[0]
    assert line.startswith("rk: ") and len(line) > len("rk: "), f"error line must start with 'rk: '\n{res}"
    for junk in ("Traceback", "Usage:", "Try '", "╭", "│", "Error:"):
        assert junk not in res.err, f"{junk!r} must not appear in an error\n{res}"
    return line[len("rk: ") :]


def json_error(res: Result, code: str) -> str:
    """Assert exactly one JSON error document on stdout with this code; return the message."""
    assert res.out.endswith("\n") and res.out.count("\n") == 1, f"one JSON line expected on stdout\n{res}"
    doc = json.loads(res.out)
    assert set(doc) == {"ok", "error"} and doc["ok"] is False, res
    assert set(doc["error"]) == {"code", "message"}, res
    assert doc["error"]["code"] == code, res
    message = doc["error"]["message"]
    assert isinstance(message, str) and message.strip() and "\n" not in message, res
    assert res.err == "", f"with --json the error goes to stdout only\n{res}"
    return message


def json_ok(res: Result):
    """Assert exit 0 and exactly one JSON success document; return its result."""
    assert res.code == 0, res
    assert res.out.endswith("\n") and res.out.count("\n") == 1, f"one JSON line expected on stdout\n{res}"
    doc = json.loads(res.out)
    assert set(doc) == {"ok", "result"} and doc["ok"] is True, res
    return doc["result"]


def record_intent_writes(monkeypatch) -> list[dict]:
    """Every delivery-journal write from now on, as the record it wrote (the writes still happen)."""
    from rk.act import intents

    writes: list[dict] = []
    original = intents.Intent.write

    def recording(self, **fields):
        writes.append({**self.record, **fields})
        original(self, **fields)

    monkeypatch.setattr(intents.Intent, "write", recording)
    return writes
