"""The field table (rk.core.schedule.fields) and what is made from it.

The MCP schema is read as a client reads it (tools/list): every value it offers
for an entry field (each word of a choice list, each bound's edge) must be one
the command line accepts, and every value rk accepts for a choice field must be
offered. docs/fields.md must be what the table makes today.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from cli_helpers import make_env, run_in

from rk.core.cost.only_if_changed import MODES
from rk.core.schedule import fields
from rk.core.schedule.entry import Deliver, OnTimeout, WakeEvent
from rk.core.schedule.fields import BY_KEY, SURFACES, Shape, Surface

DOCS = Path(__file__).resolve().parent.parent / "docs" / "fields.md"

#: The values rk itself accepts for each choice field the tools offer (rk's own enums, not the table).
RK_ACCEPTS = {
    "deliver": tuple(Deliver),
    "wake_on": tuple(WakeEvent),
    "on_timeout": tuple(OnTimeout),
    "only_if_changed": MODES,
}

#: What a field's value needs beside it to be valid (scope compares the panes a wake watches).
CONTEXT = {
    "only_if_changed": ["--wake-on", "agent-state-change"],
    "on_timeout": ["--turn-timeout", "20m"],
    "wake_from": ["--wake-on", "agent-state-change"],
}

#: A choice list at the start of a description: `a | b (default) | c`.
_CHOICES = re.compile(r"^([a-z-]+(?: \(default\))?(?: \| [a-z-]+(?: \(default\))?)+)")


def offered_words(prop: dict) -> list[str]:
    """The words a schema property offers: its enum, or the choice list its description starts with."""
    words = [w for w in prop.get("enum", []) if w is not None]
    m = _CHOICES.match(prop.get("description", ""))
    if m:
        words += [w.removesuffix(" (default)") for w in m.group(1).split(" | ")]
    return words


def integer_bounds(prop: dict) -> tuple[int, int] | None:
    for typed in prop.get("anyOf", [prop]):
        if typed.get("type") == "integer" and "minimum" in typed:
            return typed["minimum"], typed["maximum"]
    return None


@pytest.fixture(scope="module")
def schemas() -> dict[str, dict]:
    from rk.channels import mcp
    from rk.cli.root import main

    tools = asyncio.run(mcp.build(main, {}).list_tools())
    return {t.name: t.input_schema["properties"] for t in tools}


class Cli:
    """rk in-process against a private state dir, with one entry to edit."""

    def __init__(self, root: Path) -> None:
        self.env = make_env(root)
        added = self.run("add", "status?", "--pane", "%1", "--every", "10m")
        assert added.code == 0, added
        self.entry = added.json()["result"]["id"]

    def run(self, verb: str, *args: str):
        return run_in(["cron", verb, "--json", "-L", "rk-fields-test", *args], self.env)

    def accepts(self, tool: str, key: str, value: str) -> bool:
        field = BY_KEY[key]
        given = [field.flag, value, *CONTEXT.get(key, [])]
        if tool == "cron_add":
            res = self.run("add", "status?", "--pane", "%1", "--every", "10m", *given)
        else:
            res = self.run("edit", self.entry, *given)
        assert res.code in (0, 2), res  # a value is accepted, or refused as a usage error
        return res.code == 0


@pytest.fixture(scope="module")
def cli(tmp_path_factory) -> Cli:
    return Cli(tmp_path_factory.mktemp("fields"))


TOOLS = ("cron_add", "cron_edit")


@pytest.mark.parametrize("tool", TOOLS)
def test_every_word_the_schema_offers_is_accepted(schemas, cli, tool):
    checked = 0
    for key, prop in schemas[tool].items():
        for word in offered_words(prop):
            assert cli.accepts(tool, key, word), f"{tool}.{key} offers {word!r}, which rk refuses"
            checked += 1
    assert checked >= 8  # deliver, wake_on, only_if_changed, on_timeout at least


@pytest.mark.parametrize("tool", TOOLS)
def test_every_bound_the_schema_offers_is_rks_edge(schemas, cli, tool):
    bounded = 0
    for key, prop in schemas[tool].items():
        edges = integer_bounds(prop)
        if edges is None:
            continue
        low, high = edges
        for value, accepted in ((low, True), (high, True), (low - 1, False), (high + 1, False)):
            assert cli.accepts(tool, key, str(value)) == accepted, f"{tool}.{key} = {value}"
        bounded += 1
    assert bounded == 3  # max_per_day, max_total, retry


@pytest.mark.parametrize("tool", TOOLS)
def test_every_value_rk_accepts_is_offered(schemas, tool):
    props = schemas[tool]
    for key, values in RK_ACCEPTS.items():
        offered = offered_words(props[key])
        missing = [v for v in values if v not in offered]
        assert not missing, f"{tool}.{key} does not offer {missing}"


@pytest.mark.parametrize("tool", TOOLS)
def test_every_choice_field_a_tool_takes_lists_its_values(schemas, tool):
    """A choice field added to a tool must say its words, so the tests above check them."""
    for key in schemas[tool]:
        field = BY_KEY.get(key)
        if field is not None and field.shape == Shape.CHOICE:
            assert set(field.choices) <= set(offered_words(schemas[tool][key])), key


def test_the_offered_words_are_read_as_a_client_reads_them():
    assert offered_words({"description": "immediate | when-idle | queue (as --deliver)."}) == [
        "immediate",
        "when-idle",
        "queue",
    ]
    assert offered_words({"description": "notify (default) | interrupt: also"}) == ["notify", "interrupt"]
    assert offered_words({"description": "Fixed interval, e.g. 5m."}) == []
    assert offered_words({"enum": ["a", None]}) == ["a"]


def test_a_refused_word_is_refused(cli):
    """The check can fail: rk refuses `queue`, which the schema once offered."""
    assert not cli.accepts("cron_add", "deliver", "queue")
    assert not cli.accepts("cron_edit", "wake_on", "sometimes")


def test_the_tools_take_the_fields_in_the_tables_order(schemas):
    """An entry's fields, in the table's order; then where the call runs (`host`: not a field)."""
    assert list(schemas["cron_add"]) == [*SURFACES[Surface.CRON_ADD], "host"]
    assert list(schemas["cron_edit"]) == ["id", *SURFACES[Surface.CRON_EDIT], "host"]


def test_every_surface_names_known_fields_once():
    for surface, keys in SURFACES.items():
        assert len(set(keys)) == len(keys), surface
        assert set(keys) <= set(BY_KEY), surface


def test_the_reference_is_up_to_date():
    assert DOCS.read_text() == fields.reference(), "regenerate: python -m rk.core.schedule.fields > docs/fields.md"
