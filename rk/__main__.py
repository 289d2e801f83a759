"""The `rk` entry point.

`rk agent hook …` runs on every agent event, and `rk status --format tmux|json`
on every status-bar redraw, so both are dispatched here before anything heavy is
imported (typer, rich, ruamel take ~200 ms to import), and so is a bare
`rk --version`. The read-only views with plain arguments (`rk cron list`,
`rk status`, `rk agent list`…) run without typer (`rk.cli.fastpath`); every other
command goes to the CLI declared in `rk.cli` (which imports a command's module only
when it runs). Run as the process (the console
script), the hook and the status line also skip the interpreter's teardown: it
costs ~2 ms (freeing every module), a sixth of what the whole hook costs, and
they leave nothing to clean up.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--version"] and _version():
        return 0
    if args[:2] == ["agent", "hook"]:
        from rk.agent.hook import main as hook_main

        return _finish(hook_main(args[2:]), argv is None)
    if args[:1] == ["status"] and any(a.startswith("--format") for a in args):
        from rk.channels.statusline import format_of
        from rk.channels.statusline import main as statusline_main

        fmt = format_of(args)
        if fmt is not None:  # a status bar's every redraw: no typer
            return _finish(statusline_main(fmt), argv is None)
    from rk.cli.fastpath import run

    status = run(args)
    if status is not None:
        return status
    from rk.cli import main as cli_main

    return cli_main(args)


def _version() -> bool:
    """Print what the CLI's eager `--version` prints (`rk.cli.root._version`);
    False when stdout fails, for the CLI to report that as it reports any failure."""
    from rk import __version__

    try:
        sys.stdout.write(f"rk {__version__}\n")
        sys.stdout.flush()
    except (AttributeError, OSError):  # no stdout, a closed pipe
        return False
    return True


def _finish(code: int, process: bool) -> int:
    """`code`; when this is the process's own run (`argv` not passed), exit at once
    with it: the output flushed, no atexit handler registered, every child reaped
    and every file closed by then, so the teardown would only free memory."""
    if not process:
        return code
    import os  # loaded by the interpreter's start already

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass  # the hook exits 0 whatever happens; a bar shows what it got
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
