"""The installed `rk` script, as hooks, plugins and MCP entries call it: an
absolute path (hook PATH is unreliable) to a script that runs this package (never
another tool named rk), with nothing a hook command cannot carry."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping

from rk.agent.setup.plan import SetupError

FORBIDDEN_PATH_CHARS = "'\"$`\\"


def _is_rk_script(path: str) -> bool:
    """A console script that runs this package (pip/pipx wrappers import rk.__main__)."""
    try:
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            return False
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return b"rk.__main__" in head or b"rk.cli" in head


def check_rk_path(path: str) -> str:
    """`path`, when a hook command can carry it (absolute, printable, no quote, `$` or backslash)."""
    if not os.path.isabs(path):
        raise SetupError(f"rk path {path!r} is not absolute")
    bad = sorted({c for c in path if c in FORBIDDEN_PATH_CHARS or not c.isprintable()})
    if bad:
        raise SetupError(
            f"rk path {path!r} contains {' '.join(repr(c) for c in bad)}, "
            "which a hook command cannot carry; install rk under a plainer path"
        )
    return path


def find_rk(argv0: str | None = None, executable: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """The absolute path of the installed `rk` console script, as hooks should call it.

    Tried in order: `argv0` (when rk was started through the script; the path
    as invoked, so a stable symlink such as ~/.local/bin/rk is kept), the `rk`
    beside the running interpreter (the venv that has this rk), then `rk` on
    PATH. Each candidate must be a script that runs this package, so another
    tool named rk (e.g. the Go run-kit) is never picked by accident."""
    env = os.environ if env is None else env
    argv0 = sys.argv[0] if argv0 is None else argv0
    executable = sys.executable if executable is None else executable
    candidates: list[str] = []
    if argv0 and os.path.basename(argv0) == "rk":
        candidates.append(os.path.abspath(argv0))
    if executable:
        candidates.append(os.path.join(os.path.dirname(os.path.abspath(executable)), "rk"))
    on_path = shutil.which("rk", path=env.get("PATH"))
    if on_path:
        candidates.append(os.path.abspath(on_path))
    for candidate in candidates:
        if _is_rk_script(candidate):
            return check_rk_path(candidate)
    raise SetupError(
        "cannot find the installed `rk` script (looked beside the Python interpreter and on PATH); "
        "install rk with pip or pipx first"
    )
