"""The wake cursor file `<slug>.cursor.yaml`: each wake entry's last observation.

`entries: {<id>: {fingerprint: "<fp>", observed_at: <unix>}}`, written
atomically every tick. We write it as JSON, which is valid YAML, so it reads
fast and stays compatible; a YAML-written cursor (from the Go tool) is read
too. It is a droppable cache: absent, unreadable or empty means a cold start
(no wake fires that tick, observations are stored).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from rk.core.schedule.wake import Observation
from rk.host.files import atomic_write


def parse_cursor(text: str) -> dict[str, Observation]:
    """Observations from the file text; {} for anything unreadable."""
    try:
        data = json.loads(text)
    except RecursionError:
        return {}
    except ValueError:
        from rk.host.yamlguard import safe_load

        try:
            data = safe_load(text)
        except Exception:
            return {}
    if not isinstance(data, dict) or not isinstance(data.get("entries"), dict):
        return {}
    out: dict[str, Observation] = {}
    for entry_id, obs in data["entries"].items():
        if not isinstance(obs, dict):
            continue
        fp = obs.get("fingerprint", "")
        at = obs.get("observed_at", 0)
        if isinstance(fp, str) and isinstance(at, int) and not isinstance(at, bool):
            out[str(entry_id)] = Observation(fingerprint=fp, observed_at=at)
    return out


def read_cursor(path: Path) -> dict[str, Observation]:
    try:
        return parse_cursor(Path(path).read_bytes().decode("utf-8", "replace"))
    except OSError:
        return {}


def render_cursor(cursor: Mapping[str, Observation]) -> str:
    body = {k: {"fingerprint": v.fingerprint, "observed_at": v.observed_at} for k, v in sorted(cursor.items())}
    return json.dumps({"entries": body}, indent=1, ensure_ascii=False) + "\n"


def write_cursor(path: Path, cursor: Mapping[str, Observation]) -> None:
    atomic_write(Path(path), render_cursor(cursor).encode("utf-8"))
