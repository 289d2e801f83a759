"""A wake on another host's pane, end to end over real ssh (tests/sshd.py): host b's
journal gets a worker's turns; the ticker here follows it and types into a pane here,
once per turn end, also when the link is killed in the middle of the turns."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import run_rk, wait_for

from rk.store import state_journal
from rk.store.mirror import read_mirror

pytestmark = pytest.mark.shell

TURNS = 20


def turn(host_state: Path, pane: str = "%1") -> float:
    """One worker turn on the host: active, then idle (ended ok); when it ended."""
    env = {"RK_STATE_DIR": str(host_state)}
    now = int(time.time())
    state_journal.record(env, "default", now, pane, "active", "", "hook", "claude")
    state_journal.record(env, "default", now, pane, "idle", "ok", "hook", "claude")
    return time.monotonic()


def woken(got: Path) -> int:
    """The wakes typed into the pane: each line `cat` wrote to the file once (its screen
    shows a line twice: the terminal's echo and cat's copy)."""
    return got.read_text().splitlines().count("W %1@b idle") if got.exists() else 0


def test_each_turn_end_on_another_host_wakes_here_once_even_across_killed_links(far, world, tmux_server, env, tmp_path):
    b = far  # with its own tmux server, whose panes the far end looks at as it streams
    got = tmp_path / "got"
    pane = tmux_server.run("new-window", "-d", "-P", "-F", "#{pane_id}", f"exec cat > {got}").strip()
    env = {**world.client_env(env), "RK_RATE_PER_HOUR": "1000"}  # forty wakes in a minute: past the default cap
    state = Path(env["RK_STATE_DIR"])
    assert run_rk(["host", "add", "b", "b"], env).returncode == 0
    added = run_rk(
        [
            *("cron", "add", "-L", tmux_server.name, "--pane", pane, "--any-program"),
            *("--wake-on", "agent-state-change", "--wake-scope", "%1@b", "--wake-debounce", "0"),
            "W {wake_pane} {wake_state}",
        ],
        env,
    )
    assert added.returncode == 0, added.stderr
    ticker = subprocess.Popen([sys.executable, "-m", "rk", "cron", "ticker"], env=env, stderr=subprocess.PIPE)
    try:
        status = state / "ticker.status"
        wait_for(lambda: status.exists() and tmux_server.name in status.read_text(), timeout=30, message="a tick")
        # a first line on b, mirrored here and judged (its mark in the entry's observation): the wake is warm
        state_journal.record({"RK_STATE_DIR": str(b.state)}, "default", int(time.time()), "%1", "active")
        wait_for(lambda: read_mirror(str(state), "b", "default"), timeout=30, message="the first line mirrored")
        mark = read_mirror(str(state), "b", "default")[-1]["at"]
        cursor = state / f"{tmux_server.name}.cursor.yaml"
        wanted = "mirror:{}.{}.{}".format(*mark)
        wait_for(lambda: cursor.exists() and wanted in cursor.read_text(), timeout=30, message="the warm wake")
        latencies = []
        for i in range(TURNS):
            ended = turn(b.state)
            wait_for(lambda i=i: woken(got) == i + 1, timeout=30, interval=0.005, message=f"wake {i}")
            latencies.append(time.monotonic() - ended)
        for i in range(TURNS):  # each turn with the link killed before it ends
            b.drop_links()
            turn(b.state)
            try:
                wait_for(lambda i=i: woken(got) == TURNS + i + 1, timeout=60, message=f"wake {TURNS + i}")
            except AssertionError:
                print("MIRROR", len(read_mirror(str(state), "b", "default")), "CURSOR", cursor.read_text()[-300:])
                print("LOG", (state / f"{tmux_server.name}.log").read_text()[-1500:])
                ticker.terminate()
                print("TICKER", ticker.communicate(timeout=30)[1][-3000:])
                raise
        time.sleep(2)  # nothing more may come (a double would show here)
        assert woken(got) == 2 * TURNS
    finally:
        ticker.terminate()
        ticker.communicate(timeout=30)
    q = statistics.quantiles(latencies, n=20)
    print(f"cross-host wake latency over {TURNS} turns: p50 {statistics.median(latencies):.3f}s p95 {q[18]:.3f}s")
    assert max(latencies) < 10  # a bound against hanging, not the figure (the figure is printed)


# -- what only the far end knows: a pane that vanished, who started a turn, a window's role ----------


def far_tmux(host, *args: str) -> str:
    """A tmux command on the host's own server (its TMUX_TMPDIR, socket `default`)."""
    proc = subprocess.run(["tmux", "-L", "default", *args], env=host.env, capture_output=True, text=True, timeout=10)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def far_agent(host, window: str) -> str:
    """A pane on the host's server with an agent's state (a pane a wake there counts), in its own window."""
    pane = far_tmux(host, "new-window", "-d", "-n", window, "-P", "-F", "#{pane_id}", "sleep 600")
    far_tmux(host, "set-option", "-p", "-t", pane, "@rk_pane_agent_state", f"idle:{int(time.time())}")
    return pane


