"""The pure rules of who may do what over rk mcp (rk.core.channels.mcpguard): scopes,
grants and their config, the one-shot floor, and secrets out of command lines."""

from __future__ import annotations

import pytest

from rk.core.channels import mcpguard
from rk.core.channels.mcpguard import Action, Caller, Grant, Limits, Match, Refusal, Spot, in_scope, parse_grants
from rk.core.redact import program_only, redact

WORKER = Caller("%1", "proj", "")
OPERATOR = Caller("%0", "proj", "operator")
UNKNOWN = Caller(note="no tmux ancestor")
OWN = Spot("%1", "proj")
SIBLING = Spot("%2", "proj", "reviewer")
FOREIGN = Spot("%7", "other", "operator")


@pytest.mark.parametrize("action", list(Action))
def test_a_worker_acts_in_its_own_pane_only_and_awaits_any(action):
    assert in_scope(WORKER, OWN, action)
    assert in_scope(WORKER, SIBLING, action) == (action == Action.AWAIT)
    assert in_scope(WORKER, FOREIGN, action) == (action == Action.AWAIT)


@pytest.mark.parametrize("action", list(Action))
def test_an_operator_acts_in_its_session_only(action):
    assert in_scope(OPERATOR, SIBLING, action)
    assert in_scope(OPERATOR, FOREIGN, action) == (action == Action.AWAIT)
    sessionless = Caller("%0", "", "operator")  # a session it cannot name matches no pane's
    assert in_scope(sessionless, Spot("%3", ""), action) == (action == Action.AWAIT)


@pytest.mark.parametrize("action", list(Action))
def test_an_unknown_caller_may_do_nothing(action):
    assert not in_scope(UNKNOWN, OWN, action)
    with pytest.raises(Refusal, match="could not place its caller in a tmux pane \\(no tmux ancestor\\)"):
        mcpguard.check_reach(UNKNOWN, OWN, action)


def test_a_grant_widens_exactly_what_it_says():
    grant = Grant(Match(role="operator"), Match(session="other"), frozenset({Action.SEND}))
    assert in_scope(OPERATOR, FOREIGN, Action.SEND, [grant])
    assert not in_scope(OPERATOR, FOREIGN, Action.READ, [grant])  # only its actions
    assert not in_scope(WORKER, FOREIGN, Action.SEND, [grant])  # only its callers
    assert not in_scope(OPERATOR, Spot("%9", "third"), Action.SEND, [grant])  # only its panes
    assert not in_scope(UNKNOWN, FOREIGN, Action.SEND, [Grant(Match(), Match())])  # never the unknown
    glob = Grant(Match(session="proj"), Match(session="oth*"))
    assert in_scope(WORKER, FOREIGN, Action.READ, [glob])


def test_a_refusal_names_the_grant_that_would_allow_it():
    with pytest.raises(Refusal) as info:
        mcpguard.check_reach(WORKER, FOREIGN, Action.SEND)
    text = str(info.value)
    assert text.startswith("refused: send in pane %7 (session 'other', role 'operator') is beyond this worker's")
    assert "(its own pane %1)" in text
    assert text.endswith("mcp: {grants: [{who: {session: 'proj'}, where: {session: 'other'}, may: [send]}]}")
    with pytest.raises(Refusal) as info:
        mcpguard.check_reach(OPERATOR, FOREIGN, Action.READ)
    assert "who: {role: 'operator'}" in str(info.value) and "its tmux session 'proj'" in str(info.value)


def test_the_suggested_grant_parses_and_allows_the_refused_call():
    from ruamel.yaml import YAML

    with pytest.raises(Refusal) as info:
        mcpguard.check_reach(WORKER, FOREIGN, Action.SEND)
    yaml_text = str(info.value).split("would allow it: ", 1)[1]
    grants, problems = parse_grants(YAML(typ="safe").load(yaml_text)["mcp"]["grants"], "config.yaml")
    assert not problems
    mcpguard.check_reach(WORKER, FOREIGN, Action.SEND, grants)


def test_grants_from_config_and_every_bad_item_said():
    raw = [
        {"who": {"role": "operator"}, "where": {"session": "*"}, "may": ["send", "read"]},
        {"who": {}, "where": {"pane": "%3"}},  # may: all of them
        {"who": {"role": "x"}},  # no where
        {"who": {"nick": "x"}, "where": {}},
        {"who": {}, "where": {}, "may": ["rm -rf"]},
        {"who": {}, "where": {}, "may": []},
        "everything",
        {"who": {"role": "x" * 300}, "where": {}},
        {"who": {}, "where": {}, "extra": 1},
    ]
    grants, problems = parse_grants(raw, "config.yaml")
    assert grants == [
        Grant(Match(role="operator"), Match(session="*"), frozenset({Action.SEND, Action.READ})),
        Grant(Match(), Match(pane="%3"), frozenset(Action)),
    ]
    assert [p.split(":", 2)[1].strip() for p in problems] == [f"mcp.grants item {n}" for n in range(3, 10)]
    assert all(p.endswith("; left out") and len(p) < 160 for p in problems), problems
    assert parse_grants(None, "c") == ([], [])
    assert parse_grants({"who": {}}, "c")[1] == ["c: mcp.grants is not a list; no grant is used"]


def test_one_shots_obey_the_floor_and_stay_apart():
    limits = Limits()
    mcpguard.check_one_shot(1060, 1000, [], limits)
    mcpguard.check_one_shot(900, 1000, [], limits)  # the past: the command line refuses it in its words
    with pytest.raises(Refusal, match="a one-shot 1s from now is sooner than rk mcp allows"):
        mcpguard.check_one_shot(1001, 1000, [], limits)
    with pytest.raises(Refusal, match="59s from this one"):
        mcpguard.check_one_shot(1200, 1000, [1259], limits)
    mcpguard.check_one_shot(1200, 1000, [1260, 1140], limits)


def test_secret_looking_arguments_are_redacted():
    cases = {
        "psql --password hunter2 db": "psql --password *** db",
        "node cli.js --api-key=sk-123 --model x": "node cli.js --api-key=*** --model x",
        "env GITHUB_TOKEN=ghp_abc codex": "env GITHUB_TOKEN=*** codex",
        "git clone https://bob:s3cret@example.com/r": "git clone https://bob:***@example.com/r",
        "claude --resume abc --verbose": "claude --resume abc --verbose",
        "tool --auth-token xyz -v": "tool --auth-token *** -v",
    }
    for given, want in cases.items():
        assert redact(given) == want
    assert program_only("/usr/bin/node /x/claude --password=p") == "node"
    assert program_only("") == ""


def test_doctor_and_status_say_the_grants_and_each_one_left_out(tmp_path):
    from cli_helpers import make_env, run_in

    env = make_env(tmp_path)
    config = tmp_path / "config.yaml"
    config.write_text(
        "mcp:\n  grants:\n    - who: {role: operator}\n      where: {session: 'proj-*'}\n      may: [send, read]\n"
        "    - who: {}\n"
    )
    env["RK_CONFIG"] = str(config)
    said = "who {role: 'operator'} may send, read in {session: 'proj-*'}"
    doctor = run_in(["doctor"], env).out
    assert f"ok    mcp grant: {said}" in doctor
    assert "warn  mcp grant: " in doctor and "mcp.grants item 2: where is missing" in doctor
    status = run_in(["status", "--json"], env).json()["result"]["mcp"]
    assert status["grants"] == [said] and len(status["problems"]) == 1
    assert f"rk mcp grant: {said}" in run_in(["status"], env).out
