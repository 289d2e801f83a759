"""`rk agent hook` and `rk agent state`: parsing, the agent-pid walk, the stdin
payload, the tmux write on a real private server, the ticker nudge, the
import diet of the hook path, and the `rk agent state` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import wait_for

from rk.agent import hook, hook_event, hook_tmux, hook_turn_end
from rk.core.environ import child_env
from rk.core.pane.screen.resets import MINUTE, RESET_MARGIN
from rk.host import clock, nudge
from rk.store import config
from rk.tmux import server as rktmux

REPO = Path(__file__).resolve().parent.parent


# -- helpers -------------------------------------------------------------------


def fake_agent(directory: Path, name: str = "claude") -> Path:
    """An executable script called `name` that runs its arguments as a child:
    the kernel names the process after the script, so it stands in for the agent."""
    path = directory / name
    path.write_text(f"#!{sys.executable}\nimport subprocess, sys\nsys.exit(subprocess.run(sys.argv[1:]).returncode)\n")
    path.chmod(0o755)
    return path


def pane_of(server) -> str:
    return server.run("display-message", "-p", "-t", "main", "#{pane_id}").strip()


def option(server, pane: str, name: str) -> str:
    return server.run("show-options", "-pqv", "-t", pane, name).strip()


def hook_env(server, pane: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(TMUX=f"{server.path},{os.getpid()},0", TMUX_PANE=pane, RK_STATE_DIR=str(tmp_path / "state"))
    env.update(extra)
    return env


def payload_fd(tmp_path: Path, payload) -> int:
    path = tmp_path / "payload.json"
    path.write_text(payload if isinstance(payload, str) else json.dumps(payload))
    return os.open(path, os.O_RDONLY)


def run_hook(argv, env, tmp_path, payload=None) -> int:
    fd = payload_fd(tmp_path, payload if payload is not None else "")
    try:
        return hook.run(argv, env=env, stdin_fd=fd)
    finally:
        os.close(fd)


# -- pure parts ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--agent", "claude", "idle"], ("claude", "idle")),
        (["--agent=codex", "active"], ("codex", "active")),
        (["waiting", "--agent", "gemini"], ("gemini", "waiting")),
        (["stamp"], ("", "stamp")),
    ],
)
def test_parse_args_accepts_the_installed_shapes(argv, expected):
    assert hook.parse_args(argv) == expected


@pytest.mark.parametrize(
    "argv",
    [[], ["--agent", "claude"], ["--agent"], ["--agent", "claude", "busy"], ["idle", "active"], ["--bogus", "idle"]],
)
def test_parse_args_rejects_everything_else(argv):
    with pytest.raises(ValueError):
        hook.parse_args(argv)


def test_provider_and_session_ref_grammar():
    assert (
        hook_event.valid_provider("claude")
        and hook_event.valid_provider("kimi-code")
        and hook_event.valid_provider("a_1")
    )
    for bad in ("", "Claude", "1abc", "cla ude", "a:b", "x" * 33):
        assert not hook_event.valid_provider(bad), bad
    assert hook_event.valid_session_ref("6f0d9e2a-1c3b-4f7e-9a2d-8b5c4e1f0a37")
    for bad in ("", "a b", "a\tb", "a\nb", "\x1b[31m", 42, None, "x" * 257):
        assert not hook_event.valid_session_ref(bad), bad


def test_session_id_of_reads_each_providers_key():
    assert hook_event.session_id_of({"session_id": "abc", "hook_event_name": "Stop"}) == "abc"
    assert hook_event.session_id_of({"sessionId": "cop-1"}) == "cop-1"
    assert hook_event.session_id_of({"sessionID": "ses_9"}) == "ses_9"
    assert hook_event.session_id_of({"conversationId": "conv-2"}) == "conv-2"
    assert hook_event.session_id_of({"session_id": "has space", "sessionId": "ok"}) == "ok"
    assert hook_event.session_id_of({"other": "x"}) == ""
    assert hook_event.session_id_of(["session_id"]) == ""
    assert hook_event.session_id_of(None) == ""


def test_socket_is_the_first_comma_field_of_TMUX():
    assert hook.socket_of("/tmp/tmux-0/default,1234,0") == "/tmp/tmux-0/default"
    assert hook.socket_of("/path/with space/s,1,2") == "/path/with space/s"
    assert hook.socket_of("") == ""


@pytest.mark.parametrize(
    "value, epoch",
    [
        ("1751790000", 1751790000),
        ("2026-09-01T09:00:00+02:00", 1788246000),
        ("2026-09-01T07:00:00Z", 1788246000),
        ("0", 0),
    ],
)
def test_epoch_honours_RK_NOW(value, epoch):
    assert hook.epoch_now({"RK_NOW": value}) == epoch


def test_epoch_without_RK_NOW_is_the_wall_clock():
    before = int(time.time())
    assert before <= hook.epoch_now({}) <= int(time.time())


@pytest.mark.parametrize("value", ["2026-09-01T09:00:00", "yesterday", "-5", "99999999999999999999", "²"])
def test_unreadable_RK_NOW_is_an_error_for_state(value):
    with pytest.raises(ValueError):
        hook.epoch_now({"RK_NOW": value})


@pytest.mark.parametrize(
    "base, locale",
    [
        ({"TMUX": "/s,1,0", "TMUX_PANE": "%1", "LANG": "C"}, {"LANG": "C", "LC_CTYPE": "C.UTF-8"}),
        ({"LC_ALL": "POSIX", "LANG": "en_US.UTF-8"}, {"LC_ALL": "C.UTF-8", "LANG": "en_US.UTF-8"}),
        ({"LC_ALL": "en_US.UTF-8"}, {"LC_ALL": "en_US.UTF-8"}),
        ({"LC_CTYPE": "de_DE.utf8"}, {"LC_CTYPE": "de_DE.utf8"}),
        ({"LANG": "C.UTF-8"}, {"LANG": "C.UTF-8"}),
        ({}, {"LC_CTYPE": "C.UTF-8"}),
    ],
)
def test_child_env_drops_the_callers_tmux_and_forces_utf8(base, locale):
    env = child_env(base)
    assert env == locale
    assert rktmux.child_env(base) == env  # the tmux layer uses the same rule


def test_state_and_legacy_written_in_one_chained_command_then_session():
    assert hook_tmux.tmux_commands("%3", "active", 100, 42, "claude:abc") == [
        "set-option",
        "-p",
        "-t",
        "%3",
        "@rk_pane_agent_state",
        "active:100:42",
        ";",
        "set-option",
        "-p",
        "-t",
        "%3",
        "@rk_agent_state",
        "active:100:42",
        ";",
        "set-option",
        "-p",
        "-t",
        "%3",
        "@rk_pane_agent_session",
        "claude:abc",
    ]
    assert hook_tmux.tmux_commands("%3", "idle", 100, 0, "") == [
        "set-option",
        "-p",
        "-t",
        "%3",
        "@rk_pane_agent_state",
        "idle:100",
        ";",
        "set-option",
        "-p",
        "-t",
        "%3",
        "@rk_agent_state",
        "idle:100",
    ]
    assert hook_tmux.tmux_commands("%3", None, 0, 0, "claude:abc") == [
        "set-option",
        "-p",
        "-t",
        "%3",
        "@rk_pane_agent_session",
        "claude:abc",
    ]
    assert hook_tmux.tmux_commands("%3", None, 0, 0, "") == []


# -- the agent pid ----------------------------------------------------------------


def fake_proc(root: Path, table: dict[int, tuple[str, int]]) -> str:
    for pid, (comm, ppid) in table.items():
        d = root / str(pid)
        d.mkdir(parents=True)
        (d / "comm").write_text(comm + "\n")
        (d / "status").write_text(f"Name:\t{comm}\nState:\tS (sleeping)\nPPid:\t{ppid}\nUid:\t0\n")
    return str(root)


@pytest.mark.shell
def test_pid_walk_finds_the_agent_above_the_intermediate_shells(tmp_path):
    root = fake_proc(
        tmp_path / "proc",
        {
            50: ("sh", 40),
            40: ("sh", 30),
            30: ("claude", 20),
            20: ("zsh", 10),
            10: ("tmux: server", 1),
        },
    )
    assert hook_event.find_agent_pid("claude", 50, proc_root=root) == 30
    assert hook_event.find_agent_pid("codex", 50, proc_root=root) == 0  # no codex above: no pid, never a wrong one


@pytest.mark.shell
def test_pid_walk_is_bounded_to_five_hops(tmp_path):
    chain = {60: ("sh", 59), 59: ("sh", 58), 58: ("sh", 57), 57: ("sh", 56), 56: ("claude", 1)}
    root = fake_proc(tmp_path / "proc", chain)
    assert hook_event.find_agent_pid("claude", 60, proc_root=root) == 56  # fifth process examined
    deeper = fake_proc(tmp_path / "proc2", {61: ("sh", 60), **chain})
    assert hook_event.find_agent_pid("claude", 61, proc_root=deeper) == 0  # sixth: out of reach


@pytest.mark.shell
def test_pid_walk_expected_names_per_provider(tmp_path):
    root = fake_proc(
        tmp_path / "proc",
        {
            9: ("sh", 8),
            8: ("node", 7),
            7: ("opencode", 1),
            5: ("sh", 4),
            4: ("some-long-agent", 1),
        },
    )
    assert hook_event.find_agent_pid("gemini", 9, proc_root=root) == 8  # Gemini CLI runs as node
    assert hook_event.find_agent_pid("claude", 9, proc_root=root) == 0
    # an unknown but well-formed provider is expected under its own name (truncated like comm)
    assert hook_event.find_agent_pid("some-long-agent-cli", 5, proc_root=root) == 4
    assert hook_event.find_agent_pid("", 9, proc_root=root) == 0


@pytest.mark.shell
def test_pid_walk_stops_at_a_vanished_process_and_at_init(tmp_path):
    root = fake_proc(tmp_path / "proc", {70: ("sh", 69), 80: ("sh", 1)})
    assert hook_event.find_agent_pid("claude", 70, proc_root=root) == 0
    assert hook_event.find_agent_pid("claude", 80, proc_root=root) == 0


@pytest.mark.shell
def test_pid_walk_falls_back_to_ps_without_proc(tmp_path):
    table = {50: ("sh", 40), 40: ("codex", 30)}
    calls = []

    def ps_step(pid):
        calls.append(pid)
        return table.get(pid)

    assert hook_event.find_agent_pid("codex", 50, proc_root=str(tmp_path / "no-proc"), ps_step=ps_step) == 40
    assert calls == [50, 40]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("  123 /usr/local/bin/claude", ("claude", 123)),
        ("1 codex", ("codex", 1)),
        ("77 /Applications/Some Thing.app/Contents/MacOS/node", ("node", 77)),
        ("", None),
        ("abc claude", None),
        ("12", None),
    ],
)
def test_ps_line_parsing(line, expected):
    assert hook_event.parse_ps_line(line) == expected


WALK = (
    "import sys; from rk.agent.hook_event import find_agent_pid; print(find_agent_pid('claude', proc_root=sys.argv[1]))"
)


@pytest.mark.shell
@pytest.mark.parametrize("proc_root", ["/proc", "/nonexistent-proc"], ids=["proc", "ps"])
def test_pid_walk_on_real_processes(tmp_path, proc_root):
    agent = fake_agent(tmp_path)
    direct = subprocess.Popen([agent, sys.executable, "-c", WALK, proc_root], stdout=subprocess.PIPE, text=True)
    out, _ = direct.communicate(timeout=30)
    assert int(out) == direct.pid
    via_shell = subprocess.Popen(
        [agent, "/bin/sh", "-c", f'"{sys.executable}" -c "{WALK}" {proc_root}; exit $?'],
        stdout=subprocess.PIPE,
        text=True,
    )
    out, _ = via_shell.communicate(timeout=30)
    assert int(out) == via_shell.pid
    plain = subprocess.run([sys.executable, "-c", WALK, proc_root], capture_output=True, text=True, timeout=30)
    assert int(plain.stdout) == 0


# -- stdin -----------------------------------------------------------------------


def test_payload_decoded_without_waiting_for_eof():
    r, w = os.pipe()
    try:
        os.write(w, b'{"session_id": "abc", "hook_event_name": "Stop"}\n')
        start = time.monotonic()
        value = hook_event.read_payload(r, timeout=5.0)  # the writer never closes
        assert time.monotonic() - start < 2.0
        assert value == {"session_id": "abc", "hook_event_name": "Stop"}
    finally:
        os.close(r)
        os.close(w)


def test_payload_split_across_writes():
    r, w = os.pipe()

    def writer():
        os.write(w, b'{"session_id": "ab')
        time.sleep(0.05)
        os.write(w, b'c", "source": "compact"}')

    t = threading.Thread(target=writer)
    t.start()
    try:
        assert hook_event.read_payload(r, timeout=5.0) == {"session_id": "abc", "source": "compact"}
    finally:
        t.join()
        os.close(r)
        os.close(w)


def test_payload_read_gives_up_after_the_timeout():
    r, w = os.pipe()
    try:
        start = time.monotonic()
        assert hook_event.read_payload(r, timeout=0.1) is None
        assert time.monotonic() - start < 2.0
    finally:
        os.close(r)
        os.close(w)


def test_payload_never_read_from_a_terminal():
    master, slave = os.openpty()
    try:
        os.write(master, b'{"session_id": "abc"}\n')
        assert hook_event.read_payload(slave, timeout=5.0) is None
    finally:
        os.close(master)
        os.close(slave)


def test_payload_over_the_cap_is_ignored_but_drained():
    r, w = os.pipe()
    big = b'{"session_id": "abc", "x": "' + b"y" * 5000 + b'"}'

    def writer():
        os.write(w, big)  # would block (EPIPE if we quit) unless the reader drains
        os.close(w)

    t = threading.Thread(target=writer)
    t.start()
    try:
        assert hook_event.read_payload(r, cap=1000, timeout=5.0) is None
        t.join(timeout=5)
        assert not t.is_alive()
    finally:
        os.close(r)


@pytest.mark.shell
@pytest.mark.parametrize(
    "text",
    [
        '{"session_id": "abc", "n": [1, -2.5e3, true, false, null], "s": "caf\\u00e9 \\" \\n"}',
        '  \n{"nested": {"a": {"b": []}}, "unicode": "✳ ❯"} {"second": 1}',
        '"just a string"',
    ],
)
def test_payload_decodes_like_json_loads(tmp_path, text):
    path = tmp_path / "p"
    path.write_text(text)
    fd = os.open(path, os.O_RDONLY)
    try:
        value = hook_event.read_payload(fd, timeout=1.0)
    finally:
        os.close(fd)
    expected, _ = json.JSONDecoder().raw_decode(text.lstrip())
    assert value == expected


@pytest.mark.shell
@pytest.mark.parametrize("data", [b"", b"not json", b"[1, 2", b"\xff\xfe", b'{"a": "\x01"}'])
def test_payload_garbage_is_none(tmp_path, data):
    path = tmp_path / "p"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert hook_event.read_payload(fd, timeout=1.0) is None
    finally:
        os.close(fd)


# -- the hook against a real tmux server ------------------------------------------------


@pytest.mark.shell
def test_hook_writes_state_under_both_names(tmux_server, tmp_path):
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path, RK_NOW="1751790000")
    assert run_hook(["--agent", "claude", "active"], env, tmp_path, {"session_id": "s-1"}) == 0
    assert option(tmux_server, pane, "@rk_pane_agent_state") == "active:1751790000"
    assert option(tmux_server, pane, "@rk_agent_state") == "active:1751790000"
    assert option(tmux_server, pane, "@rk_pane_agent_session") == "claude:s-1"
    # each token writes its state; no payload: no session change
    for token in ("waiting", "idle"):
        assert run_hook(["--agent", "claude", token], env, tmp_path) == 0
        assert option(tmux_server, pane, "@rk_pane_agent_state") == f"{token}:1751790000"
    assert option(tmux_server, pane, "@rk_pane_agent_session") == "claude:s-1"


@pytest.mark.parametrize(
    "payload, state",
    [
        ({"error": "rate_limit"}, "limited"),  # Claude's StopFailure after a 429
        ({"error": "billing_error"}, "limited"),  # Claude: "usage limit reached"
        ({"error": {"type": "rate_limit_error", "message": "slow down"}}, "limited"),
        ({"error": {"code": 429}}, "limited"),
        ({"error": "RESOURCE_EXHAUSTED"}, "limited"),
        ({"error": "server_error"}, "idle"),  # the turn is over; nothing is limited
        ({"error": "overloaded"}, "idle"),
        ({"error": "unknown"}, "idle"),
        ({}, "idle"),
        (None, "idle"),
        # Codex's PostModelRequest fires after every model request; only a failed one changes the state
        ({"status": "completed"}, None),
        ({"status": "cancelled"}, None),  # Esc: Interrupt follows and says idle
        ({"status": "failed", "error": "exceeded retry limit, last status: 429 Too Many Requests"}, "limited"),
        ({"status": "failed", "error": "Quota exceeded. Check your plan and billing details."}, "limited"),
        (
            {
                "status": "failed",
                "error": "We’re currently experiencing high demand, which may cause temporary errors.",
            },
            "idle",
        ),
        ({"status": "failed", "error": "Selected model is at capacity. Please try a different model."}, "idle"),
    ],
)
def test_a_failed_turn_is_limited_only_for_a_limit(payload, state):
    assert hook_event.failed_state(payload) == state


@pytest.mark.shell
def test_failed_and_limited_tokens_write_their_state(tmux_server, tmp_path):
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path, RK_NOW="1751790000")
    run_hook(["--agent", "claude", "active"], env, tmp_path, {"session_id": "s-1"})
    run_hook(["--agent", "claude", "failed"], env, tmp_path, {"session_id": "s-1", "error": "rate_limit"})
    assert option(tmux_server, pane, "@rk_pane_agent_state") == "limited:1751790000"
    run_hook(["--agent", "claude", "failed"], env, tmp_path, {"session_id": "s-1", "error": "server_error"})
    assert option(tmux_server, pane, "@rk_pane_agent_state") == "idle:1751790000"
    run_hook(["--agent", "codex", "limited"], env, tmp_path)
    assert option(tmux_server, pane, "@rk_pane_agent_state") == "limited:1751790000"
    assert option(tmux_server, pane, "@rk_pane_agent_source") == ""  # a hook write carries no source note


@pytest.mark.shell
def test_set_state_limited_records_the_reset_as_a_manual_note(tmux_server, tmp_path):
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path, RK_NOW="1751790000")
    ok, message = hook.set_state("limited", env=env, until=1751800000)
    assert ok, message
    assert option(tmux_server, pane, "@rk_pane_agent_state") == "limited:1751790000"
    assert option(tmux_server, pane, "@rk_pane_agent_source") == "manual:1751790000:1751800000"


@pytest.mark.shell
def test_hook_epoch_from_iso_RK_NOW(tmux_server, tmp_path):
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path, RK_NOW="2026-09-01T09:00:00+02:00")
    run_hook(["--agent", "claude", "idle"], env, tmp_path)
    assert (
        option(tmux_server, pane, "@rk_pane_agent_state") == f"idle:{clock.parse_instant('2026-09-01T09:00:00+02:00')}"
    )


@pytest.mark.shell
def test_stamp_writes_identity_and_idle_but_not_over_a_compaction(tmux_server, tmp_path):
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path, RK_NOW="1751790000")
    run_hook(["--agent", "claude", "stamp"], env, tmp_path, {"session_id": "one", "source": "startup"})
    assert option(tmux_server, pane, "@rk_pane_agent_session") == "claude:one"
    assert option(tmux_server, pane, "@rk_pane_agent_state") == "idle:1751790000"
    env["RK_NOW"] = "1751790100"
    run_hook(["--agent", "claude", "active"], env, tmp_path, {"session_id": "one"})
    env["RK_NOW"] = "1751790200"
    run_hook(["--agent", "claude", "stamp"], env, tmp_path, {"session_id": "two", "source": "compact"})
    assert option(tmux_server, pane, "@rk_pane_agent_session") == "claude:two"
    assert option(tmux_server, pane, "@rk_pane_agent_state") == "active:1751790100"
    assert option(tmux_server, pane, "@rk_agent_state") == "active:1751790100"


@pytest.mark.shell
def test_hook_records_the_agent_pid(tmux_server, tmp_path):
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path, RK_NOW="1751790000")
    agent = fake_agent(tmp_path)
    proc = subprocess.Popen(
        [agent, sys.executable, "-m", "rk", "agent", "hook", "--agent", "claude", "idle"],
        env=env,
        stdin=subprocess.DEVNULL,
        cwd=REPO,
    )
    assert proc.wait(timeout=30) == 0
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"idle:1751790000:{proc.pid}"


@pytest.mark.shell
def test_hook_does_nothing_outside_tmux(tmux_server, tmp_path, monkeypatch):
    pane = pane_of(tmux_server)
    spawned = []
    monkeypatch.setattr(hook_tmux, "spawn_tmux", lambda *a: spawned.append(a) or 0)
    env = hook_env(tmux_server, pane, tmp_path)
    del env["TMUX_PANE"]
    assert run_hook(["--agent", "claude", "active"], env, tmp_path, {"session_id": "x"}) == 0
    env = hook_env(tmux_server, pane, tmp_path)
    del env["TMUX"]  # a pane but no server: writing could hit another server's pane
    assert run_hook(["--agent", "claude", "active"], env, tmp_path) == 0
    assert spawned == []


@pytest.mark.shell
def test_hook_with_bad_arguments_writes_nothing_and_exits_0(tmux_server, tmp_path, capsys):
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path)
    assert run_hook(["--agent", "claude", "busy"], env, tmp_path) == 0
    assert "unknown token" in capsys.readouterr().err
    assert option(tmux_server, pane, "@rk_pane_agent_state") == ""


@pytest.mark.shell
def test_hook_survives_a_dead_pane_and_a_dead_server(tmux_server, tmp_path):
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path, TMUX_PANE="%999")
    assert run_hook(["--agent", "claude", "idle"], env, tmp_path) == 0
    env = hook_env(tmux_server, pane, tmp_path, TMUX=f"{tmp_path}/no-such-socket,1,0")
    assert run_hook(["--agent", "claude", "idle"], env, tmp_path) == 0
    assert not (tmp_path / "no-such-socket").exists()  # no server was started there


@pytest.mark.shell
def test_session_not_stamped_for_an_invalid_provider(tmux_server, tmp_path):
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path, RK_NOW="5")
    run_hook(["--agent", "Bad:Provider", "idle"], env, tmp_path, {"session_id": "abc"})
    assert option(tmux_server, pane, "@rk_pane_agent_state") == "idle:5"
    assert option(tmux_server, pane, "@rk_pane_agent_session") == ""


@pytest.mark.shell
@pytest.mark.parametrize(
    "env, path",
    [
        ({"RK_STATE_DIR": "/s"}, "/s/ticker.sock"),
        ({"XDG_STATE_HOME": "/x", "HOME": "/h"}, "/x/rk/cron/ticker.sock"),
        ({"HOME": "/h"}, "/h/.local/state/rk/cron/ticker.sock"),
        ({"RK_STATE_DIR": "/s", "XDG_STATE_HOME": "/x"}, "/s/ticker.sock"),
    ],
)
def test_nudge_socket_lives_in_the_state_dir(env, path):
    assert nudge.socket_path(env) == path
    assert str(config.state_dir(env) / "ticker.sock") == path


@pytest.mark.shell
def test_hook_nudges_the_ticker_after_the_write(tmux_server, tmp_path):
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path, RK_NOW="7")
    os.makedirs(nudge.state_dir(env), exist_ok=True)
    listener = nudge.Listener(nudge.socket_path(env))
    try:
        run_hook(["--agent", "claude", "waiting"], env, tmp_path)
        assert wait_for(listener.drain, message="a nudge") == {tmux_server.path.name}
        assert option(tmux_server, pane, "@rk_pane_agent_state") == "waiting:7"
        # a failed write nudges nobody
        run_hook(["--agent", "claude", "idle"], hook_env(tmux_server, "%999", tmp_path), tmp_path)
        assert listener.drain() == set()
    finally:
        listener.close()


@pytest.mark.shell
def test_the_nudge_goes_only_to_a_socket_that_is_there(tmp_path):
    env = {"RK_STATE_DIR": str(tmp_path)}
    assert hook._ticker_socket(env) == ""  # no ticker: no nudge, no socket module
    (tmp_path / "ticker.sock").write_text("")
    assert hook._ticker_socket(env) == ""  # a file is not a listening ticker
    (tmp_path / "ticker.sock").unlink()
    listener = nudge.Listener(nudge.socket_path(env))
    try:
        assert hook._ticker_socket(env) == str(tmp_path / "ticker.sock")
    finally:
        listener.close()


def test_main_never_raises_and_always_returns_0(monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(hook, "run", boom)
    assert hook.main(["--agent", "claude", "idle"]) == 0
    monkeypatch.setattr(hook, "run", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
    assert hook.main(["--agent", "claude", "idle"]) == 0


@pytest.mark.shell
def test_tmux_that_hangs_is_killed_after_the_timeout(tmp_path):
    pid = os.posix_spawnp("sleep", ["sleep", "30"], dict(os.environ))
    start = time.monotonic()
    assert hook_tmux.reap(pid, timeout=0.2) is None
    assert time.monotonic() - start < 5
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # killed and reaped


# -- the import diet -----------------------------------------------------------------

PROBE = """
import sys
from rk.__main__ import main

