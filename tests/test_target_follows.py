"""An entry follows the agent the user runs in its pane (issue 27, item 2).

The Quick start says: add the entry in the pane where the agent runs, and restart
the agent once so its hooks load. A session ends when its agent quits, and the
agent started again is a new session, so an entry made on the pane's session never
fired (`target missing`, for good). Without a target flag `rk cron add` now targets
the pane, resolved at each fire to whatever agent runs there; a session target is
made only on request (`--session REF`, `--follow-session`), and one whose session
ended says so and how to fix it, in `cron list`, `status` and the log.

On a private tmux server: a real interactive bash in the pane, and a fake agent
(`aider`: an agent CLI whose screen rk does not read) started from it. It stamps a
new session with the hook on every start (`--resume ID` keeps one), appends every
line typed into it to a file, runs `!command` lines as an agent's shell mode does,
and quits on `/exit`, leaving the shell.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from conftest import run_rk, wait_for
from ruamel.yaml import YAML
from test_mcp import caller  # noqa: F401  (the fixture: a caller pane and a worker)

from rk.cli.environment import CliError
from rk.cli.flags import target_from_flags
from rk.core.pane.facts import PaneFact, PaneKind, resolve_target, short_session
from rk.core.schedule.dispose import absent_disposition
from rk.core.schedule.entry import CreatedBy, Entry, Every, Target, TargetKind
from rk.core.schedule.health import why_not
from rk.store.delivery_log import read_live

UUID = "565428b4-0f3e-4c2a-9d1b-7e6f5a4b3c2d"

AGENT = """#!{python}
import json, os, subprocess, sys, uuid
args = sys.argv[1:]
sid = args[1] if args[:1] == ["--resume"] else str(uuid.uuid4())
hook = [{python!r}, "-m", "rk", "agent", "hook", "--agent", "aider", "stamp"]
subprocess.run(hook, input=json.dumps({{"session_id": sid, "source": "startup"}}), text=True, check=False)
with open({sessions!r}, "a") as out:
    out.write(os.environ.get("TMUX_PANE", "") + " " + sid + "\\n")
for line in sys.stdin:
    line = line.rstrip("\\n")
    if line == "/exit":
        break
    if line.startswith("!"):
        subprocess.run(line[1:], shell=True, check=False)
        continue
    with open({received!r}, "a") as out:
        out.write(line + "\\n")
