"""`rk host add | list | rm | check`: the machines rk reaches over the user's own ssh."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Annotated

from rk.cli.environment import CliError, Environment, ExitStatus, environment
from rk.cli.fleet import MAX_PARALLEL
from rk.core.fleet.hosts import DEFAULT_RK, Host, HostError, host, parse_version, remote_words, version_problem
from rk.store.config import ConfigError

if TYPE_CHECKING:
    import typer

    from rk.cli.options import FullOpt, JsonOpt

#: Seconds `rk host check` waits for one host.
CHECK_TIMEOUT = 15.0


def _hosts(env: Environment) -> dict[str, Host]:
    from rk.store.hosts import load_hosts

    hosts, problems = load_hosts(env.environ)
    for problem in problems:
        env.notice(problem)
    return hosts


def cmd_host_add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="A short name for the host: buildbox, gpu1.")],
    destination: Annotated[
        str, typer.Argument(help="What ssh connects to: [user@]host, an alias of ~/.ssh/config, ssh://host:port.")
    ],
    rk: Annotated[
        str, typer.Option("--rk", help="The rk program there (default: rk on the remote PATH).")
    ] = DEFAULT_RK,
    replace: Annotated[bool, typer.Option("--replace", help="Replace a host of that name.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Record a host rk reaches with your own ssh (keys, agent, ~/.ssh/config); nothing
    is installed or opened there. `rk host check NAME` then tries it.

    Example: rk host add buildbox me@build.example
    """
    env = environment(ctx, None, as_json)
    from rk.store.hosts import add_host

    try:
        new = host(name, destination, rk)
        add_host(env.environ, new, replace)
    except (HostError, ConfigError) as exc:
        raise CliError(str(exc), exc.status) from None
    env.result({"host": new.name, **new.as_config()}, f"added host {new.name} ({new.destination})")


def cmd_host_rm(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(metavar="NAME", help="The host to forget.")],
    as_json: JsonOpt = False,
) -> None:
    """Forget a host (its own entries and ticker go on there, untouched).

    Example: rk host rm buildbox
    """
    env = environment(ctx, None, as_json)
    from rk.store.hosts import remove_host

    try:
        found = remove_host(env.environ, name)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    if not found:
        raise CliError(f"no host {name!r}: rk host list shows the hosts", ExitStatus.OPERATIONAL)
    env.result({"host": name, "removed": True}, f"removed host {name}")


def cmd_host_list(ctx: typer.Context, as_json: JsonOpt = False, full: FullOpt = False) -> None:
    """The hosts rk knows, as the config file records them.

    Example: rk host list
    """
    env = environment(ctx, None, as_json)
    hosts = _hosts(env)
    if env.json:
        env.result([{"host": h.name, "destination": h.destination, "rk": h.rk} for h in hosts.values()])
        return
    if not hosts:
        env.out("no hosts: rk host add NAME DESTINATION")
        return
    from rk.cli.table import Column, layout, terminal_width

    columns = [Column("HOST"), Column("DESTINATION", shrink_to=12), Column("RK", priority=1)]
    rows = [[h.name, h.destination, h.rk] for h in hosts.values()]
    for line in layout(columns, rows, terminal_width(env.stdout, env.environ, full)):
        env.out(line)


def check_one(env: Environment, target: Host, local: str) -> dict[str, object]:
    """One host's answer to `rk --version`, and what is wrong with it ("" when nothing)."""
    from rk.host import ssh

    answer = ssh.run(
        target.destination,
        remote_words(target.rk, "--version"),
        env.environ,
        ssh.control_dir(str(env.state_dir())),
        timeout=CHECK_TIMEOUT,
    )
    version = parse_version(answer.stdout.decode("utf-8", "replace")) if answer.status == 0 else ""
    if answer.unreachable:
        problem = f"{target.name}: unreachable: {ssh.first_line(answer.stderr) or 'ssh failed'}"
    else:
        problem = version_problem(target.name, local, version, target.rk)
    reachable = not answer.unreachable
    return {
        "host": target.name,
        "destination": target.destination,
        "reachable": reachable,
        "version": version,
        "problem": problem,
    }


def cmd_host_check(
    ctx: typer.Context,
    names: Annotated[list[str] | None, typer.Argument(metavar="[NAME]...", help="Hosts to try (default: all).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Connect to each host (in parallel, never prompting) and compare its rk with this one.
    Exit 1 when one is unreachable or runs another version; the line says the fix.

    Example: rk host check buildbox
    """
    env = environment(ctx, None, as_json)
    from rk import __version__

    hosts = _hosts(env)
    unknown = [n for n in names or [] if n not in hosts]
    if unknown:
        raise CliError(f"no host {unknown[0]!r}: rk host list shows the hosts", ExitStatus.OPERATIONAL)
    chosen = [hosts[n] for n in names] if names else list(hosts.values())
    if not chosen:
        raise CliError("no hosts: rk host add NAME DESTINATION", ExitStatus.OPERATIONAL)
    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(chosen))) as pool:
        results = list(pool.map(lambda h: check_one(env, h, __version__), chosen))
    env.result(
        results,
        [str(r["problem"]) or f"{r['host']}: ok, rk {r['version']}" for r in results],
    )
    if any(r["problem"] for r in results):
        import typer

        raise typer.Exit(ExitStatus.OPERATIONAL)
