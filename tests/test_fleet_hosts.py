"""The fleet's hosts as data: names, destinations, the remote rk, the config file.

Every value a user gives for a host ends up as one argv element of ssh, or (the
rk path) on the remote command line; these tests pin what is refused, so that no
host name or destination can become an ssh option or a remote command.
"""

from __future__ import annotations

import json
import os
import stat

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rk.cli.remote import read_request
from rk.core.fleet.hosts import (
    DESTINATION,
    RK_PATH,
    Host,
    HostError,
    check_destination,
    check_name,
    check_rk_path,
    parse_hosts,
    parse_version,
    remote_words,
    version_problem,
)
from rk.host import ssh
from rk.store.config import ConfigError
from rk.store.hosts import add_host, load_hosts, remove_host

SHELL_SPECIALS = set(" \t\n;&|$`'\"\\<>()*?![]{}#")


@pytest.mark.parametrize("name", ["buildbox", "gpu1", "a", "dev-vm_2", "x" * 32])
def test_a_short_word_is_a_host_name(name):
    assert check_name(name) == name


@pytest.mark.parametrize(
    "name", ["", "all", "local", "Build", "-x", "a b", "a@b", "a:b", "a/b", "a.b", "x" * 33, "é", "a\nb"]
)
def test_other_names_are_refused(name):
    with pytest.raises(HostError):
        check_name(name)


@pytest.mark.parametrize(
    "dest", ["me@build.example", "buildbox", "ssh://me@10.0.0.7:2222", "me@[::1]", "10.0.0.7", "a_b.c-d"]
)
def test_what_ssh_takes_as_a_destination_is_accepted(dest):
    assert check_destination(dest) == dest


@pytest.mark.parametrize(
    "dest",
    ["-oProxyCommand=touch /tmp/x", "-p22", "", "me@host; rm -rf ~", "a b", "a\nb", "$(id)", "`id`", "h'x", "x" * 256],
)
def test_a_destination_that_could_be_an_option_or_a_command_is_refused(dest):
    with pytest.raises(HostError):
        check_destination(dest)


@given(st.text(max_size=40))
def test_no_accepted_destination_starts_an_option_or_holds_a_shell_character(text):
    try:
        check_destination(text)
    except HostError:
        return
    assert not text.startswith("-")
    assert not SHELL_SPECIALS & set(text) - set("[]")  # brackets only for an IPv6 address


@given(st.text(max_size=40))
def test_no_accepted_rk_path_holds_a_character_a_shell_reads(text):
    try:
        check_rk_path(text)
    except HostError:
        return
    assert not SHELL_SPECIALS & set(text)
    assert not text.startswith("-")


def test_the_remote_command_line_is_fixed_words_only():
    assert remote_words("/opt/rk/bin/rk", "remote") == "/opt/rk/bin/rk remote"
    with pytest.raises(HostError):
        remote_words("rk", "cron list; id")
    with pytest.raises(HostError):
        remote_words("rk; id", "remote")


def test_the_patterns_stay_shell_free():
    """The patterns themselves: none lets a space, quote or $ through."""
    for pattern in (DESTINATION, RK_PATH):
        for ch in " ;$`'\"|&<>()\n":
            assert not pattern.match(f"a{ch}b"), (pattern.pattern, ch)


def test_the_ssh_command_ends_its_options_before_the_destination():
    argv = ssh.argv("-oProxyCommand=x", "rk remote", {"RK_SSH_CONFIG": "/c"}, "/s")
    assert argv[: argv.index("--")].count("-F") == 1
    assert argv[argv.index("--") + 1 :] == ["-oProxyCommand=x", "rk remote"]
    assert "BatchMode=yes" in argv and "ControlMaster=auto" in argv