code = main(["agent", "hook", "--agent", "claude", "active"])
print(code)
print(" ".join(sorted(sys.modules)))
"""

HEAVY = (
    "typer",
    "click",
    "rich",
    "ruamel",
    "libtmux",
    "croniter",
    "rk.tmux.server",
    "rk.core.pane.facts",
    "rk.host.clock",
    "rk.store.config",
    "rk.cli",
    "rk.core.schedule.entry",
    "rk.host.nudge",
    "subprocess",
    "pathlib",
    "dataclasses",
    "json",
    "socket",
    "datetime",
    "re",
    "enum",
)


@pytest.mark.shell
def test_hook_path_imports_nothing_heavy(tmux_server, tmp_path):
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path, RK_NOW="1751790000")
    proc = subprocess.run(
        [sys.executable, "-c", PROBE],
        env=env,
        input=json.dumps({"session_id": "diet"}),
        capture_output=True,
        text=True,
        timeout=30,
    )
    code, modules = proc.stdout.splitlines()
    assert code == "0"
    loaded = set(modules.split())
    assert "rk.agent.hook" in loaded  # the probe did run the hook
    assert option(tmux_server, pane, "@rk_pane_agent_session") == "claude:diet"
    site_loaded = set(
        subprocess.run(
            [sys.executable, "-c", "import sys; print(' '.join(sys.modules))"], capture_output=True, text=True
        ).stdout.split()
    )
    heavy = sorted(m for m in loaded - site_loaded if any(m == h or m.startswith(h + ".") for h in HEAVY))  # rk.cli.*
    assert heavy == []


# -- rk agent state -----------------------------------------------------------------------


@pytest.mark.shell
def test_set_state_writes_the_current_pane(tmux_server, tmp_path):
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path, RK_NOW="1751790000")
    ok, message = hook.set_state("waiting", env=env)
    assert ok, message
    assert option(tmux_server, pane, "@rk_pane_agent_state") == "waiting:1751790000"
    assert option(tmux_server, pane, "@rk_agent_state") == "waiting:1751790000"
    assert pane in message and "waiting:1751790000" in message


@pytest.mark.shell
def test_set_state_on_another_pane_with_a_pid(tmux_server, tmp_path):
    pane = pane_of(tmux_server)
    other = tmux_server.run("split-window", "-d", "-P", "-F", "#{pane_id}", "-t", "main", "cat").strip()
    env = hook_env(tmux_server, pane, tmp_path, RK_NOW="10")
    ok, _ = hook.set_state("active", other, env=env, pid=4242)
    assert ok
    assert option(tmux_server, other, "@rk_pane_agent_state") == "active:10:4242"
    assert option(tmux_server, pane, "@rk_pane_agent_state") == ""


@pytest.mark.shell
def test_set_state_errors(tmux_server, tmp_path):
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path)
    assert hook.set_state("busy", env=env) == (False, "unknown state 'busy' (use active, waiting, idle or limited)")
    assert hook.set_state("idle", env=env, until=99) == (False, "a reset time only goes with the state limited")
    ok, message = hook.set_state("idle", "%999", env=env)
    assert not ok and "%999" in message
    ok, message = hook.set_state("idle", "3", env=env)
    assert not ok and "bad pane" in message
    outside = {k: v for k, v in env.items() if k not in ("TMUX", "TMUX_PANE")}
    ok, message = hook.set_state("idle", env=outside)
    assert not ok and "not inside tmux" in message
    ok, message = hook.set_state("idle", env={**env, "RK_NOW": "garbage"})
    assert not ok and "RK_NOW" in message


def rk_cli(*args, env):
    return subprocess.run(
        [sys.executable, "-m", "rk", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.shell
def test_rk_agent_state_command(tmux_server, tmp_path):
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path, RK_NOW="1751790000")
    os.makedirs(nudge.state_dir(env), exist_ok=True)
    listener = nudge.Listener(nudge.socket_path(env))
    try:
        ok = rk_cli("agent", "state", "idle", env=env)
        assert ok.returncode == 0, ok.stderr
        assert option(tmux_server, pane, "@rk_pane_agent_state") == "idle:1751790000"
        assert wait_for(listener.drain, message="a nudge") == {tmux_server.path.name}
    finally:
        listener.close()

    bad = rk_cli("agent", "state", "busy", env=env)
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and "unknown state" in bad.stderr and "Traceback" not in bad.stderr

    outside = {k: v for k, v in env.items() if k not in ("TMUX", "TMUX_PANE")}
    out = rk_cli("agent", "state", "active", env=outside)
    assert out.returncode == 1
    assert out.stderr.count("\n") == 1 and "not inside tmux" in out.stderr

    gone = rk_cli("agent", "state", "active", "--pane", "%999", env=env)
    assert gone.returncode == 1 and "%999" in gone.stderr and gone.stderr.count("\n") == 1


@pytest.mark.shell
def test_rk_agent_hook_through_the_entry_point_prints_nothing(tmux_server, tmp_path):
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path, RK_NOW="3")
    rk = Path(sys.executable).parent / "rk"  # the console script (`make venv` installs it)
    proc = subprocess.run(
        [str(rk), "agent", "hook", "--agent", "claude", "waiting"],
        env=env,
        input='{"session_id": "q"}',
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert option(tmux_server, pane, "@rk_pane_agent_state") == "waiting:3"
    outside = {k: v for k, v in env.items() if k != "TMUX_PANE"}
    proc = subprocess.run(
        [sys.executable, "-m", "rk", "agent", "hook", "--agent", "claude", "bogus"],
        env=outside,
        capture_output=True,
        text=True,
        timeout=30,
        cwd=REPO,
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


@pytest.mark.shell
def test_agent_state_with_a_global_server_flag_targets_that_server(tmux_server, tmp_path):
    import subprocess
    import sys

    pane = tmux_server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    env.update(RK_STATE_DIR=str(tmp_path / "state"), RK_NOW="1800000000")
    out = subprocess.run(
        [sys.executable, "-m", "rk", "-L", tmux_server.name, "agent", "state", "waiting", "--pane", pane],
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert tmux_server.run("show-options", "-pqv", "-t", pane, "@rk_pane_agent_state").strip() == "waiting:1800000000"
    missing = subprocess.run(
        [sys.executable, "-m", "rk", "-L", tmux_server.name, "agent", "state", "idle"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and "--pane" in missing.stderr


# -- whole input, whatever the chunking (a real hook process, a real tmux server) -------------

NOW = 1751790000
SESSION = {"session_id": "split-1", "hook_event_name": "Stop", "cwd": "/work", "note": "caf\u00e9 \u2733 \u276f"}


def spawn_hook(env, token: str = "active", provider: str = "claude", stdin=subprocess.PIPE) -> subprocess.Popen:
    """`rk agent hook` as a harness starts it: its own process, stdin a pipe we write."""
    return subprocess.Popen(
        [sys.executable, "-m", "rk", "agent", "hook", "--agent", provider, token],
        env=env,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )


def feed(proc: subprocess.Popen, chunks, delay: float = 0.0, close: bool = True) -> None:
    """Write `chunks` to the hook's stdin with `delay` seconds between them."""
    assert proc.stdin is not None
    try:
        for i, chunk in enumerate(chunks):
            if i and delay:
                time.sleep(delay)  # the writer's pace is the input under test, not a synchronisation
            proc.stdin.write(chunk)
            proc.stdin.flush()
        if close:
            proc.stdin.close()
    except BrokenPipeError:
        pass


