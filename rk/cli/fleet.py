"""Asking other hosts: one rk command run on a host over ssh (`rk remote` there).

The command's words travel as JSON on stdin; the host's answer comes back as
JSON (`rk.cli.remote`). A host that is down, slow, or runs no or another rk is
said in the Reply's `problem`, never raised, so a view across hosts shows what
the others answered.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from rk.core.fleet.hosts import Host, remote_words

if TYPE_CHECKING:
    from rk.cli.environment import Environment
    from rk.cli.table import Captured

#: Hosts asked at once.
MAX_PARALLEL = 16
#: Seconds a host has to answer a view.
VIEW_TIMEOUT = 15.0


@dataclass(frozen=True)
class Reply:
    """One host's answer: the command's status and output, or why there is none."""

    host: str
    status: int
    stdout: str = ""
    stderr: str = ""
    version: str = ""
    problem: str = ""  #: "" when the host answered
    #: the view's tables, when asked for them (`rk.cli.table.captured_tables`): (columns, rows)
    tables: tuple[Captured, ...] = ()


def ask(
    environ: Mapping[str, str],
    state_dir: str,
    host: Host,
    argv: Sequence[str],
    timeout: float | None = VIEW_TIMEOUT,
    request_id: str = "",
    tables: bool = False,
) -> Reply:
    """Run `rk ARGV` on `host` and return its answer (`request_id`: see `rk.cli.remote`;
    `tables`: the view's tables as rows, not drawn)."""
    from rk.host import ssh

    asked: dict[str, object] = {"argv": list(argv)}
    if request_id:
        asked["id"] = request_id
    if tables:
        asked["tables"] = True
    request = json.dumps(asked).encode("utf-8")
    answer = ssh.run(
        host.destination, remote_words(host.rk, "remote"), environ, ssh.control_dir(state_dir), request, timeout
    )
    if answer.unreachable:
        return Reply(host.name, 1, problem=f"{host.name}: unreachable: {ssh.first_line(answer.stderr) or 'ssh failed'}")
    try:
        got = json.loads(answer.stdout.decode("utf-8"))
        if not isinstance(got, dict):
            raise ValueError
        status, out, err, version = got["status"], got["stdout"], got["stderr"], got.get("version", "")
        if not isinstance(status, int) or not isinstance(out, str) or not isinstance(err, str):
            raise ValueError
    except (UnicodeDecodeError, ValueError, KeyError):
        why = ssh.first_line(answer.stderr) or f"exit status {answer.status}"
        return Reply(host.name, 1, problem=f"{host.name}: no rk remote answered ({why}): rk host check {host.name}")
    return Reply(host.name, status, out, err, str(version), tables=_tables(got.get("tables")))


def _tables(raw: object) -> tuple[Captured, ...]:
    """The tables of an answer (none when it has none, or not in their shape)."""
    from rk.cli.table import Column

    out: list[Captured] = []
    for table in raw if isinstance(raw, list) else []:
        try:
            columns = [Column(str(h), int(p), None if s is None else int(s)) for h, p, s in table["columns"]]
            rows = [[str(cell) for cell in row] for row in table["rows"]]
        except (TypeError, ValueError, KeyError):
            return ()
        if any(len(row) != len(columns) for row in rows):
            return ()
        out.append((columns, rows))
    return tuple(out)


def ask_each(
    environ: Mapping[str, str],
    state_dir: str,
    hosts: Sequence[Host],
    argv: Sequence[str],
    timeout: float = VIEW_TIMEOUT,
    tables: bool = False,
) -> list[Reply]:
    """`ask` every host at once; the replies in the hosts' order."""
    if not hosts:
        return []
    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(hosts))) as pool:
        return list(pool.map(lambda h: ask(environ, state_dir, h, argv, timeout, tables=tables), hosts))


# -- `--host`: a command run on another host, or on all of them -----------------------------

#: The commands `--host` serves: views (any host, or all) and changes (one host at a time).
VIEWS = frozenset(
    {("status",), ("cron", "list"), ("agent", "list"), ("cron", "log"), ("events",), ("cron", "runs")}
    | {("cron", "show"), ("cron", "next"), ("agent", "read")}
)
#: Views of one entry or pane: its id is one host's, so never `--host all`.
ONE_HOST_VIEWS = frozenset({("cron", "show"), ("cron", "next"), ("agent", "read")})
CHANGES = frozenset(
    {("cron", verb) for verb in ("add", "edit", "mute", "pin", "rm", "pause", "resume", "wake")} | {("send",)}
)
WAITS = frozenset({("agent", "await")})
#: Root options that take a value (skipped to find the command's words).
_VALUED = frozenset({"-L", "--server"})
#: Tries of a change whose answer was lost (the same request id each time: applied once).
CHANGE_TRIES = 4
CHANGE_TIMEOUT = 30.0


