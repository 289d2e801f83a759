"""`rk mcp` on other hosts: the `host` input, where a remote pane is, and who made what there.

A tool that takes `host` runs its command line with `--host NAME` (`rk.cli.fleet`: ssh,
`rk remote` there, a request id for a change), so the far end runs it unscoped as the
ssh user: the grants checked here, before anything is sent, are the whole authority.
To check them, rk mcp asks the host where its panes are (`rk mcp --places` there, over
the same shared connection) and refuses what it cannot place. The far end records no
creator for an entry made this way, so the entries each caller made on each host are
kept here (`<state dir>/mcp-hosts.log`), for the pending cap and for cron_list.
"""

from __future__ import annotations

import contextvars
import inspect
import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from rk.core.channels.mcpguard import LOCAL, Refusal, Spot

#: The tools that take `host` (each has a path over `--host`; the others act here only).
HOSTED = frozenset(
    {
        "cron_add",
        "cron_edit",
        "cron_rm",
        "cron_mute",
        "cron_pin",
        "cron_list",
        "cron_log",
        "send",
        "agent_list",
        "agent_await",
    }
)
HostInput = Annotated[
    str | None,
    Field(
        description="Another machine, by its name in rk's hosts (rk host list); absent or 'local': this one. "
        "Only a grant naming the host allows it.",
        max_length=64,
    ),
]
#: The host of the call under way ("" this one), set around each tool call, and where its
#: panes are once asked (one ssh round trip per call, however many checks read it).
_HOST: contextvars.ContextVar[str] = contextvars.ContextVar("rk_mcp_host", default="")
Places = tuple[dict[str, Spot], dict[str, str]]
_PLACES: contextvars.ContextVar[list[Places] | None] = contextvars.ContextVar("rk_mcp_places", default=None)
#: The ledger of entries made on other hosts, under the state dir; bytes read of it at most.
LEDGER = "mcp-hosts.log"
MAX_LEDGER = 8 << 20
#: Seconds a host has to say where its panes are.
PLACES_TIMEOUT = 15.0


def current() -> str:
    """The host of the call under way: "" for this one."""
    return _HOST.get()


@contextmanager
def on_host(name: str) -> Iterator[None]:
    token, asked = _HOST.set(name), _PLACES.set([])
    try:
        yield
    finally:
        _PLACES.reset(asked)
        _HOST.reset(token)


def resolve(name: str | None, environ: Mapping[str, str]) -> str:
    """The host a `host` input names ("" for this one): a known name of config.yaml's
    `hosts:`, else a refusal (a name that could be an ssh option never gets that far)."""
    if name is None or name in ("", LOCAL):
        return ""
    from rk.core.fleet.hosts import HostError, check_name
    from rk.store.hosts import load_hosts

    try:
        check_name(name)
    except HostError as exc:
        raise Refusal(f"refused: {exc}") from None
    if name not in load_hosts(environ)[0]:
        raise Refusal(f"refused: no host {name!r} in rk's config (rk host list shows the hosts)")
    return name


def with_host(fn: Callable[..., Any]) -> inspect.Signature:
    """`fn`'s signature with the `host` input last: one declaration for every hosted tool."""
    sig = getattr(fn, "__signature__", None) or inspect.signature(fn, eval_str=True)
    host = inspect.Parameter("host", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=HostInput, default=None)
    return sig.replace(parameters=[*sig.parameters.values(), host])


# -- where a host's panes are --------------------------------------------------------------

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


def ask_places(environ: Mapping[str, str], state_dir: str, name: str) -> Places:
    """Where host `name`'s panes are (`Spot`s carrying the host) and the agent session each
    carries, asked once per tool call; a refusal when the host cannot say (down, another rk,
    a malformed answer): what rk mcp cannot place, it does not act on."""
    kept = _PLACES.get()
    if kept:
        return kept[0]
    places = _ask_places(environ, state_dir, name)
    if kept is not None:
        kept.append(places)
    return places


def _ask_places(environ: Mapping[str, str], state_dir: str, name: str) -> Places:
    from rk.core.fleet.hosts import HostError, remote_words
    from rk.host import ssh
    from rk.store.hosts import load_hosts

    host = load_hosts(environ)[0].get(name)
    if host is None:
        raise Refusal(f"refused: no host {name!r} in rk's config (rk host list shows the hosts)")
    request = json.dumps({"argv": ["mcp", "--places"]}).encode()
    try:
        words = remote_words(host.rk, "remote")
    except HostError as exc:
        raise Refusal(f"refused: host {name!r}: {exc}") from None
    answer = ssh.run(host.destination, words, environ, ssh.control_dir(state_dir), request, PLACES_TIMEOUT)
    why = f"unreachable: {ssh.first_line(answer.stderr) or 'ssh failed'}" if answer.unreachable else ""
    rows: object = None
    if not why:
        try:
            doc = json.loads(json.loads(answer.stdout.decode("utf-8"))["stdout"])
            rows = doc["result"] if doc.get("ok") else None
            why = "" if isinstance(rows, list) else str(doc.get("error", {}).get("message", "no panes"))[:200]
        except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError):
            why = f"no rk there answered where its panes are ({ssh.first_line(answer.stderr) or 'not rk mcp --places'})"
    if why or not isinstance(rows, list):
        raise Refusal(
            f"refused: host {name!r} cannot say where its panes are ({why}); rk mcp acts only on panes it can place"
        )
    spots: dict[str, Spot] = {}
    agents: dict[str, str] = {}
    for row in rows:
        if isinstance(row, dict) and all(isinstance(row.get(k), str) for k in ("pane", "session", "role")):
            spots[row["pane"]] = Spot(row["pane"], row["session"], row["role"], host=name)
            agents[row["pane"]] = str(row.get("agent_session") or "")
    return spots, agents


# -- the entries each caller made on other hosts ---------------------------------------------


def remember(state_dir: str, server: str, pane: str, host: str, entry_id: str, now: int) -> None:
    """Note that `pane` (of the tmux server at `server`) made entry `entry_id` on `host`
    (best effort, as mcp.log: a full disk must not turn a change that happened into an error)."""
    from rk.host.private import append_line

    record = {"ts": now, "server": server, "pane": pane, "host": host, "id": entry_id}
    try:
        append_line(state_dir, LEDGER, json.dumps(record, ensure_ascii=False))
    except (OSError, ValueError):
        pass


def remembered(state_dir: str, server: str, pane: str, host: str) -> set[str]:
    """The ids of the entries `pane` made on `host` through rk mcp (some may be gone since)."""
    from rk.host.files import TooLarge, read_nofollow

    try:
        data = read_nofollow(Path(state_dir) / LEDGER, MAX_LEDGER)
    except FileNotFoundError:
        return set()
    except (OSError, TooLarge) as exc:
        raise Refusal(
            f"refused: cannot read {LEDGER} ({exc}), which counts this pane's entries on other hosts"
        ) from None
    ids: set[str] = set()
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and (rec.get("server"), rec.get("pane"), rec.get("host")) == (server, pane, host):
            ids.add(str(rec.get("id", "")))
    return ids