def finish(proc: subprocess.Popen) -> None:
    """The hook exits by itself, with status 0 and nothing printed."""
    proc.stdin = None  # ours to close (or to leave open), not communicate's
    out, err = proc.communicate(timeout=30)
    assert (proc.returncode, out, err) == (0, b"", b"")


def pieces(data: bytes, n: int) -> list[bytes]:
    step = -(-len(data) // n)
    return [data[i : i + step] for i in range(0, len(data), step)]


def log_text(tmp_path: Path) -> str:
    path = tmp_path / "state" / hook.HOOK_LOG
    return path.read_text() if path.exists() else ""


BODY = json.dumps(SESSION, ensure_ascii=False).encode()
WIDE = json.dumps({"session_id": "wide", "k": {str(i): [i, {"n": None}] for i in range(20_000)}}).encode()


@pytest.mark.shell
@pytest.mark.parametrize(
    "chunks, delay",
    [
        ([BODY[i : i + 1] for i in range(len(BODY))], 0.002),  # byte by byte: multi-byte characters split too
        (pieces(BODY, 2), 0.05),
        (pieces(BODY, 3), 0.1),
        (pieces(BODY, 4), 0.05),
        ([b"  \n", BODY, b"\n"], 0.05),  # whitespace around it, in chunks of its own
    ],
    ids=["bytewise", "2-chunks", "3-chunks", "4-chunks", "padded"],
)
def test_a_split_payload_sets_the_state_and_the_session(tmux_server, tmp_path, chunks, delay):
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path, RK_NOW=str(NOW))
    proc = spawn_hook(env)
    feed(proc, chunks, delay)
    finish(proc)
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"active:{NOW}"
    assert option(tmux_server, pane, "@rk_pane_agent_session") == "claude:split-1"
    assert log_text(tmp_path) == ""