@dataclass(frozen=True)
class HostFlag:
    """`--host NAME` taken out of a command line: the name and the words left."""

    name: str
    argv: tuple[str, ...]
    command: tuple[str, ...]


def take_host_flag(args: Sequence[str]) -> HostFlag | None:
    """The `--host` of a command line (before any `--`), or None when it has none."""
    end = args.index("--") if "--" in args else len(args)
    name, rest = None, list(args)
    for i, word in enumerate(args[:end]):
        if word == "--host" and i + 1 < end:
            name, rest = args[i + 1], [*args[:i], *args[i + 2 :]]
            break
        if word.startswith("--host="):
            name, rest = word.split("=", 1)[1], [*args[:i], *args[i + 1 :]]
            break
    if name is None:
        return None
    return HostFlag(name, tuple(rest), command_words(rest))


def command_words(args: Sequence[str]) -> tuple[str, ...]:
    """The command a command line names: `("cron", "list")`, `("status",)`."""
    words: list[str] = []
    skip = False
    for word in args:
        if skip:
            skip = False
            continue
        if word == "--":
            break
        if word in _VALUED:
            skip = True
            continue
        if word.startswith("-"):
            continue
        words.append(word)
        if words[0] not in ("cron", "agent") or len(words) == 2:
            break
    return tuple(words)


def change_once(
    environ: Mapping[str, str], state_dir: str, host: Host, argv: Sequence[str], pause: float = 0.5
) -> Reply:
    """A change on `host`, retried with the same request id while its answer is lost
    (a dropped connection, a host that stopped answering), so it is applied once."""
    import secrets
    import time

    rid = secrets.token_hex(16)
    reply = Reply(host.name, 1, problem=f"{host.name}: not asked")
    for attempt in range(CHANGE_TRIES):
        reply = ask(environ, state_dir, host, argv, CHANGE_TIMEOUT, rid)
        if not reply.problem:
            return reply
        if attempt + 1 < CHANGE_TRIES:
            time.sleep(pause * 2**attempt)
    return reply


#: `rk.cli.root.main`, handed in (this module is imported by it).
Main = Callable[[list[str], Mapping[str, str], TextIO, TextIO], int]


def dispatch(args: Sequence[str], environ: Mapping[str, str], stdout: TextIO, stderr: TextIO, main: Main) -> int | None:
    """Run a command line that names `--host`; None when it names none (the caller runs it here)."""
    flag = take_host_flag(args)
    if flag is None or flag.name == "local":
        return None if flag is None else main(list(flag.argv), environ, stdout, stderr)
    from rk.cli.environment import CliError, for_args

    env = for_args(list(flag.argv), environ, stdout, stderr)
    try:
        return _dispatch(flag, env, main)
    except CliError as exc:
        return env.fail(exc)


def _dispatch(flag: HostFlag, env: Environment, main: Main) -> int:
    from rk.cli.environment import CliError, ExitStatus, usage
    from rk.cli.events_hosts import follows
    from rk.cli.events_hosts import run as follow_events
    from rk.core.fleet.hosts import HostError, check_name
    from rk.store.hosts import load_hosts

    said = " ".join(flag.command) or "this command"
    if flag.command not in VIEWS | CHANGES | WAITS:
        raise usage(
            f"{said} does not take --host (it works with status, cron list|log|runs|show|next|add|edit|mute|"
            "pin|rm|pause|resume|wake, agent list|await|read, events, send)"
        )
    if flag.command == ("events",) and follows(flag.argv):
        return follow_events(env, flag.name, flag.argv)  # a stream, not one answer: rk.cli.events_hosts
    hosts, problems = load_hosts(env.environ)
    for problem in problems:
        env.notice(problem)
    if flag.name == "all":
        if flag.command not in VIEWS:
            raise usage(f"--host all is for views; {said} changes one host at a time: --host NAME")
        if flag.command in ONE_HOST_VIEWS:
            raise usage(f"--host all is for views of every host; {said} names one host's entry or pane: --host NAME")
        return show_all(flag, env, list(hosts.values()), main)
    try:
        check_name(flag.name)
    except HostError as exc:
        raise usage(str(exc)) from None
    if flag.name not in hosts:
        raise CliError(f"no host {flag.name!r}: rk host list shows the hosts", ExitStatus.OPERATIONAL)
    target, state = hosts[flag.name], str(env.state_dir())
    if flag.command in CHANGES:
        reply = change_once(env.environ, state, target, flag.argv)
    else:
        reply = ask(env.environ, state, target, flag.argv, None if flag.command in WAITS else VIEW_TIMEOUT)
    if reply.problem and flag.command in CHANGES:
        raise CliError(f"{reply.problem}; the change may have been made there: rk cron list --host {target.name}")
    if reply.problem:
        raise CliError(reply.problem, ExitStatus.OPERATIONAL)
    env.stdout.write(reply.stdout)
    env.stderr.write(reply.stderr)
    return reply.status


