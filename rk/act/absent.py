"""What happens when a due fire's target is gone: notify, or run a respawn command.

Respawn commands run as argv (never through a shell), with `{server}`
replaced by the server's slug, in the home directory, without TMUX/TMUX_PANE,
in their own process group (so a timeout kills the whole tree), and with a
timeout. Nothing is delivered on the respawn tick: the command does its own
first contact, and the entry's payload lands on the next resolved fire.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rk.core.log.delivery import Outcome, Status
from rk.tmux.server import Server, TmuxError, child_env

TAIL_BYTES = 200
KICKOFF_MARKER = "kickoff: undelivered reason="


@dataclass(frozen=True)
class RespawnResult:
    outcome: Outcome  #: `respawned…` or `respawn-failed: …`
    output: str = ""


def output_tail(output: bytes, limit: int = TAIL_BYTES) -> str:
    """The trimmed output's last `limit` bytes, cut on a UTF-8 boundary, `…`-prefixed if cut."""
    text = output.strip()
    if len(text) <= limit:
        return text.decode("utf-8", "replace")
    tail = text[-limit:]
    while tail and (tail[0] & 0xC0) == 0x80:  # drop continuation bytes of a cut character
        tail = tail[1:]
    return "…" + tail.decode("utf-8", "replace")


def kickoff_reason(output: str) -> str:
    """The reason of a `kickoff: undelivered reason=<r> …` line, or ""."""
    for line in output.splitlines():
        line = line.strip()
        if line.startswith(KICKOFF_MARKER):
            return line[len(KICKOFF_MARKER) :].split(" ", 1)[0]
    return ""


def substitute(argv: Sequence[str], server: str) -> list[str]:
    return [arg.replace("{server}", server) for arg in argv]


def run_respawn(
    argv: Sequence[str], server: str, timeout: float, env: Mapping[str, str] | None = None
) -> RespawnResult:
    """Run the respawn argv and turn its result into a log outcome."""
    command = substitute(argv, server)
    base = child_env(env)
    home = base.get("HOME") or os.path.expanduser("~")
    try:
        proc = subprocess.Popen(
            command,
            cwd=home if os.path.isdir(home) else "/",
            env=base,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        return RespawnResult(Outcome(Status.RESPAWN_FAILED, f"exec {command[0]}: {exc.strerror or exc}"))
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            proc.kill()
        output, _ = proc.communicate()
        tail = output_tail(output or b"")
        detail = f"timed out after {timeout:g}s"
        return RespawnResult(Outcome(Status.RESPAWN_FAILED, detail + (f": {tail}" if tail else "")), tail)
    text = (output or b"").decode("utf-8", "replace")
    if proc.returncode == 0:
        reason = kickoff_reason(text)
        if reason:
            return RespawnResult(Outcome(Status.RESPAWNED, f"kickoff undelivered: {reason}", parenthesised=True), text)
        return RespawnResult(Outcome(Status.RESPAWNED), text)
    tail = output_tail(output or b"")
    detail = f"exit status {proc.returncode}"
    return RespawnResult(Outcome(Status.RESPAWN_FAILED, detail + (f": {tail}" if tail else "")), text)


def notify(server: Server, title: str, body: str, env: Mapping[str, str] | None = None) -> str:
    """Tell the people at this server: a status-line message on every client and a
    desktop notification where `notify-send` exists. Returns an error text or ""."""
    errors = []
    try:
        server.display_message_to_clients(f"rk {title}: {body}")
    except TmuxError as exc:
        errors.append(str(exc))
    sender = shutil.which("notify-send", path=(env or os.environ).get("PATH"))
    if sender:
        try:
            subprocess.run(
                [sender, "--app-name=rk", title, body],
                env=child_env(env),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=5,
                check=True,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            errors.append(f"notify-send: {exc}")
    return "; ".join(errors)
