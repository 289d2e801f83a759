"""Tokens an entry's deliveries cost, from the agent's own records.

rk never counts tokens itself: the agent CLI writes what each model request
used into its session record (Claude Code's transcript JSONL, `usage` on each
assistant message; Codex's session rollout, `token_count` events with running
totals). This module turns already-read, already-decoded lines of those files
(and Gemini CLI's session JSONL, `tokens` on each reply) into records (a
genuine user prompt, or some tokens spent), attributes the
tokens of each turn a delivery started to that delivery's entry, sums them per
local day in the entry's zone, prices them with the config's table, and says
what a day spent (`day_spent`; the budget rule is `rk.core.cost.budget`). Pure:
the shell (`rk.store.transcripts`) finds and reads the files.

Attribution (specs/usage.md): a turn starts at a genuine user prompt (not a
tool result, not text the CLI injects) and runs until the next one. A turn is
an entry's when its prompt is the text a `delivered` line of that entry typed
(the entry's payload; a placeholder matches anything) and was written at or
after that line's instant (less a small clock skew) and before the next
delivery to that pane. Every other turn (a human's) is nobody's. A delivery whose prompt is
not in the record has unknown usage: `None`, never 0.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, tzinfo

from rk.core.cost.budget import Spent

#: Seconds a prompt's record may predate its `delivered` line (the line is written at the tick's now,
#: before the typing, so a prompt is normally later; this covers two clocks rounding differently).
SKEW = 5
#: Providers whose session record rk reads for usage (specs/usage.md says why the others are not).
PROVIDERS = ("claude", "codex", "gemini")


@dataclass(frozen=True)
class Tokens:
    """Tokens as the model API reports them: fresh input, output, and the prompt cache's reads and writes."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    @property
    def total(self) -> int:
        """What a budget counts: every token the requests processed (cache reads included)."""
        return self.input + self.output + self.cache_read + self.cache_write

    def __add__(self, other: Tokens) -> Tokens:
        return Tokens(
            self.input + other.input,
            self.output + other.output,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
        )

    def to_dict(self) -> dict[str, int]:
        return {
            "input": self.input,
            "output": self.output,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            "total": self.total,
        }


@dataclass(frozen=True)
class Prompt:
    """A genuine user prompt: a turn starts here."""

    ts: float
    text: str


@dataclass(frozen=True)
class Spend:
    """Tokens one model request spent (`key` names it so a record written twice counts once)."""

    ts: float
    tokens: Tokens
    model: str = ""
    key: str = ""
    odd: tuple[str, ...] = ()  #: `field=value` of each count that is not a whole number ≥ 0 (counted as 0)


Record = Prompt | Spend


def instant(value: object) -> float | None:
    """An ISO-8601 timestamp of a record (`2026-12-02T18:14:34.925Z`) as unix seconds, or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _odd(counts: Mapping[str, object], keys: Sequence[str]) -> tuple[str, ...]:
    """`key=value` of each count under `keys` that is there but not a whole number ≥ 0
    (negative, a fraction, text, a boolean): `_count` counts it as 0, and this says so."""
    there = [(key, value) for key in keys if (value := counts.get(key)) is not None]
    return tuple(f"{k}={repr(v)[:24]}" for k, v in there if not isinstance(v, int) or isinstance(v, bool) or v < 0)


def _prompt_text(content: object) -> str | None:
    """A Claude user message's typed text; None for a tool result or nothing typed."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_result":
            return None
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
    return "\n".join(texts) if texts else None


CLAUDE_COUNTS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
CODEX_COUNTS = ("input_tokens", "cached_input_tokens", "cache_write_input_tokens", "output_tokens")
GEMINI_COUNTS = ("input", "cached", "tool", "output", "thoughts")


def claude_records(obj: object) -> list[Record]:
    """One decoded line of a Claude Code transcript: a typed prompt (`type: user`, not
    meta, not a tool result, not a sidechain), or an assistant message's `usage`."""
    if not isinstance(obj, dict) or obj.get("isSidechain"):
        return []
    ts = instant(obj.get("timestamp"))
    message = obj.get("message")
    if ts is None or not isinstance(message, dict):
        return []
    if obj.get("type") == "user" and not obj.get("isMeta"):
        text = _prompt_text(message.get("content"))
        return [Prompt(ts, text)] if text is not None else []
    usage = message.get("usage")
    if obj.get("type") != "assistant" or not isinstance(usage, dict):
        return []
    tokens = Tokens(
        _count(usage.get("input_tokens")),
        _count(usage.get("output_tokens")),
        _count(usage.get("cache_read_input_tokens")),
        _count(usage.get("cache_creation_input_tokens")),
    )
    key, model = message.get("id"), message.get("model")
    odd = _odd(usage, CLAUDE_COUNTS)
    return [Spend(ts, tokens, model if isinstance(model, str) else "", key if isinstance(key, str) else "", odd)]


