"""rk mcp as an attacker would use it: a worker reaching for other panes with every tool,
an operator reaching beyond its session, and ten clients racing one pane's cap. Each
attack asserts the refusal and that nothing else changed: the human's entry is as it
was, nothing was typed anywhere, and the server's entries still fire."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest
from cli_helpers import run_in
from conftest import run_rk, wait_for
from test_mcp import FAKE_AGENT, Session, _audit, _operator, serve
from test_mcp import caller as caller  # a fixture

SECRET = "token=hunter2"  #: on the agents' command lines (as the fake agent's name)


def _agent_window(tmux_server, env, target: str, name: str) -> str:
    """The demo's fake agent in a new window of `target` (a session), at its prompt; its command
    line carries a secret-looking argument."""
    command = (
        f"env RK_STATE_DIR={env['RK_STATE_DIR']} HOME={env['HOME']} "
        f"{sys.executable} {FAKE_AGENT} {SECRET}-{name} --work 0.2 0.2 --seed 1"
    )
    pane = tmux_server.run("new-window", "-d", "-t", f"{target}:", "-P", "-F", "#{pane_id}", command).strip()
    wait_for(lambda: "demo> " in tmux_server.capture(pane), timeout=15, message=f"{name}'s prompt")
    return pane


@pytest.fixture
def field(caller):
    """The caller's pane (a worker unless made operator) in session `main`; `op`: an agent in a
    window with the role operator in `main`; `other`: an agent in another session, `proj2`; and
    a human's entry into `op` made at the command line."""
    c = dict(caller)
    tmux, env = c["tmux"], c["env"]
    c["op"] = _agent_window(tmux, env, "main", "op")
    tmux.run("set-option", "-w", "-t", c["op"], "@rk_win_role", "operator")
    tmux.run("new-session", "-d", "-s", "proj2", "-x", "120", "-y", "40", "cat")
    c["other"] = _agent_window(tmux, env, "proj2", "other")
    res = run_in(["cron", "add", "--json", "--every", "1h", "--pane", c["op"], "human's own"], env)
    assert res.code == 0, res
    c["human"] = res.json()["result"]["id"]
    return c


def _entries(c) -> dict[str, dict]:
    return {r["id"]: r for r in run_in(["cron", "list", "--json"], c["env"]).json()["result"]}


def _unchanged(c, before: dict[str, dict]) -> None:
    """The human's entry is as it was and no pane shows a payload of the attack."""
    moving = ("next", "why_not", "last_fired")  # they follow the agents' states, not the attack
    after = _entries(c)
    assert {k: v for k, v in after[c["human"]].items() if k not in moving} == {
        k: v for k, v in before[c["human"]].items() if k not in moving
    }
    for pane in (c["op"], c["other"]):
        assert "PWNED" not in c["tmux"].capture(pane)


@pytest.mark.tmux
@pytest.mark.shell
@pytest.mark.slow
def test_a_worker_reaches_no_other_pane_with_any_tool(field):
    c = field
    before = _entries(c)
    op, other, human = c["op"], c["other"], c["human"]

    def body(s: Session):
        return {
            "add_pane": s.call("cron_add", prompt="PWNED", every="1h", pane=op),
            "add_role": s.call("cron_add", prompt="PWNED", every="1h", role="operator"),
            "add_other": s.call("cron_add", prompt="PWNED", **{"in": "2m"}, pane=other),
            "send_op": s.call("send", prompt="PWNED", pane=op),
            "send_role": s.call("send", prompt="PWNED", role="operator"),
            "send_other": s.call("send", prompt="PWNED", pane=other),
            "read_op": s.call("pane_read", pane=op),
            "read_other": s.call("pane_read", pane=other),
            "show": s.call("cron_show", id=human),
            "next": s.call("cron_next", id=human),
            "log": s.call("cron_log", id=human),
            "rm": s.call("cron_rm", id=human),
            "mute": s.call("cron_mute", id=human),
            "pin": s.call("cron_pin", id=human),
            "edit": s.call("cron_edit", id=human, prompt="PWNED"),
            "pause": s.call("cron_pause"),
            "resume": s.call("cron_resume"),
            # what it may do: its own pane, and await any
            "own": s.call("cron_add", prompt="note to self", every="1h"),
            "list": s.call("cron_list"),
            "agents": s.call("agent_list"),
            "await": s.call("agent_await", pane=op, until=["idle", "waiting"], timeout="1s"),
        }

    got = serve(c["env"], body)
    allowed = {"list", "agents", "own", "await"}
    refused = {k for k, r in got.items() if r.error}
    assert refused == set(got) - allowed, {k: got[k] for k in set(got) ^ refused}
    for key in refused:
        assert got[key].text.startswith("refused: "), (key, got[key])
    assert "beyond this worker's scope" in got["send_op"].text and "may: [send]" in got["send_op"].text
    assert "beyond this worker's scope" in got["read_other"].text
    assert "operator" in got["pause"].text
    assert [r["id"] for r in got["list"].result()] == [got["own"].result()["id"]]  # not the human's
    rows = {r["pane"]: r for r in got["agents"].result()}
    assert SECRET not in json.dumps(got["agents"].doc())
    assert rows[op]["process"] == "python3" or ("/" not in rows[op]["process"] and " " not in rows[op]["process"])
    _unchanged(c, before)
    audit = [a for a in _audit(c) if a["outcome"] == "refused"]
    assert len(audit) == len(refused) and {a["caller"] for a in audit} == {"worker"}
    print(f"worker attacks: {len(refused)} refused, {len(allowed)} allowed (its own pane, await, lists)")


