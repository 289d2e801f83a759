"""Bounds that protect the rest (issue 26, item 3): every text field of an entry has a
bound in the field table, which the command line, the MCP schema and the entries file
all apply, and no error quotes more than a short prefix; rk never writes an entries
file it would refuse to read; a file it cannot read is said loudly (the tick, `list`,
`doctor`, the status line, the notify channels); and an instant past 9999-12-30 is
refused at input in every zone, and never breaks `list`, `next` or the tick."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC
from pathlib import Path

import pytest
from cli_helpers import json_error, make_env, one_line_error, run_in, snapshot, write_private
from test_mcp import caller  # noqa: F401  (a fixture)

from rk.core import bounds
from rk.core.bounds import MAX_ENTRIES_FILE_BYTES, MAX_EPOCH, MAX_LABEL, MAX_PROMPT
from rk.core.environ import ClockError, parse_instant
from rk.core.log.diagnostics import Diag
from rk.core.schedule.decoding import decode_entry
from rk.core.schedule.entry import Entry, EntryError, Every, Target
from rk.core.schedule.fields import BY_KEY, FIELDS, Shape, Surface, check_text
from rk.store.config import ServerFiles
from rk.store.entries import EntryDocument, EntryFileError, load_entries

NOW = 1_800_000_000
#: An error may quote 40 characters, an ellipsis and a length: well under this.
SHORT = 300


def _element(**changes: object) -> dict[str, object]:
    raw: dict[str, object] = {
        "id": "e1",
        "name": "n",
        "schedule": {"kind": "every", "interval": "5m"},
        "target": {"kind": "role", "role": "op"},
        "payload": "hello",
    }
    raw.update(changes)
    return raw


# -- the table ----------------------------------------------------------------------------


def test_every_text_field_has_a_bound_and_names_roles_sessions_a_few_hundred_characters():
    for field in FIELDS:
        if field.shape in (Shape.FLAG, Shape.COUNT):
            assert not field.bounded, field.key
            continue
        assert field.bounded and 0 < field.most <= MAX_PROMPT, field.key
    for key in ("name", "role", "session"):
        assert 100 <= BY_KEY[key].most <= 500, key
    assert BY_KEY["prompt"].most == MAX_PROMPT and BY_KEY["pane"].most <= 32


@pytest.mark.parametrize("field", [f for f in FIELDS if f.bounded], ids=lambda f: f.key)
def test_check_text_takes_the_bound_and_refuses_one_more_with_a_short_message(field):
    check_text(field, "x" * field.most)
    with pytest.raises(bounds.OutOfRange) as caught:
        check_text(field, "x" * (field.most + 1))
    message = str(caught.value)
    assert len(message) < SHORT and f"at most {field.most:,}" in message
    assert ("…" in message) is (field.most >= bounds.QUOTE_CHARS)


def test_quote_keeps_a_short_value_whole_and_cuts_a_long_one_to_its_prefix():
    assert bounds.quote("abc") == "'abc'"
    long = bounds.quote("y" * 1_100_000)
    assert long == f"{'y' * 40!r}… (1,100,000 characters)"


# -- the entries file's decoding ----------------------------------------------------------


def _oversize() -> list[tuple[str, dict[str, object]]]:
    big = "z" * 1_100_000
    return [
        ("name", _element(name=big)),
        ("payload", _element(payload=big)),
        ("role", _element(target={"kind": "role", "role": big})),
        ("session", _element(target={"kind": "session", "session": big})),
        ("pane", _element(target={"kind": "pane", "pane": "%" + "1" * 100})),
        ("cron expr", _element(schedule={"kind": "cron", "expr": big})),
        ("cron tz", _element(schedule={"kind": "cron", "expr": "0 9 * * *", "tz": big})),
        ("every interval", _element(schedule={"kind": "every", "interval": big})),
        ("at", _element(schedule={"kind": "at", "at": big})),
        ("schedule kind", _element(schedule={"kind": big})),
        ("target kind", _element(target={"kind": big})),
        ("id", _element(id=big)),
        ("deliver", _element(deliver=big)),
        ("active_hours", _element(active_hours=big)),
        ("budget", _element(budget=big)),
        ("only_if_changed", _element(only_if_changed=big)),
        ("created_by.session", _element(created_by={"session": big})),
        ("respawn element", _element(if_absent="respawn", respawn=["x", big])),
        ("respawn", _element(if_absent="respawn", respawn=["x"] * 65)),
        ("wake_on event", _element(wake_on={"event": big})),
    ]


@pytest.mark.parametrize(("what", "raw"), _oversize(), ids=[w for w, _ in _oversize()])
def test_the_entries_file_refuses_an_oversize_value_quoting_a_short_prefix(what, raw):
    with pytest.raises(EntryError) as caught:
        decode_entry(raw)
    message = str(caught.value)
    assert len(message) < SHORT, message[:400]
    assert what in message


def test_values_at_their_bound_still_read():
    entry = decode_entry(
        _element(
            name="n" * MAX_LABEL,
            payload="p" * MAX_PROMPT,
            target={"kind": "session", "session": "s" * BY_KEY["session"].most},
        )
    )
    assert len(entry.name) == MAX_LABEL and len(entry.payload) == MAX_PROMPT


def test_an_oversize_entry_is_invalid_alone_and_the_others_load(tmp_path):
    text = json.dumps({"entries": [_element(id="bad1", name="n" * 100_000), _element(id="good")]})
    path = write_private(tmp_path / "state" / "work.yaml", text)
    loaded = load_entries(path)
    assert [e.id for e in loaded.entries] == ["good"] and not loaded.unreadable
    [diag] = loaded.diagnostics
    assert diag.reason == Diag.ENTRY_INVALID and diag.entry == "bad1" and len(diag.detail) < SHORT


# -- the command line and the MCP schema ---------------------------------------------------


CLI_FIELDS = ["--name", "--role", "--session", "--pane", "--cron", "--tz", "--every", "--active-hours", "--budget"]


@pytest.mark.parametrize("flag", CLI_FIELDS)
def test_add_refuses_a_value_past_its_bound_in_one_short_line_and_creates_nothing(tmp_path, flag):
    env = make_env(tmp_path, RK_NOW=str(NOW))
    field = next(f for f in FIELDS if f.flag == flag)
    args = ["cron", "add", "hello", flag, "v" * (field.most + 1)]
    if flag not in ("--role", "--session", "--pane"):
        args += ["--role", "op"]
    if flag not in ("--cron", "--every"):
        args += ["--every", "5m"] if flag != "--tz" else ["--cron", "0 9 * * *"]
    res = run_in(args, env)
    assert res.code == 2, res
    message = one_line_error(res)
    assert len(message) < SHORT and f"at most {field.most:,}" in message and flag in message
    assert not Path(env["RK_STATE_DIR"]).exists()


def test_a_megabyte_name_role_or_prompt_is_refused_without_echoing_it(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(NOW))
    big = "q" * 1_100_000
    for args in (
        ["cron", "add", "hello", "--every", "5m", "--role", "op", "--name", big],
        ["cron", "add", "hello", "--every", "5m", "--role", big],
        ["cron", "add", big, "--every", "5m", "--role", "op"],
    ):
        res = run_in([*args, "--json"], env)
        assert res.code == 2 and len(json_error(res, "usage")) < SHORT
    assert not Path(env["RK_STATE_DIR"]).exists()


def test_edit_applies_the_same_bounds(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(NOW))
    added = run_in(["cron", "add", "hello", "--every", "5m", "--role", "op", "--json"], env)
    entry_id = json.loads(added.out)["result"]["id"]
    before = snapshot(Path(env["RK_STATE_DIR"]))
    for flag, most in (("--name", MAX_LABEL), ("--prompt", MAX_PROMPT), ("--cron", MAX_LABEL)):
        res = run_in(["cron", "edit", entry_id, flag, "w" * (most + 1)], env)
        assert res.code == 2 and len(one_line_error(res)) < SHORT, res
    assert snapshot(Path(env["RK_STATE_DIR"])) == before


@pytest.mark.filterwarnings("ignore:The 'alias' attribute")  # `in`'s alias: the server's model reads it, not an adapter
def test_the_mcp_inputs_carry_the_table_bound():
    from pydantic import TypeAdapter, ValidationError

    from rk.channels.mcp_cron import field_inputs

    for surface in (Surface.CRON_ADD, Surface.CRON_EDIT):
        for param in field_inputs(surface):
            field = BY_KEY["in" if param.name == "in_" else param.name]
            if not field.bounded:
                continue
            adapter = TypeAdapter(param.annotation)
            adapter.validate_python("x" * field.most)
            with pytest.raises(ValidationError) as caught:
                adapter.validate_python("x" * 1_100_000)
            assert len(str(caught.value)) < 1000, field.key


# -- never writing a file rk would refuse to read -------------------------------------------


def _huge(eid: str) -> Entry:
    """An entry whose prompt is MAX_PROMPT four-byte characters (40 KB written)."""
    return Entry(id=eid, schedule=Every(300), target=Target("role", "op"), payload="😀" * MAX_PROMPT)


def test_a_change_that_would_pass_the_read_limit_is_refused_and_nothing_is_written(tmp_path):
    state = tmp_path / "state"
    files = ServerFiles(state, "work")
    added = 0
    with pytest.raises(EntryFileError) as caught:
        for i in range(200):
            with EntryDocument.edit(files) as doc:
                doc.add(_huge(f"e{i}"), 1000)
            added += 1
    assert f"the limit is {MAX_ENTRIES_FILE_BYTES:,}" in str(caught.value) and "nothing written" in str(caught.value)
    size = files.entries.stat().st_size
    assert 0 < size <= MAX_ENTRIES_FILE_BYTES and added >= 20
    loaded = load_entries(files.entries)
    assert len(loaded.entries) == added and loaded.diagnostics == []


def test_the_command_line_add_that_would_pass_the_read_limit_is_refused(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(NOW))
    files = ServerFiles(Path(env["RK_STATE_DIR"]), "default")
    with pytest.raises(EntryFileError):
        for i in range(49):
            with EntryDocument.edit(files) as doc:
                doc.add(_huge(f"e{i}"), 1000)
    before = files.entries.read_bytes()
    res = run_in(["cron", "add", "😀" * MAX_PROMPT, "--every", "5m", "--role", "op"], env)
    assert res.code == 1, res
    message = one_line_error(res)
    assert f"the limit is {MAX_ENTRIES_FILE_BYTES:,}" in message and len(message) < SHORT
    assert files.entries.read_bytes() == before
    assert run_in(["cron", "list"], env).code == 0


# -- a file rk cannot read is said loudly ---------------------------------------------------


def _oversize_file(path: Path) -> None:
    """A file past the read limit: one small entry and one whose name fills it (as an
    older rk, or a hand, could write)."""
    small = "  - {id: keep, schedule: {kind: every, interval: 5m}, target: {kind: role, role: op}, payload: p}\n"
    big = "  - {id: huge, schedule: {kind: every, interval: 5m}, target: {kind: role, role: op}, payload: p, "
    write_private(path, "entries:\n" + small + big + "name: " + "n" * (MAX_ENTRIES_FILE_BYTES + 1000) + "}\n")


def test_list_says_an_unreadable_file_as_an_error_never_as_no_entries(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(NOW))
    _oversize_file(Path(env["RK_STATE_DIR"]) / "default.yaml")
    res = run_in(["cron", "list"], env)
    assert res.code == 1 and "limit is 1,048,576" in one_line_error(res), res
    assert "limit is 1,048,576" in json_error(run_in(["cron", "list", "--json"], env), "operational")
    shown = run_in(["cron", "show", "keep"], env)
    assert shown.code == 1 and "cannot read the entries file" in one_line_error(shown)


def test_rm_of_the_entry_that_fills_it_repairs_the_file_and_other_changes_are_refused(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(NOW))
    path = Path(env["RK_STATE_DIR"]) / "default.yaml"
    _oversize_file(path)
    before = snapshot(path.parent)
    for verb in (["cron", "mute", "keep"], ["cron", "add", "x", "--every", "5m", "--role", "op"]):
        res = run_in(verb, env)
        assert res.code == 1 and "limit is 1,048,576" in one_line_error(res), res
    assert snapshot(path.parent) == before  # refused before the lock file was made
    assert run_in(["cron", "rm", "huge"], env).code == 0
    listed = json.loads(run_in(["cron", "list", "--json"], env).out)["result"]
    assert [r["id"] for r in listed] == ["keep"]


def test_doctor_fails_on_it_and_names_the_entries_that_fill_it(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(NOW))
    _oversize_file(Path(env["RK_STATE_DIR"]) / "default.yaml")
    res = run_in(["doctor", "--json"], env)
    assert res.code == 1, res
    [check] = [c for c in json.loads(res.out)["result"] if c["name"] == "entries file of default"]
    assert check["level"] == "fail" and "none of its entries fires" in check["detail"]
    assert "rk -L default cron rm <id>" in check["fix"] and check["fix"].index("huge") < check["fix"].index("keep")


@pytest.mark.shell
def test_the_tick_exits_1_with_the_reason(tmp_path, tmux_server):
    from conftest import run_rk

    env = make_env(tmp_path, RK_NOW=str(NOW), TMUX_TMPDIR=os.environ["TMUX_TMPDIR"])
    _oversize_file(Path(env["RK_STATE_DIR"]) / f"{tmux_server.name}.yaml")
    res = run_rk(["cron", "tick", "-L", tmux_server.name], env)
    assert res.returncode == 1, res
    assert "entry-file-corrupt" in res.stderr and "limit is 1,048,576" in res.stderr
    assert not (Path(env["RK_STATE_DIR"]) / f"{tmux_server.name}.cursor.yaml").exists()  # nothing rewritten


@pytest.mark.shell
def test_an_oversize_entry_affects_only_itself_and_the_others_fire(tmp_path, tmux_server):
    from conftest import run_rk

    pane = tmux_server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]
    env = make_env(tmp_path, RK_NOW=str(NOW), TMUX_TMPDIR=os.environ["TMUX_TMPDIR"])
    target = {"kind": "pane", "pane": pane}
    good = _element(id="good", target=target, any_program=True, schedule={"kind": "every", "interval": "1m"})
    bad = dict(good, id="bad1", name="n" * 100_000)
    write_private(Path(env["RK_STATE_DIR"]) / f"{tmux_server.name}.yaml", json.dumps({"entries": [bad, good]}))
    res = run_rk(["cron", "tick", "-L", tmux_server.name, "--json"], dict(env, RK_NOW=str(NOW + 60)))
    assert res.returncode == 0, res
    result = json.loads(res.stdout)["result"]
    assert [(d["entry"], d["outcome"]) for d in result["decisions"]] == [("good", "delivered")]
    [diag] = [d for d in result["diagnostics"] if d["entry"] == "bad1"]
    assert diag["reason"] == "entry-invalid" and len(diag["detail"]) < SHORT


@pytest.mark.shell
def test_the_ticker_records_it_and_the_status_line_shows_it(tmp_path, tmux_server):
    from test_ticker import FakeDelivery, make_ticker, run_in_thread

    from rk.channels import statusline

    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    _oversize_file(state / f"{tmux_server.name}.yaml")
    loop = make_ticker(state, tmux_server, time.time, FakeDelivery(), 30)
    thread = run_in_thread(loop)
    try:

        def recorded() -> dict:
            try:
                return json.loads((state / "ticker.status").read_text())
            except (OSError, ValueError):
                return {}

        status = wait_for_status(recorded)
        environ = {"RK_STATE_DIR": str(state), "TMUX_TMPDIR": os.environ["TMUX_TMPDIR"]}
        segment = statusline.render("tmux", environ)
        record = json.loads(statusline.render("json", environ))
    finally:
        loop.stop()
        thread.join(10)
    assert status["unreadable"] == 1
    assert segment.startswith("#[fg=red]rk⚠1#[default]")
    assert record["unreadable"] == 1 and record["class"] == "unreadable" and record["text"].startswith("rk⚠1")


def wait_for_status(recorded):
    from conftest import wait_for

    return wait_for(lambda: recorded() if recorded().get("unreadable") else None, message="unreadable recorded")


def test_the_status_line_is_quiet_when_every_file_reads(tmp_path):
    from rk.channels import statusline

    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "ticker.pid").write_text(json.dumps({"pid": os.getpid()}))
    (state / "ticker.status").write_text(json.dumps({"next_due": None, "unreadable": 0}))
    environ = {"RK_STATE_DIR": str(state), "TMUX_TMPDIR": str(tmp_path / "none")}
    assert "⚠" not in statusline.render("tmux", environ)
    (state / "ticker.status").write_text(json.dumps({"next_due": None, "unreadable": 2}))
    assert statusline.render("tmux", environ).startswith("#[fg=red]rk⚠2")


def test_the_notify_channels_hear_it_once_an_hour(tmp_path):
    from rk.channels.notify import Notifier
    from rk.core.channels.notice import UNREADABLE, Channel
    from rk.engine.result import ServerTick

    sent: list[tuple[str, str]] = []

    def sender(channel, title, body):
        sent.append((title, body))
        return ""

    state = tmp_path / "state"
    state.mkdir()
    why = "work.yaml is 2,000,000 bytes; the limit is 1,048,576; refusing to parse it"
    tick = ServerTick("work", swept=True, unreadable=why)
    notifier = Notifier(state, [Channel("1", "json://127.0.0.1:1/", debounce=0)], UTC, sender=sender)
    try:
        hour = NOW - NOW % 3600
        for now in (hour + 1, hour + 60, hour + 3599, hour + 3600):
            notifier.after_tick([tick], now)
        notifier.after_tick([ServerTick("work", swept=True)], hour + 7200)
        from conftest import wait_for

        wait_for(lambda: len(sent) >= 2, message="two sends")
    finally:
        notifier.stop(wait=5)
    assert len(sent) == 2
    title, body = sent[0]
    assert "entries file unreadable" in title and "work" in title and why in body and "doctor" in body
    lines = [json.loads(x) for x in (state / "notify.log").read_text().splitlines()]
    assert {x["event"] for x in lines} == {UNREADABLE}


# -- year 9999 in every zone ---------------------------------------------------------------


@pytest.mark.parametrize("zone", ["Asia/Tokyo", "Pacific/Kiritimati", "Etc/GMT+12", "UTC"])
def test_an_instant_past_9999_12_30_is_refused_cleanly_in_every_zone(tmp_path, zone):
    env = make_env(tmp_path, RK_NOW=str(NOW), TZ=zone)
    for at in ("9999-12-31T23:59:59Z", "9999-12-31T00:00:00+00:00", str(MAX_EPOCH + 1), "10000-01-01T00:00:00Z"):
        res = run_in(["cron", "add", "hi", "--role", "op", "--at", at], env)
        assert res.code == 2, res
        assert "out of range" in one_line_error(res) or "cannot read time" in one_line_error(res)
    ok = run_in(["cron", "add", "hi", "--role", "op", "--at", "9999-12-30T23:59:59Z", "--json"], env)
    assert ok.code == 0, ok
    entry_id = json.loads(ok.out)["result"]["id"]
    for verb in (["cron", "list"], ["cron", "next", entry_id], ["cron", "show", entry_id], ["cron", "list", "--json"]):
        assert run_in(verb, env).code == 0, verb


def test_parse_instant_stops_at_the_last_second_every_zone_can_show():
    assert parse_instant("9999-12-30T23:59:59Z") == MAX_EPOCH
    for text in ("9999-12-31T00:00:00Z", "9999-12-30T23:59:59-00:01", str(MAX_EPOCH + 1), "x" * 1_100_000):
        with pytest.raises(ClockError) as caught:
            parse_instant(text)
        assert len(str(caught.value)) < SHORT


def test_an_entry_holding_year_9999_never_breaks_list_next_or_show_east_of_utc(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(NOW), TZ="Asia/Tokyo")
    role = {"kind": "role", "role": "op"}
    entries = [
        _element(id="far1", target=role, schedule={"kind": "at", "at": 253_402_300_799}),
        _element(id="far2", target=role, schedule={"kind": "at", "at": "9999-12-31T23:59:59Z"}),
        _element(id="far3", target=role, muted_until=253_402_300_799),
        _element(id="good", target=role),
    ]
    write_private(Path(env["RK_STATE_DIR"]) / "default.yaml", json.dumps({"entries": entries}))
    listed = run_in(["cron", "list", "--json"], env)
    assert listed.code == 0 and [r["id"] for r in json.loads(listed.out)["result"]] == ["good"], listed
    assert listed.err.count("entry-invalid") == 3
    for verb in (["cron", "list"], ["cron", "next", "good"], ["cron", "show", "good"], ["status"]):
        res = run_in(verb, env)
        assert "internal error" not in res.err and "Traceback" not in res.err, (verb, res)


# -- over MCP ------------------------------------------------------------------------------


@pytest.mark.tmux
@pytest.mark.shell
def test_mcp_refuses_megabyte_values_briefly_and_cron_list_says_an_unreadable_file(caller):  # noqa: F811
    import asyncio

    from mcp.shared.exceptions import MCPError
    from mcp_client import Reply
    from test_mcp import serve

    def call(s, tool: str, **arguments: object) -> Reply:  # `name` is an input here, not the tool's
        try:
            return Reply(asyncio.run_coroutine_threadsafe(s.session.call_tool(tool, arguments), s.loop).result(60))
        except MCPError as exc:  # a message over rk mcp's 1 MiB: a JSON-RPC error for this call, at once
            refused = Reply.__new__(Reply)
            refused.error, refused.text = True, str(exc)
            return refused

    big = "m" * 1_100_000
    state = Path(caller["env"]["RK_STATE_DIR"])
    slug = caller["tmux"].name

    def body(s):
        return [
            call(s, "cron_add", prompt="x", every="1h", name=big),
            call(s, "cron_add", prompt="x", every="1h", role=big),
            call(s, "cron_add", prompt="x", every="1h", session=big),
            call(s, "cron_add", prompt=big, every="1h"),
            call(s, "cron_edit", id="abcd", name=big),
        ]

    for reply in serve(caller["env"], body):
        assert reply.error and len(reply.text) < 1000, reply.text[:2000]
    assert not (state / f"{slug}.yaml").exists()
    _oversize_file(state / f"{slug}.yaml")
    listed = serve(caller["env"], lambda s: s.call("cron_list"))
    assert listed.error and "limit is 1,048,576" in listed.text and len(listed.text) < 1000, listed
