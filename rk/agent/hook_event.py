"""One agent event as the hook learns it: the JSON payload the harness gives on
stdin, read within bounds (capped, timed, never from a terminal) and decoded
without the `json` package, and what it says (the session, how a failed turn
failed, the transcript); and the agent process that ran the hook,
found by walking up from the hook's parent to the first process whose name is
one the provider's agent runs as (a missing pid beats a wrong one).

The hook path imports this module on every agent event: the standard library
only, and only cheap parts of it (see `rk.agent.hook`).
"""

from __future__ import annotations

import os
import time
from _collections_abc import Callable  # loaded with os: no `collections` import

from rk.core.pane.state_words import IDLE, LIMITED

#: Error words in a failed turn's payload that mean a usage or rate limit
#: (Claude's StopFailure `error`: rate_limit, billing_error "usage limit
#: reached"; API codes others report). Any other failure ends the turn: idle.
LIMIT_ERRORS = frozenset(
    {
        "rate_limit",
        "billing_error",
        "rate_limit_error",
        "rate_limit_exceeded",
        "usage_limit_reached",
        "usage_limit_exceeded",
        "quota_exceeded",
        "insufficient_quota",
        "resource_exhausted",
        "429",
    }
)
#: Phrases of a failed request's error message that mean a limit (Codex's
#: PostModelRequest: "exceeded retry limit, last status: 429 Too Many Requests",
#: "Quota exceeded. Check your plan…", "You've hit your usage limit…").
LIMIT_PHRASES = ("429", "too many requests", "rate limit", "rate_limit", "usage limit", "quota", "resource_exhausted")
#: `status` values of a request-end payload that are not a failure (no state change).
NOT_FAILED = frozenset({"completed", "complete", "succeeded", "success", "ok", "cancelled", "canceled"})

STDIN_CAP = 1 << 20  #: bytes of payload read at most
#: Seconds the payload may take in all. Agent CLIs write the whole payload and
#: close stdin at once (Claude, Codex and Gemini from node; the OpenCode plugin
#: with `stdin.end(…)`), so a payload arrives within milliseconds even in 64 KiB
#: pipe chunks; a second covers a loaded machine and stays far below every
#: CLI's hook timeout (60 s and more).
STDIN_BOUND = 1.0

#: Payload keys that carry the session id, in order of preference
#: (claude/codex/gemini: session_id; copilot: sessionId; opencode: sessionID;
#: agy: conversationId).
SESSION_KEYS = ("session_id", "sessionId", "sessionID", "conversationId", "conversation_id")

#: `source` values of a SessionStart that fires mid-turn (context compaction):
#: a stamp then must not write `idle` over the running turn's `active`.
COMPACT_SOURCES = frozenset({"compact"})


# -- what the payload says ---------------------------------------------------


def valid_session_ref(ref: object) -> bool:
    """Non-empty, at most 256 characters, no whitespace or control characters."""
    if not isinstance(ref, str) or not ref or len(ref) > 256:
        return False
    return all(c.isprintable() and not c.isspace() for c in ref)


def session_id_of(payload: object) -> str:
    """The session id a harness payload carries, or ""."""
    if not isinstance(payload, dict):
        return ""
    for key in SESSION_KEYS:
        value = payload.get(key)
        if isinstance(value, str) and valid_session_ref(value):
            return value
    return ""


def _error_words(value: object, depth: int = 0) -> list[str]:
    """The error identifiers a payload's `error` value carries, lower-cased: a
    string, or the `type`/`code`/`status` members of an object (one level deep)."""
    if isinstance(value, bool):
        return []
    if isinstance(value, (str, int)):
        return [str(value).strip().lower()]
    if isinstance(value, dict) and depth < 2:
        words: list[str] = []
        for key in ("type", "code", "status", "error"):
            if key in value:
                words += _error_words(value[key], depth + 1)
        return words
    return []


def failed_state(payload: object) -> str | None:
    """The state after a turn (or a model request) that ended on an error:
    `limited` for a usage or rate limit, else `idle` (the turn is over; the
    agent waits for a prompt). None when the payload's `status` says the
    request did not fail (Codex's PostModelRequest fires for every request)."""
    if not isinstance(payload, dict):
        return IDLE
    status = payload.get("status")
    if isinstance(status, str) and status.strip().lower() in NOT_FAILED:
        return None
    words = _error_words(payload.get("error")) + _error_words(payload.get("error_type"))
    if any(w in LIMIT_ERRORS or any(p in w for p in LIMIT_PHRASES) for w in words):
        return LIMITED
    return IDLE