@pytest.mark.tmux
@pytest.mark.shell
@pytest.mark.slow
def test_an_operator_acts_in_its_session_and_beyond_only_by_grant(field):
    c = field
    _operator(c)
    before = _entries(c)

    def body(s: Session):
        return {
            "send_op": s.call("send", prompt="from the operator", pane=c["op"]),
            "read_op": s.call("pane_read", pane=c["op"]),
            "mute_human": s.call("cron_mute", id=c["human"], **{"for": "1m"}),
            "unmute_human": s.call("cron_mute", id=c["human"], off=True),
            "send_other": s.call("send", prompt="PWNED", pane=c["other"]),
            "read_other": s.call("pane_read", pane=c["other"]),
            "add_other": s.call("cron_add", prompt="PWNED", every="1h", pane=c["other"]),
        }

    got = serve(c["env"], body)
    assert {k for k, r in got.items() if r.error} == {"send_other", "read_other", "add_other"}, got
    assert "beyond this operator's scope (the panes of its tmux session 'main')" in got["send_other"].text
    _unchanged(c, before)

    config = Path(c["env"]["XDG_CONFIG_HOME"]) / "rk" / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        "mcp:\n  grants:\n    - who: {role: operator}\n      where: {session: proj2}\n      may: [read]\n"
    )
    granted = serve(
        c["env"], lambda s: (s.call("pane_read", pane=c["other"]), s.call("send", prompt="x", pane=c["other"]))
    )
    assert not granted[0].error, granted[0]
    assert granted[1].error and "may: [send]" in granted[1].text  # only what the grant says


@pytest.mark.tmux
@pytest.mark.shell
@pytest.mark.slow
def test_ten_clients_racing_one_panes_cap_store_exactly_the_cap(caller):
    c = caller
    env = dict(c["env"], RK_MCP_MAX_PENDING="20")
    replies: list = []
    lock = threading.Lock()

    def client(n: int) -> None:
        got = serve(env, lambda s: [s.call("cron_add", prompt=f"c{n} #{i}", every="1h") for i in range(4)])
        with lock:
            replies.extend(got)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    stored = [r for r in run_in(["cron", "list", "--json"], c["env"]).json()["result"]]
    ok = [r for r in replies if not r.error]
    refused = [r for r in replies if r.error]
    assert len(replies) == 40
    assert len(stored) == 20 and len(ok) == 20, (len(stored), len(ok))
    assert all("at most 20" in r.text for r in refused), refused[:2]
    print(f"cap race: 10 clients x 4 adds, cap 20: stored {len(stored)}, refused {len(refused)}")


@pytest.mark.tmux
@pytest.mark.shell
def test_the_human_still_adds_when_agents_filled_their_share(caller):
    c = caller
    env = dict(c["env"], RK_MAX_ENTRIES="12", RK_MCP_MAX_PENDING="50")
    got = serve(env, lambda s: [s.call("cron_add", prompt=f"n{i}", every="1h") for i in range(12)])
    assert sum(not r.error for r in got) == 10  # 12 - min(10, 12 // 5) = 10
    assert "kept for people" in got[-1].text
    res = run_in(["cron", "add", "--json", "--every", "1h", "--pane", c["worker"], "the human's"], env)
    assert res.code == 0, res


