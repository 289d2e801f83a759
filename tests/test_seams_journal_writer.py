"""The state journal's writer never glues a new line onto a torn one (a crash or a full disk
left the last line without its newline): the next state change is read, at every cut."""

from rk.core.log import states
from rk.store import state_journal

T0 = 1_800_000_000
A = states.render(T0, "%3", "active", "", "hook", "claude")
B = states.render(T0 + 5, "%3", "idle", "ok", "hook", "claude")


def test_a_journal_line_appended_after_a_torn_tail_is_not_lost(tmp_path):
    directory, slug = str(tmp_path), "srv"
    env = {"RK_STATE_DIR": directory}
    path = state_journal.journal_path(directory, slug)
    lost = []
    for k in range(1, len(A)):  # every non-empty proper prefix of A (with or without the closing brace)
        with open(path, "wb") as fh:
            fh.write(A[:k])
        assert state_journal.append(env, slug, B)
        lines, _ = state_journal.read_all(directory, slug)
        if states.parse(B) not in lines:
            lost.append(k)
    assert lost == [], f"the next line was lost after {len(lost)} of {len(A) - 1} cuts: {lost[:5]}…"