def transcript_of(payload: object) -> str:
    """The payload's `transcript_path` (Claude Code, Codex), or "" for none or one
    tmux could misread: an absolute path, printable, at most 4096 bytes, not
    ending in `;` (tmux's command separator)."""
    path = payload.get("transcript_path") if isinstance(payload, dict) else None
    if not isinstance(path, str) or not path.startswith("/") or len(path) > 4096 or path.endswith(";"):
        return ""
    return path if path.isprintable() else ""


# -- stdin ------------------------------------------------------------------


def read_payload(fd: int = 0, cap: int = STDIN_CAP, timeout: float = STDIN_BOUND) -> object:
    """The payload's JSON value, or None (see `read_input`)."""
    return read_input(fd, cap, timeout)[0]


def read_input(fd: int = 0, cap: int = STDIN_CAP, timeout: float = STDIN_BOUND) -> tuple[object, str]:
    """(the JSON value on `fd` or None, why there is none: "" when nothing is amiss).

    Reads until end of input, or until one complete JSON object has arrived
    (a writer that never closes), whatever the chunking, and never past
    `timeout` seconds in all. Never reads a terminal. Past `cap` bytes the rest
    is drained (so the harness does not get EPIPE) but ignored."""
    try:
        if os.isatty(fd):
            return None, ""
    except OSError:
        return None, ""
    import select

    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    size = 0
    eof = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        try:
            ready, _, _ = select.select([fd], [], [], left)
        except (OSError, ValueError):
            break
        if not ready:
            break
        try:
            chunk = os.read(fd, 65536)
        except (BlockingIOError, InterruptedError):
            continue
        except OSError:
            break
        if not chunk:
            eof = True
            break
        size += len(chunk)
        if size > cap:
            chunks = []
            continue
        chunks.append(chunk)
        if chunk.rstrip().endswith(b"}"):  # perhaps the end of the object: no need to wait for EOF
            value = decode(b"".join(chunks))
            if isinstance(value, dict):
                return value, ""
    late = "" if eof else f" (input still open after {timeout:g}s)"
    if size > cap:
        return None, f"payload over {cap} bytes ignored{late}"
    buf = b"".join(chunks)
    if not buf.strip():
        return None, "" if eof or size else f"no payload{late}"
    value = decode(buf)
    if value is BAD:
        return None, f"payload of {size} bytes is not JSON{late or ' (or is truncated)'}"
    return value, ""


BAD = object()
_SCAN: list[Callable[[str, int], tuple[object, int]]] = []


class _ScanContext:
    """What the C JSON scanner reads off a decoder: the settings of `json.loads`."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float


def _scanner() -> Callable[[str, int], tuple[object, int]]:
    """`scan(text, index) -> (value, end)`. The C scanner alone costs ~0.4 ms to
    import; the `json` package pulls `re` (~6 ms where nothing loaded it yet)."""
    try:
        from _json import make_scanner

        return make_scanner(_ScanContext())  # type: ignore[arg-type]  # duck-typed as json.JSONDecoder
    except Exception:  # no C accelerator: the real thing
        import json

        scan: Callable[[str, int], tuple[object, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
        return scan  # (scan_once is set by JSONDecoder.__init__)


def decode(buf: bytes) -> object:
    """The first JSON value of `buf` (invalid UTF-8 replaced), or `BAD`.

    Any exception is a bad payload: the C scanner raises StopIteration,
    ValueError or RecursionError (deep nesting), and SystemError for a syntax
    error when `json.decoder` is not loaded (it looks its error class up there)."""
    text = buf.decode("utf-8", "replace").lstrip()
    if not text:
        return BAD
    if not _SCAN:
        _SCAN.append(_scanner())
    try:
        value, _ = _SCAN[0](text, 0)
    except Exception:
        return BAD
    return value


def from_subagent(provider: str, payload: object) -> bool:
    """A Mistral Vibe subagent's event: Vibe runs the parent's hooks inside a subagent
    too, with `parent_session_id` set; its `post_agent` ends the subagent's turn, not
    the pane's, so it writes nothing."""
    return provider == "vibe" and isinstance(payload, dict) and bool(payload.get("parent_session_id"))


