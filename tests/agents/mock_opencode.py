"""A stdlib mock of the OpenAI chat-completions API, for running OpenCode offline.

OpenCode talks to it through a custom provider (`"npm": "@ai-sdk/openai-compatible"`,
`"options": {"baseURL": "http://127.0.0.1:PORT/v1"}`; see opencode_launch.py).
Its requests are `POST /v1/chat/completions` with `"stream": true`.

What it answers is chosen by markers in the text of the last user message:

    mock:slow=N          stream the first words, then wait N seconds before the rest
                         (the turn stays busy; Esc in OpenCode closes the connection)
    mock:status=500      answer HTTP 500 (also 429, 503, ...) with an OpenAI-style error body
                         (its type: invalid_request_error for 400, which OpenCode does not
                         retry; server_error, which it does, for 500 and unknown codes)
    mock:fail=K          only the first K requests for this prompt fail, later ones succeed
                         (default: every one fails, so OpenCode retries 5 times, then errors)
    mock:retry-after-ms=N  add a `retry-after-ms: N` header to the error (OpenCode waits N ms
                         before the retry instead of 2 s, 4 s, 8 s, 16 s, 30 s)
    mock:read=/abs/path  call OpenCode's `read` tool on that file (a path outside the
                         work dir makes OpenCode ask for `external_directory` permission)
    mock:bash=CMD        call OpenCode's `bash` tool with CMD (to end of line)

Anything else gets the reply REPLY ("Hello from the mock API."). Once a tool result is
the last message, the mock answers it with plain text, so a tool turn ends by itself.
OpenCode's side call that names the session ("You are a title generator" in the system
prompt) always gets the title "Mock session", so markers never break it.

Every request is appended as one JSON line to the log file (if given):
{"t", "path", "kind": "title"|"reply"|"tool"|"after_tool"|"error", "status", "prompt", ...}.

Run: `python3 mock_opencode.py PORT [LOGFILE]` or, from Python, `start_mock(port=0)`.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REPLY = "Hello from the mock API."
TITLE = "Mock session"
MODEL_ID = "mock-model"


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _marker(text: str, name: str) -> str | None:
    m = re.search(
        r"mock:" + re.escape(name) + r"=(\S[^\n]*)" if name == "bash" else r"mock:" + re.escape(name) + r"=(\S+)", text
    )
    return m.group(1).strip() if m else None


class MockHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: MockServer

    def log_message(self, *a):  # quiet
        pass

    # -- plumbing --------------------------------------------------------------
    def _json(self, code: int, obj, headers: dict | None = None) -> None:
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _log(self, **rec) -> None:
        rec = {"t": round(time.time(), 3), "path": self.path, **rec}
        self.server.requests.append(rec)
        if self.server.log_path:
            with self.server.lock, open(self.server.log_path, "a") as f:
                f.write(json.dumps(rec) + "\n")

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            return self._json(
                200, {"object": "list", "data": [{"id": MODEL_ID, "object": "model", "owned_by": "mock"}]}
            )
        self._json(404, {"error": {"message": "mock: not found", "type": "not_found"}})

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            req = json.loads(raw or b"{}")
        except ValueError:
            req = {}
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._log(kind="unknown", status=404)
            return self._json(404, {"error": {"message": "mock: not found", "type": "not_found"}})
        msgs = req.get("messages") or []
        system = "\n".join(_text(m.get("content")) for m in msgs if m.get("role") == "system")
        users = [m for m in msgs if m.get("role") == "user"]
        prompt = _text(users[-1].get("content")) if users else ""
        last_role = msgs[-1].get("role") if msgs else None
        stream = bool(req.get("stream"))
        base = {"prompt": prompt[-200:], "stream": stream, "model": req.get("model"), "n_messages": len(msgs)}

        if "title generator" in system:
            self._log(kind="title", status=200, **base)
            return self._answer(req, text=TITLE)
        if last_role == "tool":
            self._log(kind="after_tool", status=200, **base)
            return self._answer(req, text="Done with the tool.")

        status = _marker(prompt, "status")
        if status:
            key = hashlib.sha1(prompt.encode()).hexdigest()
            with self.server.lock:
                n = self.server.fail_counts.get(key, 0) + 1
                self.server.fail_counts[key] = n
            fail = _marker(prompt, "fail")
            if fail is None or n <= int(fail):
                code = int(status)
                headers = {}
                ra = _marker(prompt, "retry-after-ms")
                if ra:
                    headers["retry-after-ms"] = ra
                kind = {
                    400: "invalid_request_error",  # not retried: the body's words decide too
                    401: "invalid_api_key",
                    429: "rate_limit_exceeded",
                    503: "service_unavailable",
                }.get(code, "server_error")
                self._log(kind="error", status=code, attempt=n, **base)
                return self._json(
                    code, {"error": {"message": f"mock error {code}", "type": kind, "code": kind}}, headers
                )

        read = _marker(prompt, "read")
        bash = _marker(prompt, "bash")
        if read or bash:
            name, args = (
                ("read", {"filePath": read}) if read else ("bash", {"command": bash, "description": "Run a command"})
            )
            self._log(kind="tool", status=200, tool=name, args=args, **base)
            return self._answer(req, tool=(name, args))

        slow = float(_marker(prompt, "slow") or 0)
        self._log(kind="reply", status=200, slow=slow, **base)
        self._answer(req, text=REPLY, slow=slow)

    # -- answers ---------------------------------------------------------------
    def _answer(self, req: dict, text: str = "", tool: tuple | None = None, slow: float = 0) -> None:
        cid, model, created = "chatcmpl-" + uuid.uuid4().hex[:20], req.get("model") or MODEL_ID, int(time.time())
        usage = {"prompt_tokens": 12, "completion_tokens": 6, "total_tokens": 18}
        finish = "tool_calls" if tool else "stop"
        call = None
        if tool:
            call = {
                "id": "call_" + uuid.uuid4().hex[:12],
                "type": "function",
                "function": {"name": tool[0], "arguments": json.dumps(tool[1])},
            }
        if not req.get("stream"):
            msg = {"role": "assistant", "content": text or None}
            if call:
                msg["tool_calls"] = [call]
            return self._json(
                200,
                {
                    "id": cid,
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
                    "usage": usage,
                },
            )
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True

        def chunk(delta: dict, finish_reason=None, **extra) -> None:
            obj = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
                **extra,
            }
            self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")
            self.wfile.flush()

        try:
            chunk({"role": "assistant", "content": ""})
            if call:
                chunk({"tool_calls": [{"index": 0, **call}]})
            else:
                words = text.split(" ")
                head, tail = words[:1], words[1:]
                chunk({"content": " ".join(head)})
                end = time.time() + slow
                while time.time() < end:  # keep the stream open; a closed socket ends it
                    time.sleep(0.25)
                    self.wfile.write(b": keep-alive\n\n")
                    self.wfile.flush()
                for w in tail:
                    chunk({"content": " " + w})
            chunk({}, finish, usage=usage)
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self._log(kind="client_closed", status=200)


class MockServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port: int = 0, log_path: str | None = None):
        super().__init__(("127.0.0.1", port), MockHandler)
        self.log_path = log_path
        self.lock = threading.Lock()
        self.requests: list[dict] = []
        self.fail_counts: dict[str, int] = {}

    @property
    def port(self) -> int:
        return self.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


def start_mock(port: int = 0, log_path: str | None = None) -> MockServer:
    """Start the mock in a daemon thread; call `.shutdown()` and `.server_close()` to stop it."""
    srv = MockServer(port, log_path)
    threading.Thread(target=srv.serve_forever, name="mock-opencode", daemon=True).start()
    return srv


if __name__ == "__main__":
    srv = MockServer(int(sys.argv[1]) if len(sys.argv) > 1 else 0, sys.argv[2] if len(sys.argv) > 2 else None)
    print(srv.port, flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
