"""`rk mcp`, driven by the official SDK's client over stdio: the tools and their
schemas, every tool against a private tmux server and state dir, errors as tool
errors carrying the CLI's message, and every guardrail refusal.

Each test starts `python -m rk mcp` with the environment an agent CLI would
give it: TMUX and TMUX_PANE of the caller's pane on the private server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from cli_helpers import json_error, run_in
from conftest import run_rk, wait_for
from mcp_client import RelayPane, Session
from mcp_client import serve as serve_here

from rk.core.channels import mcpguard
from rk.core.channels.mcpguard import Caller, Limits, Refusal

#: What the server offers: every tool the guardrails place (scoped or server-wide).
TOOLS = set(mcpguard.SCOPED_TOOLS + mcpguard.SERVER_TOOLS)


# -- the client ---------------------------------------------------------------------


_relays: dict[tuple[str, str], RelayPane] = {}
_adopting = threading.Lock()


def serve(env, body, hints=None):
    """`rk mcp` started where an agent would start it: below the process of the pane `env`'s
    TMUX_PANE names (made a relay on first use: same id, window, session and role); outside
    tmux (no TMUX_PANE), as a child of this process. `hints`: variables set (None: unset) for
    rk mcp, such as a spoofed TMUX_PANE."""
    from rk.tmux.server import Server, socket_from_tmux_env

    pane = env.get("TMUX_PANE", "")
    if not pane:
        return serve_here(env, body)
    socket = socket_from_tmux_env(env["TMUX"])
    with _adopting:  # concurrent clients of one pane share its relay
        relay = _relays.get((socket, pane))
        if relay is None or not os.path.exists(relay.socket):
            relay = _relays[(socket, pane)] = RelayPane.adopt(Server(socket_path=socket, env=dict(env)), pane)
    return relay.serve(env, body, hints)


# -- fixtures -------------------------------------------------------------------------


FAKE_AGENT = Path(__file__).resolve().parent.parent / "demo" / "fake_agent.py"


@pytest.fixture
def caller(tmux_server, env):
    """`env` as seen from the first pane of `main` (the caller), plus a second pane in the same
    session (a worker: the demo's fake agent, idle at its prompt)."""
    socket = tmux_server.display("main:", "#{socket_path}").strip()
    pane = tmux_server.display("main:", "#{pane_id}").strip()
    command = (
        f"env RK_STATE_DIR={env['RK_STATE_DIR']} HOME={env['HOME']} "
        f"{sys.executable} {FAKE_AGENT} worker --work 0.2 0.2 --seed 1"
    )
    worker = tmux_server.run("new-window", "-d", "-t", "main:", "-P", "-F", "#{pane_id}", command).strip()
    wait_for(lambda: "demo> " in tmux_server.capture(worker), timeout=15, message="the worker's prompt")
    e = dict(env, TMUX=f"{socket},1,0", TMUX_PANE=pane)
    return {"env": e, "pane": pane, "worker": worker, "tmux": tmux_server}


def _operator(c) -> None:
    """Give the caller's window the role operator."""
    argv = c["tmux"].argv("set-option", "-w", "-t", c["pane"], "@rk_win_role", "operator")
    subprocess.run(argv, check=True, env=c["env"])


def _audit(c) -> list[dict]:
    from pathlib import Path

    path = Path(c["env"]["RK_STATE_DIR"]) / "mcp.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _cli_add(c, *args, **extra) -> str:
    res = run_in(["cron", "add", "--json", *args], dict(c["env"], **extra))
    assert res.code == 0, res
    return res.json()["result"]["id"]


# -- the tools ----------------------------------------------------------------------------


@pytest.mark.tmux
@pytest.mark.shell
def test_tools_listed_with_typed_schemas(caller):
    tools = {t.name: t for t in serve(caller["env"], lambda s: s.tools())}
    assert set(tools) == TOOLS
    add = tools["cron_add"].input_schema
    assert add["required"] == ["prompt"]
    for flag in ("every", "idle_every", "backoff", "cron", "tz", "at", "in", "role", "session", "pane", "wake_on"):
        assert flag in add["properties"], flag
    assert tools["cron_mute"].input_schema["properties"].keys() >= {"id", "for", "off"}
    until = tools["agent_await"].input_schema["properties"]["until"]
    assert until["type"] == "array" and until["items"]["type"] == "string"
    lines = tools["pane_read"].input_schema["properties"]["lines"]
    assert lines["maximum"] == 200 and lines["minimum"] == 1
    assert all(t.description for t in tools.values())


@pytest.mark.tmux
@pytest.mark.shell
def test_cron_add_and_edit_take_the_caps_typed(caller):
    """The caps (issue 20): integers in the schema (add: 1…, edit: 0 removes), passed to the CLI."""

    def body(s: Session):
        tools = {t.name: t.input_schema["properties"] for t in s.tools()}
        added = s.call("cron_add", prompt="status?", every="10m", max_per_day=3, max_total=5).result()
        eid = added["id"]
        return {
            "tools": tools,
            "added": added,
            "zero": s.call("cron_add", prompt="status?", every="10m", max_per_day=0),
            "text": s.call("cron_add", prompt="status?", every="10m", max_total="lots"),
            "edited": s.call("cron_edit", id=eid, max_per_day=0, max_total=7).result(),
            "shown": s.call("cron_show", id=eid).result(),
        }

    out = serve(caller["env"], body)
    for tool, low in (("cron_add", 1), ("cron_edit", 0)):
        for key in ("max_per_day", "max_total"):
            schema = out["tools"][tool][key]
            typed = [t for t in schema.get("anyOf", [schema]) if t.get("type") == "integer"]
            assert typed and typed[0]["minimum"] == low and typed[0]["maximum"] == 1_000_000, (tool, key, schema)
    assert (out["added"]["max_per_day"], out["added"]["max_total"], out["added"]["left"]) == (3, 5, 5)
    assert out["zero"].error and "max_per_day" in out["zero"].text, out["zero"]
    assert out["text"].error and "max_total" in out["text"].text, out["text"]
    assert "max_per_day" not in out["edited"] and out["edited"]["max_total"] == 7
    assert "max_per_day" not in out["shown"] and out["shown"]["max_total"] == 7


@pytest.mark.tmux
@pytest.mark.shell
@pytest.mark.slow
def test_every_tool_against_a_private_server(caller):
    c = caller
    worker = c["worker"]

    def body(s: Session):
        out = {}
        added = s.call("cron_add", prompt="status, briefly?", every="10m")
        out["add"] = added.result()
        eid = out["add"]["id"]
        out["show"] = s.call("cron_show", id=eid).result()
        out["list"] = s.call("cron_list").result()
        out["edit"] = s.call("cron_edit", id=eid, every="15m").result()
        out["next"] = s.call("cron_next", id=eid, n=3).result()
        out["mute"] = s.call("cron_mute", **{"id": eid, "for": "30m"}).result()
        out["pin"] = s.call("cron_pin", id=eid).result()
        out["wake"] = s.call("cron_wake", id=eid).result()
        _operator(c)  # the worker's pane is in the operator's session: in its scope
        cron = s.call("cron_add", prompt="standup", cron="0 9 * * *", pane=worker).result()["id"]
        out["log"] = s.call("cron_log").result()
        out["gaps"] = s.call("cron_log", id=cron, gaps=True).result()
        out["pause"] = s.call("cron_pause", **{"for": "1h"}).result()
        out["resume"] = s.call("cron_resume").result()
        out["send"] = s.call("send", prompt="hello worker", pane=worker).result()
        wait_for(lambda: "hello worker" in s.call("pane_read", pane=worker).text, message="the send on screen")
        out["read"] = s.call("pane_read", pane=worker, lines=5).result()
        out["agents"] = s.call("agent_list").result()
        run_rk(["agent", "state", "idle", "--pane", worker], c["env"], check=True)
        out["await"] = s.call("agent_await", pane=worker, until=["idle"], timeout="10s").result()
        out["timeout"] = s.call("agent_await", pane=worker, until=["waiting"], timeout="1s").result()
        out["events"] = s.call("events", since="1h").result()
        out["rm"] = s.call("cron_rm", id=eid).result()
        out["after"] = s.call("cron_list").result()
        return out

    out = serve(c["env"], body)
    eid = out["add"]["id"]
    assert out["add"]["target"] == f"pane:{c['pane']}"  # the caller's own pane by default
    assert out["show"]["created_by"]["pane"] == c["pane"] and out["show"]["created_by"]["via"] == "mcp"
    assert [r["id"] for r in out["list"]][:1] == [eid] or eid in [r["id"] for r in out["list"]]
    assert out["edit"]["schedule"] == "every 15m"
    assert out["mute"]["muted"] is True and out["mute"]["until"] > 0
    assert out["pin"] == {"id": eid, "pinned": True}
    assert out["wake"] == {"id": eid, "woken": True, "was_dormant": False}  # never delivered: not dormant
    assert out["next"]["id"] == eid and isinstance(out["next"]["fires"], list)
    assert isinstance(out["log"], list) and isinstance(out["gaps"], (list, dict))
    assert out["resume"] is not None and out["pause"] is not None
    assert out["send"]["outcome"].startswith("delivered")
    assert out["read"]["pane"] == worker and any("hello worker" in line for line in out["read"]["lines"])
    assert all("\x1b" not in line for line in out["read"]["lines"])
    assert {a["pane"] for a in out["agents"]} >= {c["pane"], worker}
    assert out["await"]["condition"] == "idle" and out["await"]["panes"][0]["pane"] == worker
    assert out["timeout"]["condition"] == "timeout"  # an answer, not an error
    assert any(e.get("pane") == worker for e in out["events"])
    assert out["rm"] == {"id": eid, "removed": True}
    assert eid not in [r["id"] for r in out["after"]]
    # every change is in the log, with its caller
    tools = [a["tool"] for a in _audit(c) if a["outcome"] == "ok"]
    changes = ("cron_add", "cron_edit", "cron_mute", "cron_pin", "cron_wake", "cron_pause", "cron_resume", "send")
    for tool in (*changes, "cron_rm"):
        assert tool in tools, tool
    assert {a["pane"] for a in _audit(c)} == {c["pane"]}


@pytest.mark.tmux
@pytest.mark.shell
def test_results_are_the_clis_json_documents(caller):
    c = caller
    env = dict(c["env"], RK_NOW="1800000000")
    eid = _cli_add({"env": env}, "--every", "1h", "--pane", c["worker"], "hi")
    _operator(c)  # it sees every entry into its session's panes, as the CLI does

    def body(s: Session):
        return {
            "list": s.call("cron_list").doc(),
            "show": s.call("cron_show", id=eid).doc(),
            "next": s.call("cron_next", id=eid, n=4).doc(),
            "log": s.call("cron_log").doc(),
        }

    got = serve(env, body)
    assert got["list"] == run_in(["cron", "list", "--json"], env).json()
    assert got["show"] == run_in(["cron", "show", eid, "--json"], env).json()
    assert got["next"] == run_in(["cron", "next", eid, "-n", "4", "--json"], env).json()
    assert got["log"] == run_in(["cron", "log", "-n", "20", "--json"], env).json()


@pytest.mark.tmux
@pytest.mark.shell
def test_errors_are_tool_errors_with_the_clis_message(caller):
    c = caller

    def body(s: Session):
        return {
            "unknown": s.call("cron_show", id="zzzz"),
            "bad_every": s.call("cron_add", prompt="x", every="soon"),
            "past": s.call("cron_add", prompt="x", at="2001-01-01T00:00:00Z"),
            "no_schedule": s.call("cron_add", prompt="x"),
            "bounds": s.call("pane_read", pane=c["worker"], lines=10_000),
            "bad_pane": s.call("pane_read", pane="nope"),
        }

    got = serve(c["env"], body)
    assert all(r.error for r in got.values()), got
    env = c["env"]
    assert got["unknown"].text == json_error(run_in(["cron", "show", "zzzz", "--json"], env), "not-found")
    assert got["bad_every"].text == json_error(run_in(["cron", "add", "--every", "soon", "--json", "x"], env), "usage")
    past = json_error(run_in(["cron", "add", "--at", "2001-01-01T00:00:00Z", "--json", "x"], env), "usage")
    assert got["past"].text == past and "in the past" in past  # no --at in the past
    assert got["no_schedule"].text == json_error(run_in(["cron", "add", "--json", "x"], env), "usage")
    assert "10000" in got["bounds"].text or "less than or equal" in got["bounds"].text


# -- the guardrails ------------------------------------------------------------------------


@pytest.mark.tmux
@pytest.mark.shell
@pytest.mark.slow
def test_a_caller_changes_only_its_own_entries(caller):
    c = caller
    by_cli = _cli_add(c, "--every", "1h", "--pane", c["worker"], "from the shell")
    by_other = _cli_add(
        c, "--every", "1h", "--pane", c["worker"], "other agent", TMUX_PANE=c["worker"], RK_CREATED_VIA="mcp"
    )

    def body(s: Session):
        out = {}
        for eid in (by_cli, by_other):
            out[eid] = [
                s.call("cron_rm", id=eid),
                s.call("cron_mute", id=eid),
                s.call("cron_pin", id=eid),
                s.call("cron_edit", id=eid, every="2h"),
            ]
        out["pause"] = s.call("cron_pause")
        out["resume"] = s.call("cron_resume")
        mine = s.call("cron_add", prompt="mine", every="1h").result()["id"]
        out["mine"] = [s.call("cron_mute", id=mine), s.call("cron_rm", id=mine)]
        _operator(c)
        out["operator"] = [s.call("cron_mute", id=by_cli), s.call("cron_rm", id=by_other)]
        return out

    out = serve(c["env"], body)
    for eid in (by_cli, by_other):
        for reply in out[eid]:
            assert reply.error and reply.text.startswith(f"refused: change in pane {c['worker']} "), reply
            assert f"beyond this worker's scope (its own pane {c['pane']})" in reply.text, reply
            assert "may: [change]" in reply.text, reply  # the grant that would allow it
    assert out["pause"].error and "operator" in out["pause"].text
    assert out["resume"].error and "operator" in out["resume"].text
    assert not any(r.error for r in out["mine"]), out["mine"]
    assert not any(r.error for r in out["operator"]), out["operator"]
    # the refused changes changed nothing, and each is in the log
    listed = {r["id"]: r for r in run_in(["cron", "list", "--json"], c["env"]).json()["result"]}
    assert by_cli in listed and listed[by_cli]["muted"] is True  # muted by the operator only
    assert by_other not in listed
    refused = [a for a in _audit(c) if a["outcome"] == "refused"]
    assert len(refused) == 10 and all(a["message"].startswith("refused: ") for a in refused)


@pytest.mark.tmux
@pytest.mark.shell
def test_the_settings_widen_the_owner_check(caller):
    c = caller
    by_cli = _cli_add(c, "--every", "1h", "--pane", c["worker"], "from the shell")
    reply = serve(dict(c["env"], RK_MCP_ANY_OWNER="1"), lambda s: s.call("cron_rm", id=by_cli))
    assert not reply.error, reply


@pytest.mark.tmux
@pytest.mark.shell
def test_outside_tmux_nothing_is_owned(caller):
    c = caller
    env = {k: v for k, v in c["env"].items() if k != "TMUX_PANE"}
    eid = _cli_add(c, "--every", "1h", "--pane", c["worker"], "x", RK_CREATED_VIA="mcp", TMUX_PANE="")
    reply = serve(env, lambda s: s.call("cron_rm", id=eid))
    assert reply.error and "could not place its caller" in reply.text, reply


@pytest.mark.tmux
@pytest.mark.shell
def test_pending_entries_per_caller_are_capped(caller):
    c = caller
    _cli_add(c, "--every", "1h", "--pane", c["worker"], "the shell's own: not counted")

    def body(s: Session):
        return [s.call("cron_add", prompt=f"n{i}", every="1h") for i in range(3)]

    replies = serve(dict(c["env"], RK_MCP_MAX_PENDING="2"), body)
    assert not replies[0].error and not replies[1].error
    assert replies[2].error and replies[2].text.startswith("refused: ") and "at most 2" in replies[2].text
    assert len(run_in(["cron", "list", "--json"], c["env"]).json()["result"]) == 3


@pytest.mark.tmux
@pytest.mark.shell
def test_schedules_no_more_often_than_a_minute_and_payloads_bounded(caller):
    c = caller

    def body(s: Session):
        return {
            "every": s.call("cron_add", prompt="x", every="30s"),
            "idle_every": s.call("cron_add", prompt="x", idle_every="59s"),
            "min": s.call("cron_add", prompt="x", backoff=True, min="30s"),
            "edit": s.call("cron_edit", id=s.call("cron_add", prompt="ok", every="1m").result()["id"], every="10s"),
            "payload": s.call("cron_add", prompt="x" * 4001, every="1h"),
            "send_payload": s.call("send", prompt="x" * 4001),
            "await": s.call("agent_await", pane=c["worker"], until=["idle"], timeout="2h"),
        }

    got = serve(c["env"], body)
    for key, reply in got.items():
        assert reply.error and reply.text.startswith("refused: "), (key, reply)
    assert "at least 60s" in got["every"].text and "4001 characters" in got["payload"].text
    assert len(run_in(["cron", "list", "--json"], c["env"]).json()["result"]) == 1  # only the 1m one


@pytest.mark.tmux
@pytest.mark.shell
def test_send_counts_toward_the_targets_rate_cap(caller):
    c = caller

    def body(s: Session):
        first = s.call("send", prompt="one", pane=c["worker"])
        wait_for(lambda: "one" in s.call("pane_read", pane=c["worker"]).text, message="the first send")
        return first, s.call("send", prompt="two", pane=c["worker"])

    _operator(c)
    first, second = serve(dict(c["env"], RK_RATE_PER_HOUR="1"), body)
    assert not first.error, first
    assert second.error and second.text.startswith("refused: ") and "the cap is 1" in second.text, second


@pytest.mark.shell
def test_a_plain_cli_start_does_not_load_the_sdk(tmp_path):
    from cli_helpers import make_env

    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "rk", "cron", "list"],
        env=make_env(tmp_path),
        capture_output=True,
        text=True,
        check=True,
    )
    modules = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "rk.cron" not in modules and "rk.channels.mcp" not in modules
    assert not {m for m in modules if m == "mcp" or m.startswith("mcp.")}


