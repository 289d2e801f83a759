"""The `rk` entry point.

`rk agent hook …` runs on every agent event, and `rk status --format tmux|json`
on every status-bar redraw, so both are dispatched here before anything heavy is
imported (typer, rich, ruamel take ~200 ms to import); every other command goes
to the CLI declared in `rk.cli`.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:2] == ["agent", "hook"]:
        from rk.agent.hook import main as hook_main

        return hook_main(args[2:])
    if args[:1] == ["status"] and any(a.startswith("--format") for a in args):
        from rk.statusline import format_of
        from rk.statusline import main as statusline_main

        fmt = format_of(args)
        if fmt is not None:  # a status bar's every redraw: no typer
            return statusline_main(fmt)
    from rk.cli import main as cli_main

    return cli_main(args)


if __name__ == "__main__":
    sys.exit(main())
