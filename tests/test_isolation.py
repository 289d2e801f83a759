"""The suite leaves the user alone: run from inside the user's tmux, with the
user's state and config directories in the environment, a slice of it writes no
`@rk_*` option to the user's server and no file to the user's directories.

The "user" is a tmux server of this test's own, whose socket is the default
server of the user's TMUX_TMPDIR, and TMUX/TMUX_PANE point at its pane exactly as
tmux sets them for a shell in that pane.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import snapshot

REPO = Path(__file__).resolve().parent.parent

#: Tests that talk to tmux, run the CLI, fire agent hooks and write/read the state
#: journal: the paths that fall back to "the caller's server" or "the default state dir".
SLICE = (
    "tests/test_agent_hook.py",
    "tests/test_await_events.py",
    "tests/test_agent_setup.py",
    "tests/test_statusline.py",
    "tests/test_setup_tmux.py",
    "tests/test_opencode_plugin_turns.py",
    # `rk agent state limited --pane %1`, in-process, thousands of times
    "tests/test_hardening.py::test_no_number_from_a_flag_or_rk_now_crashes_hangs_or_writes_on_refusal",
    *(
        f"tests/test_cli.py::{name}"
        for name in (
            "test_tick_json_decisions_on_a_live_server",
            "test_server_defaults_to_the_socket_of_tmux_else_default",
            "test_tick_without_server_flag_sweeps_every_server_and_with_it_only_one",
            "test_tick_with_server_flag_sweeps_only_that_live_server",
            "test_inside_tmux_the_window_role_is_the_default_target",
            "test_inside_tmux_without_a_role_the_pane_not_its_agent_session_is_the_default_target",
            "test_state_dir_is_0700_and_every_file_0600_whatever_the_umask",
            "test_list_show_log_never_run_tmux",
        )
    ),
)


def _user_server(tmux: list[str], env: dict[str, str]) -> str:
    """The user's server as rk could change it: its panes, and every option and hook
    at every scope (each pane's and each window's own)."""

    def run(*command: str) -> str:
        return subprocess.run([*tmux, *command], env=env, capture_output=True, text=True, check=True).stdout

    panes = run("list-panes", "-a", "-F", "#{pane_id} #{window_id} #{session_name} #{pane_title}")
    commands = [["show-options", "-g"], ["show-options", "-s"], ["show-hooks", "-g"], ["list-keys"]]
    for line in panes.splitlines():
        pane, window, session = line.split()[:3]
        commands += [["show-options", "-p", "-t", pane], ["show-options", "-w", "-t", window]]
        commands += [["show-options", "-t", session], ["show-hooks", "-t", session]]
    return panes + "".join(f"$ {' '.join(c)}\n{run(*c)}" for c in commands)


@pytest.mark.tmux
@pytest.mark.slow
@pytest.mark.shell
@pytest.mark.long(50)
def test_a_run_inside_the_users_tmux_leaves_the_users_pane_and_state_alone(tmp_path):
    user = tmp_path / "user"
    home, state, tmpdir = user / "home", user / "state", user / "tmux"
    dirs = {
        "HOME": home,
        "RK_STATE_DIR": state,
        "XDG_STATE_HOME": home / ".local" / "state",
        "XDG_CONFIG_HOME": home / ".config",
        "XDG_RUNTIME_DIR": user / "run",
        "TMUX_TMPDIR": tmpdir,
    }
    for path in dirs.values():
        path.mkdir(mode=0o700, parents=True)
    sockdir = tmpdir / f"tmux-{os.getuid()}"
    sockdir.mkdir(mode=0o700)
    socket = sockdir / "default"  # the user's server is the default one: `tmux` alone reaches it
    tmux = ["tmux", "-S", str(socket)]
    plain = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE") and not k.startswith("PYTEST_")}
    plain["TMUX_TMPDIR"] = str(tmpdir)
    subprocess.run([*tmux, "-f", "/dev/null", "new-session", "-d", "-s", "user", "cat"], env=plain, check=True)
    try:
        subprocess.run([*tmux, "split-window", "-d", "-t", "user", "cat"], env=plain, check=True)  # %0 and %1
        pane, pid = subprocess.run(
            [*tmux, "display-message", "-p", "-t", "user.1", "#{pane_id} #{pid}"],
            env=plain,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        server_before = _user_server(tmux, plain)
        assert "@rk" not in server_before
        before = {name: snapshot(path) for name, path in dirs.items()}

        inside = {**plain, **{name: str(path) for name, path in dirs.items()}}
        inside.update(TMUX=f"{socket},{pid},0", TMUX_PANE=pane, RK_DEBUG="1")
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-p", "no:xdist", *SLICE],
            env=inside,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
        assert " passed" in run.stdout and "no tests ran" not in run.stdout

        server_after = _user_server(tmux, plain)
        assert "@rk" not in server_after, "the suite wrote rk options into the user's tmux server"
        assert server_after == server_before, "the suite changed the user's tmux server"
        after = {name: snapshot(path) for name, path in dirs.items()}
        for name in dirs:
            assert after[name] == before[name], f"the suite wrote into the user's {name} ({dirs[name]})"
    finally:
        subprocess.run([*tmux, "kill-server"], env=plain, capture_output=True)


def test_agent_state_in_process_writes_where_its_environment_says(tmp_path, tmux_server, monkeypatch):
    """`rk agent state` run in-process with an environment (as the MCP server and the
    tests run commands) journals into that environment's state directory, never into
    the one of the process it runs in."""
    from cli_helpers import make_env, run_in

    elsewhere = tmp_path / "process-state"
    monkeypatch.setenv("RK_STATE_DIR", str(elsewhere))
    env = make_env(tmp_path / "given", TMUX_TMPDIR=os.environ["TMUX_TMPDIR"])
    pane = tmux_server.run("display-message", "-p", "-t", "main", "#{pane_id}").strip()
    res = run_in(["-L", tmux_server.name, "agent", "state", "idle", "--pane", pane], env)
    assert res.code == 0, res.err
    journals = sorted(p.name for p in Path(env["RK_STATE_DIR"]).glob("*.events"))
    assert journals == [f"{tmux_server.name}.events"]
    assert not elsewhere.exists()
