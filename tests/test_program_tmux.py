"""Which program is in a pane, on a real tmux server: a REPL started over an
agent's last frame is never typed into (by a fire or `rk send`, before and
after Ctrl-L, and whatever state an earlier screen look wrote), a fake agent
launched through a wrapper is one, and the pane where `rk cron add` runs is not
reported as running `python` (rk itself)."""

from __future__ import annotations

import json
import shutil
import sys
import time
from datetime import timezone
from pathlib import Path

import pytest
from conftest import run_rk, wait_for

from rk.core.pane.facts import PaneFact
from rk.store.delivery_log import read_live
from rk.tmux.observe import read_screen

pytestmark = [pytest.mark.tmux, pytest.mark.shell]

T0 = 1_800_000_000
FRAME = Path(__file__).parent / "fixtures" / "screens" / "claude" / "idle_fresh.ansi"
PYTHON3 = shutil.which("python3", path="/usr/bin:/bin") or "python3"


def rk(args, env, check=False):
    return run_rk(args, env, check=check)


def new_pane(server, command: str) -> str:
    return server.run("new-window", "-d", "-t", "main:", "-P", "-F", "#{pane_id}", command).strip()


def interactive_bash(server, tmp_path: Path, env: dict[str, str] | None = None) -> str:
    """A real interactive bash at its prompt (no rc files; a marked prompt to poll for)."""
    rc = tmp_path / "bashrc"
    rc.write_text("PS1='READY$ '\n")
    extra = " ".join(f"{k}={v}" for k, v in (env or {}).items())
    pane = new_pane(
        server,
        f"env -i HOME={tmp_path} PATH=/usr/bin:/bin TERM=screen {extra} bash --noprofile --rcfile {rc} -i",
    )
    wait_for(lambda: "READY$" in server.capture(pane), message="the bash prompt")
    return pane


def type_line(server, pane: str, text: str) -> None:
    server.send_keys(pane, "-l", text)
    server.send_keys(pane, "Enter")


def add(env, server, *args) -> str:
    out = rk(["cron", "add", *args, "--json", "-L", server.name], dict(env, RK_NOW=str(T0)), check=True)
    return json.loads(out.stdout)["result"]["id"]


def tick(env, server, at: int) -> dict[str, str]:
    out = rk(["cron", "tick", "-L", server.name, "--json"], dict(env, RK_NOW=str(at)), check=True)
    return {d["entry"]: d["outcome"] for d in json.loads(out.stdout)["result"]["decisions"]}


def listed(env, server, pane: str) -> dict:
    rows = json.loads(rk(["agent", "list", "-L", server.name, "--json"], env, check=True).stdout)["result"]
    return next(r for r in rows if r["pane"] == pane)


def screen_reads(server, pane: str):
    title, styled = server.look(pane)
    return read_screen(PaneFact(pane), styled, title, int(time.time()), timezone.utc)


def repl_over_claudes_frame(server, tmp_path: Path, repl: str, prompt: str) -> str:
    """A shell pane that shows Claude's idle frame (as Claude leaves it) and then runs `repl`."""
    pane = interactive_bash(server, tmp_path)
    type_line(server, pane, f"clear; cat {FRAME}; {repl}")
    wait_for(lambda: server.capture(pane).rstrip().endswith(prompt.rstrip()), message=f"the {repl} prompt")
    seen = screen_reads(server, pane)
    assert (seen.agent, seen.state) == ("claude", "idle")  # the frame alone would pass for an idle Claude
    return pane


