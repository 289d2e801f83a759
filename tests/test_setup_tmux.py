"""`rk agent setup tmux`: rk's segment at the end of tmux's status-right, in the tmux
config file (the block, `rk.core.channels.tmuxconf`) and on the running server rk works
against: the user's content kept, idempotent (a second run and a re-sourced file
add nothing), the diff and the question, the symlinked dotfile, which file, the
rk path, the removal, and the CLI end to end with `rk doctor` after it."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_rk

from rk.agent import setup
from rk.core.channels import tmuxconf
from rk.tmux.server import child_env

RK = str(Path(sys.executable).parent / "rk")  # the console script `make venv` installs
USER = "set -g status-right 'mine, #{pane_title} %H:%M'\nset -g status-interval 5\n"


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def run(tmp_path, server=None, stdin=None, env=None, socket=None, **flags):
    """`run_setup(["tmux"], …)` in a private HOME, against the server (or socket) given."""
    tmux = os.path.dirname(shutil.which("tmux") or "/usr/bin/tmux")
    env = {"HOME": str(tmp_path / "home"), "PATH": f"{tmp_path / 'bin'}:{tmux}", **(env or {})}
    if server is not None:
        socket = str(server.path)
    out, err = io.StringIO(), io.StringIO()
    code = setup.run_setup(
        ["tmux"],
        setup.SetupOptions(tmux_socket=socket, **flags),
        env=env,
        stdin=stdin if stdin is not None else io.StringIO(),
        stdout=out,
        stderr=err,
        argv0="",
        executable=sys.executable,
    )
    return code, out.getvalue(), err.getvalue()


def conf(tmp_path) -> Path:
    return tmp_path / "home" / ".tmux.conf"


def home(tmp_path, text: str | None = USER) -> Path:
    (tmp_path / "home").mkdir(exist_ok=True)
    (tmp_path / "bin").mkdir(exist_ok=True)
    if text is not None:
        conf(tmp_path).write_text(text)
    return conf(tmp_path)


def shown(server, option: str = "status-right") -> str:
    return server.run("show-options", "-gv", option).rstrip("\n")


# -- the block (pure) ------------------------------------------------------------------


def test_the_block_goes_at_the_end_and_keeps_the_users_lines():
    text = tmuxconf.install(USER, "/opt/rk/bin/rk")
    assert text.startswith(USER + "\n" + tmuxconf.HEADER + "\n")
    assert text.count("#(/opt/rk/bin/rk status --format tmux)") == 1
    assert tmuxconf.install(text, "/opt/rk/bin/rk") == text  # a second install changes nothing


def test_a_new_rk_path_replaces_the_block_and_later_user_lines_stay():
    old = tmuxconf.install(USER, "/old/rk") + "set -g mouse on\n"
    new = tmuxconf.install(old, "rk")
    assert "/old/rk" not in new and new.count(tmuxconf.HEADER) == 1
    assert "set -g mouse on\n" in new and new.endswith(tmuxconf.block("rk"))
    assert tmuxconf.strip_block(new) == (USER + "set -g mouse on\n", True)


def test_strip_block_leaves_a_file_without_one_untouched():
    assert tmuxconf.strip_block(USER) == (USER, False)
    assert tmuxconf.install("", "rk") == tmuxconf.block("rk")


def test_a_segment_the_user_wrote_is_seen_and_a_comment_is_not():
    assert tmuxconf.user_segment("set -ga status-right ' #(rk status --format tmux)'\n")
    assert not tmuxconf.user_segment("# set -ga status-right ' #(rk status --format tmux)'\n")
    assert not tmuxconf.user_segment(tmuxconf.install(USER, "rk"))  # rk's own block is not the user's


def test_without_segment_takes_out_only_rks():
    value = "mine #(date) #(/x/rk status --format tmux) %H:%M"
    assert tmuxconf.without_segment(value) == "mine #(date) %H:%M"
    assert tmuxconf.shows_segment(value) and not tmuxconf.shows_segment("mine #(date)")


@pytest.mark.parametrize("bad", ["/a b/rk", "/a#b/rk", "/a%b/rk", "/a'b/rk", '/a"b/rk', "/a$b/rk", ""])
def test_an_rk_path_tmux_cannot_carry_is_refused(bad):
    assert not tmuxconf.usable_path(bad)
    assert tmuxconf.usable_path("/home/u/.local/share/rk/venv-3.11/bin/rk")


# -- a real file, a private tmux server --------------------------------------------------


@pytest.mark.shell
def test_setup_appends_the_segment_in_the_file_and_on_the_server_once(tmp_path, tmux_server):
    path = home(tmp_path)
    tmux_server.run("set-option", "-g", "status-right", "mine, #{pane_title} %H:%M")
    code, out, err = run(tmp_path, tmux_server, yes=True)
    assert code == 0, err
    written = path.read_text()
    assert written.startswith(USER) and written.count(f"#({RK} status --format tmux)") == 1
    assert shown(tmux_server) == f"mine, #{{pane_title}} %H:%M #({RK} status --format tmux)"
    assert shown(tmux_server, "status-right-length") == "80"
    assert "shows it now" in out
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    code, out, _ = run(tmp_path, tmux_server, yes=True)
    assert code == 0 and "nothing to change" in out
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert shown(tmux_server).count("status --format tmux") == 1


@pytest.mark.shell
def test_the_written_file_is_tmux_config_that_adds_the_segment_once_however_often_sourced(tmp_path, tmux_server):
    path = home(tmp_path)
    assert run(tmp_path, yes=True)[0] == 0  # no server: the file only
    name = tmux_server.name + "-conf"
    argv = ["tmux", "-L", name]
    subprocess.run([*argv, "-f", str(path), "new-session", "-d", "cat"], check=True, env=child_env())
    try:
        for _ in range(3):
            subprocess.run([*argv, "source-file", str(path)], check=True, env=child_env())
        value = subprocess.run(
            [*argv, "show-options", "-gv", "status-right"], check=True, capture_output=True, text=True, env=child_env()
        ).stdout.strip()
    finally:
        subprocess.run([*argv, "kill-server"], env=child_env(), capture_output=True)
    assert value == f"mine, #{{pane_title}} %H:%M #({RK} status --format tmux)"


@pytest.mark.shell
def test_a_file_that_shows_rk_already_is_left_alone_but_the_server_gets_it(tmp_path, tmux_server):
    mine = USER + "set -ga status-right ' #(rk status --format tmux)'\n"
    path = home(tmp_path, mine)
    code, out, err = run(tmp_path, tmux_server, yes=True)
    assert code == 0, err
    assert path.read_text() == mine and "a line not written by rk" in out
    assert tmuxconf.shows_segment(shown(tmux_server))


@pytest.mark.shell
def test_dry_run_shows_the_diff_and_the_server_commands_and_writes_nothing(tmp_path, tmux_server):
    path = home(tmp_path)
    code, out, _ = run(tmp_path, tmux_server, dry_run=True, yes=True)
    assert code == 0 and "dry run: nothing written" in out
    assert f"+++ {path}" in out and f"+{tmuxconf.HEADER}" in out
    assert f"on the running tmux server {tmux_server.path}" in out
    assert path.read_text() == USER and not tmuxconf.shows_segment(shown(tmux_server))


@pytest.mark.shell
def test_it_asks_on_a_terminal_and_refuses_without_one(tmp_path, tmux_server):
    path = home(tmp_path)
    code, _, err = run(tmp_path, tmux_server)
    assert code == 2 and "--yes" in err
    code, out, _ = run(tmp_path, tmux_server, stdin=Tty("n\n"))
    assert code == 1 and "Write 1 file(s) and set the running tmux server? [y/N]" in out
    assert f"+{tmuxconf.HEADER}" in out
    assert path.read_text() == USER and not tmuxconf.shows_segment(shown(tmux_server))
    code, _, _ = run(tmp_path, tmux_server, stdin=Tty("y\n"))
    assert code == 0 and tmuxconf.HEADER in path.read_text() and tmuxconf.shows_segment(shown(tmux_server))


@pytest.mark.shell
def test_a_symlinked_dotfile_keeps_its_link_and_its_target_is_written(tmp_path):
    home(tmp_path, None)
    target = tmp_path / "dotfiles" / "tmux.conf"
    target.parent.mkdir()
    target.write_text(USER)
    conf(tmp_path).symlink_to(target)
    assert run(tmp_path, yes=True)[0] == 0
    assert conf(tmp_path).is_symlink() and tmuxconf.HEADER in target.read_text()
    assert target.stat().st_mode & 0o777 == 0o600


@pytest.mark.shell
def test_a_config_that_is_not_text_is_refused_and_nothing_is_written(tmp_path):
    path = home(tmp_path, None)
    path.write_bytes(b"set -g status-right '\xff\xfe'\n")
    code, _, err = run(tmp_path, yes=True)
    assert code == 1 and "not UTF-8" in err and err[-1] == "\n" and err.count("\n") == 1
    assert path.read_bytes() == b"set -g status-right '\xff\xfe'\n"


@pytest.mark.shell
def test_no_config_file_creates_tmux_conf(tmp_path):
    home(tmp_path, None)
    code, out, _ = run(tmp_path, yes=True)
    assert code == 0 and conf(tmp_path).read_text() == tmuxconf.block(RK)
    assert "tmux source-file" in out  # no running server: how to load it


@pytest.mark.shell
def test_which_file_the_last_one_tmux_reads_or_the_one_with_the_block(tmp_path):
    home(tmp_path, None)
    xdg = tmp_path / "home" / ".config"
    env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(xdg)}
    (xdg / "tmux").mkdir(parents=True)
    (xdg / "tmux" / "tmux.conf").write_text(USER)
    assert setup.tmux_config_path(env, []) == xdg / "tmux" / "tmux.conf"
    conf(tmp_path).write_text(USER)  # both: tmux reads ~/.tmux.conf first, so the block goes last
    assert setup.tmux_config_path(env, []) == xdg / "tmux" / "tmux.conf"
    conf(tmp_path).write_text(tmuxconf.install(USER, "rk"))  # the block is somewhere: there it stays
    assert setup.tmux_config_path(env, []) == conf(tmp_path)
    custom = tmp_path / "custom.conf"
    custom.write_text(USER)
    conf(tmp_path).write_text(USER)
    assert setup.tmux_config_path(env, ["/dev/null"]) == xdg / "tmux" / "tmux.conf"  # not a file of the user's
    assert setup.tmux_config_path(env, [str(custom)]) == custom  # what the running server loaded (-f)


@pytest.mark.shell
def test_the_running_servers_own_config_file_is_the_one_edited(tmp_path, tmux_server):
    home(tmp_path)
    custom = tmp_path / "custom.conf"
    custom.write_text(USER)
    name = tmux_server.name + "-f"
    argv = ["tmux", "-L", name]
    subprocess.run([*argv, "-f", str(custom), "new-session", "-d", "cat"], check=True, env=child_env())
    try:
        socket = Path(os.environ["TMUX_TMPDIR"]) / f"tmux-{os.getuid()}" / name
        code, _, err = run(tmp_path, socket=str(socket), yes=True)
    finally:
        subprocess.run([*argv, "kill-server"], env=child_env(), capture_output=True)
    assert code == 0, err
    assert tmuxconf.HEADER in custom.read_text() and conf(tmp_path).read_text() == USER


@pytest.mark.shell
def test_the_segment_names_rk_when_tmuxs_path_finds_this_rk(tmp_path):
    assert setup.tmux_rk(RK, str(Path(RK).parent)) == "rk"
    assert setup.tmux_rk(RK, str(tmp_path)) == RK
    assert setup.tmux_rk(RK, "") == RK


@pytest.mark.shell
def test_uninstall_removes_the_block_and_the_servers_segment_only(tmp_path, tmux_server):
    path = home(tmp_path)
    tmux_server.run("set-option", "-g", "status-right", "mine %H:%M")
    assert run(tmp_path, tmux_server, yes=True)[0] == 0
    code, out, err = run(tmp_path, tmux_server, yes=True, uninstall=True)
    assert code == 0, err
    assert path.read_text() == USER and shown(tmux_server) == "mine %H:%M"
    code, out, _ = run(tmp_path, tmux_server, yes=True, uninstall=True)
    assert code == 0 and "nothing to change" in out


@pytest.mark.shell
def test_uninstall_leaves_a_segment_the_user_wrote(tmp_path, tmux_server):
    mine = USER + "set -ga status-right ' #(rk status --format tmux)'\n"
    path = home(tmp_path, mine)
    tmux_server.run("set-option", "-ga", "status-right", " #(rk status --format tmux)")
    code, out, _ = run(tmp_path, tmux_server, yes=True, uninstall=True)
    assert code == 0 and "not written by rk" in out
    assert path.read_text() == mine and tmuxconf.shows_segment(shown(tmux_server))


@pytest.mark.shell
def test_tmux_with_mcp_is_a_usage_error(tmp_path):
    path = home(tmp_path)
    code, _, err = run(tmp_path, yes=True, mcp=True)
    assert code == 2 and "tmux" in err and path.read_text() == USER


@pytest.mark.shell
def test_tmux_is_never_set_up_unless_named(tmp_path):
    path = home(tmp_path)
    out = io.StringIO()
    env = {"HOME": str(tmp_path / "home"), "PATH": str(tmp_path / "bin")}
    assert setup.run_setup((), setup.SetupOptions(yes=True), env=env, stdout=out, stderr=io.StringIO()) == 0
    assert path.read_text() == USER


# -- the CLI, then rk doctor ----------------------------------------------------------------


@pytest.mark.shell
def test_cli_sets_the_callers_server_and_doctor_then_says_ok(tmp_path, env, tmux_server):
    path = home(tmp_path)
    caller = {**env, "TMUX": f"{tmux_server.path},1,0", "PATH": os.environ["PATH"]}
    doctor = [sys.executable, "-m", "rk", "doctor", "--json"]

    def status_line() -> dict:
        out = json.loads(subprocess.run(doctor, env=caller, capture_output=True, text=True).stdout)
        return next(c for c in out["result"] if c["name"] == "status line")

    assert status_line()["level"] == "warn"
    proc = run_rk(["agent", "setup", "tmux", "--yes"], caller)
    assert proc.returncode == 0, proc.stderr
    assert tmuxconf.HEADER in path.read_text()
    assert tmuxconf.shows_segment(shown(tmux_server))
    assert status_line()["level"] == "ok"
    assert run_rk(["agent", "setup", "tmux", "--bogus"], caller).returncode == 2


def test_the_docs_show_the_block_rk_writes():
    readme = (Path(__file__).resolve().parent.parent / "docs" / "notifications.md").read_text()
    assert tmuxconf.block("rk") in readme


@pytest.mark.shell
def test_cli_with_dash_L_sets_that_server(tmp_path, env, tmux_server):
    home(tmp_path)
    proc = run_rk(["-L", tmux_server.name, "agent", "setup", "tmux", "--yes"], {**env, "PATH": os.environ["PATH"]})
    assert proc.returncode == 0, proc.stderr
    assert tmuxconf.shows_segment(shown(tmux_server)) and str(tmux_server.path) in proc.stdout


@pytest.mark.shell
def test_an_attached_client_renders_the_segment_setup_added(tmp_path, tmux_server):
    """The real thing: after `rk agent setup tmux`, a pty-attached client's status line
    shows the segment the installed rk prints (the ticker is down here: `rk✗`)."""
    from conftest import wait_for
    from test_statusline import _attach

    home(tmp_path)
    tmux_server.run("set-environment", "-g", "RK_STATE_DIR", str(tmp_path / "state"))
    tmux_server.run("set-option", "-g", "status-interval", "1")
    assert run(tmp_path, tmux_server, yes=True)[0] == 0
    screen = _attach(tmux_server)
    try:
        wait_for(lambda: "rk✗" in screen.text(), timeout=15, message="the segment on the status line")
    finally:
        screen.close()
