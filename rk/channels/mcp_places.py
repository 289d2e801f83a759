"""`rk mcp --places`: where this host's panes are, for another host's `rk mcp` to check its
grants against (`rk.channels.mcp_hosts.ask_places`). Kept apart from the server so the far
end imports neither the SDK nor pydantic to answer: each answer costs a process start there."""

from __future__ import annotations

import json
from collections.abc import Mapping

#: The fields `places` lists of each pane.
PLACE_FIELDS = ("pane_id", "session_name")


def places_document(environ: Mapping[str, str], server: str) -> str:
    """`rk mcp --places` (what a far end answers): this host's panes on `server` with their
    tmux session, window role and agent session, as one JSON document."""
    from rk.core.environ import ROLE_OPTION, SESSION_OPTION
    from rk.tmux.server import Server, TmuxError

    try:
        rows = Server(name=server, env=environ).listing("list-panes", (*PLACE_FIELDS, ROLE_OPTION, SESSION_OPTION))
    except TmuxError as exc:
        return json.dumps({"ok": False, "error": {"code": "tmux", "message": f"server {server}: {exc}"}})
    result = [
        {"pane": r["pane_id"], "session": r["session_name"], "role": r[ROLE_OPTION], "agent_session": r[SESSION_OPTION]}
        for r in rows
    ]
    return json.dumps({"ok": True, "result": result}, ensure_ascii=False)