def run_here(argv: Sequence[str], environ: Mapping[str, str], main: Main, tables: bool = False) -> Reply:
    """`rk ARGV` on this host, in-process, as a Reply named `local` (`tables`: as `ask`)."""
    import contextlib
    import io

    from rk.cli.table import captured_tables

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        if tables:
            with captured_tables() as kept:
                status = main(list(argv), environ, out, err)
        else:
            kept, status = [], main(list(argv), environ, out, err)
    return Reply("local", status, out.getvalue(), err.getvalue(), tables=tuple(kept))


def show_all(flag: HostFlag, env: Environment, hosts: list[Host], main: Main) -> int:
    """A view on this host and every other one at once: JSON merged with a `host` field
    on each item; for people, each host's part under its name. Exit 1 when one failed."""
    from concurrent.futures import ThreadPoolExecutor

    state, tables = str(env.state_dir()), not env.json and flag.command in ONE_TABLE
    with ThreadPoolExecutor(max_workers=2) as pool:
        others = pool.submit(lambda: ask_each(env.environ, state, hosts, flag.argv, VIEW_TIMEOUT, tables))
        replies = [run_here(flag.argv, env.environ, main, tables), *others.result()]
    if env.json:
        env.out(json.dumps(merged(replies), ensure_ascii=False))
    elif not (tables and one_table(env, replies)):
        for reply in replies:
            env.out(f"== {reply.host}")
            text = reply.problem or (reply.stdout + reply.stderr).rstrip("\n")
            if text:
                env.out(text)
    return 0 if all(r.status == 0 and not r.problem for r in replies) else 1


#: The views that draw one table: across hosts, one table with a HOST column.
ONE_TABLE = frozenset({("cron", "list"), ("agent", "list"), ("cron", "log"), ("cron", "runs")})


def one_table(env: Environment, replies: Sequence[Reply]) -> bool:
    """Every host's rows in one table, HOST first, fitted to the terminal; then, per host,
    what else it said (a problem, a warning). False (nothing drawn) when the hosts'
    tables do not have the same columns (another rk version): each host's part then."""
    from rk.cli.table import Column, layout, terminal_width

    shapes = {len(r.tables[0][0]) for r in replies if len(r.tables) == 1}
    if len(shapes) != 1 or any(len(r.tables) > 1 for r in replies):
        return False
    columns = next(r.tables[0][0] for r in replies if r.tables)
    rows = [[r.host, *row] for r in replies if r.tables for row in r.tables[0][1]]
    if rows:
        for line in layout([Column("HOST"), *columns], rows, terminal_width(env.stdout, env.environ, False)):
            env.out(line)
    for reply in replies:
        said = reply.problem or (reply.stdout + reply.stderr).strip()
        for line in said.splitlines():
            env.out(line if reply.problem else f"{reply.host}: {line}")
    return True


def merged(replies: Sequence[Reply]) -> dict[str, object]:
    """The replies' JSON as one envelope: each result item (or each host's one result)
    with its `host`; each host's outcome under `hosts`."""
    items: list[object] = []
    outcomes = []
    for reply in replies:
        problem = reply.problem
        if not problem:
            try:
                items += _items(reply)
            except ValueError:
                problem = f"{reply.host}: {(reply.stderr or reply.stdout).strip()[:200] or 'no JSON answer'}"
        ok = not problem and reply.status == 0
        outcomes.append({"host": reply.host, "ok": ok, "status": reply.status, "problem": problem})
    return {"ok": all(o["ok"] for o in outcomes), "result": items, "hosts": outcomes}


def _items(reply: Reply) -> list[object]:
    """A host's JSON (an envelope, or one object a line) as items carrying the host."""
    text = reply.stdout.strip()
    if not text:
        raise ValueError
    try:
        docs = [json.loads(text)]
    except ValueError:
        docs = [json.loads(line) for line in text.splitlines() if line.strip()]  # one object a line
        return [{"host": reply.host, **d} if isinstance(d, dict) else d for d in docs]
    doc = docs[0]
    if isinstance(doc, dict) and "ok" in doc and ("result" in doc or "error" in doc):
        if not doc["ok"]:
            raise ValueError
        result = doc["result"]
        rows = result if isinstance(result, list) else [result]
        return [{"host": reply.host, **r} if isinstance(r, dict) else r for r in rows]
    return [{"host": reply.host, **doc} if isinstance(doc, dict) else doc]