"""


class Rig:
    """The server, the fake agent's files, and the environment of the user's shell."""

    def __init__(self, env: dict[str, str], server, tmp_path: Path) -> None:
        self.env, self.server, self.tmp = env, server, tmp_path
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        self.sessions, self.received = tmp_path / "sessions", tmp_path / "received"
        agent = self.bin / "aider"
        agent.write_text(AGENT.format(python=sys.executable, sessions=str(self.sessions), received=str(self.received)))
        agent.chmod(0o755)
        self.outputs = 0

    def shell(self) -> str:
        """A new window running a real interactive bash, with rk's state and the agent on its PATH."""
        rc = self.tmp / "bashrc"
        rc.write_text("PS1='READY$ '\n")
        keep = " ".join(f"{k}={self.env[k]}" for k in ("RK_STATE_DIR", "HOME", "XDG_CONFIG_HOME", "TZ", "TMUX_TMPDIR"))
        command = (
            f'env -i {keep} PATH={self.bin}:/usr/bin:/bin TERM=screen TMUX="$TMUX" TMUX_PANE="$TMUX_PANE"'
            f" bash --noprofile --rcfile {rc} -i"
        )
        pane = self.server.run("new-window", "-d", "-t", "main:", "-P", "-F", "#{pane_id}", command).strip()
        wait_for(lambda: "READY$" in self.server.capture(pane), message="the bash prompt")
        return pane

    def type(self, pane: str, text: str) -> None:
        self.server.send_keys(pane, "-l", text)
        self.server.send_keys(pane, "Enter")

    def started(self) -> list[tuple[str, str]]:
        """(pane, session id) of each start of the agent, in order."""
        text = self.sessions.read_text() if self.sessions.exists() else ""
        return [tuple(line.split()) for line in text.splitlines()]  # type: ignore[misc]

    def start_agent(self, pane: str, *args: str) -> str:
        """Start the agent in `pane`'s shell; its session id once its hook stamped it."""
        before = len(self.started())
        self.type(pane, " ".join(["aider", *args]))
        wait_for(lambda: len(self.started()) > before, timeout=30, message="the agent started")
        sid = self.started()[-1][1]
        wait_for(lambda: self.option(pane, "@rk_pane_agent_session") == f"aider:{sid}", message="the session stamp")
        wait_for(lambda: self.kind(pane) == "agent", timeout=30, message="the pane judged an agent")
        return sid

    def quit_agent(self, pane: str) -> None:
        self.type(pane, "/exit")
        wait_for(lambda: self.kind(pane) == "shell", timeout=30, message="the shell back")

    def option(self, pane: str, name: str) -> str:
        return self.server.run("show-options", "-pqv", "-t", pane, name).strip()

    def kind(self, pane: str) -> str:
        out = self.rk("agent", "list", "--json").stdout
        rows = {row["pane"]: row for row in json.loads(out)["result"]}
        return rows[pane]["kind"] if pane in rows else ""

    def rk_in(self, pane: str, *args: str, agent: bool = False) -> tuple[int, str, str]:
        """`rk ARGS` typed in `pane` (its shell; with `agent`, as the agent's `!` shell
        mode): (exit status, stdout, stderr)."""
        self.outputs += 1
        out, err, rc = (self.tmp / f"{name}{self.outputs}" for name in ("out", "err", "rc"))
        words = " ".join(f"'{a}'" for a in args)
        line = f"{sys.executable} -m rk {words} >{out} 2>{err}; echo $? >{rc}.tmp; mv {rc}.tmp {rc}"
        self.type(pane, ("!" if agent else "") + line)
        wait_for(rc.exists, timeout=60, message=f"rk {words} in {pane}")
        return int(rc.read_text()), out.read_text(), err.read_text()

    def rk(self, *args: str, now: int | None = None):
        env = dict(self.env, **({"RK_NOW": str(now)} if now is not None else {}))
        return run_rk([*args, "-L", self.server.name], env, timeout=120)

    def add_in(self, pane: str, *flags: str, agent: bool = False) -> dict:
        code, out, err = self.rk_in(pane, "cron", "add", "status?", "--every", "5m", "--json", *flags, agent=agent)
        assert code == 0, (out, err)
        return json.loads(out)["result"]

    def tick(self, entry: str, at: int) -> str:
        """A tick at `at`: the entry's outcome in the log."""
        res = self.rk("cron", "tick", now=at)
        assert res.returncode == 0, res.stderr
        lines = read_live(Path(self.env["RK_STATE_DIR"]) / f"{self.server.name}.log")
        return [line.outcome for line in lines if line.entry == entry][-1]

    def raw_target(self, entry: str) -> dict:
        """The entry's target as the entries file holds it."""
        doc = YAML(typ="safe").load((Path(self.env["RK_STATE_DIR"]) / f"{self.server.name}.yaml").read_text())
        return next(e["target"] for e in doc["entries"] if e["id"] == entry)

    def got(self) -> list[str]:
        return self.received.read_text().splitlines() if self.received.exists() else []


@pytest.fixture
def rig(env, tmux_server, tmp_path) -> Rig:
    return Rig(env, tmux_server, tmp_path)


def _due() -> int:
    """An instant past a `--every 5m` entry added now."""
    return int(time.time()) + 400


# -- the rules, pure ------------------------------------------------------------------------


def test_a_session_no_pane_runs_ended_and_the_log_line_says_so():
    panes = [PaneFact("%3", session_ref="claude:0000aaaa-1111", kind=PaneKind.AGENT)]
    gone = resolve_target(Target(TargetKind.SESSION, f"claude:{UUID}"), panes)
    assert not gone.resolved and gone.why == "session claude:565428b4 ended (no pane runs it now)"
    entry = Entry("ab12", Every(300), Target(TargetKind.SESSION, f"claude:{UUID}"), "status?")
    assert str(absent_disposition(entry, gone.refused).outcome) == "skipped-absent: session claude:565428b4 ended"
    assert resolve_target(Target(TargetKind.SESSION, "claude:0000aaaa-1111"), panes).pane == "%3"


def test_short_session_names_a_uuid_by_its_first_group():
    assert short_session(f"claude:{UUID}") == "claude:565428b4"
    assert short_session(UUID) == "565428b4"
    assert short_session("codex:s-1") == "codex:s-1"  # short refs stay whole