@pytest.mark.parametrize(
    ("repl", "name", "prompt", "code", "show"),
    [
        (
            f"{PYTHON3} -q",
            "python3",
            ">>> ",
            "__import__('pathlib').Path('{marker}').touch()",
            f"print(open('{FRAME}').read(), end='')",
        ),
        (
            "node",
            "node",
            "> ",
            "require('fs').writeFileSync('{marker}', '')",
            f"process.stdout.write(require('fs').readFileSync('{FRAME}', 'utf8'))",
        ),
    ],
    ids=["python3", "node"],
)
def test_a_repl_over_an_agents_last_frame_is_never_typed_into(
    env, tmux_server, tmp_path, repl, name, prompt, code, show
):
    if repl == "node" and shutil.which("node", path="/usr/bin:/bin") is None:
        pytest.fail("node is required for this test")
    server = tmux_server
    pane = repl_over_claudes_frame(server, tmp_path, repl, prompt)
    marker = tmp_path / "executed"
    payload = code.format(marker=marker)
    row = listed(env, server, pane)
    assert (row["kind"], row["program"], row["state"]) == ("program", name, "")
    assert row["process_pid"] > 0 and row["process"].startswith(name)
    refused = f"no agent in pane ({name})"
    entries = [
        add(env, server, payload, "--every", "30s", "--pane", pane, "--deliver", policy)
        for policy in ("immediate", "when-idle", "skip-if-busy")
    ]
    assert tick(env, server, T0 + 30) == dict.fromkeys(entries, f"skipped-absent: {refused}")
    sent = rk(["send", "--pane", pane, payload, "-L", server.name], dict(env, RK_NOW=str(T0 + 31)))
    assert sent.returncode == 1 and refused in sent.stdout + sent.stderr
    # Ctrl-L clears the frame; the state an older rk's screen look would have written changes nothing
    server.send_keys(pane, "C-l")
    wait_for(lambda: "Claude Code" not in server.capture(pane), message="the screen cleared")
    server.set_pane_option(pane, "@rk_pane_agent_state", f"idle:{T0 + 40}")
    server.set_pane_option(pane, "@rk_pane_agent_source", f"screen:{T0 + 40}")
    assert tick(env, server, T0 + 60) == dict.fromkeys(entries, f"skipped-absent: {refused}")
    row = listed(env, server, pane)
    assert (row["kind"], row["program"], row["state"], row["source"]) == ("program", name, "", "")
    # the REPL itself prints a composer-like frame
    type_line(server, pane, show)
    wait_for(lambda: screen_reads(server, pane).agent == "claude", message="the REPL showing Claude's frame")
    assert tick(env, server, T0 + 90) == dict.fromkeys(entries, f"skipped-absent: {refused}")
    lines = read_live(Path(env["RK_STATE_DIR"]) / f"{server.name}.log")
    assert [line.outcome for line in lines] == [f"skipped-absent: {refused}"] * 10  # 3 fires, the send, 3 + 3 fires
    assert payload not in server.capture(pane) and not marker.exists()  # 0 prompts into the REPL
    # The control: the same text typed by hand does run in this REPL.
    type_line(server, pane, payload)
    wait_for(marker.exists, message="the REPL runs what is typed into it")


def _fake_agent(tmp_path: Path, name: str = "aider") -> tuple[Path, Path]:
    """A program that reads lines like an agent's composer would and appends them to
    a file; named like an agent CLI whose screen rk does not read (so no layout is
    expected of it). (the executable, the file it writes)."""
    received = tmp_path / "received"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    agent = bin_dir / name
    agent.write_text(
        f"#!{sys.executable}\nimport sys\nfor line in sys.stdin:\n    open({str(received)!r}, 'a').write(line)\n"
    )
    agent.chmod(0o755)
    return agent, received


@pytest.mark.parametrize("wrapper", ["script", "env", "env-sh"])
def test_a_fake_agent_launched_through_a_wrapper_is_an_agent(env, tmux_server, tmp_path, wrapper):
    server = tmux_server
    agent, received = _fake_agent(tmp_path)
    if wrapper == "script":
        script = tmp_path / "start-agent.sh"
        script.write_text(f"#!/bin/sh\necho starting\n{agent}\necho done\n")
        command = f"sh {script}"
    elif wrapper == "env":
        command = f"env AGENT_MODE=1 {agent}"
    else:
        command = f"env AGENT_MODE=1 sh -c '{agent}; true'"
    pane = new_pane(server, command)
    wait_for(lambda: listed(env, server, pane)["kind"] == "agent", message="the agent judged from its processes")
    row = listed(env, server, pane)
    assert (row["kind"], row["program"]) == ("agent", "aider")
    if wrapper != "env":
        assert server.display(pane, "#{pane_current_command}") == "sh"  # what tmux alone would go by
    entry = add(env, server, "wrapped hello", "--every", "30s", "--pane", pane)
    assert tick(env, server, T0 + 30) == {entry: "delivered"}
    wait_for(lambda: received.exists() and received.read_text() == "wrapped hello\n", message="the agent got it once")


def test_rk_cron_add_in_a_pane_does_not_report_its_own_pane_as_python(env, tmux_server, tmp_path):
    server = tmux_server
    keep = ("RK_STATE_DIR", "HOME", "XDG_CONFIG_HOME", "TZ", "TMUX_TMPDIR")
    inside = {k: env[k] for k in keep} | {"TMUX": '"$TMUX"', "TMUX_PANE": '"$TMUX_PANE"'}  # as tmux set them
    pane = interactive_bash(server, tmp_path, inside)
    err = tmp_path / "add.err"
    assert server.display(pane, "#{pane_current_command}") == "bash"
    type_line(server, pane, f"{sys.executable} -m rk cron add 'status?' --every 5m 2> {err}; echo ADDED")
    wait_for(lambda: "ADDED" in server.capture(pane).replace("echo ADDED", ""), timeout=30, message="the add")
    warnings = err.read_text()
    assert "python" not in warnings
    assert f"pane {pane} runs a shell now" in warnings  # the pane holds the shell rk was started from


