"""Asking other hosts: one rk command run on a host over ssh (`rk remote` there).

The command's words travel as JSON on stdin; the host's answer comes back as
JSON (`rk.cli.remote`). A host that is down, slow, or runs no or another rk is
said in the Reply's `problem`, never raised, so a view across hosts shows what
the others answered.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from rk.core.fleet.hosts import Host, remote_words

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


def ask(
    environ: Mapping[str, str], state_dir: str, host: Host, argv: Sequence[str], timeout: float = VIEW_TIMEOUT
) -> Reply:
    """Run `rk ARGV` on `host` and return its answer."""
    from rk.host import ssh

    request = json.dumps({"argv": list(argv)}).encode("utf-8")
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
    return Reply(host.name, status, out, err, str(version))


def ask_each(
    environ: Mapping[str, str],
    state_dir: str,
    hosts: Sequence[Host],
    argv: Sequence[str],
    timeout: float = VIEW_TIMEOUT,
) -> list[Reply]:
    """`ask` every host at once; the replies in the hosts' order."""
    if not hosts:
        return []
    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(hosts))) as pool:
        return list(pool.map(lambda h: ask(environ, state_dir, h, argv, timeout), hosts))