def rostered(host, pane: str, role: str = "") -> bool:
    """Whether the host's far end has looked since the pane was there (with that role)."""
    from rk.store.roster import load, roster_path

    seen = load(roster_path(str(host.state), "default")).panes.get(pane)
    return seen is not None and seen.known and seen.role == role


class Watch:
    """This host's ticker, with one wake entry on host b's panes typing into a `cat` here."""

    def __init__(self, world, tmux_server, env, tmp_path, scope: str, payload: str, *flags: str) -> None:
        self.b, self.got = world.hosts["b"], tmp_path / "got"
        pane = tmux_server.run("new-window", "-d", "-P", "-F", "#{pane_id}", f"exec cat > {self.got}").strip()
        self.env = {**world.client_env(env), "RK_RATE_PER_HOUR": "1000"}
        self.state = Path(self.env["RK_STATE_DIR"])
        self.cursor = self.state / f"{tmux_server.name}.cursor.yaml"
        assert run_rk(["host", "add", "b", "b"], self.env).returncode == 0
        add = ["cron", "add", "-L", tmux_server.name, "--pane", pane, "--any-program", "--wake-on"]
        add += ["agent-state-change", "--wake-scope", scope, "--wake-debounce", "0", *flags, payload]
        added = run_rk(add, self.env)
        assert added.returncode == 0, added.stderr
        self.ticker = subprocess.Popen(
            [sys.executable, "-m", "rk", "cron", "ticker"], env=self.env, stderr=subprocess.PIPE
        )
        status = self.state / "ticker.status"
        wait_for(lambda: status.exists() and tmux_server.name in status.read_text(), timeout=30, message="a tick")
        self.judged(self.line("%99", "active"))  # a first line, judged: the wake is warm

    def line(self, pane: str, to: str, ts: int = 0) -> int:
        """One line in b's journal; how many lines it has then."""
        state_journal.record({"RK_STATE_DIR": str(self.b.state)}, "default", ts or int(time.time()), pane, to)
        return len(state_journal.read_all(str(self.b.state), "default")[0])

    def judged(self, count: int) -> None:
        """Wait until b's first `count` lines are mirrored here and the entry has judged them."""
        wait_for(lambda: len(self.mirror()) >= count, timeout=60, message=f"{count} lines mirrored")
        wanted = "mirror:{}.{}.{}".format(*self.mirror()[count - 1]["at"])
        wait_for(lambda: self.cursor.exists() and wanted in self.cursor.read_text(), timeout=30, message="judged")

    def mirror(self) -> list[dict[str, object]]:
        return read_mirror(str(self.state), "b", "default")

    def woken(self) -> list[str]:
        """The wakes typed into the pane (each line `cat` wrote)."""
        return [x for x in self.got.read_text().splitlines() if x.startswith("W ")] if self.got.exists() else []

    def stop(self) -> str:
        self.ticker.terminate()
        return self.ticker.communicate(timeout=30)[1].decode(errors="replace")[-3000:]


@pytest.fixture
def far(world):
    b = world.host("b")
    far_tmux(b, "new-session", "-d", "-s", "main", "sleep 600")  # a shell's pane: the server stays up
    try:
        yield b
    finally:
        subprocess.run(["tmux", "-L", "default", "kill-server"], env=b.env, capture_output=True)


def gone_lines(host, pane: str) -> int:
    lines = state_journal.read_all(str(host.state), "default")[0]
    return sum(1 for x in lines if x["pane"] == pane and x["to"] == "gone")