def _codex_tokens(usage: object) -> Tokens | None:
    """A Codex usage object; its `input_tokens` include the cached ones."""
    if not isinstance(usage, dict):
        return None
    cached = _count(usage.get("cached_input_tokens"))
    written = _count(usage.get("cache_write_input_tokens"))
    fresh = max(0, _count(usage.get("input_tokens")) - cached - written)
    return Tokens(fresh, _count(usage.get("output_tokens")), cached, written)


def codex_records(obj: object) -> list[Record]:
    """One decoded line of a Codex rollout: a user message (`item_completed` of a
    `UserMessage`, or the older `user_message` event), or a `token_count` event,
    whose running total (`total_token_usage`) is kept as a Spend of that total
    (`codex_spends` turns the totals into each request's share), or a turn's
    model (`turn_context`)."""
    if not isinstance(obj, dict) or obj.get("type") not in ("event_msg", "turn_context"):
        return []
    ts = instant(obj.get("timestamp"))
    payload = obj.get("payload")
    if ts is None or not isinstance(payload, dict):
        return []
    kind = payload.get("type")
    if kind == "turn_context" or obj.get("type") == "turn_context":
        model = payload.get("model")
        return [Spend(ts, Tokens(), model, key="model")] if isinstance(model, str) else []
    if kind == "user_message" and isinstance(payload.get("message"), str):
        return [Prompt(ts, payload["message"])]
    if kind == "item_completed":
        item = payload.get("item")
        if isinstance(item, dict) and item.get("type") == "UserMessage" and isinstance(item.get("content"), list):
            texts = [b["text"] for b in item["content"] if isinstance(b, dict) and isinstance(b.get("text"), str)]
            return [Prompt(ts, "\n".join(texts))] if texts else []
        return []
    if kind == "token_count":
        info = payload.get("info")
        counts = info.get("total_token_usage") if isinstance(info, dict) else None
        if not isinstance(counts, dict):
            return []
        return [Spend(ts, _codex_tokens(counts) or Tokens(), key="total", odd=_odd(counts, CODEX_COUNTS))]
    return []


def codex_spends(records: Iterable[Record]) -> list[Record]:
    """Running totals → each step's tokens (the difference; a total that went down,
    a new session in the same file, starts from zero). A repeated event adds nothing."""
    out: list[Record] = []
    last = Tokens()
    model = ""
    for record in records:
        if isinstance(record, Spend) and record.key == "model":
            model = record.model  # the turn's model (`turn_context`), for the price table
        elif isinstance(record, Spend) and record.key == "total":
            now = record.tokens
            if now.total < last.total:
                last = Tokens()
            step = Tokens(
                max(0, now.input - last.input),
                max(0, now.output - last.output),
                max(0, now.cache_read - last.cache_read),
                max(0, now.cache_write - last.cache_write),
            )
            last = now
            if step.total or record.odd:
                out.append(Spend(record.ts, step, model, odd=record.odd))
        else:
            out.append(record)
    return out