@pytest.mark.shell
def test_a_slow_writer_within_the_bound_is_waited_for(tmux_server, tmp_path):
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path, RK_NOW=str(NOW))
    proc = spawn_hook(env, "failed")
    body = json.dumps({"session_id": "slow", "error": "rate_limit"}).encode()
    feed(proc, pieces(body, 4), delay=0.2)  # 0.6 s in all: more than a quick read, within the bound
    finish(proc)
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"limited:{NOW}"  # the payload decided it
    assert option(tmux_server, pane, "@rk_pane_agent_session") == "claude:slow"


@pytest.mark.shell
def test_a_writer_that_never_closes_after_a_whole_object(tmux_server, tmp_path):
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path, RK_NOW=str(NOW))
    proc = spawn_hook(env, "waiting")
    feed(proc, pieces(BODY, 2), delay=0.05, close=False)
    stdin = proc.stdin
    try:
        finish(proc)  # exits while its stdin is still open
    finally:
        stdin.close()
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"waiting:{NOW}"
    assert option(tmux_server, pane, "@rk_pane_agent_session") == "claude:split-1"


@pytest.mark.shell
@pytest.mark.parametrize("sent", [b"", BODY[:20]], ids=["nothing", "half-an-object"])
def test_a_writer_that_never_closes_still_gets_its_state(tmux_server, tmp_path, sent):
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path, RK_NOW=str(NOW))
    proc = spawn_hook(env, "idle")
    feed(proc, [sent] if sent else [], close=False)
    stdin = proc.stdin
    try:
        finish(proc)  # the bound ends the wait
    finally:
        stdin.close()
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"idle:{NOW}"
    assert option(tmux_server, pane, "@rk_pane_agent_session") == ""
    assert "input still open after" in log_text(tmp_path) and "the state is written without it" in log_text(tmp_path)


