"""Mock model APIs for running the real Claude Code and Codex CLIs offline.

Standard library only. Two flavours:

* ``anthropic``: the Messages API as Claude Code uses it
  (``POST /v1/messages?beta=true`` with ``stream: true``, SSE reply;
  ``POST /v1/messages/count_tokens``).
* ``openai``: the Responses API as Codex uses it (``POST /v1/responses`` with
  ``stream: true``, SSE reply; ``GET /v1/models``).

Run standalone::

    python mocks.py anthropic 18765      # or: openai 0  (0 = pick a free port)

It prints ``PORT <n>`` on stdout once it listens. Or import it::

    from mocks import start_mock
    m = start_mock("anthropic")               # in a thread of this process
    m = start_mock("openai", subprocess=True) # in a child process (m.pid)
    m.set_mode("slow", seconds=30)
    ...; m.requests(); m.stop()

Behaviour is chosen per request by the current *mode*, which can be changed at
runtime through control endpoints (all JSON):

* ``POST /_mode``     body ``{"mode": "...", <options>}``; replaces the mode.
* ``GET  /_mode``     the current mode.
* ``GET  /_requests`` every model request recorded so far (see ``Record``).
* ``POST /_clear``    forget the recorded requests.
* ``POST /_release``  let every reply that is waiting in ``slow`` mode finish now.
* ``GET  /_health``   ``{"ok": true}``.

Modes (options in brackets):

* ``ok``         text reply [``text``, ``delay`` seconds before the reply]
* ``slow``       reply after ``seconds`` (default 30); the stream opens at once
                 and then stalls, so the agent stays busy. ``/_release`` ends it.
                 [``partial``: text streamed before the stall]
* ``tool``       a tool call that needs approval: Claude ``Bash`` ``touch
                 <file>``; Codex ``exec_command`` with ``sandbox_permissions:
                 require_escalated``. Once the request carries the tool result
                 the reply is text [``file``, ``command``, ``text``].
* ``error500``   HTTP 500 (Anthropic ``api_error``, OpenAI ``server_error``).
* ``error429``   HTTP 429. Anthropic ``rate_limit_error``; OpenAI
                 ``usage_limit_reached`` with ``resets_at`` (usage-limit body).
                 [``message``; OpenAI: ``kind`` = ``usage_limit_reached`` |
                 ``usage_not_included`` | ``insufficient_quota`` |
                 ``rate_limit_exceeded``; ``resets_in`` seconds]
* ``error429_reset``  Anthropic: 429 ``rate_limit_error`` whose message names
                 a reset time and which carries the ``anthropic-ratelimit-
                 unified-*`` "rejected" headers of a subscription limit.
                 [``reset_at``: the reset as a unix time instead of
                 ``resets_in`` from the request; ``then_reset_at``: from
                 ``reset_at`` on, the limit is hit again and names this later
                 reset; ``unified``: false leaves the subscription headers out,
                 as the API does for a key]
* ``error529``   Anthropic HTTP 529 ``overloaded_error`` (OpenAI: 503).
* ``usage_warning``  a normal text reply plus the headers that announce a
                 nearly used-up limit (Anthropic ``anthropic-ratelimit-unified-*
                 allowed_warning``; OpenAI ``x-codex-primary-used-percent``).

Common options: ``usage`` (the token usage a main request's reply reports:
``{"input": N, "output": N, "cache_read": N, "cache_write": N}``, or Anthropic's
``"measured"``: the request's own size, its prefix shared with the last one read from the cache; side
requests and the default report 10 in, 5 out), ``delay`` (seconds before replying), ``headers`` (extra
response headers), ``midstream`` (errors: open a 200 SSE stream and send the
error as an SSE event instead of an HTTP status), ``scope`` (``main``: the
mode applies only to the agent's main requests, i.e. those that offer tools,
and side requests such as title generation get a quick ``ok`` reply; ``all``:
to every request. Default ``all`` for error modes, ``main`` otherwise), ``until``
(a unix time: from then on every request gets a quick ``ok`` reply, as a limit
that has reset answers).
"""

from __future__ import annotations

import json
import os
import re
import subprocess as _subprocess
import sys
import threading
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FLAVORS = ("anthropic", "openai")
DEFAULT_TEXT = "Hello from the mock API."

