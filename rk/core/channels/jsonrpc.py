"""Is one line from an MCP client a JSON-RPC 2.0 message, and if not, what is the error reply?

`rk mcp` reads one message per line. A line the SDK cannot take would get no
answer at all, so every line is judged here first: a well-formed request,
notification or response passes on; anything else gets the error the JSON-RPC
2.0 specification names (-32700 parse error, -32600 invalid request, -32602
invalid params), with the request's id when one can be read, else null. MCP
narrows JSON-RPC: no batches, an id is a string or an integer (never null),
params are an object. A notification (no id) is never answered, even when its
params are wrong; it is dropped.

Pure: bytes in, a verdict out.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
#: The longest line read whole; a longer one is answered and skipped unread.
MAX_LINE = 1 << 20


@dataclass(frozen=True)
class Verdict:
    """`reply` is the error line to send (b"" for none); `passes` whether the SDK gets the line."""

    passes: bool
    reply: bytes = b""
    why: str = ""


PASS = Verdict(True)


def error_line(code: int, message: str, request_id: str | int | None = None) -> bytes:
    doc = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def refuse(code: int, message: str, request_id: str | int | None = None) -> Verdict:
    return Verdict(False, error_line(code, message, request_id), message)


def too_long(head: bytes = b"") -> Verdict:
    """The verdict on a line over `MAX_LINE` bytes, answered with the id its `head` (its
    first bytes) names, so that the client's call fails at once instead of timing out."""
    return refuse(INVALID_REQUEST, f"Invalid Request: a message is at most {MAX_LINE} bytes", id_in_head(head))


#: How much of an oversize line is kept to find its id.
HEAD = 4096
#: A top-level `"id": 7` or `"id": "x"` written before the message's `"params"`/`"result"`
#: (as clients write them: jsonrpc, id, method, params); one inside params is never taken.
_ID = re.compile(rb'^\s*\{(?:(?!"params"|"result"|"error")[^{}\[\]])*?"id"\s*:\s*(-?\d{1,15}|"(?:[^"\\]|\\.){0,200}")')


def id_in_head(head: bytes) -> str | int | None:
    """The request id an oversize message's first bytes name, or None (a notification,
    or an id written after the parameters, which are not read)."""
    found = _ID.match(head[:HEAD])
    if found is None:
        return None
    try:
        value = json.loads(found.group(1))
    except ValueError:
        return None
    return value if valid_id(value) else None


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def valid_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def judge(line: bytes) -> Verdict:
    """The verdict on one line (without its newline)."""
    if not line.strip():
        return Verdict(False, why="blank line")
    try:
        doc = json.loads(line.decode("utf-8"), parse_constant=_no_constants)
    except UnicodeDecodeError:
        return refuse(PARSE_ERROR, "Parse error: not UTF-8")
    except (ValueError, RecursionError):
        return refuse(PARSE_ERROR, "Parse error: not JSON")
    if isinstance(doc, list):
        return refuse(INVALID_REQUEST, "Invalid Request: batches are not supported")
    if not isinstance(doc, dict):
        return refuse(INVALID_REQUEST, "Invalid Request: a message is a JSON object")
    has_id = "id" in doc
    if has_id and not valid_id(doc["id"]):
        return refuse(INVALID_REQUEST, "Invalid Request: id must be a string or an integer")
    request_id = doc["id"] if has_id else None
    if doc.get("jsonrpc") != "2.0":
        return refuse(INVALID_REQUEST, 'Invalid Request: jsonrpc must be "2.0"', request_id)
    if "method" not in doc:
        if has_id and ("result" in doc) != ("error" in doc):
            return PASS  # a response to a request of ours
        return refuse(INVALID_REQUEST, "Invalid Request: method missing", request_id)
    if not isinstance(doc["method"], str):
        return refuse(INVALID_REQUEST, "Invalid Request: method must be a string", request_id)
    if "params" in doc and not isinstance(doc["params"], dict):
        if not has_id:
            return Verdict(False, why="notification with params not an object")
        return refuse(INVALID_PARAMS, "Invalid params: params must be an object", request_id)
    return PASS


def after_sdk_refusal(line: bytes) -> Verdict:
    """The verdict on a line that passed `judge` but the SDK's message model refused."""
    doc = json.loads(line.decode("utf-8"))
    if "id" not in doc or "method" not in doc:
        return Verdict(False, why="notification or response the SDK refused")  # never answered
    return refuse(INVALID_REQUEST, "Invalid Request: not an MCP message", doc["id"])
