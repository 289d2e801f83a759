"""Tokens per fire with and without `--fresh`, on a real agent CLI against the mock API
(`usage: "measured"`: each request costs its own size, the prefix it shares with the
previous request read from the cache), as the agent's own transcripts record them and
rk reads them (`rk.store.transcripts`). Importable without pytest: the real-agent test
(tests/agents/test_real_fresh.py) and `bench/fresh.py` both run it."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from rk.core.cost.usage import Spend
from rk.store.transcripts import Transcripts

#: What each fire types: a heartbeat.
PAYLOAD = "status? Reply in one line."


@dataclass(frozen=True)
class Figures:
    """Input plus cache-read tokens of each fire's request, oldest first."""

    per_fire: tuple[int, ...]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.per_fire)

    @property
    def last(self) -> int:
        return self.per_fire[-1]

    def line(self, label: str) -> str:
        return (
            f"{label}: {len(self.per_fire)} fires, input+cache-read per fire mean {self.mean:,.0f}, last {self.last:,}"
        )


def claude_spends(home: Path) -> list[Spend]:
    """Every main request's usage in the Claude Code transcripts under `home`, oldest first."""
    reader = Transcripts()
    found: list[Spend] = []
    for path in sorted((home / ".claude" / "projects").rglob("*.jsonl")):
        records, _ = reader.records("claude", str(path))
        found += [r for r in records or [] if isinstance(r, Spend)]
    return sorted(found, key=lambda r: r.ts)


def fires(rig, fresh: str, count: int, turn_timeout: float = 60.0, reply: str = "") -> Figures:
    """`count` fires of one `--every 1m` entry (with `--fresh fresh`, or none when ""), each
    ticked a minute after the last, each turn waited out; the tokens of each. `reply`: what
    the model answers each time (the mock's one line when "")."""
    rig.run.mock.set_mode("ok", usage="measured", **({"text": reply} if reply else {}))
    # dormancy off: the ticks run a minute a fire ahead of the wall clock the agent's hooks
    # stamp its answers with, so each answer would read as older than the prompt it answers
    flags = ["--every", "1m", "--dormant-after", "off", *(["--fresh", fresh] if fresh else [])]
    entry = rig.add(PAYLOAD, *flags)
    start = int(time.time())
    for i in range(count):
        before = time.time()
        outcome = rig.tick(now=start + 61 * i).get(entry, "")
        assert outcome.startswith("delivered"), (i, outcome)
        rig.run.wait_hook("Stop", since=before, timeout=turn_timeout)
    deadline = time.monotonic() + turn_timeout  # the transcript's last line may follow the Stop hook
    while len(spends := claude_spends(rig.run.home)) < count and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(spends) >= count, spends
    return Figures(tuple(s.tokens.input + s.tokens.cache_read for s in spends[-count:]))