#: A reply that quotes, one per line, a text that every working, dialog and limit
#: pattern of every screen layout in rk matches (rk/core/pane/screen/*.py): an agent
#: that printed it is idle all the same. It starts with "Working" (as a Codex
#: reply can) and ends with "esc to interrupt". Mode ``ok`` with ``text=QUOTING_REPLY``.
QUOTING_LINES = (
    "Working (7s • esc to interrupt)",
    "• Working (7s • esc to interrupt)",
    "◦ Thinking",
    "✶ Frosting…",
    "⠸ Thinking... (esc to cancel, 3s)",
    "■■■■⬝⬝⬝⬝ esc interrupt, esc again to interrupt [retrying in 2s attempt #1]",
    "Do you want to proceed?",
    "Do you want to make this edit to rk.py?",
    "❯ 1. Yes",
    "› 1. Yes, proceed (y)",
    "│ ● 1. Allow once",
    "Esc to cancel · Tab to amend",
    "Enter to confirm · Esc to cancel",
    "Press enter to confirm or esc to cancel",
    "Would you like to run the following command?",
    "Allow execution of [Shell]? Apply this change? Allow for this session",
    "△ Permission required",
    "Allow once   Allow always   Reject",
    "You've hit your usage limit · resets 3pm",
    "You’ve hit your session limit · resets 2:57pm (UTC)",
    "Claude usage limit reached. Your limit will reset at 3pm.",
    "Session limit reached. Stop and wait for limit to reset",
    "API Error: Request rejected (429) · rate limit exceeded, try again later",
    "■ exceeded retry limit, last status: 429 Too Many Requests",
    "Quota exceeded; quota exhausted; you have exhausted your daily quota; RESOURCE_EXHAUSTED",
    "Usage limit exceeded. Rate limit reached.",
    "⠼ Waiting for user confirmation... Allow execution of: 'touch'? rate_limit_error (2s · esc to cancel)",
    # GitHub Copilot CLI
    "○ Working · 5 B esc esc interrupt; esc esc edit prompt; esc esc cancel; esc again to interrupt or cancel",
    "│ Do you want to run this command?",
    "│ ❯ 1. Yes",
    "│ ↑/↓ to navigate · enter to select · esc to cancel",
    "│ Confirm folder trust",
    "Sorry, you've exceeded your 5 hour session limits. Please retry after 2733 seconds.",
    "⣤  Generating… (2s Esc/Ctrl+C to interrupt)",  # Mistral Vibe
    "`You've hit your usage limit · resets 3pm` and `• Working (7s • esc to interrupt)` as code",
    "esc to interrupt",
)
#: The same texts in a fenced code block too (drawn in colour, as code is), before the last line.
QUOTING_REPLY = "\n\n".join([*QUOTING_LINES[:-1], "```", *QUOTING_LINES[:-2], "```", QUOTING_LINES[-1]])
ERROR_MODES = ("error500", "error429", "error429_reset", "error529")
MODES = ("ok", "slow", "tool", "usage_warning") + ERROR_MODES


# --------------------------------------------------------------------------
# request parsing helpers


def _anthropic_user_texts(req: dict) -> tuple[list[str], bool]:
    """Text blocks of the last user message, and whether that message answers
    a tool call: its last block, ignoring injected ``<system-reminder>``-style
    text blocks, is a ``tool_result``. (After a denied/interrupted tool call
    Claude Code puts the tool_result *and* the next prompt in one message; that
    counts as a new prompt.)"""
    users = [m for m in req.get("messages") or [] if m.get("role") == "user"]
    if not users:
        return [], False
    content = users[-1].get("content")
    if isinstance(content, str):
        return [content], False
    texts, last_kind = [], None
    for block in content or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            texts.append(block.get("text", ""))
            if not _is_injected(block.get("text", "")):
                last_kind = "text"
        elif block.get("type") == "tool_result":
            last_kind = "tool_result"
    return texts, last_kind == "tool_result"


def _tool_names(req: dict) -> list[str]:
    """The names of the tools the model is offered (Codex nests an MCP server's under a namespace)."""
    names = []
    for tool in req.get("tools") or []:
        if isinstance(tool, dict):
            names.append(str(tool.get("name") or tool.get("function", {}).get("name") or tool.get("type")))
            for inner in tool.get("tools") or []:
                if isinstance(inner, dict):
                    names.append(f"{tool.get('name')}/{inner.get('name')}")
    return names