@pytest.mark.shell
def test_a_payload_under_the_cap_in_pipe_sized_chunks_is_read_whole(tmux_server, tmp_path):
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path, RK_NOW=str(NOW))
    body = json.dumps({"session_id": "big", "last_assistant_message": "x" * (hook_event.STDIN_CAP - 100)}).encode()
    assert 65536 * 8 < len(body) <= hook_event.STDIN_CAP
    proc = spawn_hook(env)
    feed(proc, [body[i : i + 65536] for i in range(0, len(body), 65536)])
    finish(proc)
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"active:{NOW}"
    assert option(tmux_server, pane, "@rk_pane_agent_session") == "claude:big"


@pytest.mark.shell
def test_a_payload_over_the_cap_is_ignored_but_the_state_is_written(tmux_server, tmp_path):
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path, RK_NOW=str(NOW))
    body = json.dumps({"session_id": "huge", "x": "y" * (2 * hook_event.STDIN_CAP)}).encode()
    proc = spawn_hook(env, "failed")
    feed(proc, [body])  # the whole write returns: the hook drained it
    finish(proc)
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"idle:{NOW}"  # failed, no payload: idle
    assert option(tmux_server, pane, "@rk_pane_agent_session") == ""
    assert f"payload over {hook_event.STDIN_CAP} bytes ignored" in log_text(tmp_path)


