"""The values of an entry's `only_if_changed` key, apart from the rule that reads the
screens (`rk.core.cost.unchanged`): decoding an entry and drawing a view need the
names only, and importing the rule (its patterns and records) cost each view ~3 ms.
"""

from __future__ import annotations

#: Compare the target pane, or the panes its wake watches.
PANE = "pane"
SCOPE = "scope"
MODES = (PANE, SCOPE)
