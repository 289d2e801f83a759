"""The `rk cron` command line as a contract (DECISIONS §1, §2, §4; reference §4).

Every verb is run for real: as a subprocess (`python -m rk …`) or, for the big
usage-error matrix, in-process through `rk.cli.main` (same code path, no
interpreter start-up). Each test gets its own state dir, HOME, config dir and
tmux socket dir; no test sees `$TMUX` unless it sets it.

Sections:
 1. usage errors: exit 2, one `rk: ` line (or one JSON error), state untouched
 2. operational errors: not-found, corrupt files, the entry cap, bad cron
 3. JSON envelopes and human lines of every verb
 4. list/show/log never run tmux
 5. -L anywhere; $TMUX default; tick sweeps all servers or one
 6. RK_NOW
 7. round-trip editing, `rescheduled` lines, edit lock
 8. the default target inside tmux
 9. private files
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest
from cli_helpers import (
    T0,
    Result,
    json_error,
    json_ok,
    log_line,
    make_env,
    mode,
    one_line_error,
    run_in,
    run_sub,
    snapshot,
    write_private,
)
from ruamel.yaml import YAML

#: The shell (the CLI, files, processes, tmux): `make test`, not `make test-fast`.
pytestmark = pytest.mark.shell

# --------------------------------------------------------------------------- shared fixtures

POPULATED_YAML = textwrap.dedent("""\
    # written by hand: the usage matrix must leave every byte of this alone
    entries:
      - id: e001
        name: every-role
        schedule: {kind: every, interval: 5m}
        target: {kind: role, role: op}
        payload: ping
        created_by: {at: 1800000000}
      - id: e002
        name: backoff-pane
        schedule: {kind: backoff, min: 1m, max: 30m}
        target: {kind: pane, pane: "%5"}
        payload: pong
        deliver: when-idle
        created_by: {at: 1800000000}
    """)

POPULATED_LOG = (
    log_line(T0 + 300, "e001", "%1")
    + "\n"
    + log_line(T0 + 400, "e002", "%5", "schedule", "skipped-busy: active")
    + "\n"
)


def populate(state: Path, slug: str = "default") -> None:
    write_private(state / f"{slug}.yaml", POPULATED_YAML)
    write_private(state / f"{slug}.log", POPULATED_LOG)


def load_yaml(path: Path):
    return YAML(typ="safe").load(Path(path).read_text())


def entry_raw(state: Path, entry_id: str, slug: str = "default") -> dict:
    doc = load_yaml(state / f"{slug}.yaml")
    (raw,) = [e for e in doc["entries"] if e.get("id") == entry_id]
    return raw


def state_of(env) -> Path:
    return Path(env["RK_STATE_DIR"])


def add_json(env, *args, run=run_in) -> dict:
    """`rk cron add … --json` that must succeed; returns the receipt."""
    return json_ok(run(["cron", "add", *args, "--json"], env))


# --------------------------------------------------------------------------- 1. usage errors


@dataclass(frozen=True)
class U:
    """One usage error: argv, a fragment the message must carry (or None),
    extra environment, and whether it only makes sense with stored entries."""

    name: str
    args: tuple
    expect: str | None = None
    env: tuple = ()
    needs_entry: bool = False


ADD = ("cron", "add", "hi")
ROLE = ("--role", "op")
EV = ("--every", "5m")
ONE_SCHEDULE = (
    "exactly one schedule flag is required: --every, --idle-every, --backoff, --cron, --at or --in (or --wake-on alone)"
)
MINMAX = "--min/--max only apply with --backoff"
RESPAWN_ONLY = "--respawn only applies with --if-absent respawn"
NOTHING = (
    "nothing to edit — pass a schedule flag, --prompt, --deliver, --name, --if-absent, --respawn, --wake-on, "
    "--active-hours, --only-if-changed, --max-per-day, --max-total, --turn-timeout/--on-timeout, "
    "--budget, --retry/--retry-after, --fresh, --dormant-after, or --any-program/--agents-only"
)
SLUG = "invalid server slug"

USAGE_CASES = [
    # ---- add: schedule flags (reference §4.1)
    U("add-no-schedule-flag", (*ADD, *ROLE), ONE_SCHEDULE),
    U("add-every-and-cron", (*ADD, *EV, "--cron", "0 9 * * *", *ROLE), "--every and --cron cannot go together"),
    U("add-backoff-and-idle-every", (*ADD, "--backoff", "--idle-every", "3m", *ROLE), "--idle-every and --backoff"),
    U("add-every-and-idle-every", (*ADD, *EV, "--idle-every", "3m", *ROLE), "--every and --idle-every cannot go"),
    U("add-cron-and-backoff", (*ADD, "--cron", "0 9 * * *", "--backoff", *ROLE), "--backoff and --cron cannot go"),
    U("add-min-with-every", (*ADD, *EV, "--min", "1m", *ROLE), MINMAX),
    U("add-max-with-every", (*ADD, *EV, "--max", "1h", *ROLE), MINMAX),
    U("add-min-with-idle-every", (*ADD, "--idle-every", "3m", "--min", "1m", *ROLE), MINMAX),
    U("add-max-with-idle-every", (*ADD, "--idle-every", "3m", "--max", "9m", *ROLE), MINMAX),
    U("add-min-alone", (*ADD, "--min", "1m", *ROLE)),
    U("add-catch-up-without-cron", (*ADD, *EV, "--catch-up", "once", *ROLE), "--catch-up"),
    U("add-catch-up-alone", (*ADD, "--catch-up", "once", *ROLE)),
    U("add-catch-up-twice", (*ADD, "--cron", "0 9 * * *", "--catch-up", "twice", *ROLE), "--catch-up"),
    U("add-catch-up-empty", (*ADD, "--cron", "0 9 * * *", "--catch-up", "", *ROLE), "--catch-up"),
    U("add-cron-4-fields", (*ADD, "--cron", "0 9 * *", *ROLE), "5 fields"),
    U("add-cron-6-fields", (*ADD, "--cron", "0 0 9 * * *", *ROLE), "5 fields"),
    U("add-cron-empty", (*ADD, "--cron", "", *ROLE)),
    U("add-cron-blank", (*ADD, "--cron", "   ", *ROLE)),
    U("add-cron-descriptor", (*ADD, "--cron", "@daily", *ROLE), "5 fields"),
    U("add-tz-without-cron", (*ADD, *EV, "--tz", "UTC", *ROLE), "--tz"),
    U("add-tz-alone", (*ADD, "--tz", "UTC", *ROLE)),
    U("add-unknown-tz", (*ADD, "--cron", "0 9 * * *", "--tz", "Mars/Olympus_Mons", *ROLE), "Mars/Olympus_Mons"),
    # ---- add: durations
    U("add-every-0s", (*ADD, "--every", "0s", *ROLE), "--every"),
    U("add-every-0", (*ADD, "--every", "0", *ROLE), "--every"),
    U("add-every-negative", (*ADD, "--every", "-5m", *ROLE), "--every"),
    U("add-every-garbage", (*ADD, "--every", "soon", *ROLE), "--every"),
    U("add-every-no-unit", (*ADD, "--every", "5", *ROLE), "--every"),
    U("add-every-subsecond", (*ADD, "--every", "1500ms", *ROLE), "--every"),
    U("add-every-empty", (*ADD, "--every", "", *ROLE)),
    U("add-idle-every-0s", (*ADD, "--idle-every", "0s", *ROLE), "--idle-every"),
    U("add-idle-every-negative", (*ADD, "--idle-every", "-3m", *ROLE), "--idle-every"),
    U("add-backoff-min-0s", (*ADD, "--backoff", "--min", "0s", *ROLE), "--min"),
    U("add-backoff-min-garbage", (*ADD, "--backoff", "--min", "a-while", *ROLE), "--min"),
    U("add-backoff-max-negative", (*ADD, "--backoff", "--max", "-1h", *ROLE), "--max"),
    U("add-backoff-max-below-min", (*ADD, "--backoff", "--min", "10m", "--max", "5m", *ROLE), "--max"),
    U(
        "add-wake-debounce-negative",
        (*ADD, *EV, *ROLE, "--wake-on", "agent-state-change", "--wake-debounce", "-1s"),
        "--wake-debounce",
    ),
    U(
        "add-wake-debounce-garbage",
        (*ADD, *EV, *ROLE, "--wake-on", "agent-state-change", "--wake-debounce", "later"),
        "--wake-debounce",
    ),
    # ---- add: deliver / if_absent / respawn
    U("add-bad-deliver", (*ADD, *EV, *ROLE, "--deliver", "eventually"), "--deliver"),
    U("add-deliver-empty", (*ADD, *EV, *ROLE, "--deliver", ""), "--deliver"),
    U("add-bad-if-absent", (*ADD, *EV, *ROLE, "--if-absent", "explode"), "--if-absent"),
    U("add-respawn-without-if-absent", (*ADD, *EV, *ROLE, "--respawn", "rk"), RESPAWN_ONLY),
    U(
        "add-respawn-with-if-absent-notify",
        (*ADD, *EV, *ROLE, "--if-absent", "notify", "--respawn", "rk"),
        RESPAWN_ONLY,
    ),
    U(
        "add-respawn-with-if-absent-skip",
        (*ADD, *EV, "--session", "s1", "--if-absent", "skip", "--respawn", "rk"),
        RESPAWN_ONLY,
    ),
    U("add-if-absent-respawn-role-no-argv", (*ADD, *EV, *ROLE, "--if-absent", "respawn"), "respawn"),
    U("add-if-absent-respawn-pane-no-argv", (*ADD, *EV, "--pane", "%3", "--if-absent", "respawn"), "respawn"),
    U(
        "add-respawn-empty-program",
        (*ADD, *EV, *ROLE, "--if-absent", "respawn", "--respawn", "", "--respawn", "x"),
        "--respawn",
    ),
    # ---- add: targets
    U("add-role-and-pane", (*ADD, *EV, "--role", "op", "--pane", "%1"), "--role and --pane are mutually exclusive"),
    U("add-role-and-session", (*ADD, *EV, "--role", "op", "--session", "s1"), "mutually exclusive"),
    U("add-session-and-pane", (*ADD, *EV, "--session", "s1", "--pane", "%1"), "mutually exclusive"),
    U("add-three-targets", (*ADD, *EV, "--session", "s1", "--pane", "%1", "--role", "op"), "mutually exclusive"),
    U("add-role-with-space", (*ADD, *EV, "--role", "team lead"), "--role"),
    U("add-role-with-tab", (*ADD, *EV, "--role", "a\tb"), "--role"),
    U("add-role-empty", (*ADD, *EV, "--role", ""), "--role"),
    U("add-session-with-space", (*ADD, *EV, "--session", "s 1"), "--session"),
    U("add-session-empty", (*ADD, *EV, "--session", ""), "--session"),
    U("add-pane-without-percent", (*ADD, *EV, "--pane", "3"), "--pane"),
    U("add-pane-not-numeric", (*ADD, *EV, "--pane", "%x"), "--pane"),
    U("add-pane-bare-percent", (*ADD, *EV, "--pane", "%"), "--pane"),
    U("add-pane-trailing-space", (*ADD, *EV, "--pane", "%3 "), "--pane"),
    U("add-pane-empty", (*ADD, *EV, "--pane", ""), "--pane"),
    # ---- add: wake_on
    U("add-wake-debounce-without-wake-on", (*ADD, *EV, *ROLE, "--wake-debounce", "60s"), "--wake-on"),
    U("add-wake-scope-without-wake-on", (*ADD, *EV, *ROLE, "--wake-scope", "server"), "--wake-on"),
    U("add-wake-on-none", (*ADD, *EV, *ROLE, "--wake-on", "none"), "--wake-on"),
    U("add-wake-on-off", (*ADD, *EV, *ROLE, "--wake-on", "off"), "--wake-on"),
    U("add-wake-on-bogus", (*ADD, *EV, *ROLE, "--wake-on", "bogus"), "--wake-on"),
    U(
        "add-wake-scope-bogus",
        (*ADD, *EV, *ROLE, "--wake-on", "agent-state-change", "--wake-scope", "galaxy"),
        "--wake-scope",
    ),
    # ---- add: where
    U("add-outside-tmux-without-target", (*ADD, *EV), "not inside a tmux pane"),
    U(
        "add-tmux-without-pane-without-target",
        (*ADD, *EV),
        "not inside a tmux pane",
        env=(("TMUX", "/tmp/tmux-1000/work,123,0"),),
    ),
    U(
        "add-malformed-tmux-pane-with-target",
        (*ADD, *EV, *ROLE),
        "malformed $TMUX_PANE",
        env=(("TMUX_PANE", "garbage"),),
    ),
    U(
        "add-malformed-tmux-pane-no-target",
        (*ADD, *EV),
        "malformed $TMUX_PANE",
        env=(("TMUX", "/tmp/tmux-1000/work,123,0"), ("TMUX_PANE", "%3x")),
    ),
    U("add-tmux-pane-without-percent", (*ADD, *EV, *ROLE), "malformed $TMUX_PANE", env=(("TMUX_PANE", "3"),)),
    # ---- add: arguments
    U("add-empty-prompt", ("cron", "add", "", *EV, *ROLE), "prompt"),
    U("add-blank-prompt", ("cron", "add", "   ", *EV, *ROLE), "prompt"),
    U("add-unknown-option", (*ADD, *EV, *ROLE, "--frobnicate"), "--frobnicate"),
    U("add-missing-prompt", ("cron", "add", *EV, *ROLE)),
    U("add-two-prompts", ("cron", "add", "hi", "there", *EV, *ROLE)),
    U("add-flag-missing-value", (*ADD, *ROLE, "--every")),
    U("add-pinned-with-value", (*ADD, *EV, *ROLE, "--pinned=yes")),
    U("add-slug-dot", (*ADD, *EV, *ROLE, "-L", "a.b"), SLUG),
    U("add-slug-dotdot", (*ADD, *EV, *ROLE, "-L", "../x"), SLUG),
    U("add-slug-before-group", ("-L", "a/b", *ADD, *EV, *ROLE), SLUG),
    U("add-slug-on-group", ("cron", "--server", "a b", "add", "hi", *EV, *ROLE), SLUG),
    U("add-slug-colon", (*ADD, *EV, *ROLE, "--server", "a:b"), SLUG),
    U("add-slug-huge", (*ADD, *EV, *ROLE, "-L", "a." * 3000), "(6,000 characters)"),  # quoted short
    U("add-slug-from-tmux", (*ADD, *EV, *ROLE), SLUG, env=(("TMUX", "/tmp/tmux-1000/a.b,123,0"),)),
    U("add-rk-now-garbage", (*ADD, *EV, *ROLE), "RK_NOW", env=(("RK_NOW", "yesterday"),)),
    U("add-rk-now-no-offset", (*ADD, *EV, *ROLE), "RK_NOW", env=(("RK_NOW", "2027-01-15T08:00:00"),)),
    # ---- edit (reference §4.2)
    U("edit-nothing", ("cron", "edit", "e001"), NOTHING),
    U(
        "edit-wake-on-none-with-debounce",
        ("cron", "edit", "e001", "--wake-on", "none", "--wake-debounce", "5s"),
        "--wake-debounce",
    ),
    U(
        "edit-wake-on-off-with-scope",
        ("cron", "edit", "e001", "--wake-on", "off", "--wake-scope", "server"),
        "--wake-scope",
    ),
    U("edit-wake-debounce-alone", ("cron", "edit", "e001", "--wake-debounce", "5s"), "--wake-on"),
    U("edit-wake-on-bogus", ("cron", "edit", "e001", "--wake-on", "bogus"), "--wake-on"),
    U("edit-two-schedules", ("cron", "edit", "e001", *EV, "--backoff")),
    U("edit-min-without-backoff-on-backoff-entry", ("cron", "edit", "e002", "--min", "2m"), MINMAX),
    U("edit-max-without-backoff", ("cron", "edit", "e002", "--max", "1h"), MINMAX),
    U("edit-idle-every-with-min", ("cron", "edit", "e002", "--idle-every", "2m", "--min", "1m"), MINMAX),
    U("edit-catch-up-without-cron", ("cron", "edit", "e001", "--catch-up", "once"), "--catch-up"),
    U("edit-catch-up-twice", ("cron", "edit", "e001", "--cron", "0 9 * * *", "--catch-up", "twice"), "--catch-up"),
    U("edit-tz-without-cron", ("cron", "edit", "e001", "--tz", "UTC"), "--tz"),
    U("edit-cron-4-fields", ("cron", "edit", "e001", "--cron", "* * * *"), "5 fields"),
    U("edit-cron-empty", ("cron", "edit", "e001", "--cron", "")),
    U("edit-every-0s", ("cron", "edit", "e001", "--every", "0s"), "--every"),
    U("edit-every-garbage", ("cron", "edit", "e001", "--every", "banana"), "--every"),
    U("edit-idle-every-negative", ("cron", "edit", "e001", "--idle-every", "-1m"), "--idle-every"),
    U("edit-bad-deliver", ("cron", "edit", "e001", "--deliver", "bogus"), "--deliver"),
    U("edit-bad-if-absent", ("cron", "edit", "e001", "--if-absent", "bogus"), "--if-absent"),
    U("edit-has-no-role-flag", ("cron", "edit", "e001", "--role", "x"), "--role"),
    U("edit-has-no-pane-flag", ("cron", "edit", "e001", "--pane", "%1"), "--pane"),
    U("edit-has-no-session-flag", ("cron", "edit", "e001", "--session", "s"), "--session"),
    U("edit-has-no-pinned-flag", ("cron", "edit", "e001", "--pinned"), "--pinned"),
    U("edit-missing-id", ("cron", "edit", "--name", "x")),
    U("edit-two-ids", ("cron", "edit", "e001", "e002", "--name", "x")),
    U("edit-slug", ("cron", "edit", "e001", "--name", "x", "-L", "a.b"), SLUG),
    U(
        "edit-respawn-without-if-absent-respawn",
        ("cron", "edit", "e001", "--respawn", "rk"),
        RESPAWN_ONLY,
        needs_entry=True,
    ),
    U(
        "edit-if-absent-respawn-role-no-argv",
        ("cron", "edit", "e001", "--if-absent", "respawn"),
        "respawn",
        needs_entry=True,
    ),
    U(
        "edit-if-absent-respawn-pane-no-argv",
        ("cron", "edit", "e002", "--if-absent", "respawn"),
        "respawn",
        needs_entry=True,
    ),
    U(
        "edit-respawn-empty-program",
        ("cron", "edit", "e001", "--if-absent", "respawn", "--respawn", ""),
        "--respawn",
        needs_entry=True,
    ),
    U(
        "edit-rk-now-garbage",
        ("cron", "edit", "e001", "--every", "7m"),
        "RK_NOW",
        env=(("RK_NOW", "soon"),),
        needs_entry=True,
    ),
    # ---- mute / pin / rm / show / run
    U("mute-for-and-off", ("cron", "mute", "e001", "--for", "5m", "--off"), "--off"),
    U("mute-for-0s", ("cron", "mute", "e001", "--for", "0s"), "--for"),
    U("mute-for-negative", ("cron", "mute", "e001", "--for", "-1m"), "--for"),
    U("mute-for-garbage", ("cron", "mute", "e001", "--for", "a-bit"), "--for"),
    U("mute-for-empty", ("cron", "mute", "e001", "--for", ""), "--for"),
    U("mute-missing-id", ("cron", "mute")),
    U("mute-unknown-option", ("cron", "mute", "e001", "--forever"), "--forever"),
    U("mute-slug", ("cron", "mute", "e001", "-L", "../x"), SLUG),
    U(
        "mute-rk-now-garbage",
        ("cron", "mute", "e001", "--for", "5m"),
        "RK_NOW",
        env=(("RK_NOW", "noon"),),
        needs_entry=True,
    ),
    U("pin-missing-id", ("cron", "pin")),
    U("pin-unknown-option", ("cron", "pin", "e001", "--for", "5m"), "--for"),
    U("pin-two-ids", ("cron", "pin", "e001", "e002")),
    U("pin-off-with-value", ("cron", "pin", "e001", "--off=1")),
    U("pin-slug", ("cron", "pin", "e001", "-L", "a.b"), SLUG),
    U("rm-missing-id", ("cron", "rm")),
    U("rm-unknown-option", ("cron", "rm", "e001", "--force"), "--force"),
    U("rm-slug", ("-L", "../x", "cron", "rm", "e001"), SLUG),
    U("show-missing-id", ("cron", "show")),
    U("show-slug", ("cron", "show", "e001", "-L", "a.b"), SLUG),
    U("show-rk-now-garbage", ("cron", "show", "e001"), "RK_NOW", env=(("RK_NOW", "now-ish"),)),
    U("run-missing-id", ("cron", "run")),
    U("run-unknown-option", ("cron", "run", "e001", "--now"), "--now"),
    U("run-slug", ("cron", "run", "e001", "-L", "a.b"), SLUG),
    # ---- list
    U("list-extra-argument", ("cron", "list", "e001")),
    U("list-unknown-option", ("cron", "list", "--every-server"), "--every-server"),
    U("list-slug-after-verb", ("cron", "list", "-L", "a.b"), SLUG),
    U("list-slug-before-group", ("-L", "../x", "cron", "list"), SLUG),
    U("list-slug-on-group", ("cron", "-L", "a b", "list"), SLUG),
    U("list-slug-from-tmux", ("cron", "list"), SLUG, env=(("TMUX", "/tmp/tmux-1000/a.b,123,0"),)),
    U("list-rk-now-garbage", ("cron", "list"), "RK_NOW", env=(("RK_NOW", "tomorrow"),)),
    U("ls-slug", ("cron", "ls", "-L", "a.b"), SLUG),
    # ---- log
    U("log-n-negative", ("cron", "log", "-n", "-1"), "-n"),
    U("log-n-garbage", ("cron", "log", "-n", "abc"), "-n"),
    U("log-n-missing-value", ("cron", "log", "-n")),
    U("log-two-ids", ("cron", "log", "e001", "e002")),
    U("log-slug", ("cron", "log", "-L", "a.b"), SLUG),
    # ---- next
    U("next-n-zero", ("cron", "next", "e001", "-n", "0"), "-n"),
    U("next-n-negative", ("cron", "next", "e001", "-n", "-3"), "-n"),
    U("next-n-garbage", ("cron", "next", "e001", "-n", "x"), "-n"),
    U("next-missing-id", ("cron", "next")),
    U("next-slug", ("cron", "next", "e001", "-L", "a.b"), SLUG),
    U("next-rk-now-garbage", ("cron", "next", "e001"), "RK_NOW", env=(("RK_NOW", "later"),)),
    # ---- tick / ticker
    U("tick-unknown-option", ("cron", "tick", "--bogus"), "--bogus"),
    U("tick-extra-argument", ("cron", "tick", "now")),
    U("tick-slug", ("cron", "tick", "-L", "a.b"), SLUG),
    U("tick-slug-before-group", ("-L", "../x", "cron", "tick"), SLUG),
    U("ticker-bad-action", ("cron", "ticker", "bogus"), "start"),
    U("ticker-interval-zero", ("cron", "ticker", "--interval", "0"), "--interval"),
    U("ticker-interval-negative", ("cron", "ticker", "--interval", "-1"), "--interval"),
    U("ticker-interval-garbage", ("cron", "ticker", "--interval", "abc"), "--interval"),
    U("ticker-two-actions", ("cron", "ticker", "start", "stop")),
    U("ticker-status-unknown-option", ("cron", "ticker", "status", "--all"), "--all"),
    # ---- simulate
    U("simulate-nothing", ("cron", "simulate"), "exactly one schedule flag"),
    U("simulate-two-schedules", ("cron", "simulate", *EV, "--idle-every", "3m"), "--every and --idle-every cannot go"),
    U("simulate-min-without-backoff", ("cron", "simulate", *EV, "--min", "1m"), MINMAX),
    U("simulate-catch-up-without-cron", ("cron", "simulate", *EV, "--catch-up", "once"), "--catch-up"),
    U("simulate-cron-2-fields", ("cron", "simulate", "--cron", "* *"), "5 fields"),
    U("simulate-unknown-tz", ("cron", "simulate", "--cron", "0 9 * * *", "--tz", "No/Where"), "No/Where"),
    U("simulate-for-0s", ("cron", "simulate", *EV, "--for", "0s"), "--for"),
    U("simulate-for-garbage", ("cron", "simulate", *EV, "--for", "long"), "--for"),
    U("simulate-tick-0s", ("cron", "simulate", *EV, "--tick", "0s"), "--tick"),
    U("simulate-busy-negative", ("cron", "simulate", *EV, "--busy", "-1s"), "--busy"),
    U("simulate-bad-states", ("cron", "simulate", *EV, "--states", "garbage")),
    U("simulate-bad-other", ("cron", "simulate", *EV, "--wake-on", "agent-state-change", "--other", "0 sleepy")),
    U("simulate-bad-start", ("cron", "simulate", *EV, "--start", "nope"), "--start"),
    U("simulate-bad-deliver", ("cron", "simulate", *EV, "--deliver", "bogus"), "--deliver"),
    U("simulate-bad-wake-on", ("cron", "simulate", *EV, "--wake-on", "bogus"), "--wake-on"),
    U("simulate-rk-now-garbage", ("cron", "simulate", *EV), "RK_NOW", env=(("RK_NOW", "whenever"),)),
    U("simulate-unknown-option", ("cron", "simulate", *EV, "--speed", "2"), "--speed"),
    # ---- the groups themselves
    U("unknown-verb", ("cron", "frobnicate"), "frobnicate"),
    U("unknown-group", ("crontab",), "crontab"),
    U("unknown-root-option", ("--bogus", "cron", "list"), "--bogus"),
]

ABSENT_STATE_CASES = [pytest.param(c, id=c.name) for c in USAGE_CASES if not c.needs_entry]
ALL_CASES = [pytest.param(c, id=c.name) for c in USAGE_CASES]


def _with_json(args: tuple) -> list[str]:
    """Put `--json` right after the verb, so a dangling option cannot swallow it."""
    args = list(args)
    i = args.index("cron") if "cron" in args else 0
    j = i + 1
    while j < len(args) and args[j].startswith("-"):  # group options (-L x)
        j += 2
    return [*args[: j + 1], "--json", *args[j + 1 :]]


def _usage_env(tmp_path, case: U):
    return make_env(tmp_path, **dict(case.env))


def _check_usage_human(res: Result, case: U) -> str:
    assert res.code == 2, f"{case.name}: expected exit 2\n{res}"
    message = one_line_error(res)
    if case.expect:
        assert case.expect in message, f"{case.name}: message should mention {case.expect!r}\n{res}"
    return message


@pytest.mark.parametrize("case", ABSENT_STATE_CASES)
def test_usage_error_with_no_state_dir_exits_2_and_creates_nothing(tmp_path, case):
    env = _usage_env(tmp_path, case)
    res = run_in(case.args, env)
    _check_usage_human(res, case)
    assert not state_of(env).exists(), f"{case.name}: a usage error created the state dir"
    assert sorted(p.name for p in Path(env["HOME"]).iterdir()) == []


@pytest.mark.parametrize("case", ALL_CASES)
def test_usage_error_leaves_a_populated_state_dir_byte_for_byte(tmp_path, case):
    env = _usage_env(tmp_path, case)
    populate(state_of(env))
    before = snapshot(state_of(env))
    res = run_in(case.args, env)
    _check_usage_human(res, case)
    assert snapshot(state_of(env)) == before, f"{case.name}: a usage error changed the state dir"


@pytest.mark.parametrize("case", ALL_CASES)
def test_usage_error_with_json_prints_one_usage_document(tmp_path, case):
    env = _usage_env(tmp_path, case)
    populate(state_of(env))
    before = snapshot(state_of(env))
    human = run_in(case.args, env)
    res = run_in(_with_json(case.args), env)
    assert res.code == 2, f"{case.name}\n{res}"
    message = json_error(res, "usage")
    if case.expect:
        assert case.expect in message, res
    if human.code == 2 and human.err.startswith("rk: "):
        assert message == human.err.strip()[len("rk: ") :], "the JSON message is the human message"
    assert snapshot(state_of(env)) == before


@pytest.mark.parametrize("case", ABSENT_STATE_CASES)
def test_usage_error_with_json_and_no_state_dir(tmp_path, case):
    env = _usage_env(tmp_path, case)
    res = run_in(_with_json(case.args), env)
    assert res.code == 2, f"{case.name}\n{res}"
    json_error(res, "usage")
    assert not state_of(env).exists()


SUBPROCESS_USAGE = [
    "add-no-schedule-flag",
    "add-outside-tmux-without-target",
    "add-malformed-tmux-pane-with-target",
    "edit-nothing",
    "mute-for-and-off",
    "add-unknown-option",
    "list-slug-before-group",
]


@pytest.mark.slow
@pytest.mark.parametrize("name", SUBPROCESS_USAGE)
def test_usage_errors_through_a_real_process(tmp_path, name):
    (case,) = [c for c in USAGE_CASES if c.name == name]
    env = _usage_env(tmp_path, case)
    res = run_sub(case.args, env)
    _check_usage_human(res, case)
    assert not state_of(env).exists()
    populate(state_of(env))
    before = snapshot(state_of(env))
    res = run_sub(_with_json(case.args), env)
    assert res.code == 2, res
    json_error(res, "usage")
    assert snapshot(state_of(env)) == before


def test_a_verb_missing_prints_its_help_once_and_exits_2(tmp_path):
    env = make_env(tmp_path)
    res = run_sub(["cron"], env)
    assert res.code == 2, res
    text = res.out + res.err
    assert text.count("Usage: rk cron") == 1, f"the help must be printed once\n{res}"
    assert "Traceback" not in text
    assert not state_of(env).exists()


# --------------------------------------------------------------------------- 2. operational errors

NOT_FOUND_VERBS = {
    "edit": ("cron", "edit", "zzzz", "--name", "x"),
    "rm": ("cron", "rm", "zzzz"),
    "mute": ("cron", "mute", "zzzz"),
    "mute-for": ("cron", "mute", "zzzz", "--for", "5m"),
    "mute-off": ("cron", "mute", "zzzz", "--off"),
    "pin": ("cron", "pin", "zzzz"),
    "pin-off": ("cron", "pin", "zzzz", "--off"),
    "show": ("cron", "show", "zzzz"),
    "next": ("cron", "next", "zzzz"),
    "run": ("cron", "run", "zzzz"),
}


@pytest.mark.parametrize("verb", list(NOT_FOUND_VERBS))
def test_unknown_id_is_not_found_exit_1(tmp_path, verb):
    env = make_env(tmp_path, RK_NOW=str(T0))
    populate(state_of(env))
    before = {p: (state_of(env) / p).read_bytes() for p in ("default.yaml", "default.log")}
    res = run_in(NOT_FOUND_VERBS[verb], env)
    assert res.code == 1, res
    assert one_line_error(res) == "no entry zzzz"
    res = run_in(_with_json(NOT_FOUND_VERBS[verb]), env)
    assert res.code == 1, res
    assert json_error(res, "not-found") == "no entry zzzz"
    assert {p: (state_of(env) / p).read_bytes() for p in before} == before


@pytest.mark.parametrize("verb", list(NOT_FOUND_VERBS))
def test_unknown_id_before_anything_was_ever_stored(tmp_path, verb):
    """A fresh machine: no state dir yet. Still `no entry <id>` (not a file error)."""
    env = make_env(tmp_path, RK_NOW=str(T0))
    res = run_in(NOT_FOUND_VERBS[verb], env)
    assert res.code == 1, res
    assert one_line_error(res) == "no entry zzzz"
    res = run_in(_with_json(NOT_FOUND_VERBS[verb]), env)
    assert json_error(res, "not-found") == "no entry zzzz"
    if verb not in ("edit", "run"):  # those take the server lock, which lives in the dir
        assert not state_of(env).exists()


def test_unknown_id_through_a_real_process(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    populate(state_of(env))
    res = run_sub(["cron", "mute", "nope"], env)
    assert res.code == 1 and one_line_error(res) == "no entry nope"
    res = run_sub(["cron", "show", "nope", "--json"], env)
    assert res.code == 1 and json_error(res, "not-found") == "no entry nope"


CORRUPT_FILES = {
    "does-not-parse": "entries:\n  - {id: e001, schedule: {kind: every\n",
    "top-level-list": "- id: e001\n- id: e002\n",
    "entries-not-a-list": "entries: nope\n",
    "scalar-element": "entries:\n  - 42\n"
    "  - {id: e001, schedule: {kind: every, interval: 5m}, target: {kind: role, role: op}, payload: p}\n",
    "not-utf8": b"entries:\n  - id: e001\n    payload: \xff\xfe\n",
}
MUTATIONS = {
    "add": ("cron", "add", "x", "--every", "5m", "--role", "op"),
    "edit": ("cron", "edit", "e001", "--name", "n"),
    "edit-schedule": ("cron", "edit", "e001", "--every", "9m"),
    "rm": ("cron", "rm", "e001"),
    "mute": ("cron", "mute", "e001"),
    "mute-for": ("cron", "mute", "e001", "--for", "5m"),
    "mute-off": ("cron", "mute", "e001", "--off"),
    "pin": ("cron", "pin", "e001"),
    "pin-off": ("cron", "pin", "e001", "--off"),
}


def _without_lock(snap):
    """The snapshot minus the lock file (edit may create it before reading) and
    the directory's own mtime (which that creation moves)."""
    snap = dict(snap)
    snap.pop("default.lock", None)
    kind, perm, ino, _mtime, _size, _content = snap.pop(".")
    return snap, (kind, perm, ino)


