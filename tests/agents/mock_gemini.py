"""Stdlib-only mock of the Gemini API (generativelanguage v1beta) for the real Gemini CLI.

Gemini CLI 0.61 (``@google/genai`` SDK) talks to ``$GOOGLE_GEMINI_BASE_URL`` with:

* ``POST /v1beta/models/<model>:streamGenerateContent?alt=sse`` -- the main chat turn (SSE,
  ``data: <GenerateContentResponse JSON>\\r\\n\\r\\n`` per chunk);
* ``POST /v1beta/models/<model>:generateContent`` -- side calls (model router, next-speaker
  check, loop detection, session summary); they ask for JSON via
  ``generationConfig.responseJsonSchema`` / ``responseSchema``, which we fill in generically;
* ``POST /v1beta/models/<model>:countTokens``.

Modes (switch at runtime with ``POST /_mode {"mode": "...", "delay": s, "reply": "..."}``, or
``MockGemini.set_mode``):

``ok``          short text reply
``slow``        same reply after ``delay`` seconds (default 5) on the main (stream) call only;
                side calls answer at once; the wait ends early on stop()
``tool``        a ``run_shell_command`` function call (``touch x``, or ``command``) that needs confirmation;
                once the CLI sends the functionResponse back, a text reply
``error400``    HTTP 400 ``INVALID_ARGUMENT`` (not retried: the CLI ends the turn on it at once)
``error500``    HTTP 500 ``INTERNAL``
``error503``    HTTP 503 ``UNAVAILABLE`` "The model is overloaded"
``error429``    HTTP 429 ``RESOURCE_EXHAUSTED`` free-tier *per-day* quota (the CLI classifies it as
                TerminalQuotaError: no retries)
``error429rpm`` HTTP 429 ``RESOURCE_EXHAUSTED`` *per-minute* quota with RetryInfo ``delay`` s
                (RetryableQuotaError: the CLI retries with backoff)

Errors apply to the main (stream) call only, unless ``errors_on_side_calls`` is set (or
``POST /_mode {"errors_on_side_calls": true}``); countTokens always succeeds.

Control endpoints: ``GET /_mode``, ``POST /_mode``, ``GET /_requests`` (list of
``{"t", "method", "path", "kind", "mode", "last_user_text", "model"}``), ``POST /_reset``.

Use from Python::

    m = MockGemini(mode="ok"); port = m.start(); ...; m.set_mode("tool"); ...; m.stop()

or as a script: ``python3 mock_gemini.py [--port N] [--mode ok] [--delay 5]`` (prints the port).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

MODES = ("ok", "slow", "tool", "error400", "error500", "error503", "error429", "error429rpm")
DEFAULT_REPLY = "Hello from the mock Gemini API."
TOOL_DONE_REPLY = "Ran the command."


def _error_body(mode: str, model: str, delay: float) -> tuple[int, dict]:
    if mode == "error400":
        return 400, {
            "error": {
                "code": 400,
                "status": "INVALID_ARGUMENT",
                "message": "Request contains an invalid argument.",
            }
        }
    if mode == "error500":
        return 500, {
            "error": {
                "code": 500,
                "status": "INTERNAL",
                "message": "An internal error has occurred. Please retry or report in "
                "https://developers.generativeai.google/guide/troubleshooting",
            }
        }
    if mode == "error503":
        return 503, {
            "error": {
                "code": 503,
                "status": "UNAVAILABLE",
                "message": "The model is overloaded. Please try again later.",
            }
        }
    per_day = mode == "error429"
    quota_id = (
        "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
        if per_day
        else "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
    )
    limit = "50" if per_day else "2"
    retry = 32.0 if per_day else max(float(delay), 0.0)
    metric = "generativelanguage.googleapis.com/generate_content_free_tier_requests"
    msg = (
        "You exceeded your current quota, please check your plan and billing details. For more "
        "information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. "
        "To monitor your current usage, head to: https://ai.dev/usage?tab=rate-limit. \n"
        f"* Quota exceeded for metric: {metric}, limit: {limit}, model: {model}\n"
        f"Please retry in {retry:.1f}s."
    )
    return 429, {
        "error": {
            "code": 429,
            "status": "RESOURCE_EXHAUSTED",
            "message": msg,
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [
                        {
                            "quotaMetric": metric,
                            "quotaId": quota_id,
                            "quotaDimensions": {"location": "global", "model": model},
                            "quotaValue": limit,
                        }
                    ],
                },
                {
                    "@type": "type.googleapis.com/google.rpc.Help",
                    "links": [
                        {
                            "description": "Learn more about Gemini API quotas",
                            "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
                        }
                    ],
                },
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{int(retry)}s"},
            ],
        }
    }


def _fill_schema(schema: dict | None):
    """A value matching a (JSON / OpenAPI-ish) schema, for the CLI's JSON side calls."""
    if not isinstance(schema, dict):
        return "mock"
    if schema.get("enum"):
        enum = schema["enum"]
        return "user" if "user" in enum else enum[0]
    t = str(schema.get("type", "object")).lower()
    if t == "object" or "properties" in schema:
        return {k: _fill_schema(v) for k, v in (schema.get("properties") or {}).items()}
    if t == "array":
        return []
    if t == "boolean":
        return False
    if t in ("number", "integer"):
        return 0
    return "mock"


