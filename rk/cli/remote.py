"""`rk remote`: the far end of a command another host's rk runs here over ssh.

The ssh command line carries only `rk remote`; the request comes on stdin as
one JSON object, `{"argv": [...]}`, so no value a user or agent chose ever
meets a shell. The request runs as this CLI in-process (`rk.cli.root.main`), as
if typed here, and the answer goes back as one JSON object:
`{"status": int, "stdout": str, "stderr": str, "version": str}`.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from typing import TYPE_CHECKING

from rk.cli.environment import CliError, environment, usage

if TYPE_CHECKING:
    import typer

#: Bytes of a request read at most.
MAX_REQUEST = 1 << 20
#: Words of a request's argv, and characters of each.
MAX_WORDS = 256
MAX_WORD_CHARS = 16_384


def read_request(data: bytes) -> list[str]:
    """The argv of a request (a usage error naming what is wrong)."""
    if len(data) > MAX_REQUEST:
        raise usage(f"rk remote: a request of {len(data):,} bytes; at most {MAX_REQUEST:,}")
    try:
        request = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise usage("rk remote: the request is not one JSON object") from None
    argv = request.get("argv") if isinstance(request, dict) else None
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise usage('rk remote: the request needs "argv", a list of strings')
    if len(argv) > MAX_WORDS or any(len(a) > MAX_WORD_CHARS for a in argv):
        raise usage(f"rk remote: at most {MAX_WORDS} words of {MAX_WORD_CHARS:,} characters")
    if argv[:1] == ["remote"]:
        raise usage("rk remote: a request cannot be another rk remote")
    return argv


def cmd_remote(ctx: typer.Context) -> None:
    """Run one rk command sent by another host's rk over ssh (a JSON request on stdin,
    a JSON answer on stdout). Not for people: `--host` uses it.
    """
    env = environment(ctx)
    from rk import __version__
    from rk.cli.root import main

    try:
        argv = read_request(sys.stdin.buffer.read(MAX_REQUEST + 1))
    except CliError as exc:
        answer = {"status": int(exc.status), "stdout": "", "stderr": f"rk: {exc}\n", "version": __version__}
    else:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):  # typer's own echoes too
            status = main(argv, environ=os.environ, stdout=out, stderr=err)
        answer = {"status": status, "stdout": out.getvalue(), "stderr": err.getvalue(), "version": __version__}
    env.stdout.write(json.dumps(answer, ensure_ascii=False) + "\n")  # rk remote itself succeeded
