"""The rk command line.

Exit codes: 0 ok, 1 operational (unknown id, lock contention, a corrupt file,
tmux trouble), 2 usage (bad or missing flags; the state directory is left
untouched), 3 `cron ticker status` with no ticker running. Errors are one line
on stderr. With `--json`, exactly one JSON document goes to stdout:
`{"ok": true, "result": …}` or
`{"ok": false, "error": {"code": "usage"|"not-found"|"operational", "message": …}}`.

`-L/--server NAME` is accepted anywhere (`rk -L work cron list` or
`rk cron list -L work`); without it, the server of `$TMUX`, else `default`.

Layout: `root` (the typer tree, `main`), `environment` (the outside world and
the failures, carried to every command on the click context), `options` and
`flags` (declaring and parsing the shared flags), `store` (the files, with CLI
errors), and one module per verb group: `entries`, `views`, `running`,
`simulate` (+ `timeline`, its drawing), `windows`, `agent`. Rules that decide
what an entry does live in `rk.core`, not here.

`fastpath` runs the read-only views (`cron list`, `status`, `agent list`…)
without typer when their arguments are plain; anything else goes to `root`. So
this package imports `root` (typer) only when `app` or `main` is asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rk.cli.root import app, main

__all__ = ["app", "main"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from rk.cli import root

        return getattr(root, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