# -- the pure guardrails ------------------------------------------------------------------------


def test_owner_check_decisions():
    mine = {"pane": "%1", "via": "mcp", "at": 1}
    limits = Limits()
    there = mcpguard.Spot("%1", "main")
    mcpguard.check_change(Caller("%1", "main"), "a", mine, there, limits)
    mcpguard.check_change(Caller("%2", "main", "operator"), "a", mine, there, limits)  # its session
    mcpguard.check_change(Caller("%2", "other"), "a", mine, there, Limits(any_owner=True))
    mcpguard.check_change(Caller("%1", "main"), "a", {"pane": "%1", "at": 1}, there, limits)  # its own pane
    for caller, created, target in (
        (Caller("%2", "main"), mine, there),  # a worker, another pane
        (Caller("%2", "other", "operator"), mine, there),  # an operator, another session
    ):
        with pytest.raises(Refusal, match="beyond this"):
            mcpguard.check_change(caller, "a", created, target, limits)
    with pytest.raises(Refusal, match="only its creator"):  # the pane is gone: only the creator
        mcpguard.check_change(Caller("%2", "main", "operator"), "a", mine, None, limits)
    with pytest.raises(Refusal, match="could not place"):  # no pane owns nothing
        mcpguard.check_change(Caller(""), "a", {"pane": "", "via": "mcp"}, None, limits)