def _tool_results(req: dict) -> list[dict]:
    """The tool results the request carries back to the model: is_error and the text
    (Anthropic `tool_result` blocks; OpenAI `function_call_output` items, which say no error)."""
    out = []
    for item in req.get("input") if isinstance(req.get("input"), list) else []:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            inner = item.get("output")
            if isinstance(inner, dict):  # {"content": …, "success": …} in some versions
                out.append({"error": inner.get("success") is False, "text": str(inner.get("content", ""))})
            else:
                text = inner if isinstance(inner, str) else "".join(c.get("text", "") for c in inner or [])
                out.append({"error": False, "text": text})
            out[-1]["item"] = item  # the whole item as the CLI sent it (what it says of an error)
    for message in req.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                inner = block.get("content")
                text = inner if isinstance(inner, str) else "".join(c.get("text", "") for c in inner or [])
                out.append({"error": bool(block.get("is_error")), "text": text})
    return out


def _openai_user_texts(req: dict) -> tuple[list[str], bool]:
    """Text parts of the last user message item, and whether the last input
    item is a function_call_output."""
    items = req.get("input")
    if isinstance(items, str):
        return [items], False
    items = [i for i in items or [] if isinstance(i, dict)]
    last_is_output = bool(items) and items[-1].get("type") in (
        "function_call_output",
        "custom_tool_call_output",
        "local_shell_call_output",
    )
    users = [i for i in items if i.get("role") == "user" and i.get("type", "message") == "message"]
    if not users:
        return [], last_is_output
    content = users[-1].get("content")
    if isinstance(content, str):
        return [content], last_is_output
    texts = [
        p.get("text", "") for p in content or [] if isinstance(p, dict) and p.get("type") in ("input_text", "text")
    ]
    return texts, last_is_output


def _context_texts(req: dict) -> list[str]:
    """Every text the request carries of earlier and present turns, user's and assistant's
    (Anthropic `messages`, OpenAI `input` items): what a fresh context must not hold."""
    out: list[str] = []
    for item in (req.get("messages") or []) + (req.get("input") if isinstance(req.get("input"), list) else []):
        content = item.get("content") if isinstance(item, dict) else None
        if isinstance(content, str):
            out.append(content)
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                out.append(part["text"])
    return out


def _is_injected(text: str) -> bool:
    """An injected context block (``<system-reminder>``, ``<environment_context>``…)."""
    s = text.lstrip()
    if s.startswith("<") and not s.startswith("<<"):
        head = s[1:40].split(">", 1)[0]
        return bool(head) and all(c.isalnum() or c in "_-" for c in head)
    return False


#: Claude Code 2.1.332 sends a long paste (one it shows as a `[Pasted text #1 +N lines]` chip)
#: wrapped: "\n\n<pasted_content id="b83f">\n<the text>\n</pasted_content id="b83f">\n".
_PASTED = re.compile(r'\n\n<pasted_content id="(\w+)">\n(.*)\n</pasted_content id="\1">\n', re.DOTALL)


def pasted_text(text: str) -> str:
    """The text a human (or rk) pasted, out of Claude's wrapper when it wrapped it."""
    m = _PASTED.fullmatch(text)
    return m.group(2) if m else text


def _pick_prompt_text(texts: list[str]) -> str:
    """The human's prompt among the text blocks: the last one that is not an
    injected context block (unwrapped from a paste wrapper: `user_texts` keeps it)."""
    for t in reversed(texts):
        if not _is_injected(t):
            return pasted_text(t)
    return texts[-1] if texts else ""


# --------------------------------------------------------------------------
# state


def mock_usage(spec: dict, main: bool) -> dict:
    """The usage a reply reports: the mode's ``usage`` for a main request, else 10 in, 5 out."""
    want = spec.get("usage") if main else None
    want = want if isinstance(want, dict) else {}
    return {
        "input": int(want.get("input", 10)),
        "output": int(want.get("output", 5)),
        "cache_read": int(want.get("cache_read", 0)),
        "cache_write": int(want.get("cache_write", 0)),
    }


