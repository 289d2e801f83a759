"""`rk uninstall` and `make uninstall` (contrib/uninstall.sh): every file `rk agent setup`
wrote is as it was before (deleted where setup created it), the user's own entries
untouched; the running tmux server loses the segment; the ticker stops and its unit
goes; a dry run changes nothing, no terminal without --yes is refused, a terminal is
asked (the purge separately); --purge deletes the state and config.yaml and nothing
else, never through a link; a second run has nothing to do. The script runs it, then
removes the program the way install put it there (a fake pipx, the venv layout)."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_helpers import make_env, one_line_error, run_in, run_sub, snapshot
from conftest import wait_for

from rk.agent.setup.removal import prune_emptied
from rk.cli.uninstalling import program_removal

ROOT = Path(__file__).resolve().parent.parent
AGENTS = ["claude", "codex", "gemini", "opencode"]

#: The user's own files before any set-up: rk must leave each as it finds it.
CLAUDE_USER = {
    "theme": "dark",
    "permissions": {"allow": ["Bash(ls)"], "deny": []},
    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]},
}
GEMINI_USER = {"ui": {"theme": "dracula"}, "mcpServers": {"mine": {"command": "mine"}}}
CODEX_TOML = '[mcp_servers.mine]\ncommand = "mine"\n'
TMUX_CONF = "set -g mouse on\nset -g status-right 'mine %H:%M'\n"


def user_files(home: Path) -> dict[Path, bytes]:
    files = {
        home / ".claude" / "settings.json": json.dumps(CLAUDE_USER, indent=4).encode(),
        home / ".gemini" / "settings.json": json.dumps(GEMINI_USER).encode(),
        home / ".codex" / "config.toml": CODEX_TOML.encode(),
        home / ".tmux.conf": TMUX_CONF.encode(),
    }
    for path, data in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return files


def files_under(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def set_up(env: dict[str, str], server: str | None = None) -> None:
    """All that `rk agent setup` writes: hooks, MCP, and (with a server) the status segment."""
    assert run_in(["agent", "setup", *AGENTS, "--yes"], env).code == 0
    assert run_in(["agent", "setup", *AGENTS, "--mcp", "--yes"], env).code == 0
    if server is not None:
        res = run_in(["-L", server, "agent", "setup", "tmux", "--yes"], env)
        assert res.code == 0, res


@pytest.fixture
def fresh(tmp_path) -> dict[str, str]:
    env = make_env(tmp_path)
    env["XDG_CONFIG_HOME"] = str(tmp_path / "home" / ".config")
    env["XDG_DATA_HOME"] = str(tmp_path / "home" / ".local" / "share")
    return env


# -- every file as it was ---------------------------------------------------------------


@pytest.mark.shell
def test_uninstall_leaves_every_file_as_before_setup_and_the_server_as_it_was(tmp_path, tmux_server, fresh):
    home = Path(fresh["HOME"])
    user_files(home)
    before = files_under(home)
    tmux_server.run("set-option", "-g", "status-right", "mine %H:%M")
    set_up(fresh, tmux_server.name)
    after_setup = files_under(home)
    created = set(after_setup) - set(before)
    assert {".claude.json", ".codex/hooks.json", ".config/opencode/plugins/rk.js"} <= created
    assert "status --format tmux" in tmux_server.run("show-options", "-gv", "status-right")

    res = run_in(["-L", tmux_server.name, "uninstall", "--yes"], fresh)
    assert res.code == 0, res
    now = files_under(home)
    assert set(now) == set(before), "each file setup created is removed, and only those"
    for name in (".codex/config.toml", ".tmux.conf"):
        assert now[name] == before[name], name  # byte for byte
    for name in (".claude/settings.json", ".gemini/settings.json"):
        assert json.loads(now[name]) == json.loads(before[name]), name  # the user's entries, all of them
    assert tmux_server.run("show-options", "-gv", "status-right").rstrip("\n") == "mine %H:%M"
    assert res.out.splitlines()[-1].startswith("the program stays (it is running); remove it with: ")

    again = run_in(["-L", tmux_server.name, "uninstall"], fresh)  # no --yes, no terminal: nothing to ask
    assert again.code == 0, again
    assert again.out.splitlines()[0] == "nothing to remove"
    assert files_under(home) == now


def test_the_hooks_mcp_and_rules_sharing_a_file_all_go_in_one_write(fresh):
    home = Path(fresh["HOME"])
    set_up(fresh)
    gemini = json.loads((home / ".gemini" / "settings.json").read_text())
    assert gemini["hooks"] and gemini["mcpServers"]["rk"] and gemini["tools"]["allowed"]
    js = run_in(["uninstall", "--yes", "--json"], fresh).json()["result"]
    assert not (home / ".gemini" / "settings.json").exists()
    assert not (home / ".claude" / "settings.json").exists()  # hooks and allow rules: all it held
    files = {f["path"]: f for f in js["files"]}
    assert files[str(home / ".gemini" / "settings.json")]["action"] == "deleted"
    assert js["purge"] == [] and js["errors"] == []


def test_what_the_user_left_empty_stays_and_what_rk_emptied_goes():
    before = {"mcpServers": {"rk": {}}, "mine": {}, "tools": {"allowed": ["a"], "x": []}}
    after = {"mcpServers": {}, "mine": {}, "tools": {"allowed": [], "x": []}}
    prune_emptied(before, after)
    assert after == {"mine": {}, "tools": {"x": []}}


def test_only_rks_entries_go_from_a_file_the_user_wrote_too(fresh):
    home = Path(fresh["HOME"])
    path = home / ".claude.json"
    path.write_text(json.dumps({"mcpServers": {"mine": {"command": "x"}}, "numStartups": 3}))
    set_up(fresh)
    assert run_in(["uninstall", "--yes"], fresh).code == 0
    assert json.loads(path.read_text()) == {"mcpServers": {"mine": {"command": "x"}}, "numStartups": 3}


def test_a_file_that_cannot_be_read_is_left_and_said_and_the_rest_removed(fresh):
    home = Path(fresh["HOME"])
    set_up(fresh)
    broken = home / ".gemini" / "settings.json"
    broken.write_text("{not json")
    res = run_in(["uninstall", "--yes"], fresh)
    assert res.code == 1, res
    assert broken.read_text() == "{not json"
    assert "not valid JSON" in res.err and "left as it is" in res.err
    assert not (home / ".claude" / "settings.json").exists()


# -- asking first -----------------------------------------------------------------------


def test_dry_run_shows_the_diffs_and_writes_nothing(fresh, tmp_path):
    set_up(fresh)
    (tmp_path / "state").mkdir(mode=0o700)
    (tmp_path / "state" / "default.yaml").write_text("entries: []\n")
    before = snapshot(tmp_path)
    res = run_in(["uninstall", "--dry-run", "--purge"], fresh)
    assert res.code == 0, res
    assert "--- " in res.out and "+++ /dev/null" in res.out
    assert f"  {tmp_path / 'state'}/" in res.out  # the purge lists what it would delete
    assert "dry run: nothing removed" in res.out
    assert snapshot(tmp_path) == before


def test_without_a_terminal_or_yes_it_refuses_and_changes_nothing(fresh, tmp_path):
    set_up(fresh)
    before = snapshot(tmp_path)
    res = run_sub(["uninstall"], fresh)
    assert res.code == 2
    assert "not a terminal: pass --yes" in one_line_error(res)
    js = run_sub(["uninstall", "--json"], fresh)
    assert js.code == 2 and js.json()["ok"] is False
    assert snapshot(tmp_path) == before


def on_a_terminal(args: list[str], env: dict[str, str], answers: list[str]) -> tuple[int, str]:
    """`python -m rk ARGS` on a pty, answering each `[y/N]` in turn; (exit code, output)."""
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rk", *args], env=env, stdin=follower, stdout=follower, stderr=follower
    )
    os.close(follower)
    out = b""
    pending = list(answers)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if not ready:
            if proc.poll() is not None:
                break
            continue
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        out += data
        if pending and out.count(b"[y/N]") > len(answers) - len(pending):
            os.write(leader, pending.pop(0).encode() + b"\n")
    code = proc.wait(timeout=30)
    os.close(leader)
    return code, out.decode("utf-8", "replace")


@pytest.mark.shell
def test_on_a_terminal_no_removes_nothing_and_yes_removes(fresh, tmp_path):
    set_up(fresh)
    home = Path(fresh["HOME"])
    before = snapshot(home)
    code, out = on_a_terminal(["uninstall"], fresh, ["n"])
    assert code == 1 and "aborted: nothing removed" in out, out
    assert "+++ /dev/null" in out  # the diffs came before the question
    assert snapshot(home) == before
    code, out = on_a_terminal(["uninstall"], fresh, ["y"])
    assert code == 0, out
    assert files_under(home) == {}


@pytest.mark.shell
def test_the_purge_is_asked_separately_and_no_keeps_the_state(fresh, tmp_path):
    set_up(fresh)
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "default.yaml").write_text("entries: []\n")
    code, out = on_a_terminal(["uninstall", "--purge"], fresh, ["y", "n"])
    assert code == 0, out
    assert out.count("[y/N]") == 2 and "--purge also deletes, for good:" in out
    assert (state / "default.yaml").exists() and f"kept: {state} (you answered no)" in out
    assert files_under(Path(fresh["HOME"])) == {}


# -- the purge --------------------------------------------------------------------------


def test_purge_deletes_the_state_and_config_yaml_and_nothing_else(fresh, tmp_path):
    set_up(fresh)
    home = Path(fresh["HOME"])
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "default.yaml").write_text("entries: []\n")
    (state / "default.log").write_text("")
    config = home / ".config" / "rk" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("notify: []\n")
    mine = home / ".config" / "rk" / "notes.txt"
    mine.write_text("mine")
    other = home / "work.txt"
    other.write_text("mine")
    res = run_in(["uninstall", "--purge", "--yes"], fresh)
    assert res.code == 0, res
    assert not state.exists() and not config.exists()
    assert mine.read_text() == "mine" and other.read_text() == "mine"
    assert files_under(home) == {".config/rk/notes.txt": b"mine", "work.txt": b"mine"}
    assert f"deleted {state}" in res.out and f"deleted {config}" in res.out
    assert run_in(["uninstall", "--purge"], fresh).out.splitlines()[0] == "nothing to remove"


def test_without_purge_the_state_and_config_stay_and_it_says_where(fresh, tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    config = Path(fresh["XDG_CONFIG_HOME"]) / "rk" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("x: 1\n")
    res = run_in(["uninstall", "--yes"], fresh)
    assert res.code == 0, res
    assert f"kept: {state} (entries, logs and state; rk uninstall --purge deletes it)" in res.out
    assert f"kept: {config} (settings; rk uninstall --purge deletes it)" in res.out
    assert state.is_dir() and config.exists()


def test_purge_never_goes_through_a_symbolic_link(fresh, tmp_path):
    real = tmp_path / "elsewhere"
    real.mkdir(mode=0o700)
    (real / "precious").write_text("keep")
    (tmp_path / "state").symlink_to(real)
    config_real = tmp_path / "dotfiles-config.yaml"
    config_real.write_text("x: 1\n")
    config = Path(fresh["XDG_CONFIG_HOME"]) / "rk" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.symlink_to(config_real)
    res = run_in(["uninstall", "--purge", "--yes"], fresh)
    assert res.code == 0, res
    assert (real / "precious").read_text() == "keep" and (tmp_path / "state").is_symlink()
    assert config_real.read_text() == "x: 1\n" and config.is_symlink()
    assert f"{tmp_path / 'state'} is a symbolic link; left as it is (never followed)" in res.out


# -- the ticker and its unit ------------------------------------------------------------


def fake_systemctl(bindir: Path, log: Path, bus: bool = True) -> None:
    bindir.mkdir(exist_ok=True)
    fail = "echo 'Failed to connect to bus: No medium found' >&2; exit 1" if not bus else "exit 0"
    script = bindir / "systemctl"
    script.write_text(f'#!/bin/sh\necho "$*" >> {log}\n{fail}\n')
    script.chmod(0o755)


@pytest.mark.parametrize("bus", [True, False])
def test_the_unit_is_disabled_and_removed_and_without_a_bus_removed_and_said(fresh, tmp_path, bus):
    log = tmp_path / "systemctl.log"
    fake_systemctl(tmp_path / "bin", log, bus=True)
    env = dict(fresh, PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}", DBUS_SESSION_BUS_ADDRESS="unix:x")
    assert run_in(["cron", "ticker", "install"], env).code == 0
    unit = Path(fresh["XDG_CONFIG_HOME"]) / "systemd" / "user" / "rk-ticker.service"
    assert unit.exists()
    fake_systemctl(tmp_path / "bin", log, bus=bus)
    log.write_text("")
    res = run_in(["uninstall", "--yes"], env)
    assert res.code == 0, res
    assert not unit.exists()
    assert log.read_text().splitlines()[0] == "--user disable --now rk-ticker.service"
    if bus:
        assert f"systemd unit: disabled and removed {unit}" in res.out
    else:
        assert "systemctl could not disable it: Failed to connect to bus" in res.out
    assert run_in(["uninstall"], env).out.splitlines()[0] == "nothing to remove"


def test_a_unit_rk_did_not_write_is_left(fresh, tmp_path):
    unit = Path(fresh["XDG_CONFIG_HOME"]) / "systemd" / "user" / "rk-ticker.service"
    unit.parent.mkdir(parents=True)
    unit.write_text("[Service]\nExecStart=/my/own\n")
    res = run_in(["uninstall", "--yes"], fresh)
    assert res.code == 0 and unit.read_text() == "[Service]\nExecStart=/my/own\n"


@pytest.mark.shell
def test_a_running_ticker_is_stopped(fresh, tmp_path):
    started = run_sub(["cron", "ticker", "start", "--json"], fresh)
    assert started.code == 0, started
    pid = started.json()["result"]["pid"]
    try:
        res = run_sub(["uninstall", "--yes"], fresh)
        assert res.code == 0, res
        assert f"ticker: stopped (pid {pid})" in res.out
        wait_for(lambda: not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2])
    finally:
        run_sub(["cron", "ticker", "stop"], fresh)


def test_a_tmux_line_that_starts_the_ticker_is_said_not_edited(fresh):
    conf = Path(fresh["HOME"]) / ".tmux.conf"
    line = "run-shell -b 'rk cron ticker start >/dev/null 2>&1 || true'\n"
    conf.write_text("set -g mouse on\n" + line)
    res = run_in(["uninstall", "--yes"], fresh)
    assert f"kept: {conf}:2 starts the ticker with tmux" in res.out
    assert conf.read_text() == "set -g mouse on\n" + line


# -- the program ------------------------------------------------------------------------


def test_the_last_line_names_the_command_that_removes_the_program(tmp_path):
    home = tmp_path / "home"
    env = {"HOME": str(home), "XDG_DATA_HOME": str(tmp_path / "data")}
    venv = tmp_path / "data" / "rk" / "venv"
    (venv / "bin").mkdir(parents=True)
    link = home / ".local" / "bin" / "rk"
    link.parent.mkdir(parents=True)
    link.symlink_to(venv / "bin" / "rk")
    assert program_removal(env, str(venv), "x") == ("venv", f"rm -r {tmp_path / 'data' / 'rk'} {link}")
    link.unlink()
    link.symlink_to("/somewhere/else/rk")  # not install's link: not named
    assert program_removal(env, str(venv), "x") == ("venv", f"rm -r {tmp_path / 'data' / 'rk'}")
    pipx = tmp_path / "home" / ".local" / "share" / "pipx" / "venvs" / "rk"
    pipx.mkdir(parents=True)
    assert program_removal(env, str(pipx), "x") == ("pipx", "pipx uninstall rk")
    assert program_removal(env, str(tmp_path), "/a b/python") == ("pip", "'/a b/python' -m pip uninstall rk")


def fake_program(path: Path, log: Path, code: int = 0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\necho "$(basename "$0") $*" >> {log}\nexit {code}\n')
    path.chmod(0o755)


def uninstall_sh(tmp_path: Path, path: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {"HOME": str(tmp_path / "home"), "PATH": path, **extra}
    return subprocess.run(
        ["sh", str(ROOT / "contrib" / "uninstall.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_make_uninstall_with_pipx_runs_rk_uninstall_then_pipx_uninstall(tmp_path):
    log = tmp_path / "calls"
    bindir = tmp_path / "pipx-bin"
    fake_program(bindir / "rk", log)
    pipx = tmp_path / "bin" / "pipx"
    pipx.parent.mkdir()
    pipx.write_text(
        "#!/bin/sh\n"
        f'echo "pipx $*" >> {log}\n'
        'case "$1" in list) echo "rk 0.1.0";; environment) echo ' + str(bindir) + ";; esac\n"
    )
    pipx.chmod(0o755)
    res = uninstall_sh(tmp_path, f"{tmp_path / 'bin'}:/usr/bin:/bin", YES="1", ARGS="--purge")
    assert res.returncode == 0, res.stderr
    calls = [c for c in log.read_text().splitlines() if not c.startswith("pipx list") and "environment" not in c]
    assert calls == ["rk uninstall --purge --yes", "pipx uninstall rk"]
    assert res.stdout.splitlines()[-1] == "rk removed (pipx uninstall rk)"


def test_make_uninstall_with_the_venv_removes_it_and_its_link_only(tmp_path):
    log = tmp_path / "calls"
    data = tmp_path / "home" / ".local" / "share" / "rk"
    fake_program(data / "venv" / "bin" / "rk", log)
    link = tmp_path / "home" / ".local" / "bin" / "rk"
    link.parent.mkdir(parents=True)
    link.symlink_to(data / "venv" / "bin" / "rk")
    mine = tmp_path / "home" / ".local" / "bin" / "mine"
    mine.write_text("x")
    path = "/usr/bin:/bin"

    dry = uninstall_sh(tmp_path, path, ARGS="--dry-run")
    assert dry.returncode == 0 and log.read_text() == "rk uninstall --dry-run\n"
    assert link.is_symlink() and (data / "venv").is_dir()

    refused = uninstall_sh(tmp_path, path)  # rk said yes (the fake), but no terminal for the program's question
    assert refused.returncode == 2 and "YES=1 removes the program" in refused.stderr
    assert link.is_symlink() and (data / "venv").is_dir()

    res = uninstall_sh(tmp_path, path, YES="1")
    assert res.returncode == 0, res.stderr
    assert log.read_text().splitlines()[-1] == "rk uninstall --yes"
    assert not data.exists() and not link.is_symlink() and mine.read_text() == "x"


def test_make_uninstall_keeps_the_program_when_rk_uninstall_fails(tmp_path):
    log = tmp_path / "calls"
    data = tmp_path / "home" / ".local" / "share" / "rk"
    fake_program(data / "venv" / "bin" / "rk", log, code=2)
    res = uninstall_sh(tmp_path, "/usr/bin:/bin", YES="1")
    assert res.returncode == 2 and (data / "venv" / "bin" / "rk").exists()


def test_the_makefile_target_passes_args_and_yes():
    text = (ROOT / "Makefile").read_text()
    assert '\tARGS="$(ARGS)" YES="$(YES)" sh contrib/uninstall.sh\n' in text
