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
they leave nothing to clean up. The views keep the teardown (a view that is a pane's
only process and exits at once can lose the tail of what it wrote to tmux), but run
without the cyclic garbage collector (`_short_lived`): a view's objects are freed at
exit, and its imports alone set the collector off some sixty times (~2.4 % of the
instructions of `rk cron list`).
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if argv is None:
        _short_lived()
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
        return _flushed(status) if argv is None else status
    import gc

    gc.enable()  # a command may run for hours (the ticker, the MCP server)
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


def _short_lived() -> None:
    """The process's run starts without the cyclic garbage collector; whatever may run
    long turns it back on (the CLI's commands here, a view that follows or watches in
    `rk.cli.fastpath`)."""
    import gc

    gc.disable()


def _flushed(code: int) -> int:
    """A view's `code` once its output is flushed; a reader that went away (`rk cron
    list | head -1`) makes it 1, quietly, as click does on the typer path (stdout then
    goes to /dev/null, so the interpreter's own flush at exit finds nothing to report)."""
    import os  # loaded by the interpreter's start already

    try:
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return code or 1
    return code


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