@pytest.mark.shell
@pytest.mark.parametrize(
    "data, session",
    [
        (b'{"session_id": "utf", "prompt": "bad \xff\xfe bytes \xe2\x9c"}', "claude:utf"),
        (b"[" * 100_000 + b"]" * 100_000, ""),  # nesting past the recursion limit
        (b'{"a":' * 50_000 + b"1" + b"}" * 50_000, ""),
        (WIDE, "claude:wide"),
        (b"not json at all", ""),
        (b'{"session_id": "cut", "hook_event_name": "St', ""),  # truncated, then closed
        (b"", ""),
    ],
    ids=["invalid-utf8", "deep-array", "deep-object", "wide-object", "not-json", "truncated", "empty"],
)
def test_hostile_input_never_costs_the_state(tmux_server, tmp_path, data, session):
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path, RK_NOW=str(NOW))
    proc = spawn_hook(env, "active")
    feed(proc, pieces(data, 3) if data else [], delay=0.02)
    finish(proc)
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"active:{NOW}"
    assert option(tmux_server, pane, "@rk_pane_agent_session") == session
    if not data or session:
        assert log_text(tmp_path) == ""  # nothing amiss: nothing logged
    else:
        assert "is not JSON" in log_text(tmp_path)


@pytest.mark.shell
def test_a_terminal_on_stdin_is_not_read_and_the_state_is_written(tmux_server, tmp_path):
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path, RK_NOW=str(NOW))
    master, slave = os.openpty()
    try:
        os.write(master, b'{"session_id": "tty"}\n')
        proc = spawn_hook(env, "waiting", stdin=slave)
        finish(proc)
    finally:
        os.close(master)
        os.close(slave)
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"waiting:{NOW}"
    assert option(tmux_server, pane, "@rk_pane_agent_session") == ""