def _contents_summary(req: dict) -> tuple[str, bool]:
    """(last user text, last user turn is a functionResponse)."""
    users = [c for c in req.get("contents") or [] if c.get("role", "user") == "user"]
    if not users:
        return "", False
    parts = users[-1].get("parts") or []
    texts = [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
    fres = [
        p["functionResponse"].get("name", "?")
        for p in parts
        if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict)
    ]
    if fres and not texts:
        return "[functionResponse " + ",".join(fres) + "]", True
    return "\n".join(texts), bool(fres)


class MockGemini:
    def __init__(
        self, mode: str = "ok", delay: float = 5.0, reply: str = DEFAULT_REPLY, host: str = "127.0.0.1", port: int = 0
    ):
        self.host, self.port = host, port
        self.mode, self.delay, self.reply = mode, float(delay), reply
        self.tool_command = "touch x"  # what mode "tool" asks run_shell_command to run
        #: False: error modes fail only the main (stream) call; the CLI's JSON side calls (model
        #: router etc.) still succeed. With True the router call is retried with backoff for
        #: minutes before the main call is even tried.
        self.errors_on_side_calls = False
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._srv: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- control -------------------------------------------------------------------------
    def set_mode(
        self, mode: str, delay: float | None = None, reply: str | None = None, command: str | None = None
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; one of {MODES}")
        with self._lock:
            self.mode = mode
            if delay is not None:
                self.delay = float(delay)
            if reply is not None:
                self.reply = reply
            if command is not None:
                self.tool_command = command

    def model_requests(self) -> list[dict]:
        with self._lock:
            return [r for r in self.requests if r["kind"] in ("stream", "generate")]

    def start(self) -> int:
        mock = self

        class Handler(_Handler):
            pass

        Handler.mock = mock
        self._srv = ThreadingHTTPServer((self.host, self.port), Handler)
        self._srv.daemon_threads = True
        self.port = self._srv.server_address[1]
        self._thread = threading.Thread(target=self._srv.serve_forever, name="mock-gemini", daemon=True)
        self._thread.start()
        return self.port

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def stop(self) -> None:
        self._stop.set()
        if self._srv is not None:
            self._srv.shutdown()
            self._srv.server_close()
            self._srv = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    mock: MockGemini

    def log_message(self, *a):  # quiet
        pass

    def _send_json(self, code: int, obj) -> None:
        b = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json; charset=UTF-8")
        self.send_header("content-length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def _body(self) -> dict:
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return {}

    def do_GET(self):
        m = self.mock
        path = urlsplit(self.path).path
        if path == "/_mode":
            with m._lock:
                return self._send_json(
                    200,
                    {
                        "mode": m.mode,
                        "delay": m.delay,
                        "reply": m.reply,
                        "command": m.tool_command,
                        "errors_on_side_calls": m.errors_on_side_calls,
                    },
                )
        if path == "/_requests":
            with m._lock:
                return self._send_json(200, list(m.requests))
        if path.rstrip("/").endswith("/models"):
            return self._send_json(200, {"models": []})
        self._send_json(404, {"error": {"code": 404, "status": "NOT_FOUND", "message": "mock: not found"}})

    def do_POST(self):
        try:
            self._post()
        except (BrokenPipeError, ConnectionResetError):  # the CLI cancelled (Esc) or gave up
            self.close_connection = True

    def _post(self):
        m = self.mock
        path = urlsplit(self.path).path
        req = self._body()
        if path == "/_mode":
            try:
                m.set_mode(req.get("mode", m.mode), req.get("delay"), req.get("reply"), req.get("command"))
                if "errors_on_side_calls" in req:
                    m.errors_on_side_calls = bool(req["errors_on_side_calls"])
            except ValueError as e:
                return self._send_json(400, {"error": str(e)})
            return self._send_json(200, {"mode": m.mode, "delay": m.delay})
        if path == "/_reset":
            with m._lock:
                m.requests.clear()
            return self._send_json(200, {})
        model = path.rsplit("/", 1)[-1].split(":", 1)[0]
        kind = (
            "stream"
            if ":streamGenerateContent" in path
            else "generate"
            if ":generateContent" in path
            else "count"
            if ":countTokens" in path
            else "other"
        )
        text, is_fres = _contents_summary(req)
        with m._lock:
            mode, delay, reply, tool_command = m.mode, m.delay, m.reply, m.tool_command
            gc = req.get("generationConfig") or req.get("config") or {}
            m.requests.append(
                {
                    "t": round(time.time(), 3),
                    "method": "POST",
                    "path": self.path,
                    "kind": kind,
                    "mode": mode,
                    "model": model,
                    "last_user_text": text[-500:],
                    "json_schema": bool(gc.get("responseJsonSchema") or gc.get("responseSchema")),
                    "n_contents": len(req.get("contents") or []),
                }
            )
        if kind == "count":
            return self._send_json(200, {"totalTokens": 10})
        if kind == "other":
            return self._send_json(404, {"error": {"code": 404, "status": "NOT_FOUND", "message": "mock"}})
        if mode.startswith("error") and (kind == "stream" or m.errors_on_side_calls):
            code, body = _error_body(mode, model, delay)
            return self._send_json(code, body)
        if mode == "slow" and kind == "stream" and m._stop.wait(delay):
            return
        usage = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
        schema = gc.get("responseJsonSchema") or gc.get("responseSchema")
        if schema and kind == "generate":
            parts = [{"text": json.dumps(_fill_schema(schema))}]
        elif mode == "tool" and not is_fres:
            parts = [
                {
                    "functionCall": {
                        "id": "call_" + uuid.uuid4().hex[:12],
                        "name": "run_shell_command",
                        "args": {"command": tool_command, "description": f"Run {tool_command}"},
                    }
                }
            ]
        else:
            parts = [{"text": TOOL_DONE_REPLY if (mode == "tool" and is_fres) else reply}]
        resp = {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": usage,
            "modelVersion": model,
            "responseId": uuid.uuid4().hex[:20],
        }
        if kind == "generate":
            return self._send_json(200, resp)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(b"data: " + json.dumps(resp).encode() + b"\r\n\r\n")
        self.wfile.flush()
        self.close_connection = True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--mode", default="ok", choices=MODES)
    ap.add_argument("--delay", type=float, default=5.0)
    ap.add_argument("--reply", default=DEFAULT_REPLY)
    a = ap.parse_args(argv)
    m = MockGemini(mode=a.mode, delay=a.delay, reply=a.reply, port=a.port)
    print(m.start(), flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        m.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