def test_limit_decisions():
    limits = Limits(max_pending=2)
    mcpguard.check_room(Caller("%1"), 1, 1, 50, limits)
    with pytest.raises(Refusal, match="at most 2"):
        mcpguard.check_room(Caller("%1"), 2, 2, 50, limits)
    with pytest.raises(Refusal, match="kept for people"):  # agents never take the last ten places
        mcpguard.check_room(Caller("%1"), 0, 40, 50, limits)
    mcpguard.check_room(Caller("%1"), 0, 39, 50, limits)
    with pytest.raises(Refusal, match="could not place"):  # an unknown caller gets none
        mcpguard.check_room(Caller(""), 0, 0, 50, limits)
    mcpguard.check_interval("every", 60, limits)
    with pytest.raises(Refusal, match="at least 60s"):
        mcpguard.check_interval("every", 59, limits)
    mcpguard.check_payload("prompt", "x" * 4000, limits)
    with pytest.raises(Refusal, match="4001"):
        mcpguard.check_payload("prompt", "x" * 4001, limits)
    mcpguard.check_rate("%3", 29, 30)
    mcpguard.check_rate("%3", 100, 0)  # a cap of 0 is no cap
    with pytest.raises(Refusal, match="the cap is 30"):
        mcpguard.check_rate("%3", 30, 30)