@pytest.mark.tmux
@pytest.mark.shell
def test_a_burst_of_one_shots_is_no_way_around_the_floor(caller):
    c = caller

    def body(s: Session):
        return [s.call("cron_add", prompt=f"n{i}", **{"in": "1s"}) for i in range(3)] + [
            s.call("cron_add", prompt="a", **{"in": "2m"}),
            s.call("cron_add", prompt="b", **{"in": "2m"}),
            s.call("cron_add", prompt="c", **{"in": "4m"}),
        ]

    got = serve(c["env"], body)
    assert [r.error for r in got] == [True, True, True, False, True, False], got
    assert "sooner than rk mcp allows" in got[0].text and "at least 60s apart" in got[4].text
    assert run_rk(["cron", "tick"], c["env"]).returncode == 0


@pytest.mark.tmux
@pytest.mark.shell
@pytest.mark.slow
def test_spoofed_tmux_variables_give_no_one_elses_rights(field):
    """TMUX_PANE set to the operator's pane or a window target, TMUX set to another server:
    the worker stays itself (the process tree says who it is), and mcp.log records the proven pane."""
    c = field
    before = _entries(c)
    tmux = c["tmux"]
    tmux.run("rename-window", "-t", c["op"], "op")
    spoofs = {
        "operator's pane": {"TMUX_PANE": c["op"]},
        "window target": {"TMUX_PANE": "main:op"},
        "huge": {"TMUX_PANE": "%" + "9" * 100_000},
        "another server": {"TMUX": "/tmp/elsewhere/default,1,0", "TMUX_PANE": "%0"},
        "none (as Codex)": {"TMUX": None, "TMUX_PANE": None},
    }
    got = {}
    for name, hints in spoofs.items():
        got[name] = serve(
            c["env"],
            lambda s: (
                s.call("cron_pause"),
                s.call("cron_mute", id=c["human"]),
                s.call("cron_add", prompt="mine", every="1h"),
            ),
            hints=hints,
        )
    for name, (pause, mute, add) in got.items():
        assert pause.error and "operator" in pause.text, (name, pause)
        assert mute.error and "beyond this worker's scope" in mute.text, (name, mute)
        assert not add.error and add.result()["target"] == f"pane:{c['pane']}", (name, add)  # its own pane
    _unchanged(c, before)
    audit = _audit(c)
    assert {a["pane"] for a in audit} == {c["pane"]}
    assert any("disagrees" in a.get("note", "") or "ignored" in a.get("note", "") for a in audit)
    assert all(len(json.dumps(a)) < 2000 for a in audit)  # the 100 kB hint is not echoed
    print(f"spoofs: {len(spoofs)} tried, each refused pause and mute, each add landed in the real pane")


@pytest.mark.tmux
@pytest.mark.shell
def test_mcp_log_is_never_written_through_a_planted_link(caller, tmp_path):
    c = caller
    state = Path(c["env"]["RK_STATE_DIR"])
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (state / "mcp.log").symlink_to(victim)
    reply = serve(c["env"], lambda s: s.call("cron_pause"))
    assert reply.error and "operator" in reply.text  # refused, and the refusal not written through the link
    assert victim.read_text() == "precious\n" and (state / "mcp.log").is_symlink()


@pytest.mark.tmux
@pytest.mark.shell
@pytest.mark.slow
def test_an_oversize_value_in_any_field_is_refused_briefly_and_changes_nothing(caller):
    """Every text input of cron_add and cron_edit, 300 kB long (a message under rk mcp's 1 MiB):
    each call refused in a short error, nothing stored, the human's entry still due."""
    c = caller
    human = run_in(["cron", "add", "--json", "--every", "1h", "--pane", c["pane"], "the human's"], c["env"])
    human_id = human.json()["result"]["id"]
    big = "9" * 300_000

    def body(s: Session):
        schemas = {t.name: t.input_schema["properties"] for t in s.tools()}
        texts = {
            tool: [k for k, v in props.items() if "string" in json.dumps(v) and k not in ("id",)]
            for tool, props in schemas.items()
            if tool in ("cron_add", "cron_edit")
        }
        got = {}
        for field in texts["cron_add"]:
            args = {"prompt": "x", "every": "1h", field: big}
            got[("cron_add", field)] = s.call("cron_add", **args)
        for field in texts["cron_edit"]:
            got[("cron_edit", field)] = s.call("cron_edit", id=human_id, **{field: big})
        return got

    got = serve(c["env"], body)
    assert len(got) >= 20, sorted(got)
    for key, reply in got.items():
        assert reply.error and len(reply.text) < 600, (key, reply.text[:300])
    entries = run_in(["cron", "list", "--json"], c["env"]).json()["result"]
    assert [e["id"] for e in entries] == [human_id] and entries[0]["schedule_summary"] == "every 1h"
    assert entries[0]["next"] is not None or entries[0]["why_not"], entries[0]
    print(f"oversize values: {len(got)} field inputs, each refused")
