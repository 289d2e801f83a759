"""The real Claude Code with only what `rk agent setup claude --mcp` writes, and the operator
`rk operator` starts (`make test-agents`).

Claude 2.x defers every MCP tool behind its ToolSearch tool on Anthropic's own API (off
the mock's non-first-party address it loads them up front, so `ENABLE_TOOL_SEARCH=true`
here makes it defer as users see it): a worker's model is offered ToolSearch, not rk's
tools, while the operator, started with rk's entry again with `alwaysLoad`, is offered
rk's tools in its first request. The operator starts in rk's own directory, trusted by
setup (no trust screen), and runs rk's tools with no dialog.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import harness
import pytest
from test_real_mcp_authority import DIALOG, Pair

pytestmark = pytest.mark.agents


@pytest.fixture(params=harness.CLAUDE_VERSIONS)
def pair(request, tmp_path, agent_bin):
    made = Pair("claude", tmp_path, agent_bin, extra_env={"ENABLE_TOOL_SEARCH": "true"}, version=request.param)
    yield made
    made.close()


def _tools_listed(pair: Pair, pane: str) -> bool:
    """Whether the `rk mcp` that the agent in `pane` started has answered its tools/list
    (written over 10 KB: the list of its 16 tools is ~16 KB)."""
    pid = int(pair.run.tmux.run("display", "-p", "-t", pane, "#{pane_pid}").strip())
    for proc in harness.descendants(pid):
        try:
            argv = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
            io = dict(line.split(": ") for line in Path(f"/proc/{proc.pid}/io").read_text().splitlines())
        except (OSError, ValueError):
            continue
        if b"mcp" in argv[-2:] and int(io.get("wchar", 0)) > 10_000:
            return True
    return False


def test_the_operator_starts_trusted_with_rks_tools_up_front_and_no_dialog(pair):
    where = pair.run.tmux.run("display", "-p", "-t", pair.operator, "#{pane_current_path}").strip()
    assert where == os.path.join(os.path.realpath(pair.state_dir), "operator")  # no trust screen: it is ready

    pair.connect(pair.operator)  # rk's tools offered as tools (once its `rk mcp` answered, ~1 s)
    # the worker, with what setup writes for every pane: rk's tools deferred, behind ToolSearch
    harness.until(lambda: _tools_listed(pair, pair.worker), 30, "the worker's rk mcp listing its tools")
    worker = {n for req in pair.turn(pair.worker, "hello", 1, []) for n in req.get("tool_names", [])}
    assert "ToolSearch" in worker and not any(n.startswith("mcp__rk__") for n in worker), sorted(worker)

    since, screens = time.time(), []
    for tool, arguments in (("cron_list", {}), ("cron_add", {"prompt": "status?", "every": "10m"})):
        result = pair.call(pair.operator, tool, arguments, screens)
        assert not result["error"], result
    assert not pair.permission_requests(since) and not any(DIALOG in s for s in screens), screens[-1]