@pytest.mark.shell
def test_split_input_decoding_needs_no_json_module():
    """The C scanner reports a syntax error as SystemError when `json.decoder` was
    never imported, as in the hook's own process: a partial object read so far
    must be "not yet", never an escaping exception."""
    probe = (
        "import sys; from rk.agent import hook_event; "
        "print(hook_event.decode(b'{\"a') is hook_event.BAD, hook_event.decode(b'[1, 2') is hook_event.BAD, "
        "hook_event.decode(b'{\"a\": 1}'), 'json.decoder' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=30)
    assert out.stdout.split() == ["True", "True", "{'a':", "1}", "False"], out.stderr


# -- hook.log ------------------------------------------------------------------------------------


@pytest.mark.shell
def test_the_log_says_why_no_state_was_written(tmux_server, tmp_path):
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, "%999", tmp_path, RK_NOW=str(NOW))
    assert run_hook(["--agent", "claude", "idle"], env, tmp_path) == 0
    line = log_text(tmp_path)
    assert "%999 claude idle: no state written: tmux exit status 1" in line and line.count("\n") == 1
    assert option(tmux_server, pane, "@rk_pane_agent_state") == ""
    path = tmp_path / "state" / hook.HOOK_LOG
    assert path.stat().st_mode & 0o777 == 0o600


@pytest.mark.shell
def test_the_log_never_follows_a_symlink_and_stays_bounded(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    target = tmp_path / "elsewhere"
    target.write_text("precious\n")
    (state / hook.HOOK_LOG).symlink_to(target)
    env = {"RK_STATE_DIR": str(state)}
    hook.log_line(env, "%1 claude idle: something")
    assert target.read_text() == "precious\n"
    (state / hook.HOOK_LOG).unlink()
    (state / hook.HOOK_LOG).write_text("x" * (hook.LOG_CAP + 1))
    (state / hook.HOOK_LOG).chmod(0o644)
    hook.log_line(env, "%1 claude idle: line one\nline two")
    text = (state / hook.HOOK_LOG).read_text()
    assert text.endswith(" %1 claude idle: line one line two\n") and len(text) < 200  # started again
    assert (state / hook.HOOK_LOG).stat().st_mode & 0o777 == 0o600
    for _ in range(3000):
        hook.log_line(env, "%1 claude idle: " + "z" * 100)
    assert (state / hook.HOOK_LOG).stat().st_size <= hook.LOG_CAP + 600


# -- a limit is not ended by an idle notice before its reset -----------------------------------

T = 1751790000  #: when the turn hit the limit
SUBSCRIPTION = "You've hit your session limit \u00b7 resets 4:20pm (UTC)"  # 16:20 UTC that day
OVER = MINUTE + RESET_MARGIN  #: a reset printed to the minute is over at that minute's end, and a margin
RESET = 1751818800 + OVER  #: when rk calls it over
API_KEY = "API Error: Request rejected (429) \u00b7 Rate limited"  # no reset printed


def limited_pane(tmux_server, tmp_path, message: str) -> tuple[str, dict[str, str]]:
    """A pane whose Claude turn just ended on a rate limit (StopFailure), at T."""
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path, RK_NOW=str(T - 5), TZ="UTC")
    run_hook(["--agent", "claude", "active"], env, tmp_path, {"session_id": "s", "hook_event_name": "UserPromptSubmit"})
    env["RK_NOW"] = str(T)
    payload = {"session_id": "s", "hook_event_name": "StopFailure", "error": "rate_limit"}
    run_hook(["--agent", "claude", "failed"], env, tmp_path, {**payload, "last_assistant_message": message})
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"limited:{T}"
    return pane, env


def fire_at(env, tmp_path, now: int, token: str, event: str) -> None:
    env["RK_NOW"] = str(now)
    payload = {"session_id": "s2", "hook_event_name": event}
    if event == "Notification":
        payload["notification_type"] = "idle_prompt"
    assert run_hook(["--agent", "claude", token], env, tmp_path, payload) == 0


@pytest.mark.shell
def test_the_reset_a_failed_turn_names_is_noted(tmux_server, tmp_path):
    pane, _ = limited_pane(tmux_server, tmp_path, SUBSCRIPTION)
    assert option(tmux_server, pane, "@rk_pane_agent_source") == f"hook:{T}:{RESET}"