def test_the_shared_connection_socket_fits_a_socket_path_and_is_per_state_dir(tmp_path):
    short = ssh.control_dir("/s")
    assert short == "/s/ssh"
    long_a = ssh.control_dir("/" + "a" * 90)
    long_b = ssh.control_dir("/" + "b" * 90)
    assert long_a != long_b
    assert len(os.path.join(long_a, "cm-" + "0" * 40)) + 17 <= 107
    # a state dir of 45 characters (`/home/firstname.lastname/.local/state/rk/cron`) leaves
    # `<state>/ssh/cm-<40>` 93 bytes, and ssh's temporary `.<16 random>` pushes it past 107
    usual = ssh.control_dir("/home/firstname.lastname/.local/state/rk/cron")
    assert usual.startswith("/tmp/") and len(os.path.join(usual, "cm-" + "0" * 40)) + 17 <= 107
    assert ssh.control_dir("/" + "c" * 41) == "/" + "c" * 41 + "/ssh"  # 107 exactly: still fits


def test_the_config_file_s_hosts_are_read_and_a_bad_one_is_left_out():
    hosts, problems = parse_hosts(
        {"buildbox": {"destination": "me@b"}, "gpu": "me@gpu", "bad": {"destination": "-oX"}, "Up": "x"}, "c.yaml"
    )
    assert set(hosts) == {"buildbox", "gpu"}
    assert hosts["gpu"] == Host("gpu", "me@gpu")
    assert len(problems) == 2 and all(p.startswith("c.yaml: ") for p in problems)
    assert parse_hosts(["x"], "c.yaml") == ({}, ["c.yaml: hosts must be a mapping of name to {destination: …}"])


def test_versions_are_read_and_compared():
    assert parse_version("rk 0.1.0\n") == "0.1.0"
    assert parse_version("bash: rk: command not found\n") == ""
    assert version_problem("b", "0.1.0", "0.1.0", "rk") == ""
    assert "install rk 0.1.0 on b" in version_problem("b", "0.1.0", "0.0.9", "rk")
    assert "--rk /path/to/rk" in version_problem("b", "0.1.0", "", "rk")


def test_add_and_remove_keep_the_user_s_comments_and_settings(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("# mine\ntick_interval: 30  # my poll\n")
    env = {"RK_CONFIG": str(config)}
    add_host(env, Host("buildbox", "me@b"))
    add_host(env, Host("gpu", "me@g", "/opt/rk"))
    text = config.read_text()
    assert text.startswith("# mine\ntick_interval: 30  # my poll\n")
    assert load_hosts(env) == ({"buildbox": Host("buildbox", "me@b"), "gpu": Host("gpu", "me@g", "/opt/rk")}, [])
    with pytest.raises(HostError, match="exists"):
        add_host(env, Host("gpu", "me@other"))
    assert remove_host(env, "gpu") is True
    assert remove_host(env, "gpu") is False
    assert list(load_hosts(env)[0]) == ["buildbox"]
    assert "# my poll" in config.read_text()


def test_a_new_config_file_is_private_and_a_symlinked_one_is_not_written_through(tmp_path):
    env = {"RK_CONFIG": str(tmp_path / "rk" / "config.yaml")}
    add_host(env, Host("b", "me@b"))
    assert stat.S_IMODE(os.stat(env["RK_CONFIG"]).st_mode) == 0o600
    target = tmp_path / "dotfiles.yaml"
    target.write_text("tick_interval: 30\n")
    link = tmp_path / "link.yaml"
    link.symlink_to(target)
    with pytest.raises(ConfigError, match="symbolic link"):
        add_host({"RK_CONFIG": str(link)}, Host("b", "me@b"))
    assert target.read_text() == "tick_interval: 30\n"


def test_a_remote_request_is_one_bounded_json_argv():
    assert read_request(json.dumps({"argv": ["cron", "list"]}).encode()).argv == ["cron", "list"]
    for bad in (b"x", b"[]", b'{"argv": "cron list"}', b'{"argv": [1]}', json.dumps({"argv": ["remote"]}).encode()):
        with pytest.raises(Exception, match="rk remote"):
            read_request(bad)
    with pytest.raises(Exception, match="at most"):
        read_request(json.dumps({"argv": ["x"] * 300}).encode())