def measured_usage(state: MockState, req: dict) -> dict:
    """``usage: "measured"``: what the prompt would cost, as the API's prompt cache counts it.
    The request's system, tools and messages as JSON, a token per 4 characters; the part it
    shares from the start with the previous measured request is read from the cache, the
    rest is input (and written to the cache)."""
    text = json.dumps([req.get("system"), req.get("tools"), req.get("messages")], sort_keys=True)
    with state.lock:
        before, state.last_prompt = state.last_prompt, text
    shared = next(
        (i for i, (a, b) in enumerate(zip(before, text, strict=False)) if a != b), min(len(before), len(text))
    )
    cache_read, total = shared // 4, len(text) // 4
    return {"input": total - cache_read, "output": 5, "cache_read": cache_read, "cache_write": total - cache_read}


@dataclass
class MockState:
    flavor: str
    mode: dict = field(default_factory=lambda: {"mode": "ok"})
    records: list = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    release_gen: int = 0
    last_prompt: str = ""  #: the previous measured request (``usage: "measured"``)

    def set_mode(self, spec: dict) -> dict:
        spec = dict(spec)
        spec.setdefault("mode", "ok")
        if spec["mode"] not in MODES:
            raise ValueError(f"unknown mode {spec['mode']!r}; known: {', '.join(MODES)}")
        with self.lock:
            self.mode = spec
        return spec

    def get_mode(self) -> dict:
        with self.lock:
            return dict(self.mode)

    def record(self, rec: dict) -> dict:
        with self.lock:
            rec["n"] = len(self.records) + 1
            self.records.append(rec)
        return rec


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, state: MockState):
        super().__init__(addr, _Handler)
        self.state = state


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args):  # keep stderr quiet
        pass

    # -- low-level writers -------------------------------------------------
    def _json(self, code: int, obj: Any, headers: dict | None = None) -> None:
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.send_header("request-id", "req_mock_" + uuid.uuid4().hex[:16])
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def _sse_open(self, headers: dict | None = None) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.send_header("request-id", "req_mock_" + uuid.uuid4().hex[:16])
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        self.close_connection = True

    def _sse(self, event: str, data: dict) -> None:
        self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()

    def _read_json(self) -> dict:
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return {}

    # -- control + dispatch ------------------------------------------------
    def do_GET(self):
        st = self.server.state
        path = self.path.split("?", 1)[0]
        if path == "/_health":
            return self._json(200, {"ok": True, "flavor": st.flavor})
        if path == "/_mode":
            return self._json(200, st.get_mode())
        if path == "/_requests":
            with st.lock:
                return self._json(200, list(st.records))
        if st.flavor == "openai" and path.rstrip("/").endswith("/models"):
            return self._json(200, {"object": "list", "data": [], "models": []})
        return self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": "mock: no such path"}})

    def do_POST(self):
        st = self.server.state
        path = self.path.split("?", 1)[0]
        if path == "/_mode":
            try:
                return self._json(200, st.set_mode(self._read_json()))
            except ValueError as e:
                return self._json(400, {"error": str(e)})
        if path == "/_clear":
            with st.lock:
                st.records.clear()
            return self._json(200, {"ok": True})
        if path == "/_release":
            with st.lock:
                st.release_gen += 1
            return self._json(200, {"ok": True})
        req = self._read_json()
        if st.flavor == "anthropic":
            if path.endswith("/count_tokens"):
                return self._json(200, {"input_tokens": 10})
            if path.endswith("/v1/messages"):
                return self._anthropic(req, path)
        else:
            if path.endswith("/responses"):
                return self._openai(req, path)
        return self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": "mock: no such path"}})

    # -- shared pieces -------------------------------------------------------
    def _effective_mode(self, main: bool) -> dict:
        spec = self.server.state.get_mode()
        if spec.get("until") and time.time() >= float(spec["until"]):
            return {"mode": "ok"}  # the limit (or whatever the mode stood for) is over
        mode = spec.get("mode", "ok")
        scope = spec.get("scope", "all" if mode in ERROR_MODES else "main")
        if scope == "main" and not main:
            return {"mode": "ok", "text": "Mock title"}
        return spec

    def _wait(self, seconds: float) -> None:
        """Sleep, but return early on /_release."""
        st = self.server.state
        with st.lock:
            gen = st.release_gen
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            with st.lock:
                if st.release_gen != gen:
                    return
            time.sleep(0.05)

    def _record(self, path, req, main, texts, has_result, spec, status) -> dict:
        return self.server.state.record(
            {
                "t": round(time.time(), 3),
                "method": "POST",
                "path": self.path,
                "flavor": self.server.state.flavor,
                "model": req.get("model"),
                "stream": bool(req.get("stream")),
                "main": main,
                "n_tools": len(req.get("tools") or []),
                "tool_names": _tool_names(req),
                "last_user_text": _pick_prompt_text(texts),
                "user_texts": texts,
                "context_texts": _context_texts(req),
                "tool_result": has_result,
                "tool_results": _tool_results(req),
                "mode": spec.get("mode"),
                "status": status,
            }
        )

    # -- Anthropic Messages API ---------------------------------------------
    def _anthropic(self, req: dict, path: str):
        main = bool(req.get("tools"))
        texts, has_result = _anthropic_user_texts(req)
        spec = self._effective_mode(main)
        mode = spec.get("mode", "ok")
        headers = dict(spec.get("headers") or {})
        status = {"error500": 500, "error429": 429, "error429_reset": 429, "error529": 529}.get(mode, 200)
        if status != 200 and spec.get("midstream"):
            status = 200
        self._record(path, req, main, texts, has_result, spec, status)
        if spec.get("delay"):
            self._wait(float(spec["delay"]))

        if mode in ERROR_MODES:
            now = int(time.time())
            reset = int(spec.get("reset_at") or now + int(spec.get("resets_in", 3 * 3600)))
            if spec.get("then_reset_at") and now >= reset:  # the limit hit again: a later reset named
                reset = int(spec["then_reset_at"])
            if mode == "error500":
                etype, msg = "api_error", spec.get("message", "Internal server error")
            elif mode == "error529":
                etype, msg = "overloaded_error", spec.get("message", "Overloaded")
            elif mode == "error429":
                etype = "rate_limit_error"
                msg = spec.get(
                    "message",
                    "This request would exceed the rate limit for your organization "
                    "of 50 requests per minute. Please try again later.",
                )
                headers.setdefault("retry-after", str(spec.get("retry_after", 60)))
            else:  # error429_reset
                etype = "rate_limit_error"
                reset_txt = time.strftime("%H:%M UTC", time.gmtime(reset))
                msg = spec.get("message", f"Usage limit reached for your plan. Your limit resets at {reset_txt}.")
                headers.setdefault("retry-after", str(max(reset - now, 0)))
            if mode == "error429_reset" and spec.get("unified", True):
                headers.setdefault("anthropic-ratelimit-unified-status", "rejected")
                headers.setdefault("anthropic-ratelimit-unified-reset", str(reset))
                headers.setdefault("anthropic-ratelimit-unified-representative-claim", "five_hour")
                headers.setdefault("anthropic-ratelimit-unified-5h-utilization", "1.0")
                headers.setdefault("anthropic-ratelimit-unified-5h-reset", str(reset))
                headers.setdefault("anthropic-ratelimit-unified-fallback", "unavailable")
            body = {
                "type": "error",
                "error": {"type": etype, "message": msg},
                "request_id": "req_mock_" + uuid.uuid4().hex[:16],
            }
            try:
                if spec.get("midstream") and req.get("stream"):
                    self._sse_open(headers)
                    self._anthropic_message_start(req)
                    self._sse("error", body)
                else:
                    code = {"error500": 500, "error429": 429, "error429_reset": 429, "error529": 529}[mode]
                    self._json(code, body, headers)
            except (BrokenPipeError, ConnectionResetError):
                pass
            return

        if mode == "usage_warning":
            reset = int(time.time()) + int(spec.get("resets_in", 2 * 3600))
            headers.setdefault("anthropic-ratelimit-unified-status", "allowed_warning")
            headers.setdefault("anthropic-ratelimit-unified-reset", str(reset))
            headers.setdefault("anthropic-ratelimit-unified-representative-claim", "five_hour")
            headers.setdefault("anthropic-ratelimit-unified-5h-utilization", str(spec.get("utilization", 0.92)))
            headers.setdefault("anthropic-ratelimit-unified-5h-reset", str(reset))
            headers.setdefault("anthropic-ratelimit-unified-5h-surpassed-threshold", "0.9")

        tool = mode == "tool" and main and not has_result
        text = spec.get("text") or DEFAULT_TEXT
        if mode == "tool" and has_result:
            text = spec.get("after_text", "The tool ran. Done.")
        measured = main and spec.get("usage") == "measured"
        tokens = measured_usage(self.server.state, req) if measured else mock_usage(spec, main)
        usage = {
            "input_tokens": tokens["input"],
            "output_tokens": tokens["output"],
            "cache_creation_input_tokens": tokens["cache_write"],
            "cache_read_input_tokens": tokens["cache_read"],
        }
        mid = "msg_" + uuid.uuid4().hex[:24]
        model = req.get("model", "mock")
        try:
            if not req.get("stream"):
                if mode == "slow":
                    self._wait(float(spec.get("seconds", 30)))
                return self._json(
                    200,
                    {
                        "id": mid,
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [{"type": "text", "text": text}],
                        "stop_reason": "end_turn",
                        "stop_sequence": None,
                        "usage": usage,
                    },
                    headers,
                )
            self._sse_open(headers)
            self._anthropic_message_start(req, mid, usage)
            index = 0
            if mode == "slow":
                self._sse("ping", {"type": "ping"})
                if spec.get("partial"):
                    # some text streams at once, then the stream stalls
                    self._sse(
                        "content_block_start",
                        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                    )
                    self._sse(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": 0,
                            "delta": {"type": "text_delta", "text": spec["partial"]},
                        },
                    )
                    self._sse("content_block_stop", {"type": "content_block_stop", "index": 0})
                    index = 1
                self._wait(float(spec.get("seconds", 30)))
            if tool:
                command = spec.get("command") or f"touch {spec.get('file', 'made-by-tool.txt')}"
                self._sse(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {
                            "type": "tool_use",
                            "id": "toolu_" + uuid.uuid4().hex[:20],
                            "name": spec.get("tool_name", "Bash"),  # e.g. mcp__rk__cron_add
                            "input": {},
                        },
                    },
                )
                self._sse(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {
                            "type": "input_json_delta",
                            "partial_json": json.dumps(
                                spec.get("tool_input", {"command": command, "description": "Create a file"})
                            ),
                        },
                    },
                )
            else:
                self._sse(
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
                )
                self._sse(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}},
                )
            self._sse("content_block_stop", {"type": "content_block_stop", "index": index})
            self._sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "tool_use" if tool else "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": tokens["output"]},
                },
            )
            self._sse("message_stop", {"type": "message_stop"})
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _anthropic_message_start(self, req: dict, mid: str | None = None, usage: dict | None = None) -> None:
        self._sse(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": mid or "msg_" + uuid.uuid4().hex[:24],
                    "type": "message",
                    "role": "assistant",
                    "model": req.get("model", "mock"),
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        **(
                            usage
                            or {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
                        ),
                        "output_tokens": 1,
                    },
                },
            },
        )

    # -- OpenAI Responses API ------------------------------------------------
    def _openai(self, req: dict, path: str):
        main = bool(req.get("tools"))
        texts, has_result = _openai_user_texts(req)
        spec = self._effective_mode(main)
        mode = spec.get("mode", "ok")
        headers = dict(spec.get("headers") or {})
        codes = {"error500": 500, "error429": 429, "error429_reset": 429, "error529": 503}
        status = codes.get(mode, 200)
        if status != 200 and spec.get("midstream"):
            status = 200
        self._record(path, req, main, texts, has_result, spec, status)
        if spec.get("delay"):
            self._wait(float(spec["delay"]))
        rid = "resp_" + uuid.uuid4().hex[:24]

        if mode in ERROR_MODES:
            now = int(time.time())
            resets_in = int(spec.get("resets_in", 3 * 3600))
            if mode == "error500":
                err = {
                    "message": spec.get("message", "The server had an error while processing your request."),
                    "type": "server_error",
                    "param": None,
                    "code": "server_error",
                }
            elif mode == "error529":
                err = {
                    "message": spec.get("message", "The engine is currently overloaded, please try again later."),
                    "type": "server_overloaded",
                    "param": None,
                    "code": "server_is_overloaded",
                }
            else:
                kind = spec.get("kind", "usage_limit_reached")
                err = {
                    "type": kind,
                    "code": kind,
                    "param": None,
                    "message": spec.get(
                        "message",
                        {
                            "usage_limit_reached": "The usage limit has been reached",
                            "usage_not_included": "Usage is not included in your plan",
                            "insufficient_quota": "You exceeded your current quota, please check your plan and billing details.",
                            "rate_limit_exceeded": "Rate limit reached for requests. Please try again in 20s.",
                        }.get(kind, "Too many requests"),
                    ),
                }
                if kind == "usage_limit_reached":
                    err.update(
                        {
                            "plan_type": spec.get("plan_type", "plus"),
                            "resets_at": now + resets_in,
                            "resets_in_seconds": resets_in,
                        }
                    )
                headers.setdefault(
                    "retry-after", str(spec.get("retry_after", resets_in if kind == "usage_limit_reached" else 20))
                )
                headers.setdefault("x-codex-primary-used-percent", "100")
                headers.setdefault("x-codex-primary-window-minutes", "300")
                headers.setdefault("x-codex-primary-reset-at", str(now + resets_in))
            try:
                if spec.get("midstream") and req.get("stream"):
                    self._sse_open(headers)
                    self._sse("response.created", {"type": "response.created", "response": {"id": rid}})
                    self._sse(
                        "response.failed",
                        {"type": "response.failed", "response": {"id": rid, "status": "failed", "error": err}},
                    )
                else:
                    self._json(codes[mode], {"error": err}, headers)
            except (BrokenPipeError, ConnectionResetError):
                pass
            return

        if mode == "usage_warning":
            now = int(time.time())
            headers.setdefault("x-codex-primary-used-percent", str(spec.get("used_percent", 92)))
            headers.setdefault("x-codex-primary-window-minutes", "300")
            headers.setdefault("x-codex-primary-reset-at", str(now + 2 * 3600))
            headers.setdefault("x-codex-secondary-used-percent", "40")
            headers.setdefault("x-codex-secondary-window-minutes", "10080")
            headers.setdefault("x-codex-secondary-reset-at", str(now + 5 * 86400))

        tool = mode == "tool" and main and not has_result
        text = spec.get("text") or DEFAULT_TEXT
        if not main and not spec.get("text"):
            text = "Mock title"
        if mode == "tool" and has_result:
            text = spec.get("after_text", "The tool ran. Done.")
        tokens = mock_usage(spec, main)
        usage = {  # OpenAI counts cached tokens inside input_tokens
            "input_tokens": tokens["input"] + tokens["cache_read"],
            "input_tokens_details": {"cached_tokens": tokens["cache_read"]},
            "output_tokens": tokens["output"],
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": tokens["input"] + tokens["cache_read"] + tokens["output"],
        }
        try:
            self._sse_open(headers)
            self._sse(
                "response.created",
                {"type": "response.created", "response": {"id": rid, "status": "in_progress", "output": []}},
            )
            if mode == "slow":
                if spec.get("partial"):
                    # Codex renders streamed text a whole line at a time
                    self._sse(
                        "response.output_item.added",
                        {
                            "type": "response.output_item.added",
                            "output_index": 0,
                            "item": {
                                "type": "message",
                                "id": "msg_partial",
                                "role": "assistant",
                                "status": "in_progress",
                                "content": [],
                            },
                        },
                    )
                    self._sse(
                        "response.output_text.delta",
                        {
                            "type": "response.output_text.delta",
                            "item_id": "msg_partial",
                            "output_index": 0,
                            "content_index": 0,
                            "delta": spec["partial"].rstrip("\n") + "\n\n",
                        },
                    )
                self._wait(float(spec.get("seconds", 30)))
            if tool:
                command = spec.get("command") or f"touch {spec.get('file', 'made-by-tool.txt')}"
                args = {
                    "cmd": command,
                    "sandbox_permissions": "require_escalated",
                    "justification": "The mock wants to create a file outside the sandbox.",
                }
                item = {
                    "type": "function_call",
                    "id": "fc_" + uuid.uuid4().hex[:20],
                    "call_id": "call_" + uuid.uuid4().hex[:20],
                    "name": spec.get("tool_name", "exec_command"),
                    "arguments": json.dumps(spec.get("tool_input", args)),
                    "status": "completed",
                }
                if spec.get("tool_namespace"):  # a tool of a namespace the request offered (an MCP server's)
                    item["namespace"] = spec["tool_namespace"]
                self._sse(
                    "response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}
                )
            else:
                msg_id = "msg_" + uuid.uuid4().hex[:20]
                self._sse(
                    "response.output_text.delta",
                    {
                        "type": "response.output_text.delta",
                        "item_id": msg_id,
                        "output_index": 0,
                        "content_index": 0,
                        "delta": text,
                    },
                )
                item = {
                    "type": "message",
                    "id": msg_id,
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
                self._sse(
                    "response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}
                )
            self._sse(
                "response.completed",
                {
                    "type": "response.completed",
                    "response": {"id": rid, "status": "completed", "output": [], "usage": usage},
                },
            )
        except (BrokenPipeError, ConnectionResetError):
            pass


# --------------------------------------------------------------------------
# public API


def _http(url: str, method: str = "GET", body: Any = None, timeout: float = 5.0) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read() or b"null")