def test_a_pane_that_vanishes_there_wakes_here_once_also_when_it_vanished_while_no_link_was_up(
    far, world, tmux_server, env, tmp_path
):
    first = far_agent(far, "w1")
    watch = Watch(world, tmux_server, env, tmp_path, "@b", "W {wake_pane} {wake_state} {wake_window}.")
    try:
        wait_for(lambda: rostered(far, first), timeout=30, message="the far end's first look")
        far_tmux(far, "kill-pane", "-t", first)
        wait_for(lambda: watch.woken() == [f"W {first}@b gone ."], timeout=30, message="the vanish woken")
        second = far_agent(far, "w2")
        wait_for(lambda: rostered(far, second), timeout=30, message="the second pane seen")
        far.stop()  # no link, no far end: nobody there looks
        far_tmux(far, "kill-pane", "-t", second)
        time.sleep(1)
        assert gone_lines(far, second) == 0  # nothing journaled it yet
        far.start()
        wait_for(lambda: len(watch.woken()) == 2, timeout=90, message="the vanish seen at the reconnect")
        assert watch.woken()[1] == f"W {second}@b gone ."
        far.drop_connections()  # a reconnect again: the next far end looks, and finds no vanish new
        third = far_agent(far, "w3")
        wait_for(lambda: rostered(far, third), timeout=60, message="a look after the reconnect")
        time.sleep(2)
        assert len(watch.woken()) == 2 and gone_lines(far, first) == 1 and gone_lines(far, second) == 1
    finally:
        print(watch.stop())


def test_wake_from_human_there_lets_pass_the_answer_to_rks_own_fire_also_across_a_killed_link(
    far, world, tmux_server, env, tmp_path
):
    from rk.core.log.delivery import LogLine
    from rk.store.delivery_log import append_lines

    # at rest since before the wake entry's first look: a line of that look's very second would be news
    # to it (`rk.core.fleet.watch._after`: within a second, a doubt wakes), and woke it in one CI run
    state_journal.record({"RK_STATE_DIR": str(far.state)}, "default", int(time.time()) - 2, "%1", "idle")
    watch = Watch(world, tmux_server, env, tmp_path, "%1@b", "W {wake_pane} {wake_state} {wake_by}")
    log = far.state / "default.log"

    clock = [0]

    def tick() -> int:
        """b's clock, a second on at least: a turn's lines and deliveries are told apart by second."""
        clock[0] = max(clock[0] + 1, int(time.time()))
        return clock[0]

    def turn(rk: bool) -> int:
        start = tick()
        if rk:  # b's ticker typed a fire into %1 (its delivery log says so), and the worker answered
            append_lines(log, [LogLine(start, "e1", "%1", "schedule", "delivered")])
        watch.line("%1", "active", start)
        return watch.line("%1", "idle", tick())

    try:
        watch.judged(turn(rk=True))
        assert watch.woken() == []  # judged, and let pass
        turn(rk=False)
        wait_for(lambda: watch.woken() == ["W %1@b idle human"], timeout=30, message="a human's turn woken")
        for k in range(3):
            far.drop_links()
            watch.judged(turn(rk=True))
            count = turn(rk=False)
            wait_for(lambda k=k: len(watch.woken()) == k + 2, timeout=60, message=f"wake {k + 2}")
            watch.judged(count)
        time.sleep(2)
        assert watch.woken() == ["W %1@b idle human"] * 4
        assert [x.get("by") for x in watch.mirror() if x["to"] == "idle"][:3] == ["human", "rk", "human"]
    finally:
        print(watch.stop())


def test_a_role_there_is_a_scope_even_when_given_after_the_entry_was_made(far, world, tmux_server, env, tmp_path):
    worker, reviewer = far_agent(far, "w1"), far_agent(far, "w2")
    far_tmux(far, "set-option", "-w", "-t", reviewer, "@rk_win_role", "reviewer")
    watch = Watch(world, tmux_server, env, tmp_path, "role:worker@b", "W {wake_pane} {wake_state} {wake_window}")
    try:
        watch.judged(watch.line(worker, "idle"))  # no window carries the role yet: nothing
        far_tmux(far, "set-option", "-w", "-t", worker, "@rk_win_role", "worker")
        wait_for(lambda: rostered(far, worker, "worker"), timeout=30, message="the role seen there")
        watch.judged(watch.line(reviewer, "idle"))
        assert watch.woken() == []
        watch.line(worker, "active")
        watch.line(worker, "idle")
        wait_for(lambda: watch.woken() == [f"W {worker}@b idle w1"], timeout=30, message="the role's pane woken")
        far.drop_links()
        watch.line(reviewer, "active")
        watch.line(reviewer, "idle")
        watch.line(worker, "active")
        watch.judged(watch.line(worker, "idle"))
        time.sleep(2)
        assert watch.woken() == [f"W {worker}@b idle w1"] * 2
    finally:
        print(watch.stop())
