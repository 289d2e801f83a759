"""The agent's reply to a prompt, from its own session record (`rk cron runs`).

Each provider writes its answer differently: Claude Code an `assistant` line per
content block (its `text` blocks are the reply), Codex an `agent_message` event
(and the `assistant` message item), Gemini CLI a `gemini` line. A turn's reply is
the first one after its prompt and before the next prompt. Pure: decoded lines in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rk.core.cost.usage import Prompt, instant, line_records


@dataclass(frozen=True)
class Said:
    """One line of the record that matters here: a prompt (`prompt` True) or a reply."""

    ts: float
    text: str
    prompt: bool = False


def _texts(blocks: object, kinds: tuple[str, ...]) -> str:
    if isinstance(blocks, str):
        return blocks
    if not isinstance(blocks, list):
        return ""
    return "\n".join(
        b["text"] for b in blocks if isinstance(b, dict) and b.get("type") in kinds and isinstance(b.get("text"), str)
    )


def reply_of(provider: str, obj: object) -> str:
    """The reply text one decoded line carries ("" for none)."""
    if not isinstance(obj, dict):
        return ""
    if provider == "claude":
        message = obj.get("message")
        if obj.get("type") != "assistant" or obj.get("isSidechain") or not isinstance(message, dict):
            return ""
        return _texts(message.get("content"), ("text",))
    if provider == "codex":
        payload = obj.get("payload")
        if not isinstance(payload, dict):
            return ""
        if obj.get("type") == "event_msg" and payload.get("type") == "agent_message":
            return payload["message"] if isinstance(payload.get("message"), str) else ""
        if (
            obj.get("type") == "response_item"
            and payload.get("type") == "message"
            and payload.get("role") == "assistant"
        ):
            return _texts(payload.get("content"), ("output_text",))
        return ""
    if provider == "gemini" and obj.get("type") == "gemini":
        return _texts(obj.get("content"), ("text",))
    return ""


def said(provider: str, objects: Iterable[object]) -> list[Said]:
    """The prompts and replies of a record's decoded lines, in file order."""
    out: list[Said] = []
    for obj in objects:
        for record in line_records(provider, obj):
            if isinstance(record, Prompt):
                out.append(Said(record.ts, record.text, prompt=True))
        text = reply_of(provider, obj)
        ts = instant(obj.get("timestamp")) if isinstance(obj, dict) else None
        if text.strip() and ts is not None:
            out.append(Said(ts, text))
    return out


def reply_to(lines: Sequence[Said], prompt_ts: float) -> str:
    """The first reply after the prompt written at `prompt_ts`, before the next prompt ("" for none)."""
    found = False
    for line in lines:
        if line.prompt:
            if found:
                return ""
            found = line.ts == prompt_ts
        elif found:
            return line.text
    return ""
