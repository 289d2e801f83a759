"""`rk notify test`: one test message through each `notify:` channel (or --url), and what happened."""

from __future__ import annotations

from typing import Annotated

import typer

from rk.cli.environment import ExitStatus, environment, usage
from rk.cli.options import JsonOpt


def cmd_notify_test(
    ctx: typer.Context,
    url: Annotated[
        str | None, typer.Option("--url", help="Send to this Apprise URL instead of the configured channels.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Send one test message through each channel of config.yaml's notify: list and say what happened.

    Each send waits at most the channel's timeout (default 10 s). Exit 1 when any failed
    or no channel is configured; a channel config.yaml cannot use is listed with why.

    Example: rk notify test --url 'ntfy://ntfy.sh/my-rk-alerts'
    """
    from rk.channels.notify import apprise_send
    from rk.core.channels.notice import Channel, parse_channels, trial_message
    from rk.store.config import load_channels

    env = environment(ctx, None, as_json)
    if url is not None:
        channels, problems = parse_channels([{"url": url, "name": "url"}], "--url")
        if problems:
            raise usage(problems[0].removeprefix("--url: notify item 1: ").removesuffix("; that channel is off"))
    else:
        channels, problems = load_channels(env.environ)
    results = [{"channel": None, "url_scheme": None, "sent": False, "why": p} for p in problems]
    lines = [f"unusable: {p}" for p in problems]
    chosen: list[Channel] = channels
    for channel in chosen:
        why = apprise_send(channel, *trial_message(channel))
        results.append(
            {"channel": channel.name, "url_scheme": channel.url.partition("://")[0], "sent": not why, "why": why}
        )
        lines.append(f"{channel.label}: " + ("sent" if not why else f"FAILED: {why}"))
    if not chosen and not problems:
        lines.append("no notify: channels in config.yaml (see README, Notifications); try --url")
    env.result(results, lines)
    if not chosen or any(not r["sent"] for r in results):
        raise typer.Exit(ExitStatus.ERROR)