@pytest.mark.parametrize("corrupt", list(CORRUPT_FILES))
@pytest.mark.parametrize("verb", list(MUTATIONS))
def test_a_corrupt_entry_file_is_refused_and_not_rewritten(tmp_path, verb, corrupt):
    env = make_env(tmp_path, RK_NOW=str(T0))
    write_private(state_of(env) / "default.yaml", CORRUPT_FILES[corrupt])
    before = _without_lock(snapshot(state_of(env)))
    res = run_in(MUTATIONS[verb], env)
    assert res.code == 1, res
    assert "refusing to mutate" in one_line_error(res)
    assert _without_lock(snapshot(state_of(env))) == before, "nothing may be written"
    res = run_in(_with_json(MUTATIONS[verb]), env)
    assert res.code == 1, res
    assert "refusing to mutate" in json_error(res, "operational")
    assert _without_lock(snapshot(state_of(env))) == before


def test_a_corrupt_file_is_refused_through_a_real_process_and_list_says_so(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    path = write_private(state_of(env) / "default.yaml", CORRUPT_FILES["does-not-parse"])
    data = path.read_bytes()
    res = run_sub(MUTATIONS["add"], env)
    assert res.code == 1 and "refusing to mutate" in one_line_error(res)
    assert path.read_bytes() == data
    listed = run_sub(["cron", "list", "--json"], env)  # an error with the reason, never an empty list
    assert listed.code == 1 and "does not parse" in json_error(listed, "operational")
    assert path.read_bytes() == data


def _fifty_entries() -> str:
    entries = [
        {
            "id": f"c{i:03d}",
            "schedule": {"kind": "every", "interval": "1h"},
            "target": {"kind": "role", "role": "op"},
            "payload": f"p{i}",
            "created_by": {"at": T0},
        }
        for i in range(50)
    ]
    return json.dumps({"entries": entries}, indent=1) + "\n"  # JSON is YAML


def test_the_51st_entry_is_refused(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    write_private(state_of(env) / "default.yaml", _fifty_entries())
    before = snapshot(state_of(env))
    res = run_sub(["cron", "add", "one too many", "--every", "5m", "--role", "op"], env)
    assert res.code == 1, res
    assert "maximum 50" in one_line_error(res)
    assert snapshot(state_of(env)) == before
    res = run_in(["cron", "add", "one too many", "--every", "5m", "--role", "op", "--json"], env)
    assert res.code == 1 and "maximum 50" in json_error(res, "operational")
    assert snapshot(state_of(env)) == before


def test_the_entry_cap_is_a_setting(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    write_private(state_of(env) / "default.yaml", _fifty_entries())
    assert json_ok(
        run_in(["cron", "add", "51st", "--every", "5m", "--role", "op", "--json"], dict(env, RK_MAX_ENTRIES="51"))
    )
    res = run_in(["cron", "add", "52nd", "--every", "5m", "--role", "op"], env)
    assert res.code == 1 and "maximum 50" in one_line_error(res)
    config = Path(env["XDG_CONFIG_HOME"]) / "rk" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("max_entries: 52\n")
    assert json_ok(run_in(["cron", "add", "52nd", "--every", "5m", "--role", "op", "--json"], env))
    assert len(load_yaml(state_of(env) / "default.yaml")["entries"]) == 52


@pytest.mark.parametrize("expr", ["61 * * * *", "0 25 * * *", "0 0 30 2 *", "* * * * 8"])
def test_a_five_field_cron_that_does_not_parse_is_a_usage_error_and_writes_nothing(tmp_path, expr):
    env = make_env(tmp_path, RK_NOW=str(T0))
    run = run_sub if expr.startswith("61") else run_in
    res = run(["cron", "add", "bad cron", "--cron", expr, "--role", "op"], env)
    assert res.code == 2, res
    message = one_line_error(res)
    assert message.startswith("--cron: ") and ("out of range" in message or "never" in message), res
    assert not state_of(env).exists()
    populate(state_of(env))
    before = snapshot(state_of(env))
    res = run_in(["cron", "add", "bad cron", "--cron", expr, "--role", "op", "--json"], env)
    assert res.code == 2 and json_error(res, "usage")
    res = run_in(["cron", "edit", "e001", "--cron", expr], env)
    assert res.code == 2, res
    one_line_error(res)
    assert snapshot(state_of(env)) == before


# --------------------------------------------------------------------------- 3. JSON envelopes and human lines

RECEIPT_RE = re.compile(r"^(?P<id>[a-z0-9]{4}) (?P<name>.*) \[(?P<schedule>.+) -> (?P<target>\S+)\]$")


def test_add_prints_the_receipt_line_and_json_receipt(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    res = run_sub(["cron", "add", "status report please", "--every", "1h30m", "--role", "op"], env)
    assert res.code == 0, res
    assert res.err.splitlines() == [  # outside tmux, no server, no ticker: said, and the entry is kept
        "rk: warning: wrote to server default (outside tmux; -L names another)",
        "rk: warning: tmux server default is not running: nothing fires until it does",
        "rk: warning: no ticker is running: nothing fires until one does (rk cron ticker install, or ticker start)",
    ], res
    line, forecast = res.out.splitlines()
    m = RECEIPT_RE.match(line)
    assert m and m["name"] == "status report please" and m["schedule"] == "every 1h30m" and m["target"] == "role:op", (
        line
    )
    assert forecast == "next: 2027-01-15 09:30:00 UTC (in 1h30m)"  # as `rk cron next` says it: as if the server ran
    res = run_sub(["cron", "add", "second", "--idle-every", "3m", "--pane", "%3", "--json"], env)
    receipt = json_ok(res)
    assert set(receipt) == {"id", "name", "schedule", "target", "next", "why_not"}
    assert (receipt["next"], receipt["why_not"]) == (None, None)  # a backoff needs the pane's state: not known
    assert receipt["name"] == "second" and receipt["schedule"] == "backoff 3m→3m" and receipt["target"] == "pane:%3"
    assert re.fullmatch(r"[a-z0-9]{4}", receipt["id"])
    ids = [e["id"] for e in load_yaml(state_of(env) / "default.yaml")["entries"]]
    assert ids == [m["id"], receipt["id"]]


@pytest.mark.parametrize(
    "flags, summary, stored",
    [
        (("--every", "1h30m"), "every 1h30m", {"kind": "every", "interval": "1h30m"}),
        (("--every", "90s"), "every 1m30s", {"kind": "every", "interval": "1m30s"}),
        (("--every", "1m0s"), "every 1m", {"kind": "every", "interval": "1m"}),
        (("--every", "2h0m0s"), "every 2h", {"kind": "every", "interval": "2h"}),
        (("--every", "45s"), "every 45s", {"kind": "every", "interval": "45s"}),
        (("--backoff",), "backoff 1m→30m", {"kind": "backoff", "min": "1m", "max": "30m"}),
        (("--backoff", "--min", "2m", "--max", "1h"), "backoff 2m→1h", {"kind": "backoff", "min": "2m", "max": "1h"}),
        (("--backoff", "--max", "5m"), "backoff 1m→5m", {"kind": "backoff", "min": "1m", "max": "5m"}),
        (("--idle-every", "3m"), "backoff 3m→3m", {"kind": "backoff", "min": "3m", "max": "3m"}),
        (("--cron", "0 9 * * 1-5"), "cron 0 9 * * 1-5", {"kind": "cron", "expr": "0 9 * * 1-5"}),
        (
            ("--cron", "*/15 * * * *", "--catch-up", "once"),
            "cron */15 * * * * (catch-up once)",
            {"kind": "cron", "expr": "*/15 * * * *", "catch_up": "once"},
        ),
    ],
)
def test_schedule_flags_give_short_summaries_and_short_stored_durations(tmp_path, flags, summary, stored):
    env = make_env(tmp_path, RK_NOW=str(T0))
    res = run_in(["cron", "add", "p", *flags, "--role", "op"], env)
    assert res.code == 0, res
    m = RECEIPT_RE.match(res.out.splitlines()[0])
    assert m and m["schedule"] == summary, res
    assert add_json(env, "p", *flags, "--role", "op")["schedule"] == summary
    assert entry_raw(state_of(env), m["id"])["schedule"] == stored


@pytest.mark.parametrize(
    "flags, summary",
    [
        (("--role", "operator"), "role:operator"),
        (("--session", "8c1e-42"), "session:8c1e-42"),
        (("--pane", "%12"), "pane:%12"),
    ],
)
def test_target_summaries(tmp_path, flags, summary):
    env = make_env(tmp_path, RK_NOW=str(T0))
    receipt = add_json(env, "p", "--every", "5m", *flags)
    assert receipt["target"] == summary
    kind, value = summary.split(":", 1)
    assert entry_raw(state_of(env), receipt["id"])["target"] == {"kind": kind, kind: value}


def test_session_target_may_use_if_absent_respawn_without_a_command(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    receipt = add_json(env, "p", "--every", "5m", "--session", "s-1", "--if-absent", "respawn")
    raw = entry_raw(state_of(env), receipt["id"])
    assert raw["if_absent"] == "respawn" and "respawn" not in raw


def test_default_name_is_the_prompt_cut_to_40_characters(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    long_prompt = "é" * 45 + " tail"
    assert add_json(env, long_prompt, "--every", "5m", "--role", "op")["name"] == "é" * 40
    assert add_json(env, "short", "--every", "5m", "--role", "op")["name"] == "short"
    assert add_json(env, "prompt", "--name", "my name", "--every", "5m", "--role", "op")["name"] == "my name"
    names = [e.get("name") for e in load_yaml(state_of(env) / "default.yaml")["entries"]]
    payloads = [e["payload"] for e in load_yaml(state_of(env) / "default.yaml")["entries"]]
    assert names == ["é" * 40, "short", "my name"] and payloads[0] == long_prompt


def test_add_stores_flags_verbatim(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    receipt = add_json(
        env,
        "operator tick",
        "--backoff",
        "--min",
        "3m",
        "--max",
        "24m",
        "--role",
        "operator",
        "--wake-on",
        "agent-state-change",
        "--deliver",
        "skip-if-busy",
        "--if-absent",
        "respawn",
        "--respawn",
        "rk operator",
        "--respawn",
        "-L",
        "--respawn",
        "{server}",
        "--pinned",
    )
    raw = entry_raw(state_of(env), receipt["id"])
    assert raw["schedule"] == {"kind": "backoff", "min": "3m", "max": "24m"}
    assert raw["wake_on"] == {"event": "agent-state-change", "scope": "server", "debounce": "1m"}
    assert raw["target"] == {"kind": "role", "role": "operator"}
    assert raw["payload"] == "operator tick"
    assert raw["deliver"] == "skip-if-busy" and raw["if_absent"] == "respawn"
    assert raw["respawn"] == ["rk operator", "-L", "{server}"]  # one argv element per flag, never split
    assert raw["pinned"] is True
    assert raw["created_by"] == {"at": T0}
    assert "muted" not in raw and "muted_until" not in raw


def test_add_without_wake_on_writes_no_wake_on_key(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    receipt = add_json(env, "p", "--every", "5m", "--role", "op")
    raw = entry_raw(state_of(env), receipt["id"])
    assert "wake_on" not in raw and "respawn" not in raw and "pinned" not in raw


LIST_KEYS = {
    "id",
    "name",
    "schedule",
    "schedule_summary",
    "wake_on",
    "target",
    "deliver",
    "if_absent",
    "respawn",
    "pinned",
    "any_program",
    "muted",
    "last_fired",
    "orphaned_since",
    "expires_at",
    "created_by",
    "parent",
    "next",
    "last",
    "why_not",
    "dormant",
}


def _mixed_entries(env) -> dict[str, str]:
    """One entry of each shape; returns name → id."""
    ids = {}
    ids["every"] = add_json(env, "every", "--every", "1h30m", "--role", "op")["id"]
    ids["backoff"] = add_json(
        env,
        "backoff",
        "--backoff",
        "--pane",
        "%3",
        "--wake-on",
        "agent-state-change",
        "--wake-debounce",
        "90s",
        "--deliver",
        "when-idle",
    )["id"]
    ids["cron"] = add_json(
        env,
        "cron",
        "--cron",
        "0 9 * * 1-5",
        "--catch-up",
        "once",
        "--session",
        "s-1",
        "--if-absent",
        "respawn",
        "--respawn",
        "rk",
        "--respawn",
        "{server}",
        "--pinned",
    )["id"]
    ids["idle"] = add_json(
        env, "idle", "--idle-every", "3m", "--pane", "%4", "--deliver", "immediate", "--if-absent", "notify"
    )["id"]
    return ids


def test_list_json_records_have_exactly_the_documented_keys(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    ids = _mixed_entries(env)
    run_in(["cron", "mute", ids["idle"], "--for", "10m"], env)
    records = json_ok(run_sub(["cron", "list", "--json"], env))
    assert [r["id"] for r in records] == [ids["every"], ids["backoff"], ids["cron"], ids["idle"]]
    for r in records:
        want = LIST_KEYS | ({"muted_until"} if r["id"] == ids["idle"] else set())
        assert set(r) == want, f"record keys differ from the contract: extra {set(r) - want}, missing {want - set(r)}"
        sched = r["schedule"]
        allowed = {"every": {"interval"}, "backoff": {"min", "max"}, "cron": {"expr", "catch_up", "tz"}}[sched["kind"]]
        assert set(sched) - {"kind"} <= allowed, sched


def test_list_json_values(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    ids = _mixed_entries(env)
    write_private(
        state_of(env) / "default.log",
        log_line(T0 + 60, ids["every"], "%9")
        + "\n"
        + log_line(T0 + 120, ids["backoff"], "", "schedule", "skipped-absent")
        + "\n",
    )
    run_in(["cron", "mute", ids["backoff"]], env)
    run_in(["cron", "mute", ids["idle"], "--for", "10m"], dict(env, RK_NOW=str(T0 + 200)))
    records = {r["id"]: r for r in json_ok(run_in(["cron", "list", "--json"], dict(env, RK_NOW=str(T0 + 300))))}
    every, backoff, cron, idle = (records[ids[k]] for k in ("every", "backoff", "cron", "idle"))
    assert every["schedule"] == {"kind": "every", "interval": "1h30m0s"}
    assert every["schedule_summary"] == "every 1h30m"
    assert every["wake_on"] is None and every["target"] == "role:op"
    assert (
        every["deliver"] == "immediate" and every["if_absent"] == "skip" and every["respawn"] == []
    )  # defaults written
    assert every["pinned"] is False and every["muted"] is False and "muted_until" not in every
    assert every["last_fired"] == T0 + 60
    assert every["orphaned_since"] == 0 and every["expires_at"] == 0  # role targets never orphan

    assert backoff["schedule"] == {"kind": "backoff", "min": "1m0s", "max": "30m0s"}
    assert backoff["schedule_summary"] == "backoff 1m→30m"
    assert backoff["wake_on"]["event"] == "agent-state-change" and backoff["wake_on"]["debounce"] == "1m30s"
    assert backoff["wake_on"].get("scope", "server") == "server"
    assert backoff["deliver"] == "when-idle" and backoff["muted"] is True and "muted_until" not in backoff
    assert backoff["last_fired"] == T0 + 120
    assert backoff["orphaned_since"] == T0 + 120 and backoff["expires_at"] == T0 + 120 + 7 * 86400

    assert cron["schedule"] == {"kind": "cron", "expr": "0 9 * * 1-5", "catch_up": "once"}
    assert cron["schedule_summary"] == "cron 0 9 * * 1-5 (catch-up once)"
    assert cron["target"] == "session:s-1" and cron["if_absent"] == "respawn"
    assert cron["respawn"] == ["rk", "{server}"]  # unsubstituted
    assert cron["pinned"] is True and cron["last_fired"] == 0
    assert cron["orphaned_since"] == T0 and cron["expires_at"] == 0  # pinned never expires

    assert idle["schedule"] == {"kind": "backoff", "min": "3m0s", "max": "3m0s"}
    assert idle["schedule_summary"] == "backoff 3m→3m"
    assert idle["deliver"] == "immediate" and idle["if_absent"] == "notify"
    assert idle["muted"] is True and idle["muted_until"] == T0 + 200 + 600
    assert idle["orphaned_since"] == T0 and idle["expires_at"] == T0 + 7 * 86400


def test_show_json_is_the_list_record_and_show_human_names_the_entry(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    ids = _mixed_entries(env)
    records = json_ok(run_in(["cron", "list", "--json"], env))
    for record in records:
        assert json_ok(run_in(["cron", "show", record["id"], "--json"], env)) == record
    res = run_sub(["cron", "show", ids["cron"]], env)
    assert res.code == 0 and ids["cron"] in res.out and "cron 0 9 * * 1-5" in res.out, res
    assert json_ok(run_sub(["cron", "show", ids["every"], "--json"], env)) == records[0]


def test_ls_is_list(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    _mixed_entries(env)
    assert run_in(["cron", "ls", "--json"], env).out == run_in(["cron", "list", "--json"], env).out
    assert run_in(["cron", "ls"], env).out == run_in(["cron", "list"], env).out


def test_list_human_table(tmp_path):
    """Without a live server the rows still say why nothing fires; the columns are
    those of systemctl list-timers."""
    env = make_env(tmp_path, RK_NOW=str(T0))
    a = add_json(env, "a", "--every", "5m", "--role", "op")["id"]
    b = add_json(env, "b", "--every", "5m", "--pane", "%2", "--pinned")["id"]
    c = add_json(env, "c", "--idle-every", "3m", "--pane", "%3")["id"]
    d = add_json(env, "d", "--backoff", "--session", "s-4", "--deliver", "skip-if-busy")["id"]
    run_in(["cron", "mute", b], env)
    run_in(["cron", "mute", c, "--for", "30m"], env)
    write_private(state_of(env) / "default.log", log_line(T0 + 60, a, "%1") + "\n")
    res = run_sub(["cron", "list"], dict(env, RK_NOW=str(T0 + 600)))
    assert res.code == 0 and res.err == "", res
    lines = [line for line in res.out.splitlines() if line.strip()]
    assert lines[0].split() == ["ID", "NAME", "SCHEDULE", "NEXT", "(UTC)", "LEFT", "LAST", "TARGET", "FLAGS"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert set(rows) == {a, b, c, d}
    assert "server not running" in rows[a] and "2027-01-15 08:01:00 delivered" in rows[a]
    assert "muted" in rows[b] and "pinned" in rows[b]
    assert "muted until 2027-01-15 08:30" in rows[c]
    assert rows[a].split()[1:5] == ["a", "every", "5m", "-"]


def test_list_with_no_file_is_empty_and_exit_0(tmp_path):
    env = make_env(tmp_path)
    assert json_ok(run_in(["cron", "list", "--json"], env)) == []
    res = run_in(["cron", "list"], env)
    assert res.code == 0 and res.err == "", res
    assert not state_of(env).exists()


def test_list_skips_an_invalid_entry_with_a_diagnostic_on_stderr(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    write_private(
        state_of(env) / "default.yaml",
        POPULATED_YAML
        + textwrap.indent(
            textwrap.dedent("""\
        - id: bad1
          schedule: {kind: every, interval: banana}
          target: {kind: role, role: op}
          payload: x
        """),
            "  ",
        ),
    )
    res = run_sub(["cron", "list", "--json"], env)
    assert [r["id"] for r in json_ok(res)] == ["e001", "e002"]
    assert "entry-invalid" in res.err and "bad1" in res.err


def test_rm_output(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    populate(state_of(env))
    res = run_sub(["cron", "rm", "e001"], env)
    assert (res.code, res.out, res.err) == (0, "removed e001\n", ""), res
    assert json_ok(run_in(["cron", "rm", "e002", "--json"], env)) == {"id": "e002", "removed": True}
    assert load_yaml(state_of(env) / "default.yaml")["entries"] == []
    assert (state_of(env) / "default.log").read_text() == POPULATED_LOG  # log lines stay


def test_mute_outputs_and_fields(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    populate(state_of(env))
    state = state_of(env)
    res = run_sub(["cron", "mute", "e001"], env)
    assert (res.code, res.out, res.err) == (0, "muted e001\n", ""), res
    raw = entry_raw(state, "e001")
    assert raw["muted"] is True and "muted_until" not in raw

    res = run_sub(["cron", "mute", "e001", "--for", "1h30m"], env)
    assert (res.code, res.out, res.err) == (0, "muted e001 until 2027-01-15 09:30:00 UTC\n", ""), res
    raw = entry_raw(state, "e001")
    assert raw["muted_until"] == T0 + 5400 and not raw.get("muted"), "a lease replaces the indefinite mute"

    assert json_ok(run_in(["cron", "mute", "e001", "--for", "10m", "--json"], env)) == {
        "id": "e001",
        "muted": True,
        "until": T0 + 600,
    }
    assert json_ok(run_in(["cron", "mute", "e001", "--json"], env)) == {"id": "e001", "muted": True}
    raw = entry_raw(state, "e001")
    assert raw["muted"] is True and "muted_until" not in raw, "an indefinite mute clears the lease"

    res = run_sub(["cron", "mute", "e001", "--off"], env)
    assert (res.code, res.out, res.err) == (0, "unmuted e001\n", ""), res
    raw = entry_raw(state, "e001")
    assert "muted" not in raw and "muted_until" not in raw
    run_in(["cron", "mute", "e001", "--for", "10m"], env)
    assert json_ok(run_in(["cron", "mute", "e001", "--off", "--json"], env)) == {"id": "e001", "muted": False}
    raw = entry_raw(state, "e001")
    assert "muted" not in raw and "muted_until" not in raw, "--off clears the lease too"


def test_mute_until_is_the_local_wall_time_with_its_zone(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0), TZ="Europe/Berlin")
    populate(state_of(env))
    res = run_in(["cron", "mute", "e001", "--for", "30m"], env)
    assert res.out == "muted e001 until 2027-01-15 09:30:00 CET\n", res


def test_pin_outputs(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    populate(state_of(env))
    res = run_sub(["cron", "pin", "e002"], env)
    assert (res.code, res.out, res.err) == (0, "pinned e002\n", ""), res
    assert entry_raw(state_of(env), "e002")["pinned"] is True
    res = run_sub(["cron", "pin", "e002", "--off"], env)
    assert (res.code, res.out, res.err) == (0, "unpinned e002\n", ""), res
    assert "pinned" not in entry_raw(state_of(env), "e002")
    assert json_ok(run_in(["cron", "pin", "e002", "--json"], env)) == {"id": "e002", "pinned": True}
    assert json_ok(run_in(["cron", "pin", "e002", "--off", "--json"], env)) == {"id": "e002", "pinned": False}


def test_edit_outputs(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    populate(state_of(env))
    res = run_sub(["cron", "edit", "e001", "--every", "2h", "--name", "renamed"], env)
    said = "edited e001 renamed [every 2h -> role:op]\nnext: 2027-01-15 10:00:00 UTC (in 2h)\n"
    assert (res.code, res.out, res.err) == (0, said, ""), res
    receipt = json_ok(run_in(["cron", "edit", "e002", "--idle-every", "3m", "--json"], env))
    assert receipt == {
        "id": "e002",
        "name": "backoff-pane",
        "schedule": "backoff 3m→3m",
        "target": "pane:%5",
        "next": None,
        "why_not": None,
    }


def test_log_json_reads_archives_oldest_first_exactly_as_stored(tmp_path):
    env = make_env(tmp_path)
    state = state_of(env)
    archived_2 = [log_line(T0 - 900, "aaaa", "%1"), log_line(T0 - 800, "bbbb", "", "", "expired-orphan")]
    archived_1 = [
        log_line(T0 - 500, "aaaa", "%1", "wake", "failed: echo not seen"),
        log_line(T0 - 400, "bbbb", "", "schedule", "missed"),
    ]
    live = [
        log_line(T0 - 100, "aaaa", "", "edit", "rescheduled"),
        "{torn line",
        log_line(T0, "aaaa", "%1", "manual", "respawned (kickoff undelivered: parked)"),
        log_line(T0 + 5, "bbbb", "%2", "schedule", "skipped-busy: waiting"),
    ]
    write_private(state / "default.log.2", "\n".join(archived_2) + "\n")
    write_private(state / "default.log.1", "\n".join(archived_1) + "\n")
    write_private(state / "default.log", "\n".join(live) + "\n")
    stored = [json.loads(x) for x in archived_2 + archived_1 + live if not x.startswith("{torn")]
    before = snapshot(state)

    got = json_ok(run_sub(["cron", "log", "--json", "-n", "0"], env))
    assert got == stored
    assert all(list(item) == ["ts", "entry", "target", "reason", "outcome"] for item in got)
    assert json_ok(run_in(["cron", "log", "aaaa", "--json", "-n", "0"], env)) == [
        s for s in stored if s["entry"] == "aaaa"
    ]
    assert json_ok(run_in(["cron", "log", "--json", "-n", "2"], env)) == stored[-2:]
    assert json_ok(run_in(["cron", "log", "bbbb", "--json", "-n", "1"], env)) == [stored[-1]]
    assert json_ok(run_in(["cron", "log", "zzzz", "--json"], env)) == []
    human = run_sub(["cron", "log", "-n", "0"], env)
    assert human.code == 0 and len(human.out.splitlines()) == 1 + len(stored), human
    assert human.out.splitlines()[0].split() == ["TIME", "(UTC)", "ENTRY", "NAME", "TARGET", "REASON", "OUTCOME"]
    assert [line.split()[2] for line in human.out.splitlines()[1:]] == [s["entry"] for s in stored]
    assert snapshot(state) == before, "log only reads"


def test_next_json_for_a_cron_entry_in_its_own_zone(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0), TZ="Asia/Tokyo")
    entry = add_json(env, "standup", "--cron", "0 9 * * 1-5", "--tz", "America/New_York", "--role", "op")["id"]
    result = json_ok(run_sub(["cron", "next", entry, "-n", "3", "--json"], env))
    assert result == {
        "id": entry,
        "fires": [
            {"ts": 1800021600, "local": "2027-01-15T09:00:00-05:00", "utc": "2027-01-15T14:00:00Z"},
            {"ts": 1800280800, "local": "2027-01-18T09:00:00-05:00", "utc": "2027-01-18T14:00:00Z"},
            {"ts": 1800367200, "local": "2027-01-19T09:00:00-05:00", "utc": "2027-01-19T14:00:00Z"},
        ],
    }
    human = run_sub(["cron", "next", entry, "-n", "1"], env)
    assert human.code == 0 and human.out.splitlines()[0].split() == ["TIME", "(America/New_York)", "UTC"], human
    assert human.out.splitlines()[1].split() == ["2027-01-15", "09:00:00", "2027-01-15", "14:00:00"], human


def test_next_crosses_daylight_saving_with_the_right_offsets(tmp_path):
    now = int(datetime.fromisoformat("2027-03-12T12:00:00+00:00").timestamp())
    env = make_env(tmp_path, RK_NOW=str(now), TZ="UTC")
    entry = add_json(env, "standup", "--cron", "0 9 * * 1-5", "--tz", "America/New_York", "--role", "op")["id"]
    fires = json_ok(run_in(["cron", "next", entry, "-n", "3", "--json"], env))["fires"]
    assert [(f["local"], f["utc"]) for f in fires] == [
        ("2027-03-12T09:00:00-05:00", "2027-03-12T14:00:00Z"),
        ("2027-03-15T09:00:00-04:00", "2027-03-15T13:00:00Z"),
        ("2027-03-16T09:00:00-04:00", "2027-03-16T13:00:00Z"),
    ]
    for f in fires:
        assert f["ts"] == int(datetime.fromisoformat(f["utc"].replace("Z", "+00:00")).timestamp())


def test_next_json_for_an_every_entry_uses_the_local_zone(tmp_path):
    env = make_env(tmp_path, RK_NOW="2027-01-15T17:00:00+09:00", TZ="Asia/Tokyo")
    populate(state_of(env))  # e001: every 5m, last own line at T0 + 300
    result = json_ok(run_in(["cron", "next", "e001", "-n", "2", "--json"], dict(env, RK_NOW=str(T0 + 400))))
    assert result == {
        "id": "e001",
        "fires": [
            {"ts": T0 + 600, "local": "2027-01-15T17:10:00+09:00", "utc": "2027-01-15T08:10:00Z"},
            {"ts": T0 + 900, "local": "2027-01-15T17:15:00+09:00", "utc": "2027-01-15T08:15:00Z"},
        ],
    }


@pytest.mark.parametrize("kind", ["every", "cron"])
def test_next_lists_only_instants_strictly_after_now(tmp_path, kind):
    """DECISIONS §4: "the next N instants strictly after now" — also when the
    schedule is overdue (every) or inside its grace window (cron)."""
    env = make_env(tmp_path, RK_NOW=str(T0))
    if kind == "every":
        entry = add_json(env, "p", "--every", "5m", "--role", "op")["id"]
        now = T0 + 400  # due since T0 + 300
    else:
        entry = add_json(env, "p", "--cron", "0 14 * * *", "--role", "op")["id"]
        now = 1800021600 + 30  # 14:00:30Z, inside the 2-minute grace of 14:00
    fires = json_ok(run_in(["cron", "next", entry, "-n", "3", "--json"], dict(env, RK_NOW=str(now))))["fires"]
    assert len(fires) == 3
    assert all(f["ts"] > now for f in fires), f"now={now}: {fires}"


def test_tick_json_and_human_line_without_live_servers(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    populate(state_of(env), "ghost")
    before = snapshot(state_of(env))
    done = run_sub(["cron", "tick", "--json"], env)
    assert done.code == 1, done  # it could do nothing: no server with entries is live
    result = json.loads(done.out)["result"]
    assert set(result) == {"servers_swept", "fires", "diagnostics", "decisions"}
    assert result["servers_swept"] == 0 and result["fires"] == 0 and result["decisions"] == []
    (diag,) = result["diagnostics"]
    assert set(diag) == {"server", "entry", "reason", "detail"}
    assert (diag["server"], diag["entry"], diag["reason"]) == ("ghost", "", "server-not-live")
    res = run_sub(["cron", "tick"], env)
    why = "rk: tick could not do its work: ghost: server-not-live: no live tmux server on socket ghost\n"
    assert (res.code, res.out, res.err) == (1, "tick: 0 servers swept, 0 fires, 1 diagnostics\n", why), res
    assert snapshot(state_of(env)) == before, "a dead server's files are never touched"


def test_tick_json_decisions_on_a_live_server(tmp_path, tmux_server):
    env = make_env(tmp_path, RK_NOW=str(T0))
    entry = add_json(env, "to nowhere", "--every", "1m", "--pane", "%999", "-L", tmux_server.name)["id"]
    result = json_ok(run_sub(["cron", "tick", "--json"], dict(env, RK_NOW=str(T0 + 60))))
    assert result["servers_swept"] == 1 and result["fires"] == 1
    assert result["decisions"] == [
        {"server": tmux_server.name, "entry": entry, "reason": "schedule", "pane": "", "outcome": "skipped-absent"}
    ]
    assert all(set(d) == {"server", "entry", "reason", "detail"} for d in result["diagnostics"])
    assert {"server": tmux_server.name, "entry": entry, "reason": "target-unresolved"} in [
        {k: d[k] for k in ("server", "entry", "reason")} for d in result["diagnostics"]
    ]
    res = run_sub(["cron", "tick"], dict(env, RK_NOW=str(T0 + 61)))
    assert res.code == 0 and re.fullmatch(r"tick: 1 servers swept, 0 fires, \d+ diagnostics\n", res.out), res


def test_ticker_status_json(tmp_path):
    from rk.engine.ticker import PID_NAME, process_start_time

    env = make_env(tmp_path)
    res = run_in(["cron", "ticker", "status", "--json"], env)
    assert res.code == 3 and json.loads(res.out) == {"ok": True, "result": {"running": False}}, res
    res = run_sub(["cron", "ticker", "status"], env)
    assert (res.code, res.out) == (3, "ticker not running\n"), "systemctl's convention: 3 when nothing runs"
    me = os.getpid()
    write_private(
        state_of(env) / PID_NAME, json.dumps({"pid": me, "start_time": process_start_time(me), "started_at": T0})
    )
    assert json_ok(run_sub(["cron", "ticker", "status", "--json"], env)) == {
        "running": True,
        "pid": me,
        "started_at": T0,
    }
    res = run_in(["cron", "ticker", "status"], env)
    assert res.out == f"ticker running (pid {me}, since 2027-01-15 08:00:00 UTC)\n", res
    write_private(state_of(env) / PID_NAME, json.dumps({"pid": me, "start_time": "1", "started_at": T0}))
    res = run_in(["cron", "ticker", "status", "--json"], env)
    assert res.code == 3 and json.loads(res.out)["result"] == {"running": False}, "a reused pid is not ours"


# --------------------------------------------------------------------------- 4. no tmux needed

READ_VERBS = [("cron", "list"), ("cron", "list", "--json"), ("cron", "show", "e001"), ("cron", "log", "e002", "--json")]


def _python_only_path(tmp_path) -> Path:
    bindir = tmp_path / "bin-python-only"
    bindir.mkdir()
    (bindir / "python3").symlink_to(sys.executable)
    return bindir


def test_list_show_log_work_without_tmux_installed(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0), PATH=str(_python_only_path(tmp_path)))
    populate(state_of(env))
    for args in READ_VERBS:
        res = run_sub(args, env)
        assert res.code == 0 and res.err == "", f"{args}\n{res}"
        assert "e00" in res.out, f"{args}\n{res}"


def _failing_tmux_shim(tmp_path) -> tuple[Path, Path]:
    bindir = tmp_path / "bin-shim"
    bindir.mkdir()
    calls = tmp_path / "tmux-calls.log"
    shim = bindir / "tmux"
    shim.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{calls}'\nexit 1\n")
    shim.chmod(0o755)
    return bindir, calls


def test_list_show_log_never_run_tmux(tmp_path):
    bindir, calls = _failing_tmux_shim(tmp_path)
    env = make_env(tmp_path, RK_NOW=str(T0), PATH=f"{bindir}:{os.environ['PATH']}", TMUX="/tmp/tmux-1000/work,123,0")
    populate(state_of(env), "work")
    for args in READ_VERBS:
        res = run_sub(args, env)
        assert res.code == 0 and res.err == "", f"{args}\n{res}"
    assert "e001" in run_sub(["cron", "list"], env).out  # the server came from $TMUX, not from tmux
    assert not calls.exists(), f"tmux was run: {calls.read_text()}"


def test_file_verbs_outside_tmux_never_run_tmux(tmp_path):
    bindir, calls = _failing_tmux_shim(tmp_path)
    env = make_env(tmp_path, RK_NOW=str(T0), PATH=f"{bindir}:{os.environ['PATH']}")
    entry = add_json(env, "p", "--every", "5m", "--role", "op", run=run_sub)["id"]
    for args in (
        ["mute", entry],
        ["mute", entry, "--for", "5m"],
        ["pin", entry],
        ["edit", entry, "--every", "6m"],
        ["next", entry],
        ["rm", entry],
    ):
        res = (run_sub if args[0] == "edit" else run_in)(["cron", *args], env)
        assert res.code == 0, f"{args}\n{res}"
    assert not calls.exists(), f"tmux was run: {calls.read_text()}"


# --------------------------------------------------------------------------- 5. -L anywhere, $TMUX default, tick scope


def _two_servers(env) -> None:
    populate(state_of(env), "default")
    write_private(state_of(env) / "work.yaml", POPULATED_YAML.replace("e001", "w001").replace("e002", "w002"))


@pytest.mark.parametrize(
    "argv",
    [
        ["-L", "work", "cron", "list", "--json"],
        ["--server", "work", "cron", "list", "--json"],
        ["cron", "-L", "work", "list", "--json"],
        ["cron", "list", "-L", "work", "--json"],
        ["cron", "list", "--json", "--server", "work"],
        ["cron", "ls", "--json", "-L", "work"],
    ],
    ids=["before-group", "before-group-long", "on-cron", "after-verb", "after-verb-long", "ls-after-verb"],
)
def test_server_flag_is_accepted_anywhere(tmp_path, argv):
    env = make_env(tmp_path, RK_NOW=str(T0))
    _two_servers(env)
    assert [r["id"] for r in json_ok(run_in(argv, env))] == ["w001", "w002"]


def test_server_flag_anywhere_through_real_processes(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    _two_servers(env)
    for argv in (
        ["-L", "work", "cron", "list", "--json"],
        ["cron", "list", "-L", "work", "--json"],
        ["cron", "-L", "work", "list", "--json"],
    ):
        assert [r["id"] for r in json_ok(run_sub(argv, env))] == ["w001", "w002"], argv
    assert [r["id"] for r in json_ok(run_sub(["cron", "list", "--json"], env))] == ["e001", "e002"]


def test_server_defaults_to_the_socket_of_tmux_else_default(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    _two_servers(env)
    in_work = dict(env, TMUX="/tmp/tmux-1000/work,123,0")
    assert [r["id"] for r in json_ok(run_sub(["cron", "list", "--json"], in_work))] == ["w001", "w002"]
    assert [r["id"] for r in json_ok(run_in(["cron", "list", "--json"], env))] == ["e001", "e002"]
    assert [r["id"] for r in json_ok(run_in(["cron", "list", "--json", "-L", "default"], in_work))] == ["e001", "e002"]
    # mutations go to the same file
    new = add_json(in_work, "p", "--every", "5m", "--role", "op")["id"]
    assert [e["id"] for e in load_yaml(state_of(env) / "work.yaml")["entries"]] == ["w001", "w002", new]
    other = add_json(env, "p", "--every", "5m", "--role", "op", "-L", "third")["id"]
    assert [e["id"] for e in load_yaml(state_of(env) / "third.yaml")["entries"]] == [other]
    assert json_ok(run_in(["cron", "mute", "w001", "--json"], in_work)) == {"id": "w001", "muted": True}
    assert run_in(["cron", "mute", "w001"], env).code == 1  # not on the default server


def test_tick_without_server_flag_sweeps_every_server_and_with_it_only_one(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0), TMUX="/tmp/tmux-1000/alpha,1,0")
    for slug in ("alpha", "beta", "gamma"):
        populate(state_of(env), slug)

    def servers(res) -> list[str]:
        assert res.code == (1 if "server-not-live" in res.out else 0), res  # a dead server it had to tick
        return [d["server"] for d in json.loads(res.out)["result"]["diagnostics"] if d["reason"] == "server-not-live"]

    assert servers(run_sub(["cron", "tick", "--json"], env)) == ["alpha", "beta", "gamma"]
    assert servers(run_in(["cron", "tick", "--json", "-L", "beta"], env)) == ["beta"]
    assert servers(run_in(["-L", "gamma", "cron", "tick", "--json"], env)) == ["gamma"]
    assert servers(run_in(["cron", "-L", "nothere", "tick", "--json"], env)) == []


def test_tick_with_server_flag_sweeps_only_that_live_server(tmp_path, tmux_server):
    env = make_env(tmp_path, RK_NOW=str(T0))
    live = tmux_server.name
    add_json(env, "p", "--every", "1h", "--pane", "%999", "-L", live)
    populate(state_of(env), "ghost")
    everything = json_ok(run_sub(["cron", "tick", "--json"], env))
    assert everything["servers_swept"] == 1
    assert ("ghost", "server-not-live") in [(d["server"], d["reason"]) for d in everything["diagnostics"]]
    only_live = json_ok(run_sub(["cron", "tick", "-L", live, "--json"], env))
    assert only_live["servers_swept"] == 1 and all(d["server"] == live for d in only_live["diagnostics"])
    asked = run_in(["cron", "tick", "--json", "-L", "ghost"], env)
    assert asked.code == 1, asked  # the server asked for could not be ticked
    only_ghost = json.loads(asked.out)["result"]
    assert only_ghost["servers_swept"] == 0 and [d["server"] for d in only_ghost["diagnostics"]] == ["ghost"]


# --------------------------------------------------------------------------- 6. RK_NOW


@pytest.mark.parametrize(
    "now", [str(T0), "2027-01-15T09:00:00+01:00", "2027-01-15T08:00:00Z", "2027-01-15T03:00:00-05:00"]
)
@pytest.mark.slow  # a real process each
def test_rk_now_sets_created_by_at(tmp_path, now):
    env = make_env(tmp_path, RK_NOW=now)
    entry = add_json(env, "p", "--every", "5m", "--role", "op", run=run_sub)["id"]
    assert entry_raw(state_of(env), entry)["created_by"] == {"at": T0}


def test_rk_now_governs_mute_leases(tmp_path):
    env = make_env(tmp_path, RK_NOW="2027-01-15T09:00:00+01:00")
    populate(state_of(env))
    assert json_ok(run_sub(["cron", "mute", "e001", "--for", "30m", "--json"], env))["until"] == T0 + 1800
    assert entry_raw(state_of(env), "e001")["muted_until"] == T0 + 1800
    at = lambda t: dict(env, RK_NOW=str(t))  # noqa: E731
    live = json_ok(run_in(["cron", "show", "e001", "--json"], at(T0 + 1799)))
    assert live["muted"] is True and live["muted_until"] == T0 + 1800
    lapsed = json_ok(run_in(["cron", "show", "e001", "--json"], at(T0 + 1800)))
    assert lapsed["muted"] is False and "muted_until" not in lapsed, "a lease ending exactly now has lapsed"
    assert entry_raw(state_of(env), "e001")["muted_until"] == T0 + 1800, "expiry writes nothing"


def test_rk_now_governs_next(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    entry = add_json(env, "p", "--every", "10m", "--role", "op")["id"]
    fires = json_ok(
        run_in(["cron", "next", entry, "-n", "2", "--json"], dict(env, RK_NOW="2027-01-15T09:05:00+01:00"))
    )["fires"]
    assert [f["ts"] for f in fires] == [T0 + 600, T0 + 1200]


def test_an_unreadable_rk_now_is_a_usage_error_for_tick(tmp_path, tmux_server):
    env = make_env(tmp_path, RK_NOW=str(T0))
    add_json(env, "p", "--every", "1m", "--pane", "%999", "-L", tmux_server.name)
    before = snapshot(state_of(env))
    res = run_sub(["cron", "tick"], dict(env, RK_NOW="half past nine"))
    assert res.code == 2, res
    assert "RK_NOW" in one_line_error(res)
    res = run_sub(["cron", "tick", "--json"], dict(env, RK_NOW="half past nine"))
    assert res.code == 2 and "RK_NOW" in json_error(res, "usage"), res
    assert snapshot(state_of(env)) == before


# --------------------------------------------------------------------------- 7. round-trip editing

HEADER = "# rk cron entries, kept by hand\nowner: team-blue   # an unknown top-level key\nentries:\n"
ALFA = """\
  # alfa: mutated by some tests
  - id: alfa
    schedule: {kind: every, interval: 30m0s}
    target: {kind: session, session: s-1}
    payload: alfa   # alfa's last key comment
"""
KEEP = """\
  # keep: never touched
  - payload: "keep me"   # inline comment
    id: keep
    schedule:
      interval: 1m0s
      kind: every
    target: {role: op, kind: role}
    x-custom: {owner: alice}
    created_by: {at: 1800000000}   # keep's last key comment
"""
OTHR = """\
  # othr: mutated by other tests
  - name: other
    id: othr
    schedule: {kind: backoff, min: 1m0s, max: 10m0s}
    wake_on: {event: agent-state-change, scope: server, debounce: 5s}
    target: {kind: pane, pane: "%7"}
    payload: other
    if_absent: respawn
    respawn: [rk, operator, -L, "{server}"]
    created_by: {at: 1800000000}
    unknown_tail: 42
"""
TRAILER = "# trailer comment\n"
HAND_FILE = HEADER + ALFA + KEEP + OTHR + TRAILER

ROUND_TRIP_OPS = {
    "mute": ["mute"],
    "mute-for": ["mute", "--for", "30m"],
    "mute-off": ["mute", "--off"],
    "pin": ["pin"],
    "pin-off": ["pin", "--off"],
    "edit-name": ["edit", "--name", "renamed"],
    "edit-every": ["edit", "--every", "2m"],
    "edit-deliver": ["edit", "--deliver", "when-idle"],
    "edit-wake-on": ["edit", "--wake-on", "agent-state-change"],
    "rm": ["rm"],
}


def _hand_state(tmp_path, now=T0):
    env = make_env(tmp_path, RK_NOW=str(now))
    write_private(state_of(env) / "default.yaml", HAND_FILE)
    return env


@pytest.mark.parametrize("victim", ["alfa", "othr"])
@pytest.mark.parametrize("op", list(ROUND_TRIP_OPS))
def test_mutating_one_entry_leaves_another_entrys_text_and_the_comments_intact(tmp_path, op, victim):
    env = _hand_state(tmp_path)
    verb, *flags = ROUND_TRIP_OPS[op]
    res = run_in(["cron", verb, victim, *flags], env)
    assert res.code == 0, res
    text = (state_of(env) / "default.yaml").read_text()
    assert text.startswith(HEADER), f"header changed:\n{text}"
    assert KEEP in text, f"the untouched entry's block (with its comments) changed:\n{text}"
    assert text.endswith(TRAILER), f"trailer comment lost:\n{text}"
    entries = load_yaml(state_of(env) / "default.yaml")["entries"]
    assert [e["id"] for e in entries] == [i for i in ("alfa", "keep", "othr") if not (op == "rm" and i == victim)]
    keep = next(e for e in entries if e["id"] == "keep")
    assert keep["x-custom"] == {"owner": "alice"}
    if op != "rm" and victim == "othr":
        othr = next(e for e in entries if e["id"] == "othr")
        assert othr["unknown_tail"] == 42, "unknown keys of the mutated entry survive"
        if not op.startswith("edit-every"):
            assert "{kind: backoff, min: 1m0s, max: 10m0s}" in text, "untouched values keep their exact text"
        if op != "edit-wake-on":
            assert othr["wake_on"] == {"event": "agent-state-change", "scope": "server", "debounce": "5s"}


def _log(env) -> str:
    path = state_of(env) / "default.log"
    return path.read_text() if path.exists() else ""


RESCHEDULING_EDITS = {
    "every": ["--every", "2m"],
    "idle-every": ["--idle-every", "3m"],
    "backoff-defaults": ["--backoff"],
    "cron": ["--cron", "0 9 * * *"],
    "cron-catch-up": ["--cron", "0 9 * * *", "--catch-up", "once"],
    "deliver": ["--deliver", "skip-if-busy"],
    "schedule-and-name": ["--every", "2m", "--name", "x"],
    "schedule-and-deliver": ["--every", "2m", "--deliver", "when-idle"],
}


@pytest.mark.parametrize("edit", list(RESCHEDULING_EDITS))
def test_a_schedule_or_deliver_edit_appends_exactly_one_rescheduled_line(tmp_path, edit):
    env = _hand_state(tmp_path, now=T0 + 123)
    assert run_in(["cron", "edit", "othr", *RESCHEDULING_EDITS[edit]], env).code == 0
    assert _log(env) == '{"ts":1800000123,"entry":"othr","target":"","reason":"edit","outcome":"rescheduled"}\n'


NON_RESCHEDULING_EDITS = {
    "name": ["--name", "renamed"],
    "if-absent-notify": ["--if-absent", "notify"],
    "if-absent-skip": ["--if-absent", "skip"],
    "respawn": ["--respawn", "other-cmd"],
    "wake-on": ["--wake-on", "agent-state-change", "--wake-debounce", "2m"],
    "wake-on-none": ["--wake-on", "none"],
    "same-backoff-in-short-form": ["--backoff", "--min", "1m", "--max", "10m"],
    "deliver-empty-to-immediate": ["--deliver", "immediate"],  # "" reads as immediate
}


@pytest.mark.parametrize("edit", list(NON_RESCHEDULING_EDITS))
def test_name_if_absent_respawn_wake_on_and_no_op_edits_append_nothing(tmp_path, edit):
    env = _hand_state(tmp_path)
    res = run_in(["cron", "edit", "othr", *NON_RESCHEDULING_EDITS[edit]], env)
    assert res.code == 0, res
    assert _log(env) == ""


def test_an_identical_schedule_edit_of_a_go_form_duration_appends_nothing(tmp_path):
    env = _hand_state(tmp_path)
    assert run_in(["cron", "edit", "keep", "--every", "1m"], env).code == 0  # stored as 1m0s
    assert _log(env) == ""


def test_an_empty_deliver_edited_to_immediate_is_written_but_reschedules_nothing(tmp_path):
    """The Go original logged `rescheduled` here (a plain value comparison); "" reads as immediate."""
    env = _hand_state(tmp_path)
    assert run_sub(["cron", "edit", "keep", "--deliver", "immediate"], env).code == 0
    assert run_sub(["cron", "edit", "keep", "--deliver", "immediate"], env).code == 0
    assert _log(env) == ""
    assert entry_raw(state_of(env), "keep")["deliver"] == "immediate"


def test_if_absent_other_than_respawn_clears_the_respawn_argv(tmp_path):
    env = _hand_state(tmp_path)
    assert run_in(["cron", "edit", "othr", "--if-absent", "skip"], env).code == 0
    raw = entry_raw(state_of(env), "othr")
    assert raw["if_absent"] == "skip" and "respawn" not in raw
    record = json_ok(run_in(["cron", "show", "othr", "--json"], env))
    assert record["if_absent"] == "skip" and record["respawn"] == []


def test_respawn_edit_replaces_the_whole_argv(tmp_path):
    env = _hand_state(tmp_path)
    assert run_in(["cron", "edit", "othr", "--respawn", "new", "--respawn", "{server}"], env).code == 0
    assert entry_raw(state_of(env), "othr")["respawn"] == ["new", "{server}"]


def test_backoff_with_only_min_resets_max_to_30m(tmp_path):
    env = _hand_state(tmp_path)
    assert run_in(["cron", "edit", "othr", "--backoff", "--min", "2m"], env).code == 0
    record = json_ok(run_in(["cron", "show", "othr", "--json"], env))
    assert record["schedule"] == {"kind": "backoff", "min": "2m0s", "max": "30m0s"}
    assert record["schedule_summary"] == "backoff 2m→30m"


def test_wake_on_edit_replaces_the_block_with_defaults_and_none_removes_it(tmp_path):
    env = _hand_state(tmp_path)
    assert run_in(["cron", "edit", "othr", "--wake-on", "agent-state-change"], env).code == 0
    assert entry_raw(state_of(env), "othr")["wake_on"]["debounce"] in ("1m", "60s", "1m0s")
    assert json_ok(run_in(["cron", "show", "othr", "--json"], env))["wake_on"]["debounce"] == "1m0s"
    assert run_in(["cron", "edit", "othr", "--wake-on", "off"], env).code == 0
    assert "wake_on" not in entry_raw(state_of(env), "othr")
    assert json_ok(run_in(["cron", "show", "othr", "--json"], env))["wake_on"] is None


def test_edit_keeps_mute_pin_target_and_creator(tmp_path):
    env = _hand_state(tmp_path)
    run_in(["cron", "mute", "othr", "--for", "1h"], env)
    run_in(["cron", "pin", "othr"], env)
    before = entry_raw(state_of(env), "othr")
    assert run_in(["cron", "edit", "othr", "--every", "9m", "--name", "n"], env).code == 0
    after = entry_raw(state_of(env), "othr")
    for key in ("muted_until", "pinned", "target", "created_by", "payload", "id"):
        assert after[key] == before[key], key


def test_a_change_waits_lock_wait_seconds_for_a_held_lock_then_exits_1(tmp_path):
    from rk.host.lock import locked

    env = dict(_hand_state(tmp_path), RK_LOCK_WAIT="2")
    state = state_of(env)
    before = (state / "default.yaml").read_bytes()
    with locked(state / "default.lock"):
        started = time.monotonic()
        res = run_sub(["cron", "edit", "othr", "--every", "2m"], env)
        waited = time.monotonic() - started
        json_res = run_sub(["cron", "edit", "othr", "--every", "2m", "--json"], env)
        mute = run_sub(["cron", "mute", "othr"], env)
    assert res.code == 1 and mute.code == 1, (res, mute)
    note, error = res.err.splitlines()
    assert note == "rk: waiting for the tick on server default to finish"
    assert error.startswith("rk: server default is busy: a tick is running (") and error.endswith("try again")
    assert 2.0 <= waited < 10, f"waited {waited:.2f}s"
    assert json_res.code == 1 and json_error(json_res, "operational").startswith("server default is busy")
    assert (state / "default.yaml").read_bytes() == before and _log(env) == ""
    assert run_sub(["cron", "edit", "othr", "--every", "2m"], env).code == 0, "free again"


def test_a_change_waits_for_a_tick_to_finish_and_then_lands(tmp_path):
    """The tick holds the lock while it delivers; a change made meanwhile waits, then applies."""
    import threading

    from rk.host.lock import locked

    env = _hand_state(tmp_path)
    state = state_of(env)
    held, release = threading.Event(), threading.Event()

    def tick_like():
        with locked(state / "default.lock"):
            held.set()
            release.wait(20)

    holder = threading.Thread(target=tick_like)
    holder.start()
    held.wait(5)
    proc = subprocess.Popen(
        [sys.executable, "-m", "rk", "cron", "mute", "othr"],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    note = proc.stderr.readline()  # returns once the command found the lock held
    assert note == "rk: waiting for the tick on server default to finish\n"
    assert "muted" not in (state / "default.yaml").read_text()
    release.set()
    holder.join()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert out.strip() == "muted othr"
    assert "muted: true" in (state / "default.yaml").read_text()


def test_edit_with_an_unreadable_rk_now_writes_nothing(tmp_path):
    env = _hand_state(tmp_path)
    res = run_sub(["cron", "edit", "othr", "--every", "2m"], dict(env, RK_NOW="soon"))
    assert res.code == 2, res
    assert (state_of(env) / "default.yaml").read_text() == HAND_FILE
    assert _log(env) == ""


# --------------------------------------------------------------------------- 8. default target inside tmux


def _inside(env, server, pane) -> dict:
    pid = server.run("display-message", "-p", "#{pid}").strip()
    return dict(env, TMUX=f"{server.path},{pid},0", TMUX_PANE=pane)


def _first_pane(server) -> str:
    return server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]


def test_inside_tmux_the_window_role_is_the_default_target(tmp_path, tmux_server):
    pane = _first_pane(tmux_server)
    tmux_server.run("set-option", "-w", "-t", pane, "@rk_win_role", "operator")
    tmux_server.set_pane_option(pane, "@rk_pane_agent_session", "sess-42")
    env = _inside(make_env(tmp_path, RK_NOW=str(T0)), tmux_server, pane)
    res = run_sub(["cron", "add", "tick please", "--every", "5m"], env)
    assert res.code == 0, res
    line, forecast = res.out.splitlines()
    m = RECEIPT_RE.match(line)
    assert m and m["target"] == "role:operator", res
    assert forecast.startswith("next: - (target missing: ") and "no agent in pane" in forecast  # the pane runs cat
    raw = entry_raw(state_of(env), m["id"], slug=tmux_server.name)  # the server of $TMUX
    assert raw["target"] == {"kind": "role", "role": "operator"}
    assert raw["created_by"] == {"session": "sess-42", "pane": pane, "at": T0}


def test_inside_tmux_without_a_role_the_pane_not_its_agent_session_is_the_default_target(tmp_path, tmux_server):
    # The Go original took the pane's session here; a session ends when its agent quits and the
    # agent started again is another one, so such an entry never fired (issue 27): the pane it is.
    pane = _first_pane(tmux_server)
    tmux_server.set_pane_option(pane, "@rk_pane_agent_session", "sess-42")
    env = _inside(make_env(tmp_path, RK_NOW=str(T0)), tmux_server, pane)
    receipt = add_json(env, "p", "--every", "5m", run=run_sub)
    assert receipt["target"] == f"pane:{pane}"
    raw = entry_raw(state_of(env), receipt["id"], slug=tmux_server.name)
    assert raw["target"]["kind"] == "pane" and raw["target"]["pane"] == pane
    assert raw["created_by"] == {"session": "sess-42", "pane": pane, "at": T0}


def test_inside_tmux_without_role_or_session_the_pane_is_the_default_target(tmp_path, tmux_server):
    pane = _first_pane(tmux_server)
    env = _inside(make_env(tmp_path, RK_NOW=str(T0)), tmux_server, pane)
    receipt = add_json(env, "p", "--every", "5m", run=run_sub)
    assert receipt["target"] == f"pane:{pane}"
    raw = entry_raw(state_of(env), receipt["id"], slug=tmux_server.name)
    assert raw["created_by"] == {"pane": pane, "at": T0}


def test_inside_tmux_an_explicit_target_still_records_the_callers_session(tmp_path, tmux_server):
    pane = _first_pane(tmux_server)
    tmux_server.set_pane_option(pane, "@rk_pane_agent_session", "sess-42")
    env = _inside(make_env(tmp_path, RK_NOW=str(T0)), tmux_server, pane)
    receipt = add_json(env, "p", "--every", "5m", "--role", "reviewer", run=run_sub)
    assert receipt["target"] == "role:reviewer"
    raw = entry_raw(state_of(env), receipt["id"], slug=tmux_server.name)
    assert raw["created_by"] == {"session": "sess-42", "pane": pane, "at": T0}


def test_outside_tmux_created_by_is_only_at(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    receipt = add_json(env, "p", "--every", "5m", "--pane", "%3")
    assert entry_raw(state_of(env), receipt["id"])["created_by"] == {"at": T0}


# --------------------------------------------------------------------------- 9. private files


def test_state_dir_is_0700_and_every_file_0600_whatever_the_umask(tmp_path, tmux_server):
    env = make_env(tmp_path, RK_NOW=str(T0))
    state = state_of(env)
    live = tmux_server.name
    res = run_sub(
        [
            "cron",
            "add",
            "p",
            "--every",
            "1m",
            "--pane",
            "%999",
            "--wake-on",
            "agent-state-change",
            "-L",
            live,
            "--json",
        ],
        env,
        umask=0,
    )
    entry = json_ok(res)["id"]
    assert mode(state) == 0o700 and mode(state / f"{live}.yaml") == 0o600
    assert run_sub(["cron", "edit", entry, "--every", "2m", "-L", live], env, umask=0).code == 0
    assert mode(state / f"{live}.log") == 0o600 and mode(state / f"{live}.lock") == 0o600
    assert run_sub(["cron", "mute", entry, "-L", live], env, umask=0).code == 0
    assert mode(state / f"{live}.yaml") == 0o600
    assert run_sub(["cron", "tick", "-L", live], dict(env, RK_NOW=str(T0 + 600)), umask=0).code == 0
    assert (state / f"{live}.cursor.yaml").exists()
    for p in state.iterdir():
        assert mode(p) == 0o600, f"{p.name} is {oct(mode(p))}"


def test_an_existing_loose_state_dir_and_file_are_tightened(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    state = state_of(env)
    state.mkdir(mode=0o755)
    state.chmod(0o755)
    (state / "default.yaml").write_text(POPULATED_YAML)
    (state / "default.yaml").chmod(0o644)
    assert run_sub(["cron", "mute", "e001"], env).code == 0
    assert mode(state) == 0o700 and mode(state / "default.yaml") == 0o600


# --------------------------------------------------------------------------- wake-only entries, any_program


def test_a_wake_only_entry_has_no_schedule_of_its_own(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    receipt = add_json(env, "continue", "--wake-on", "limit-reset", "--pane", "%3")
    assert receipt["schedule"] == "wake only"
    raw = entry_raw(state_of(env), receipt["id"])
    assert "schedule" not in raw and raw["wake_on"]["event"] == "limit-reset"
    listed = run_in(["cron", "list"], env)
    assert "on limit-reset" in listed.out
    record = json_ok(run_in(["cron", "show", receipt["id"], "--json"], env))
    assert record["schedule"] == {"kind": "none"} and record["wake_on"]["event"] == "limit-reset"
    upcoming = run_in(["cron", "next", receipt["id"]], env)
    assert upcoming.code == 0 and "no time of its own: it fires on limit-reset only" in upcoming.out
    assert json_ok(run_in(["cron", "next", receipt["id"], "--json"], env))["fires"] == []


def test_an_unknown_wake_event_is_a_usage_error(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    bad = run_in(["cron", "add", "x", "--wake-on", "lunch", "--pane", "%3"], env)
    assert bad.code == 2 and "--wake-on must be one of agent-state-change, limit-reset" in bad.err
    assert not state_of(env).exists() or not any(state_of(env).iterdir())


def test_any_program_is_set_at_add_and_changed_by_edit(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    receipt = add_json(env, "print(1)", "--every", "5m", "--pane", "%3", "--any-program")
    assert entry_raw(state_of(env), receipt["id"])["any_program"] is True
    assert "any-program" in run_in(["cron", "list"], env).out
    assert "types into: any program but a shell" in run_in(["cron", "show", receipt["id"]], env).out
    json_ok(run_in(["cron", "edit", receipt["id"], "--agents-only", "--json"], env))
    assert "any_program" not in entry_raw(state_of(env), receipt["id"])
    assert json_ok(run_in(["cron", "show", receipt["id"], "--json"], env))["any_program"] is False
    plain = add_json(env, "status?", "--every", "5m", "--pane", "%4")
    assert "any_program" not in entry_raw(state_of(env), plain["id"])  # the default is not written
