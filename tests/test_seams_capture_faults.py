"""Pane captures that fail, at each place the tick and a delivery capture.

A `tmux` first on PATH counts every `capture-pane` and refuses (or hangs past
rk's tmux deadline) the Nth one; every other command runs the real tmux. A
clean delivery is counted first, then each of its captures is failed in turn:
whatever fails, the outcome is `delivered` or `failed: …`, the log says the same,
the prompt is submitted at most once (exactly once when `delivered`), and a
failed send leaves no text of ours in the composer to jam the next fire. The
tick's own looks (a stale state read from the screen, an idle line learnt)
survive a failed capture: the tick exits 0, the pane is left as it was, and the
next tick whose capture works looks again."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import run_rk, wait_for

from rk.store.delivery_log import read_live
from rk.tmux.observe import LOOK_AGAIN_TRIES

pytestmark = pytest.mark.shell

T0 = 1_800_000_000


class Shim:
    """A `tmux` on PATH that fails capture number `fail_at` (0: none; -1: every one)."""

    def __init__(self, tmp_path: Path) -> None:
        real = subprocess.run(["which", "tmux"], capture_output=True, text=True, check=True).stdout.strip()
        self.dir = tmp_path / "shim"
        self.dir.mkdir()
        self.count = tmp_path / "captures"
        script = self.dir / "tmux"
        script.write_text(
            "#!/bin/sh\n"
            'case " $* " in *" capture-pane "*)\n'
            f'  n=$(( $(cat "{self.count}" 2>/dev/null || echo 0) + 1 )); echo "$n" > "{self.count}"\n'
            '  if [ "$n" = "$RK_TEST_FAIL_AT" ] || [ "$RK_TEST_FAIL_AT" = -1 ]; then\n'
            '    if [ "$RK_TEST_FAIL_HOW" = hang ]; then exec sleep 30; fi\n'
            '    echo "capture refused by the test" >&2; exit 1\n'
            "  fi;;\n"
            "esac\n"
            f'exec "{real}" "$@"\n'
        )
        script.chmod(0o755)

    def env(self, env: dict[str, str], fail_at: int, how: str = "error") -> dict[str, str]:
        self.count.unlink(missing_ok=True)
        return dict(
            env, PATH=f"{self.dir}{os.pathsep}{env['PATH']}", RK_TEST_FAIL_AT=str(fail_at), RK_TEST_FAIL_HOW=how
        )

    def captures(self) -> int:
        return int(self.count.read_text()) if self.count.exists() else 0


def new_pane(server) -> str:
    return server.run("new-window", "-d", "-t", "main:", "-P", "-F", "#{pane_id}", "cat").strip()


def submitted(server, pane: str, payload: str) -> int:
    """Submissions into `cat`: each shows twice (the tty's echo, then cat's copy)."""
    return sum(1 for line in server.capture(pane).splitlines() if line.rstrip() == payload) // 2


def cursor_line(server, pane: str) -> str:
    y = int(server.display(pane, "#{cursor_y}").strip())
    rows = server.capture(pane).split("\n")
    return rows[y] if y < len(rows) else ""


def deliver_once(env, server, shim: Shim, fail_at: int, now: int, how: str = "error") -> tuple[str, str, str]:
    """Add an entry for a fresh `cat` pane, tick it due with capture `fail_at` failing;
    (pane, payload, outcome). The entry is removed after, so each run delivers one."""
    pane = new_pane(server)
    payload = f"capture fault {fail_at} {how}"
    add = ["cron", "add", payload, "--every", "1m", "--pane", pane, "--any-program", "--json", "-L", server.name]
    entry = json.loads(run_rk(add, dict(env, RK_NOW=str(now)), check=True).stdout)["result"]["id"]
    res = run_rk(["cron", "tick", "-L", server.name, "--json"], dict(shim.env(env, fail_at, how), RK_NOW=str(now + 60)))
    assert res.returncode == 0, res.stderr
    (decision,) = json.loads(res.stdout)["result"]["decisions"]
    logged = [
        line.outcome for line in read_live(Path(env["RK_STATE_DIR"]) / f"{server.name}.log") if line.entry == entry
    ]
    assert logged == [decision["outcome"]], (logged, decision)
    run_rk(["cron", "rm", entry, "-L", server.name], dict(env, RK_NOW=str(now + 61)), check=True)
    return pane, payload, decision["outcome"]


def check_at_most_once(server, pane: str, payload: str, outcome: str) -> None:
    assert outcome == "delivered" or outcome.startswith("failed: "), outcome
    if outcome == "delivered":
        wait_for(lambda: submitted(server, pane, payload) == 1, message=f"one submission ({outcome})")
    else:
        assert submitted(server, pane, payload) <= 1, outcome
        assert payload not in cursor_line(server, pane), (outcome, server.capture(pane))


def test_a_delivery_survives_a_failure_of_each_of_its_captures(env, tmux_server, tmp_path):
    shim = Shim(tmp_path)
    pane, payload, outcome = deliver_once(env, tmux_server, shim, 0, T0)
    assert outcome == "delivered"
    wait_for(lambda: submitted(tmux_server, pane, payload) == 1, message="the clean run")
    clean = shim.captures()
    assert clean >= 2, clean  # at least the baseline and one echo probe
    outcomes = {}
    for k in range(1, clean + 1):
        pane, payload, outcome = deliver_once(env, tmux_server, shim, k, T0 + 1000 * k)
        check_at_most_once(tmux_server, pane, payload, outcome)
        outcomes[k] = outcome, submitted(tmux_server, pane, payload)
    # the baseline capture comes first: without it nothing is typed
    first, typed = outcomes[1]
    assert first.startswith("failed: ") and "capture refused by the test" in first and typed == 0, outcomes


def test_every_capture_failing_types_nothing_and_says_so(env, tmux_server, tmp_path):
    shim = Shim(tmp_path)
    pane, payload, outcome = deliver_once(env, tmux_server, shim, -1, T0)
    assert outcome.startswith("failed: ") and "capture refused by the test" in outcome, outcome
    assert submitted(tmux_server, pane, payload) == 0
    assert payload not in tmux_server.capture(pane)


def test_a_baseline_capture_that_hangs_times_out_into_failed(env, tmux_server, tmp_path):
    shim = Shim(tmp_path)
    pane, payload, outcome = deliver_once(env, tmux_server, shim, 1, T0, how="hang")
    assert outcome.startswith("failed: ") and "timed out" in outcome, outcome
    assert submitted(tmux_server, pane, payload) == 0


# -- the tick's own looks -------------------------------------------------------------


def option(server, pane: str, name: str) -> str:
    return server.display(pane, "#{" + name + "}").strip()


def agent_pane(server, name: str) -> tuple[str, str]:
    """A pane whose process calls itself `name` (cat underneath): (pane id, pid)."""
    pane = server.run("new-window", "-d", "-t", "main:", "-P", "-F", "#{pane_id}", f"bash -c 'exec -a {name} cat'")
    pane = pane.strip()
    wait_for(lambda: server.display(pane, "#{pane_current_command}").strip() == name, message=name)
    return pane, server.display(pane, "#{pane_pid}").strip()


def tick(env, server, now: int) -> subprocess.CompletedProcess:
    return run_rk(["cron", "tick", "-L", server.name, "--json"], dict(env, RK_NOW=str(now)))


def test_a_failed_look_at_a_stale_state_leaves_the_pane_to_be_looked_at_again(env, tmux_server, tmp_path):
    """A stale `active` is read from the screen; when that capture fails, the pane is
    neither corrected nor marked as a screen no layout reads (which would stop every
    later look): the next tick whose capture works looks, and marks it."""
    shim = Shim(tmp_path)
    pane, pid = agent_pane(tmux_server, "claude")
    state = f"active:{T0 - 3600}:{pid}"
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", state)
    run_rk(
        ["cron", "add", "x", "--wake-on", "agent-state-change", "--pane", pane, "-L", tmux_server.name],
        dict(env, RK_NOW=str(T0 - 600)),
        check=True,
    )
    for how in ("error", "hang"):
        res = tick(shim.env(env, -1, how), tmux_server, T0)
        assert res.returncode == 0, res.stderr
        assert shim.captures() == 1, how  # it did try to look, once
        assert option(tmux_server, pane, "@rk_pane_agent_state") == state
        assert option(tmux_server, pane, "@rk_pane_unread") == ""
        assert json.loads(res.stdout)["result"]["decisions"] == []
    res = tick(shim.env(env, 0), tmux_server, T0 + 30)
    assert res.returncode == 0, res.stderr
    assert shim.captures() == 1 + LOOK_AGAIN_TRIES  # a frame mid-redraw is no verdict: looked at again
    assert option(tmux_server, pane, "@rk_pane_unread") == f"active:{T0 - 3600}:{pid}:claude@{T0 + 30}"


def test_a_failed_capture_of_an_idle_line_learns_nothing_and_is_learnt_next_tick(env, tmux_server, tmp_path):
    """An idle agent no layout is made for has its cursor line learnt once per idle; a
    failed capture learns nothing (no empty or wrong line is kept) and the next tick learns it."""
    shim = Shim(tmp_path)
    pane, pid = agent_pane(tmux_server, "myagent")
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"idle:{T0 - 5}:{pid}")
    run_rk(
        ["cron", "add", "x", "--every", "1h", "--pane", pane, "--any-program", "-L", tmux_server.name],
        dict(env, RK_NOW=str(T0 - 600)),
        check=True,
    )
    res = tick(shim.env(env, -1), tmux_server, T0)
    assert res.returncode == 0, res.stderr
    assert shim.captures() >= 1
    assert option(tmux_server, pane, "@rk_pane_idle_line") == ""
    res = tick(shim.env(env, 0), tmux_server, T0 + 30)
    assert res.returncode == 0, res.stderr
    assert json.loads(option(tmux_server, pane, "@rk_pane_idle_line"))[0] == T0 - 5