def test_an_ended_session_target_names_the_fix_in_list_and_status():
    from datetime import UTC

    ref = f"claude:{UUID}"
    gone = resolve_target(Target(TargetKind.SESSION, ref), [])
    made_there = Entry("ab12", Every(300), Target(TargetKind.SESSION, ref), "p", created_by=CreatedBy(1, ref, "%3"))
    made_elsewhere = Entry("cd34", Every(300), Target(TargetKind.SESSION, ref), "p", created_by=CreatedBy(1, "", "%7"))
    said = why_not(made_there, 0, gone, 10, UTC, max_entries=100)
    assert said == (
        "target missing: session claude:565428b4 ended (no pane runs it now);"
        " re-target: rk cron rm ab12, then add it again with --pane %3"
    )
    elsewhere = why_not(made_elsewhere, 0, gone, 10, UTC, max_entries=100)
    assert elsewhere is not None and elsewhere.endswith("add it again with --pane %N")  # %7 never ran it
    pane_gone = resolve_target(Target(TargetKind.PANE, "%9"), [])
    on_pane = Entry("ef56", Every(300), Target(TargetKind.PANE, "%9"), "p", created_by=CreatedBy(1, ref, "%9"))
    assert why_not(on_pane, 0, pane_gone, 10, UTC, max_entries=100) == "target missing: pane %9 is dead"


@pytest.mark.parametrize("other", [("--role", "r"), ("--session", "s"), ("--pane", "%1")])
def test_follow_session_goes_with_no_other_target_flag(other):
    flags = {"role": None, "session": None, "pane": None} | {other[0][2:]: other[1]}
    with pytest.raises(CliError, match=f"{other[0]} and --follow-session are mutually exclusive"):
        target_from_flags(flags["role"], flags["session"], flags["pane"], follow_session=True)
    assert target_from_flags(None, None, None, follow_session=True) is None  # the caller's pane decides


# -- on a real server ------------------------------------------------------------------------


@pytest.mark.tmux
@pytest.mark.shell
def test_added_in_the_shell_after_the_agent_quit_it_reaches_the_agent_started_again(rig):
    pane = rig.shell()
    first = rig.start_agent(pane)
    rig.quit_agent(pane)
    assert rig.option(pane, "@rk_pane_agent_session") == f"aider:{first}"  # what the old default took
    code, out, err = rig.rk_in(pane, "cron", "add", "status?", "--every", "5m")  # the Quick start's line
    assert code == 0 and f"[every 5m -> pane:{pane}]" in out, (out, err)  # not session:aider:<first>, gone for good
    said = (
        f"rk: warning: pane {pane} runs a shell now: the entry fires once an agent runs in it (start the agent there)"
    )
    assert said in err.splitlines(), err  # not "does not exist now": it will, once the agent is back
    added = {"id": out.split()[0]}
    assert rig.raw_target(added["id"]).keys() == {"kind", "pane", "server_started", "server_pid"}  # which pane
    second = rig.start_agent(pane)
    assert second != first
    assert rig.tick(added["id"], _due()) == "delivered"
    wait_for(lambda: rig.got() == ["status?"], message="the restarted agent got the prompt")


@pytest.mark.tmux
@pytest.mark.shell
def test_added_from_inside_the_agent_it_survives_a_restart_of_the_agent(rig):
    pane = rig.shell()
    first = rig.start_agent(pane)
    added = rig.add_in(pane, agent=True)  # `!rk cron add …` in the agent's shell mode
    assert added["target"] == f"pane:{pane}", added
    rig.quit_agent(pane)
    assert rig.tick(added["id"], _due()) == "skipped-absent: shell in pane"  # nobody there: nothing typed
    assert rig.start_agent(pane) != first
    assert rig.tick(added["id"], _due() + 300) == "delivered"
    wait_for(lambda: rig.got() == ["status?"], message="the restarted agent got the prompt")


