"""Zero-width characters into a real agent CLI, offline (`make test-agents`): `rk send`
of a prompt holding a zero-width space, a word joiner, a BOM and an emoji ZWJ
sequence is delivered (each failed `echo not seen` before), and the model API
receives the text; a bidi control is refused before anything is typed."""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.agents

AGENTS = ("claude", "codex")
PROMPT = "\ufeffcheck the\u200b build, run\u2060tests \U0001f468\u200d\U0001f469\u200d\U0001f467 ok"


@pytest.mark.parametrize("agent", AGENTS)
def test_a_prompt_with_zero_width_characters_reaches_the_model(rig, agent):
    r = rig(agent)
    r.run.mock.set_mode("ok")
    refused = r.rk("send", "--pane", r.pane, "--", "approve\u202e the PR", check=False)
    assert refused.returncode == 2 and "U+202E" in refused.stderr
    sent = r.rk("send", "--pane", r.pane, "--json", "--", PROMPT, check=False)
    assert sent.returncode == 0, f"{sent.stdout}\n{r.run.capture()}"
    deadline = time.monotonic() + 60
    while not r.prompts() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert r.prompts() == [PROMPT], r.run.capture()  # exactly: nothing dropped on the way
