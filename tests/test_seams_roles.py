"""Every role rk knows, fed through tmux: targeting and the guard for each.

A role is the window option `@rk_win_role` (`rk.tmux.roles`). rk knows:
`operator` (a server-wide radio, and the one role the `rk mcp` guard lets change
any entry, `rk.core.channels.mcpguard.OPERATOR_ROLE`), any other name (a free
label an entry can target: `worker`, `reviewer`, …, compared exactly, so
`Operator` is not `operator`), no role at all, and `clear` (the word that removes
one). A window merely *named* `operator` is found by `rk operator` but has no
operator rights until it carries the role."""

from __future__ import annotations

import json
import subprocess

import pytest
from cli_helpers import run_in
from conftest import run_rk, wait_for

from rk.core.channels.mcpguard import Caller, Limits, Refusal, Spot, check_change
from rk.tmux.roles import find_operator, set_role, windows

pytestmark = pytest.mark.shell

T0 = 1_800_000_000
#: The roles tried: the operator, plain labels, one that differs from operator only by case.
ROLES = ("operator", "worker", "reviewer", "Operator")


def new_window(server, env, name: str = "") -> str:
    argv = ["new-window", "-d", "-t", "main", "-P", "-F", "#{pane_id}", *(["-n", name] if name else []), "cat"]
    out = subprocess.run(server.argv(*argv), capture_output=True, text=True, check=True, env=env)
    return out.stdout.strip()


def from_pane(server, env, pane: str) -> dict[str, str]:
    """`env` as a process running in `pane` sees it."""
    socket = server.display(pane, "#{socket_path}").strip()
    return dict(env, TMUX=f"{socket},1,0", TMUX_PANE=pane)


def role_of(server, pane: str) -> str:
    return server.display(pane, "#{@rk_win_role}").strip()


@pytest.fixture
def panes(tmux_server, env):
    """One window per role (tagged through `rk role`, as a person would), and one with none."""
    out = {}
    for role in ROLES:
        pane = new_window(tmux_server, env)
        res = run_in(["role", role, "--json"], from_pane(tmux_server, env, pane))
        assert res.code == 0, res
        assert res.json()["result"]["role"] == role
        out[role] = pane
    out[""] = new_window(tmux_server, env)
    return out


def test_an_entry_for_each_role_is_typed_into_that_roles_window_only(tmux_server, env, panes):
    ids = {}
    for role in (*ROLES, "nobody"):
        res = run_rk(
            [
                "cron",
                "add",
                f"for-{role}",
                "--every",
                "1m",
                "--role",
                role,
                "--any-program",
                "--json",
                "-L",
                tmux_server.name,
            ],
            dict(env, RK_NOW=str(T0)),
            check=True,
        )
        ids[json.loads(res.stdout)["result"]["id"]] = role
    res = run_rk(["cron", "tick", "--json", "-L", tmux_server.name], dict(env, RK_NOW=str(T0 + 60)), check=True)
    decisions = {ids[d["entry"]]: (d["pane"], d["outcome"]) for d in json.loads(res.stdout)["result"]["decisions"]}
    assert decisions == {
        **{role: (panes[role], "delivered") for role in ROLES},
        "nobody": ("", "skipped-absent"),
    }
    for role in ROLES:
        pane = panes[role]
        wait_for(lambda pane=pane, role=role: f"for-{role}" in tmux_server.capture(pane), message=role)
    for role, pane in panes.items():
        shown = {line.strip() for line in tmux_server.capture(pane).splitlines()}
        typed = {r for r in ROLES if f"for-{r}" in shown}
        assert typed == ({role} if role else set()), (role, typed)


def test_operator_is_a_radio_and_other_roles_are_shared(tmux_server, env, panes):
    second = new_window(tmux_server, env)
    for role in ROLES:
        assert run_in(["role", role], from_pane(tmux_server, env, second)).code == 0
        holders = sorted(w for w, r, _ in windows(tmux_server) if r == role)
        if role == "operator":  # moved: the first window lost it
            assert role_of(tmux_server, panes[role]) == ""
            assert len(holders) == 1
        else:  # shared: the first window keeps it
            assert role_of(tmux_server, panes[role]) == role
            assert len(holders) == 2
    assert role_of(tmux_server, panes["operator"]) == ""
    assert role_of(tmux_server, second) == "Operator"  # each `rk role` replaced the last
    res = run_in(["role", "clear", "--json"], from_pane(tmux_server, env, second))
    assert res.json()["result"]["role"] == "" and role_of(tmux_server, second) == ""