@pytest.mark.tmux
@pytest.mark.shell
def test_follow_session_goes_where_the_session_is_resumed(rig):
    pane = rig.shell()
    sid = rig.start_agent(pane)
    added = rig.add_in(pane, "--follow-session", agent=True)
    assert added["target"] == f"session:aider:{sid}", added
    rig.quit_agent(pane)
    elsewhere = rig.shell()
    assert rig.start_agent(elsewhere, "--resume", sid) == sid
    assert rig.tick(added["id"], _due()) == "delivered"
    wait_for(lambda: rig.got() == ["status?"], message="the resumed session got the prompt")
    res = rig.rk("cron", "log", added["id"], "--json")
    assert [line["target"] for line in json.loads(res.stdout)["result"]] == [elsewhere]


@pytest.mark.tmux
@pytest.mark.shell
def test_a_session_target_whose_session_ended_says_so_and_how_to_fix_it(rig):
    pane = rig.shell()
    sid = rig.start_agent(pane)
    followed = rig.add_in(pane, "--follow-session", agent=True)
    named = rig.add_in(pane, "--session", f"aider:{sid}", agent=True)
    rig.quit_agent(pane)
    rig.start_agent(pane)  # a new session in the same pane
    short = f"aider:{sid.split('-')[0]}"
    ended = f"session {short} ended"
    listed = {e["id"]: e for e in json.loads(rig.rk("cron", "list", "--json").stdout)["result"]}
    fixes = {followed["id"]: pane, named["id"]: pane}  # both made from the pane the session ran in
    for eid, where in fixes.items():
        why = listed[eid]["why_not"]
        assert why.startswith(f"target missing: {ended}"), why
        assert why.endswith(f"re-target: rk cron rm {eid}, then add it again with --pane {where}"), why
    status = rig.rk("status")
    assert status.returncode == 1 and ended in status.stdout and "re-target: rk cron rm" in status.stdout
    checks = {c["name"]: c for c in json.loads(rig.rk("doctor", "--json").stdout)["result"]}
    fix = checks[f"entry {named['id']} on {rig.server.name}"]["fix"]
    assert fix == f"rk cron rm {named['id']}, then add it again with --pane {pane}"  # not an edit, which cannot
    at = _due()
    assert rig.tick(followed["id"], at) == f"skipped-absent: {ended}"
    assert rig.tick(named["id"], at + 300) == f"skipped-absent: {ended}"
    assert rig.got() == []


@pytest.mark.tmux
@pytest.mark.shell
def test_follow_session_in_a_pane_whose_agent_quit_is_refused_naming_the_ended_session(rig):
    pane = rig.shell()
    sid = rig.start_agent(pane)
    rig.quit_agent(pane)
    code, out, err = rig.rk_in(pane, "cron", "add", "status?", "--every", "5m", "--follow-session")
    assert code == 1 and out == "", (out, err)
    assert f"no agent session runs in pane {pane} now (its last session, aider:{sid.split('-')[0]}, ended)" in err
    assert "leave --follow-session out" in err
    assert json.loads(rig.rk("cron", "list", "--json").stdout)["result"] == []  # nothing written


@pytest.mark.tmux
@pytest.mark.shell
def test_mcp_cron_add_takes_the_callers_pane_or_with_follow_session_its_session(caller):  # noqa: F811
    from test_mcp import serve

    pane = caller["pane"]
    run_rk(["agent", "state", "idle", "--pane", pane], caller["env"], check=True)
    caller["tmux"].set_pane_option(pane, "@rk_pane_agent_session", f"claude:{UUID}")

    def body(s):
        plain = s.call("cron_add", prompt="status?", every="10m").result()
        followed = s.call("cron_add", prompt="status?", every="10m", follow_session=True).result()
        return plain, followed

    plain, followed = serve(caller["env"], body)
    assert plain["target"] == f"pane:{pane}"
    assert followed["target"] == f"session:claude:{UUID}"


@pytest.mark.tmux
@pytest.mark.shell
def test_an_add_on_a_session_no_pane_runs_says_it_fires_only_where_it_is_resumed(env, tmux_server):
    res = run_rk(["cron", "add", "p", "--every", "5m", "--session", f"claude:{UUID}", "-L", tmux_server.name], env)
    assert res.returncode == 0, res.stderr  # kept: the session may be resumed
    assert (
        "rk: warning: session claude:565428b4 ended (no pane runs it now): the entry fires only where that session"
        " is resumed; to follow a pane instead, add it in that pane without a target flag, or with --pane %N"
    ) in res.stderr.splitlines(), res.stderr