@pytest.mark.shell
def test_with_the_reset_known_an_idle_notice_keeps_the_limit_until_the_reset(tmux_server, tmp_path):
    pane, env = limited_pane(tmux_server, tmp_path, SUBSCRIPTION)
    fire_at(env, tmp_path, T + 60, "idle-notice", "Notification")  # Claude's idle_prompt, 60 s on
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"limited:{T}"
    assert option(tmux_server, pane, "@rk_pane_agent_session") == "claude:s2"  # the stamp still lands
    fire_at(env, tmp_path, RESET - 1, "idle-notice", "Notification")
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"limited:{T}"
    fire_at(env, tmp_path, RESET, "idle-notice", "Notification")  # RK_NOW at the reset: the limit is over
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"idle:{RESET}"


@pytest.mark.shell
def test_with_the_reset_unknown_an_idle_notice_keeps_the_limit_for_the_retry_delay(tmux_server, tmp_path):
    pane, env = limited_pane(tmux_server, tmp_path, API_KEY)
    assert option(tmux_server, pane, "@rk_pane_agent_source") == ""  # nothing to note
    fire_at(env, tmp_path, T + 60, "idle-notice", "Notification")
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"limited:{T}"
    fire_at(env, tmp_path, T + hook_tmux.LIMIT_RETRY - 1, "idle-notice", "Notification")
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"limited:{T}"
    fire_at(env, tmp_path, T + hook_tmux.LIMIT_RETRY, "idle-notice", "Notification")
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"idle:{T + hook_tmux.LIMIT_RETRY}"


@pytest.mark.shell
@pytest.mark.parametrize("message", [SUBSCRIPTION, API_KEY], ids=["reset-known", "reset-unknown"])
def test_a_successful_turn_or_a_prompt_ends_a_limit_at_once(tmux_server, tmp_path, message):
    pane, env = limited_pane(tmux_server, tmp_path, message)
    fire_at(env, tmp_path, T + 60, "idle-notice", "Notification")
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"limited:{T}"
    fire_at(env, tmp_path, T + 70, "idle", "Stop")  # a turn that ended well: the limit is gone
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"idle:{T + 70}"
    pane, env = limited_pane(tmux_server, tmp_path, message)
    fire_at(env, tmp_path, T + 80, "active", "UserPromptSubmit")  # a human's prompt
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"active:{T + 80}"


@pytest.mark.shell
def test_a_reset_the_screen_noted_is_honoured(tmux_server, tmp_path):
    pane, env = limited_pane(tmux_server, tmp_path, API_KEY)
    tmux_server.run("set-option", "-p", "-t", pane, "@rk_pane_agent_source", f"screen:{T}:{T + 7200}")
    fire_at(env, tmp_path, T + hook_tmux.LIMIT_RETRY + 60, "idle-notice", "Notification")  # past the retry delay
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"limited:{T}"
    tmux_server.run("set-option", "-p", "-t", pane, "@rk_pane_agent_source", f"screen:{T - 1}:{T + 7200}")
    fire_at(env, tmp_path, T + 60, "idle-notice", "Notification")  # a note of another epoch: not this limit's
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"limited:{T}"
    fire_at(env, tmp_path, T + hook_tmux.LIMIT_RETRY, "idle-notice", "Notification")
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"idle:{T + hook_tmux.LIMIT_RETRY}"


@pytest.mark.shell
def test_an_idle_notice_still_ends_a_turn_left_active(tmux_server, tmp_path):
    """The backstop after an Esc (Claude fires no hook): the notice puts it to rest."""
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path)
    fire_at(env, tmp_path, T, "active", "UserPromptSubmit")
    fire_at(env, tmp_path, T + 60, "idle-notice", "Notification")
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"idle:{T + 60}"
    assert option(tmux_server, pane, "@rk_agent_state") == f"idle:{T + 60}"
    assert option(tmux_server, pane, "@rk_pane_turn_end") == f"interrupted:{T + 60}"  # no Stop ended it
    tmux_server.run("set-option", "-pu", "-t", pane, "@rk_pane_agent_state")
    fire_at(env, tmp_path, T + 61, "idle-notice", "Notification")  # no state at all
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"idle:{T + 61}"


@pytest.mark.shell
def test_an_idle_notice_after_a_stop_leaves_that_turn_ok(tmux_server, tmp_path):
    """Only a turn left `active` is interrupted: after a Stop, the notice keeps its `ok`."""
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path)
    fire_at(env, tmp_path, T, "active", "UserPromptSubmit")
    fire_at(env, tmp_path, T + 5, "idle", "Stop")
    fire_at(env, tmp_path, T + 6, "idle-notice", "Notification")  # Qwen's comes at once
    assert option(tmux_server, pane, "@rk_pane_turn_end") == f"ok:{T + 5}"
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"idle:{T + 6}"


@pytest.mark.shell
def test_an_older_installs_idle_on_the_notification_is_read_as_a_notice(tmux_server, tmp_path):
    """Settings written before `idle-notice` run `idle` on idle_prompt: the payload says it is a notice."""
    pane, env = limited_pane(tmux_server, tmp_path, API_KEY)
    fire_at(env, tmp_path, T + 60, "idle", "Notification")
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"limited:{T}"


@pytest.mark.shell
def test_an_idle_notice_through_the_entry_point_keeps_the_limit(tmux_server, tmp_path):
    pane, env = limited_pane(tmux_server, tmp_path, API_KEY)
    env["RK_NOW"] = str(T + 60)
    proc = spawn_hook(env, "idle-notice")
    feed(proc, [json.dumps({"session_id": "s", "hook_event_name": "Notification"}).encode()])
    finish(proc)
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"limited:{T}"


def test_the_retry_delay_is_the_one_rk_counts():
    from rk.core.pane import look

    assert hook_tmux.LIMIT_RETRY == look.LIMIT_RETRY


@pytest.mark.parametrize(
    "payload, reset",
    [
        ({"error": "rate_limit", "last_assistant_message": SUBSCRIPTION}, RESET),
        ({"error": "rate_limit", "last_assistant_message": API_KEY}, 0),
        (
            {"status": "failed", "error": "You've hit your usage limit. Try again in 2 hours."},
            T + 7200 + MINUTE + RESET_MARGIN,
        ),
        (
            {"error": "rate_limit", "last_assistant_message": "resets 9am (UTC)"},
            T + 40 * 60 + MINUTE + RESET_MARGIN,
        ),  # T is 08:20 UTC
        ({"error": "rate_limit"}, 0),
        ("not a dict", 0),
        ({"error": "rate_limit", "last_assistant_message": "resets 4:20pm (No/Such_Zone)"}, RESET),
    ],
)
def test_payload_reset(payload, reset):
    assert hook_turn_end.payload_reset(payload, T, {"TZ": "UTC"}) == reset