# -- rk agent setup --mcp, rk doctor -------------------------------------------------------


def _setup(tmp_path, *agents, stdin=None, **flags):
    import io

    from rk.agent import setup

    env = {"HOME": str(tmp_path / "home"), "PATH": str(tmp_path / "bin"), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    out, err = io.StringIO(), io.StringIO()
    code = setup.run_setup(
        agents or setup.PROVIDERS,
        setup.SetupOptions(mcp=True, **flags),
        env=env,
        stdin=stdin if stdin is not None else io.StringIO(),
        stdout=out,
        stderr=err,
        argv0="",
        executable=sys.executable,
    )
    return code, out.getvalue(), err.getvalue(), env


def _paths(tmp_path):
    home = tmp_path / "home"
    return {
        "claude": home / ".claude.json",
        "codex": home / ".codex" / "config.toml",
        "gemini": home / ".gemini" / "settings.json",
        "opencode": tmp_path / "xdg" / "opencode" / "opencode.json",
    }


CODEX_BEFORE = 'model = "o4"\n\n[mcp_servers.other]\ncommand = "other"\n'


@pytest.mark.shell
def test_setup_mcp_registers_rk_in_each_clis_config(tmp_path):
    import tomllib

    from rk.agent.setup import find_rk

    rk = find_rk(argv0="", executable=sys.executable, env={"PATH": ""})
    paths = _paths(tmp_path)
    paths["claude"].parent.mkdir(parents=True)
    paths["claude"].write_text(json.dumps({"numStartups": 3, "mcpServers": {"other": {"command": "x"}}}))
    paths["codex"].parent.mkdir(parents=True)
    paths["codex"].write_text(CODEX_BEFORE)

    code, out, err, _ = _setup(tmp_path, yes=True)
    assert code == 0, err
    claude = json.loads(paths["claude"].read_text())
    assert claude["numStartups"] == 3 and claude["mcpServers"]["other"] == {"command": "x"}
    assert claude["mcpServers"]["rk"] == {"type": "stdio", "command": rk, "args": ["mcp"], "env": {}}
    codex = tomllib.loads(paths["codex"].read_text())
    assert codex["model"] == "o4" and codex["mcp_servers"]["other"] == {"command": "other"}
    assert codex["mcp_servers"]["rk"]["command"] == rk and codex["mcp_servers"]["rk"]["args"] == ["mcp"]
    assert {"TMUX", "TMUX_PANE", "RK_STATE_DIR"} <= set(codex["mcp_servers"]["rk"]["env_vars"])
    assert json.loads(paths["gemini"].read_text())["mcpServers"]["rk"] == {"command": rk, "args": ["mcp"]}
    opencode = json.loads(paths["opencode"].read_text())
    assert opencode["mcp"]["servers"]["rk"] == {"type": "local", "command": [rk, "mcp"], "enabled": True}

    before = {a: p.read_bytes() for a, p in paths.items()}
    code, out, _, _ = _setup(tmp_path, yes=True)
    assert code == 0 and "nothing to change" in out
    assert {a: p.read_bytes() for a, p in paths.items()} == before  # a re-run writes nothing

    code, out, err, _ = _setup(tmp_path, uninstall=True, yes=True)
    assert code == 0, err
    assert paths["codex"].read_text() == CODEX_BEFORE  # exactly what was there
    assert "rk" not in json.loads(paths["claude"].read_text())["mcpServers"]
    assert "rk" not in json.loads(paths["gemini"].read_text()).get("mcpServers", {})


@pytest.mark.shell
def test_setup_mcp_asks_first_and_never_takes_a_foreign_entry(tmp_path):
    paths = _paths(tmp_path)
    code, _, err, _ = _setup(tmp_path, "gemini")  # no terminal, no --yes
    assert code == 2 and "--yes" in err and not paths["gemini"].exists()
    code, out, _, _ = _setup(tmp_path, "gemini", dry_run=True)
    assert code == 0 and '"rk"' in out and "dry run" in out and not paths["gemini"].exists()

    paths["codex"].parent.mkdir(parents=True)
    paths["codex"].write_text('[mcp_servers.rk]\ncommand = "someone-else"\n')
    code, _, err, _ = _setup(tmp_path, "codex", "gemini", yes=True)
    assert code == 1 and "not written by rk" in err
    assert paths["codex"].read_text() == '[mcp_servers.rk]\ncommand = "someone-else"\n' and not paths["gemini"].exists()


@pytest.mark.shell
def test_doctor_checks_the_registration(tmp_path):
    import io

    from rk.cli.doctor import check_mcp
    from rk.cli.environment import Environment

    code, _, _, env = _setup(tmp_path, "claude", "gemini", yes=True)
    assert code == 0
    doctor = Environment(environ=env, stdout=io.StringIO(), stderr=io.StringIO())
    checks = {c.name: c for c in check_mcp(doctor)}
    assert set(checks) == {"claude mcp", "gemini mcp"}  # codex, opencode: not registered, not said
    assert all(c.level == "ok" for c in checks.values()), checks
    path = _paths(tmp_path)["claude"]
    doc = json.loads(path.read_text())
    doc["mcpServers"]["rk"]["command"] = "/old/rk"
    path.write_text(json.dumps(doc))
    stale = {c.name: c for c in check_mcp(doctor)}["claude mcp"]
    assert stale.level == "fail" and "another rk" in stale.detail and "--mcp" in stale.fix
