"""`make mutants`: one-line breakages of rk's rules, each of which the suite must catch.

Every mutant below breaks one rule of specs/cron.md ("Where each rule lives") or
one step of the at-most-once delivery (rk/act/intents.py's journal and recovery),
by replacing one exact snippet of a source file. For each, in a copy of the
checkout (the tree here is never modified), the mutant's narrow test selection
runs with a timeout: a failing run kills it, a passing one is a survivor, which
means that rule has no test that can fail. The run ends with the kill ratio.

    .venv/bin/python tools/mutants.py            # all
    .venv/bin/python tools/mutants.py -k ladder  # those whose name holds "ladder"
    .venv/bin/python tools/mutants.py --list

Exit status: 0 when every mutant was killed, 1 with survivors, 2 when a mutant's
snippet is no longer in its file exactly once (the list needs updating) or the
unmutated selection already fails.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The pure suites of the core's rules: seconds, no tmux, no processes.
CORE = (
    "tests/test_units.py",
    "tests/test_scenarios.py",
    "tests/test_log.py",
    "tests/test_boundaries.py",
    "tests/test_identity_core.py",
    "tests/test_placeholders.py",
    "tests/test_program.py",
    "tests/test_time_features.py",
    "tests/test_edits.py",
    "tests/test_dst_inputs.py",
    "tests/test_recheck.py",
    "tests/test_self_resume.py",
    "-m",
    "not tmux and not shell and not slow",
)
#: The pure suites of the rules that make prompts pay their way (specs/cron.md, specs/usage.md).
PURE = ("-m", "not tmux and not shell and not slow and not agents")
CAPS = ("tests/test_caps.py", *PURE)
#: The forecast on every day (issue 27 item 11): daylight saving, an unseen pause, `{missed}`, repeated times.
EVERY_DAY = ("tests/test_dst_hours.py", "tests/test_forecast_walk.py", *PURE)
TIMEOUTS = ("tests/test_turn_timeout.py", *PURE)
UNCHANGED = ("tests/test_unchanged.py", *PURE)
#: The frames the real CLIs draw as a turn ends, and the tick that waits them out (~5 s).
TURN_ENDS = ("tests/test_only_if_changed_frames.py",)
BUDGETS = ("tests/test_usage.py", *PURE)
#: The pure rules of invisible characters in a prompt.
INVISIBLE_PURE = ("tests/test_invisible_chars.py", "-m", "not tmux and not shell")
#: wake_from and who started a turn (the pure tests and the simulated scenario).
WAKE_FROM = ("tests/test_wake_from.py", "-m", "not tmux and not shell and not slow")
#: The views' fast path and typer, side by side (~30 s).
FASTPATH = ("tests/test_startup_fastpath.py",)
#: A tick killed at each moment of a delivery, into an agent-like app (~30 s).
AT_MOST_ONCE = ("tests/test_at_most_once.py",)
#: Claude Code's session registry: the verdict and each check, with real processes (~5 s).
CLAUDE_SESSIONS = ("tests/test_claude_sessions.py",)


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...] = CORE


MUTANTS = [
    # -- at most once: the journal and the recovery (rk/act/intents.py, rk/engine/recovery.py) ---------------
    Mutant(
        "recovery switched off",
        "rk/engine/tick.py",
        "        unlogged = recover_intents(server, files, out, panes)\n",
        "        unlogged = set()\n",
        AT_MOST_ONCE,
    ),
    Mutant(
        "recovery: the enter decision inverted",
        "rk/act/intents.py",
        'if fingerprint(now) != record.get("pasted"):',
        'if fingerprint(now) == record.get("pasted"):',
        AT_MOST_ONCE,
    ),
    Mutant(
        "journal: no paste write before the paste",
        "rk/act/deliver.py",
        'self.journal(phase="paste", before=baseline.norm.count(self.needle))',
        "pass",
        AT_MOST_ONCE,
    ),
    Mutant(
        "journal: no enter write before Enter",
        "rk/act/deliver.py",
        'self.journal(phase="enter", pasted=fingerprint(shown))',
        "pass",
        AT_MOST_ONCE,
    ),
    Mutant(
        "pending marker: a crashed delivery's leftover not cleared",
        "rk/act/deliver.py",
        "leftover = [os.path.exists(marker) and not run.clear_leftover(target)]",
        "leftover = [False]",
        AT_MOST_ONCE,
    ),
    Mutant(
        "pending marker: never removed after a delivery",
        "rk/act/deliver.py",
        "                with contextlib.suppress(OSError):\n                    os.unlink(marker)\n",
        "                pass\n",
        AT_MOST_ONCE,
    ),
    Mutant(
        "recovery: a paste shown unsent is never submitted",
        "rk/act/intents.py",
        'if now.norm.count(needle) <= int(record.get("before", 0) or 0) or not echo.holds(echo.look(run, pane)):',
        "if True:",
        AT_MOST_ONCE,
    ),
    Mutant(
        "recovery: a paste counts without appearing more often than before",
        "rk/act/intents.py",
        'if now.norm.count(needle) <= int(record.get("before", 0) or 0) or not echo.holds(echo.look(run, pane)):',
        "if not echo.holds(echo.look(run, pane)) and False:",
        AT_MOST_ONCE,
    ),
    Mutant(
        "recovery: an intent already logged is logged again",
        "rk/engine/recovery.py",
        "if logged.get(entry, -1) >= ts:",
        "if False:",
        (
            "tests/test_tick.py::test_a_journal_write_cut_short_is_swept_and_an_intent_already_logged_is_not_logged_again",
        ),
    ),
    Mutant(
        "recovery: the done outcome ignored",
        "rk/act/intents.py",
        'if phase == "done":\n        return',
        'if phase == "done" and False:\n        return',
        AT_MOST_ONCE,
    ),
    # -- due: every, cron, at, the clock --------------------------------------------------------------
    Mutant(
        "every: due one second late",
        "rk/core/schedule/verdict.py",
        "due=now >= due_at, due_at=due_at",
        "due=now > due_at, due_at=due_at",
    ),
    Mutant(
        "every's anchor: the newest own line ignored",
        "rk/core/schedule/verdict.py",
        "return newest.ts if newest is not None else entry.created_by.at",
        "return entry.created_by.at",
    ),
    Mutant(
        "cron grace: its last second lost",
        "rk/core/schedule/verdict.py",
        "    if now - occurrence <= window:",
        "    if now - occurrence < window:",
    ),
    Mutant("CRON_GRACE one minute longer", "rk/core/schedule/grace.py", "CRON_GRACE = 120", "CRON_GRACE = 180"),
    Mutant(
        "HOLD_WINDOW one minute longer",
        "rk/core/schedule/grace.py",
        "HOLD_WINDOW = 2 * 3600",
        "HOLD_WINDOW = 2 * 3600 + 60",
    ),
    Mutant(
        "catch-up window: its last second lost",
        "rk/core/schedule/verdict.py",
        "(not sched.catch_up_within or now - occurrence <= sched.catch_up_within)",
        "(not sched.catch_up_within or now - occurrence < sched.catch_up_within)",
    ),
    Mutant(
        "at: grace's last second lost", "rk/core/schedule/verdict.py", "    if late <= window:", "    if late < window:"
    ),
    Mutant(
        "clock set back: no skew allowance",
        "rk/core/schedule/verdict.py",
        "return anchor_of(entry, log) > now + poll",
        "return anchor_of(entry, log) > now",
    ),
    Mutant(
        "clock set back: the skew allowance's edge taken as back",
        "rk/core/schedule/verdict.py",
        "return anchor_of(entry, log) > now + poll",
        "return anchor_of(entry, log) >= now + poll",
    ),
    Mutant(
        "quiet hours read in the ticker's zone",
        "rk/core/schedule/due.py",
        "    if hours is None or hours.active_at(sweep.now, sweep.zone_of(entry)):",
        "    if hours is None or hours.active_at(sweep.now, sweep.zone):",
    ),
    Mutant(
        "quiet hours: a range's end inside it",
        "rk/core/schedule/hours.py",
        "if start < end and start <= minute < end:",
        "if start < end and start <= minute <= end:",
    ),
    Mutant(
        "quiet hours: an opening on the first pass of a fall-back only",
        "rk/core/schedule/hours.py",
        "    for fold in (0, 1):",
        "    for fold in (0,):",
        EVERY_DAY,
    ),
    Mutant(
        "quiet hours: a gap's end taken as an opening though it lands outside every range",
        "rk/core/schedule/hours.py",
        "return self.active_at(instant, zone) and (instant in starts or not self.active_at(instant - 1, zone))",
        "return instant in starts or not self.active_at(instant - 1, zone)",
        EVERY_DAY,
    ),
    Mutant(
        "quiet hours: a jump back into a range never an opening",
        "rk/core/schedule/hours.py",
        "        for instant in sorted({*starts, *_jumps_after(ts, zone)}):",
        "        for instant in sorted(starts):",
        EVERY_DAY,
    ),
    Mutant(
        "a pause no tick saw: its occurrences not dropped",
        "rk/core/schedule/due.py",
        "    covered = span is not None and span[0] <= verdict.occurrence < span[1]",
        "    covered = span is not None and span[0] <= verdict.occurrence < span[0]",
        EVERY_DAY,
    ),
    Mutant(
        "the forecast blind to a pause no tick saw",
        "rk/core/schedule/forecast.py",
        "            paused_span=paused_span,\n",
        "",
        EVERY_DAY,
    ),
    Mutant(
        "the tick blind to a pause no tick saw",
        "rk/engine/tick.py",
        "        paused_span=pause_span(files.pause),\n",
        "",
        ("tests/test_dst_hours.py", "-k", "the_tick_drops"),
    ),
    Mutant(
        "resume forgets what the pause covered",
        "rk/store/pause.py",
        "    write_pause(path, pause.since, max(now, pause.since))",
        "    clear_pause(path)",
        EVERY_DAY,
    ),
    Mutant(
        "{missed} counts the occurrences a day cap silenced",
        "rk/core/schedule/placeholders.py",
        "if t == firing or not is_capped(t, nxt, skips, zone)]",
        "if t == firing or not is_capped(t, nxt, [], zone)]",
        EVERY_DAY,
    ),
    Mutant(
        "a repeated wall time printed without its offset",
        "rk/core/wallclock.py",
        '    return f"{text} {which_pass(when)}" if repeated(when) else text',
        "    return text",
        EVERY_DAY,
    ),
    # -- backoff ladder ------------------------------------------------------------------------------
    Mutant(
        "attribution window: its edge not ours",
        "rk/core/schedule/ladder.py",
        "if not history or epoch > history[-1] + ATTRIBUTION_WINDOW:",
        "if not history or epoch >= history[-1] + ATTRIBUTION_WINDOW:",
    ),
    Mutant(
        "ATTRIBUTION_WINDOW a minute longer",
        "rk/core/schedule/ladder.py",
        "ATTRIBUTION_WINDOW = 120",
        "ATTRIBUTION_WINDOW = 180",
    ),
    Mutant("WALK_LIMIT one less", "rk/core/schedule/ladder.py", "WALK_LIMIT = 32", "WALK_LIMIT = 31"),
    Mutant(
        "ladder tolerance: a third instead of half a rung",
        "rk/core/schedule/ladder.py",
        "return min(ATTRIBUTION_WINDOW, rung_gap // 2)",
        "return min(ATTRIBUTION_WINDOW, rung_gap // 3)",
    ),
    # -- wake edges ----------------------------------------------------------------------------------
    Mutant(
        "wake debounce: its edge still debounced",
        "rk/core/schedule/wake.py",
        "        return WakeVerdict.FROM_RK, observed\n"
        "    if newest_own_ts is not None and now - newest_own_ts < debounce:\n"
        "        return WakeVerdict.DEBOUNCED, previous\n    return WakeVerdict.FIRE, observed\n\n\n#:",
        "        return WakeVerdict.FROM_RK, observed\n"
        "    if newest_own_ts is not None and now - newest_own_ts <= debounce:\n"
        "        return WakeVerdict.DEBOUNCED, previous\n    return WakeVerdict.FIRE, observed\n\n\n#:",
    ),
    Mutant(
        "limit-reset debounce: its edge still debounced",
        "rk/core/schedule/wake.py",
        "    if not (previous.fingerprint == LIMITED or refused) or current != AgentState.IDLE:\n"
        "        return WakeVerdict.IGNORED, observed\n"
        "    if newest_own_ts is not None and now - newest_own_ts < debounce:",
        "    if not (previous.fingerprint == LIMITED or refused) or current != AgentState.IDLE:\n"
        "        return WakeVerdict.IGNORED, observed\n"
        "    if newest_own_ts is not None and now - newest_own_ts <= debounce:",
    ),
    Mutant(
        "limit-reset: a limit to work fires",
        "rk/core/schedule/wake.py",
        "if not (previous.fingerprint == LIMITED or refused) or current != AgentState.IDLE:",
        "if not (previous.fingerprint == LIMITED or refused):",
    ),
    Mutant(
        "limit-reset: a fire spends its edge at once (a refused resume whose limit no tick saw is lost)",
        "rk/core/schedule/wake.py",
        "return WakeVerdict.FIRE, Observation(fingerprint=RESUMING, observed_at=now)",
        "return WakeVerdict.FIRE, observed",
        ("tests/test_resets.py", "tests/test_scenarios.py", "-k", "resum or limit"),
    ),
    Mutant(
        "limit-reset: a refused resume the journal shows is not fired again",
        "rk/core/schedule/wake.py",
        "refused = resuming and journaled == LIMITED",
        "refused = False",
        ("tests/test_resets.py", "tests/test_scenarios.py", "-k", "resum or limit"),
    ),
    Mutant(
        "limit-reset: a resume the journal shows taking keeps the edge pending",
        "rk/core/schedule/wake.py",
        "    if resuming and not journaled:",
        "    if resuming and journaled != LIMITED:",
        ("tests/test_resets.py", "tests/test_scenarios.py", "-k", "resum or limit"),
    ),
    Mutant(
        "limit-reset: the journal read from before the resume was typed",
        "rk/core/schedule/wake.py",
        "busy = [line.to for line in lines if line.ts >= since and line.to != AgentState.IDLE]",
        "busy = [line.to for line in lines if line.to != AgentState.IDLE]",
        ("tests/test_resets.py",),
    ),
    Mutant("WAKE_DEBOUNCE one second longer", "rk/core/schedule/entry.py", "WAKE_DEBOUNCE = 60", "WAKE_DEBOUNCE = 61"),
    # -- the rate cap -----------------------------------------------------------------------------
    Mutant(
        "rate cap: reached one line late",
        "rk/core/schedule/dispose.py",
        "return view.rate_count(now, target=target, entry=entry) >= limit",
        "return view.rate_count(now, target=target, entry=entry) > limit",
    ),
    Mutant(
        "rate cap keyed by entry for a resolved fire",
        "rk/core/schedule/dispose.py",
        "    if over_rate_cap(view, now, rate_per_hour, target=fire.pane):",
        "    if over_rate_cap(view, now, rate_per_hour, entry=fire.entry):",
    ),
    Mutant(
        "rate cap keyed by pane for an absent fire",
        "rk/core/schedule/dispose.py",
        "        if over_rate_cap(view, now, rate_per_hour, entry=fire.entry):",
        "        if over_rate_cap(view, now, rate_per_hour, target=fire.pane):",
    ),
    Mutant(
        "rate window: its first second left out",
        "rk/core/log/delivery.py",
        "        return sum(1 for ts in stamps if ts >= floor)",
        "        return sum(1 for ts in stamps if ts > floor)",
    ),
    Mutant("RATE_WINDOW a minute longer", "rk/core/log/delivery.py", "RATE_WINDOW = 3600", "RATE_WINDOW = 3660"),
    Mutant(
        "rate cap: a failed attempt not counted",
        "rk/core/log/delivery.py",
        "{Status.DELIVERED, Status.FAILED, Status.NOTIFIED_ABSENT, Status.RESPAWNED, Status.RESPAWN_FAILED}",
        "{Status.DELIVERED, Status.NOTIFIED_ABSENT, Status.RESPAWNED, Status.RESPAWN_FAILED}",
    ),
    # -- dispositions ----------------------------------------------------------------------------
    Mutant(
        "when-idle hold: expires at its edge",
        "rk/core/schedule/dispose.py",
        "if now - since > HOLD_WINDOW:",
        "if now - since >= HOLD_WINDOW:",
    ),
    Mutant(
        "a limit-reset fire does not wait through a limit",
        "rk/core/schedule/dispose.py",
        "    return fire.reason == Reason.WAKE and entry.wake_on is not None",
        "    return False and entry.wake_on is not None",
    ),
    Mutant(
        "if_absent skip notifies",
        "rk/core/schedule/dispose.py",
        "    if policy == IfAbsent.SKIP:\n        return _log(Status.SKIPPED_ABSENT, refused)",
        "    if policy == IfAbsent.SKIP and False:\n        return _log(Status.SKIPPED_ABSENT, refused)",
    ),
    Mutant(
        "a mode unnamed holds nothing",
        "rk/core/schedule/dispose.py",
        'return (mode or "pane-mode") if in_mode else ""',
        'return mode if in_mode else ""',
    ),
    # -- drafts in a pane no layout reads (rk/core/pane/idle_line.py) ------------------------------
    Mutant(
        "idle line: text typed while the agent worked becomes the prompt",
        "rk/core/pane/idle_line.py",
        "    if old is not None and marker and line[0].rstrip().startswith(marker) and is_draft(old, line):\n",
        "    if False:\n",
        ("tests/test_drafts_turn.py",),
    ),
    Mutant(
        "idle line: the tick learns only its targets' (a send's first look takes a draft for the prompt)",
        "rk/engine/tick.py",
        "learn_idle_lines(server, panes, {p.pane_id for p in panes}, out.looks)",
        "learn_idle_lines(server, panes, ids, out.looks)",
        ("tests/test_drafts_turn.py",),
    ),
    # -- looks and rechecks ------------------------------------------------------------------------
    Mutant(
        "STALE_AFTER: a busy pane looked at on its edge",
        "rk/core/pane/look.py",
        "        return now - pane.epoch > STALE_AFTER\n",
        "        return now - pane.epoch >= STALE_AFTER\n",
    ),
    Mutant(
        "look.LIMIT_RETRY: a limit over one second late",
        "rk/core/pane/look.py",
        "now - pane.epoch >= LIMIT_RETRY",
        "now - pane.epoch > LIMIT_RETRY",
    ),
    Mutant(
        "RECHECK_WINDOW: its last second lost",
        "rk/core/pane/recheck.py",
        "0 <= now - pane.epoch <= RECHECK_WINDOW",
        "0 <= now - pane.epoch < RECHECK_WINDOW",
    ),
    Mutant(
        "DIALOG_WATCH: its last second lost",
        "rk/core/pane/recheck.py",
        "0 <= now - pane.epoch <= DIALOG_WATCH",
        "0 <= now - pane.epoch < DIALOG_WATCH",
    ),
    # -- orphans, placeholders, bounds ------------------------------------------------------------
    Mutant(
        "ORPHAN_TTL: expires one second late",
        "rk/core/schedule/orphan.py",
        "now - since >= ORPHAN_TTL",
        "now - since > ORPHAN_TTL",
    ),
    Mutant("MISSED_CAP one more", "rk/core/log/delivery.py", "MISSED_CAP = 32", "MISSED_CAP = 33"),
    Mutant(
        "MAX_EPOCH: year 9999's last second refused",
        "rk/core/bounds.py",
        "    if not 0 <= value <= MAX_EPOCH:",
        "    if not 0 <= value < MAX_EPOCH:",
    ),
    Mutant(
        "a pane id may carry letters",
        "rk/core/environ.py",
        'text[0] == "%" and text[1:].isascii() and text[1:].isdigit()',
        'text[0] == "%" and text[1:].isascii() and text[1:].isalnum()',
    ),
    # -- the pane: programs, shells, identity ----------------------------------------------------
    Mutant("a shell is not refused", "rk/core/pane/program.py", "    if not _names(proc) & SHELLS:", "    if True:"),
    Mutant(
        "a journal of a restarted server recovered",
        "rk/core/pane/identity.py",
        "    if ServerIdentity(started, server_pid).differs(now):",
        "    if False:",
    ),
    Mutant(
        "a journal of a pane now running another process recovered",
        "rk/core/pane/identity.py",
        "if recorded_pane_pid and pane_pid and recorded_pane_pid != pane_pid:",
        "if False:",
    ),
    Mutant(
        "rk's text read as a tmux format",
        "rk/tmux/server.py",
        'return text.replace("#", "##")',
        "return text",
        ("tests/test_delivery_literal.py", "-m", "not tmux and not shell"),
    ),
    # -- the pane's facts, the echo, the hook, the log of edits -----------------------------------
    Mutant(
        "a recorded pid behind another program not stale",
        "rk/core/pane/facts.py",
        "    if state.pid:\n        return not agent_in_front",
        "    if state.pid:\n        return False",
    ),
    Mutant(
        "a wake entry's panes not all judged",
        "rk/core/pane/facts.py",
        "    if any(e.wake_on is not None for e in entries):",
        "    if False:",
    ),
    Mutant(
        "the echo at a cursor that never moved",
        "rk/act/echo.py",
        "        if f.cursor == self.base_cursor:\n            return False",
        "        if False:\n            return False",
        ("tests/test_boundaries.py", "tests/test_delivery_evidence.py", "-m", "not tmux and not shell and not slow"),
    ),
    Mutant(
        "ESC reaches the pane",
        "rk/core/pane/payload.py",
        r'_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")',
        r'_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f-\x9f\ud800-\udfff]")',
        ("tests/test_delivery.py", "tests/test_delivery_evidence.py", "-m", "not tmux and not slow"),
    ),
    # -- invisible characters in a prompt (tests/test_invisible_chars.py) ---------------------------
    Mutant(
        "echo: invisible characters compared as written",
        "rk/core/pane/payload.py",
        r'_NOISE = re.compile(f"[\\s\u2500-\u259f{INVISIBLE}]+")',
        r'_NOISE = re.compile(f"[\\s\u2500-\u259f]+")',
        INVISIBLE_PURE,
    ),
    Mutant(
        "cells: a zero-width or format character takes one",
        "rk/core/pane/idle_line.py",
        '_NO_CELL = ("Mn", "Me", "Cf")',
        '_NO_CELL = ("Mn", "Me")',
        INVISIBLE_PURE,
    ),
    Mutant(
        "cells: a glyph a ZWJ joins to an emoji takes its own",
        "rk/core/pane/idle_line.py",
        r'    if before == "\u200d" or ',
        "    if False or ",
        INVISIBLE_PURE,
    ),
    Mutant(
        "a bidi control is no reason to refuse a prompt",
        "rk/core/pane/payload.py",
        "        if m.group(1):\n",
        "        if False:\n",
        INVISIBLE_PURE,
    ),
    Mutant(
        "a bidi control is typed",
        "rk/core/pane/payload.py",
        '    text = _unhidden(_CONTROL.sub("", text))',
        '    text = _CONTROL.sub("", text)',
        INVISIBLE_PURE,
    ),
    Mutant(
        "the entries decoder takes a bidi control",
        "rk/core/schedule/decoding.py",
        '    if why := hidden(str(raw.get("payload") or "")):',
        '    if why := "":',
        INVISIBLE_PURE,
    ),
    Mutant(
        "cron add takes a bidi control",
        "rk/cli/receipt.py",
        "    check_visible(payload)\n",
        "",
        INVISIBLE_PURE,
    ),
    Mutant(
        "send takes a bidi control",
        "rk/cli/send.py",
        "    check_visible(prompt)\n",
        "",
        INVISIBLE_PURE,
    ),
    Mutant(
        "back-out: a joined emoji erased a BackSpace per code point",
        "rk/act/echo.py",
        "    if not one_key_each(text):",
        "    if False:",
        ("tests/test_invisible_chars.py", "-k", "joined_text or backspace"),
    ),
    Mutant(
        "events: any number of --pane",
        "rk/cli/events.py",
        "    if len(pane or ()) > MAX_PANES:",
        "    if False:",
        ("tests/test_events_bound.py",),
    ),
    Mutant(
        "an edit of the policy alone logs nothing",
        "rk/core/schedule/edits.py",
        "if new.schedule == old.schedule and new.policy == old.policy:",
        "if new.schedule == old.schedule:",
    ),
    Mutant(
        "the hook's log emptied at LOG_CAP, not past it",
        "rk/agent/hook.py",
        "if st.st_size > LOG_CAP:",
        "if st.st_size >= LOG_CAP:",
        ("tests/test_boundaries.py", "tests/test_agent_hook.py", "-k", "log"),
    ),
    Mutant(
        "the ladder's gap not capped at max",
        "rk/core/schedule/ladder.py",
        "    if rung >= 62 or lo << rung >= hi:\n        return hi",
        "    if rung >= 62:\n        return hi",
    ),
    Mutant(
        "keys sent into a pane mode",
        "rk/tmux/server.py",
        'return ["if-shell", "-F", "-t", target, "#{pane_in_mode}", tmux_words(*refused), tmux_words(*commands)]',
        'return ["if-shell", "-F", "-t", target, "#{pane_in_mode}", tmux_words(*commands), tmux_words(*refused)]',
        ("tests/test_delivery_modes.py",),
    ),
    # -- the rows of "Where each rule lives" the list above left out ---------------------------------
    Mutant(
        "backoff: a working agent nudged",
        "rk/core/schedule/verdict.py",
        "    if target.state == AgentState.ACTIVE:  # quiet means quiet",
        '    if target.state == "nothing":  # quiet means quiet',
    ),
    Mutant(
        "backoff: an epoch from after a clock set back trusted",
        "rk/core/schedule/verdict.py",
        "epoch = target.epoch if target.epoch <= now + poll else anchor_of(entry, log)",
        "epoch = target.epoch",
    ),
    Mutant(
        "FOLD_MARGIN_MIN an hour",
        "rk/core/schedule/cronexpr.py",
        "FOLD_MARGIN_MIN = 180",
        "FOLD_MARGIN_MIN = 60",
        (*CORE[:-2], "tests/test_cron_differential.py", *CORE[-2:]),
    ),
    Mutant(
        "pause: its lapse instant still paused",
        "rk/core/schedule/next_due.py",
        "(paused_until == 0 or now < paused_until)",
        "(paused_until == 0 or now <= paused_until)",
    ),
    Mutant(
        "wake trigger: a pane going active names the wake",
        "rk/core/schedule/wake.py",
        "if after != before and after != AgentState.ACTIVE and (ignore is None or not ignore(pane, after)):\n"
        "            return pane, after",
        "if after != before and (ignore is None or not ignore(pane, after)):\n            return pane, after",
    ),
    Mutant(
        "wake trigger: a burst names the highest pane",
        "rk/core/schedule/wake.py",
        "for pane in sorted(old.keys() | new.keys(), key=pane_order):",
        "for pane in sorted(old.keys() | new.keys(), key=pane_order, reverse=True):",
    ),
    Mutant(
        "placeholders' watermark moved by a wake or manual delivery",
        "rk/core/schedule/placeholders.py",
        "    delivered = view.last_delivered(entry.id, Reason.SCHEDULE)",
        "    delivered = view.last_delivered(entry.id)",
    ),
    Mutant(
        "placeholders: the newest owed occurrence left out",
        "rk/core/schedule/placeholders.py",
        "while t is not None and t <= upto and len(out) <= MISSED_CAP:",
        "while t is not None and t < upto and len(out) <= MISSED_CAP:",
    ),
    Mutant(
        "the DST rule never stated",
        "rk/core/schedule/implied.py",
        "    if len(offsets) < 2:",
        "    if len(offsets) < 3:",
        (*CORE[:-2], "tests/test_cli.py", "-k", "dst or daylight"),
    ),
    Mutant(
        "health: a limit counted as trouble",
        "rk/core/schedule/health.py",
        "return why is not None and not why.startswith(CHOSEN + PASSING)",
        "return why is not None and not why.startswith(CHOSEN)",
        ("tests/test_forecast.py", "tests/test_operator_view.py", *PURE),
    ),
    Mutant(
        "next_due: a held wake edge due a second late",
        "rk/core/schedule/next_due.py",
        "            consider(newest.ts + entry.wake_on.debounce)",
        "            consider(newest.ts + entry.wake_on.debounce + 1)",
        (*CORE[:-2], "tests/test_forecast.py", *CORE[-2:]),
    ),
    Mutant(
        "forecast: a working agent never taken to rest",
        "rk/core/schedule/forecast.py",
        "return replace(target, state=AgentState.IDLE) if target.resolved and target.state in BUSY_STATES else target",
        "return target",
        ("tests/test_forecast.py", *PURE),
    ),
    Mutant(
        "gaps: an occurrence after a skipped-cap line reads not run",
        "rk/core/schedule/gaps.py",
        "    return any(start <= t < following for t in skips)",
        "    return any(start <= t < following - 86400 for t in skips)",
        CAPS,
    ),
    Mutant(
        "skip-if-busy: a working agent held instead of skipped",
        "rk/core/schedule/dispose.py",
        "    if policy == Deliver.SKIP_IF_BUSY:\n        return _log(Status.SKIPPED_BUSY, blocker)",
        "    if policy == Deliver.SKIP_IF_BUSY:\n        return _hold(blocker, due_at, now)",
    ),
    Mutant(
        "a program that is not an agent typed into",
        "rk/core/pane/facts.py",
        "    if pane.kind == PaneKind.PROGRAM and not any_program:",
        "    if pane.kind == PaneKind.PROGRAM and any_program:",
    ),
    Mutant(
        "the screen's busy read anywhere on screen, not in the live frame",
        "rk/core/pane/screen/engine.py",
        '    busy = _search(layout.rx("working"), live, ink=layout.working_ink)',
        '    busy = _search(layout.rx("working"), lines, ink=layout.working_ink)',
        ("tests/test_screen.py", *PURE),
    ),
    Mutant(
        "a tick that could not append to its log exits 0",
        "rk/engine/result.py",
        "        Diag.LOG_APPEND_FAILED,\n        Diag.CURSOR_WRITE_FAILED,",
        "        Diag.CURSOR_WRITE_FAILED,",
        ("tests/test_tick_faults.py",),
    ),
    Mutant(
        "the hook's input read only once (a split payload loses its state)",
        "rk/agent/hook_event.py",
        "STDIN_BOUND = 1.0",
        "STDIN_BOUND = 0.0",
        ("tests/test_agent_hook.py", "-k", "split or slow"),
    ),
    Mutant(
        "process table: a command line read past MAX_CMDLINE",
        "rk/host/process.py",
        'words = cmdline[:MAX_CMDLINE].split(b"\\0")',
        'words = cmdline.split(b"\\0")',
        ("tests/test_program.py", "-k", "odd_names"),
    ),
    Mutant(
        "process table: one word past MAX_ARGV kept",
        "rk/host/process.py",
        "for w in words[:MAX_ARGV])",
        "for w in words[: MAX_ARGV + 1])",
        ("tests/test_program.py", "-k", "odd_names"),
    ),
    # -- the caller placed from its process tree (rk/core/pane/caller.py, rk/tmux/caller.py) --------------
    Mutant(
        "caller: TMUX_PANE taken as proof of the pane",
        "rk/core/pane/caller.py",
        "matches = [row for row in rows if row.pane_pid == child.pid]",
        "matches = [row for row in rows if row.pane_id == claims.pane] or [r for r in rows if r.pane_pid == child.pid]",
        ("tests/test_caller.py", "-k", "spoofed or hints"),
    ),
    Mutant(
        "caller: the pane's tty not checked",
        "rk/core/pane/caller.py",
        "    if not row.tty or row.tty != child.tty:\n",
        "    if False:\n",
        ("tests/test_caller.py", "-k", "terminal or placed"),
    ),
    Mutant(
        "caller: an unknown tty matches an unknown tty",
        "rk/core/pane/caller.py",
        "    if not row.tty or row.tty != child.tty:\n",
        "    if row.tty != child.tty:\n",
        ("tests/test_caller.py", "-k", "terminal"),
    ),
    Mutant(
        "caller: the process counted as its own tmux server",
        "rk/core/pane/caller.py",
        "    for i in range(1, len(chain)):",
        "    for i in range(0, len(chain)):",
        ("tests/test_caller.py", "-k", "first_server"),
    ),
    Mutant(
        "caller: a socket asked whoever listens on it",
        "rk/tmux/caller.py",
        "    if listener(socket) not in (server_pid, None):\n",
        "    if False:\n",
        ("tests/test_caller.py", "-k", "forged or listener"),
    ),
    Mutant(
        "caller: a server's answer taken whatever pid it prints",
        "rk/tmux/caller.py",
        'if not records or any(format_number(r["pid"]) != server_pid for r in records):',
        "if not records:",
        ("tests/test_caller.py", "-k", "forged or listener"),
    ),
    Mutant(
        "caller: the ancestor chain read without a depth bound",
        "rk/host/process.py",
        "while pid > 1 and pid not in seen and len(chain) < MAX_DEPTH:",
        "while pid > 1 and pid not in seen:",
        ("tests/test_caller.py", "-k", "chain"),
    ),
    # -- the caps, turn timeouts, only-if-changed and budgets (specs/cron.md, specs/usage.md) ------------
    Mutant(
        "day cap reached one delivery late",
        "rk/core/cost/caps.py",
        "        return self.count >= self.limit",
        "        return self.count > self.limit",
        CAPS,
    ),
    Mutant(
        "max_total retires one delivery late",
        "rk/core/cost/caps.py",
        "return bool(entry.max_total) and delivered(log, entry.id) >= entry.max_total",
        "return bool(entry.max_total) and delivered(log, entry.id) > entry.max_total",
        CAPS,
    ),
    Mutant(
        "a day cap's skipped-cap line written every poll",
        "rk/core/schedule/due.py",
        "    if not cap.said and (verdict.due or wake_due):",
        "    if verdict.due or wake_due:",
        CAPS,
    ),
    Mutant(
        "turn timeout: a turn timed out one second early",
        "rk/core/cost/turn_timeout.py",
        "line.target in busy and now - line.ts >= timeout:",
        "line.target in busy and now - line.ts >= timeout - 1:",
        TIMEOUTS,
    ),
    Mutant(
        "turn timeout: a run that began long after the delivery called its own",
        "rk/core/cost/turn_timeout.py",
        "run.rest_from <= line.ts and run.start <= line.ts + START_WINDOW:",
        "run.rest_from <= line.ts:",
        TIMEOUTS,
    ),
    Mutant(
        "only-if-changed: the first fire skipped",
        "rk/core/cost/unchanged.py",
        "    if delivered <= 0:\n        return Verdict.FIRST",
        "    if delivered < 0:\n        return Verdict.FIRST",
        UNCHANGED,
    ),
    Mutant(
        "only-if-changed: a mark taken long after the answer trusted",
        "rk/core/cost/unchanged.py",
        "    if mark.taken - mark.answered > trust_window(poll):",
        "    if mark.taken - mark.answered > 10 * trust_window(poll):",
        UNCHANGED,
    ),
    Mutant(
        "only-if-changed: the status line and the lines to the composer compared",
        "rk/core/pane/screen/rest.py",
        "    kept = [*lines[: _live_top(layout, lines, top)], *lines[top:end]]",
        "    kept = [*lines[:top], *lines[top:end]]",
        TURN_ENDS,
    ),
    Mutant(
        "only-if-changed: a CLI's turn summary compared",
        "rk/core/pane/screen/rest.py",
        "    return [line for line in kept if line.plain.strip() and not any(rx.match(line.plain) for rx in noise)]",
        "    return [line for line in kept if line.plain.strip()]",
        TURN_ENDS,
    ),
    Mutant(
        "only-if-changed: blank lines compared",
        "rk/core/pane/screen/rest.py",
        "    return [line for line in kept if line.plain.strip() and not any(rx.match(line.plain) for rx in noise)]",
        "    return [line for line in kept if not any(rx.match(line.plain) for rx in noise)]",
        TURN_ENDS,
    ),
    Mutant(
        "only-if-changed: a pane still drawing its turn's end called settled",
        "rk/core/cost/unchanged.py",
        "    return screen_state not in BUSY_STATES and now - turn_end >= SETTLE_AFTER",
        "    return now - turn_end >= SETTLE_AFTER",
        TURN_ENDS,
    ),
    Mutant(
        "only-if-changed: SETTLE_AFTER not waited",
        "rk/core/cost/unchanged.py",
        "    return screen_state not in BUSY_STATES and now - turn_end >= SETTLE_AFTER",
        "    return screen_state not in BUSY_STATES",
        TURN_ENDS,
    ),
    Mutant(
        "only-if-changed: a mark taken on an unsettled pane",
        "rk/engine/marks.py",
        "        if not seen.settled:",
        "        if False:",
        TURN_ENDS,
    ),
    Mutant(
        "only-if-changed: a mark put off asks for no recheck",
        "rk/engine/tick.py",
        "        tick.out.recheck = tick.out.recheck or taken.recheck",
        "        tick.out.recheck = tick.out.recheck",
        TURN_ENDS,
    ),
    Mutant(
        "only-if-changed: rechecks asked for long after the turn end",
        "rk/core/cost/unchanged.py",
        "    return 0 <= now - turn_end <= SETTLE_WINDOW",
        "    return 0 <= now - turn_end",
        TURN_ENDS,
    ),
    Mutant(
        "only-if-changed: a manual run skipped",
        "rk/core/schedule/dispose.py",
        "    if not (entry.only_if_changed and seen.unchanged) or fire.reason == Reason.MANUAL:",
        "    if not (entry.only_if_changed and seen.unchanged):",
        UNCHANGED,
    ),
    Mutant(
        "budget reached one token late",
        "rk/core/cost/usage.py",
        "return spent.tokens is not None and spent.tokens >= budget.tokens",
        "return spent.tokens is not None and spent.tokens > budget.tokens",
        BUDGETS,
    ),
    Mutant(
        "budget: an unknown usage goes unsaid",
        "rk/core/schedule/budget.py",
        "    if spent is None or spent.tokens is None:",
        "    if spent is None:",
        BUDGETS,
    ),
    Mutant(
        "budget: the skipped-budget line written every poll",
        "rk/core/schedule/due.py",
        "    if not stop.said:",
        "    if True:",
        BUDGETS,
    ),
    Mutant(
        "budget: the forecast steps over a spent day",
        "rk/core/schedule/budget.py",
        "    return end if _budget_said(entry, log, start) else 0",
        "    return 0",
        BUDGETS,
    ),
    Mutant(
        "TRUST_AFTER: a mark taken on its edge distrusted",
        "rk/core/cost/unchanged.py",
        "    if mark.taken - mark.answered > trust_window(poll):",
        "    if mark.taken - mark.answered >= trust_window(poll):",
    ),
    Mutant(
        "MAX_CAP refused at its edge",
        "rk/core/bounds.py",
        "if not 1 <= value <= MAX_CAP:",
        "if not 1 <= value < MAX_CAP:",
    ),
    Mutant(
        "MAX_BUDGET refused at its edge",
        "rk/core/cost/usage.py",
        "if not 0 < tokens <= MAX_BUDGET:",
        "if not 0 < tokens < MAX_BUDGET:",
    ),
    Mutant(
        "BUDGET_KEEP: its first second dropped by a rotation",
        "rk/core/log/delivery.py",
        "line.entry in budgeted and line.ts >= budget_floor",
        "line.entry in budgeted and line.ts > budget_floor",
    ),
    # -- the status line: rk agent setup tmux, the process's quick exit ---------------------------------
    Mutant(
        "the status segment appended unguarded (a second one each time the file is sourced)",
        "rk/core/channels/tmuxconf.py",
        '["if-shell", "-F", f"#{{m:*{MARK}*,#{{status-right}}}}", "", f\'set -ga status-right " {segment(rk)}"\'],',
        '["set-option", "-ga", "status-right", f" {segment(rk)}"],',
        ("tests/test_setup_tmux.py",),
    ),
    Mutant(
        "an earlier rk block kept beside the new one",
        "rk/core/channels/tmuxconf.py",
        '    rest, _ = strip_block(text)\n    rest = rest.rstrip("\\n")',
        '    rest = text.rstrip("\\n")',
        ("tests/test_setup_tmux.py",),
    ),
    Mutant(
        "the status line's process exits before its output is flushed",
        "rk/__main__.py",
        "            stream.flush()",
        "            pass",
        ("tests/test_statusline.py", "-k", "pipe"),
    ),
    # -- an Enter close behind its paste (Gemini takes it as a newline) -----------------------------
    Mutant(
        "delivery: the Enter pressed inside the layout's paste window",
        "rk/act/echo.py",
        "    run.sleep(_ENTER_GAP.get(echo.agent, 0.0))\n",
        "",
        ("tests/test_delivery_paste_window.py",),
    ),
    Mutant(
        "clear: C-u alone, stopped by the empty row an Enter-as-newline left",
        "rk/act/keys.py",
        '*(("BSpace", "C-u") if attempt else ("C-u",))',
        '"C-u"',
        ("tests/test_delivery_paste_window.py",),
    ),
    # -- a hook's stamp after the Enter: the agent took input ----------------------------------------
    Mutant(
        "delivery: a stamp after the Enter ignored (the ladder ends, the recovery retypes)",
        "rk/act/echo.py",
        "    return now.field(STATE_OPTION) != shown.field(STATE_OPTION)\n",
        "    return False\n",
        ("tests/test_delivery_evidence.py",),
    ),
    Mutant(
        "delivery: a stamped pane recovered (retyped) instead of cleared",
        "rk/act/deliver.py",
        "        if stamped(shown, last):\n            # A hook wrote",
        "        if False:\n            # A hook wrote",
        ("tests/test_delivery_evidence.py",),
    ),
    # -- seams: where a core decision meets an outside value (tests/test_seams_*.py) ----------------
    Mutant(
        "delivery log: an append glued onto a torn last line",
        "rk/store/delivery_log.py",
        'data = b"\\n" + data  # a crash left a torn last line',
        "data = data  # a crash left a torn last line",
        ("tests/test_seams_torn_logs.py", "-k", "delivery"),
    ),
    Mutant(
        "state journal follower: a torn tail dropped instead of held",
        "rk/store/state_journal.py",
        '*whole, self.pending = (self.pending + data).split(b"\\n")',
        '*whole, self.pending = data.split(b"\\n")',
        ("tests/test_seams_torn_logs.py", "-k", "follower"),
    ),
    Mutant(
        "limit reset: the zone a screen prints ignored",
        "rk/core/pane/screen/resets.py",
        'zone = _zone(m.group("zone"), local)',
        "zone = local",
        ("tests/test_seams_limit_screens.py", "-k", "claude"),
    ),
    Mutant(
        "limit reset: a reset printed to the minute taken as the minute's start",
        "rk/core/pane/screen/resets.py",
        "return self.at + (MINUTE if self.to_minute else 0) + RESET_MARGIN",
        "return self.at + RESET_MARGIN",
        ("tests/test_resets.py",),
    ),
    Mutant(
        "limit reset: no margin past the reset",
        "rk/core/pane/screen/resets.py",
        "RESET_MARGIN = 5",
        "RESET_MARGIN = 0",
        ("tests/test_resets.py",),
    ),
    Mutant(
        "limit reset: a delay in seconds taken to the minute",
        "rk/core/pane/screen/resets.py",
        'to_minute = to_minute and key != "s"',
        "to_minute = to_minute",
        ("tests/test_resets.py",),
    ),
    Mutant(
        "limit reset: a banner repeated by a refused resume ends the limit at once",
        "rk/core/pane/look.py",
        "return screen.reset_at if pane.state != LIMITED or screen.reset_at > pane.epoch else 0",
        "return screen.reset_at",
        ("tests/test_resets.py",),
    ),
    Mutant(
        "self-resume: no wait for a CLI that continues by itself",
        "rk/core/pane/look.py",
        "return screen.resumes and now - reset <= SELF_RESUME_GRACE",
        "return False",
        ("tests/test_resets.py",),
    ),
    Mutant(
        "self-resume: the wait counted from the screen's reset only",
        "rk/core/pane/look.py",
        "reset = screen.reset_at or pane.reset_at or pane.epoch + LIMIT_RETRY",
        "reset = screen.reset_at",
        ("tests/test_resets.py",),
    ),
    Mutant(
        "self-resume: Claude's 'Continuing shortly' not read",
        "rk/core/pane/screen/claude.py",
        'r"^\\s*Continuing shortly\\b"',
        'r"^\\s*Continuing never\\b"',
        ("tests/test_resets.py",),
    ),
    Mutant(
        "limit reset: the printed time nearest the start, not the first after it",
        "rk/core/pane/screen/resets.py",
        "return Reset(min(t for t in times if t >= since - STALE_SLACK), to_minute=True)",
        "return Reset(min(times, key=lambda t: abs(t - since)), to_minute=True)",
        ("tests/test_seams_limit_screens.py",),
    ),
    Mutant(
        "mcp guard: the operator role read case-blind",
        "rk/core/channels/mcpguard.py",
        "return bool(self.pane) and self.role == OPERATOR_ROLE",
        "return bool(self.pane) and self.role.lower() == OPERATOR_ROLE",
        ("tests/test_seams_roles.py", "-k", "guard_grants"),
    ),
    Mutant(
        "mcp scope: a worker reaches every pane",
        "rk/core/channels/mcpguard.py",
        "if target.pane == caller.pane or action == Action.AWAIT:",
        "if target.pane or action == Action.AWAIT:",
        ("tests/test_mcp_scopes.py",),
    ),
    Mutant(
        "mcp scope: an operator reaches every session",
        "rk/core/channels/mcpguard.py",
        "if caller.operator and caller.session and target.session == caller.session:",
        "if caller.operator:",
        ("tests/test_mcp_scopes.py",),
    ),
    Mutant(
        "mcp grants: a grant allows every action",
        "rk/core/channels/mcpguard.py",
        "return bool(caller.pane) and action in self.may and self.who.matches(me)",
        "return bool(caller.pane) and self.who.matches(me)",
        ("tests/test_mcp_scopes.py",),
    ),
    Mutant(
        "mcp guard: an unplaced caller is let through",
        "rk/core/channels/mcpguard.py",
        '    if not caller.pane:\n        why = f" ({caller.note})"',
        '    if False:\n        why = f" ({caller.note})"',
        ("tests/test_mcp.py", "-k", "outside_tmux or owner_check or limit_decisions"),
    ),
    Mutant(
        "mcp cap: the pending count and the add not held under one lock",
        "rk/channels/mcp_cron.py",
        'return runner.mutate("cron_add", argv, [prompt], check, serial=True)',
        'return runner.mutate("cron_add", argv, [prompt], check, serial=False)',
        ("tests/test_mcp_attacks.py", "-k", "racing"),
    ),
    Mutant(
        "mcp cap: agents may take the places kept for people",
        "rk/core/channels/mcpguard.py",
        "if entries >= room:",
        "if entries >= max_entries:",
        ("tests/test_mcp.py", "-k", "limit_decisions"),
    ),
    Mutant(
        "mcp floor: one-shots slip under the interval floor",
        "rk/core/channels/mcpguard.py",
        "if 0 <= when - now < limits.min_interval:",
        "if 0 <= when - now < 1:",
        ("tests/test_mcp_scopes.py", "-k", "one_shots"),
    ),
    Mutant(
        "mcp reads: cron_list shows every entry",
        "rk/channels/mcp_runner.py",
        "records = [r for r in self.entries() if self._sees(caller, grants, known, r)]",
        "records = self.entries()",
        ("tests/test_mcp_attacks.py", "-k", "worker_reaches"),
    ),
    Mutant(
        "mcp reads: agent_list shows every command line",
        "rk/channels/mcp.py",
        'row["process"] = program_only(str(row.get("process", "")))',
        'row["process"] = str(row.get("process", ""))',
        ("tests/test_mcp_attacks.py", "-k", "worker_reaches"),
    ),
    Mutant(
        "redaction: --name=value secrets shown",
        "rk/core/redact.py",
        "text = _JOINED.sub(lambda m: m.group(1) + m.group(2) + MASK, text)",
        "text = text",
        ("tests/test_mcp_scopes.py", "-k", "redacted"),
    ),
    Mutant(
        "roles: taking the operator role clears every other window's role",
        "rk/tmux/roles.py",
        "if other != window and other_role == OPERATOR:",
        "if other != window and other_role:",
        ("tests/test_seams_roles.py", "-k", "radio"),
    ),
    # -- setup --mcp: the allow rules match the authority (rk/agent/setup/permissions.py) --------------------
    Mutant(
        "allow rules: the server tools allowed in every pane",
        "rk/agent/setup/permissions.py",
        'WORKER_TOOLS: tuple[str, ...] = UNATTENDED["worker"]',
        "WORKER_TOOLS: tuple[str, ...] = UNATTENDED[OPERATOR_ROLE]",
        ("tests/test_setup_permissions.py",),
    ),
    Mutant(
        "allow rules: an uninstall removes the user's rules too",
        "rk/agent/setup/permissions.py",
        "kept = [r for r in node if not (isinstance(r, str) and r in ours)]",
        "kept = []",
        ("tests/test_setup_permissions.py",),
    ),
    Mutant(
        "allow rules: an OpenCode answer the user chose is overwritten",
        "rk/agent/setup/permissions.py",
        "if name not in node:  # a value the user chose is theirs",
        "if True:  # a value the user chose is theirs",
        ("tests/test_setup_permissions.py",),
    ),
    Mutant(
        "allow rules: none written beside the MCP server in the same file",
        "rk/agent/setup/mcp.py",
        "        add_rules(doc, rules, path)\n",
        "        pass\n",
        ("tests/test_setup_permissions.py",),
    ),
    Mutant(
        "rk operator: claude started without pause/resume allowed",
        "rk/agent/setup/operator.py",
        'allowed = ["--allowedTools", ",".join(RULES["claude"].name(t) for t in tools)]',
        "allowed: list[str] = []",
        ("tests/test_setup_permissions.py",),
    ),
    Mutant(
        "rk operator: codex overrides without rk's block (a partial server table)",
        "rk/agent/setup/operator.py",
        'if program == "codex" and _codex_has_rk(env):',
        'if program == "codex":',
        ("tests/test_setup_permissions.py",),
    ),
    # -- doctor: rk's hooks as this rk writes them, the user's own hooks around them theirs ---------------------
    Mutant(
        "doctor: a user's hook after rk's fails (a re-install would reorder it)",
        "rk/agent/setup/hooks.py",
        "    if have == rk_handlers(install_hooks({}, agent, rk)):\n",
        "    if doc == install_hooks(doc, agent, rk):\n",
        ("tests/test_doctor_setup.py",),
    ),
    Mutant(
        "doctor: an old generation of rk's hooks passes",
        "rk/agent/setup/hooks.py",
        "    have = rk_handlers(doc)\n",
        '    have = [h for h in rk_handlers(doc) if " agent hook " in h[2]]\n',
        ("tests/test_doctor_setup.py",),
    ),
    Mutant(
        "doctor: Codex's own tables after rk's block read as an older set-up",
        "rk/agent/setup/mcp.py",
        "        current = codex.block_current(as_text(path, read_config(path)), rk)\n",
        "        current = not codex.plan_mcp(path, read_config(path), rk, False).changed\n",
        ("tests/test_doctor_setup.py",),
    ),
    Mutant(
        "setup --mcp: a re-run drops the alwaysLoad a user set on rk's entry",
        "rk/agent/setup/mcp.py",
        'USER_OPTIONS = ("alwaysLoad", "timeout")',
        'USER_OPTIONS = ("timeout",)',
        ("tests/test_doctor_setup.py",),
    ),
    # -- rk operator: its agent starts in rk's own directory, trusted ---------------------------------------
    Mutant(
        "rk operator: the agent started in the home directory (Claude's trust screen, 'No, exit')",
        "rk/cli/windows.py",
        "home=str(cwd), env=variables)",
        'home=env.environ.get("HOME", "/"), env=variables)',
        ("tests/test_operator_workspace.py",),
    ),
    Mutant(
        "setup --mcp: the operator's directory not marked trusted for Claude",
        "rk/agent/setup/mcp.py",
        "        workspace.trust_claude(doc, env)\n",
        "        pass\n",
        ("tests/test_operator_workspace.py",),
    ),
    Mutant(
        "rk operator: Gemini CLI not told to trust the operator's directory",
        "rk/agent/setup/workspace.py",
        'TRUST_ENV: dict[str, dict[str, str]] = {"gemini": {"GEMINI_CLI_TRUST_WORKSPACE": "true"}}',
        "TRUST_ENV: dict[str, dict[str, str]] = {}",
        ("tests/test_operator_workspace.py",),
    ),
    Mutant(
        "rk uninstall: the operator's trust left in ~/.claude.json",
        "rk/agent/setup/removal.py",
        'return "the operator\'s directory\'s trust" if workspace.untrust_claude(doc, env) else ""',
        'return ""',
        ("tests/test_operator_workspace.py",),
    ),
    Mutant(
        "rk operator: Claude's operator finds rk's tools only through a ToolSearch",
        "rk/agent/setup/operator.py",
        "return _with_flags(argv, allowed + claude_eager_flags(env)), {}",
        "return _with_flags(argv, allowed), {}",
        ("tests/test_setup_permissions.py",),
    ),
    Mutant(
        "look: a failed capture marks the screen unreadable (no later look)",
        "rk/tmux/observe.py",
        "unread = screen is not None and not screen.agent",
        "unread = not (screen and screen.agent)",
        ("tests/test_seams_capture_faults.py", "-k", "stale_state"),
    ),
    Mutant(
        "DST: a fixed-time job fires in both passes of a repeated hour",
        "rk/core/schedule/cronexpr.py",
        "return wall_instants(naive, zone)[:1]  # a gap",
        "return wall_instants(naive, zone)  # a gap",
        ("tests/test_seams_dst_ticks.py", "-k", "fall-fixed"),
    ),
    Mutant(
        "state journal: a new line glued onto a torn one",
        "rk/store/state_journal.py",
        'line = b"\\n" + line  # a torn last line',
        "line = line  # a torn last line",
        ("tests/test_seams_journal_writer.py",),
    ),
    # -- every event told (rk/core/channels/notice.py, rk/channels/notify.py) ------------------------------------
    Mutant(
        "notify: a burst told one message per event",
        "rk/core/channels/notice.py",
        "    if len(fresh) > BURST:\n",
        "    if False:\n",
        ("tests/test_notify_burst.py", "-k", "burst"),
    ),
    Mutant(
        "notify: a summary names only the first events (a rare kind hidden)",
        "rk/core/channels/notice.py",
        "            picked.setdefault(line.event, i)",
        "            picked.setdefault(str(i), i)",
        ("tests/test_notify_burst.py", "-k", "burst and not healthy"),
    ),
    Mutant(
        "notify: an event told in a summary does not name it",
        "rk/channels/notify.py",
        "self._record([line.told(now, outcome, batch.key) for line in batch.lines])",
        "self._record([line.told(now, outcome) for line in batch.lines])",
        ("tests/test_notify_burst.py", "-k", "healthy"),
    ),
    Mutant(
        "notify: queued lines not written before the send",
        "rk/channels/notify.py",
        "        self._record(held + queued)\n",
        "        self._record(held)\n",
        ("tests/test_notify_burst.py", "-k", "stopped"),
    ),
    Mutant(
        "notify: what a stopped ticker left is not told at the start",
        "rk/channels/notify.py",
        "left = list(self.memory.pending.get(channel.name, {}).values())",
        "left = []",
        ("tests/test_notify_burst.py", "-k", "stopped"),
    ),
    Mutant(
        "notify: a told event stays pending in the memory",
        "rk/core/channels/notice.py",
        "            self.held.get(line.channel, {}).pop(line.key, None)\n"
        "            self.pending.get(line.channel, {}).pop(line.key, None)\n",
        "            self.held.get(line.channel, {}).pop(line.key, None)\n",
        ("tests/test_notify_burst.py", "-k", "memory or stopped"),
    ),
    Mutant(
        "notify: a stopped notifier still records its late outcomes",
        "rk/channels/notify.py",
        "            if self._stopping:\n                return\n            self._record(",
        "            self._record(",
        ("tests/test_notify_burst.py", "-k", "stopped_notifier"),
    ),
    Mutant(
        "notify: a channel gone from the config leaves its events unaccounted",
        "rk/channels/notify.py",
        'self._record([line.told(now, f"{Status.NOTIFY_FAILED}: {LOST}") for line in lost])',
        "pass",
        ("tests/test_notify_burst.py", "-k", "gone"),
    ),
    Mutant(
        "notify: a torn last line swallows the next append",
        "rk/channels/notify.py",
        'if size and os.pread(fd, 1, size - 1) != b"\\n":',
        "if False:",
        ("tests/test_notify_burst.py", "-k", "torn"),
    ),
    Mutant(
        "notify: what a stopped ticker left is sent within quiet hours",
        "rk/channels/notify.py",
        "if left and is_quiet(channel, now, self.zone):",
        "if False:",
        ("tests/test_notify_burst.py", "-k", "quiet"),
    ),
    # -- notifications from every tick (rk/channels/notify.py, notify_config.py, rk/engine/ticker.py, rk cron tick) --
    Mutant(
        "notify: a running ticker reads notify: at its start only",
        "rk/engine/ticker.py",
        "        self._follow_channels()\n        try:\n",
        "        try:\n",
        ("tests/test_notify_every_tick.py", "-k", "follows"),
    ),
    Mutant(
        "notify: a config.yaml that cannot be parsed turns the channels off",
        "rk/channels/notify_config.py",
        "            return None\n        channels, self.problems",
        "            return []\n        channels, self.problems",
        ("tests/test_notify_every_tick.py", "-k", "follows or broken"),
    ),
    Mutant(
        "notify: a channel gone while it sends has its event in flight failed too",
        "rk/channels/notify.py",
        "lost = [line for line in lost if (line.channel, line.key) not in sending]",
        "lost = lost",
        ("tests/test_notify_every_tick.py", "-k", "removed"),
    ),
    Mutant(
        "notify: what another process told is told again",
        "rk/channels/notify.py",
        "        for line in lines:\n            self.memory.add(line)\n        if not self.restore:",
        "        if not self.restore:",
        ("tests/test_notify_every_tick.py", "-k", "another"),
    ),
    Mutant(
        "notify: what a tick left queued is taken on while it may still be sending it",
        "rk/channels/notify.py",
        "line.ts <= now - ADOPT_AFTER]",
        "line.ts <= now]",
        ("tests/test_notify_every_tick.py", "-k", "another"),
    ),
    Mutant(
        "notify: a guest tells what the ticker queued",
        "rk/channels/notify.py",
        "        if self.restore:\n            self._restore(fresh)",
        "        if True:\n            self._restore(fresh)",
        ("tests/test_notify_every_tick.py", "-k", "guest"),
    ),
    Mutant(
        "rk cron tick sends no notification",
        "rk/cli/running.py",
        "told = _tell(runtime, channels, result.servers, started) if channels else None",
        "told = None",
        ("tests/test_notify_every_tick.py", "-k", "cron_tick_tells"),
    ),
    Mutant(
        "rk cron tick beside a running ticker tells what the ticker queued",
        "rk/cli/running.py",
        "owner = find_running(runtime.state_dir) is None",
        "owner = True",
        ("tests/test_notify_every_tick.py", "-k", "beside"),
    ),
    Mutant(
        "rk cron tick waits for a hung receiver without a bound",
        "rk/channels/notify.py",
        "        notifier.settle(wait)\n",
        "        notifier.settle(3600)\n",
        ("tests/test_notify_every_tick.py", "-k", "hung"),
    ),
    Mutant(
        "rk cron tick's exit waits for Apprise's own threads",
        "rk/channels/notify.py",
        "sender = apprise.Apprise(asset=apprise.AppriseAsset(service_timeout=0))",
        "sender = apprise.Apprise()",
        ("tests/test_notify_every_tick.py", "-k", "hung"),
    ),
    Mutant(
        "notify: a send that never ends holds its channel's worker",
        "rk/channels/notify.py",
        "    thread.join(channel.timeout + SEND_SLACK)\n",
        "    thread.join()\n",
        ("tests/test_notify_every_tick.py", "-k", "never_ends"),
    ),
    # -- the state directory: no link followed, the hook as strict as the CLI; bounded records; odd counts ----
    Mutant(
        "state dir: a directory checked through a symbolic link (stat, not lstat)",
        "rk/host/private.py",
        "        st = os.lstat(path)\n",
        "        st = os.stat(path)\n",
        ("tests/test_private_state.py",),
    ),
    Mutant(
        "state dir: files opened through a symbolic link",
        "rk/host/private.py",
        "_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC",
        "_NOFOLLOW = os.O_CLOEXEC",
        ("tests/test_private_state.py", "-k", "appended or marker"),
    ),
    Mutant(
        "state dir: a directory listed without its check (the claims sweep, the intents recovery)",
        "rk/host/private.py",
        "    why = refusal(path)\n    if why:\n        if not os.path.lexists(path):",
        '    why = ""\n    if why:\n        if not os.path.lexists(path):',
        ("tests/test_private_state.py", "-k", "intents or claims"),
    ),
    Mutant(
        "state dir: a planted locks link used",
        "rk/host/lock.py",
        "    if why:\n        raise private.UnsafeDir(why)\n    return primary",
        "    return primary",
        ("tests/test_private_state.py", "-k", "locks"),
    ),
    Mutant(
        "hook: journals and wakes into a state dir the CLI refuses",
        "rk/agent/hook.py",
        "    safe = private_state(env)\n",
        "    safe = True\n",
        ("tests/test_private_state.py", "-k", "hook"),
    ),
    Mutant(
        "hook: its log written into a state dir the CLI refuses",
        "rk/agent/hook.py",
        "        if private.ensure_dir(directory):\n            return  # not private",
        "        if False:\n            return  # not private",
        ("tests/test_private_state.py", "-k", "hook"),
    ),
    Mutant(
        "session record: a line held whole however long it grows",
        "rk/store/transcripts.py",
        "            if cached.held + len(rest) > self.max_line:",
        "            if False:",
        ("tests/test_record_bounds.py",),
    ),
    Mutant(
        "usage: a Claude count that is not a whole number dropped without a word",
        "rk/core/cost/usage.py",
        "    odd = _odd(usage, CLAUDE_COUNTS)\n",
        "    odd = ()\n",
        ("tests/test_usage_counts.py",),
    ),
    # -- bounds that protect the rest (tests/test_bounds.py) -----------------------------------------------
    Mutant(
        "bounds: the entries file reads a text past its bound",
        "rk/core/schedule/decoding.py",
        "        return bounds.text(str(value), what, most)\n",
        "        return str(value)\n",
        ("tests/test_bounds.py", "-k", "entries_file_refuses"),
    ),
    Mutant(
        "bounds: add takes a value past the field table's bound",
        "rk/cli/entries.py",
        "    check_lengths(flags, Surface.ADD)\n",
        "    pass\n",
        ("tests/test_bounds.py", "-k", "add_refuses"),
    ),
    Mutant(
        "bounds: a refusal echoes the whole value",
        "rk/core/bounds.py",
        'return f"{value[:keep]!r}… ({len(value):,} characters)"',
        "return repr(value)",
        ("tests/test_bounds.py", "-k", "megabyte or quote"),
    ),
    Mutant(
        "bounds: the MCP inputs without the table's bound",
        "rk/channels/mcp_cron.py",
        '        info["max_length"] = field.most\n',
        "        pass\n",
        ("tests/test_bounds.py", "-k", "mcp_inputs"),
    ),
    Mutant(
        "entries file: a change past the read limit is written",
        "rk/store/entries.py",
        "        if size > MAX_ENTRIES_FILE_BYTES:\n",
        "        if False:\n",
        ("tests/test_bounds.py", "-k", "would_pass_the_read_limit"),
    ),
    Mutant(
        "entries file: rm cannot read a file past the size limit to repair it",
        "rk/cli/entries.py",
        "if entry_id not in EntryDocument.read(files.entries, repair=True).ids():",
        "if entry_id not in EntryDocument.read(files.entries).ids():",
        ("tests/test_bounds.py", "-k", "rm_of_the_entry"),
    ),
    Mutant(
        "unreadable entries file: the tick exits 0",
        "rk/engine/result.py",
        "        Diag.ENTRY_FILE_CORRUPT,\n",
        "",
        ("tests/test_bounds.py", "-k", "tick_exits_1"),
    ),
    Mutant(
        "unreadable entries file: the tick rewrites the server's files as if it had no entries",
        "rk/engine/tick.py",
        "    if scene is None or tick.out.unreadable:",
        "    if scene is None:",
        ("tests/test_bounds.py", "-k", "tick_exits_1"),
    ),
    Mutant(
        "unreadable entries file: list answers an empty list",
        "rk/cli/listing.py",
        "    broken = unreadable_error(views)",
        "    broken = None",
        ("tests/test_bounds.py", "-k", "list_says"),
    ),
    Mutant(
        "unreadable entries file: doctor is silent",
        "rk/cli/doctor.py",
        "        if sv.unreadable:\n",
        "        if False:\n",
        ("tests/test_bounds.py", "-k", "doctor_fails"),
    ),
    Mutant(
        "unreadable entries file: the status line is silent",
        "rk/channels/statusline.py",
        '    unreadable = _count(ticker[1].get("unreadable"))\n',
        "    unreadable = 0\n",
        ("tests/test_bounds.py", "-k", "status_line"),
    ),
    Mutant(
        "unreadable entries file: the ticker does not record it",
        "rk/engine/ticker.py",
        '"unreadable": sum(bool(g.get("unreadable")) for g in glances.values()),',
        '"unreadable": 0,',
        ("tests/test_bounds.py", "-k", "ticker_records_it"),
    ),
    Mutant(
        "unreadable entries file: the notify channels do not hear it",
        "rk/core/channels/notice.py",
        "    if unreadable:\n        out.append(Event(UNREADABLE",
        "    if False:\n        out.append(Event(UNREADABLE",
        ("tests/test_bounds.py", "-k", "notify_channels"),
    ),
    Mutant(
        "year 9999: an instant east of UTC past what datetime shows is taken",
        "rk/core/bounds.py",
        "MAX_EPOCH = 253_402_214_399",
        "MAX_EPOCH = 253_402_300_799",
        ("tests/test_bounds.py", "-k", "9999 or last_second"),
    ),
    # -- waits that end, and rk mcp's stdio (rk/core/channels/awaiting.py, jsonrpc.py, rk/channels/) ----------
    Mutant(
        "await: gone ends the wait only when --until asks for it",
        "rk/core/channels/awaiting.py",
        "reached[view.pane] = Reached(GONE, view)  # whatever was asked: it can never come",
        "reached.update({view.pane: Reached(GONE, view)} if GONE in spec.until else {})",
        ("tests/test_await_events.py", "-m", "not tmux"),
    ),
    Mutant(
        "await: --all waits on after a target is gone",
        "rk/core/channels/awaiting.py",
        "if lost and spec.mode == ALL:",
        "if lost and spec.mode == ALL and len(lost) == len(progress.targets):",
        ("tests/test_await_events.py", "-m", "not tmux"),
    ),
    Mutant(
        "await: a pane's identity never checked (a restarted server's %N answers)",
        "rk/core/channels/awaiting.py",
        "why = moved(first.setdefault(view.pane, view), view)",
        'why = ""',
        ("tests/test_await_events.py", "-m", "not tmux"),
    ),
    Mutant(
        "await: the journal read before the listing's departures",
        "rk/channels/waiter.py",
        "progress = observe(spec, progress, departures(progress, views))",
        "progress = observe(spec, progress, [])",
        ("tests/test_await_events.py", "-k", "first_looks"),
    ),
    Mutant(
        "await: the tmux server's exit not watched",
        "rk/channels/waiter.py",
        "pids |= {listed.view.server.pid for listed in panes.values()}",
        "pids |= set()",
        ("tests/test_await_events.py", "-k", "server_is_killed"),
    ),
    Mutant(
        "await: a process gone before its pidfd was opened waits for the recheck",
        "rk/channels/waiter.py",
        "                exited = True\n",
        "                exited = False\n",
        ("tests/test_await_events.py", "-k", "look_again"),
    ),
    Mutant(
        "rk mcp: the waits never cancelled when the client goes",
        "rk/channels/waiter.py",
        "switch = cancel.CURRENT.get()",
        "switch = None",
        ("tests/test_mcp_stdio.py", "-k", "closing_stdin"),
    ),
    Mutant(
        "rk mcp: a malformed message's error reply not sent",
        "rk/channels/mcp_stdio.py",
        "                    wire.send(judged.reply)\n",
        "                    pass\n",
        ("tests/test_mcp_stdio.py", "-k", "stays_up"),
    ),
    Mutant(
        "rk mcp: an id of the wrong type taken",
        "rk/core/channels/jsonrpc.py",
        'if has_id and not valid_id(doc["id"]):',
        "if False:",
        ("tests/test_mcp_stdio.py", "-k", "malformed_line"),
    ),
    Mutant(
        "rk mcp: a line over the limit held whole",
        "rk/channels/mcp_stdio.py",
        "if not over and len(pending) + end - start > limit:",
        "if False:",
        ("tests/test_mcp_stdio.py", "-k", "client_lines or exactly_the_limit"),
    ),
    Mutant(
        "await: the wake bound through a planted await link",
        "rk/channels/waiter.py",
        "directory = private.private_dir(os.path.join(state_dir(env), AWAIT_DIR))",
        "directory = os.path.join(state_dir(env), AWAIT_DIR); os.makedirs(directory, exist_ok=True)",
        ("tests/test_private_state.py", "-k", "binds"),
    ),
    Mutant(
        "rk mcp: an oversize message answered without its id (the client waits out its timeout)",
        "rk/core/channels/jsonrpc.py",
        "return value if valid_id(value) else None",
        "return None",
        ("tests/test_mcp_stdio.py", "-k", "huge"),
    ),
    # -- rk uninstall: only rk's own entries, asked first, never through a link (rk/cli/uninstalling.py) ------
    Mutant(
        "uninstall: an object or list the user left empty pruned too",
        "rk/agent/setup/removal.py",
        "if isinstance(value, dict | list) and not value and isinstance(was, dict | list) and was:",
        "if isinstance(value, dict | list) and not value:",
        ("tests/test_uninstall.py", "-k", "left_empty"),
    ),
    Mutant(
        "uninstall: a file setup created from scratch left behind as {}",
        "rk/agent/setup/removal.py",
        "    if not doc:  # rk's entries were all it held",
        "    if False:  # rk's entries were all it held",
        ("tests/test_uninstall.py", "-k", "one_write or terminal_no"),
    ),
    Mutant(
        "uninstall: no terminal and no --yes asked anyway",
        "rk/cli/uninstalling.py",
        "    if not _isatty(stdin):\n        raise usage(",
        "    if False:\n        raise usage(",
        ("tests/test_uninstall.py", "-k", "refuses"),
    ),
    Mutant(
        "uninstall: --dry-run removes",
        "rk/cli/uninstalling.py",
        "    if dry_run:\n        human = ",
        "    if False:\n        human = ",
        ("tests/test_uninstall.py", "-k", "dry_run"),
    ),
    Mutant(
        "uninstall --purge: the state dir followed through its symbolic link",
        "rk/cli/uninstalling.py",
        "            st = os.lstat(path)\n        except FileNotFoundError:",
        "            st = os.stat(path)\n        except FileNotFoundError:",
        ("tests/test_uninstall.py", "-k", "symbolic"),
    ),
    Mutant(
        "uninstall: a systemd unit rk did not write removed",
        "rk/cli/uninstalling.py",
        'return Unit(path, first.decode("utf-8", "replace").startswith(UNIT_MARK))',
        "return Unit(path, True)",
        ("tests/test_uninstall.py", "-k", "did_not_write"),
    ),
    # -- mistakes that teach: a wrong flag said in one line, never a silent empty answer ----------------
    Mutant(
        "two schedule flags refused without naming them",
        "rk/cli/flags.py",
        'f"{chosen[0]} and {chosen[1]} cannot go together: exactly one schedule flag is required"',
        '"exactly one schedule flag is required"',
        ("tests/test_mistakes.py", "-k", "two_schedule_flags"),
    ),
    Mutant(
        "a duration without its unit said as any unreadable duration",
        "rk/core/durations.py",
        "if bare := missing_unit(s):",
        'if bare := "":',
        ("tests/test_mistakes.py", "-k", "bare_number or without_its_unit"),
    ),
    Mutant(
        "--since 7 read as a second of 1970",
        "rk/cli/flags.py",
        '    if _bare_small_number(text):\n        raise usage(f"--since',
        '    if False:\n        raise usage(f"--since',
        ("tests/test_mistakes.py", "-k", "since"),
    ),
    Mutant(
        "--outcome matching no outcome answered with an empty log",
        "rk/cli/flags.py",
        "if any(word.startswith(value) or value.startswith(word) for word in known):",
        "if True:",
        ("tests/test_mistakes.py", "-k", "outcome"),
    ),
    Mutant(
        "-L naming no server listed as a server with nothing in it",
        "rk/cli/environment.py",
        "        if not self.server_flag:\n            return self\n",
        "        if True:\n            return self\n",
        ("tests/test_mistakes.py", "-k", "server"),
    ),
    Mutant(
        "cron list -L naming no server not checked",
        "rk/cli/listing.py",
        "    env.known_server()\n",
        "",
        ("tests/test_mistakes.py", "-k", "server"),
    ),
    Mutant(
        "send to a role no window carries answered only skipped-absent",
        "rk/cli/send.py",
        "if why := absent_role(env, target):",
        'if why := "":',
        ("tests/test_mistakes.py", "-k", "role"),
    ),
    Mutant(
        "add for a role no window carries warned without the roles there are",
        "rk/cli/receipt.py",
        "({target.why}{roles_hint(entry.target, facts)})",
        "({target.why})",
        ("tests/test_mistakes.py", "-k", "role"),
    ),
    Mutant(
        "--json before the command ignored",
        "rk/cli/environment.py",
        "env.root_json = env.root_json or as_json",
        "env.root_json = env.root_json",
        ("tests/test_mistakes.py", "-k", "json_before"),
    ),
    Mutant(
        "--json before a command without JSON output ignored",
        "rk/cli/environment.py",
        "if as_json is None and env.root_json and not _is_group(ctx.command):",
        "if False:",
        ("tests/test_mistakes.py", "-k", "json_before"),
    ),
    # -- a ticker on every machine: `ticker install` without a systemd user bus ---------------------------------
    Mutant(
        "ticker install without a bus: the tmux line calls a bare rk",
        "rk/cli/running.py",
        '    rk = rk_argv()\n    argv = [rk[0], "-P", *rk[1:]] if len(rk) > 1 else rk\n',
        '    argv = ["rk"]\n',
        ("tests/test_ticker_install.py", "-k", "absolute_line_once"),
    ),
    Mutant(
        "ticker install without a bus: a second install writes a second line",
        "rk/core/tickerconf.py",
        '    rest, _ = strip_block(text)\n    rest = rest.rstrip("\\n")\n',
        '    rest = text.rstrip("\\n")\n',
        ("tests/test_ticker_install.py", "-k", "written_once or broken_line"),
    ),
    Mutant(
        "ticker install without a bus: the ticker is not started now",
        "rk/cli/running.py",
        "    started, started_line = _start(runtime, None, False)\n",
        '    started, started_line = {"started": False}, ""\n',
        ("tests/test_ticker_install.py", "-k", "absolute_line_once"),
    ),
    Mutant(
        "ticker install without a bus: the tmux line's errors are discarded",
        "rk/core/tickerconf.py",
        'f"2>{log}"',
        '"2>/dev/null"',
        ("tests/test_ticker_install.py", "-k", "broken_line"),
    ),
    Mutant(
        "ticker install without a bus: an unsafe path is written into the line",
        "rk/core/tickerconf.py",
        '    return next((w for w in words if not w or any(c not in SAFE_CHARS for c in w)), "")\n',
        '    return ""\n',
        ("tests/test_ticker_install.py", "-k", "cannot_carry"),
    ),
    Mutant(
        "no user bus: DBUS_SESSION_BUS_ADDRESS not taken as one",
        "rk/cli/running.py",
        '    if environ.get("DBUS_SESSION_BUS_ADDRESS"):\n        return ""\n',
        "",
        ("tests/test_ticker_install.py", "-k", "no_user_bus"),
    ),
    Mutant(
        "doctor: the tmux line's last error not shown",
        "rk/cli/doctor.py",
        "    failed = ticker.start_error(state)\n",
        "    failed = None\n",
        ("tests/test_ticker_install.py", "-k", "broken_line or tmuxs_line_failed"),
    ),
    Mutant(
        "doctor: what ended the last ticker not shown",
        "rk/cli/doctor.py",
        "        if not why and (ended := ticker.ending_error(state)) is not None:\n",
        "        if False:\n",
        ("tests/test_ticker_install.py", "-k", "ended_the_last"),
    ),
    Mutant(
        "doctor without a bus: the fix is install even when tmux's line is in place",
        "rk/cli/doctor.py",
        "        by_tmux = no_user_bus(env.environ) and installed_line(env.environ) is not None and failed is None\n",
        "        by_tmux = False\n",
        ("tests/test_ticker_install.py", "-k", "fix_without_a_bus"),
    ),
    Mutant(
        "ticker install: the old line's errors kept after it is mended",
        "rk/cli/running.py",
        "        (runtime.state_dir / ticker.START_LOG_NAME).unlink(missing_ok=True)\n",
        "        pass\n",
        ("tests/test_ticker_install.py", "-k", "broken_line"),
    ),
    Mutant(
        "uninstall: rk's tmux line that starts the ticker is left",
        "rk/agent/setup/removal.py",
        "        remove_ticker_line(out.plans, env)\n",
        "        pass\n",
        ("tests/test_ticker_install.py", "-k", "uninstall"),
    ),
    Mutant(
        "uninstall: rk's own tmux line named as the user's",
        "rk/core/tickerconf.py",
        "and not (n in after_header and _ours(each))",
        "",
        ("tests/test_ticker_install.py", "-k", "uninstall"),
    ),
    # -- an entry follows the agent the user runs in its pane (issue 27) --------------------------------------
    Mutant(
        "a bare add takes the pane's agent session again",
        "rk/cli/receipt.py",
        "    return Target(TargetKind.PANE, pane), session\n",
        "    return (Target(TargetKind.SESSION, session) if session else Target(TargetKind.PANE, pane)), session\n",
        ("tests/test_target_follows.py", "-k", "quit_it_reaches"),
    ),
    Mutant(
        "--follow-session takes the session an agent that quit left behind",
        "rk/cli/receipt.py",
        '    was = f" (its last session, {short_session(stale)}, ended)" if stale else ""\n',
        "    return Target(TargetKind.SESSION, stale or pane)\n",
        ("tests/test_target_follows.py", "-k", "refused_naming"),
    ),
    Mutant(
        "an ended session's skipped-absent line says nothing",
        "rk/core/pane/facts.py",
        'return TargetFact(why=f"{ended} (no pane runs it now)", refused=ended)',
        'return TargetFact(why=f"{ended} (no pane runs it now)")',
        ("tests/test_target_follows.py", "-m", "not tmux"),
    ),
    Mutant(
        "an ended session target's re-target hint gone",
        "rk/core/schedule/health.py",
        " + retarget_hint(entry)",
        "",
        ("tests/test_target_follows.py", "-m", "not tmux"),
    ),
    Mutant(
        "the re-target hint names a pane the session never ran in",
        "rk/core/schedule/health.py",
        '    pane = entry.created_by.pane if own else "%N"\n',
        '    pane = entry.created_by.pane or "%N"\n',
        ("tests/test_target_follows.py", "-m", "not tmux"),
    ),
    Mutant(
        "doctor's fix for an ended session target is an edit, which cannot change a target",
        "rk/cli/doctor.py",
        '        return why.split("; re-target: ", 1)[1]\n',
        '        return "rk cron edit the entry\'s target, or rk cron rm it"\n',
        ("tests/test_target_follows.py", "-k", "ended_says"),
    ),
    # -- issue 28: OpenCode 2's plugin API; doctor on hooks and plugins a CLI does not load ------------------
    Mutant(
        "OpenCode 2 plugin: setup subscribes under 1.x's registration-only context (no event domain)",
        "rk/agent/setup/opencode.py",
        '  if (!events || typeof events.subscribe !== "function") return;\n',
        "  if (false) return;\n",
        ("tests/test_opencode2_plugin.py",),
    ),
    Mutant(
        "OpenCode 2 plugin: reports from a process with no controlling terminal (a shared service)",
        "rk/agent/setup/opencode.py",
        "  return hasTerminal();\n",
        "  return true;\n",
        ("tests/test_opencode2_plugin.py",),
    ),
    Mutant(
        "OpenCode 2 plugin: reports from a process started as a service",
        "rk/agent/setup/opencode.py",
        '  if (process.argv.slice(1).some((arg) => arg === "serve" || arg === "--service")) return false;\n',
        "",
        ("tests/test_opencode2_plugin.py",),
    ),
    Mutant(
        "OpenCode 2 plugin: a child session's events reach the root's pane",
        "rk/agent/setup/opencode.py",
        "    const sid = d.sessionID;\n    if (children.has(sid)) return;\n",
        "    const sid = d.sessionID;\n",
        ("tests/test_opencode2_plugin.py",),
    ),
    Mutant(
        "OpenCode 2 plugin: a 429 typed otherwise is failed, not limited",
        "rk/agent/setup/opencode.py",
        '  if (e.status === 429 || type === "provider.rate-limit"',
        '  if (type === "provider.rate-limit"',
        ("tests/test_opencode2_plugin.py",),
    ),
    Mutant(
        'OpenCode 2 plugin: a "global" form marks a pane waiting',
        "rk/agent/setup/opencode.py",
        '        if (owner && owner !== "global" && !children.has(owner)) report("waiting", owner);\n',
        '        if (owner && !children.has(owner)) report("waiting", owner);\n',
        ("tests/test_opencode2_plugin.py",),
    ),
    Mutant(
        "OpenCode 2 plugin: a reply after the turn ended makes the pane active",
        "rk/agent/setup/opencode.py",
        '        if (running.has(sid)) report("active", sid);\n',
        '        report("active", sid);\n',
        ("tests/test_opencode2_plugin.py",),
    ),
    Mutant(
        "OpenCode 2 plugin: a shutdown is taken for the user's Esc",
        "rk/agent/setup/opencode.py",
        '        report(d.reason === "user" ? "interrupted" : "idle", sid);\n',
        '        report("interrupted", sid);\n',
        ("tests/test_opencode2_plugin.py",),
    ),
    Mutant(
        "doctor: Copilot's disableAllHooks goes unsaid",
        "rk/agent/setup/health.py",
        '    if isinstance(settings, dict) and settings.get("disableAllHooks") is True:\n',
        "    if False:\n",
        ("tests/test_doctor_hooks.py",),
    ),
    Mutant(
        "doctor: Qwen's disableAllHooks goes unsaid",
        "rk/agent/setup/health.py",
        '        path = config_path("qwen", probe.env)\n        problems.append(',
        '        path = config_path("qwen", probe.env)\n        problems.__len__(',
        ("tests/test_doctor_hooks.py",),
    ),
    Mutant(
        "doctor: a hook's missing rk script goes unsaid",
        "rk/agent/setup/health.py",
        "        if not os.path.exists(script):\n",
        "        if False:\n",
        ("tests/test_doctor_hooks.py",),
    ),
    Mutant(
        "doctor: a hook's rk script that is not executable goes unsaid",
        "rk/agent/setup/health.py",
        "        elif not os.path.isfile(script) or not os.access(script, os.X_OK):\n",
        "        elif False:\n",
        ("tests/test_doctor_hooks.py",),
    ),
    Mutant(
        "doctor: Claude's disableAllHooks goes unsaid",
        "rk/agent/setup/health.py",
        '    if doc.get("disableAllHooks") is True:\n',
        "    if False:\n",
        ("tests/test_doctor_hooks.py",),
    ),
    Mutant(
        "doctor: Claude's managed settings that allow only their own hooks go unsaid",
        "rk/agent/setup/health.py",
        '        if switches.get("disableAllHooks") is True or switches.get("allowManagedHooksOnly") is True:\n',
        "        if False:\n",
        ("tests/test_doctor_hooks.py",),
    ),
    Mutant(
        "doctor: Gemini's hooks switched off go unsaid",
        "rk/agent/setup/health.py",
        '        if switches.get("enabled") is False:\n',
        "        if False:\n",
        ("tests/test_doctor_hooks.py",),
    ),
    Mutant(
        "doctor: rk's Gemini hooks listed as disabled go unsaid",
        "rk/agent/setup/health.py",
        '        if isinstance(disabled, list) and HANDLER_EXTRA["name"] in disabled:\n',
        "        if False:\n",
        ("tests/test_doctor_hooks.py",),
    ),
    Mutant(
        "doctor: Codex hooks not trusted go unsaid",
        "rk/agent/setup/health.py",
        "    if trusted < ours:\n",
        "    if False:\n",
        ("tests/test_doctor_hooks.py",),
    ),
    Mutant(
        "doctor: Codex hooks disabled in config.toml go unsaid",
        "rk/agent/setup/health.py",
        "    if disabled:\n",
        "    if False:\n",
        ("tests/test_doctor_hooks.py",),
    ),
    Mutant(
        "doctor: Codex's codex_hooks feature off goes unsaid",
        "rk/agent/setup/health.py",
        '    if isinstance(features, dict) and features.get("codex_hooks") is False:\n',
        "    if False:\n",
        ("tests/test_doctor_hooks.py",),
    ),
    Mutant(
        "doctor: a version-1 rk plugin beside OpenCode 2 goes unsaid",
        "rk/agent/setup/health.py",
        '    if v2 and "export default" not in text:\n',
        "    if False:\n",
        ("tests/test_doctor_hooks.py",),
    ),
    Mutant(
        "doctor: an OpenCode plugin node cannot load goes unsaid",
        "rk/agent/setup/health.py",
        "    if verdict:\n",
        "    if False:\n",
        ("tests/test_doctor_hooks.py",),
    ),
    Mutant(
        "doctor: an opencode of version 2 is taken for OpenCode 1",
        "rk/agent/setup/health.py",
        "        if major.isdigit() and int(major) >= 2:\n",
        "        if major.isdigit() and int(major) >= 3:\n",
        ("tests/test_doctor_hooks.py",),
    ),
    Mutant(
        "doctor: the drift of hooks a CLI cannot load is said beside it",
        "rk/cli/doctor.py",
        '        if this is None or any(p.fatal or p.what == "hooks" for p in problems):\n',
        "        if this is None:\n",
        ("tests/test_doctor_hooks.py",),
    ),
    Mutant(
        "an add into a pane at its shell warns that the pane does not exist",
        "rk/cli/receipt.py",
        "        if target is not None and target.refused == SHELL_IN_PANE:",
        "        if False:",
        ("tests/test_target_follows.py", "-k", "quit_it_reaches"),
    ),
    Mutant(
        "an add on an ended session says it skips until the session exists",
        "rk/cli/receipt.py",
        "        elif target is not None and not target.resolved and entry.target.kind == TargetKind.SESSION:",
        "        elif False:",
        ("tests/test_target_follows.py", "-k", "fires_only_where"),
    ),
    Mutant(
        "--follow-session beside another target flag",
        "rk/cli/flags.py",
        "    if follow_session and given:\n",
        "    if False:\n",
        ("tests/test_target_follows.py", "-m", "not tmux"),
    ),
    # -- wake_from: wakes that mean something (rk/core/log/cause.py, rk/core/schedule/wake.py) ------------------
    Mutant(
        "wake_from human: the end of rk's own turn wakes anyway",
        "rk/core/schedule/due.py",
        "ignore = rk_turn_ended(sweep.causes.of) if entry.wake_on.from_human else None",
        "ignore = None",
        WAKE_FROM,
    ),
    Mutant(
        "wake_from human: a question in rk's turn let pass",
        "rk/core/schedule/wake.py",
        "return lambda pane, state: state == AgentState.IDLE and cause(pane, state) == RK",
        "return lambda pane, state: cause(pane, state) == RK",
        WAKE_FROM,
    ),
    Mutant(
        "turn cause: a manual send's turn is rk's",
        "rk/core/log/cause.py",
        "_RK_REASONS = frozenset({Reason.SCHEDULE, Reason.WAKE})",
        "_RK_REASONS = frozenset({Reason.SCHEDULE, Reason.WAKE, Reason.MANUAL})",
        WAKE_FROM,
    ),
    Mutant(
        "turn cause: a turn begun long after rk's delivery is rk's",
        "rk/core/log/cause.py",
        "i = bisect_left(stamps, max(run.rest_from, run.start - START_WINDOW))",
        "i = bisect_left(stamps, run.rest_from)",
        WAKE_FROM,
    ),
    Mutant(
        "wake_from human: the tick hands due() no state journal",
        "rk/engine/tick.py",
        "        journal=PaneHistory(str(files.dir), files.slug),\n",
        "",
        ("tests/test_wake_from.py", "-k", "tick"),
    ),
    Mutant(
        "turn cause: a journal behind the pane names rk",
        "rk/core/log/cause.py",
        "if not found or (at_rest and not found[-1].end):",
        "if not found:",
        WAKE_FROM,
    ),
    # -- 80 columns and 24 rows: the views a terminal shows (rk/cli/table.py, listing, status, views, demo) --------
    Mutant(
        "cron list drops NAME at 80 columns",
        "rk/cli/listing.py",
        '    Column("NAME", shrink_to=10),\n    Column("SCHEDULE"',
        '    Column("NAME", priority=2, shrink_to=10),\n    Column("SCHEDULE"',
        ("tests/test_views_80x24.py", "-k", "stay_apart"),
    ),
    Mutant(
        "cron list drops TARGET at 80 columns",
        "rk/cli/listing.py",
        '    Column("TARGET", shrink_to=12),\n    Column("FLAGS"',
        '    Column("TARGET", priority=1, shrink_to=12),\n    Column("FLAGS"',
        ("tests/test_views_80x24.py", "-k", "stay_apart"),
    ),
    Mutant(
        "a fitted list shows a session's whole id",
        "rk/cli/listing.py",
        "    if short and row.entry.target.kind == TargetKind.SESSION:",
        "    if False:",
        ("tests/test_views_80x24.py", "-k", "stay_apart"),
    ),
    Mutant(
        "cron list --full wraps on a terminal",
        "rk/cli/listing.py",
        "lines = layout(columns, cells, width) if fitted else full_view(columns, cells, width, title)",
        "lines = layout(columns, cells, width if fitted else None)",
        ("tests/test_views_80x24.py", "-k", "full_at"),
    ),
    Mutant(
        "status longer than the screen",
        "rk/cli/status.py",
        "for line in _lines(env, state, full, None if height is None else height - PROMPT_ROWS):",
        "for line in _lines(env, state, full, None):",
        ("tests/test_views_80x24.py", "-k", "one_screen"),
    ),
    Mutant(
        "status cuts a list without saying where the rest is",
        "rk/cli/table.py",
        "        if left:\n            noun",
        "        if False:\n            noun",
        ("tests/test_views_80x24.py", "-k", "screenful"),
    ),
    Mutant(
        "status --watch clears the screen for each frame",
        "rk/cli/status.py",
        'return scroll + HOME + "".join(',
        'return scroll + HOME + "\\x1b[2J" + "".join(',
        ("tests/test_views_80x24.py", "-k", "redraw"),
    ),
    Mutant(
        "status --watch scrolls every frame into the scrollback",
        "rk/cli/status.py",
        'scroll = "\\n" * (rows or 0) + HIDE_CURSOR if first else ""',
        'scroll = "\\n" * (rows or 0) + HIDE_CURSOR',
        ("tests/test_views_80x24.py", "-k", "watch_redraws"),
    ),
    Mutant(
        "status --watch writes escapes into a pipe",
        "rk/cli/status.py",
        "tty = bool(isatty and isatty())",
        "tty = True",
        ("tests/test_views_80x24.py", "-k", "plain_frames"),
    ),
    Mutant(
        "cron log -f in the piped widths on a terminal",
        "rk/cli/views.py",
        "    if width is None:\n        return FollowFormat(FOLLOW_WIDTHS)",
        "    if True:\n        return FollowFormat(FOLLOW_WIDTHS)",
        ("tests/test_views_80x24.py", "-k", "follow"),
    ),
    Mutant(
        "cron log -f names an entry added after it started `-`",
        "rk/cli/views.py",
        "                names.update(_names(env))\n",
        "",
        ("tests/test_views_80x24.py", "-k", "follow_fits"),
    ),
    Mutant(
        "cron log drops NAME at 80 columns",
        "rk/cli/views.py",
        '        Column("NAME", shrink_to=8),',
        '        Column("NAME", priority=2, shrink_to=8),',
        ("tests/test_views_80x24.py", "-k", "demo"),
    ),
    Mutant(
        "the demo's closing tables as wide as the table",
        "demo/run.py",
        '    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))\n',
        "",
        ("tests/test_views_80x24.py", "-k", "demo"),
    ),
    # -- Claude Code's session registry: a record counts only when every check passes (issue 28) ----------------
    Mutant(
        "registry: any .json name read as a session record",
        "rk/store/claude_sessions.py",
        "names = [n for n in os.listdir(fd)[:MAX_NAMES] if RECORD_NAME.match(n)]",
        'names = [n for n in os.listdir(fd)[:MAX_NAMES] if n.endswith(".json")]',
        CLAUDE_SESSIONS,
    ),
    Mutant(
        "registry: a symlinked record stat'ed through",
        "rk/store/claude_sessions.py",
        "st = os.stat(name, dir_fd=fd, follow_symlinks=False)",
        "st = os.stat(name, dir_fd=fd, follow_symlinks=True)",
        CLAUDE_SESSIONS,
    ),
    Mutant(
        "registry: a symlinked record read through",
        "rk/store/claude_sessions.py",
        "file = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)",
        "file = os.open(name, os.O_RDONLY | os.O_CLOEXEC, dir_fd=fd)",
        CLAUDE_SESSIONS,
    ),
    Mutant(
        "registry: a symlinked sessions directory read through",
        "rk/store/claude_sessions.py",
        'os.path.join(home, "sessions"), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC',
        'os.path.join(home, "sessions"), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC',
        CLAUDE_SESSIONS,
    ),
    Mutant(
        "registry: another user's file taken",
        "rk/store/claude_sessions.py",
        " or st.st_uid != uid",
        "",
        CLAUDE_SESSIONS,
    ),
    Mutant(
        "registry: a torn read not retried",
        "rk/store/claude_sessions.py",
        "TORN_RETRIES = 3\n",
        "TORN_RETRIES = 0\n",
        CLAUDE_SESSIONS,
    ),
    Mutant(
        "registry: a dead or reused pid taken (start time unchecked)",
        "rk/store/claude_sessions.py",
        "if not record.proc_start or started != record.proc_start:",
        "if not record.proc_start:",
        CLAUDE_SESSIONS,
    ),
    Mutant(
        "registry: a dead pid's file taken",
        "rk/store/claude_sessions.py",
        "        if started is None:\n            return None  # gone",
        "        if False:\n            return None  # gone",
        CLAUDE_SESSIONS,
    ),
    Mutant(
        "registry: a zombie counted alive",
        "rk/host/process.py",
        'fields[0][:1] in ("Z", "X", "x")',
        "False",
        CLAUDE_SESSIONS,
    ),
    Mutant(
        "registry: a remembered record kept after its process ended",
        "rk/store/claude_sessions.py",
        "if proc_start(known.record.pid, self.proc_root) == known.record.proc_start:",
        "if True:",
        CLAUDE_SESSIONS,
    ),
    Mutant(
        "registry: a pid outside the pane's tree taken",
        "rk/store/claude_sessions.py",
        "            if record is None or depth is None:\n",
        "            if record is None:\n",
        CLAUDE_SESSIONS,
    ),
    Mutant(
        "registry: a tmux field naming another pane ignored",
        "rk/store/claude_sessions.py",
        "if record is None or not names_pane(record.tmux, key[1]):",
        "if record is None:",
        CLAUDE_SESSIONS,
    ),
    Mutant(
        "registry: two sessions at one depth, the first taken",
        "rk/store/claude_sessions.py",
        "if not found or (len(found) > 1 and found[0][0] == found[1][0]):",
        "if not found:",
        CLAUDE_SESSIONS,
    ),
    Mutant(
        "registry: a changed file not read again",
        "rk/store/claude_sessions.py",
        "return stamp == self.stamp and self.read_at - self.stamp[1] > COARSE_MTIME_NS",
        "return stamp is not None",
        CLAUDE_SESSIONS,
    ),
    Mutant(
        "registry: a file read within the mtime's step trusted by its stamp",
        "rk/store/claude_sessions.py",
        "return stamp == self.stamp and self.read_at - self.stamp[1] > COARSE_MTIME_NS",
        "return stamp == self.stamp",
        CLAUDE_SESSIONS,
    ),
    Mutant(
        "registry: JSON too deep for the parser raises out of the reader",
        "rk/store/claude_sessions.py",
        "except (ValueError, RecursionError):",
        "except ValueError:",
        CLAUDE_SESSIONS,
    ),
    Mutant(
        "registry: an infinite status time taken",
        "rk/core/pane/registry.py",
        "return number if math.isfinite(number) else None",
        "return number",
        CLAUDE_SESSIONS,
    ),
    Mutant(
        "registry: a session of any kind taken",
        "rk/core/pane/registry.py",
        'if doc.get("kind") != INTERACTIVE:',
        "if False:",
        CLAUDE_SESSIONS,
    ),
    Mutant(
        "registry: a record whose pid is not its file's taken",
        "rk/core/pane/registry.py",
        "if isinstance(own, bool) or own != pid or pid <= 0:",
        "if pid <= 0:",
        CLAUDE_SESSIONS,
    ),
    Mutant(
        "registry: a status older than the pane's state believed",
        "rk/core/pane/registry.py",
        "if int(record.updated_at) < epoch:",
        "if False:",
        CLAUDE_SESSIONS,
    ),
    Mutant(
        "registry: idle ends a limit",
        "rk/core/pane/registry.py",
        "if state == AgentState.LIMITED and implied != AgentState.ACTIVE:",
        "if False:",
        CLAUDE_SESSIONS,
    ),
    Mutant(
        "registry: the tick's look never asks the registry",
        "rk/tmux/observe.py",
        "needs_look(pane, now, _registry(server, pane, now))",
        "needs_look(pane, now)",
        ("tests/test_claude_sessions_tmux.py",),
    ),
    Mutant(
        "registry: a turn end in the registry never looked at",
        "rk/core/pane/look.py",
        "if ends_turn(registry, pane.state):",
        "if False:",
        CLAUDE_SESSIONS,
    ),
    # -- Qwen Code (rk/agent/setup/qwen.py, rk/core/pane/screen/qwen.py) ----------------------------------
    Mutant(
        "qwen's idle_prompt not hooked: an Esc'd turn stays active",
        "rk/agent/setup/qwen.py",
        '    ("Notification", "idle_prompt", "idle-notice"),\n',
        "",
        ("tests/test_qwen.py",),
    ),
    Mutant(
        "qwen's idle_prompt writes idle over a limit",
        "rk/agent/setup/qwen.py",
        '    ("Notification", "idle_prompt", "idle-notice"),',
        '    ("Notification", "idle_prompt", AgentState.IDLE),',
        ("tests/test_qwen.py",),
    ),
    Mutant(
        "qwen's StopFailure read as a normal turn end",
        "rk/agent/setup/qwen.py",
        '    ("StopFailure", None, "failed"),',
        '    ("StopFailure", None, AgentState.IDLE),',
        ("tests/test_qwen.py",),
    ),
    Mutant(
        "every qwen notification says waiting",
        "rk/agent/setup/qwen.py",
        '    ("Notification", "permission_prompt", AgentState.WAITING),',
        '    ("Notification", None, AgentState.WAITING),',
        ("tests/test_qwen.py",),
    ),
    Mutant(
        "the qwen hook does not look for node",
        "rk/agent/hook_event.py",
        '    "qwen": ("node", "qwen"),\n',
        "",
        ("tests/test_qwen.py",),
    ),
    Mutant(
        "doctor does not read qwen's package",
        "rk/cli/doctor.py",
        '    "qwen": "@qwen-code/qwen-code",\n',
        "",
        ("tests/test_qwen.py",),
    ),
    Mutant(
        "qwen's cursor cell read as part of a draft",
        "rk/core/pane/screen/qwen.py",
        'composer=r"^> (?P<text>.*?)[\\s\\u200b]*$",',
        'composer=r"^> (?P<text>.*?)\\s*$",',
        ("tests/test_qwen.py",),
    ),
    Mutant(
        "a reply's last line above qwen's composer read as its status line",
        "rk/core/pane/screen/qwen.py",
        '    status=(r"^  (?![◆✕✓●?>x] |  )\\S",),\n    status_anchor=r"^─{10,}$",\n'
        '    working=(r"esc to cancel\\)$",),\n    working_ink=True,',
        '    status=(r"^  \\S",),\n    status_anchor=r"^─{10,}$",\n    working=(r"esc to cancel\\)$",),',
        ("tests/test_qwen.py",),
    ),
    Mutant(
        "qwen's wrapped draft read as its first row only",
        "rk/core/pane/screen/qwen.py",
        '    composer_more=r"^  (?P<text>.*?)[\\s\\u200b]*$",\n',
        "",
        ("tests/test_qwen.py",),
    ),
    Mutant(
        "qwen's rate_limit_error not read as a limit",
        "rk/core/pane/screen/qwen.py",
        '        r"rate_limit",\n',
        "",
        ("tests/test_qwen.py",),
    ),
    # -- GitHub Copilot CLI: its hooks and its screen -------------------------------------------------------
    Mutant(
        "copilot: sessionEnd (once per session) taken as the turn end instead of agentStop",
        "rk/agent/setup/copilot.py",
        '("agentStop", None, AgentState.IDLE)',
        '("sessionEnd", None, AgentState.IDLE)',
        ("tests/test_copilot_setup.py",),
    ),
    Mutant(
        "copilot: every notification (agent_idle, shell_completed…) read as a dialog",
        "rk/agent/setup/copilot.py",
        '("notification", "permission_prompt|elicitation_dialog", AgentState.WAITING)',
        '("notification", None, AgentState.WAITING)',
        ("tests/test_copilot_setup.py",),
    ),
    Mutant(
        "copilot: the hook walks past the native binary (MainThread) to its node loader",
        "rk/agent/hook_event.py",
        '"copilot": ("copilot", "MainThread", "node"),',
        '"copilot": ("copilot", "node"),',
        ("tests/test_copilot_setup.py",),
    ),
    Mutant(
        "copilot screen: another CLI's reply quoting `esc esc interrupt` makes its screen Copilot's",
        "rk/core/pane/screen/copilot.py",
        'r"^ \\S (?:\\S.* )?esc esc (?:interrupt|edit prompt|cancel)\\b",',
        'r"esc esc (?:interrupt|edit prompt|cancel)\\b",',
        ("tests/test_copilot_screen.py",),
    ),
    Mutant(
        "copilot screen: the status's `esc esc interrupt` not read as working",
        "rk/core/pane/screen/copilot.py",
        'working=(r"\\besc esc (?:interrupt|edit prompt|cancel)\\b", ',
        'working=(r"\\bnever matches\\b", ',
        ("tests/test_copilot_screen.py", "tests/test_screen.py", "-k", "copilot"),
    ),
    Mutant(
        "copilot screen: GitHub's `rate limit` message not a limit",
        "rk/core/pane/screen/copilot.py",
        '        r"(?i)\\brate.?limit",\n',
        "",
        ("tests/test_copilot_screen.py", "tests/test_screen.py", "-k", "copilot"),
    ),
    Mutant(
        "copilot screen: Claude's layout tried first reads a Copilot pane",
        "rk/core/pane/screen/__init__.py",
        "(copilot.LAYOUT, claude.LAYOUT,",
        "(claude.LAYOUT, copilot.LAYOUT,",
        ("tests/test_copilot_screen.py", "tests/test_screen.py", "-k", "copilot"),
    ),
    # -- Kilo Code CLI (rk/agent/setup/kilo.py, rk/core/pane/screen/kilo.py) ------------------------------
    Mutant(
        "kilo: the plugin reports as opencode",
        "rk/agent/setup/kilo.py",
        """    body = body.replace(reporting, '["agent", "hook", "--agent", "kilo", token]')\n""",
        "",
        ("tests/test_kilo.py",),
    ),
    Mutant(
        "opencode, kilo: a plugin file rk did not write is replaced",
        "rk/agent/setup/opencode.py",
        "    if old is not None and not ours:\n        raise SetupError",
        "    if False:\n        raise SetupError",
        ("tests/test_kilo.py", "tests/test_agent_setup.py", "-k", "plugin or kilo"),
    ),
    Mutant(
        "kilo: npm's native .kilo is not an agent",
        "rk/core/pane/program.py",
        'AGENT_ALIASES = {".kilo": "kilo"}',
        "AGENT_ALIASES: dict[str, str] = {}",
        ("tests/test_kilo.py",),
    ),
    Mutant(
        "kilo: the layout shares OpenCode's compiled patterns",
        "rk/core/pane/screen/kilo.py",
        "    _compiled={},",
        "",
        ("tests/test_kilo.py",),
    ),
    Mutant(
        "kilo: the grey example is read as a draft",
        "rk/core/pane/screen/kilo.py",
        'placeholder_fg=frozenset({"2;166;160;155"}),',
        "placeholder_fg=frozenset(),",
        ("tests/test_screen.py", "-k", "kilo"),
    ),
    Mutant(
        "kilo: an error's red bar is not a limit's mark",
        "rk/core/pane/screen/kilo.py",
        'limit_mark_fg=frozenset({"2;255;100;103"}),',
        "limit_mark_fg=frozenset(),",
        ("tests/test_screen.py", "-k", "kilo"),
    ),
    Mutant(
        "kilo: the operator's MCP tools run unasked",
        "rk/agent/setup/permissions.py",
        'RULES["kilo"] = Rules(kilo.mcp_config_path, ("permission",), lambda t: f"{MCP_NAME}_{t}", ask=True)',
        "pass",
        ("tests/test_kilo.py",),
    ),
    Mutant(
        "kilo: the operator's Kilo asks for pause and resume",
        "rk/agent/setup/operator.py",
        'PERMISSION_VARIABLES = {"opencode": "OPENCODE_PERMISSION", "kilo": "KILO_PERMISSION"}',
        'PERMISSION_VARIABLES = {"opencode": "OPENCODE_PERMISSION"}',
        ("tests/test_kilo.py",),
    ),
    # -- views that answer at once: the fast path reads only plain arguments, as click would (rk/cli/fastpath.py)
    Mutant(
        "fast path: a value that starts with - taken as a value",
        "rk/cli/fastpath.py",
        'if not text or text.startswith("-"):',
        "if not text:",
        FASTPATH,
    ),
    Mutant(
        "fast path: a repeated option read (click keeps the last)",
        "rk/cli/fastpath.py",
        "if param is None or param in given:",
        "if param is None:",
        FASTPATH,
    ),
    Mutant(
        "fast path: a missing argument not left to typer's usage error",
        "rk/cli/fastpath.py",
        "if not grammar.required <= len(positional) <= len(grammar.arguments):",
        "if len(positional) > len(grammar.arguments):",
        FASTPATH,
    ),
    Mutant(
        "fast path: a number with a leading zero read",
        "rk/cli/fastpath.py",
        ' or (len(text) > 1 and text[0] == "0")',
        "",
        FASTPATH,
    ),
    Mutant(
        "fast path: shell completion not left to click",
        "rk/cli/fastpath.py",
        'if os.environ.get("_RK_COMPLETE"):',
        "if False:",
        FASTPATH,
    ),
    Mutant(
        "fast path: the group levels' -L and --json dropped",
        "rk/cli/fastpath.py",
        "            group_options(env, server, as_json)\n",
        "            pass\n",
        FASTPATH,
    ),
    Mutant(
        "fast path: a view's exit status dropped",
        "rk/cli/fastpath.py",
        "return status if isinstance(status, int) and not isinstance(status, bool) else 0",
        "return 0",
        FASTPATH,
    ),
    Mutant(
        "fast path: an option of another level read",
        "rk/cli/fastpath.py",
        'GROUPS: Mapping[str, Grammar] = {"cron": GROUP, "agent": Grammar()}',
        'GROUPS: Mapping[str, Grammar] = {"cron": GROUP, "agent": GROUP}',
        FASTPATH,
    ),
    # -- every turn end within a second, no tick needed (rk/core/pane/watch.py, rk/tmux/watch.py, rk/engine/watch.py)
    Mutant(
        "watch: a pane whose frame moved is not captured again",
        "rk/core/pane/watch.py",
        "last.state != g.state or last.frame != g.frame or",
        "last.state != g.state or",
        ("tests/test_watch.py", "-k", "frame_may_have_changed"),
    ),
    Mutant(
        "watch: output in the second of the last capture never seen (tmux counts whole seconds)",
        "rk/core/pane/watch.py",
        "g.activity >= last.at",
        "g.activity > last.at",
        ("tests/test_watch.py", "-k", "frame_may_have_changed"),
    ),
    Mutant(
        "watch: a turn that just began is read before its first frame",
        "rk/core/pane/watch.py",
        "now - since >= WATCH_AFTER]",
        "now >= since]",
        ("tests/test_watch.py", "-k", "active_long_enough"),
    ),
    Mutant(
        "watch: a pane not active has its turn ended",
        "rk/core/pane/watch.py",
        "return pane.state == AgentState.ACTIVE and correction(",
        "return correction(",
        ("tests/test_watch.py", "-k", "only_an_active_pane"),
    ),
    Mutant(
        "watch: a server with an active pane glimpsed only every few seconds",
        "rk/engine/watch.py",
        "mono + (LOOK_EVERY if report.active else QUIET_EVERY)",
        "mono + QUIET_EVERY",
        ("tests/test_watch.py", "-k", "every_look"),
    ),
    Mutant(
        "watch: the ticker never glimpses between its polls",
        "rk/engine/ticker.py",
        "if (look := self.watcher.wait(self.served, now_mono)) <= 0:",
        "if (look := self.watcher.wait(self.served, now_mono)) < -1e9:",
        ("tests/test_watch_tmux.py", "-k", "ticker_sees"),
    ),
    Mutant(
        "await: never looks at the screen itself when no ticker watches",
        "rk/channels/waiter.py",
        "looking = looks_itself(env, slug, progress, views)",
        "looking = False",
        ("tests/test_watch_tmux.py", "-k", "no_ticker"),
    ),
    Mutant(
        "await: looks itself beside a ticker that already watches the server",
        "rk/channels/waiter.py",
        "return busy and not ticker_watches(env, slug)",
        "return busy",
        ("tests/test_watch.py", "-k", "looks_itself"),
    ),
    Mutant(
        "watch: Claude's session registry saying the turn ended is not heard",
        "rk/tmux/watch.py",
        "    return True if ends_turn(claude_sessions.verdict_for(pane, os.environ), pane.state) else None\n",
        "    return None\n",
        ("tests/test_watch.py",),
    ),
    Mutant(
        "hook: an idle notice that finds the turn still active does not record it interrupted",
        "rk/agent/hook.py",
        '    if notice and state:\n        args = [*hook_tmux.interrupted_if_active(pane, epoch), ";", *args]\n',
        "",
        ("tests/test_agent_hook.py", "-k", "notice"),
    ),
    Mutant(
        "screen: a turn that ended on an error entry recorded ok",
        "rk/core/pane/turn.py",
        "    return FAILED if failed else OK\n",
        "    return OK\n",
        ("tests/test_screen_failed.py",),
    ),
    Mutant(
        "screen: any last entry read as an error",
        "rk/core/pane/screen/engine.py",
        '    if not last or not any(rx.match(last[0].plain) for rx in layout.rx("limit_entry")):\n',
        "    if not last:\n",
        ("tests/test_screen_failed.py",),
    ),
    Mutant(
        "screen: an error mark in another colour read as an error",
        "rk/core/pane/screen/engine.py",
        "    return not layout.limit_mark_fg or _drawn_in(last[0], layout.limit_mark_fg)\n",
        "    return True\n",
        ("tests/test_screen_failed.py",),
    ),
    Mutant(
        "interrupt: Copilot's two Escapes the default gap apart (outside its window under load)",
        "rk/core/cost/turn_timeout.py",
        'KEY_GAPS: dict[str, float] = {"copilot": 0.25}',
        "KEY_GAPS: dict[str, float] = {}",
        ("tests/test_interrupt_keys_tmux.py",),
    ),
    Mutant(
        "vibe: the native vibe-rs is not an agent",
        "rk/core/pane/program.py",
        'AGENT_ALIASES["vibe-rs"] = "vibe"',
        "pass",
        ("tests/test_vibe.py", "-k", "vibe_rs"),
    ),
    Mutant(
        "vibe: post_agent ends no turn",
        "rk/agent/setup/vibe.py",
        '("post_agent", None, AgentState.IDLE),',
        '("post_agent", None, AgentState.ACTIVE),',
        ("tests/test_vibe.py", "-k", "beside_the_users"),
    ),
    Mutant(
        "vibe: an install drops the user's own hooks",
        "rk/agent/setup/toml_block.py",
        "new = before + block + after if old else lead + block",
        "new = block",
        ("tests/test_vibe.py", "-k", "beside_the_users or middle"),
    ),
    Mutant(
        "vibe: a removal takes the whole file with it",
        "rk/agent/setup/toml_block.py",
        "    return before + after, True",
        '    return "", True',
        ("tests/test_vibe.py", "-k", "beside_the_users"),
    ),
    Mutant(
        "vibe: a begin line without its end is guessed at",
        "rk/agent/setup/toml_block.py",
        "if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:",
        "if False:",
        ("tests/test_vibe.py", "-k", "cannot_edit"),
    ),
    Mutant(
        "vibe: a hook of the user's named as rk's is overwritten in Vibe's eyes",
        "rk/agent/setup/vibe.py",
        "    if taken:\n",
        "    if False:\n",
        ("tests/test_vibe.py", "-k", "cannot_edit"),
    ),
    Mutant(
        "vibe: rk uninstall reads config.toml as a JSON MCP list",
        "rk/agent/setup/removal.py",
        'if agent not in ("codex", "vibe"):',
        'if agent != "codex":',
        ("tests/test_vibe.py", "-k", "config_toml_alone"),
    ),
    Mutant(
        "vibe: a subagent's post_agent ends the pane's turn",
        "rk/agent/hook_event.py",
        'return provider == "vibe" and isinstance(payload, dict) and bool(payload.get("parent_session_id"))',
        "return False",
        ("tests/test_vibe.py", "-k", "subagent"),
    ),
    Mutant(
        "vibe: the hook records the app server, not the TUI that owns the keyboard",
        "rk/agent/hook_event.py",
        '"vibe": ("vibe-rs",),',
        '"vibe": ("vibe-app-server", "vibe-rs"),',
        ("tests/test_vibe.py", "-k", "app_server"),
    ),
    Mutant(
        "vibe: an idle pane is never looked at, so a turn a human began stays idle",
        "rk/core/pane/look.py",
        'UNREPORTED_STARTS = frozenset({"vibe"})',
        "UNREPORTED_STARTS: frozenset[str] = frozenset()",
        ("tests/test_vibe.py", "-k", "idle_vibe"),
    ),
    Mutant(
        "vibe: doctor passes a hooks.toml Vibe cannot parse",
        "rk/agent/setup/health.py",
        '    except tomllib.TOMLDecodeError as exc:\n        return [LoadProblem(f"{path} is not valid TOML',
        '    except tomllib.TOMLDecodeError as exc:\n        return [] and [LoadProblem(f"{path} is not valid TOML',
        ("tests/test_vibe.py", "-k", "doctor_says"),
    ),
    Mutant(
        "vibe: doctor reads no version from the pip dist-info",
        "rk/cli/doctor.py",
        'DISTRIBUTIONS = {"vibe": "mistral_vibe"}',
        "DISTRIBUTIONS: dict[str, str] = {}",
        ("tests/test_vibe.py", "-k", "dist_info"),
    ),
    Mutant(
        "vibe: an Esc read on Vibe's screen (`⎣ Interrupted`) ends the turn ok",
        "rk/core/pane/turn.py",
        'line.lstrip("⎿⎣■•◦✕✗×!>-─│ \\xa0")',
        'line.lstrip("⎿■•◦✕✗×!>-─│ \\xa0")',
        ("tests/test_vibe.py", "-k", "interrupted"),
    ),
    # -- the real-agent suite on parallel workers (issue 31: CI under 30 minutes) -----------------------------
    Mutant(
        "agents: two workers install into one cache at once",
        "tests/agents/harness.py",
        "fcntl.flock(f, fcntl.LOCK_EX)",
        "fcntl.flock(f, fcntl.LOCK_SH)",
        ("tests/test_agents_install_lock.py",),
    ),
    Mutant(
        "agents: a rig's state dir under pytest's own tmp_path (a worker's is too long for a socket)",
        "tests/agents/conftest.py",
        "@pytest.fixture\ndef tmp_path() -> Iterator[Path]:",
        "@pytest.fixture\ndef tmp_path_short() -> Iterator[Path]:",
        ("-m", "agents", "tests/agents/test_worker_paths.py"),
    ),
    Mutant(
        "agents: a run's tmux socket under its root",
        "tests/agents/harness.py",
        'self.sockdir = Path(tempfile.mkdtemp(prefix="rk-tmux-", dir="/tmp"))',
        'self.sockdir = self.root / "tmux"',
        ("-m", "agents", "tests/agents/test_worker_paths.py"),
    ),
]


def copy_checkout(dest: Path) -> None:
    """The files git knows (tracked and new), without the venv or caches."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for raw in listed:
        if not raw:
            continue
        rel = raw.decode()
        src = ROOT / rel
        if not src.is_file():
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)