class MockHandle:
    """A running mock: ``port``, ``base_url``, ``pid`` (None when in-thread)."""

    def __init__(
        self,
        flavor: str,
        port: int,
        pid: int | None = None,
        server: _Server | None = None,
        thread: threading.Thread | None = None,
        proc: _subprocess.Popen | None = None,
    ):
        self.flavor, self.port, self.pid = flavor, port, pid
        self._server, self._thread, self._proc = server, thread, proc

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def set_mode(self, mode: str = "ok", **options: Any) -> dict:
        return _http(self.base_url + "/_mode", "POST", {"mode": mode, **options})

    def get_mode(self) -> dict:
        return _http(self.base_url + "/_mode")

    def requests(self, main_only: bool = False) -> list[dict]:
        recs = _http(self.base_url + "/_requests")
        return [r for r in recs if r["main"]] if main_only else recs

    def prompts(self) -> list[str]:
        """The prompt text of each main request that is not a tool-result follow-up."""
        return [r["last_user_text"] for r in self.requests(main_only=True) if not r["tool_result"]]

    def clear(self) -> None:
        _http(self.base_url + "/_clear", "POST", {})

    def release(self) -> None:
        _http(self.base_url + "/_release", "POST", {})

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.terminate()
                try:
                    self._proc.wait(5)
                except _subprocess.TimeoutExpired:
                    self._proc.kill()
                    self._proc.wait()
            if self._proc.stdout:
                self._proc.stdout.close()
            self._proc = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def start_mock(
    flavor: str, port: int = 0, mode: dict | None = None, subprocess: bool = False, timeout: float = 10.0
) -> MockHandle:
    """Start a mock on 127.0.0.1 (``port=0``: a free port) and wait until it answers."""
    if flavor not in FLAVORS:
        raise ValueError(f"flavor must be one of {FLAVORS}")
    if subprocess:
        proc = _subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), flavor, str(port)],
            stdout=_subprocess.PIPE,
            stdin=_subprocess.DEVNULL,
            text=True,
        )
        line = proc.stdout.readline()
        if not line.startswith("PORT "):
            proc.kill()
            proc.wait()
            raise RuntimeError(f"mock did not start: {line!r}")
        handle = MockHandle(flavor, int(line.split()[1]), pid=proc.pid, proc=proc)
    else:
        server = _Server(("127.0.0.1", port), MockState(flavor))
        thread = threading.Thread(target=server.serve_forever, name=f"mock-{flavor}", daemon=True)
        thread.start()
        handle = MockHandle(flavor, server.server_address[1], server=server, thread=thread)
    deadline = time.monotonic() + timeout
    while True:
        try:
            _http(handle.base_url + "/_health", timeout=1)
            break
        except OSError:
            if time.monotonic() > deadline:
                handle.stop()
                raise RuntimeError(f"mock {flavor} on port {handle.port} did not answer") from None
            time.sleep(0.02)
    if mode:
        handle.set_mode(**mode)
    return handle


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in FLAVORS:
        print(f"usage: {os.path.basename(__file__)} anthropic|openai PORT", file=sys.stderr)
        return 2
    server = _Server(("127.0.0.1", int(argv[1])), MockState(argv[0]))
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    import signal

    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    sys.exit(main(sys.argv[1:]))