def _frame_of(server, pane: str):
    """The delivery guard's frame of `pane`, its fields read as the delivery reads them."""
    from rk.tmux.frame import FRAME_FIELDS, Frame

    fields = tuple(server.display(pane, "#{" + f + "}") for f in FRAME_FIELDS)
    return Frame(pane, False, False, "0,0", server.capture(pane), "", fields)


def test_the_delivery_guard_judges_by_the_same_process_tree(tmux_server, tmp_path):
    from rk.tmux.observe import pane_of_frame

    server = tmux_server
    repl = repl_over_claudes_frame(server, tmp_path, f"{PYTHON3} -q", ">>> ")
    server.set_pane_option(repl, "@rk_pane_agent_state", f"idle:{T0}")
    server.set_pane_option(repl, "@rk_pane_agent_source", f"screen:{T0}")  # what an older rk's look wrote
    judged = pane_of_frame(_frame_of(server, repl))
    assert (judged.kind, judged.program, judged.state) == ("program", "python3", "")
    agent, _ = _fake_agent(tmp_path)
    wrapped = new_pane(server, f"sh -c '{agent}; true'")
    wait_for(lambda: pane_of_frame(_frame_of(server, wrapped)).kind == "agent", message="the wrapped agent")
    assert pane_of_frame(_frame_of(server, wrapped)).agent == "aider"


def test_the_process_table_is_read_once_and_only_for_the_panes_that_matter(tmux_server, tmp_path, monkeypatch):
    import rk.tmux.server
    from rk.core.pane.facts import panes_concerned
    from rk.core.schedule.entry import Entry, Every, Target
    from rk.host.process import tty_device

    server = tmux_server
    repl = new_pane(server, f"{PYTHON3} -q")
    other = new_pane(server, "cat")
    wait_for(lambda: ">>>" in server.capture(repl), message="the python prompt")
    reads: list[set[int]] = []
    real = rk.tmux.server.read_table
    monkeypatch.setattr(rk.tmux.server, "read_table", lambda ttys: reads.append(set(ttys)) or real(ttys))
    entry = Entry("e1", Every(30), Target("pane", repl), "hi")
    facts = {p.pane_id: p for p in server.pane_facts(lambda listed: panes_concerned([entry], listed))}
    assert reads == [{tty_device(server.display(repl, "#{pane_tty}"))}]  # one pass, the target's tty alone
    assert (facts[repl].kind, facts[repl].program) == ("program", "python3")
    assert facts[other].program == ""  # not judged: not a target this tick
    reads.clear()
    server.pane_facts(lambda listed: ())
    assert reads == []  # nothing matters: nothing is read
    server.pane_facts()
    assert len(reads) == 1 and len(reads[0]) == len(server.list_panes())  # every pane, still one pass


def test_ps_and_proc_judge_a_pane_alike(tmux_server, tmp_path):
    from rk.core.pane.program import judge
    from rk.host.process import _ps_table, read_table, tty_device

    server = tmux_server
    panes = [new_pane(server, f"{PYTHON3} -q"), interactive_bash(server, tmp_path)]
    _fake_agent(tmp_path)
    panes.append(new_pane(server, f"sh -c '{tmp_path / 'bin' / 'aider'}; true'"))
    wait_for(lambda: ">>>" in server.capture(panes[0]), message="the python prompt")
    for pane in panes:
        tty, root = tty_device(server.display(pane, "#{pane_tty}")), int(server.display(pane, "#{pane_pid}"))
        by_proc, by_ps = read_table({tty}), _ps_table({tty})
        assert by_proc is not None and by_ps is not None
        a, b = judge(by_proc, root), judge(by_ps, root)
        assert a is not None and b is not None and (a.kind, a.pid, a.agent) == (b.kind, b.pid, b.agent)
    assert [
        judge(read_table({tty_device(server.display(p, "#{pane_tty}"))}), int(server.display(p, "#{pane_pid}"))).kind
        for p in panes
    ] == ["program", "shell", "agent"]


def test_without_the_process_table_the_command_decides_and_the_screen_never_promotes(
    tmux_server, tmp_path, monkeypatch
):
    import rk.tmux.server
    from rk.core.schedule.entry import Entry, Every, Target
    from rk.tmux.observe import look_around

    server = tmux_server
    repl = repl_over_claudes_frame(server, tmp_path, f"{PYTHON3} -q", ">>> ")
    monkeypatch.setattr(rk.tmux.server, "read_table", lambda ttys: None)  # no /proc, no ps
    facts = {p.pane_id: p for p in server.pane_facts()}
    assert (facts[repl].kind, facts[repl].command, facts[repl].program) == ("program", "python3", "")
    entry = Entry("e1", Every(30), Target("pane", repl), "hi")
    looked = {p.pane_id: p for p in look_around(server, [entry], list(facts.values()), int(time.time()), timezone.utc)}
    assert (looked[repl].kind, looked[repl].state) == ("program", "")
    assert server.display(repl, "#{@rk_pane_agent_state}") == ""  # nothing written from the frame