@pytest.mark.parametrize("bad", ["", "two words", "tab\there"])
def test_a_role_with_whitespace_is_refused_and_sets_nothing(tmux_server, env, bad):
    pane = new_window(tmux_server, env)
    res = run_in(["role", bad], from_pane(tmux_server, env, pane))
    assert res.code == 2, res
    assert role_of(tmux_server, pane) == ""


def proven(tmux_server, env, pane: str):
    """A Runner for `pane` as `rk mcp` below it would place it (the placement itself is
    tests/test_caller.py's; here the role read at each call is under test)."""
    from rk.channels.mcp import Runner
    from rk.cli import main
    from rk.core.pane.caller import Placed

    socket, pid, pane_pid, session = (
        tmux_server.display(pane, "#{socket_path}\t#{pid}\t#{pane_pid}\t#{session_name}").strip().split("\t")
    )
    placed = Placed(pane, socket, int(pid), session, proven=True, pane_pid=int(pane_pid))
    return Runner(main, from_pane(tmux_server, env, pane), placed)


def test_the_mcp_guard_grants_the_operator_role_alone(tmux_server, env, panes):
    """`rk mcp` reads the caller's role from tmux: only `operator` exactly may change another's entry."""
    from rk.channels.mcp import Runner
    from rk.cli import main

    named = new_window(tmux_server, env, name="operator")  # named operator, carries no role
    callers = {role: proven(tmux_server, env, pane).caller() for role, pane in panes.items()}
    callers["named"] = proven(tmux_server, env, named).caller()
    callers["outside tmux"] = Runner(main, {k: v for k, v in env.items() if k != "TMUX_PANE"}).caller()
    assert {role: c.operator for role, c in callers.items()} == {
        "operator": True,
        "worker": False,
        "reviewer": False,
        "Operator": False,
        "": False,
        "named": False,
        "outside tmux": False,
    }
    theirs = {"pane": "%999", "via": "mcp"}
    there = Spot("%999", callers["operator"].session)  # a pane of the callers' session
    for role, c in callers.items():
        if role == "operator":
            check_change(c, "ab12", theirs, there, Limits())
        elif role == "outside tmux":
            with pytest.raises(Refusal, match="could not place its caller"):
                check_change(c, "ab12", theirs, there, Limits(any_owner=True))  # not even the setting
            continue
        else:
            with pytest.raises(Refusal, match="beyond this worker's scope"):
                check_change(c, "ab12", theirs, there, Limits())
        check_change(c, "ab12", theirs, there, Limits(any_owner=True))  # the setting widens it for every role
    # an entry the caller made through rk mcp is its own, whatever its role
    for pane in panes.values():
        check_change(Caller(pane), "ab12", {"pane": pane, "via": "mcp"}, None, Limits())


def test_the_guard_follows_a_role_moved_away(tmux_server, env, panes):
    """The guard asks tmux at each call: once the operator role moves on, the old window has no rights."""

    runner = proven(tmux_server, env, panes["operator"])
    assert runner.caller().operator
    set_role(tmux_server, panes["worker"], "operator")
    assert not runner.caller().operator
    assert proven(tmux_server, env, panes["worker"]).caller().operator


def test_rk_operator_adopts_a_window_named_operator_and_gives_it_the_role(tmux_server, env):
    named = new_window(tmux_server, env, name="operator")
    window = tmux_server.display(named, "#{window_id}").strip()
    assert find_operator(tmux_server) == window
    res = run_rk(["operator", "--command", "cat", "--json", "-L", tmux_server.name], env, check=True)
    # adopted, not started: `cat` is no agent CLI, so no server tools are allowed for it
    assert json.loads(res.stdout)["result"] == {"created": False, "window": window, "unattended_server_tools": False}
    assert role_of(tmux_server, named) == "operator"
