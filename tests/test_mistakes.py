"""Mistakes that teach: a flag a newcomer gets wrong is refused (or warned about) in one
line that names the flag and the fix, with the exit status the CLI's conventions give
(2 usage, 1 not found), never a traceback and never a silent empty answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rk.core.durations import DurationError, missing_unit, parse_duration
from rk.core.environ import ROLE_OPTION
from rk.core.suggest import closest, did_you_mean, known_list
from tests.cli_helpers import (
    T0,
    json_error,
    json_ok,
    log_line,
    make_env,
    one_line_error,
    run_in,
    run_sub,
    write_private,
)

PANE = ("--pane", "%1")


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return make_env(tmp_path, RK_NOW=str(T0), **extra)


def _entry(env: dict[str, str], *flags: str) -> str:
    return json_ok(run_in(["cron", "add", "hi", "--every", "5m", *PANE, *flags, "--json"], env))["id"]


# -- two schedule flags: both named ---------------------------------------------------------------


@pytest.mark.parametrize(
    "flags, first, second",
    [
        (("--at", "17:30", "--in", "30m"), "--at", "--in"),
        (("--in", "30m", "--every", "5m"), "--every", "--in"),
        (("--at", "17:30", "--cron", "0 9 * * *"), "--cron", "--at"),
    ],
)
def test_two_schedule_flags_name_both_and_the_fix(tmp_path, flags, first, second):
    res = run_in(["cron", "add", "x", *flags, *PANE], _env(tmp_path))
    assert res.code == 2, res
    message = one_line_error(res)
    assert message.startswith(f"{first} and {second} cannot go together"), message
    assert "--at or --in" in message and "keep one of them" in message
    assert not (tmp_path / "state").exists()  # nothing written


def test_at_alone_at_a_time_of_day_is_taken(tmp_path):
    rec = json_ok(run_in(["cron", "add", "x", "--at", "17:30", *PANE, "--json"], _env(tmp_path)))
    assert rec["next"] == T0 + 9 * 3600 + 1800  # 08:00 UTC now: 17:30 today


@pytest.mark.parametrize(
    "value, said",
    [
        ("2027-01-15T17:30", "needs an offset"),  # an ISO time without its offset
        ("5pm", "cannot read time"),
        ("7", "--in 7m for a delay"),  # a bare number is no time anyone means
    ],
)
def test_an_at_it_cannot_read_says_the_forms_it_takes(tmp_path, value, said):
    res = run_in(["cron", "add", "x", "--at", value, *PANE], _env(tmp_path))
    assert res.code == 2, res
    message = one_line_error(res)
    assert message.startswith("--at") and said in message, message
    assert "HH:MM" in message and "ISO-8601 with an offset" in message and "unix seconds" in message, message


def test_at_in_unix_seconds_still_works(tmp_path):
    rec = json_ok(run_in(["cron", "add", "x", "--at", str(T0 + 600), *PANE, "--json"], _env(tmp_path)))
    assert rec["next"] == T0 + 600


# -- --outcome that matches nothing ---------------------------------------------------------------


def _logged(tmp_path: Path) -> dict[str, str]:
    env = _env(tmp_path)
    lines = [
        log_line(T0 - 300, "aaaa", "%1", outcome="delivered"),
        log_line(T0 - 200, "aaaa", "%1", outcome="skipped-busy: draft"),
        log_line(T0 - 100, "aaaa", "%1", outcome="failed: paste: no such pane"),
    ]
    write_private(Path(env["RK_STATE_DIR"]) / "default.log", "\n".join(lines) + "\n")
    return env


def test_an_outcome_that_matches_no_outcome_is_refused_with_the_known_ones(tmp_path):
    env = _logged(tmp_path)
    res = run_in(["cron", "log", "--outcome", "deliverd"], env)
    assert res.code == 2, res
    message = one_line_error(res)
    assert message.startswith("--outcome 'deliverd' matches no outcome (did you mean delivered?)"), message
    for known in ("delivered", "skipped-busy", "failed", "rate-capped", "missed"):
        assert known in message
    assert "notify-queued" not in message  # notify.log's, never a server's log
    as_json = run_in(["cron", "log", "--outcome", "deliverd", "--json"], env)
    assert "did you mean delivered?" in json_error(as_json, "usage")


@pytest.mark.parametrize(
    "prefix, count",
    [("delivered", 1), ("deliv", 1), ("skipped", 1), ("skipped-busy: draft", 1), ("failed: paste", 1), ("f", 1)],
)
def test_an_outcome_prefix_of_a_known_one_filters_as_before(tmp_path, prefix, count):
    lines = json_ok(run_in(["cron", "log", "--outcome", prefix, "--json"], _logged(tmp_path)))
    assert len(lines) == count and all(line["outcome"].startswith(prefix) for line in lines)


def test_a_known_outcome_no_line_has_is_an_empty_answer(tmp_path):
    res = run_in(["cron", "log", "--outcome", "respawned"], _logged(tmp_path))
    assert res.code == 0 and res.out == "no log lines\n", res


# -- -L naming no server ----------------------------------------------------------------------------


def test_a_server_with_no_file_and_no_tmux_is_not_found_naming_the_known_ones(tmp_path):
    env = _env(tmp_path)
    _entry(dict(env), "-L", "work")
    for verb in (("cron", "list"), ("cron", "log")):
        res = run_in([*verb, "-L", "wrok"], env)
        assert res.code == 1, res
        message = one_line_error(res)
        assert message.startswith("-L wrok: no such server: no entries file, and no tmux server of that name")
        assert message.endswith("(did you mean work?); servers: work"), message
        assert json_error(run_in([*verb, "-L", "wrok", "--json"], env), "not-found") == message


def test_without_any_server_the_refusal_says_so(tmp_path):
    res = run_in(["cron", "list", "-L", "nosuchserver"], _env(tmp_path))
    assert res.code == 1 and one_line_error(res).endswith("; servers: none"), res


def test_the_default_server_and_any_server_with_a_file_are_listed_as_before(tmp_path):
    env = _env(tmp_path)
    assert run_in(["cron", "list"], env).out == "no cron entries on server default\n"  # no -L: the first run
    state = Path(env["RK_STATE_DIR"])
    write_private(state / "logged.log", log_line(T0 - 60, "aaaa", "%1") + "\n")
    assert run_in(["cron", "list", "-L", "logged"], env).out == "no cron entries on server logged\n"
    assert len(json_ok(run_in(["cron", "log", "-L", "logged", "--json"], env))) == 1
    assert run_in(["cron", "pause", "-L", "paused"], env).code == 0
    assert run_in(["cron", "list", "-L", "paused"], env).code == 0


def test_a_running_tmux_server_without_entries_is_known(tmp_path, tmux_server):
    env = _env(tmp_path, TMUX_TMPDIR=str(Path(tmux_server.path).parent.parent))
    res = run_in(["cron", "list", "-L", tmux_server.name], env)
    assert res.code == 0 and res.out == f"no cron entries on server {tmux_server.name}\n", res
    refused = run_in(["cron", "list", "-L", "nosuch"], env)
    assert refused.code == 1 and one_line_error(refused).endswith(f"servers: {tmux_server.name}"), refused


def test_an_unknown_server_through_a_real_process(tmp_path):
    res = run_sub(["cron", "list", "-L", "nosuchserver"], _env(tmp_path))
    assert res.code == 1 and one_line_error(res).startswith("-L nosuchserver: no such server"), res


# -- --role naming no window --------------------------------------------------------------------------


@pytest.fixture
def operator_env(tmp_path, tmux_server, env):
    """A live server whose one window carries role operator; `env` for it."""
    window = tmux_server.run("list-windows", "-F", "#{window_id}").split()[0]
    tmux_server.set_window_option(window, ROLE_OPTION, "operator")
    return dict(env, RK_NOW=str(T0))


def test_add_for_a_role_no_window_carries_warns_naming_the_roles(tmux_server, operator_env):
    res = run_in(["cron", "add", "hi", "--every", "5m", "--role", "operater", "-L", tmux_server.name], operator_env)
    assert res.code == 0, res  # kept: the window may come
    warning = next(line for line in res.err.splitlines() if "role:operater" in line)
    assert warning == (
        "rk: warning: role:operater does not exist now (no window carries role operater; roles here: operator;"
        " did you mean operator?); the entry skips until it does"
    ), res.err


def test_send_to_a_role_no_window_carries_is_refused_and_nothing_is_typed(tmux_server, operator_env):
    pane = tmux_server.run("list-panes", "-F", "#{pane_id}").split()[0]
    before = tmux_server.capture(pane)
    res = run_in(["send", "look at worker 2", "--role", "operater", "-L", tmux_server.name], operator_env)
    assert res.code == 1, res
    assert one_line_error(res) == (
        "--role operater: no window carries role operater; roles here: operator; did you mean operator?; nothing sent"
    )
    assert json_error(
        run_in(["send", "x", "--role", "operater", "-L", tmux_server.name, "--json"], operator_env), "not-found"
    )
    assert tmux_server.capture(pane) == before
    assert not (Path(operator_env["RK_STATE_DIR"]) / f"{tmux_server.name}.log").exists()  # no fire, no line


def test_a_role_with_no_role_anywhere_says_how_to_set_one(tmux_server, env):
    res = run_in(["send", "x", "--role", "operator", "-L", tmux_server.name], env)
    assert res.code == 1 and one_line_error(res).endswith("roles here: none (rk role NAME sets one); nothing sent"), res


# -- --json before the command ---------------------------------------------------------------------


def test_json_before_the_command_is_the_commands_own(tmp_path):
    env = _env(tmp_path)
    added = json_ok(run_in(["--json", "cron", "add", "hi", "--every", "5m", *PANE], env))
    assert [r["id"] for r in json_ok(run_in(["--json", "cron", "list"], env))] == [added["id"]]
    assert [r["id"] for r in json_ok(run_in(["cron", "--json", "list"], env))] == [added["id"]]
    assert json_ok(run_in(["-L", "default", "--json", "cron", "show", added["id"]], env))["id"] == added["id"]
    assert "exactly one schedule flag" in json_error(run_in(["--json", "cron", "add", "x", *PANE], env), "usage")


def test_json_before_a_command_that_prints_none_is_refused_by_name(tmp_path):
    res = run_in(["--json", "agent", "state", "idle", "--pane", "%1"], _env(tmp_path))
    assert res.code == 2, res
    assert json_error(res, "usage") == "agent state prints no JSON: drop --json"


def test_json_before_the_command_through_a_real_process(tmp_path):
    res = run_sub(["--json", "cron", "list"], _env(tmp_path))
    assert res.code == 0 and json.loads(res.out) == {"ok": True, "result": []}, res


# -- a duration without its unit --------------------------------------------------------------------


def test_a_bare_number_is_no_duration():
    with pytest.raises(DurationError, match=r"^7 what\? a duration needs a unit: 7s, 7m, 7h or 7d$"):
        parse_duration("7")
    with pytest.raises(DurationError, match=r"^1\.5 what\?"):
        parse_duration("1.5")
    assert parse_duration("0") == 0 and parse_duration("7m") == 420
    assert missing_unit("7m") == "" and missing_unit("7") != ""


ID = "$ID"  #: replaced by an entry's id

#: Every flag that takes a duration, given a bare number: each through the one parser.
UNITLESS = [
    ("cron", "add", "x", "--every", "7", *PANE),
    ("cron", "add", "x", "--idle-every", "7", *PANE),
    ("cron", "add", "x", "--backoff", "--min", "7", *PANE),
    ("cron", "add", "x", "--backoff", "--max", "7", *PANE),
    ("cron", "add", "x", "--in", "7", *PANE),
    ("cron", "add", "x", "--cron", "0 9 * * *", "--catch-up", "once", "--catch-up-within", "7", *PANE),
    ("cron", "add", "x", "--every", "5m", "--wake-on", "agent-state-change", "--wake-debounce", "7", *PANE),
    ("cron", "add", "x", "--every", "5m", "--turn-timeout", "7", *PANE),
    ("cron", "edit", ID, "--every", "7"),
    ("cron", "mute", ID, "--for", "7"),
    ("cron", "pause", "--for", "7"),
    ("cron", "simulate", "--every", "5m", "--for", "7"),
    ("cron", "simulate", "--every", "5m", "--tick", "7"),
    ("cron", "simulate", "--every", "5m", "--deliver", "when-idle", "--busy", "7"),
    ("cron", "simulate", "--every", "5m", "--states", "0 idle; 7 active"),
    ("cron", "log", "--since", "7"),
    ("cron", "log", ID, "--gaps", "--since", "7"),
    ("cron", "usage", "--since", "7"),
    ("events", "--since", "7"),
    ("agent", "await", "--pane", "%1", "--until", "idle", "--timeout", "7"),
]


@pytest.mark.parametrize("args", UNITLESS, ids=lambda a: " ".join(a[1:5]))
def test_every_duration_flag_refuses_a_number_without_its_unit(tmp_path, args):
    env = _env(tmp_path)
    entry = json_ok(run_in(["cron", "add", "x", "--cron", "0 9 * * *", *PANE, "--json"], env))["id"]
    res = run_in([entry if a == ID else a for a in args], env)
    assert res.code == 2, res
    assert "7 what? a duration needs a unit: 7s, 7m, 7h or 7d" in one_line_error(res), res


def test_since_a_bare_number_says_the_unit_and_the_time_forms(tmp_path):
    res = run_in(["cron", "log", "--since", "7"], _env(tmp_path))
    assert one_line_error(res) == (
        "--since 7: 7 what? a duration needs a unit: 7s, 7m, 7h or 7d"
        " (or a time: ISO-8601 with an offset, or unix seconds)"
    )


def test_since_in_unix_seconds_and_zero_still_work(tmp_path):
    env = dict(_logged(tmp_path), RK_NOW=str(T0))
    assert len(json_ok(run_in(["cron", "log", "--since", str(T0 - 250), "--json"], env))) == 2
    assert len(json_ok(run_in(["cron", "log", "--since", "0", "--json"], env))) == 0  # 0 s back: from now
    assert len(json_ok(run_in(["cron", "log", "--since", "4m", "--json"], env))) == 2


# -- the suggestions ---------------------------------------------------------------------------------


def test_suggestions_are_short_and_safe():
    assert did_you_mean("deliverd", ["delivered", "failed"]) == " (did you mean delivered?)"
    assert did_you_mean("zzz", ["delivered"]) == ""
    assert closest("x" * 100_000, ["x" * 5]) == ""  # no time spent on a huge word
    assert known_list([]) == "none"
    assert known_list([f"s{i:02}" for i in range(20)]).endswith("s11 and 8 more")
    assert known_list(["a b", "c\x1b"]) == "'a b', 'c\\x1b'"
