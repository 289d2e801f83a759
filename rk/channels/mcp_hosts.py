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
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar

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
        "cron_show",
        "cron_next",
        "cron_runs",
        "cron_wake",
        "pane_read",
        "events",
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
#: The host of the call under way ("" this one), set around each tool call, and what has been
#: asked of it in this call (where its panes are, its entries): one ssh round trip each,
#: however many checks read them, and the two asked at once where a tool needs both.
_HOST: contextvars.ContextVar[str] = contextvars.ContextVar("rk_mcp_host", default="")
_ASKED: contextvars.ContextVar[dict[str, Future[Any]] | None] = contextvars.ContextVar("rk_mcp_asked", default=None)
Places = tuple[dict[str, Spot], dict[str, str]]
T = TypeVar("T")
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
    token, asked = _HOST.set(name), _ASKED.set({})
    try:
        yield
    finally:
        _ASKED.reset(asked)
        _HOST.reset(token)


def once(key: str, fetch: Callable[[], T]) -> T:
    """`fetch()`, asked once in this tool call (again outside one)."""
    asked = _ASKED.get()
    if asked is None:
        return fetch()
    if key not in asked:
        asked[key] = _settled(fetch)
    result: T = asked[key].result()
    return result


def early(key: str, fetch: Callable[[], object]) -> None:
    """Start `fetch()` beside what the call does next; `once(key, …)` then waits for it."""
    asked = _ASKED.get()
    if asked is None or key in asked:
        return
    future: Future[Any] = Future()
    asked[key] = future
    context = contextvars.copy_context()  # the call's host, in the thread too
    threading.Thread(target=lambda: _settle(future, lambda: context.run(fetch)), daemon=True).start()


def _settled(fetch: Callable[[], object]) -> Future[Any]:
    future: Future[Any] = Future()
    _settle(future, fetch)
    return future


def _settle(future: Future[Any], fetch: Callable[[], object]) -> None:
    try:
        future.set_result(fetch())
    except BaseException as exc:  # raised again where the result is read
        future.set_exception(exc)


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


def ask_places(environ: Mapping[str, str], state_dir: str, name: str) -> Places:
    """Where host `name`'s panes are (`Spot`s carrying the host) and the agent session each
    carries, asked once per tool call; a refusal when the host cannot say (down, another rk,
    a malformed answer): what rk mcp cannot place, it does not act on."""
    return once("places", lambda: _ask_places(environ, state_dir, name))


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
