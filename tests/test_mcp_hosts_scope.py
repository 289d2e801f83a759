"""The pure rules of rk mcp on other hosts (rk.core.channels.mcpguard): a pane on another
host is in no caller's own scope, awaiting included; only a grant whose `where` names the
host allows it; a `where` without `host` is this host alone."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rk.core.channels import mcpguard
from rk.core.channels.mcpguard import Action, Caller, Grant, Match, Refusal, Spot, in_scope, parse_grants

OPERATOR = Caller("%0", "proj", "operator")
WORKER = Caller("%1", "proj", "")
ON_B = Spot("%3", "work", "worker", host="b")

words = st.sampled_from(["", "*", "proj", "work", "%0", "%1", "%3", "operator", "worker", "b", "local", "[!x]*"])
callers = st.builds(Caller, st.sampled_from(["%0", "%1", "%3"]), words, words)
hosts = st.sampled_from(["b", "buildbox", "gpu-1", "c"])
remote_spots = st.builds(Spot, st.sampled_from(["%0", "%1", "%3"]), words, words, hosts)
local_grants = st.lists(
    st.builds(
        Grant,
        st.builds(Match, words, words, words),
        st.builds(Match, words, words, words),  # no host: this host alone
        st.frozensets(st.sampled_from(list(Action)), min_size=1),
    ),
    max_size=4,
)


@given(callers, remote_spots, st.sampled_from(list(Action)), local_grants)
def test_no_grant_without_a_host_ever_allows_a_remote_action(caller, target, action, grants):
    assert not in_scope(caller, target, action, grants)
    with pytest.raises(Refusal):
        mcpguard.check_host(caller, target.host, grants)


@pytest.mark.parametrize("action", list(Action))
def test_grants_written_before_hosts_reach_no_other_host(action):
    wide = [
        Grant(Match(), Match()),
        Grant(Match(role="operator"), Match(role="worker")),
        Grant(Match(), Match(pane="*")),
    ]
    assert all(g.allows(OPERATOR, Spot("%3", "work", "worker"), action) for g in wide)  # here: anything
    assert not in_scope(OPERATOR, ON_B, action, wide)  # there: nothing
    with pytest.raises(Refusal):
        mcpguard.check_host(OPERATOR, "b", wide)


@given(callers, remote_spots, st.sampled_from(list(Action)))
def test_a_remote_pane_is_in_no_default_scope_even_with_the_callers_own_id_or_session(caller, target, action):
    twin = Spot(caller.pane, caller.session, caller.role, host=target.host)  # `%0` there is not `%0` here
    assert not in_scope(caller, twin, action)
    assert not in_scope(caller, target, action)


@pytest.mark.parametrize("action", list(Action))
def test_a_grant_naming_the_host_allows_its_panes_there(action):
    grant = Grant(Match(role="operator"), Match(host="b", role="worker"))
    assert in_scope(OPERATOR, ON_B, action, [grant])
    assert not in_scope(WORKER, ON_B, action, [grant])  # only its callers
    assert not in_scope(OPERATOR, Spot("%4", "work", "reviewer", host="b"), action, [grant])  # only its panes
    assert not in_scope(OPERATOR, Spot("%3", "work", "worker", host="bb"), action, [grant])  # only its host
    here = Spot("%3", "work", "worker")  # the same place on this host: the grant is b's alone
    assert in_scope(OPERATOR, here, action, [grant]) == (action == Action.AWAIT)


def test_a_host_pattern_and_this_hosts_name():
    every = Grant(Match(), Match(host="*"), frozenset({Action.SEND}))
    assert in_scope(WORKER, ON_B, Action.SEND, [every])
    assert in_scope(WORKER, Spot("%9", "other"), Action.SEND, [every])  # `*` is this host too (named local)
    only_here = Grant(Match(), Match(host="local"), frozenset({Action.SEND}))
    assert in_scope(WORKER, Spot("%9", "other"), Action.SEND, [only_here])
    assert not in_scope(WORKER, ON_B, Action.SEND, [only_here])
    assert not in_scope(WORKER, ON_B, Action.SEND, [Grant(Match(), Match(host="b"), frozenset({Action.READ}))])


def test_the_host_check_names_the_grant_and_a_grant_for_any_action_passes_it():
    with pytest.raises(Refusal) as info:
        mcpguard.check_host(OPERATOR, "b", [Grant(Match(role="operator"), Match())])
    text = str(info.value)
    assert text.startswith("refused: host 'b' is in no grant of this operator's")
    assert text.endswith("mcp: {grants: [{who: {role: 'operator'}, where: {host: 'b'}, may: [read]}]}")
    mcpguard.check_host(OPERATOR, "b", [Grant(Match(role="operator"), Match(host="b"), frozenset({Action.SEND}))])
    with pytest.raises(Refusal, match="could not place its caller"):
        mcpguard.check_host(Caller(), "b", [Grant(Match(), Match(host="*"))])


def test_a_remote_refusal_suggests_a_grant_that_parses_and_allows_it():
    from ruamel.yaml import YAML

    for target in (ON_B, Spot("%3", "", "worker", host="b"), Spot("%3", host="b")):
        with pytest.raises(Refusal) as info:
            mcpguard.check_reach(OPERATOR, target, Action.SCHEDULE)
        text = str(info.value)
        assert "on host 'b'" in text and "another host is in no caller's scope" in text
        grants, problems = parse_grants(
            YAML(typ="safe").load(text.split("would allow it: ", 1)[1])["mcp"]["grants"], "c"
        )
        assert not problems and grants[0].where.host == "b"
        mcpguard.check_reach(OPERATOR, target, Action.SCHEDULE, grants)


def test_grants_read_host_in_where_only():
    grants, problems = parse_grants(
        [
            {"who": {"role": "operator"}, "where": {"host": "build*", "role": "worker"}, "may": ["schedule", "await"]},
            {"who": {"host": "b"}, "where": {}},  # the caller is always on this host
            {"who": {}, "where": {"host": 3}},
        ],
        "config.yaml",
    )
    assert grants == [
        Grant(Match(role="operator"), Match(role="worker", host="build*"), frozenset({Action.SCHEDULE, Action.AWAIT}))
    ]
    assert "who: unknown key 'host' (use role, session, pane)" in problems[0]
    assert "where.host is not a pattern" in problems[1]
    assert grants[0].describe() == "who {role: 'operator'} may schedule, await in {host: 'build*', role: 'worker'}"