def gemini_records(obj: object) -> list[Record]:
    """One decoded line of a Gemini CLI session (`chats/session-*.jsonl`): a `user`
    message (the one carrying the `<session_context>` setup is written inside a
    `$set`, never as a line of its own), or a `gemini` message's `tokens`, whose
    `input` includes the cached ones and whose `thoughts` are billed as output."""
    if not isinstance(obj, dict):
        return []
    ts = instant(obj.get("timestamp"))
    if ts is None:
        return []
    if obj.get("type") == "user":
        content = obj.get("content")
        if isinstance(content, str):
            return [Prompt(ts, content)]
        if isinstance(content, list):
            texts = [p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
            return [Prompt(ts, "\n".join(texts))] if texts else []
        return []
    tokens = obj.get("tokens")
    if obj.get("type") != "gemini" or not isinstance(tokens, dict):
        return []
    cached = _count(tokens.get("cached"))
    spent = Tokens(
        max(0, _count(tokens.get("input")) - cached) + _count(tokens.get("tool")),
        _count(tokens.get("output")) + _count(tokens.get("thoughts")),
        cached,
    )
    key, model = obj.get("id"), obj.get("model")
    odd = _odd(tokens, GEMINI_COUNTS)
    return [Spend(ts, spent, model if isinstance(model, str) else "", key if isinstance(key, str) else "", odd)]


def line_records(provider: str, obj: object) -> list[Record]:
    """The records of one decoded line of a provider's session file (raw: see `settle`)."""
    if provider == "claude":
        return claude_records(obj)
    if provider == "codex":
        return codex_records(obj)
    if provider == "gemini":
        return gemini_records(obj)
    return []


def settle(provider: str, raw: Iterable[Record]) -> list[Record]:
    """A file's raw records, in file order → the records turns are cut from: Claude's
    message written once per content block counts once (the last copy stands);
    Codex's running totals become each request's share (`codex_spends`); a Gemini
    message written again with its tokens counts once, like Claude's."""
    if provider == "codex":
        return codex_spends(raw)
    seen: dict[str, int] = {}
    out: list[Record] = []
    for record in raw:
        if isinstance(record, Spend) and record.key:
            if record.key in seen:
                out[seen[record.key]] = record
                continue
            seen[record.key] = len(out)
        out.append(record)
    return out


def records_of(provider: str, objects: Iterable[object]) -> list[Record] | None:
    """The records of a session file's decoded lines; None for a provider whose
    record rk cannot read (its usage is unknown)."""
    if provider not in PROVIDERS:
        return None
    return settle(provider, (r for obj in objects for r in line_records(provider, obj)))


# --------------------------------------------------------------------------- attribution


@dataclass(frozen=True)
class Delivery:
    """One `delivered` line: which entry typed what pattern into which pane, when."""

    entry: str
    ts: int
    payload: str


@dataclass(frozen=True)
class Turn:
    """A turn of the record: its prompt and the model requests until the next prompt."""

    prompt: Prompt
    spends: tuple[Spend, ...] = ()

    @property
    def tokens(self) -> Tokens:
        total = Tokens()
        for spend in self.spends:
            total = total + spend.tokens
        return total

    @property
    def odd(self) -> tuple[str, ...]:
        """The counts of its requests that were not whole numbers ≥ 0 (each counted as 0)."""
        return tuple(field for spend in self.spends for field in spend.odd)

    def cost(self, prices: Mapping[str, Price]) -> float | None:
        """Its money by the price table; None when a model it used has no price."""
        money = 0.0
        for spend in self.spends:
            price = price_for(prices, spend.model)
            if price is None:
                return None
            money += price.cost(spend.tokens)
        return money


def turns(records: Sequence[Record]) -> list[Turn]:
    """The turns of a record, in order (tokens before the first prompt belong to no turn)."""
    out: list[Turn] = []
    for record in records:
        if isinstance(record, Prompt):
            out.append(Turn(record))
        elif out:
            out[-1] = Turn(out[-1].prompt, (*out[-1].spends, record))
    return out


_PLACEHOLDER = re.compile(r"\{[a-z_]+\}")


def _normal(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class Matcher:
    """Whether a prompt is the text an entry's payload typed: equal up to whitespace,
    a placeholder (`{last_delivered}`, …) matching any text."""

    payload: str

    def __call__(self, text: str) -> bool:
        want, got = _normal(self.payload), _normal(text)
        if "{" not in want:
            return want == got
        parts = [re.escape(p) for p in _PLACEHOLDER.split(want)]
        return re.fullmatch(".*?".join(parts), got, re.DOTALL) is not None


def attribute(record_turns: Sequence[Turn], deliveries: Sequence[Delivery]) -> list[Turn | None]:
    """The turn of each delivery (same order), or None when its prompt is not in the
    record (its usage is unknown). Deliveries are taken oldest first; each claims the first
    unclaimed turn whose prompt matches, written from its instant (less SKEW) to
    before the next delivery of any entry to the pane (whose line is written
    before its typing, in whole seconds), so a turn is one delivery's at most."""
    order = sorted(range(len(deliveries)), key=lambda i: deliveries[i].ts)
    out: list[Turn | None] = [None] * len(deliveries)
    claimed: set[int] = set()
    for rank, i in enumerate(order):
        d = deliveries[i]
        until = deliveries[order[rank + 1]].ts + 1 if rank + 1 < len(order) else None  # +1: whole seconds
        match = Matcher(d.payload)
        for t, turn in enumerate(record_turns):
            if t in claimed or turn.prompt.ts < d.ts - SKEW:
                continue
            if until is not None and turn.prompt.ts >= until:
                break
            if match(turn.prompt.text):
                claimed.add(t)
                out[i] = turn
                break
    return out


# --------------------------------------------------------------------------- days


def day_of(ts: int, zone: tzinfo) -> date:
    """The local day an instant falls on, in `zone`."""
    return datetime.fromtimestamp(ts, zone).date()


def day_spent(tokens: Sequence[Tokens | None], why: str = "") -> Spent:
    """One day's deliveries' tokens → what the budget reads: the known sum; None
    when every delivery's usage is unknown (and there was one)."""
    known = [t.total for t in tokens if t is not None]
    unknown = len(tokens) - len(known)
    return Spent(sum(known) if known or not unknown else None, unknown, why if unknown else "")


# --------------------------------------------------------------------------- prices


@dataclass(frozen=True)
class Price:
    """Money per million tokens of each kind, for one model (config `prices:`)."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0

    def cost(self, tokens: Tokens) -> float:
        return (
            tokens.input * self.input
            + tokens.output * self.output
            + tokens.cache_read * self.cache_read
            + tokens.cache_write * self.cache_write
        ) / 1_000_000


PRICE_KEYS = ("input", "output", "cache_read", "cache_write")


def parse_prices(raw: object, source: str) -> tuple[dict[str, Price], list[str]]:
    """The config's `prices:` mapping (model name or `default` → per-million prices);
    a bad item is left out with one line saying why (the others stand)."""
    if raw is None:
        return {}, []
    if not isinstance(raw, Mapping):
        return {}, [f"{source}: prices must be a mapping of model → prices per million tokens"]
    out: dict[str, Price] = {}
    problems: list[str] = []
    for model, item in raw.items():
        if not isinstance(model, str) or not isinstance(item, Mapping):
            problems.append(f"{source}: prices {model!r} must be a mapping of {', '.join(PRICE_KEYS)}")
            continue
        values: dict[str, float] = {}
        bad = ""
        for key, value in item.items():
            if key not in PRICE_KEYS:
                bad = f"unknown key {key!r} (use {', '.join(PRICE_KEYS)})"
                break
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                bad = f"{key} must be a non-negative number"
                break
            values[str(key)] = float(value)
        if bad:
            problems.append(f"{source}: prices {model!r}: {bad}")
            continue
        out[model] = Price(**values)
    return out, problems


def price_for(prices: Mapping[str, Price], model: str) -> Price | None:
    """The price of a model: its own line, else the longest name it starts with, else `default`."""
    if model in prices:
        return prices[model]
    prefixes = [name for name in prices if name != "default" and model.startswith(name)]
    if prefixes:
        return prices[max(prefixes, key=len)]
    return prices.get("default")


# --------------------------------------------------------------------------- per day


@dataclass(frozen=True)
class Attributed:
    """One delivery and what the record says it cost (`turn` None: unknown, and `why`)."""

    entry: str
    ts: int
    turn: Turn | None
    why: str = ""


@dataclass
class DayUsage:
    """One entry's deliveries on one local day."""

    entry: str
    day: date
    deliveries: int = 0
    unknown: int = 0  #: deliveries whose usage the record does not show
    tokens: Tokens = field(default_factory=Tokens)  #: the known ones' sum
    cost: float | None = 0.0  #: None: no price table, or a model without a price
    why: str = ""
    odd: int = 0  #: token counts of its turns that were not whole numbers ≥ 0, counted as 0
    odd_example: str = ""  #: the first of them, `field=value`

    @property
    def known(self) -> bool:
        """Some of the day's usage is known (else every figure is `unknown`)."""
        return self.unknown < self.deliveries


def per_day(
    rows: Iterable[Attributed], zones: Mapping[str, tzinfo], prices: Mapping[str, Price] | None = None
) -> list[DayUsage]:
    """Deliveries → one line per entry and local day in the entry's zone, oldest
    day first; cost only with a price table."""
    days: dict[tuple[str, date], DayUsage] = {}
    for row in rows:
        zone = zones[row.entry]
        day = day_of(row.ts, zone)
        item = days.setdefault((row.entry, day), DayUsage(row.entry, day, cost=0.0 if prices else None))
        item.deliveries += 1
        if row.turn is None:
            item.unknown += 1
            item.why = item.why or row.why
            continue
        item.tokens = item.tokens + row.turn.tokens
        if row.turn.odd:
            item.odd, item.odd_example = item.odd + len(row.turn.odd), item.odd_example or row.turn.odd[0]
        if prices and item.cost is not None:
            money = row.turn.cost(prices)
            item.cost = None if money is None else item.cost + money
    return sorted(days.values(), key=lambda d: (d.day, d.entry))