# -- the agent process ------------------------------------------------------

MAX_HOPS = 5  #: ancestors examined when looking for the agent process

#: `comm` names (as /proc shows them, ≤15 bytes) the agent process of each
#: provider can have. Gemini CLI and the npm builds run under node.
AGENT_COMMS: dict[str, tuple[str, ...]] = {
    "claude": ("claude",),
    "codex": ("codex",),
    "gemini": ("node", "gemini"),
    "opencode": ("opencode", "node", "bun"),
    # npm's copilot is a node loader running the native binary, whose comm is its main thread's name
    "copilot": ("copilot", "MainThread", "node"),
    "qwen": ("node", "qwen"),
    "kimi": ("kimi-code", "kimi"),
    "agy": ("agy", "antigravity"),
    "kilo": (".kilo", "kilo", "node"),
    # Mistral Vibe: its hooks run under its Python app server, a child of the native TUI
    # `vibe-rs` that owns the pane's keyboard: the TUI is the agent process
    "vibe": ("vibe-rs",),
}


def valid_provider(provider: str) -> bool:
    """`[a-z][a-z0-9_-]*`, at most 32 characters."""
    if not provider or len(provider) > 32 or not ("a" <= provider[0] <= "z"):
        return False
    return all("a" <= c <= "z" or "0" <= c <= "9" or c in "_-" for c in provider)


def expected_comms(provider: str) -> tuple[str, ...]:
    """The `comm` names the agent process of `provider` can have (an unknown provider: its own name)."""
    names = AGENT_COMMS.get(provider)
    if names is None:
        names = (provider,) if valid_provider(provider) else ()
    return tuple(n[:15] for n in names)


def _proc_step(pid: int, root: str) -> tuple[str, int] | None:
    """(comm, ppid) of `pid` from `<root>/<pid>/comm` and `…/status`."""
    try:
        with open(f"{root}/{pid}/comm", "rb") as fh:
            comm = fh.read().decode("utf-8", "replace").rstrip("\n")
        with open(f"{root}/{pid}/status", "rb") as fh:
            status = fh.read().decode("utf-8", "replace")
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("PPid:"):
            try:
                return comm, int(line.split(":", 1)[1].strip())
            except ValueError:
                return None
    return None


def parse_ps_line(text: str) -> tuple[str, int] | None:
    """`  123 /usr/bin/claude` (ps -o ppid=,comm=) → ("claude", 123)."""
    text = text.strip()
    if not text:
        return None
    head, _, comm = text.partition(" ")
    comm = comm.strip()
    if not (head.isascii() and head.isdigit()) or not comm:
        return None
    return os.path.basename(comm)[:15], int(head)


def _ps_step(pid: int) -> tuple[str, int] | None:
    """(comm, ppid) from `ps` where there is no /proc (macOS, BSD)."""
    import subprocess  # fallback only; the Linux path never pays for it

    try:
        proc = subprocess.run(
            ["ps", "-o", "ppid=,comm=", "-p", str(pid)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=2.0,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return parse_ps_line(proc.stdout.decode("utf-8", "replace").splitlines()[0] if proc.stdout else "")


def find_agent_pid(
    provider: str,
    start: int | None = None,
    *,
    proc_root: str = "/proc",
    max_hops: int = MAX_HOPS,
    ps_step: Callable[[int], tuple[str, int] | None] | None = None,
) -> int:
    """The pid of the agent process: walk up from `start` (default: our parent),
    at most `max_hops` processes, to the first whose comm is one the provider's
    agent runs as. 0 when none validates (a missing pid beats a wrong one).

    /proc is read where it exists; elsewhere `ps` is asked."""
    names = expected_comms(provider)
    if not names:
        return 0
    pid = os.getppid() if start is None else start
    use_proc = os.path.exists(f"{proc_root}/{pid}/status")
    step = (lambda p: _proc_step(p, proc_root)) if use_proc else (ps_step or _ps_step)
    for _ in range(max_hops):
        if pid <= 1:
            return 0
        found = step(pid)
        if found is None:
            return 0
        comm, ppid = found
        if comm in names:
            return pid
        pid = ppid
    return 0