def run_tests(copy: Path, tests: tuple[str, ...], timeout: float) -> tuple[bool, float, str]:
    """(passed, seconds, the last lines): the selection, in the copy, with its rk."""
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE", "RK_NOW")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    started = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
            cwd=copy,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            start_new_session=True,
        )
    except subprocess.TimeoutExpired:
        return False, time.monotonic() - started, "timed out"
    out = (proc.stdout + proc.stderr).strip().splitlines()
    failed = [line.split(" - ")[0].removeprefix("FAILED ") for line in out if line.startswith(("FAILED ", "ERROR "))]
    tail = failed[0] if failed else "\n".join(out[-3:])
    return proc.returncode == 0, time.monotonic() - started, tail


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", action="append", default=[], help="only mutants whose name contains this (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("-v", "--verbose", action="store_true", help="name the test that killed each mutant")
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds per mutant's run")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if not args.k or any(k.lower() in m.name.lower() for k in args.k)]
    if args.list:
        for m in chosen:
            print(f"{m.path:24} {m.name}")
        return 0
    stale = [m for m in chosen if (ROOT / m.path).read_text().count(m.old) != 1]
    for m in stale:
        print(f"stale: {m.name}: the snippet is not in {m.path} exactly once", file=sys.stderr)
    if stale:
        return 2
    with tempfile.TemporaryDirectory(prefix="rk-mutants-") as tmp:
        copy = Path(tmp)
        copy_checkout(copy)
        for selection in sorted({m.tests for m in chosen}):
            ok, secs, tail = run_tests(copy, selection, args.timeout)
            if not ok:
                print(f"the unmutated selection fails ({' '.join(selection)}):\n{tail}", file=sys.stderr)
                return 2
        survivors = []
        for i, m in enumerate(chosen, 1):
            target = copy / m.path
            original = target.read_text()
            target.write_text(original.replace(m.old, m.new, 1))
            try:
                passed, secs, tail = run_tests(copy, m.tests, args.timeout)
            finally:
                target.write_text(original)
            verdict = "SURVIVED" if passed else "killed"
            print(f"[{i:2}/{len(chosen)}] {verdict:8} {secs:5.1f}s  {m.path}: {m.name}", flush=True)
            if not passed and args.verbose:
                print(f"          by {tail}", flush=True)
            if passed:
                survivors.append(m)
    killed = len(chosen) - len(survivors)
    print(f"\nkilled {killed} of {len(chosen)} ({100 * killed / max(len(chosen), 1):.0f}%)")
    for m in survivors:
        print(f"  survived: {m.path}: {m.name}")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
